"""Events in and out of a store: importing events (files or JSON Lines) in one
transaction, each checked and applied alone (apply.py); the store's history as events,
which ``export`` writes and sharing an existing store commits; and the canonical state
that every clone holding the same events shares."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import IntegrityViolation
from ..storage.event_log import FORMAT, canonical_json, event_path
from .apply import MissingNode, apply_event, apply_in_chunks, known_events
from .schema import EventError, is_event_time, parse_event

if TYPE_CHECKING:
    from ..models import EventProblem, SyncReport
    from ..storage.engine import Storage


def event_problem(source: str, reason: str) -> EventProblem:
    from ..models import EventProblem

    return EventProblem(source, reason)


def sync_report(
    imported: int,
    already: int,
    problems: tuple[EventProblem, ...],
    folders_read: int,
    purged: tuple[str, ...] = (),
    *,
    rebuilt: bool = False,
) -> SyncReport:
    from ..models import SyncReport

    return SyncReport(imported, already, problems, folders_read, purged, rebuilt)


# --------------------------------------------------------------------------- importing


def import_events(
    storage: Storage,
    events: Iterable[tuple[str, str]],
    *,
    write_files: bool = False,
    scrub: bool = True,
    from_files: bool = False,
) -> SyncReport:
    """Import events given as (source, JSON text), in one write transaction. Each event is
    checked and applied alone; a bad one is reported and skipped. With ``write_files``
    (an import into a shared store) each new event is also written to its events folder.
    ``scrub=False``: the caller runs it in a transaction of its own and scrubs the files
    after a purge once that commits (a rebuild). ``from_files``: each source is the
    event file's place (``YYYY/MM/<id>.json``), which must be the event's own."""
    problems: list[EventProblem] = []
    parsed: list[tuple[str, dict[str, Any]]] = []
    for source, text in events:
        try:
            parsed.append((source, parse_event(text, file=source if from_files else None)))
        except EventError as exc:
            problems.append(event_problem(source, str(exc)))
    parsed.sort(key=lambda item: item[1]["id"])
    if len(parsed) > 1000:
        storage.prepare_bulk_write()  # as store_many does: a large import
    imported = already = 0
    purged: list[str] = []
    log = storage.events
    written: list[Path] = []
    if log is not None:
        log.suppressed = True
    try:
        # secure_delete, as a local purge has: a purge among the events deletes rows
        # whose bytes must not wait for the scrub after the commit (a kill in between).
        with storage.secure_deletes(), storage.transaction():
            conn = storage.connection
            known = known_events(conn, [e["id"] for _, e in parsed])
            purged_ids = {row[0] for row in conn.execute("SELECT node_id FROM mem_purged")}
            present: set[str] = set()
            applied: list[tuple[str, str]] = []
            waiting = []
            for source, event in parsed:
                if event["id"] in known:
                    already += 1
                    continue
                known.add(event["id"])
                waiting.append((source, event))
            # Most events apply in chunks, a few statements per hundred events (a chunk
            # that cannot: each of its events alone, below, as every event would).
            waiting = apply_in_chunks(storage, waiting, purged_ids, present, applied)
            imported += len(applied)
            while waiting:
                retry = []
                for source, event in waiting:
                    try:
                        with storage.refusals():
                            purged.extend(apply_event(storage, event, purged_ids, present))
                    except MissingNode as missing:
                        retry.append((source, event, str(missing)))
                        continue
                    except IntegrityViolation as exc:
                        problems.append(
                            event_problem(source, f"rejected by the store: {exc.detail}")
                        )
                        continue
                    imported += 1
                    applied.append((event["id"], event["recorded_at"]))
                if len(retry) == len(waiting):
                    problems.extend(
                        event_problem(source, f"refers to {node} which this store does not hold")
                        for source, _, node in retry
                    )
                    break
                waiting = [(source, event) for source, event, _ in retry]
            conn.executemany(
                "INSERT INTO mem_events (id, recorded_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                applied,
            )
            if write_files and log is not None:
                from ..durable import write_file_durably

                events_by_id = {event["id"]: event for _, event in parsed}
                for event_id, recorded_at in applied:
                    path = event_path(log.folder, event_id, recorded_at)
                    if not path.exists():
                        text = canonical_json(events_by_id[event_id])
                        write_file_durably(path, text, sync=False)
                        written.append(path)
            if purged:
                storage.rebuild_search_index()
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    finally:
        if log is not None:
            log.suppressed = False
    if written:
        os.sync()  # one flush for all the files, not two fsyncs each
    if purged and scrub:
        storage.scrub_files()
    problems.sort()
    return sync_report(imported, already, tuple(problems), 0, tuple(purged))


# --------------------------------------------------------------------------- exporting


def history_events(storage: Storage, namespace: str | None = None) -> list[dict[str, Any]]:
    """The store's history as events, in time order, with its original IDs and times:
    what ``export`` writes and what sharing an existing store commits. Each moment a
    transaction wrote becomes one event; its ID is made from that moment and what it
    holds, so the same history always gives the same events."""
    from hashlib import sha256  # here: importing hashlib costs ~4 ms, and sync never needs it

    conn = storage.connection
    where, params = ("WHERE namespace = ?", [namespace]) if namespace is not None else ("", [])
    moments: dict[str, list[dict[str, Any]]] = {}
    node_rows = conn.execute(
        "SELECT id, kind, content, namespace, valid_from, valid_until, recorded_at, "
        f"confidence, data, tombstoned, tombstoned_at FROM mem_nodes {where} ORDER BY seq",
        params,
    ).fetchall()
    in_scope = {row[0] for row in node_rows}
    superseded = {
        row[0] for row in conn.execute("SELECT dst FROM mem_edges WHERE kind = 'SUPERSEDES'")
    }
    for (
        node_id,
        kind,
        content,
        ns,
        valid_from,
        valid_until,
        recorded_at,
        confidence,
        data_text,
        tombstoned,
        tombstoned_at,
    ) in node_rows:
        data = json.loads(data_text)
        later = _later_data(data)
        node: dict[str, Any] = {
            "type": "node",
            "id": node_id,
            "kind": kind,
            "content": content,
            "namespace": ns,
            "valid_from": valid_from,
            "recorded_at": recorded_at,
            "confidence": confidence,
            "data": {k: v for k, v in data.items() if not any(k in keys for _, keys in later)},
        }
        if valid_until is not None and node_id not in superseded:
            node["valid_until"] = valid_until
        moments.setdefault(recorded_at, []).append(node)
        for at, keys in later:
            values = {k: data[k] for k in keys if k in data}
            if values:
                moments.setdefault(at, []).append({"type": "data", "id": node_id, "set": values})
        if tombstoned:
            # Forgotten before forget times were kept: as forgotten when it was recorded.
            moments.setdefault(tombstoned_at or recorded_at, []).append(
                {"type": "tombstone", "id": node_id}
            )
    alias_rows = conn.execute(
        "SELECT a.namespace, a.alias, a.entity_id, n.recorded_at FROM mem_aliases a "
        "JOIN mem_nodes n ON n.id = a.entity_id ORDER BY a.namespace, "
        f"{storage.sql.lower_ascii('a.alias')}"
    ).fetchall()
    for ns, alias, entity_id, recorded_at in alias_rows:
        if entity_id in in_scope:
            moments.setdefault(recorded_at, []).append(
                {"type": "alias", "namespace": ns, "alias": alias, "entity_id": entity_id}
            )
    for src, dst, kind, created_at, data_text in conn.execute(
        "SELECT src, dst, kind, created_at, data FROM mem_edges ORDER BY src, kind, dst"
    ):
        if src in in_scope:
            moments.setdefault(created_at, []).append(
                {
                    "type": "edge",
                    "src": src,
                    "dst": dst,
                    "kind": kind,
                    "created_at": created_at,
                    "data": json.loads(data_text),
                }
            )
    order = {"node": 0, "alias": 1, "edge": 2, "data": 3, "tombstone": 4}
    events = []
    for at in sorted(moments):
        changes = sorted(moments[at], key=lambda c: order[c["type"]])
        digest = sha256(canonical_json(changes).encode("utf-8")).hexdigest()[:16]
        ms = _epoch_ms(at)
        events.append(
            {"changes": changes, "format": FORMAT, "id": f"ev_{ms:013x}{digest}", "recorded_at": at}
        )
    return events


# Keys of a node's data that a later write set, and the key holding that write's time.
_LATER_KEYS = (
    ("ended_at", ("ended_at", "summary")),
    ("consolidated_at", ("duplicate_of", "consolidated_at", "consolidated_by")),
)


def _later_data(data: dict[str, Any]) -> list[tuple[str, tuple[str, ...]]]:
    return [
        (str(data[stamp]), keys) for stamp, keys in _LATER_KEYS if is_event_time(data.get(stamp))
    ]


def _epoch_ms(at: str) -> int:
    from ..timeparse import to_datetime

    return int(to_datetime(at).timestamp() * 1000)


def export_lines(storage: Storage, namespace: str | None = None) -> Iterator[str]:
    for event in history_events(storage, namespace):
        yield canonical_json(event)


# --------------------------------------------------------------------------- comparing


def canonical_state(storage: Storage) -> str:
    """Everything a store shares, in one canonical text: equal on every clone that holds
    the same events. Local matters (row order, access counts, state.yaml) are left out."""
    conn = storage.connection
    lines: list[str] = []
    for row in conn.execute(
        "SELECT id, kind, content, namespace, valid_from, valid_until, recorded_at, "
        "confidence, tombstoned, tombstoned_at, data FROM mem_nodes ORDER BY id"
    ):
        lines.append(canonical_json(["node", *row[:10], json.loads(row[10])]))
    for row in conn.execute(
        "SELECT src, kind, dst, created_at, data FROM mem_edges ORDER BY src, kind, dst"
    ):
        lines.append(canonical_json(["edge", *row[:4], json.loads(row[4])]))
    for row in conn.execute(
        f"SELECT namespace, {storage.sql.lower_ascii('alias')}, entity_id FROM mem_aliases "
        "ORDER BY 1, 2"
    ):
        lines.append(canonical_json(["alias", *row]))
    return "".join(lines)
