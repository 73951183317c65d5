"""The SQLite storage engine: the one object that owns the connection.

It applies the pragmas (WAL, busy timeout, foreign keys, cache), runs the migrations on
open (migrations.py), wraps every write in one short ``BEGIN IMMEDIATE`` transaction
taken in turn (write_queue.py), and holds what every feature module shares: the
injectable clock and ID source, the active namespace and session (state.yaml), and the
mapping of SQLite's errors to nervamem's. Feature modules (writing, recall, sessions,
forgetting, consolidation, the code bridge) work through the public names of
:class:`Storage` and its ``connection``; nothing outside this package touches its
underscore names. A second engine (PostgreSQL) is a module beside this one with the
same public names.

Invariants: one reading of the clock per transaction (every ID, ``recorded_at`` and
default ``valid_from`` a transaction writes share it); every read-modify-write of
state.yaml happens inside a transaction, so under the write lock.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import IntegrityViolation, StoreError, StoreLockedError
from ...ids import RandomSource, random_bits
from ...locate import resolve_db_path, shown_path
from ...quarantine.cpython_sqlite import skip_checkpoint_on_close as _skip_checkpoint_on_close
from ...state import State, load_state, validate_namespace
from ...state import save_state as write_state_file
from ..common import StorageBase, env_whole_number
from ..engine import SQLITE, Clock
from .files import (
    check_path_length,
    check_store_file,
    path_error,
    switch_to_wal,
    wal_has_frames,
)
from .migrations import MIGRATIONS, SCHEMA_VERSION
from .sql import FRAGMENTS, insert_rows, max_variables, widen_cache

if TYPE_CHECKING:
    from ..event_log import EventLog
    from .access_counts import CountRow
    from .checkpoint import Checkpointer
    from .write_queue import WriteQueue

DEFAULT_BUSY_TIMEOUT_MS = 15_000
CACHE_KIB = 65_536
ENV_BUSY_TIMEOUT = "NERVAMEM_BUSY_TIMEOUT_MS"


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class Storage(StorageBase):
    engine = SQLITE
    sql = FRAGMENTS
    in_process = True

    def __init__(
        self,
        db_path: str | os.PathLike[str] | None = None,
        *,
        namespace: str | None = None,
        clock: Clock | None = None,
        random_source: RandomSource | None = None,
        busy_timeout_ms: int | None = None,
        migrate: bool = True,
    ) -> None:
        super().__init__()
        self.path = resolve_db_path(db_path)
        self.migrate = migrate
        self.location = str(self.path)
        self.clock = clock or utc_now
        self.random = random_source or random_bits
        # --ns for one command: the namespace in use without switching the active one.
        self.namespace_override = validate_namespace(namespace) if namespace is not None else None
        self.in_transaction = False
        self.transaction_time: datetime | None = None
        if busy_timeout_ms is None:
            busy_timeout_ms = env_whole_number(
                ENV_BUSY_TIMEOUT, DEFAULT_BUSY_TIMEOUT_MS, "milliseconds"
            )
        self.busy_timeout_ms = busy_timeout_ms
        self.read_only = False
        # Whether a transaction() of this connection committed (``bookkeeping``, in
        # StorageBase: a recall's access counts, recall/access_counts.py). See close().
        self.wrote = False
        self._found_wal_frames = False  # set by _open()
        # Bumped at the end of every transaction() of this Storage, committed or rolled
        # back: recall's cache of node facts (recall/node_cache.py) is for one generation.
        self.write_generation = 0
        # Access-count commits so far and the recalls they counted, and from the second
        # commit on the thread that checkpoints for them (commit_bookkeeping).
        self._bookkeeping_commits = 0
        self._bookkeeping_recalls = 0
        self._checkpointer: Checkpointer | None = None
        self._autocheckpoint = 0
        # Writers take turns in a queue (write_queue.py), made at the first write after
        # _open(): not while it migrates, so that a file that turns out to be another
        # program's database gets no lock files beside it.
        self._write_queue: WriteQueue | None = None
        self._queue_writes = False
        self.events: EventLog | None = None  # set below, once migrations have run
        self._max_variables: int | None = None  # the connection's, asked once
        self.connection = self._open()
        self._queue_writes = True
        # A shared store (an events folder beside the file, event_log.py) writes every
        # transaction's changes as an event file too. One stat here and one at each
        # write transaction while unshared (_notice_sharing): unshared stores pay
        # nothing else.
        self._notice_sharing()

    def _notice_sharing(self) -> None:
        """Capture events from now on if the store is shared (an events folder beside
        it). Checked again at every write transaction of an unshared store: a process
        that opened it before ``init --shared`` (an MCP server, a library) must not go
        on writing nodes that no event file holds, which a rebuild of the cache would
        drop and no clone would ever get."""
        if (self.path.parent / "events").is_dir():
            from ..event_log import EventLog, events_folder_beside

            self.events = EventLog(events_folder_beside(self.path))

    def _open(self) -> sqlite3.Connection:
        path = self.path
        check_store_file(path)
        check_path_length(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise path_error(exc, f"cannot create {shown_path(path.parent)}") from None
        # Writes another process left in the -wal (a recall's access counts): see close().
        self._found_wal_frames = wal_has_frames(f"{path}-wal")
        try:
            conn = self._connect(path, read_only=False)
        except sqlite3.OperationalError as exc:
            if path.exists() and not os.access(path, os.W_OK):
                try:
                    conn = self._connect(path, read_only=True)
                except sqlite3.DatabaseError as ro_exc:
                    raise StoreError(f"{path} is read-only and cannot be read: {ro_exc}") from None
                self.read_only = True
            elif "locked" in str(exc):  # the busy timeout ran out while opening
                raise self.error_from(exc) from None
            else:
                raise StoreError(f"cannot open {shown_path(path)}: {exc}") from None
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            # A corrupt header can make even PRAGMA journal_mode answer bytes that are
            # not text, which Python reports as UnicodeDecodeError.
            raise StoreError(f"{path} is not a nervamem store ({exc})") from None
        self.connection = conn
        try:
            self._migrate()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise self.error_from(exc) from None
        except BaseException:
            conn.close()  # e.g. a newer schema: do not leave the files open behind us
            raise
        return conn

    def _connect(self, path: Path, *, read_only: bool) -> sqlite3.Connection:
        if read_only:
            uri = path.resolve().as_uri() + "?mode=ro"
            wal = f"{path}-wal"
            wal_index_in_memory = False
            if not os.access(path.parent, os.W_OK) and not (
                os.path.exists(wal) and os.path.exists(f"{path}-shm")
            ):
                # A WAL store opened read-only needs a -shm file (the WAL index), which
                # SQLite cannot create in a read-only folder (since 3.22 it reads through
                # an existing read-only one). Without one, no other connection has the
                # store open.
                if wal_has_frames(wal):
                    # A leftover -wal holds writes not yet in the file. SQLite builds the
                    # WAL index in memory for a connection in exclusive locking mode
                    # (wal.html, "WAL without shared memory"); the lock-free VFS lets it
                    # hold that mode on a file it may only read.
                    uri += "&vfs=unix-none"
                    wal_index_in_memory = True
                else:
                    # The file alone holds the whole store.
                    uri += "&immutable=1"
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            if wal_index_in_memory:
                try:  # before the first read, or SQLite looks for the -shm file
                    conn.execute("PRAGMA locking_mode = EXCLUSIVE")
                except sqlite3.DatabaseError:
                    conn.close()
                    raise
        else:
            conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            if not read_only:
                mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
                if str(mode).lower() != "wal" and _may_convert_to_wal(conn):
                    switch_to_wal(conn, self.busy_timeout_ms)
                # FULL: a commit that returned survives power loss, not only a crash.
                conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            # 64 MiB of page cache instead of 2: a 100k-node store is ~90 MB, and its hot
            # index pages (entity hubs, FTS) then stay in memory. Pages are allocated
            # only when read, so a short CLI call does not pay for it.
            conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        except (sqlite3.DatabaseError, UnicodeDecodeError):
            conn.close()
            raise
        return conn

    def _migrate(self) -> None:
        self.migrate_schema(self.connection, MIGRATIONS)

    def schema_version(self, conn: sqlite3.Connection) -> int:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])

    def prepare_migrations(self, conn: sqlite3.Connection, version: int) -> None:
        if (
            version == 0
            and conn.execute(
                "SELECT 1 FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' LIMIT 1"
            ).fetchone()
        ):
            raise StoreError(f"{self.path} is an SQLite database, but not a nervamem store")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS mem_migrations "
            "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
        )

    def record_migration(self, conn: sqlite3.Connection, number: int, name: str) -> None:
        conn.execute(
            "INSERT INTO mem_migrations (name, applied_at) VALUES (?, ?)", (name, self.now())
        )
        conn.execute(f"PRAGMA user_version = {number}")

    def commits_by_others(self) -> int | None:
        if self.connection.in_transaction:
            return None
        return int(self.connection.execute("PRAGMA data_version").fetchone()[0])

    def own_writes(self) -> tuple[int, int]:
        return self.write_generation, self.connection.total_changes

    def count_accesses_now(self, ids: list[str], now: str) -> bool:
        return False  # batched: a transaction of their own costs ~0.4 ms of a recall

    def commit_bookkeeping(self, recalls: int = 1, *, closing: bool = False) -> None:
        """COMMIT the access counts of ``recalls`` recalls (recall/access_counts.py).
        From the second such commit of this store on, without SQLite's automatic
        checkpoint in it: a thread checkpoints every CHECKPOINT_EVERY recalls instead
        (checkpoint.py), so no recall waits for a checkpoint's fsyncs. ``closing``: the
        last commit, from close(), which starts no thread and asks for no checkpoint."""
        conn = self.connection
        counted_before = self._bookkeeping_recalls
        self._bookkeeping_recalls += recalls
        self._bookkeeping_commits += 1
        checkpointer = self._checkpointer
        if checkpointer is None and self._bookkeeping_commits >= 2 and not closing:
            if not self._autocheckpoint:
                self._autocheckpoint = int(conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
            if self._autocheckpoint > 0:  # else nothing checkpoints the WAL on commit
                from .checkpoint import Checkpointer

                checkpointer = self._checkpointer = Checkpointer(
                    str(self.path), _skip_checkpoint_on_close
                )
            else:
                self._autocheckpoint = -1  # read once
        if checkpointer is None or not checkpointer.running:
            conn.execute("COMMIT")
            return
        from .checkpoint import CHECKPOINT_EVERY

        conn.execute("PRAGMA wal_autocheckpoint = 0")
        try:
            conn.execute("COMMIT")
        finally:
            conn.execute(f"PRAGMA wal_autocheckpoint = {self._autocheckpoint}")
        if not closing and (
            counted_before // CHECKPOINT_EVERY != self._bookkeeping_recalls // CHECKPOINT_EVERY
        ):
            checkpointer.request()

    def close(self) -> None:
        if self.pending_counts is not None:
            # Before anything else: its commit may start the checkpoint thread stopped below.
            self.pending_counts.close()
            self.pending_counts = None
        if self._checkpointer is not None:
            # First: its connection must not be the last to close (that one checkpoints).
            self._checkpointer.close()
            self._checkpointer = None
        if not self.wrote and (self.bookkeeping or self._found_wal_frames):
            # Nothing committed but access counts, if that: leave the -wal (a recall's
            # counts, or those another process left) for the next writer's checkpoint
            # instead of checkpointing it as the last connection otherwise does when it
            # closes: two fsyncs (~10 ms) for a recall, and a failed command or a read
            # would change the store file's bytes though no row changed
            # (docs/reliability.md, "Logical and byte-level"). Readers see the -wal. A
            # -wal this connection found empty or missing is closed as usual: SQLite
            # deletes the -wal and -shm that opening it made.
            _skip_checkpoint_on_close(self.connection)
            self.bookkeeping = False  # once: a closed connection has no handle
        self.connection.close()
        if self._write_queue is not None:
            self._write_queue.close()

    @property
    def store_file(self) -> Path:
        return self.path

    def insert_rows(
        self, head: str, rows: Sequence[tuple[Any, ...]], columns: int, tail: str = ""
    ) -> None:
        if not rows:
            return
        if self._max_variables is None:
            self._max_variables = max_variables(self.connection)
        insert_rows(self.connection, head, rows, columns, self._max_variables, tail)

    def prepare_bulk_write(self) -> None:
        widen_cache(self.connection)

    @contextmanager
    def refusals(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.IntegrityError as exc:
            raise IntegrityViolation(str(exc)) from exc

    def error_from(self, exc: sqlite3.Error) -> StoreError:
        text = str(exc)
        if "locked" in text or "busy" in text:
            return StoreLockedError(
                f"{self.path} stayed locked by another writer for "
                f"{self.busy_timeout_ms / 1000:g}s; nothing was written"
            )
        if "readonly" in text or "read-only" in text:
            return StoreError(f"{self.path} is read-only; nothing was written")
        if "not a database" in text or "malformed" in text or "corrupt" in text:
            return StoreError(f"{self.path} is not a usable nervamem store ({text})")
        return StoreError(f"{self.path}: {text}")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One short write transaction; the write lock is taken up front, in turn: a
        writer that commits in a loop cannot keep the others waiting (write_queue.py).
        The busy timeout bounds the whole wait, queue and SQLite's lock together."""
        if self.in_transaction:
            yield
            return
        if self.read_only:
            raise StoreError(f"{self.path} is read-only; nothing was written")
        if self.pending_counts is not None:
            # Recalls' access counts in a commit of their own, first: a write never
            # carries them, and never rolls them back (recall/access_counts.py).
            self.pending_counts.flush()
        deadline = time.monotonic() + self.busy_timeout_ms / 1000
        queue = self._write_queue
        if queue is None and self._queue_writes:
            from .write_queue import WriteQueue

            queue = self._write_queue = WriteQueue(self.path)
        if queue is not None and not queue.take_turn(deadline):
            raise self.error_from(sqlite3.OperationalError("database is locked"))
        try:
            # SQLite's lock can still be taken by what does not queue (another program,
            # a purge's VACUUM, a recall counting accesses): wait for it only as long as
            # the queue left of the busy timeout.
            left_ms = max(int((deadline - time.monotonic()) * 1000), 0)
            waited = left_ms < self.busy_timeout_ms - 1
            if waited:
                self.connection.execute(f"PRAGMA busy_timeout = {left_ms}")
            try:
                self.connection.execute("BEGIN IMMEDIATE")
            finally:
                if waited:
                    self.connection.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        except BaseException as exc:
            if queue is not None:
                queue.end_turn()
            if isinstance(exc, sqlite3.Error):
                raise self.error_from(exc) from None
            raise
        self.in_transaction = True
        # One reading of the clock per transaction: every ID, recorded_at and default
        # valid_from written by it share the same moment.
        self.transaction_time = self.clock()
        event_file: Path | None = None
        try:
            if self.events is None and self._queue_writes:  # not while migrating on open
                self._notice_sharing()
            if self.events is not None:
                self.events.begin(self.connection)
            yield
            if self.events is not None:
                # Before COMMIT, as state.yaml: a write whose event cannot be written
                # is rolled back; one whose COMMIT fails loses its event file below.
                try:
                    event_file = self.events.write_pending(
                        self.connection, self.moment(), self.random
                    )
                except OSError as exc:
                    raise StoreError(
                        f"cannot write an event file in {shown_path(self.events.folder)}: "
                        f"{exc.strerror or exc}; nothing was written"
                    ) from None
            if self._state_pending and self._state is not None:
                # Before COMMIT: if state.yaml cannot be written, the session it would
                # name is rolled back with the rest and the command changes nothing.
                write_state_file(self.path, self._state)
            self._state_pending = False
            self.connection.execute("COMMIT")
            self.wrote = True
        except BaseException as exc:
            if event_file is not None:
                event_file.unlink(missing_ok=True)
            if self.events is not None:
                self.events.after_rollback()
            if self._state_pending:  # the session it names is rolled back with the rest
                self._state_pending = False
                self._state = None
            try:
                self.connection.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            if isinstance(exc, sqlite3.Error):
                raise self.error_from(exc) from None
            raise
        else:
            if self.events is not None:
                self.events.after_commit()
        finally:
            self.in_transaction = False
            self.transaction_time = None
            self.write_generation += 1
            if queue is not None:
                queue.end_turn()

    def read_state(self) -> State:
        return load_state(self.path)

    def save_state(self, state: State) -> None:
        if self.in_transaction:
            # Inside a batch, state.yaml is written once, when the batch commits: a
            # rolled-back session never becomes the active one, and an import that starts
            # a thousand sessions does not pay a thousand fsyncs.
            self._state = state
            self._state_pending = True
            return
        write_state_file(self.path, state)
        self._state = state

    @contextmanager
    def secure_deletes(self) -> Iterator[None]:
        """Deletes inside zero the freed cells and pages (a purge)."""
        before = self.connection.execute("PRAGMA secure_delete").fetchone()[0]
        self.connection.execute("PRAGMA secure_delete = ON")
        try:
            yield
        finally:
            self.connection.execute(f"PRAGMA secure_delete = {int(before)}")

    def rebuild_search_index(self) -> None:
        """Inside a purge's write transaction: the FTS5 index made anew (search_index.py),
        and the index samples an ANALYZE may have copied dropped with the rows."""
        from . import search_index

        search_index.rebuild(self.connection)
        drop_index_samples(self.connection)

    def size_bytes(self) -> int:
        """The store file and its WAL."""
        return sum(
            os.path.getsize(p) for p in (self.path, Path(f"{self.path}-wal")) if os.path.exists(p)
        )

    def scrub_files(self) -> None:
        try:
            drop_index_samples(self.connection)
            self.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self.connection.execute("VACUUM")
            emptied = self.truncate_wal()
        except sqlite3.Error as exc:
            raise self.error_from(exc) from None
        if not emptied:
            # A reader's snapshot still needs the old pages, so they could not be
            # overwritten yet: say so instead of claiming there is no trace left.
            raise StoreLockedError(
                f"the node is deleted, but other processes kept reading or checkpointing "
                f"{self.path} for {self.busy_timeout_ms / 1000:g}s, so its old bytes stay on "
                "disk until the last process using the store closes it"
            )

    def truncate_wal(self) -> bool:
        """Checkpoint and empty the WAL; False if that stayed impossible for the busy
        timeout. A TRUNCATE checkpoint waits for readers through the busy handler, but
        answers 'busy' at once while another connection checkpoints: retry that."""
        deadline = time.monotonic() + self.busy_timeout_ms / 1000
        while True:
            busy = self.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            if not busy or time.monotonic() >= deadline:
                return not busy
            time.sleep(0.02)

    # How recall's batched access counts are written (sqlite/access_counts.py).

    def write_access_counts(
        self, rows: Sequence[CountRow], recalls: int, *, closing: bool = False
    ) -> bool:
        from .access_counts import write_counts

        def commit() -> None:
            self.bookkeeping = True  # written outside a transaction(): see close()
            self.commit_bookkeeping(recalls, closing=closing)

        return write_counts(self.connection, rows, self.busy_timeout_ms, commit)

    def access_counts_writer(self) -> Callable[[Sequence[CountRow]], bool]:
        from .access_counts import write_counts_left

        return partial(write_counts_left, self.connection)


def drop_index_samples(conn: sqlite3.Connection) -> None:
    """Delete the index samples of sqlite_stat4 (and the older sqlite_stat3), if any.
    nervamem never runs ANALYZE or ``PRAGMA optimize``, and Python's SQLite is built
    without STAT4, but an SQLite built with it that runs ANALYZE on the store (a user's
    sqlite3) copies up to 24 whole keys of every index there: aliases, IDs, FTS5 terms.
    They are live rows, so neither secure_delete nor VACUUM removes them; a purge does,
    for every table (a sample names no node). sqlite_stat1 keeps its counts, and a
    build without STAT4, ours, never reads the samples; one with it plans without them
    until its next ANALYZE."""
    for table in ("sqlite_stat4", "sqlite_stat3"):
        exists = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
        if exists and conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone():
            conn.execute(f"DELETE FROM {table}")


def _may_convert_to_wal(conn: sqlite3.Connection) -> bool:
    """Only an empty file or a store this version understands is switched to WAL: another
    program's database, or a newer store, is refused by _migrate and must stay untouched."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version:
        return version <= SCHEMA_VERSION
    return not conn.execute(
        "SELECT 1 FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' LIMIT 1"
    ).fetchone()
