"""The newest neighbours of a node with many edges, on SQLite.

SQLite keys edges by the nodes' integer ``seq`` (mem_links, migrations.m007): the index
finds a hub's neighbours without reading a node row, but orders them by seq, not by ID
as "newest first" (expansion.NEIGHBOURS_SQL) means. So the ``fanout`` newest by ID are
found one of two ways, whichever reads fewer rows. With k neighbours among n nodes and
t = sqrt(fanout * n) (~900 at 100k):

* k < t: read the k neighbours' IDs and sort them (k row reads);
* k >= t in one direction: walk the ID index from the highest ID down, keeping the
  nodes linked to this one, until ``fanout`` are found. A neighbour comes every n / k
  rows, so the walk reads about fanout * n / k <= t rows (~200 for a hub of 4,000 at
  100k); one that finds too few within 4t rows (a hub whose memories are all old) falls
  back to reading them all.

Telling k >= t steps over t index entries, no more. Either way the result is exactly
NEIGHBOURS_SQL's."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from math import isqrt

from ..storage.engine import Connection
from ..storage.sqlite.migrations import EDGE_KIND_CODES
from .candidates import NODE_COLUMNS
from .node_cache import CACHED_COLUMNS_TAIL, CachedRow

# The walk checks each row with one seek per direction that has edges: the row's own
# edges (few: a memory's entities) by the primary key, its incoming edges (few but on
# the rare hub it passes) by mem_links_dst. '+' keeps SQLite from reading this node's
# edges (a hub's thousands) instead, or seeking once per kind.
_WALK = (
    "SELECT id FROM (SELECT id, seq FROM mem_nodes ORDER BY id DESC LIMIT :rows) AS n "
    "WHERE {linked} LIMIT :fanout"
)
_LINKED_FROM = (
    "EXISTS (SELECT 1 FROM mem_links WHERE src = n.seq AND +kind IN ({kinds}) AND +dst = :seq)"
)
_LINKED_TO = (
    "EXISTS (SELECT 1 FROM mem_links WHERE dst = n.seq AND +kind IN ({kinds}) AND +src = :seq)"
)
# Whether this node has edges towards it, and at least :skip + 1 of them; the same for
# edges from it. Read from an index alone (mem_links_dst, the primary key), stepping over
# at most :skip entries.
_SIZES = (
    "SELECT (SELECT 1 FROM mem_links WHERE dst = :seq AND kind IN ({kinds}) LIMIT 1), "
    "(SELECT 1 FROM mem_links WHERE dst = :seq AND kind IN ({kinds}) LIMIT 1 OFFSET :skip), "
    "(SELECT 1 FROM mem_links WHERE src = :seq AND kind IN ({kinds}) LIMIT 1), "
    "(SELECT 1 FROM mem_links WHERE src = :seq AND kind IN ({kinds}) LIMIT 1 OFFSET :skip)"
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
    kinds = ",".join(str(EDGE_KIND_CODES.index(kind)) for kind in edge_kinds)
    row = conn.execute(
        "SELECT seq, (SELECT max(seq) FROM mem_nodes) FROM mem_nodes WHERE id = ?", (node_id,)
    ).fetchone()
    if row is None:
        return []
    seq, nodes = row
    limit = isqrt(fanout * nodes) + 1
    towards, many_towards, away, many_away = conn.execute(
        _SIZES.format(kinds=kinds), {"seq": seq, "skip": limit - 1}
    ).fetchone()
    if many_towards or many_away:
        # A node linked to this one is the source of an edge towards it, or the
        # destination of one from it.
        linked = " OR ".join(
            part.format(kinds=kinds)
            for part, present in ((_LINKED_FROM, towards), (_LINKED_TO, away))
            if present
        )
        found = [
            found_id
            for (found_id,) in conn.execute(
                _WALK.format(linked=linked), {"seq": seq, "rows": 4 * limit, "fanout": fanout}
            )
        ]
        if len(found) == fanout:
            return sorted(found, reverse=True)
    every = [found_id for (found_id,) in conn.execute(_ALL.format(kinds=kinds), {"seq": seq})]
    return sorted(every, reverse=True)[:fanout]


# The neighbours of small nodes by their seqs, with each neighbour's row as the node
# cache keeps it (candidates.cached_rows): what ``mem_edges WHERE src IN (ids)`` finds,
# without the view's seek of the ID index a node, and the rows expansion reads next in
# the same pass (the join reads each neighbour's row for its ID anyway).
_AROUND = (
    f"SELECT l.src, l.kind, {NODE_COLUMNS}{CACHED_COLUMNS_TAIL} FROM mem_links l "
    "JOIN mem_nodes n ON n.seq = l.dst WHERE l.src IN ({seqs}) AND l.kind IN ({kinds}) "
    f"UNION ALL SELECT l.dst, l.kind, {NODE_COLUMNS}{CACHED_COLUMNS_TAIL} FROM mem_links l "
    "JOIN mem_nodes n ON n.seq = l.src WHERE l.dst IN ({seqs}) AND l.kind IN ({kinds})"
)


def neighbour_rows(
    conn: Connection, seqs: Sequence[int], edge_kinds: Sequence[str]
) -> Iterable[tuple[int, str, CachedRow]]:
    """(node seq, edge kind, neighbour's row) for every edge of ``edge_kinds`` of the
    nodes ``seqs``, both directions."""
    kinds = ",".join(str(EDGE_KIND_CODES.index(kind)) for kind in edge_kinds)
    marks = ",".join("?" * len(seqs))
    # A slice, not ``seq, code, *row``: that builds a list and then a tuple of it.
    for found in conn.execute(_AROUND.format(seqs=marks, kinds=kinds), [*seqs, *seqs]):
        yield found[0], EDGE_KIND_CODES[found[1]], found[2:]
