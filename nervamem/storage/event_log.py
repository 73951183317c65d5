"""The event log of a shared store: every committed write is also one immutable file.

A store is *shared* when a folder named ``events`` sits beside its database file
(``nervamem init --shared`` makes it; docs/team-memory.md). Its truth is then that
folder, committed to git; the database is a cache that ``nervamem sync`` brings up to
date with the events it has not seen.

How a write becomes an event: while a shared store's connection writes, TEMP triggers
(they exist in this connection only, never in the file) copy every row change that is
shared (a node asserted, an edge or alias added, a node forgotten, a key of a node's
data set) into a TEMP outbox table. Just before COMMIT the outbox becomes one event
file, written to a temporary name, fsynced and renamed into place; then the
transaction commits. If the COMMIT fails the file is removed, so a failed write leaves
neither. A process killed between the rename and the COMMIT leaves an event that the
database lacks: the next sync imports it, as the events are the truth. A rollback
empties the outbox with the rest of the transaction.

Purely local statistics (access counts), derived values (``valid_until``) and local
bookkeeping (the consolidation queue, this module's own tables) are not events.

The file format (version 1), canonical JSON, one per file,
``events/YYYY/MM/<event id>.json``::

    {"author": "ana@example.com", "changes": [...], "format": 1,
     "id": "ev_<13 hex ms><16 hex random>", "recorded_at": "2026-12-03T10:00:00.000Z"}

with sorted keys, no spaces, UTF-8, one trailing newline. Event IDs sort by time and
are globally unique (the node ID scheme, ids.py), so two branches never write the same
file name and git merges them without conflict.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..durable import write_file_durably

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime

    from .dbapi import Connection

EVENTS_DIR = "events"
FORMAT = 1
EVENT_ID = re.compile(r"^ev_[0-9a-f]{29}$")
EVENT_FILE = re.compile(r"^ev_[0-9a-f]{29}\.json$")
MONTH_DIR = re.compile(r"^[0-9]{4}/[0-9]{2}$")
CHANGE_TYPES = ("node", "edge", "alias", "tombstone", "data", "purge")

# TEMP objects: only a connection that writes a shared store has them, and they never
# reach the database file. json_object keeps SQL types (a REAL stays a number).
_OUTBOX = "CREATE TEMP TABLE IF NOT EXISTS nervamem_outbox (n INTEGER PRIMARY KEY, change TEXT)"
_TRIGGERS = (
    """CREATE TEMP TRIGGER IF NOT EXISTS nervamem_event_node AFTER INSERT ON main.mem_nodes
BEGIN INSERT INTO nervamem_outbox (change) VALUES (json_object(
    'type', 'node', 'id', new.id, 'kind', new.kind, 'content', new.content,
    'namespace', new.namespace, 'valid_from', new.valid_from, 'valid_until', new.valid_until,
    'recorded_at', new.recorded_at, 'confidence', new.confidence, 'data', json(new.data)));
END""",
    # On mem_links, the table behind the view mem_edges (migrations.key_edges_by_seq):
    # the edge as mem_edges shows it.
    """CREATE TEMP TRIGGER IF NOT EXISTS nervamem_event_edge AFTER INSERT ON main.mem_links
BEGIN INSERT INTO nervamem_outbox (change) SELECT json_object(
    'type', 'edge', 'src', s.id, 'dst', d.id, 'kind', k.kind,
    'created_at', coalesce(new.created_at, s.recorded_at),
    'data', json(coalesce(new.data, '{}')))
    FROM main.mem_nodes s, main.mem_nodes d, main.mem_edge_kinds k
    WHERE s.seq = new.src AND d.seq = new.dst AND k.code = new.kind;
END""",
    """CREATE TEMP TRIGGER IF NOT EXISTS nervamem_event_alias AFTER INSERT ON main.mem_aliases
BEGIN INSERT INTO nervamem_outbox (change) VALUES (json_object(
    'type', 'alias', 'namespace', new.namespace, 'alias', new.alias,
    'entity_id', new.entity_id));
END""",
    """CREATE TEMP TRIGGER IF NOT EXISTS nervamem_event_tombstone
