"""Counts of a namespace's nodes and edges, and where the store is."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .ids import KIND_PREFIX

if TYPE_CHECKING:
    from .models import Stats
    from .storage.engine import Storage


def stats(storage: Storage, *, namespace: str | None = None) -> Stats:
    from . import conflicts
    from .models import Stats

    ns = storage.namespace_for(namespace)
    nodes = dict(
        storage.connection.execute(
            "SELECT kind, count(*) FROM mem_nodes WHERE namespace = ? AND tombstoned = 0 "
            "GROUP BY kind",
            (ns,),
        ).fetchall()
    )
    edges = dict(
        storage.connection.execute(
            # An edge of a forgotten node is forgotten with it.
            "SELECT e.kind, count(*) FROM mem_edges e JOIN mem_nodes n ON n.id = e.src "
            "JOIN mem_nodes d ON d.id = e.dst "
            "WHERE n.namespace = ? AND n.tombstoned = 0 AND d.tombstoned = 0 GROUP BY e.kind",
            (ns,),
        ).fetchall()
    )
    tombstoned, superseded = storage.connection.execute(
        "SELECT coalesce(sum(tombstoned), 0), "
        # valid_until is also set by a stated end (store --valid-until): only a node
        # with a live superseder counts as superseded.
        "count(*) FILTER (WHERE tombstoned = 0 AND valid_until IS NOT NULL AND EXISTS "
        "(SELECT 1 FROM mem_edges e JOIN mem_nodes s ON s.id = e.src WHERE e.dst = mem_nodes.id "
        "AND e.kind = 'SUPERSEDES' AND s.tombstoned = 0)) "
        "FROM mem_nodes WHERE namespace = ?",
        (ns,),
    ).fetchone()
    pending = storage.connection.execute(
        "SELECT count(*) FROM mem_review_queue WHERE namespace = ? AND status = 'pending'",
        (ns,),
    ).fetchone()[0]
    return Stats(
        namespace=ns,
        nodes={k: int(nodes.get(k, 0)) for k in KIND_PREFIX if nodes.get(k)},
        edges={k: int(v) for k, v in sorted(edges.items())},
        tombstoned=int(tombstoned),
        superseded=int(superseded),
        pending_consolidation=int(pending),
        db_path=_shown_store(storage),
        db_bytes=storage.size_bytes(),
        conflicts=conflicts.count(storage.connection, ns),
    )


def _shown_store(storage: Storage) -> str:
    """The store file's full path; a server's URL without its password."""
    store_file = storage.store_file
    return str(store_file.resolve()) if store_file is not None else storage.location
