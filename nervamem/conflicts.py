"""Conflicts: two memories that each supersede the same node and are both still current.

A store cannot make one by itself (a superseded node cannot be superseded again), but a
shared store can: two people supersede one decision on two branches, and after the merge
both successors stand (docs/team-memory.md). Neither is dropped: each is shown with its
rival until a later memory supersedes both (``store --supersedes A --supersedes B``).
Derived from the edges at read time, so it holds in any order the events arrived.
"""

from __future__ import annotations

from collections.abc import Sequence

from .storage.engine import Connection

_RIVALS = (
    "SELECT a.src, b.src FROM mem_edges a "
    "JOIN mem_edges b ON b.dst = a.dst AND b.kind = 'SUPERSEDES' AND b.src <> a.src "
    "JOIN mem_nodes rival ON rival.id = b.src "
    "WHERE a.kind = 'SUPERSEDES' AND a.src IN ({marks}) AND {current} ORDER BY a.src, b.src"
)
CURRENT: tuple[str, list[str]] = ("rival.tombstoned = 0 AND rival.valid_until IS NULL", [])


def rivals(
    conn: Connection,
    node_ids: Sequence[str],
    current: tuple[str, list[str]] = CURRENT,
) -> dict[str, tuple[str, ...]]:
    """For each of ``node_ids`` in a conflict, the rivals it is in conflict with: those
    ``current`` admits (SQL on the alias ``rival`` and its parameters; by default the
    current ones; recall passes its temporal mask, so that --as-of and --known-at show
    the conflicts of that time)."""
    condition, params = current
    found: dict[str, list[str]] = {}
    for start in range(0, len(node_ids), 500):
        chunk = list(node_ids[start : start + 500])
        if not chunk:
            continue
        sql = _RIVALS.format(marks=",".join("?" * len(chunk)), current=condition)
        for node_id, rival in conn.execute(sql, [*chunk, *params]):
            names = found.setdefault(node_id, [])
            if rival not in names:
                names.append(rival)
    return {node_id: tuple(names) for node_id, names in found.items()}


def count(conn: Connection, namespace: str) -> int:
    """How many nodes of the namespace have two or more current successors."""
    row = conn.execute(
        "SELECT count(*) FROM (SELECT e.dst FROM mem_edges e "
        "JOIN mem_nodes s ON s.id = e.src WHERE e.kind = 'SUPERSEDES' "
        "AND s.namespace = ? AND s.tombstoned = 0 AND s.valid_until IS NULL "
        "GROUP BY e.dst HAVING count(*) > 1) AS shared",
        (namespace,),
    ).fetchone()
    return int(row[0])
