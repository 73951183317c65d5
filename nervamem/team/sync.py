"""Syncing a shared store's cache with its events folder: the month folders whose
stamp moved are read and their unseen events imported (exchange.import_events); files
removed by a checkout make the cache again from the files there are (a rebuild); event
files that bring back what this clone purged are taken out again, as the purge made
them go. A purge is forever."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BadInputError
from ..storage.engine import Connection
from ..storage.event_log import EVENT_FILE, EventLog, folder_stamp
from .apply import known_events
from .exchange import event_problem, import_events, sync_report
from .schema import STRAY_FOLDER, is_month_folder, month_id_range, scan_months

if TYPE_CHECKING:
    from ..models import EventProblem, SyncReport
    from ..storage.engine import Storage


# --------------------------------------------------------------------------- reading


def event_files(folder: Path) -> Iterator[tuple[str, Path]]:
    """Every event file under ``folder`` by month: (``YYYY/MM``, path)."""
    for month in month_folders(folder):
        for entry in os.scandir(folder / month):
            if entry.is_file() and EVENT_FILE.match(entry.name):
                yield month, Path(entry.path)


def month_folders(folder: Path) -> list[str]:
    """The month folders of ``folder`` that events can be in (schema.scan_months)."""
    return scan_months(folder)[0]


def require_file_store(storage: Storage, command: str) -> None:
    """Team memory's event files (docs/team-memory.md) share an SQLite file through git;
    a store on a PostgreSQL server is shared by the server already."""
    if storage.store_file is None:
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
    stray_problems = [event_problem(stray, STRAY_FOLDER) for stray in strays]
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
        report = sync_report(
            rebuilt.imported,
            rebuilt.already,
            rebuilt.problems,
            rebuilt.folders_read,
            rebuilt.purged,
            rebuilt=True,
        )
        return report, {}
    if not to_read:
        return sync_report(0, 0, tuple(stray_problems), 0), {}
    unseen: list[tuple[str, Path]] = []
    for month in to_read:
        names = listing[month]
        known = known_events(conn, names)
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
            problems.append(event_problem(source, f"unreadable ({reason})"))
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
    report = sync_report(
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
    from .git import untrack_removed

    untrack_removed(log)


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
