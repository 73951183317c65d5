"""Applying checked events to a shared store's cache.

A shared store's truth is its event files (storage/event_log.py); its database is a
cache of them. An import (exchange.import_events) checks each event and applies it
here, in chunks or each in its own savepoint, so that a malformed one is reported and
skipped and nothing is half-imported. Applying is idempotent and independent of order,
so that every clone that holds the same events holds the same canonical state
(exchange.canonical_state):

* a node is inserted once, by ID, never changed by a later copy; an edge once, by key;
* ``valid_until`` is derived: the earliest ``valid_from`` of what supersedes the node
  (or the expiry it was asserted with); two successors of one node are a *conflict*,
  shown until a later memory supersedes both;
* an alias two entities claim belongs to the entity with the larger ID (the newer
  one, as a local write's takeover gives);
* a tombstone is kept with its earliest time; each key of a node's data holds the value
  of the latest event that set it; a purge removes the node for good.

Import order: events by ID; an event whose edges name a node not yet present waits for
the others and is retried; still missing, it is reported and left unseen, so a later
sync, when its node has arrived, imports it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .. import writing_validity
from ..errors import IntegrityViolation
from ..storage.engine import Connection
from ..storage.event_log import named_ids, nodes_first

if TYPE_CHECKING:
    from ..storage.engine import Storage


# --------------------------------------------------------------------------- applying


class MissingNode(Exception):
    """An edge or alias names a node this store does not hold (yet)."""


def apply_event(
    storage: Storage, event: dict[str, Any], purged_ids: set[str], present: set[str]
) -> tuple[str, ...]:
    """Apply one checked event inside the caller's transaction, which records that the
    store holds it (import_events, in one statement for all); returns what it purged
    (and adds it to ``purged_ids``, the nodes purged for good). Raises MissingNode, having
    applied nothing, when it refers to a node not present. ``present``: nodes known to
    be in the store (the import's memo, so that a node is looked up once, not once per
    edge that names it); the event's own nodes join it once it is applied."""
    conn = storage.connection
    conn.execute("SAVEPOINT nervamem_event")
    before = set(purged_ids)
    own: set[str] = set()
    try:
        purged = _apply_changes(storage, event, purged_ids, present, own)
    except BaseException:
        conn.execute("ROLLBACK TO nervamem_event")
        conn.execute("RELEASE nervamem_event")
        purged_ids.intersection_update(before)
        raise
    conn.execute("RELEASE nervamem_event")
    present.update(own)
    return purged


def _apply_changes(
    storage: Storage,
    event: dict[str, Any],
    purged_ids: set[str],
    present: set[str],
    own: set[str],
) -> tuple[str, ...]:
    conn = storage.connection
    reopen: set[str] = set()
    purged: list[str] = []
    # Nodes first: an event written before they were listed first may name a node
    # before stating it (a purge's relinking edge, review F-4).
    for change in nodes_first(event["changes"]):
        kind = change["type"]
        if kind == "purge":
            if change["id"] not in purged_ids:
                gone = purge_rows(storage, change["id"])
                purged.extend(gone)
                purged_ids.update((change["id"], *gone))
            continue
        named = named_ids(change)
        if purged_ids.intersection(named):
            continue  # about a node purged for good: nothing of it comes back
        if kind == "node":
            conn.execute(_NODE_INSERT + "(?,?,?,?,?,?,?,?,?)" + _IGNORE, _node_row(change))
            # No successor can have arrived before it: an edge waits for both its
            # nodes (_require), so its valid_until is derived when that edge comes;
            # only an end stated when it was stored (store --valid-until) counts now.
            own.add(change["id"])
            if writing_validity.STATED_END in change["data"]:
                reopen.add(change["id"])
            continue
        _require(conn, named, present, own)
        if kind == "edge":
            conn.execute(
                _EDGE_INSERT + "(?,?,?,?,?)" + storage.sql.ignore_existing_edge,
                _edge_row(change),
            )
            if change["kind"] == "SUPERSEDES":
                reopen.add(change["dst"])
        else:
            _apply_in_place(conn, change, event)
    for node_id in reopen:
        writing_validity.recompute_valid_until(storage, node_id)
    return tuple(purged)


