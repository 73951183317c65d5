"""Browsing rather than searching: :func:`show_nodes` reads back everything known about
a node, :func:`list_nodes` lists nodes newest first under plain filters.

Both return plain values. Unlike recall, neither ranks nor spends a budget, and
``show`` shows a forgotten (tombstoned) node as such instead of pretending it is gone:
the person asking already holds its ID. ``list`` hides superseded and forgotten nodes
unless asked, and never crosses the namespace.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import nodes
from .errors import BadInputError, NotFoundError
from .kinds import NODE_KINDS
from .timeparse import parse_time

if TYPE_CHECKING:
    from .code.values import CodeAnchor
    from .storage.engine import Storage

# What `list` shows when no --kind is given: memories, not the sessions and entities
# they are filed under (those are listed with --kind session / --kind entity).
DEFAULT_LIST_KINDS = ("fact", "decision", "action", "outcome", "procedure", "preference")
MAX_LIST_LIMIT = 10_000
# Node data keys shown by name in NodeDetail (rationale, alternatives, an entity's code
# anchor records); the rest stays in NodeDetail.data.
_NAMED_DATA = frozenset(
    {
        "rationale",
        "rejected",
        "anchors",
        "file_path",
        "start_line",
        "end_line",
        "graph_node_id",
        "source_hash",
        "ambiguous",
    }
)


@dataclass(frozen=True)
class Link:
    """An edge of a shown node, seen from it: ``direction`` is "out" when the shown node
    is the edge's source (it SUPERSEDES the other), "in" when it is the target."""

    edge: str
    direction: str
    id: str
    short_id: str
    kind: str
    content: str
    tombstoned: bool


@dataclass(frozen=True)
class NodeDetail:
    """Everything stored about one node (``show``)."""

    id: str
    short_id: str
    kind: str
    content: str
    namespace: str
    status: str  # current | superseded | expired | forgotten
    valid_from: str
    valid_until: str | None
    recorded_at: str
    confidence: float
    session: Link | None
    entities: tuple[str, ...]
    rationale: str | None
    rejected: tuple[str, ...]
    links: tuple[Link, ...]
    anchors: tuple[CodeAnchor, ...]
    data: dict[str, Any]


@dataclass(frozen=True)
class ListedNode:
    """One line of ``list``."""

    id: str
    short_id: str
    kind: str
    content: str
    status: str
    valid_from: str
    valid_until: str | None
    recorded_at: str
    session: str | None
    session_short_id: str | None


@dataclass(frozen=True)
class ListFilter:
    """``list``'s filters. ``since``/``until`` bound when a node was recorded
    (``recorded_at``), as ISO-8601 input; ``until`` is inclusive."""

    kinds: tuple[str, ...] = ()
    session: str | None = None
    entity: str | None = None
    since: str | None = None
    until: str | None = None
    include_superseded: bool = False
    include_forgotten: bool = False
    limit: int = 50


def status_of(tombstoned: bool, superseded: bool, valid_until: str | None, now: str) -> str:
    if tombstoned:
        return "forgotten"
    if superseded:
        return "superseded"
    if valid_until is not None and valid_until <= now:
        return "expired"
    return "current"


def show_nodes(
    storage: Storage, refs: Sequence[str], *, namespace: str | None = None
) -> list[NodeDetail]:
    """Every node ``refs`` name, in order. All references are resolved first: one that
    names nothing fails the call before anything is read."""
    if not refs:
        raise BadInputError("give at least one node ID")
    ns = storage.namespace_for(namespace)
    ids = list(dict.fromkeys(nodes.resolve_id(storage, ref, namespace=ns) for ref in refs))
    return [_detail(storage, node_id) for node_id in ids]


def _detail(storage: Storage, node_id: str) -> NodeDetail:
    from .code.anchors import anchor_from_record, anchor_records

    conn = storage.connection
    node = nodes.get(storage, node_id)
    rows = conn.execute(
        "SELECT 'out', e.kind, e.data, n.id, n.kind, n.content, n.tombstoned, n.data "
        "FROM mem_edges e JOIN mem_nodes n ON n.id = e.dst WHERE e.src = ? "
        "UNION ALL "
        "SELECT 'in', e.kind, e.data, n.id, n.kind, n.content, n.tombstoned, n.data "
        "FROM mem_edges e JOIN mem_nodes n ON n.id = e.src WHERE e.dst = ? "
        "ORDER BY 2, 1, 4",
        (node_id, node_id),
    ).fetchall()
    short = nodes.short_ids(storage, [node_id, *(row[3] for row in rows)])
    session: Link | None = None
    entities: list[str] = []
    links: list[Link] = []
    anchors: list[CodeAnchor] = []
    superseded = False
    for direction, edge, edge_data, other, kind, content, tombstoned, other_data in rows:
        link = Link(edge, direction, other, short[other], kind, content, bool(tombstoned))
        if edge == "OCCURRED_IN" and direction == "out":
            session = link
        elif edge == "ABOUT" and direction == "out":
            entities.append(content)
        elif edge == "TOUCHES" and direction == "out":
            records = anchor_records(json.loads(edge_data)) or anchor_records(
                json.loads(other_data)
            )
            anchors += [anchor_from_record(r, other, content) for r in records]
        else:
            links.append(link)
        if edge == "SUPERSEDES" and direction == "in" and not tombstoned:
            superseded = True
    if node.kind == "entity":
        anchors += [anchor_from_record(r, node.id, node.content) for r in anchor_records(node.data)]
    if anchors:  # as code-for and code-to show them: with what became of their code
        from .code.queries import shown_source, with_state

        with shown_source(storage) as live:
            anchors = [with_state(anchor, live) for anchor in anchors]
    rejected = node.data.get("rejected")
    return NodeDetail(
        id=node.id,
        short_id=short[node.id],
        kind=node.kind,
        content=node.content,
        namespace=node.namespace,
        status=status_of(node.tombstoned, superseded, node.valid_until, storage.now()),
        valid_from=node.valid_from,
        valid_until=node.valid_until,
        recorded_at=node.recorded_at,
        confidence=node.confidence,
        session=session,
        entities=tuple(entities),
        rationale=node.data.get("rationale"),
        rejected=tuple(rejected) if isinstance(rejected, list) else (),
        links=tuple(links),
        anchors=tuple(anchors),
        data={k: v for k, v in node.data.items() if k not in _NAMED_DATA},
    )


