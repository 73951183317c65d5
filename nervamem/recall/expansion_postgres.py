"""Expansion's edge reads on PostgreSQL: a whole frontier in one statement.

On SQLite a statement is a function call, so expansion.py reads the neighbours of a
hub entity one seed at a time (NEIGHBOURS_SQL) and the small nodes in one batch, after
a degree lookup that tells them apart, and the causal edges in another. On a server
each of those is a round trip (~0.3 ms, and ~11 of them per recall at 100k), so here one
statement does all of it: for each seed, a LATERAL subquery with NEIGHBOURS_SQL's
branches (one per edge kind and direction, each reading at most EXPANSION_FANOUT index
entries, newest first), their union's EXPANSION_FANOUT newest, and whether one of the
branches that returned a neighbour is a causal edge.

The same answer as expansion.py's: the union of the per-branch top rows holds the
overall top rows; and a neighbour among a seed's EXPANSION_FANOUT newest is among the
EXPANSION_FANOUT newest of every branch that reaches it (the primary key (src, kind,
dst) allows no two edges of a kind between two nodes), so the causal branches see every
causal edge to it that causal_pairs would.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from ..storage.engine import Connection
from .candidates import NODE_COLUMNS, NodeRow


@lru_cache(maxsize=4)
def frontier_sql(edges: tuple[str, ...], causal_edges: tuple[str, ...], fanout: int) -> str:
    """The statement, for expansion.py's edge kinds and fanout (passed in: this module
    is expansion's helper, so it does not import it). With each neighbour, its row if
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
        f"SELECT s.id, x.far, x.causal, {NODE_COLUMNS} FROM unnest(?::text[]) AS s(id) "
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
) -> tuple[dict[str, list[str]], set[tuple[str, str]], dict[str, NodeRow]]:
    """expansion.neighbours, the causal pairs among them, and the neighbours' rows that
    the mask admits (``mask``: SQL on the alias ``n``), in one round trip (``sql``:
    :func:`frontier_sql`)."""
    around: dict[str, list[str]] = {node_id: [] for node_id in ids}
    causal: set[tuple[str, str]] = set()
    rows: dict[str, NodeRow] = {}
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
