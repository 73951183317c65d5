"""The text index of the PostgreSQL engine (text_index.TextIndex): the term tables of
postgres/search.py, read so that they answer as FTS5's ``mem_fts`` does on SQLite.

The same data ranks the same on both engines, because everything FTS5 gives recall is
rebuilt here from the same terms (tokenizer.py, FTS5's tokenizer in Python):

* a key's posting list (read up to a limit: rare or common),
* the newest rows holding all (else any) of the common terms, filtered inside the scan,
* the prefix stage's BM25, computed in SQL as FTS5's bm25() computes it: per prefix
  phrase, IDF = ln((N - hits + 0.5) / (hits + 0.5)) (1e-6 when not positive), times
  f (k1 + 1) / (f + k1 (1 - b + b D / avgdl)), f the phrase's occurrences in the row,
  D the row's length in terms, N and avgdl over every indexed row, summed over the
  phrases in their order, negated (lower is better, as bm25() returns).

User text is data: terms are bound parameters here.

Known difference: a key term that FTS5 cuts into several tokens (it holds one of 21 code
points of New Tai Lue or Vedic Extensions that Python counts as letters and FTS5 does
not) is a phrase on SQLite and all of its tokens, anywhere in the row, here.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from ..dbapi import Connection
from ..tokenizer import tokens
from . import PgConnection, translate
from .search import totals

# text_index.Filters: a WHERE fragment over mem_nodes n and its parameters.
Filters = tuple[str, list[Any]]

# FTS5's bm25() constants (fts5_aux.c).
FTS5_K1 = 1.2
FTS5_B = 0.75


class PostgresTextIndex:
    __slots__ = ("conn",)

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def filters(
        self, mask: str, mask_params: Sequence[Any], kinds: Sequence[str] | None
    ) -> Filters:
        params: list[Any] = list(mask_params)
        if kinds:
            mask += " AND n.kind = ANY (?::text[])"
            params.append(list(kinds))
        return mask, params

    def postings(
        self, keys: Sequence[Sequence[str]], limit: int
    ) -> tuple[int, list[Collection[int] | None]]:
        """One round trip: a LIMIT scan of the primary key per form, their union counted
        (when no form reaches the limit, the union is complete; when one does, the key
        is common)."""
        conn = self.conn
        if not keys:
            return max(
                int(conn.execute("SELECT max(seq) FROM mem_nodes").fetchone()[0] or 0), 1
            ), []
        forms = [[tokens(form) for form in key_forms] for key_forms in keys]
        owners: list[int] = []
        terms: list[str] = []
        for index, key_forms in enumerate(forms, 1):
            for phrase in key_forms:
                if len(phrase) == 1:
                    owners.append(index)
                    terms.append(phrase[0])
        rows = conn.execute(
            "SELECT (SELECT max(seq) FROM mem_nodes), k.i, s.n, s.seqs "
            "FROM generate_series(1, ?) AS k (i) CROSS JOIN LATERAL "
            "(SELECT count(*) AS n, CASE WHEN count(*) < ? THEN array_agg(seq) END AS seqs "
            "FROM (SELECT DISTINCT p.seq FROM unnest(?::integer[], ?::text[]) AS f (i, term) "
            "CROSS JOIN LATERAL (SELECT t.seq FROM mem_search_terms t WHERE t.term = f.term "
            "LIMIT ?) AS p WHERE f.i = k.i) AS u) AS s ORDER BY k.i",
            (len(keys), limit, owners, terms, limit),
        ).fetchall()
        total = max(int(rows[0][0] or 0), 1)
        found: list[Collection[int] | None] = []
        for key_forms, (_, _, count, seqs) in zip(forms, rows, strict=True):
            if any(len(phrase) > 1 for phrase in key_forms):  # see the module's known difference
                found.append(self._all_terms(key_forms[0], limit))
            else:
                found.append(set(seqs or ()) if count < limit else None)
        return total, found

    def _all_terms(self, phrase: list[str], limit: int) -> set[int] | None:
        """Rows holding every term of a key that FTS5 cuts in several (see the module)."""
        distinct = list(dict.fromkeys(phrase))
        rows = self.conn.execute(
            "SELECT seq FROM mem_search_terms WHERE term = ANY (?::text[]) GROUP BY seq "
            "HAVING count(*) = ? LIMIT ?",
            (distinct, len(distinct), limit),
        ).fetchall()
        return {row[0] for row in rows} if len(rows) < limit else None

    def newest_matching(
        self, terms: Sequence[str], namespace: str, filters: Filters, limit: int
    ) -> set[int]:
        """All of them: the GIN index of each row's terms intersects their posting lists
        (a walk down one list probing the others read thousands of rows when few hold
        all). Any of them: each term's posting list newest first (the primary key
        backwards)."""
        mask, mask_params = filters
        phrases = [list(dict.fromkeys(tokens(term))) for term in terms]
        phrases = [phrase for phrase in phrases if phrase]
        if not phrases:
            return set()
        scan = (
            "SELECT t.seq FROM mem_search_terms t JOIN mem_nodes n ON n.seq = t.seq "
            f"WHERE t.term = ? AND {{holds}} AND n.namespace = ? AND {mask} "
            "ORDER BY t.seq DESC LIMIT ?"
        )
        rows = self._planned_each_time(
            "SELECT d.seq FROM mem_search_docs d JOIN mem_nodes n ON n.seq = d.seq "
            f"WHERE d.terms @> ?::text[] AND n.namespace = ? AND {mask} "
            "ORDER BY d.seq DESC LIMIT ?",
            [_distinct_terms(phrases), namespace, *mask_params, limit],
        )
        if rows or len(terms) == 1:
            return {row[0] for row in rows}
        if all(len(phrase) == 1 for phrase in phrases):
            newest = self._newest_any([phrase[0] for phrase in phrases], namespace, filters, limit)
            if newest is not None:
                return newest
        # Any of them, exactly: the newest of each, filtered in the scan, then the newest.
        parts = [
            "(" + scan.format(holds=_holds(len(phrase) - 1) or "TRUE") + ")" for phrase in phrases
        ]
        params: list[Any] = []
        for phrase in phrases:
            params += [phrase[0], *phrase[1:], namespace, *mask_params, limit]
        rows = self.conn.execute(
            f"SELECT seq FROM ({' UNION '.join(parts)}) AS u ORDER BY seq DESC LIMIT ?",
            [*params, limit],
        ).fetchall()
        return {row[0] for row in rows}

    def newest_unfiltered(self, terms: Sequence[str], every: bool, limit: int) -> tuple[int, ...]:
        """Through the GIN index of each row's terms: all of them in one probe, any of
        them as the union of one probe per term."""
        phrases = [list(dict.fromkeys(tokens(term))) for term in terms]
        phrases = [phrase for phrase in phrases if phrase]
        if not phrases:
            return ()
        groups = [_distinct_terms(phrases)] if every else phrases
        probes = " UNION ".join(
            "(SELECT seq FROM mem_search_docs WHERE terms @> ?::text[])" for _ in groups
        )
        rows = self.conn.execute(
            f"SELECT seq FROM ({probes}) AS u ORDER BY seq DESC LIMIT ?", [*groups, limit]
        ).fetchall()
        return tuple([row[0] for row in rows])

    def _planned_each_time(self, sql: str, parameters: list[Any]) -> list[Any]:
        """``sql``'s rows, planned for these parameters every time. A statement run often
        is prepared by the driver, and PostgreSQL soon plans it once for any parameters:
        for ``terms @> ?`` that generic plan walks every row newest first (30-50 ms at
        100k when few rows hold all the terms) where the GIN index answers in 1-2 ms."""
        conn = self.conn
        if not isinstance(conn, PgConnection):  # not psycopg: nothing is prepared behind us
            return conn.execute(sql, parameters).fetchall()
        translated, _ = translate(sql)
        try:
            return list(conn.raw.execute(translated, parameters, prepare=False).fetchall())
        except Exception as exc:
            raise conn.storage.error_from(exc) from None

    def _newest_any(
        self, terms: list[str], namespace: str, filters: Filters, limit: int
    ) -> set[int] | None:
        """The newest ``limit`` rows holding any of ``terms`` that the filters admit, from
        each term's newest ``limit`` postings (index only) and one filter of their rows;
        None when that cannot tell (then the exact scan runs). Exact when it answers:
        every row holding a term at or above ``floor`` (the highest last seq among the
        lists cut at ``limit``) was read, so the newest admitted rows at or above it are
        the answer when there are ``limit`` of them, or when no list was cut."""
        mask, mask_params = filters
        lists = self.conn.execute(
            "SELECT ARRAY (SELECT seq FROM mem_search_terms t WHERE t.term = k.term "
            "ORDER BY seq DESC LIMIT ?) FROM unnest(?::text[]) AS k (term)",
            (limit, terms),
        ).fetchall()
        seqs = {seq for (found,) in lists for seq in found}
        cut = [found[-1] for (found,) in lists if len(found) == limit]
        floor = max(cut, default=0)
        admitted = self.conn.execute(
            "SELECT n.seq FROM mem_nodes n WHERE n.seq = ANY (?::bigint[]) AND n.seq >= ? "
            f"AND n.namespace = ? AND {mask} ORDER BY n.seq DESC LIMIT ?",
            [sorted(seqs), floor, namespace, *mask_params, limit],
        ).fetchall()
        if len(admitted) < limit and cut:
            return None
        return {row[0] for row in admitted}

    def prefix_ranked(
        self, prefixes: Sequence[str], namespace: str, filters: Filters, scan: int
    ) -> list[tuple[int, float]]:
        # A phrase of several terms: all but the last exact (the module's known difference).
        phrases = [phrase for phrase in (tokens(prefix) for prefix in prefixes) if phrase]
        if not phrases:
            return []
        rows_indexed, length_total = totals(self.conn)
        if rows_indexed == 0:
            return []
        average = length_total / rows_indexed
        ranges = [_prefix_range(phrase[-1]) for phrase in phrases]
        exact = [phrase[:-1] for phrase in phrases]
        mask, mask_params = filters
        matches = " UNION ALL ".join(
            f"SELECT t.seq, {i}::integer AS i, sum(t.tf)::float8 AS f FROM mem_search_terms t "
            f"WHERE t.term >= ? AND t.term < ? AND {_holds(len(before)) or 'TRUE'} "
            "GROUP BY t.seq"
            for i, before in enumerate(exact, 1)
        )
        match_params: list[Any] = []
        for (low, high), before in zip(ranges, exact, strict=True):
            match_params += [low, high, *before]
        # One statement: each prefix's rows and occurrences (m), each prefix's IDF from its
        # row count over the whole index (FTS5's nHit), the newest ``scan`` rows that the
        # namespace, mask and kinds admit (filtered before the LIMIT, as on SQLite), and
        # only those scored. float8 throughout, summed in prefix order: FTS5's bm25() to
        # the bit.
        return self.conn.execute(
            f"WITH m AS MATERIALIZED ({matches}), "
            "idf AS (SELECT i, CASE WHEN v > 0.0::float8 THEN v ELSE 1e-6::float8 END AS w "
            "FROM (SELECT i, ln(((?::float8 - count(*)) + 0.5::float8) / "
            "(count(*) + 0.5::float8)) AS v FROM m GROUP BY i) AS x), "
            "newest AS (SELECT c.seq FROM (SELECT DISTINCT seq FROM m ORDER BY seq DESC) AS c "
            f"JOIN mem_nodes n ON n.seq = c.seq WHERE n.namespace = ? AND {mask} "
            "ORDER BY c.seq DESC LIMIT ?) "
            "SELECT m.seq, -sum(idf.w * ((m.f * (?::float8 + 1.0::float8)) / "
            "(m.f + ?::float8 * (1.0::float8 - ?::float8 + ?::float8 * d.length::float8 "
            "/ ?::float8))) ORDER BY m.i) "
            "FROM newest JOIN m ON m.seq = newest.seq JOIN idf ON idf.i = m.i "
            "JOIN mem_search_docs d ON d.seq = m.seq GROUP BY m.seq",
            [
                *match_params,
                float(rows_indexed),
                namespace,
                *mask_params,
                scan,
                FTS5_K1,
                FTS5_K1,
                FTS5_B,
                FTS5_B,
                average,
            ],
        ).fetchall()

    def read_rows(
        self, columns: str, seqs: Sequence[int], namespace: str, filters: Filters
    ) -> list[Any]:
        mask, mask_params = filters
        return self.conn.execute(
            f"SELECT {columns} FROM mem_nodes n WHERE n.seq = ANY (?::bigint[]) "
            f"AND n.namespace = ? AND {mask} ORDER BY n.seq",
            [list(seqs), namespace, *mask_params],
        ).fetchall()

    def entities_by_phrase(
        self, words: Sequence[str], namespace: str, limit: int
    ) -> list[tuple[str, str]]:
        """The entities whose text holds the phrase as FTS5 matches it on SQLite: the
        same terms (tokenizer.py: FTS5's tokenizer ported, diacritics removed, Porter
        stems), found through the search tables and checked in order here; never
        PostgreSQL's own parser and stemmer, which cut words differently ("Résumé
        Parser" and "resume parser" were two entities on PostgreSQL, one on SQLite).
        Nodes written earlier in this transaction are not indexed yet (the engine
        indexes them before COMMIT): those are read from the queue."""
        wanted = tokens(" ".join(words))
        if not wanted:
            return []
        rows = self.conn.execute(
            "SELECT n.id, n.content FROM mem_nodes n "
            "WHERE n.kind = 'entity' AND n.namespace = ? AND n.tombstoned = 0 AND ("
            "n.seq IN (SELECT seq FROM mem_search_docs WHERE terms @> ?::text[]) "
            "OR n.seq IN (SELECT seq FROM mem_search_pending)) ORDER BY n.seq",
            (namespace, sorted(set(wanted))),
        ).fetchall()
        size = len(wanted)

        def holds(content: str) -> bool:
            found = tokens(content)
            return any(found[i : i + size] == wanted for i in range(len(found) - size + 1))

        return [row for row in rows if holds(str(row[1]))][:limit]


def _distinct_terms(phrases: list[list[str]]) -> list[str]:
    return list(dict.fromkeys(term for phrase in phrases for term in phrase))


def _holds(term_count: int, alias: str = "t") -> str:
    """SQL: row ``alias``.seq holds each of ``term_count`` terms (one ``?`` each), probed
    in order, the first failure ending the row's test. ``OFFSET 0`` keeps each EXISTS a
    probe: turned into joins, six of them cost ~20 ms of planning alone."""
    return " AND ".join(
        "EXISTS (SELECT 1 FROM mem_search_terms h WHERE h.term = ? "
        f"AND h.seq = {alias}.seq OFFSET 0)"
        for _ in range(term_count)
    )


def _prefix_range(prefix: str) -> tuple[str, str]:
    """The terms that start with ``prefix``: lo <= term < hi, in code point order."""
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)
