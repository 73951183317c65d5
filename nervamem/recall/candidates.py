"""The node rows recall reads, the :class:`Candidate` each becomes on its way through
the stages, and the lookups by node ID that more than one stage makes (degree, session,
and whether the store has sessions at all).

Nothing crosses a namespace: whoever reads node rows with NODE_COLUMNS filters them by
namespace and by the temporal mask (recall/mask.py). The lookups here take IDs that
were read that way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from ..storage.engine import Connection, one_of
from ..storage.graph_reads import graph_reads_of
from .node_cache import CACHED_COLUMNS_TAIL, admits, held, keep_fact

if TYPE_CHECKING:
    from .node_cache import NodeFacts

NODE_COLUMNS = (
    "n.id, n.kind, n.content, n.valid_from, n.valid_until, n.recorded_at, "
    "n.confidence, n.access_count, n.seq"
)
NodeRow = tuple[str, str, str, str, str | None, str, float, int, int]


class Candidate:
    """A node on its way through recall, with its relevance so far. A plain class with
    slots, not a dataclass: building a dataclass costs ~1 ms in every fresh process,
    and recall makes hundreds of these."""

    __slots__ = (
        "id",
        "kind",
        "content",
        "valid_from",
        "valid_until",
        "recorded_at",
        "confidence",
        "access_count",
        "seq",
        "relevance",
        "via",
    )

    def __init__(
        self,
        id: str,  # noqa: A002  (the node's ID, as everywhere else)
        kind: str,
        content: str,
        valid_from: str,
        valid_until: str | None,
        recorded_at: str,
        confidence: float,
        access_count: int,
        seq: int,
        *,
        relevance: float,
        via: str,  # "search", "context" or "expansion"
    ) -> None:
        self.id = id
        self.kind = kind
        self.content = content
        self.valid_from = valid_from
        self.valid_until = valid_until
        self.recorded_at = recorded_at
        self.confidence = confidence
        self.access_count = access_count
        self.seq = seq
        self.relevance = relevance
        self.via = via

    def __repr__(self) -> str:
        return f"Candidate({self.id!r}, relevance={self.relevance!r}, via={self.via!r})"


_new_candidate = object.__new__


def candidate_of(row: NodeRow, relevance: float, via: str) -> Candidate:
    """``Candidate(*row, relevance=relevance, via=via)`` without parsing a call's
    arguments: ~0.15 against ~0.6 us, for the ~150 candidates a search scores."""
    candidate: Candidate = _new_candidate(Candidate)
    (
        candidate.id,
        candidate.kind,
        candidate.content,
        candidate.valid_from,
        candidate.valid_until,
        candidate.recorded_at,
        candidate.confidence,
        candidate.access_count,
        candidate.seq,
    ) = row
    candidate.relevance = relevance
    candidate.via = via
    return candidate


# SQLite (m007): the mem_degree view's value for each node seq of a JSON array, read
# from mem_node_degree and mem_links alone. The view, asked by ID, first seeks the ID
# index for every node: by seq ~0.35 ms instead of ~0.8 for 166 nodes that are not in
# SQLite's page cache yet (a query's first recall at 100k nodes).
_DEGREE_BY_SEQ = (
    "SELECT s.value, coalesce((SELECT g.degree FROM mem_node_degree g WHERE g.seq = s.value), "
    "(SELECT count(*) FROM mem_links WHERE src = s.value) + "
    "(SELECT count(*) FROM mem_links WHERE dst = s.value)) FROM json_each(?) s"
)


def degrees(conn: Connection, ids: Iterable[str], facts: NodeFacts | None = None) -> dict[str, int]:
    """Number of edges of each node, both directions, every kind (missing: none). Read
    from mem_degree, which triggers keep equal to the count of mem_edges rows: counting
    them here would read every edge of a hub entity on every recall. With ``facts``
    (recall/node_cache.py, SQLite), only the degrees it does not hold yet are read, by
    seq for the nodes whose row it holds."""
    counts: dict[str, int] = {}
    id_list = unknown = list(ids)
    if facts is not None:
        counts, unknown = held(facts.degree, id_list)
        id_list = unknown = list(dict.fromkeys(unknown))
        seq_of = facts.ids.get
        by_seq = {seq: node_id for node_id in unknown if (seq := seq_of(node_id)) is not None}
        if by_seq:
            seqs = "[" + ",".join(map(str, by_seq)) + "]"
            for seq, count in conn.execute(_DEGREE_BY_SEQ, (seqs,)):
                counts[by_seq[seq]] = count
            id_list = [node_id for node_id in unknown if seq_of(node_id) is None]
    for start in range(0, len(id_list), 500):
        where, parameters = one_of(conn, "node_id", id_list[start : start + 500])
        for node_id, count in conn.execute(
            f"SELECT node_id, degree FROM mem_degree WHERE {where}", parameters
        ):
            counts[node_id] = count
    if facts is not None:
        for node_id in unknown:
            keep_fact(facts.degree, node_id, counts.get(node_id, 0))
    return counts


def cached_rows(
    conn: Connection,
    facts: NodeFacts,
    column: str,
    keys: Sequence[Any],
    namespace: str,
    as_of: str | None,
    kinds: Sequence[str] | None = None,
) -> list[NodeRow]:
    """What ``SELECT NODE_COLUMNS FROM mem_nodes n WHERE n.{column} IN (keys) AND
    +n.namespace = ? AND {mask_sql(as_of)} [AND n.kind IN (kinds)]`` returns, in the same
    order (``column``: ``seq`` or ``id``, ascending as SQLite reads an IN list by
    index), from ``facts`` where it holds the rows; the others are read unfiltered,
    kept, and filtered like the cached ones (node_cache.admits)."""
    by_seq = column == "seq"
    table = facts.rows
    settled, fresh, used, seq_of = table.entries.get, table.fresh.get, table.used, facts.ids.get
    found = []
    missing = []
    for key in keys:  # inlined: ~150 rows a stage, every recall
        seq = key if by_seq else seq_of(key)
        row = None if seq is None else settled(seq) or fresh(seq)
        if row is None:
            missing.append(key)
        else:
            used[row[8]] = None  # marked used: the rows not used for longest go first
            found.append(row)
    if missing:
        for row in conn.execute(
            f"SELECT {NODE_COLUMNS}{CACHED_COLUMNS_TAIL} FROM mem_nodes n "
            f"WHERE n.{column} IN ({','.join('?' * len(missing))})",
            missing,
        ):
            facts.keep_row(row)
            found.append(row)
    found.sort(key=itemgetter(8 if by_seq else 0))
    return [row[:9] for row in found if admits(row, namespace, as_of, kinds)]


def reasons_of(
    conn: Connection, ids: Sequence[str]
) -> dict[str, tuple[str | None, tuple[str, ...]]]:
    """Rationale and rejected alternatives of the decisions among ``ids`` that have any
    (``data``'s ``rationale`` and ``rejected``, as ``store decision`` writes them)."""
    if not ids:
        return {}
    import json  # only when a decision is shown

    found: dict[str, tuple[str | None, tuple[str, ...]]] = {}
    where, parameters = one_of(conn, "id", ids)
    for node_id, rationale, rejected in conn.execute(
        "SELECT id, json_extract(data, '$.rationale'), json_extract(data, '$.rejected') "
        f"FROM mem_nodes WHERE {where} AND why IS NOT NULL",
        parameters,
    ):
        alternatives = tuple(str(a) for a in json.loads(rejected)) if rejected else ()
        found[node_id] = (rationale, alternatives)
    return found


def any_sessions(conn: Connection) -> bool:
    """Whether the store holds a session node, in any namespace (what nervamem writes
    keeps a memory and its session in one namespace, sessions.py; an imported event need
    not, and asking for all costs a seek or two more), tombstoned or not. An OCCURRED_IN
    edge always ends at one (writing.py links a memory to the active session; a purge
    deletes a session's edges with it), so without one recall has no session to read or
    show and skips its lookups (GraphReads.any_sessions: an engine may answer True
    without asking). Asked on every recall, so a session started by another process is
    seen at once."""
    return graph_reads_of(conn).any_sessions()


def sessions_of(conn: Connection, candidates: Sequence[Candidate]) -> dict[str, str]:
    """The session each of ``candidates`` occurred in, by candidate ID (none: absent)."""
    return graph_reads_of(conn).sessions_of([(c.id, c.seq) for c in candidates])