def list_nodes(
    storage: Storage, wanted: ListFilter, *, namespace: str | None = None
) -> list[ListedNode]:
    """Nodes of the namespace, newest recorded first, under ``wanted``'s filters."""
    ns = storage.namespace_for(namespace)
    for kind in wanted.kinds:
        if kind not in NODE_KINDS:
            raise BadInputError(f"unknown kind {kind[:40]!r}: use one of {', '.join(NODE_KINDS)}")
    if not 1 <= wanted.limit <= MAX_LIST_LIMIT:
        raise BadInputError(f"--limit must be between 1 and {MAX_LIST_LIMIT}")
    since = parse_time(wanted.since, option="--since") if wanted.since else None
    until = parse_time(wanted.until, option="--until", end_of_day=True) if wanted.until else None
    conn = storage.connection
    kinds = wanted.kinds or DEFAULT_LIST_KINDS
    sql = [
        "SELECT n.id, n.kind, n.content, n.tombstoned, n.valid_from, n.valid_until, "
        "n.recorded_at, EXISTS (SELECT 1 FROM mem_edges e JOIN mem_nodes s ON s.id = e.src "
        "WHERE e.dst = n.id AND e.kind = 'SUPERSEDES' AND s.tombstoned = 0), "
        "(SELECT e.dst FROM mem_edges e WHERE e.src = n.id AND e.kind = 'OCCURRED_IN' LIMIT 1) "
        f"FROM mem_nodes n WHERE n.namespace = ? AND n.kind IN ({','.join('?' * len(kinds))})"
    ]
    args: list[object] = [ns, *kinds]
    if wanted.session is not None:
        session_id = nodes.resolve_id(storage, wanted.session, namespace=ns)
        sql.append("AND n.id IN (SELECT src FROM mem_edges WHERE dst = ? AND kind = 'OCCURRED_IN')")
        args.append(session_id)
    if wanted.entity is not None:
        from .entities import find_entity

        entity_id = find_entity(conn, ns, wanted.entity)
        if entity_id is None:
            raise NotFoundError(f"no entity {wanted.entity[:40]!r} in namespace {ns!r}")
        sql.append("AND n.id IN (SELECT src FROM mem_edges WHERE dst = ? AND kind = 'ABOUT')")
        args.append(entity_id)
    if since is not None:
        sql.append("AND n.recorded_at >= ?")
        args.append(since)
    if until is not None:
        sql.append("AND n.recorded_at <= ?")
        args.append(until)
    if not wanted.include_forgotten:
        sql.append("AND n.tombstoned = 0")
    if not wanted.include_superseded:
        # valid_until is set exactly when something supersedes the node (or a stated
        # end of validity): the EXISTS above tells which.
        sql.append(
            "AND NOT EXISTS (SELECT 1 FROM mem_edges e JOIN mem_nodes s ON s.id = e.src "
            "WHERE e.dst = n.id AND e.kind = 'SUPERSEDES' AND s.tombstoned = 0)"
        )
    sql.append("ORDER BY n.recorded_at DESC, n.id DESC LIMIT ?")
    args.append(wanted.limit)
    rows = conn.execute(" ".join(sql), args).fetchall()
    short = nodes.short_ids(storage, [r[0] for r in rows] + [r[8] for r in rows if r[8]])
    now = storage.now()
    return [
        ListedNode(
            id=r[0],
            short_id=short[r[0]],
            kind=r[1],
            content=r[2],
            status=status_of(bool(r[3]), bool(r[7]), r[5], now),
            valid_from=r[4],
            valid_until=r[5],
            recorded_at=r[6],
            session=r[8],
            session_short_id=short[r[8]] if r[8] else None,
        )
        for r in rows
    ]
