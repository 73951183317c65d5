"""The rows every feature writes: nodes, edges and a node's data. Edges are inserted
or ignored (an edge is a fact, stated once); data is merged key by key."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import Storage


def insert_node(
    storage: Storage,
    kind: str,
    content: str,
    namespace: str,
    *,
    valid_from: str,
    confidence: float = 1.0,
    data: dict[str, Any] | None = None,
) -> str:
    node_id = storage.new_id(kind)
    storage.connection.execute(
        "INSERT INTO mem_nodes (id, kind, content, namespace, valid_from, recorded_at, "
        "confidence, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            node_id,
            kind,
            content,
            namespace,
            valid_from,
            storage.now(),
            confidence,
            json.dumps(data or {}, ensure_ascii=False, sort_keys=True),
        ),
    )
    return node_id


def link(
    storage: Storage, src: str, dst: str, kind: str, data: dict[str, Any] | None = None
) -> None:
    storage.connection.execute(
        "INSERT INTO mem_edges (src, dst, kind, created_at, data) VALUES (?, ?, ?, ?, ?)"
        + storage.sql.ignore_existing_edge,
        (src, dst, kind, storage.now(), json.dumps(data or {}, sort_keys=True)),
    )


def update_data(storage: Storage, node_id: str, changes: dict[str, Any]) -> None:
    row = storage.connection.execute(
        "SELECT data FROM mem_nodes WHERE id = ?", (node_id,)
    ).fetchone()
    data = json.loads(row[0]) if row else {}
    data.update(changes)
    storage.connection.execute(
        "UPDATE mem_nodes SET data = ? WHERE id = ?",
        (json.dumps(data, ensure_ascii=False, sort_keys=True), node_id),
    )
