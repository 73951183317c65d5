"""The text index of the SQLite engine (text_index.TextIndex): FTS5's ``mem_fts``, whose
rowid is the node's seq. Its health and rebuild are search_index.py.

User text is data, never FTS5 syntax: every term is quoted (:func:`quote`) before MATCH.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from ..dbapi import Connection

# text_index.Filters: a WHERE fragment over mem_nodes n and its parameters.
Filters = tuple[str, list[Any]]


def quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def any_of(terms: Sequence[str]) -> str:
    """The MATCH expression of rows holding any of ``terms``."""
    return " OR ".join(quote(term) for term in terms)


def every_one_of(terms: Sequence[str]) -> str:
    """The MATCH expression of rows holding every one of ``terms``."""
    return " AND ".join(quote(term) for term in terms)


class SQLiteTextIndex:
    __slots__ = ("conn",)

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def filters(
        self, mask: str, mask_params: Sequence[Any], kinds: Sequence[str] | None
    ) -> Filters:
        params = list(mask_params)
        if kinds:
            mask += f" AND n.kind IN ({','.join('?' * len(kinds))})"
            params += kinds
        return mask, params

    def postings(
        self, keys: Sequence[Sequence[str]], limit: int
    ) -> tuple[int, list[Collection[int] | None]]:
        conn = self.conn
        total = max(int(conn.execute("SELECT max(seq) FROM mem_nodes").fetchone()[0] or 0), 1)
        found: list[Collection[int] | None] = []
        for forms in keys:
            rows = conn.execute(
                "SELECT rowid FROM mem_fts WHERE mem_fts MATCH ? LIMIT ?", (any_of(forms), limit)
            ).fetchall()
            # A tuple (FTS5 returns a row once), not a set: the cyclic GC stops tracking
            # a tuple of ints, and walks every set at each full collection.
            found.append(None if len(rows) >= limit else tuple([row[0] for row in rows]))
        return total, found

    def newest_matching(
        self, terms: Sequence[str], namespace: str, filters: Filters, limit: int
    ) -> set[int]:
        mask, mask_params = filters
        rows: list[tuple[int]] = []
        for expression in (every_one_of(terms), any_of(terms)):
            rows = self.conn.execute(
                "SELECT mem_fts.rowid FROM mem_fts JOIN mem_nodes n ON n.seq = mem_fts.rowid "
                f"WHERE mem_fts MATCH ? AND n.namespace = ? AND {mask} "
                "ORDER BY mem_fts.rowid DESC LIMIT ?",
                [expression, namespace, *mask_params, limit],
            ).fetchall()
            if rows or len(terms) == 1:
                break
        return {row[0] for row in rows}

    def newest_unfiltered(self, terms: Sequence[str], every: bool, limit: int) -> tuple[int, ...]:
        expression = every_one_of(terms) if every else any_of(terms)
        return tuple(
            [
                row[0]
                for row in self.conn.execute(
                    "SELECT rowid FROM mem_fts WHERE mem_fts MATCH ? ORDER BY rowid DESC LIMIT ?",
                    (expression, limit),
                )
            ]
        )

    def prefix_ranked(
        self, prefixes: Sequence[str], namespace: str, filters: Filters, scan: int
    ) -> list[tuple[int, float]]:
        mask, mask_params = filters
        # Bounded: a prefix matches every word it starts ("own"* is "owner" in 9 000 rows
        # at 1M nodes) and bm25() over all of them cost ~50 ms; the newest ``scan`` are
        # scored instead. The namespace, mask and kinds filter inside the scan, so the
        # newest are this namespace's and not crowded out by another's.
        return self.conn.execute(
            "SELECT mem_fts.rowid, bm25(mem_fts) FROM mem_fts "
            "JOIN mem_nodes n ON n.seq = mem_fts.rowid "
            f"WHERE mem_fts MATCH ? AND n.namespace = ? AND {mask} "
            "ORDER BY mem_fts.rowid DESC LIMIT ?",
            [" OR ".join(quote(prefix) + "*" for prefix in prefixes), namespace]
            + [*mask_params, scan],
        ).fetchall()

    def read_rows(
        self, columns: str, seqs: Sequence[int], namespace: str, filters: Filters
    ) -> list[Any]:
        mask, mask_params = filters
        # SQLite reads an IN list by the index, in seq order. ``+``: the seqs, not the
        # namespace index, choose the rows.
        return self.conn.execute(
            f"SELECT {columns} FROM mem_nodes n WHERE n.seq IN "
            f"({','.join('?' * len(seqs))}) AND +n.namespace = ? AND {mask}",
            [*seqs, namespace, *mask_params],
        ).fetchall()

    def entities_by_phrase(
        self, words: Sequence[str], namespace: str, limit: int
    ) -> list[tuple[str, str]]:
        return self.conn.execute(
            "SELECT n.id, n.content FROM mem_fts JOIN mem_nodes n ON n.seq = mem_fts.rowid "
            "WHERE mem_fts MATCH ? AND n.kind = 'entity' AND n.namespace = ? "
            "AND n.tombstoned = 0 ORDER BY bm25(mem_fts) LIMIT ?",
            (quote(" ".join(words)), namespace, limit),
        ).fetchall()
