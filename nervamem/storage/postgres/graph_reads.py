"""Recall's graph reads on PostgreSQL (graph_reads.py), and expansion's edge reads: a
whole frontier in one statement.

On SQLite a statement is a function call, so expansion.py reads the neighbours of a
hub entity one seed at a time (NEIGHBOURS_SQL) and the small nodes in one batch, after
a degree lookup that tells them apart, and the causal edges in another. On a server
each of those is a round trip (~0.3 ms, and ~11 of them per recall at 100k), so here one
statement does all of it: for each seed, a LATERAL subquery with NEIGHBOURS_SQL's
branches (one per edge kind and direction, each reading at most EXPANSION_FANOUT index
entries, newest first), their union's EXPANSION_FANOUT newest, and whether one of the
branches that returned a neighbour is a causal edge.

The same answer as SQLite's steps: the union of the per-branch top rows holds the
overall top rows; and a neighbour among a seed's EXPANSION_FANOUT newest is among the
EXPANSION_FANOUT newest of every branch that reaches it (the primary key (src, kind,
dst) allows no two edges of a kind between two nodes), so the causal branches see every
causal edge to it that causal_pairs would.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from ..dbapi import Connection
from ..engine import one_of

# graph_reads.Node and Frontier (not imported: graph_reads imports this module when
# asked for it).
Node = tuple[str, int]
Frontier = tuple[dict[str, list[str]], set[tuple[str, str]], dict[str, Any]]


@lru_cache(maxsize=4)
def frontier_sql(
    edges: tuple[str, ...], causal_edges: tuple[str, ...], fanout: int, columns: str
) -> str:
    """The statement, for expansion.py's edge kinds, fanout and columns (passed in:
    storage imports no feature). With each neighbour, its row if
    the mask and the namespace admit it (expansion.py's _fetch_masked, in the same
    round trip); ``{mask}`` is left for the mask's SQL."""
    branches = " UNION ALL ".join(
        f"(SELECT {far} AS far, {'true' if kind in causal_edges else 'false'} AS causal "
        f"FROM mem_edges WHERE {near} = s.id AND kind = '{kind}' "
        f"ORDER BY {far} DESC LIMIT {fanout})"
        for kind in edges
        for near, far in (("src", "dst"), ("dst", "src"))
    )
    return (
        f"SELECT s.id, x.far, x.causal, {columns} FROM unnest(?::text[]) AS s(id) "
        f"CROSS JOIN LATERAL (SELECT b.far, bool_or(b.causal) AS causal FROM ({branches}) "
        f"AS b GROUP BY b.far ORDER BY b.far DESC LIMIT {fanout}) AS x "
        "LEFT JOIN mem_nodes n ON n.id = x.far AND n.namespace = ? AND {mask}"
    )


def frontier_edges(
    conn: Connection,
    sql: str,
    ids: Sequence[str],
    namespace: str,
    mask: str,
    mask_params: list[str],
) -> Frontier:
    """expansion.neighbours, the causal pairs among them, and the neighbours' rows that
    the mask admits (``mask``: SQL on the alias ``n``), in one round trip (``sql``:
    :func:`frontier_sql`)."""
    around: dict[str, list[str]] = {node_id: [] for node_id in ids}
    causal: set[tuple[str, str]] = set()
    rows: dict[str, Any] = {}
    unique = list(dict.fromkeys(ids))
    if not unique:
        return around, causal, rows
    for node_id, far, is_causal, *row in conn.execute(
        sql.format(mask=mask), [unique, namespace, *mask_params]
    ):
        around[node_id].append(far)
        if is_causal:
            causal.add((node_id, far))
        if row[0] is not None:
            rows[far] = tuple(row)
    for near in around.values():
        near.sort(reverse=True)  # newest first, as expansion.neighbours returns them
    return around, causal, rows


def _neighbours_sql(edges: Sequence[str]) -> str:
    # Newest neighbours first, one branch per edge kind and direction: each branch reads
    # at most :fanout index entries, so a hub entity with 50 000 ABOUT edges costs what a
    # leaf costs. (One "kind IN (...) ORDER BY ... LIMIT" would read and sort all of
    # them.) The union of the per-branch top rows holds the overall top rows.
    return (
        " UNION ".join(
            f"SELECT * FROM (SELECT {far} FROM mem_edges WHERE {near} = :id "
            f"AND kind = '{kind}' ORDER BY {far} DESC LIMIT :fanout) AS b{index}"
            for index, (kind, (near, far)) in enumerate(
                (kind, pair) for kind in edges for pair in (("src", "dst"), ("dst", "src"))
            )
        )
        + " ORDER BY 1 DESC LIMIT :fanout"
    )