AFTER UPDATE OF tombstoned ON main.mem_nodes WHEN new.tombstoned = 1 AND old.tombstoned = 0
BEGIN INSERT INTO nervamem_outbox (change) VALUES (json_object('type', 'tombstone', 'id', new.id));
END""",
    """CREATE TEMP TRIGGER IF NOT EXISTS nervamem_event_data
AFTER UPDATE OF data ON main.mem_nodes WHEN new.data IS NOT old.data
BEGIN INSERT INTO nervamem_outbox (change) VALUES (json_object(
    'type', 'data', 'id', new.id, 'old', json(old.data), 'new', json(new.data)));
END""",
)
_TRIGGER_NAMES = (
    "nervamem_event_node",
    "nervamem_event_edge",
    "nervamem_event_alias",
    "nervamem_event_tombstone",
    "nervamem_event_data",
)


ENV_AUTHOR = "NERVAMEM_AUTHOR"


def event_author(folder: Path) -> str | None:
    """Who an event is by: NERVAMEM_AUTHOR, else git's author e-mail (GIT_AUTHOR_EMAIL,
    the repository's user.email, the user's); None when nothing says. Read from the
    files, not by running git: a store must not pay a process for it. Kept so that
    events can later be signed by their author (ROADMAP: trust in shared memory)."""
    for variable in (ENV_AUTHOR, "GIT_AUTHOR_EMAIL", "EMAIL"):
        value = os.environ.get(variable, "").strip()
        if value:
            return value[:200]
    candidates = [parent / ".git" / "config" for parent in (folder, *folder.parents)]
    home = Path(os.environ.get("HOME", "/nonexistent"))
    config_home = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    for config in (
        next((c for c in candidates if c.is_file()), None),
        home / ".gitconfig",
        config_home / "git" / "config",
    ):
        email = _user_email(config) if config is not None else None
        if email:
            return email[:200]
    return None


def _user_email(config: Path) -> str | None:
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[] ").lower()
        elif section == "user" and "=" in line:
            key, value = line.split("=", 1)
            if key.strip().lower() == "email" and value.strip():
                return value.strip().strip('"')
    return None


def events_folder_beside(db_path: Path) -> Path:
    return db_path.parent / EVENTS_DIR


def canonical_json(value: Any) -> str:
    """The one encoding of an event: sorted keys, no spaces, UTF-8 text, a newline."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"


def new_event_id(epoch_ms: int, random_value: int) -> str:
    return f"ev_{epoch_ms:013x}{random_value & (2**64 - 1):016x}"


def event_path(folder: Path, event_id: str, recorded_at: str) -> Path:
    """``events/YYYY/MM/<id>.json``: a month's folder, so no folder grows without bound."""
    return folder / recorded_at[:4] / recorded_at[5:7] / f"{event_id}.json"


def folder_stamp(folder: Path) -> str:
    """What changes when a file is added to or removed from a month's folder."""
    info = folder.stat()
    return f"{info.st_mtime_ns}:{info.st_ino}"


