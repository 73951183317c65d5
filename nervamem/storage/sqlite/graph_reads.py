"""Recall's graph reads on SQLite (graph_reads.py): edges read by the nodes' integer seq.

The newest neighbours of a node with many edges:

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
what postgres/graph_reads.NEIGHBOURS_SQL returns on the mem_edges view."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from math import isqrt
from typing import Any

from ..dbapi import Connection
from .migrations import EDGE_KIND_CODES

# graph_reads.Node (not imported: graph_reads imports this module when asked for it).
Node = tuple[str, int]

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
    "SELECT l.src, l.kind, {columns} FROM mem_links l "
    "JOIN mem_nodes n ON n.seq = l.dst WHERE l.src IN ({seqs}) AND l.kind IN ({kinds}) "
    "UNION ALL SELECT l.dst, l.kind, {columns} FROM mem_links l "
    "JOIN mem_nodes n ON n.seq = l.src WHERE l.dst IN ({seqs}) AND l.kind IN ({kinds})"
)


def neighbour_rows(
    conn: Connection, seqs: Sequence[int], edge_kinds: Sequence[str], columns: str
) -> Iterable[tuple[int, str, Any]]:
    """(node seq, edge kind, neighbour's ``columns``) for every edge of ``edge_kinds`` of
    the nodes ``seqs``, both directions."""
    kinds = ",".join(str(EDGE_KIND_CODES.index(kind)) for kind in edge_kinds)
    marks = ",".join("?" * len(seqs))
    sql = _AROUND.format(columns=columns, seqs=marks, kinds=kinds)
    # A slice, not ``seq, code, *row``: that builds a list and then a tuple of it.
    for found in conn.execute(sql, [*seqs, *seqs]):
        yield found[0], EDGE_KIND_CODES[found[1]], found[2:]


# Each namespace of the store in turn (a skip-scan of mem_nodes_ns_kind: two index seeks
# a namespace, none of the table), until one holds a session node.
_ANY_SESSION = (
    "WITH RECURSIVE spaces(name) AS (SELECT min(namespace) FROM mem_nodes UNION ALL "
    "SELECT (SELECT min(namespace) FROM mem_nodes WHERE namespace > name) FROM spaces "
    "WHERE name IS NOT NULL) SELECT 1 FROM spaces WHERE EXISTS (SELECT 1 FROM mem_nodes "
    "WHERE namespace = spaces.name AND kind = 'session') LIMIT 1"
)

# Sessions straight from mem_links (m007) by the nodes' seqs, one seek of its primary key
# a node (and the session's row); the mem_edges view would first seek the ID index for
# each seq.
_SESSIONS_BY_SEQ = (
    "SELECT l.src, d.id FROM mem_links l JOIN mem_nodes d ON d.seq = l.dst "
    f"WHERE l.kind = {EDGE_KIND_CODES.index('OCCURRED_IN')} AND l.src IN ({{seqs}})"
)

# The rows of the seqs around the seeds with their session, from mem_links (m007) by each
# row's seq, instead of the mem_edges view's seek of the ID index for it (~180 rows a
# recall, ~1 us each).
_WINDOW_ROWS = (
    "SELECT {columns}, s.id FROM mem_nodes n JOIN mem_links l ON l.src = n.seq "
    f"AND l.kind = {EDGE_KIND_CODES.index('OCCURRED_IN')} JOIN mem_nodes s ON s.seq = l.dst "
    "WHERE n.seq {seqs} AND +n.namespace = ? AND {mask}"
)

# Which of the nodes (by seq) supersede any node.
_SUCCESSORS = (
    "SELECT DISTINCT src FROM mem_links "
    f"WHERE kind = {EDGE_KIND_CODES.index('SUPERSEDES')} AND src IN ({{seqs}})"
)


class SQLiteGraphReads:
    """A statement is a function call here: the reads come in steps, each reading as few
    rows as it can by seq."""

    __slots__ = ("conn",)

    # Batches sized by what packing will use: no round trip to save.
    lookups_per_batch: int | None = None

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
    ) -> None:
        # In steps: a degree lookup tells hubs (newest_neighbours) from small nodes (one
        # batch, neighbour_rows where the node cache knows their seqs).
        return None

    def newest_neighbours(self, node_id: str, edges: Sequence[str], fanout: int) -> list[str]:
        return newest_neighbours(self.conn, node_id, edges, fanout)

    def neighbour_rows(
        self, seqs: Sequence[int], edges: Sequence[str], columns: str
    ) -> Iterable[tuple[int, str, Any]]:
        return neighbour_rows(self.conn, seqs, edges, columns)

    def any_sessions(self) -> bool:
        # Four statements of every recall saved on a store written without sessions,
        # ~0.4 ms at 1k and ~0.9 ms at 100k nodes (bench/results.md, "Fewer SQL
        # statements"), for ~7 us here.
        return self.conn.execute(_ANY_SESSION).fetchone() is not None

    def sessions_of(self, nodes: Sequence[Node]) -> dict[str, str]:
        # A node's seq and ID come from one row, so reading by seq finds what the
        # mem_edges view finds by ID, ~1 us a node sooner (session context asks for ~150).
        found: dict[str, str] = {}
        id_of = {seq: node_id for node_id, seq in nodes}
        seqs = list(id_of)
        for start in range(0, len(seqs), 500):
            chunk = seqs[start : start + 500]
            for src, dst in self.conn.execute(
                _SESSIONS_BY_SEQ.format(seqs=",".join("?" * len(chunk))), chunk
            ):
                found[id_of[src]] = dst
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
        # The sessions of every node of ``others`` (seeds among them) at once: one
        # statement instead of two, the same nodes.
        session_of = self.sessions_of(others)
        wanted = sorted(
            {
                seq + d
                for node_id, seq in seeds
                if node_id in session_of
                for d in range(-span, span + 1)
            }
        )
        if not wanted:
            return session_of, [], {node_id for node_id, _ in others}
        seqs = f"IN ({','.join('?' * len(wanted))})"
        where, mask_params = mask
        rows = self.conn.execute(
            _WINDOW_ROWS.format(columns=columns, seqs=seqs, mask=where),
            [*wanted, namespace, *mask_params],
        ).fetchall()
        return session_of, rows, {node_id for node_id, _ in others}

    def superseding(self, seqs: Sequence[int]) -> set[int]:
        return {
            seq
            for (seq,) in self.conn.execute(
                _SUCCESSORS.format(seqs=",".join("?" * len(seqs))), list(seqs)
            )
        }