def _require(conn: Connection, node_ids: Iterable[str], present: set[str], own: set[str]) -> None:
    for node_id in node_ids:
        if node_id in present or node_id in own:
            continue
        if conn.execute("SELECT 1 FROM mem_nodes WHERE id = ?", (node_id,)).fetchone() is None:
            raise MissingNode(node_id)
        present.add(node_id)  # held before this event: a rollback of it keeps it


def _data_text(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, sort_keys=True) if data else "{}"


def _apply_data(conn: Connection, node_id: str, values: dict[str, Any], event_id: str) -> None:
    row = conn.execute("SELECT data FROM mem_nodes WHERE id = ?", (node_id,)).fetchone()
    data = json.loads(row[0]) if row else {}
    changed = False
    for key, value in values.items():
        origin = conn.execute(
            "SELECT event_id FROM mem_data_origin WHERE node_id = ? AND key = ?", (node_id, key)
        ).fetchone()
        if origin is not None and origin[0] > event_id:
            continue  # a later event set this key: its value stands
        conn.execute(
            "INSERT INTO mem_data_origin (node_id, key, event_id) VALUES (?, ?, ?) "
            "ON CONFLICT (node_id, key) DO UPDATE SET event_id = excluded.event_id",
            (node_id, key, event_id),
        )
        data[key] = value
        changed = True
    if changed:
        conn.execute(
            "UPDATE mem_nodes SET data = ? WHERE id = ?",
            (json.dumps(data, ensure_ascii=False, sort_keys=True), node_id),
        )


def purge_rows(storage: Storage, node_id: str) -> tuple[str, ...]:
    """A purge another clone made: the node and the entities only it named leave this
    cache too, and no later copy of their events brings them back."""
    from ..forgetting import delete_purged

    conn = storage.connection
    if conn.execute("SELECT 1 FROM mem_nodes WHERE id = ?", (node_id,)).fetchone() is None:
        conn.execute(
            "INSERT INTO mem_purged (node_id) VALUES (?) ON CONFLICT DO NOTHING", (node_id,)
        )
        return ()
    removed = delete_purged(storage, node_id, relink=False)
    # This clone's own copies of events that named it (written without fsync, kept
    # until the system has flushed them) go too: they hold the content.
    conn.executemany(
        "DELETE FROM mem_event_journal WHERE instr(body, ?) > 0",
        [(i,) for i in (node_id, *removed)],
    )
    conn.executemany(
        "INSERT INTO mem_purged (node_id) VALUES (?) ON CONFLICT DO NOTHING",
        [(i,) for i in (node_id, *removed)],
    )
    return (node_id, *removed)


CHUNK_EVENTS = 512
_NODE_INSERT = (
    "INSERT INTO mem_nodes (id, kind, content, namespace, valid_from, "
    "valid_until, recorded_at, confidence, data) VALUES "
)
# A node or edge already there (by key) is the same fact: inserted once.
_IGNORE = " ON CONFLICT DO NOTHING"
_EDGE_INSERT = "INSERT INTO mem_edges (src, dst, kind, created_at, data) VALUES "


def apply_in_chunks(
    storage: Storage,
    events: list[tuple[str, dict[str, Any]]],
    purged_ids: set[str],
    present: set[str],
    applied: list[tuple[str, str]],
) -> list[tuple[str, dict[str, Any]]]:
    """Apply the events that need no care in chunks: each chunk's nodes in multi-row
    INSERTs (the FTS trigger flushes its pending index once per statement, so this is
    what makes an import of 100k one-memory events fast), then its edges, aliases,
    tombstones and data in event order, all in one savepoint. A chunk holding a purge, a
    change about a purged node or a node this store lacks, or one the store refuses, is
    rolled back whole and returned, to be applied one event at a time with the usual
    reports. The result is the same as one event at a time: nodes and edges are
    inserted once by key, and the rest is applied in the same order."""
    conn = storage.connection
    left: list[tuple[str, dict[str, Any]]] = []
    for start in range(0, len(events), CHUNK_EVENTS):
        chunk = events[start : start + CHUNK_EVENTS]
        created = {c["id"] for _, e in chunk for c in e["changes"] if c["type"] == "node"}
        named: set[str] = set()
        plain = True
        for _, event in chunk:
            for change in event["changes"]:
                if change["type"] == "purge":
                    plain = False
                    break
                named.update(named_ids(change))
            if not plain:
                break
        if not plain or purged_ids.intersection(named):
            left.extend(chunk)
            continue
        unknown = [node for node in named - created - present]
        if unknown and len(_present_nodes(conn, unknown)) < len(unknown):
            left.extend(chunk)
            continue
        conn.execute("SAVEPOINT nervamem_chunk")
        try:
            with storage.refusals():
                reopen = _apply_chunk(storage, chunk)
                for node_id in reopen:
                    writing_validity.recompute_valid_until(storage, node_id)
        except IntegrityViolation:
            conn.execute("ROLLBACK TO nervamem_chunk")
            conn.execute("RELEASE nervamem_chunk")
            left.extend(chunk)
            continue
        conn.execute("RELEASE nervamem_chunk")
        present.update(created)
        present.update(unknown)
        applied.extend((e["id"], e["recorded_at"]) for _, e in chunk)
    return left


