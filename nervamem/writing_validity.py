"""A memory's validity: whether a node may be superseded (supersedable,
check_supersedable) and how its end of validity is derived (STATED_END,
recompute_valid_until).

Separate from writing.py's bulk writer, which applies these rules to each memory it
stores, because forgetting and team memory's apply derive valid_until again after a
forget or an imported event, without writing a memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import nodes
from .errors import BadInputError

if TYPE_CHECKING:
    from .storage.engine import Storage

# The data key of an end of validity stated when the memory was stored; valid_until is
# the earlier of it and the start of what supersedes the memory.
STATED_END = "stated_valid_until"


def supersedable(storage: Storage, ref: str, namespace: str, new_start: str) -> str:
    old = nodes.get(storage, ref, namespace=namespace)
    # A forgotten superseder does not count: the chain can go on from the old node.
    row = storage.connection.execute(
        "SELECT e.src FROM mem_edges e JOIN mem_nodes n ON n.id = e.src "
        "WHERE e.dst = ? AND e.kind = 'SUPERSEDES' AND n.tombstoned = 0 LIMIT 1",
        (old.id,),
    ).fetchone()
    check_supersedable(
        old.id, old.kind, old.valid_from, old.tombstoned, row[0] if row else None, new_start
    )
    return old.id


def recompute_valid_until(storage: Storage, node_id: str) -> None:
    """valid_until is derived: the earliest of the valid_from of what supersedes the
    node and the end stated when it was stored (``store --valid-until``)."""
    conn = storage.connection
    superseded_from, stated = conn.execute(
        "SELECT (SELECT min(n.valid_from) FROM mem_edges e JOIN mem_nodes n ON n.id = e.src "
        "WHERE e.dst = ?1 AND e.kind = 'SUPERSEDES'), json_extract(data, '$.' || ?2) "
        "FROM mem_nodes WHERE id = ?1",
        (node_id, STATED_END),
    ).fetchone()
    ends = [end for end in (superseded_from, stated) if end]
    conn.execute(
        "UPDATE mem_nodes SET valid_until = ? WHERE id = ?", (min(ends) if ends else None, node_id)
    )


def check_supersedable(
    old_id: str,
    kind: str,
    valid_from: str,
    tombstoned: bool,
    superseded_by: str | None,
    new_start: str,
) -> None:
    """May a node valid from ``new_start`` supersede this one? (store and store_many)"""
    if tombstoned:
        raise BadInputError(f"{old_id} is forgotten and cannot be superseded")
    if superseded_by:
        raise BadInputError(f"{old_id} is already superseded by {superseded_by}; supersede that")
    if kind == "session":
        raise BadInputError("a session cannot be superseded")
    if new_start < valid_from:
        # On one day, to the second: "2026-12-03, before ... (2026-12-03)" hid the cause
        # (another machine's clock ahead of this one's, on a shared server).
        cut = 10 if new_start[:10] != valid_from[:10] else 19
        raise BadInputError(
            f"the new node would be valid from {new_start[:cut]}, before {old_id} "
            f"({valid_from[:cut]}); give --valid-from on or after it"
        )