NEIGHBOURS_SQL = lru_cache(maxsize=4)(_neighbours_sql)

_AROUND = (
    "SELECT s.seq, e.kind, {columns} FROM mem_nodes s JOIN mem_edges e ON e.src = s.id "
    "JOIN mem_nodes n ON n.id = e.dst WHERE {seqs} AND e.kind = ANY (?) "
    "UNION ALL SELECT s.seq, e.kind, {columns} FROM mem_nodes s JOIN mem_edges e "
    "ON e.dst = s.id JOIN mem_nodes n ON n.id = e.src WHERE {seqs} AND e.kind = ANY (?)"
)
# The seeds' sessions and their windows in one statement (one round trip instead of
# two): the seqs around each seed that has an OCCURRED_IN edge.
_WINDOW_ROWS = (
    "SELECT {columns}, e.dst FROM mem_nodes n JOIN mem_edges e "
    "ON e.src = n.id AND e.kind = 'OCCURRED_IN' WHERE n.seq IN (SELECT s.seq + d.d "
    "FROM unnest(?::text[], ?::bigint[]) AS s(id, seq) "
    "JOIN mem_edges se ON se.src = s.id AND se.kind = 'OCCURRED_IN' "
    "CROSS JOIN generate_series({first}, {last}) AS d(d)) AND +n.namespace = ? AND {mask}"
)


class PostgresGraphReads:
    """Each statement is a round trip (~0.3 ms): steps are folded into one statement
    where they can be."""

    __slots__ = ("conn",)

    # A batch as large as a 500-token budget's packing usually asks for (~15 items
    # shown, ~35 asked) takes one round of lookups instead of two or three.
    lookups_per_batch: int | None = 48

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def frontier(
        self,
        ids: Sequence[str],
        edges: tuple[str, ...],
        causal_edges: tuple[str, ...],
        fanout: int,
        columns: str,
        namespace: str,
        mask: tuple[str, list[str]],
    ) -> Frontier:
        where, mask_params = mask
        sql = frontier_sql(edges, causal_edges, fanout, columns)
        return frontier_edges(self.conn, sql, ids, namespace, where, mask_params)

    def newest_neighbours(self, node_id: str, edges: Sequence[str], fanout: int) -> list[str]:
        return [
            row[0]
            for row in self.conn.execute(
                NEIGHBOURS_SQL(tuple(edges)), {"id": node_id, "fanout": fanout}
            )
        ]

    def neighbour_rows(
        self, seqs: Sequence[int], edges: Sequence[str], columns: str
    ) -> Iterable[tuple[int, str, Any]]:
        where, parameters = one_of(self.conn, "s.seq", seqs)
        kinds = list(edges)
        for found in self.conn.execute(
            _AROUND.format(columns=columns, seqs=where), [*parameters, kinds, *parameters, kinds]
        ):
            yield found[0], found[1], found[2:]

    def any_sessions(self) -> bool:
        # Its session lookups are one statement a stage here: asking first would cost a
        # round trip more than it saves.
        return True

    def sessions_of(self, nodes: Sequence[Node]) -> dict[str, str]:
        found: dict[str, str] = {}
        ids = [node_id for node_id, _ in nodes]
        for start in range(0, len(ids), 500):
            where, parameters = one_of(self.conn, "src", ids[start : start + 500])
            for src, dst in self.conn.execute(
                f"SELECT src, dst FROM mem_edges WHERE kind = 'OCCURRED_IN' AND {where}",
                parameters,
            ):
                found[src] = dst
        return found

    def session_windows(
        self,
        seeds: Sequence[Node],
        others: Sequence[Node],
        span: int,
        columns: str,
        namespace: str,
        mask: tuple[str, list[str]],
    ) -> tuple[dict[str, str], list[Any], set[str]]:
        where, mask_params = mask
        rows = self.conn.execute(
            _WINDOW_ROWS.format(columns=columns, first=-span, last=span, mask=where),
            [[node_id for node_id, _ in seeds], [seq for _, seq in seeds], namespace, *mask_params],
        ).fetchall()
        ids = {node_id for node_id, _ in seeds}
        return {row[0]: row[-1] for row in rows if row[0] in ids}, rows, ids

    def superseding(self, seqs: Sequence[int]) -> set[int]:
        where, parameters = one_of(self.conn, "s.seq", seqs)
        return {
            seq
            for (seq,) in self.conn.execute(
                "SELECT DISTINCT s.seq FROM mem_nodes s JOIN mem_edges e ON e.src = s.id "
                f"AND e.kind = 'SUPERSEDES' WHERE {where}",
                parameters,
            )
        }