def _apply_chunk(storage: Storage, chunk: list[tuple[str, dict[str, Any]]]) -> set[str]:
    """One chunk's changes (none a purge, every node they name present or created in
    it); returns the nodes whose valid_until is to be derived again."""
    conn = storage.connection
    nodes = [_node_row(c) for _, e in chunk for c in e["changes"] if c["type"] == "node"]
    storage.insert_rows(_NODE_INSERT, nodes, 9, _IGNORE)
    reopen = {row[0] for row in nodes if writing_validity.STATED_END in row[8]}
    edges = [_edge_row(c) for _, e in chunk for c in e["changes"] if c["type"] == "edge"]
    storage.insert_rows(_EDGE_INSERT, edges, 5, storage.sql.ignore_existing_edge)
    reopen.update(row[1] for row in edges if row[2] == "SUPERSEDES")
    for _, event in chunk:
        for change in event["changes"]:
            if change["type"] not in ("node", "edge"):
                _apply_in_place(conn, change, event)
    return reopen


def _node_row(change: dict[str, Any]) -> tuple[Any, ...]:
    """A node change as the row _NODE_INSERT takes."""
    return (
        change["id"],
        change["kind"],
        change["content"],
        change["namespace"],
        change["valid_from"],
        change.get("valid_until"),
        change["recorded_at"],
        float(change["confidence"]),
        _data_text(change["data"]),
    )


def _edge_row(change: dict[str, Any]) -> tuple[Any, ...]:
    """An edge change as the row _EDGE_INSERT takes."""
    data = change.get("data", {})
    return (
        change["src"],
        change["dst"],
        change["kind"],
        change["created_at"],
        json.dumps(data, sort_keys=True) if data else "{}",
    )


def _apply_in_place(conn: Connection, change: dict[str, Any], event: dict[str, Any]) -> None:
    """An alias, tombstone or data change: each converges whatever the order (the larger
    entity ID owns an alias, the earliest tombstone time stands, each data key keeps the
    latest event's value)."""
    kind = change["type"]
    if kind == "alias":
        conn.execute(
            "INSERT INTO mem_aliases (namespace, alias, entity_id) VALUES (?, ?, ?) "
            "ON CONFLICT (namespace, alias) DO UPDATE SET entity_id = excluded.entity_id "
            "WHERE excluded.entity_id > mem_aliases.entity_id",
            (change["namespace"], change["alias"], change["entity_id"]),
        )
    elif kind == "tombstone":
        conn.execute(
            "UPDATE mem_nodes SET tombstoned = 1, tombstoned_at = CASE WHEN tombstoned = 0 "
            "OR tombstoned_at IS NULL OR tombstoned_at > ?1 THEN ?1 ELSE tombstoned_at END "
            "WHERE id = ?2",
            (event["recorded_at"], change["id"]),
        )
    elif kind == "data":
        _apply_data(conn, change["id"], change["set"], event["id"])


def _present_nodes(conn: Connection, node_ids: list[str]) -> set[str]:
    return _existing(conn, "mem_nodes", node_ids)


def known_events(conn: Connection, ids: list[str]) -> set[str]:
    return _existing(conn, "mem_events", ids)


def _existing(conn: Connection, table: str, ids: list[str]) -> set[str]:
    """Which of ``ids`` the table holds (by its ``id`` column), 500 to a query."""
    found: set[str] = set()
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        marks = ",".join("?" * len(part))
        found.update(
            row[0] for row in conn.execute(f"SELECT id FROM {table} WHERE id IN ({marks})", part)
        )
    return found
