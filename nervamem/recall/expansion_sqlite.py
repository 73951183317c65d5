"""The newest neighbours of a node with many edges, on SQLite.

SQLite keys edges by the nodes' integer ``seq`` (mem_links, migrations.m007): the index
finds a hub's neighbours without reading a node row, but orders them by seq, not by ID
as "newest first" (expansion.NEIGHBOURS_SQL) means. So the ``fanout`` newest by ID are
found one of two ways, whichever reads fewer rows. With k neighbours among n nodes and
t = sqrt(fanout * n) (~900 at 100k):

* k < t: read the k neighbours' IDs and sort them (k row reads);
* k >= t: walk the ID index from the highest ID down, keeping the nodes linked to this
  one, until ``fanout`` are found. A neighbour comes every n / k rows, so the walk reads
  about fanout * n / k <= t rows (~200 for a hub of 4,000 at 100k); one that finds too
  few within 4t rows (a hub whose memories are all old) falls back to reading them all.

Counting k stops at t. Either way the result is exactly NEIGHBOURS_SQL's."""

from __future__ import annotations

from collections.abc import Sequence
from math import isqrt

from ..storage.engine import Connection

# The walk checks each row both ways with one seek each: the row's own edges (few: a
# memory's entities) by the primary key, and its incoming edges by mem_links_dst (few
# but on the rare hub it passes). '+' keeps SQLite from reading this node's edges (a
# hub's thousands) instead, or seeking once per kind.
_WALK = (
    "SELECT id FROM (SELECT id, seq FROM mem_nodes ORDER BY id DESC LIMIT :rows) AS n "
    "WHERE EXISTS (SELECT 1 FROM mem_links WHERE src = n.seq AND +kind IN ({kinds}) "
    "AND +dst = :seq) OR EXISTS (SELECT 1 FROM mem_links WHERE dst = n.seq "
    "AND +kind IN ({kinds}) AND +src = :seq) LIMIT :fanout"
)
_COUNT = (
    "SELECT count(*) FROM (SELECT 1 FROM mem_links WHERE src = :seq AND kind IN ({kinds}) "
    "UNION ALL SELECT 1 FROM mem_links WHERE dst = :seq AND kind IN ({kinds}) LIMIT :limit)"
)
_ALL = (
    "SELECT n.id FROM mem_links l JOIN mem_nodes n ON n.seq = l.dst "
    "WHERE l.src = :seq AND l.kind IN ({kinds}) UNION "
    "SELECT n.id FROM mem_links l JOIN mem_nodes n ON n.seq = l.src "
    "WHERE l.dst = :seq AND l.kind IN ({kinds})"
)


def newest_neighbours(
    conn: Connection, node_id: str, edge_kinds: Sequence[str], fanout: int
) -> list[str]:
    """The ``fanout`` highest IDs among the nodes linked to ``node_id`` by an edge of
    ``edge_kinds`` in either direction, highest first."""
    kinds = ",".join(f"'{kind}'" for kind in edge_kinds)
    row = conn.execute("SELECT seq FROM mem_nodes WHERE id = ?", (node_id,)).fetchone()
    if row is None:
        return []
    seq = row[0]
    nodes = conn.execute("SELECT max(seq) FROM mem_nodes").fetchone()[0] or 0
    limit = isqrt(fanout * nodes) + 1
    many = conn.execute(_COUNT.format(kinds=kinds), {"seq": seq, "limit": limit}).fetchone()[0]
    if many >= limit:
        found = [
            found_id
            for (found_id,) in conn.execute(
                _WALK.format(kinds=kinds), {"seq": seq, "rows": 4 * limit, "fanout": fanout}
            )
        ]
        if len(found) == fanout:
            return sorted(found, reverse=True)
    every = [found_id for (found_id,) in conn.execute(_ALL.format(kinds=kinds), {"seq": seq})]
    return sorted(every, reverse=True)[:fanout]
