"""Timeline: every version of what matches a query, oldest first.

Unlike recall, the timeline is not masked by time: superseded versions are what it is
for. Tombstoned (forgotten) nodes are still never shown, and nothing crosses the
namespace. Search runs with ``apply_mask=False`` (recall/search.py), then SUPERSEDES
edges are followed both ways from each hit.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from .. import conflicts, nodes
from ..models import TimelineItem
from .api import moment_text
from .mask import known_sql, until_known_sql
from .search import search
from .validation import check_timeline_request

if TYPE_CHECKING:
    from ..storage.engine import Storage


def run_timeline(
    storage: Storage,
    query: str,
    *,
    namespace: str | None,
    limit: int,
    known_at: str | datetime | None = None,
) -> list[TimelineItem]:
    """``known_at``: the versions as recorded by then: later memories, supersessions and
    forgetting are left out, and valid_until is as it stood then."""
    check_timeline_request(query, limit=limit)
    known = moment_text(known_at, "--known-at")
    ns = storage.namespace_for(namespace)
    conn = storage.connection
    hits = search(conn, ns, query, as_of=None, kinds=None, want=limit, apply_mask=False)
    ids = set(list(hits)[:limit])
    # Every version of what matched: follow SUPERSEDES both ways, transitively.
    frontier = set(ids)
    while frontier:
        marks = ",".join("?" * len(frontier))
        rows = conn.execute(
            f"SELECT e.src, e.dst FROM mem_edges e WHERE e.kind = 'SUPERSEDES' AND "
            f"(e.src IN ({marks}) OR e.dst IN ({marks}))",
            [*frontier, *frontier],
        ).fetchall()
        linked = {node for row in rows for node in row} - ids
        ids |= linked
        frontier = linked
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    if known is None:
        rows = conn.execute(
            f"SELECT n.id, n.kind, n.content, n.valid_from, n.valid_until, n.recorded_at, "
            f"(SELECT e.src FROM mem_edges e JOIN mem_nodes s ON s.id = e.src "
            f" WHERE e.dst = n.id AND e.kind = 'SUPERSEDES' AND s.tombstoned = 0 "
            f" ORDER BY e.src LIMIT 1) FROM mem_nodes n WHERE n.id IN ({marks}) "
            f"AND +n.namespace = ? AND n.tombstoned = 0 "
            f"ORDER BY n.valid_from, n.recorded_at, n.id",
            [*ids, ns],
        ).fetchall()
    else:
        rows = conn.execute(
            f"SELECT n.id, n.kind, n.content, n.valid_from, {until_known_sql()}, n.recorded_at, "
            f"(SELECT e.src FROM mem_edges e JOIN mem_nodes s ON s.id = e.src "
            f" WHERE e.dst = n.id AND e.kind = 'SUPERSEDES' AND s.recorded_at <= ? "
            f" AND (s.tombstoned = 0 OR s.tombstoned_at > ?) ORDER BY e.src LIMIT 1) "
            f"FROM mem_nodes n WHERE n.id IN ({marks}) AND +n.namespace = ? AND {known_sql()} "
            f"ORDER BY n.valid_from, n.recorded_at, n.id",
            [known, known, known, *ids, ns, known, known],
        ).fetchall()
    rivals = conflicts.rivals(conn, [r[0] for r in rows])
    short = nodes.short_ids(
        storage,
        [r[0] for r in rows]
        + [r[6] for r in rows if r[6]]
        + [rival for named in rivals.values() for rival in named],
    )
    items = [
        TimelineItem(
            id=r[0],
            short_id=short[r[0]],
            kind=r[1],
            content=r[2],
            valid_from=r[3],
            valid_until=r[4],
            recorded_at=r[5],
            superseded_by=r[6],
            superseded_by_short=short[r[6]] if r[6] else None,
            conflicts_with=rivals.get(r[0], ()),
            conflicts_with_short=tuple(short[rival] for rival in rivals.get(r[0], ())),
        )
        for r in rows
    ]
    return items[-limit:]
