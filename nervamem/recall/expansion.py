"""Graph expansion: the neighbours of the best candidates over the edges that carry
meaning, each weighed EXPANSION_DECAY times its parent's relevance per hop.

Neighbours are read through the temporal mask (recall/mask.py) and the namespace
filter like search hits: expansion can never bring back what stopped being true or
another namespace's node. The cost of a hop is bounded by EXPANSION_FANOUT neighbours
per seed, however many edges a hub entity has.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import attrgetter

from ..storage.engine import Connection, one_of
from ..storage.graph_reads import graph_reads_of
from .candidates import (
    NODE_COLUMNS,
    Candidate,
    NodeRow,
    cached_rows,
    candidate_of,
    degrees,
)
from .mask import KnownAt, mask_sql
from .node_cache import CACHED_COLUMNS_TAIL, CachedRow, NodeFacts, held, keep_fact

EXPANSION_DECAY = 0.6
# A cause or effect of a candidate (CAUSED, DERIVED_FROM) inherits CAUSAL_DECAY of its
# relevance instead of EXPANSION_DECAY, and a search hit reached that way is raised to it
# (see expand).
CAUSAL_DECAY = 0.9
CAUSAL_EDGES = ("CAUSED", "DERIVED_FROM")
EXPANSION_FANOUT = 8
EXPANSION_SEEDS = 30

# Edges that expansion follows, in both directions. OCCURRED_IN is left out on purpose:
# a session links to everything that happened in it, so following it would pull a whole
# session into every recall. ABOUT and TOUCHES reach an entity and what else is about it
# (bounded by EXPANSION_FANOUT, newest first, so a hub entity cannot flood the result).
# SUPERSEDES is left out: a superseded version is masked out anyway.
EXPANSION_EDGES = ("ABOUT", "TOUCHES", "CAUSED", "DERIVED_FROM", "CONTRADICTS")


def expand(
    conn: Connection,
    namespace: str,
    seeds: dict[str, Candidate],
    *,
    hops: int,
    as_of: str | KnownAt | None,
    kinds: Sequence[str] | None,
    width: int = EXPANSION_SEEDS,
    facts: NodeFacts | None = None,
) -> dict[str, Candidate]:
    """Neighbours of the ``width`` best seeds (at most EXPANSION_SEEDS), each with 0.6x
    its parent's relevance per hop; the ``width`` best neighbours seed the next hop.

    A cause or an effect (CAUSAL_EDGES) is closer than what merely shares an entity: it
    inherits CAUSAL_DECAY (0.9) of its parent's relevance, and when search already found
    it with less (the outcome of an action, holding few of the query's words: "what
    happened when we rotated the signing key?" -> "The key rotation logged out every
    mobile user"), it is raised to that. Other neighbours that search found keep their
    own relevance. Entities reached over ABOUT are hubs, and their other memories only
    share a topic: they keep the plain 0.6 per hop.

    With ``facts`` (recall/node_cache.py), neighbours, causal links and rows are read
    from it where it holds them."""
    width = max(1, min(width, EXPANSION_SEEDS))
    result = dict(seeds)
    frontier = sorted(seeds.values(), key=attrgetter("relevance"), reverse=True)[:width]
    mask, mask_params = mask_sql(as_of)
    for _ in range(hops):
        inherited: dict[str, float] = {}
        around, causal, rows_of = edges_of(
            conn, [parent.id for parent in frontier], namespace, mask, mask_params, facts
        )
        for parent in frontier:
            for neighbour in around[parent.id]:
                is_causal = (parent.id, neighbour) in causal
                if neighbour in result:
                    if is_causal:
                        known = result[neighbour]
                        known.relevance = max(known.relevance, parent.relevance * CAUSAL_DECAY)
                    continue
                score = parent.relevance * (CAUSAL_DECAY if is_causal else EXPANSION_DECAY)
                if score > inherited.get(neighbour, 0.0):
                    inherited[neighbour] = score
        if not inherited:
            break
        frontier = []
        if rows_of is None and facts is not None and not isinstance(as_of, KnownAt):
            pending = list(inherited)  # in chunks of 500, as _fetch_masked reads them
            rows = [
                row
                for start in range(0, len(pending), 500)
                for row in cached_rows(
                    conn, facts, "id", pending[start : start + 500], namespace, as_of
                )
            ]
        elif rows_of is None:
            rows = _fetch_masked(conn, namespace, list(inherited), mask, mask_params)
        else:  # read with the edges, in the order of the IN list's read by ID
            rows = [rows_of[node_id] for node_id in sorted(inherited) if node_id in rows_of]
        for row in rows:
            candidate = candidate_of(row, inherited[row[0]], "expansion")
            frontier.append(candidate)
            if not kinds or candidate.kind in kinds:
                result[candidate.id] = candidate
        frontier.sort(key=attrgetter("relevance"), reverse=True)
        frontier = frontier[:width]
    return result


def edges_of(
    conn: Connection,
    ids: Sequence[str],
    namespace: str,
    mask: str,
    mask_params: list[str],
    facts: NodeFacts | None = None,
) -> tuple[Mapping[str, Sequence[str]], set[tuple[str, str]], dict[str, NodeRow] | None]:
    """:func:`neighbours` and :func:`causal_pairs` of a frontier, and where the engine
    reads a frontier in one statement (GraphReads.frontier: where a round trip costs
    more than the statement) the neighbours' rows that the mask admits. None: read the
    rows with _fetch_masked."""
    in_one = graph_reads_of(conn).frontier(
        ids,
        EXPANSION_EDGES,
        CAUSAL_EDGES,
        EXPANSION_FANOUT,
        NODE_COLUMNS,
        namespace,
        (mask, mask_params),
    )
    if in_one is not None:
        return in_one
    return neighbours(conn, ids, facts), causal_pairs(conn, ids, facts), None


def causal_pairs(
    conn: Connection, ids: Sequence[str], facts: NodeFacts | None = None
) -> set[tuple[str, str]]:
    """(node, neighbour) for every CAUSAL_EDGES edge of the nodes ``ids``, both
    directions: which of the neighbours that :func:`neighbours` found are a cause or an
    effect. Two index reads per node (the primary key and mem_edges_dst), for the nodes
    whose causal links ``facts`` does not hold yet."""
    pairs: set[tuple[str, str]] = set()
    unknown = list(ids)
    if facts is not None:
        linked, unknown = held(facts.causal, ids)
        pairs.update((node_id, other) for node_id, others in linked.items() for other in others)
    if not unknown:
        return pairs
    marks = ",".join("?" * len(unknown))
    kinds = ",".join(f"'{kind}'" for kind in CAUSAL_EDGES)
    found = conn.execute(
        f"SELECT src, dst FROM mem_edges WHERE src IN ({marks}) AND kind IN ({kinds}) "
        "UNION ALL "
        f"SELECT dst, src FROM mem_edges WHERE dst IN ({marks}) AND kind IN ({kinds})",
        [*unknown, *unknown],
    ).fetchall()
    pairs.update(found)
    if facts is not None:
        linked_to: dict[str, list[str]] = {node_id: [] for node_id in unknown}
        for node_id, other in found:
            linked_to[node_id].append(other)
        for node_id, others in linked_to.items():
            keep_fact(facts.causal, node_id, tuple(others))
    return pairs


# A node with at most this many edges (every kind) has its neighbours read in one batch
# with the other small nodes of a hop; a bigger one (entity hubs, sessions) through
# GraphReads.newest_neighbours, which reads only its newest rows per edge kind.
BATCH_DEGREE = 64


def neighbours(
    conn: Connection, ids: Sequence[str], facts: NodeFacts | None = None
) -> Mapping[str, Sequence[str]]:
    """The EXPANSION_FANOUT newest neighbours of each node over EXPANSION_EDGES, both
    directions (what GraphReads.newest_neighbours returns for it), for a whole frontier at once: one
    statement for the small nodes instead of one per node. Those ``facts`` holds are
    not read again."""
    known: dict[str, tuple[str, ...]] = {}
    if facts is not None:
        known, unknown = held(facts.neighbours, ids)
        if not unknown:
            return known
        ids = unknown
    graph = graph_reads_of(conn)
    degree = degrees(conn, ids, facts)
    small = [node_id for node_id in dict.fromkeys(ids) if degree.get(node_id, 0) <= BATCH_DEGREE]
    found: dict[str, set[str]] = {node_id: set() for node_id in small}
    rows: dict[str, CachedRow] = {}
    if small and facts is not None:
        # By seq where the cache holds the node's row, with the neighbours' rows, and
        # their causal links (CAUSAL_EDGES are among EXPANSION_EDGES) for causal_pairs.
        id_of = {seq: node_id for node_id in small if (seq := facts.ids.get(node_id))}
        if id_of:
            causal: dict[str, list[str]] = {node_id: [] for node_id in id_of.values()}
            for seq, kind, row in graph.neighbour_rows(
                list(id_of), EXPANSION_EDGES, NODE_COLUMNS + CACHED_COLUMNS_TAIL
            ):
                found[id_of[seq]].add(row[0])
                rows[row[0]] = row
                if kind in CAUSAL_EDGES:
                    causal[id_of[seq]].append(row[0])
            for node_id, others in causal.items():
                keep_fact(facts.causal, node_id, tuple(others))
            small = [node_id for node_id in small if node_id not in facts.ids]
    if small:
        marks = ",".join("?" * len(small))
        kinds = ",".join(f"'{kind}'" for kind in EXPANSION_EDGES)
        for node_id, neighbour in conn.execute(
            f"SELECT src, dst FROM mem_edges WHERE src IN ({marks}) AND kind IN ({kinds}) "
            "UNION ALL "
            f"SELECT dst, src FROM mem_edges WHERE dst IN ({marks}) AND kind IN ({kinds})",
            [*small, *small],
        ):
            found[node_id].add(neighbour)
    result: dict[str, Sequence[str]] = {
        node_id: sorted(near, reverse=True)[:EXPANSION_FANOUT] for node_id, near in found.items()
    }
    for node_id in ids:
        if node_id not in result:
            result[node_id] = graph.newest_neighbours(node_id, EXPANSION_EDGES, EXPANSION_FANOUT)
    if facts is not None:
        for node_id, near in result.items():
            # A tuple of strings, which the cyclic GC stops tracking (a list it walks
            # at every full collection: bench/results.md, "The GC and the caches").
            keep_fact(facts.neighbours, node_id, tuple(near))
            for neighbour in near:  # the rows expansion asks the cache for next
                if neighbour in rows and neighbour not in facts.ids:
                    facts.keep_row(rows[neighbour])
        result.update(known)
    return result


def _fetch_masked(
    conn: Connection, namespace: str, ids: list[str], mask: str, mask_params: list[str]
) -> list[NodeRow]:
    rows: list[NodeRow] = []
    for start in range(0, len(ids), 500):
        where, parameters = one_of(conn, "n.id", ids[start : start + 500])
        # '+n.namespace': look the IDs up by the id index. Without the '+', SQLite picks
        # mem_nodes_ns_kind for a long IN list and scans the whole namespace.
        rows += conn.execute(
            f"SELECT {NODE_COLUMNS} FROM mem_nodes n WHERE {where} AND +n.namespace = ? AND {mask}",
            [*parameters, namespace, *mask_params],
        ).fetchall()
    return rows
