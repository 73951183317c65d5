"""Team memory: a shared store's events, brought into its cache; export and import.

A shared store's truth is its event files (storage/event_log.py); its database is a
cache of them. This module reads events (files or JSON Lines), checks them, and applies
each in its own savepoint, so that a malformed one is reported and skipped and nothing
is half-imported. Applying is idempotent and independent of order, so that every clone
that holds the same events holds the same canonical state (:func:`canonical_state`):

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
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import writing
from ..errors import BadInputError, StoreError
from ..storage.engine import IGNORE_EXISTING_EDGE, SQLITE, Connection, dialect_of
from ..storage.event_log import (
    EVENT_FILE,
    FORMAT,
    EventLog,
    canonical_json,
    event_path,
    events_folder_beside,
    folder_stamp,
    named_ids,
    nodes_first,
)
from .schema import (
    STRAY_FOLDER,
    EventError,
    is_event_time,
    is_month_folder,
    month_id_range,
    parse_event,
    scan_months,
)

if TYPE_CHECKING:
    from ..models import EventProblem, SyncReport
    from ..storage.engine import Storage


def _problem(source: str, reason: str) -> EventProblem:
    from ..models import EventProblem

    return EventProblem(source, reason)


def _report(
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


# --------------------------------------------------------------------------- reading


def event_files(folder: Path) -> Iterator[tuple[str, Path]]:
    """Every event file under ``folder`` by month: (``YYYY/MM``, path)."""
    for month in month_folders(folder):
        for entry in os.scandir(folder / month):
            if entry.is_file() and EVENT_FILE.match(entry.name):
                yield month, Path(entry.path)


def month_folders(folder: Path) -> list[str]:
    """The month folders of ``folder`` that events can be in (event_schema.scan_months)."""
    return scan_months(folder)[0]


# --------------------------------------------------------------------------- applying


class _Missing(Exception):
    """An edge or alias names a node this store does not hold (yet)."""


def apply_event(
    storage: Storage, event: dict[str, Any], purged_ids: set[str], present: set[str]
) -> tuple[str, ...]:
    """Apply one checked event inside the caller's transaction, which records that the
    store holds it (import_events, in one statement for all); returns what it purged
    (and adds it to ``purged_ids``, the nodes purged for good). Raises _Missing, having
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
            if writing.STATED_END in change["data"]:
                reopen.add(change["id"])
            continue
        _require(conn, named, present, own)
        if kind == "edge":
            conn.execute(
                _EDGE_INSERT + "(?,?,?,?,?)" + IGNORE_EXISTING_EDGE[dialect_of(conn)],
                _edge_row(change),
            )
            if change["kind"] == "SUPERSEDES":
                reopen.add(change["dst"])
        else:
            _apply_in_place(conn, change, event)
    for node_id in reopen:
        writing.recompute_valid_until(storage, node_id)
    return tuple(purged)