def data_changes(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The keys of a node's data that a write set (removals are not written by nervamem)."""
    return {key: value for key, value in new.items() if old.get(key, object()) != value}


class EventLog:
    """The event folder of one shared store, and the capture of its connection's writes."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.capturing = False
        # An import applies events that already exist: it must not write them again.
        self.suppressed = False
        # Event files that hold purged content: removed once the purge commits.
        self.to_remove: list[Path] = []
        # The files removed so far, until the team layer takes them to tell git
        # (team/git.py): the storage layer removes files and runs no git.
        self.removed: list[Path] = []
        # Whether a commit of git's history holds one of the files last removed (the
        # purge's note about history says so only then); None: git could not tell. Set
        # by team/git.py.
        self.removed_in_history: bool | None = False
        self._author: str | None | bool = False  # False: not looked up yet

    def begin(self, conn: sqlite3.Connection) -> None:
        """At the start of every write transaction of a shared store."""
        if self.suppressed:
            if self.capturing:
                for name in _TRIGGER_NAMES:
                    conn.execute(f"DROP TRIGGER IF EXISTS temp.{name}")
                self.capturing = False
            return
        if not self.capturing:
            conn.execute(_OUTBOX)
            for statement in _TRIGGERS:
                conn.execute(statement)
            self.capturing = True
        conn.execute("DELETE FROM temp.nervamem_outbox")
        self.to_remove = []

    def record_purge(self, conn: Connection, purged: tuple[str, ...]) -> None:
        """Inside a purge's transaction: the purge changes go into this transaction's
        event, and every event file that names a purged node is to be removed. What else
        those files held (another memory stored by the same command, its entities and
        edges) is stated again in the purge's event, so nothing else is lost; a change is
        applied once by its IDs, so stating it twice changes nothing.

        Finding the files reads every event file (:meth:`files_naming`)."""
        rows = self._restate(conn, set(purged), self.files_naming(set(purged)), purged)
        conn.executemany(
            "INSERT INTO temp.nervamem_outbox (change) VALUES (?)", [(row,) for row in rows]
        )
        conn.executemany(
            "INSERT OR IGNORE INTO mem_purged (node_id) VALUES (?)", [(i,) for i in purged]
        )

    def take_out(self, conn: Connection, purged: set[str], files: dict[Path, set[str]]) -> None:
        """Inside a write transaction: event files that hold the text of nodes this
        clone purged, back in the folder (a checkout of an older commit, a stash, a
        rebase), go again as the purge made them go: removed once this commits, what
        else they held stated again in a new event, with a purge change for each purged
        node they name, so that a commit on this branch carries the purge too.
        ``files``: each file and the purged nodes whose text it holds.

        The new event is the same file on every clone that takes out the same files
        (its ID made from what it holds and the time of the latest of them, no author):
        teammates who check out the same old commit write one file, which git merges
        without a conflict, not one each."""
        from hashlib import sha256  # here: importing hashlib costs ~4 ms, a sync never needs it

        held: list[list[Any]] = []
        for path in sorted(files):
            try:
                changes = json.loads(path.read_text(encoding="utf-8"))["changes"]
            except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
                changes = []
            held.append(changes if isinstance(changes, list) else [])
            self.to_remove.append(path)
        named = sorted(set().union(*files.values()))
        rows = self._restate(conn, purged, held, named)
        changes = nodes_first([json.loads(row) for row in rows])
        digest = sha256(canonical_json(changes).encode("utf-8")).hexdigest()[:16]
        latest = max(int(path.name[3:16], 16) for path in files)
        event_id = f"ev_{latest:013x}{digest}"
        self.write_event(conn, event_id, _time_of(event_id), changes, signed=False)

    def _restate(
        self, conn: Connection, gone: set[str], held: list[list[Any]], purged: Sequence[str]
    ) -> list[str]:
        """The changes of the files to remove that name none of ``gone``, and a purge
        change for each of ``purged``, as canonical JSON: what is to be stated again.
        The files' events are no longer held, nor journalled with the purged content."""
        keep = [
            change
            for changes in held
            for change in changes
            if isinstance(change, dict)
            and change.get("type") != "purge"
            and not gone.intersection(named_ids(change))
        ]
        # A purge change the files held is stated again too (it names a purged node,
        # but holds none of its content): the purge must not be lost with its file.
        keep += [
            change
            for changes in held
            for change in changes
            if isinstance(change, dict) and change.get("type") == "purge"
        ]
        rows = [canonical_json(change) for change in keep]
        rows += [
            row
            for row in (canonical_json({"type": "purge", "id": node_id}) for node_id in purged)
            if row not in rows
        ]
        # The files go: this store no longer holds their events (so that sync does not
        # take their absence for a checkout); what they held is restated above.
        conn.executemany(
            "DELETE FROM mem_events WHERE id = ?", [(path.stem,) for path in self.to_remove]
        )
        # The journal's copies of those events hold the content too.
        conn.executemany(
            "DELETE FROM mem_event_journal WHERE instr(body, ?) > 0", [(i,) for i in purged]
        )
        return rows

    def files_naming(self, node_ids: set[str]) -> list[list[Any]]:
        """Schedule for removal, once the transaction commits, every event file that
        names one of ``node_ids``; returns the changes each held. Reads every event
        file (a purge is rare; ~1 s per 100k files)."""
        held: list[list[Any]] = []
        for path in sorted(self.folder.glob("[0-9][0-9][0-9][0-9]/[0-9][0-9]/ev_*.json")):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if not any(node_id in text for node_id in node_ids):
                continue
            try:
                changes = json.loads(text)["changes"]
            except (ValueError, KeyError, TypeError):
                changes = []
            held.append(changes if isinstance(changes, list) else [])
            self.to_remove.append(path)
        return held

    def after_commit(self) -> None:
        removed, self.to_remove = self.to_remove, []
        for path in removed:
            path.unlink(missing_ok=True)
        self.removed.extend(removed)

    def take_removed(self) -> list[Path]:
        """The event files removed since the last call (purges, a sync's take-out)."""
        removed, self.removed = self.removed, []
        return removed

    def after_rollback(self) -> None:
        self.to_remove = []

    def write_pending(
        self, conn: sqlite3.Connection, moment: datetime, random: Callable[[], int]
    ) -> Path | None:
        """Just before COMMIT: the transaction's changes as one event file (or none),
        recorded at ``moment``, the transaction's one reading of the clock."""
        if not self.capturing:
            return None
        raw = [row[0] for row in conn.execute("SELECT change FROM temp.nervamem_outbox ORDER BY n")]
        if not raw:
            return None
        conn.execute("DELETE FROM temp.nervamem_outbox")
        from ..timeparse import format_time

        recorded_at = format_time(moment)
        event_id = new_event_id(int(moment.timestamp() * 1000), random())
        changes = nodes_first(
            [change for change in (_normal(json.loads(text)) for text in raw) if change is not None]
        )
        if not changes:
            return None
        for change in changes:
            if change["type"] == "data":
                conn.executemany(
                    "INSERT OR REPLACE INTO mem_data_origin (node_id, key, event_id) "
                    "VALUES (?, ?, ?)",
                    [(change["id"], key, event_id) for key in change["set"]],
                )
        return self.write_event(conn, event_id, recorded_at, changes)

    def write_event(
        self,
        conn: Connection,
        event_id: str,
        recorded_at: str,
        changes: list[dict[str, Any]],
        *,
        signed: bool = True,
    ) -> Path:
        """Write one event file and record, in the open transaction, that the store holds
        it. The caller removes the file if its transaction does not commit.

        Durability: two fsyncs of a new file and its folder cost ~4 ms on a common disk,
        twice what the whole write costs otherwise. So the event also goes into the
        journal table, in the transaction, which COMMIT makes durable with its one fsync
        of the WAL, with the ID of the running boot of the system, and the file is
        written without fsync. Only a power loss can take a file the system has not
        flushed yet, and a power loss means a new boot: the next sync writes again the
        missing files of events journalled in an earlier boot (:meth:`restore_files`).
        A file missing in the same boot was removed on purpose (a checkout, a stash, a
        purge that arrived from another clone) and is not brought back. Without a boot
        ID (not Linux), the file is written with its fsyncs and not journalled."""
        event: dict[str, Any] = {
            "changes": changes,
            "format": FORMAT,
            "id": event_id,
            "recorded_at": recorded_at,
        }
        if signed and self._author is False:
            self._author = event_author(self.folder.parent)
        if signed and isinstance(self._author, str):
            event["author"] = self._author
        text = canonical_json(event)
        path = event_path(self.folder, event_id, recorded_at)
        month = path.parent
        before = folder_stamp(month) if month.is_dir() else None
        seen = conn.execute(
            "SELECT stamp FROM mem_event_folders WHERE folder = ?", (_month_key(month),)
        ).fetchone()
        boot = boot_id()
        write_file_durably(path, text, sync=boot is None)
        conn.execute(
            "INSERT OR IGNORE INTO mem_events (id, recorded_at) VALUES (?, ?)",
            (event_id, recorded_at),
        )
        if boot is not None:
            conn.execute(
                "INSERT OR REPLACE INTO mem_event_journal (id, boot, body) VALUES (?, ?, ?)",
                (event_id, boot, text),
            )
        if seen is not None and seen[0] == before:
            # Nothing else changed in the folder since the last sync read it: it still
            # holds nothing unseen, so the next sync need not read it again.
            conn.execute(
                "UPDATE mem_event_folders SET stamp = ? WHERE folder = ?",
                (folder_stamp(month), _month_key(month)),
            )
        return path

    def settle_journal(self, conn: Connection) -> tuple[list[str], list[str]]:
        """What the journal asks of a sync, read without the write lock: the events to
        write again (journalled in an earlier boot, file missing) and the entries to drop
        (settled: in an earlier boot with the file there, or in this boot with the file
        removed on purpose or written long enough ago that the system has flushed it)."""
        now_ms = int(time.time() * 1000)
        boot = boot_id()
        restore: list[str] = []
        drop: list[str] = []
        for event_id, written_in in conn.execute("SELECT id, boot FROM mem_event_journal"):
            there = event_path(self.folder, event_id, _time_of(event_id)).exists()
            if written_in != boot:
                (drop if there else restore).append(event_id)
            elif not there or now_ms - int(event_id[3:16], 16) > FLUSHED_MS:
                drop.append(event_id)
        return restore, drop

    def restore_files(self, conn: Connection, restore: list[str], drop: list[str]) -> None:
        """Inside a write transaction: write again, durably, the files a power loss took,
        and drop the settled entries (:meth:`settle_journal`)."""
        for event_id in restore:
            row = conn.execute(
                "SELECT body FROM mem_event_journal WHERE id = ?", (event_id,)
            ).fetchone()
            if row is not None:
                write_file_durably(event_path(self.folder, event_id, _time_of(event_id)), row[0])
        conn.executemany(
            "DELETE FROM mem_event_journal WHERE id = ?", [(i,) for i in (*restore, *drop)]
        )


# Linux writes a dirty page back within 30 s (vm.dirty_expire_centisecs): a file written a
# minute ago in this boot is on disk.
FLUSHED_MS = 60_000
_BOOT: list[str | None] = []


def boot_id() -> str | None:
    """This boot of the system (Linux); None where the system does not say."""
    if not _BOOT:
        try:
            with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
                _BOOT.append(handle.read().strip() or None)
        except OSError:
            _BOOT.append(None)
    return _BOOT[0]


def _time_of(event_id: str) -> str:
    """The recorded_at of an event written here: its ID is made from that moment."""
    from datetime import datetime, timezone

    from ..timeparse import format_time

    moment = datetime.fromtimestamp(int(event_id[3:16], 16) / 1000, tz=timezone.utc)
    return format_time(moment)


def _month_key(month: Path) -> str:
    return f"{month.parent.name}/{month.name}"


def named_ids(change: dict[str, Any]) -> set[str]:
    """The node IDs a change is about (its own, an edge's ends, an alias's entity)."""
    return {str(change[key]) for key in ("id", "src", "dst", "entity_id") if key in change}


def nodes_first(changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An event's changes in their order, except that a node named by an earlier change
    (an edge or alias written before the node it names) moves to the front: a purge's
    relinking edge is inserted before the purge states again the newer version whose
    event file it removes, and an importer checks each change's references against what
    it holds (review F-4). A node change names only itself, so moving it earlier
    changes nothing else; an event in order comes back as it is."""
    named: set[str] = set()
    early: set[str] = set()
    for change in changes:
        if change["type"] == "node":
            if change["id"] in named:
                early.add(change["id"])
        else:
            named.update(named_ids(change))
    if not early:
        return changes
    moved = [c for c in changes if c["type"] == "node" and c["id"] in early]
    return moved + [c for c in changes if not (c["type"] == "node" and c["id"] in early)]


def _normal(change: dict[str, Any]) -> dict[str, Any] | None:
    kind = change["type"]
    if kind == "data" and "set" in change:
        return change  # stated again by a purge: already in the file format
    if kind == "node" and change.get("valid_until") is None:
        change.pop("valid_until", None)
    if kind == "data":
        changed = data_changes(change.pop("old") or {}, change.pop("new") or {})
        if not changed:
            return None
        change["set"] = changed
    return change
