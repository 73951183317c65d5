"""Sessions and namespaces: the active ones live in state.yaml beside the store.

Every change of the active namespace or session reads state.yaml again and writes it
inside a write transaction (storage.sqlite.Storage.save_state), so under the write
lock: no command writes back a state it read before another's acknowledged change.
Each namespace has its own active session (one at most): a session is started in, and
only ever active for, the namespace it belongs to, so OCCURRED_IN never crosses
namespaces. A switch leaves each namespace's session as it was, and switching back
resumes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import nodes, writing_checks
from .errors import BadInputError
from .state import validate_namespace
from .storage import rows

if TYPE_CHECKING:
    from .models import CurrentContext, NamespaceInfo, Node
    from .storage.engine import Storage


def start_session(
    storage: Storage, title: str | None = None, *, namespace: str | None = None
) -> str:
    storage.namespace_for(namespace)  # a bad name or a broken state.yaml fails before the lock
    text = " ".join((title or "").split())
    writing_checks.check_text(text, "title")
    with storage.transaction():
        active = storage.reload_state()
        ns = storage.namespace_for(namespace)  # another process may have switched since we started
        now = storage.now()
        session_id = rows.insert_node(
            storage, "session", text or f"session {now[:16].replace('T', ' ')}", ns, valid_from=now
        )
        # Active for its own namespace, whichever namespace is the active one.
        storage.save_state(active.with_session(ns, session_id))
    return session_id


def end_session(storage: Storage, session: str | None = None, *, summary: str | None = None) -> str:
    if summary is not None:
        writing_checks.check_text(summary, "summary")
    storage.reload_state()
    session_to_end(storage, session)  # bad input fails before the lock, touching nothing
    with storage.transaction():
        storage.reload_state()
        # Again under the lock: meanwhile another process may have ended it, or
        # started the session that is the active one now.
        node = session_to_end(storage, session)
        now = storage.now()
        changes: dict[str, Any] = {"ended_at": now}
        if summary:
            changes["summary"] = summary
        rows.update_data(storage, node.id, changes)
        storage.connection.execute(
            "INSERT INTO mem_review_queue (kind, session_id, namespace, created_at) "
            "VALUES ('consolidate', ?, ?, ?)",
            (node.id, node.namespace, now),
        )
        active = storage.state
        if node.id in active.sessions().values():
            storage.save_state(active.without_session(node.id))
    return node.id


def session_to_end(storage: Storage, session: str | None) -> Node:
    # None: the active one. A blank ID is refused below, not read as "the active one":
    # `--session "$SID"` with SID unset ended the active session instead.
    ref = current(storage).session if session is None else session
    if ref is None or (session is None and not ref):
        # storage.namespace: --ns for this command, else the active namespace.
        raise BadInputError(
            f"no active session in namespace {storage.namespace!r}: pass --session ID"
        )
    node = nodes.get(storage, ref)
    if node.kind != "session":
        raise BadInputError(f"{node.id} is a {node.kind}, not a session")
    if node.data.get("ended_at"):
        raise BadInputError(f"session {node.id} already ended at {node.data['ended_at']}")
    return node


def switch_namespace(storage: Storage, name: str) -> CurrentContext:
    ns = validate_namespace(name)
    # Each namespace keeps its own session: switching back to one resumes it.
    if ns != storage.reload_state().namespace:
        if storage.read_only:  # it cannot take the write lock; writes the state as before
            storage.save_state(storage.state.switched(ns))
        else:
            # The lock every other change of the state holds, so that none of them
            # writes back, after this switch, a state it read before it.
            with storage.transaction():
                if ns != storage.reload_state().namespace:
                    storage.save_state(storage.state.switched(ns))
    storage.namespace_override = None
    return current(storage)


def current(storage: Storage) -> CurrentContext:
    ns = storage.namespace
    session = storage.state.session_of(ns)
    from .models import CurrentContext

    return CurrentContext(namespace=ns, session=session)


def list_namespaces(storage: Storage) -> list[NamespaceInfo]:
    counts = dict(
        storage.connection.execute(
            "SELECT namespace, count(*) FROM mem_nodes WHERE tombstoned = 0 GROUP BY namespace"
        ).fetchall()
    )
    counts.setdefault(storage.namespace, 0)
    from .models import NamespaceInfo

    return [NamespaceInfo(name=n, nodes=int(c)) for n, c in sorted(counts.items())]


def has_memories(storage: Storage, namespace: str) -> bool:
    """Whether the namespace holds a live node: one seek of mem_nodes_ns_kind, where
    list_namespaces counts every node of every namespace."""
    row = storage.connection.execute(
        "SELECT 1 FROM mem_nodes WHERE namespace = ? AND tombstoned = 0 LIMIT 1",
        (validate_namespace(namespace),),
    ).fetchone()
    return row is not None


def forget_active_session(storage: Storage, node_id: str) -> None:
    active = storage.reload_state()
    if node_id in active.sessions().values():
        storage.save_state(active.without_session(node_id))