def _require(conn: Connection, node_ids: Iterable[str], present: set[str], own: set[str]) -> None:
    for node_id in node_ids:
        if node_id in present or node_id in own:
            continue
        if conn.execute("SELECT 1 FROM mem_nodes WHERE id = ?", (node_id,)).fetchone() is None:
            raise _Missing(node_id)
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
            problems.append(_problem(source, str(exc)))
    parsed.sort(key=lambda item: item[1]["id"])
    if len(parsed) > 1000:
        from ..writing import widen_cache

        widen_cache(storage.connection)  # as store_many does: a large import
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
            known = _known_events(conn, [e["id"] for _, e in parsed])
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
            waiting = _apply_in_chunks(storage, waiting, purged_ids, present, applied)
            imported += len(applied)
            while waiting:
                retry = []
                for source, event in waiting:
                    try:
                        purged.extend(apply_event(storage, event, purged_ids, present))
                    except _Missing as missing:
                        retry.append((source, event, str(missing)))
                        continue
                    except sqlite3.IntegrityError as exc:
                        problems.append(_problem(source, f"rejected by the store: {exc}"))
                        continue
                    imported += 1
                    applied.append((event["id"], event["recorded_at"]))
                if len(retry) == len(waiting):
                    problems.extend(
                        _problem(source, f"refers to {node} which this store does not hold")
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
    return _report(imported, already, tuple(problems), 0, tuple(purged))


CHUNK_EVENTS = 512
_NODE_INSERT = (
    "INSERT INTO mem_nodes (id, kind, content, namespace, valid_from, "
    "valid_until, recorded_at, confidence, data) VALUES "
)
# A node or edge already there (by key) is the same fact: inserted once.
_IGNORE = " ON CONFLICT DO NOTHING"
_EDGE_INSERT = "INSERT INTO mem_edges (src, dst, kind, created_at, data) VALUES "


def _apply_in_chunks(
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
    variables = writing.max_variables(conn)
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
            reopen = _apply_chunk(conn, chunk, variables)
            for node_id in reopen:
                writing.recompute_valid_until(storage, node_id)
        except sqlite3.IntegrityError:
            conn.execute("ROLLBACK TO nervamem_chunk")
            conn.execute("RELEASE nervamem_chunk")
            left.extend(chunk)
            continue
        conn.execute("RELEASE nervamem_chunk")
        present.update(created)
        present.update(unknown)
        applied.extend((e["id"], e["recorded_at"]) for _, e in chunk)
    return left


def _apply_chunk(
    conn: Connection, chunk: list[tuple[str, dict[str, Any]]], variables: int
) -> set[str]:
    """One chunk's changes (none a purge, every node they name present or created in
    it); returns the nodes whose valid_until is to be derived again."""
    nodes = [_node_row(c) for _, e in chunk for c in e["changes"] if c["type"] == "node"]
    writing.insert_rows(conn, _NODE_INSERT, nodes, 9, variables, _IGNORE)
    reopen = {row[0] for row in nodes if writing.STATED_END in row[8]}
    edges = [_edge_row(c) for _, e in chunk for c in e["changes"] if c["type"] == "edge"]
    writing.insert_rows(
        conn, _EDGE_INSERT, edges, 5, variables, IGNORE_EXISTING_EDGE[dialect_of(conn)]
    )
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


def _known_events(conn: Connection, ids: list[str]) -> set[str]:
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


def require_file_store(storage: Storage, command: str) -> None:
    """Team memory's event files (docs/team-memory.md) share an SQLite file through git;
    a store on a PostgreSQL server is shared by the server already."""
    if storage.engine != SQLITE:
        raise BadInputError(
            f"'{command}' is for SQLite stores shared through git; {storage.location} is "
            "on a PostgreSQL server, which every agent already shares (docs/postgres.md)"
        )


def sync(storage: Storage, *, full: bool = False, rebuild: bool = False) -> SyncReport:
    """Import the event files this store's cache has not seen. Cheap when nothing changed:
    a month's folder whose stamp (mtime, inode) is the one recorded is not read."""
    require_file_store(storage, "sync")
    log = _shared_log(storage)
    restore, drop = log.settle_journal(storage.connection)
    if restore or drop:
        with storage.transaction():
            log.restore_files(storage.connection, restore, drop)
    if rebuild:
        return _rebuild(storage, log)
    return _sync_files(storage, log, full=full)


def _sync_files(storage: Storage, log: EventLog, *, full: bool) -> SyncReport:
    """sync's import of the event files, then the removal of those that name a node
    this clone purged (:func:`_take_out_purged`)."""
    report, named_purged = _import_files(storage, log, full=full, scrub=True)
    _take_out_purged(storage, log, named_purged)
    return report


def _import_files(
    storage: Storage, log: EventLog, *, full: bool, scrub: bool
) -> tuple[SyncReport, dict[Path, set[str]]]:
    """The import of the event files (``scrub``: VACUUM after a purge among them; not
    inside a caller's transaction, which scrubs after its commit), and the files read
    that name nodes this clone purged, with those nodes."""
    conn = storage.connection
    recorded = dict(conn.execute("SELECT folder, stamp FROM mem_event_folders").fetchall())
    stamps: dict[str, str] = {}
    to_read: list[str] = []
    months, strays = scan_months(log.folder)
    # Reported at every sync, as a bad event file is, until it is removed.
    stray_problems = [_problem(stray, STRAY_FOLDER) for stray in strays]
    for month in months:
        stamp = folder_stamp(log.folder / month)
        stamps[month] = stamp
        if full or recorded.get(month) != stamp:
            to_read.append(month)
    listing = {month: _event_names(log.folder / month) for month in to_read}
    gone_months = [
        month for month in recorded if month not in stamps and is_month_folder(*month.split("/"))
    ]
    if _files_removed(conn, log.folder, listing, gone_months):
        # Event files this cache imported are gone (a checkout of a branch without
        # them, a reset, a stash): what they said cannot be taken back one by one, so
        # the cache is made again from the files there are.
        rebuilt = _rebuild(storage, log)
        report = _report(
            rebuilt.imported,
            rebuilt.already,
            rebuilt.problems,
            rebuilt.folders_read,
            rebuilt.purged,
            rebuilt=True,
        )
        return report, {}
    if not to_read:
        return _report(0, 0, tuple(stray_problems), 0), {}
    unseen: list[tuple[str, Path]] = []
    for month in to_read:
        names = listing[month]
        known = _known_events(conn, names)
        unseen.extend(
            (f"{month}/{name}.json", log.folder / month / f"{name}.json")
            for name in names
            if name not in known
        )
    texts: list[tuple[str, str]] = []
    paths: list[Path] = []
    problems: list[EventProblem] = list(stray_problems)
    for source, path in unseen:
        try:
            texts.append((source, path.read_text(encoding="utf-8")))
            paths.append(path)
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            problems.append(_problem(source, f"unreadable ({reason})"))
    purged_before = {row[0] for row in conn.execute("SELECT node_id FROM mem_purged")}
    result = import_events(storage, texts, scrub=scrub, from_files=True)
    # After the import, which skipped what these files say about purged nodes: the
    # purges it brought count too.
    purged_ids = {row[0] for row in conn.execute("SELECT node_id FROM mem_purged")}
    named_purged = _files_holding(zip(paths, [text for _, text in texts], strict=True), purged_ids)
    if purged_ids - purged_before:
        # A purge that arrived now: files this cache read at earlier syncs may hold
        # its node's text too (git removes them when it merges the purger's commit,
        # not when the file came another way).
        named_purged.update(
            _files_holding(_read_other_files(log.folder, set(paths)), purged_ids - purged_before)
        )
    with storage.transaction():
        # A folder is marked read only when all of it was imported: a problem event is
        # reported again at the next sync (fixed or still broken), never forgotten.
        # Either way it is recorded as one this cache holds events of (an empty stamp:
        # to be read again), so that its removal by a checkout is noticed.
        failed = {p.source.rsplit("/", 1)[0] for p in (*problems, *result.problems)}
        conn.executemany(
            "INSERT INTO mem_event_folders (folder, stamp) VALUES (?, ?) "
            "ON CONFLICT (folder) DO UPDATE SET stamp = excluded.stamp",
            [
                (month, "" if month in failed or _racy(stamps[month]) else stamps[month])
                for month in to_read
            ],
        )
    report = _report(
        result.imported,
        result.already,
        tuple(sorted((*problems, *result.problems))),
        len(to_read),
        result.purged,
    )
    return report, named_purged


# The changes that hold a node's text: its content, an entity's names, its data (a
# session's summary). An edge or a tombstone names a node by its ID only, and a purge
# change is what is to stay.
_CONTENT_KEYS = {"node": "id", "alias": "entity_id", "data": "id"}


# The part of a node ID after its kind's prefix: one pass of this over an event's text
# finds whether it names any purged node, where a search for each purged ID in turn
# cost a rebuild of 100k files 40 s with 100 purges.
_ID_TAIL = re.compile(r"_([0-9a-f]{29})")


def purged_named_by(text: str, purged_ids: set[str], purged_tails: set[str]) -> set[str]:
    """The purged nodes whose text an event's text holds (:data:`_CONTENT_KEYS`);
    ``purged_tails``: the same IDs without their prefixes (:data:`_ID_TAIL`)."""
    if not purged_tails or purged_tails.isdisjoint(_ID_TAIL.findall(text)):
        return set()
    try:
        changes = json.loads(text).get("changes")
    except (ValueError, RecursionError, AttributeError):
        return set()
    named: set[str] = set()
    for change in changes if isinstance(changes, list) else ():
        key = _CONTENT_KEYS.get(str(change.get("type"))) if isinstance(change, dict) else None
        if key is not None and change.get(key) in purged_ids:
            named.add(change[key])
    return named


def _files_holding(files: Iterable[tuple[Path, str]], purged_ids: set[str]) -> dict[Path, set[str]]:
    """Of these event files and their texts, those that hold purged nodes' text."""
    tails = {node_id.split("_", 1)[-1] for node_id in purged_ids}
    return {
        path: named for path, text in files if (named := purged_named_by(text, purged_ids, tails))
    }


def _read_other_files(folder: Path, read: set[Path]) -> Iterator[tuple[Path, str]]:
    """Every event file under ``folder`` but those in ``read``, with its text."""
    for _, path in event_files(folder):
        if path not in read:
            try:
                yield path, path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue


def _take_out_purged(storage: Storage, log: EventLog, named_purged: dict[Path, set[str]]) -> None:
    """Event files of nodes this clone purged, found in the folder again (a checkout of
    a commit from before the purge, a stash, a rebase): their content was not imported,
    and they go as the purge made them go, deleted and taken out of git's index, what
    else they held stated again in a new event with the purge (EventLog.take_out). A
    purge is forever: no sync brings back what this clone purged, in its database or in
    its events folder."""
    if not named_purged:
        return
    purged_ids = {row[0] for row in storage.connection.execute("SELECT node_id FROM mem_purged")}
    with storage.secure_deletes(), storage.transaction():
        log.take_out(storage.connection, purged_ids, named_purged)


# git's "racily clean" rule: a folder changed this recently may change again within the
# same tick of a coarse file-system clock (or while git is still writing into it) without
# its stamp moving, so its stamp is not trusted to mean "read" until it is older.
RACY_NS = 2_000_000_000


def _racy(stamp: str) -> bool:
    import time

    return time.time_ns() - int(stamp.split(":", 1)[0]) < RACY_NS


def _event_names(month: Path) -> list[str]:
    return [
        entry.name[:-5]
        for entry in os.scandir(month)
        if entry.is_file() and EVENT_FILE.match(entry.name)
    ]


def _files_removed(
    conn: Connection, folder: Path, listing: dict[str, list[str]], gone_months: list[str]
) -> bool:
    """Whether an event file this cache holds is missing from a folder just listed, or
    a whole month's folder it read is gone. Event IDs begin with their time, so a
    month's events are one range of the primary key. A held event missing from the
    listing is looked for again: another process may have written it (the file, then
    its COMMIT) after the folder was listed and before this read of what is held,
    which is no reason to rebuild the cache."""
    for month, names in [*listing.items(), *((m, []) for m in gone_months)]:
        low, high = month_id_range(month)
        held = conn.execute(
            "SELECT id FROM mem_events WHERE id >= ? AND id < ?", (low, high)
        ).fetchall()
        missing = {row[0] for row in held} - set(names)
        if any(not (folder / month / f"{name}.json").exists() for name in missing):
            return True
    return False


def _shared_log(storage: Storage) -> EventLog:
    if storage.events is None:
        raise BadInputError(
            f"{storage.path} is not a shared store (no events folder beside it): "
            "run 'nervamem init --shared' to share it"
        )
    return storage.events


def _rebuild(storage: Storage, log: EventLog) -> SyncReport:
    """The cache emptied and made again from the event files in one transaction: a
    process killed part-way (a git hook's time limit) leaves the cache as it was, and
    readers meanwhile see the old cache, never an empty one. Access counts are put back
    in it too. The events it imports are not captured as new ones (``suppressed``)."""
    purged_before = _purged_count(storage)
    log.suppressed = True
    try:
        # secure_delete: the old cache's rows may hold what a purge among the events
        # removes, whose bytes must not wait for the scrub after the commit.
        with storage.secure_deletes(), storage.transaction():
            _empty_cache(storage)
            report, named_purged = _import_files(storage, log, full=True, scrub=False)
            restore_access_counts(storage)
    finally:
        log.suppressed = False
    if report.purged or _purged_count(storage) != purged_before:
        # The old cache held what a purge among these events removed (or this import
        # purged): its rows were deleted with the rest, and their bytes must not stay
        # in free pages. Only after the commit: VACUUM cannot run in a transaction.
        storage.scrub_files()
    _take_out_purged(storage, log, named_purged)
    return report


def _purged_count(storage: Storage) -> int:
    return int(storage.connection.execute("SELECT count(*) FROM mem_purged").fetchone()[0])


def _empty_cache(storage: Storage) -> None:
    """Everything the events make, removed, to be made again from them alone; access
    counts (local statistics, not events) are kept for the nodes that come back."""
    conn = storage.connection
    with storage.transaction():
        counts = conn.execute(
            "SELECT id, access_count, last_accessed FROM mem_nodes WHERE access_count > 0"
        ).fetchall()
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS nervamem_counts (id, n, at)")
        conn.execute("DELETE FROM temp.nervamem_counts")
        conn.executemany("INSERT INTO temp.nervamem_counts VALUES (?, ?, ?)", counts)
        # Row by row, the FTS delete trigger would cost a statement per node: empty the
        # index at once instead, and put the trigger back as it was, in the same
        # transaction.
        trigger = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'mem_nodes_fts_delete'"
        ).fetchone()
        if trigger is not None:
            conn.execute("DROP TRIGGER mem_nodes_fts_delete")
        conn.execute("DELETE FROM mem_nodes")
        conn.execute("INSERT INTO mem_fts (mem_fts) VALUES ('delete-all')")
        if trigger is not None:
            conn.execute(trigger[0])
        # The journal stays: its events' files are the truth being rebuilt from. So
        # does mem_purged: what this clone purged is its own truth, not a cache of the
        # files, which a checkout of an older commit brings back without the purge.
        for table in ("mem_events", "mem_event_folders", "mem_data_origin"):
            conn.execute(f"DELETE FROM {table}")


def restore_access_counts(storage: Storage) -> None:
    conn = storage.connection
    exists = conn.execute(
        "SELECT 1 FROM sqlite_temp_master WHERE name = 'nervamem_counts'"
    ).fetchone()
    if not exists:
        return
    with storage.transaction():
        conn.execute(
            "UPDATE mem_nodes SET access_count = c.n, last_accessed = c.at "
            "FROM temp.nervamem_counts c WHERE c.id = mem_nodes.id"
        )
        conn.execute("DROP TABLE temp.nervamem_counts")


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
        f"JOIN mem_nodes n ON n.id = a.entity_id ORDER BY a.namespace, {_lower_alias(conn)}"
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


def share(storage: Storage) -> int:
    """Make an unshared store shared: its history becomes event files, with the original
    IDs and times; returns how many. Idempotent: a shared store is left as it is."""
    require_file_store(storage, "init --shared")
    folder = events_folder_beside(storage.path)
    if storage.events is not None:
        try:
            mark_shared(folder)
        except OSError:
            pass  # best effort: the folder holds events already, or is read-only
        return 0
    import shutil

    from ..durable import write_file_durably

    # The history goes into a folder of another name, which becomes the events folder
    # once whole, just before COMMIT: killed or interrupted part-way, the store is not
    # shared (a store with part of its history in events would lose the rest at the
    # next rebuild of its cache, and a second 'init --shared' would do nothing). All of
    # it under the write lock: a writer that began before commits first and its rows
    # are in the history; one that begins after the rename writes its own event
    # (Storage._notice_sharing).
    staging = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    renamed = False
    events: list[dict[str, Any]] = []
    try:
        with storage.transaction():
            if storage.events is not None:  # shared meanwhile by another process
                return 0
            for leftover in folder.parent.glob(f".{folder.name}.*.tmp"):
                shutil.rmtree(leftover, ignore_errors=True)  # of a share that was killed
            staging.mkdir()
            mark_shared(staging)
            events = history_events(storage)
            for event in events:
                path = event_path(staging, event["id"], event["recorded_at"])
                write_file_durably(path, canonical_json(event), sync=False)
                storage.connection.execute(
                    "INSERT INTO mem_events (id, recorded_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                    (event["id"], event["recorded_at"]),
                )
            for month in month_folders(staging):  # a month's stamp survives the rename
                storage.connection.execute(
                    "INSERT INTO mem_event_folders (folder, stamp) VALUES (?, ?) "
                    "ON CONFLICT (folder) DO UPDATE SET stamp = excluded.stamp",
                    (month, folder_stamp(staging / month)),
                )
            os.sync()  # one flush for every file written, before the store says so
            os.rename(staging, folder)
            renamed = True
            _sync_folder(folder.parent)
    except BaseException as exc:
        shutil.rmtree(folder if renamed else staging, ignore_errors=True)
        storage.events = None  # the store stays unshared
        if isinstance(exc, OSError):
            raise StoreError(f"cannot write events in {folder}: {exc.strerror or exc}") from None
        raise
    storage.events = EventLog(folder)
    return len(events)


# --------------------------------------------------------------------------- comparing


def _lower_alias(conn: Connection, column: str = "a.alias") -> str:
    """An alias lower-cased and ordered as SQLite's NOCASE does on both engines: ASCII
    letters folded, then byte order. On PostgreSQL the column's ICU collation would
    fold every letter and order '_' before '-' (api_gateway before api-gateway), so
    exports and canonical states differed between engines; under "C", lower() folds
    ASCII only and compares bytes."""
    if dialect_of(conn) == SQLITE:
        return f"lower({column})"
    return f'lower({column} COLLATE "C")'


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
        f"SELECT namespace, {_lower_alias(conn, 'alias')}, entity_id FROM mem_aliases ORDER BY 1, 2"
    ):
        lines.append(canonical_json(["alias", *row]))
    return "".join(lines)


EVENTS_README = """\
# nervamem's shared memory

Every file under this folder is one event of the project's memory: a change written by
`nervamem`, never edited. Commit it with the code; after a pull, `nervamem sync` (or the
hooks of `nervamem hooks install`) brings it into your local store. See nervamem's
docs/team-memory.md. This file keeps the folder in git before the first event exists.
"""


def _sync_folder(folder: Path) -> None:
    """fsync a folder, so that a rename in it survives a power loss."""
    handle = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def mark_shared(folder: Path) -> None:
    """Give the events folder a file, so that git keeps it (an empty folder is not
    committed, and a clone without it would not know the store is shared)."""
    readme = folder / "README.md"
    if not readme.exists():
        from ..durable import write_file_durably

        write_file_durably(readme, EVENTS_README)


def check_writable_events(storage: Storage) -> None:
    """Fail before anything changes when a shared store's folder cannot take files."""
    if storage.events is not None and not os.access(storage.events.folder, os.W_OK):
        raise StoreError(f"{storage.events.folder} is not writable; nothing was written")
