"""MemoryStore: the one object that owns the SQLite connection.

It applies pragmas (WAL, busy timeout, foreign keys), runs migrations on open, wraps
every write in a short ``BEGIN IMMEDIATE`` transaction (so concurrent writers queue on
the lock instead of failing half-way), and exposes the operations of the CLI as methods
returning plain dataclasses. A clock and a random source are injectable so that tests
are deterministic.

Invariants: nodes are never deleted except by ``forget(purge=True)``; superseding only
closes ``valid_until``; ``recorded_at`` is never rewritten; every query filters by
namespace.
"""

from __future__ import annotations

import errno
import json
import math
import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import entities as entity_rules
from . import search_index
from .errors import (
    AmbiguousIdError,
    BadInputError,
    NervamemError,
    NotFoundError,
    SchemaTooNewError,
    StoreError,
    StoreLockedError,
)
from .ids import (
    KIND_PREFIX,
    MIN_SHORT_DIGITS,
    RANDOM_DIGITS,
    RandomSource,
    make_id,
    parse_short,
    random_bits,
    short_form,
)
from .kinds import STORABLE_KINDS
from .locate import resolve_db_path, shown_path
from .migrations import MIGRATIONS, SCHEMA_VERSION
from .state import State, load_state, save_state, validate_namespace
from .timeparse import format_time, parse_time

if TYPE_CHECKING:
    from .bulk import NewMemory
    from .codegraph import AnchorReport
    from .models import (
        CurrentContext,
        ForgetResult,
        NamespaceInfo,
        Node,
        RecallResult,
        Stats,
        TimelineItem,
    )
    from .write_queue import WriteQueue

# The result classes of models.py are imported where they are built, not here: building
# nine frozen dataclasses costs ~7 ms, and `nervamem store` returns a plain ID.

Clock = Callable[[], datetime]
DEFAULT_BUSY_TIMEOUT_MS = 15_000
CACHE_KIB = 65_536
ENV_BUSY_TIMEOUT = "NERVAMEM_BUSY_TIMEOUT_MS"
_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")
# The expression that mem_nodes_id_random (m003) indexes: an ID's random part.
_RANDOM_PART = f"substr(id, -{RANDOM_DIGITS})"
_NODE_SELECT = (
    "SELECT id, kind, content, namespace, valid_from, valid_until, recorded_at, confidence, "
    "tombstoned, access_count, last_accessed, data FROM mem_nodes"
)


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def _row_to_node(row: Sequence[Any]) -> Node:
    from .models import Node

    return Node(
        id=row[0],
        kind=row[1],
        content=row[2],
        namespace=row[3],
        valid_from=row[4],
        valid_until=row[5],
        recorded_at=row[6],
        confidence=float(row[7]),
        tombstoned=bool(row[8]),
        access_count=int(row[9]),
        last_accessed=row[10],
        data=json.loads(row[11]),
    )


class MemoryStore:
    def __init__(
        self,
        db_path: str | os.PathLike[str] | None = None,
        *,
        namespace: str | None = None,
        clock: Clock | None = None,
        random_source: RandomSource | None = None,
        busy_timeout_ms: int | None = None,
    ) -> None:
        self.path = resolve_db_path(db_path)
        self._clock = clock or _utc_now
        self._random = random_source or random_bits
        self._namespace_override = validate_namespace(namespace) if namespace is not None else None
        self._state: State | None = None
        self._in_transaction = False
        self._transaction_time: datetime | None = None
        self._state_pending = False  # state.yaml to write when the transaction commits
        if busy_timeout_ms is None:
            busy_timeout_ms = _busy_timeout_from_env()
        self._busy_timeout_ms = busy_timeout_ms
        self.read_only = False
        self.code_anchoring: dict[str, AnchorReport] = {}
        # Writers take turns in a queue (write_queue.py), made at the first write after
        # _open(): not while it migrates, so that a file that turns out to be another
        # program's database gets no lock files beside it.
        self._write_queue: WriteQueue | None = None
        self._queue_writes = False
        self._conn = self._open()
        self._queue_writes = True

    # ------------------------------------------------------------------ connection
    def _open(self) -> sqlite3.Connection:
        path = self.path
        _check_store_file(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _path_error(exc, f"cannot create {shown_path(path.parent)}") from None
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
                raise self._store_error(exc) from None
            else:
                raise StoreError(f"cannot open {path}: {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path} is not a nervamem store ({exc})") from None
        self._conn = conn
        try:
            self._migrate()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise self._store_error(exc) from None
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
                if _wal_has_frames(wal):
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
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            if not read_only:
                mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
                if str(mode).lower() != "wal" and _may_convert_to_wal(conn):
                    _switch_to_wal(conn, self._busy_timeout_ms)
                # FULL: a commit that returned survives power loss, not only a crash.
                conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            # 64 MiB of page cache instead of 2: a 100k-node store is ~90 MB, and its hot
            # index pages (entity hubs, FTS) then stay in memory. Pages are allocated
            # only when read, so a short CLI call does not pay for it.
            conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def _migrate(self) -> None:
        version = int(self._conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise SchemaTooNewError(
                f"{self.path} has schema version {version}, newer than this nervamem "
                f"understands ({SCHEMA_VERSION}); upgrade nervamem to use it"
            )
        if version == SCHEMA_VERSION:
            return
        if self.read_only:
            raise StoreError(f"{self.path} is read-only and needs a schema upgrade")
        with self._write():
            version = int(self._conn.execute("PRAGMA user_version").fetchone()[0])
            if (
                version == 0
                and self._conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' LIMIT 1"
                ).fetchone()
            ):
                raise StoreError(f"{self.path} is an SQLite database, but not a nervamem store")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS mem_migrations "
                "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            for index, (name, migrate) in enumerate(MIGRATIONS, start=1):
                if index <= version:
                    continue
                migrate(self._conn)
                self._conn.execute(
                    "INSERT INTO mem_migrations (name, applied_at) VALUES (?, ?)",
                    (name, self._now()),
                )
                self._conn.execute(f"PRAGMA user_version = {index}")

    def close(self) -> None:
        self._conn.close()
        if self._write_queue is not None:
            self._write_queue.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connection(self) -> sqlite3.Connection:
        return self._conn

    def _store_error(self, exc: sqlite3.Error) -> StoreError:
        text = str(exc)
        if "locked" in text or "busy" in text:
            return StoreLockedError(
                f"{self.path} stayed locked by another writer for "
                f"{self._busy_timeout_ms / 1000:g}s; nothing was written"
            )
        if "readonly" in text or "read-only" in text:
            return StoreError(f"{self.path} is read-only; nothing was written")
        if "not a database" in text or "malformed" in text or "corrupt" in text:
            return StoreError(f"{self.path} is not a usable nervamem store ({text})")
        return StoreError(f"{self.path}: {text}")

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One short write transaction; the write lock is taken up front, in turn: a
        writer that commits in a loop cannot keep the others waiting (write_queue.py).
        The busy timeout bounds the whole wait, queue and SQLite's lock together."""
        if self._in_transaction:
            yield
            return
        if self.read_only:
            raise StoreError(f"{self.path} is read-only; nothing was written")
        deadline = time.monotonic() + self._busy_timeout_ms / 1000
        queue = self._write_queue
        if queue is None and self._queue_writes:
            from .write_queue import WriteQueue

            queue = self._write_queue = WriteQueue(self.path)
        if queue is not None and not queue.take_turn(deadline):
            raise self._store_error(sqlite3.OperationalError("database is locked"))
        try:
            # SQLite's lock can still be taken by what does not queue (another program,
            # a purge's VACUUM, a recall counting accesses): wait for it only as long as
            # the queue left of the busy timeout.
            left_ms = max(int((deadline - time.monotonic()) * 1000), 0)
            waited = left_ms < self._busy_timeout_ms - 1
            if waited:
                self._conn.execute(f"PRAGMA busy_timeout = {left_ms}")
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            finally:
                if waited:
                    self._conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
        except BaseException as exc:
            if queue is not None:
                queue.end_turn()
            if isinstance(exc, sqlite3.Error):
                raise self._store_error(exc) from None
            raise
        self._in_transaction = True
        # One reading of the clock per transaction: every ID, recorded_at and default
        # valid_from written by it share the same moment.
        self._transaction_time = self._clock()
        try:
            yield
            if self._state_pending and self._state is not None:
                # Before COMMIT: if state.yaml cannot be written, the session it would
                # name is rolled back with the rest and the command changes nothing.
                save_state(self.path, self._state)
            self._state_pending = False
            self._conn.execute("COMMIT")
        except BaseException as exc:
            if self._state_pending:  # the session it names is rolled back with the rest
                self._state_pending = False
                self._state = None
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            if isinstance(exc, sqlite3.Error):
                raise self._store_error(exc) from None
            raise
        finally:
            self._in_transaction = False
            self._transaction_time = None
            if queue is not None:
                queue.end_turn()

    @contextmanager
    def batch(self) -> Iterator[MemoryStore]:
        """Group many writes into one transaction (imports, benchmarks)."""
        with self._write():
            yield self

    # ------------------------------------------------------------------ helpers
    def _moment(self) -> datetime:
        return self._transaction_time or self._clock()

    def _now(self) -> str:
        return format_time(self._moment())

    def _new_id(self, kind: str) -> str:
        moment = self._moment()
        return make_id(kind, int(moment.timestamp() * 1000), self._random())

    @property
    def state(self) -> State:
        if self._state is None:
            self._state = load_state(self.path)
        return self._state

    @property
    def namespace(self) -> str:
        return self._namespace_override or self.state.namespace

    def _ns(self, namespace: str | None) -> str:
        return validate_namespace(namespace) if namespace is not None else self.namespace

    def resolve_id(self, ref: str, *, namespace: str | None = None) -> str:
        """A full ID, a unique prefix of one (as git resolves short hashes) or a short
        ID (``f-3a9c``: kind prefix, hyphen, a prefix of the random part; ids.py), within
        the namespace. Raises NotFoundError or AmbiguousIdError (exit 3)."""
        ns = self._ns(namespace)
        prefix = ref.strip().lower()
        if not prefix or len(prefix) > 64 or not set(prefix) <= _ID_CHARS:
            raise BadInputError(f"{ref[:40]!r} is not a node ID, short ID or ID prefix")
        short = parse_short(prefix)
        if short is None and "-" in prefix:
            raise BadInputError(
                f"{ref[:40]!r} is not a node ID: a short ID is a kind prefix, '-' and "
                f"{MIN_SHORT_DIGITS} to {RANDOM_DIGITS} hex digits (f-3a9c)"
            )
        if short:
            kind, digits = short
            # A range of the random-part index (m003); '+namespace' and 'kind' filter
            # the few rows it holds.
            rows = self._conn.execute(
                f"SELECT id FROM mem_nodes WHERE {_RANDOM_PART} >= ? "
                f"AND {_RANDOM_PART} < ? AND +kind = ? AND +namespace = ? "
                "ORDER BY id LIMIT 11",
                (digits, digits + "~", kind, ns),
            ).fetchall()
        else:
            # '+namespace' keeps the planner on the id index (a range of a few rows);
            # otherwise it picks mem_nodes_ns_kind and sorts the whole namespace per call.
            rows = self._conn.execute(
                "SELECT id FROM mem_nodes WHERE id >= ? AND id < ? AND +namespace = ? "
                "ORDER BY id LIMIT 11",
                (prefix, prefix + "~", ns),
            ).fetchall()
        ids = [r[0] for r in rows]
        if prefix in ids:
            return prefix
        if not ids:
            raise NotFoundError(f"no node {ref[:40]!r} in namespace {ns!r}")
        if len(ids) > 1:
            raise AmbiguousIdError(prefix, ids)
        return str(ids[0])

    def get(self, ref: str, *, namespace: str | None = None) -> Node:
        node_id = self.resolve_id(ref, namespace=namespace)
        row = self._conn.execute(_NODE_SELECT + " WHERE id = ?", (node_id,)).fetchone()
        return _row_to_node(row)

    def short_ids(self, ids: Iterable[str], *, min_hex: int = MIN_SHORT_DIGITS) -> dict[str, str]:
        """The short ID of each node (ids.py): kind prefix, '-' and the fewest digits of
        its random part (at least ``min_hex``) that no other node in the store shares,
        whatever its kind or namespace, so it resolves wherever the node does."""
        result: dict[str, str] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 500):
            # One statement per 500 IDs (a recall shows hundreds): two seeks each in the
            # random-part index, for the random parts just before and after its own.
            # '<=' and 'id <>': a twin with the very same random part counts as a
            # neighbour.
            rows = self._conn.execute(
                f"SELECT q.value, (SELECT max({_RANDOM_PART}) FROM mem_nodes "
                f"WHERE {_RANDOM_PART} <= substr(q.value, -{RANDOM_DIGITS}) AND id <> q.value), "
                f"(SELECT min({_RANDOM_PART}) FROM mem_nodes "
                f"WHERE {_RANDOM_PART} > substr(q.value, -{RANDOM_DIGITS})) FROM json_each(?) q",
                (json.dumps(unique[start : start + 500]),),
            ).fetchall()
            for node_id, before, after in rows:
                own = node_id[-RANDOM_DIGITS:]
                shared = max(
                    (_common_prefix(own, other) for other in (before, after) if other),
                    default=0,
                )
                # Two random parts alike in all 16 digits (one chance in 2^64 per pair):
                # only the whole ID tells them apart.
                result[node_id] = (
                    node_id
                    if shared >= RANDOM_DIGITS
                    else short_form(node_id, max(shared + 1, min_hex))
                )
        return result

    # ------------------------------------------------------------------ writes
    def _insert_node(
        self,
        kind: str,
        content: str,
        namespace: str,
        *,
        valid_from: str,
        confidence: float = 1.0,
        data: dict[str, Any] | None = None,
    ) -> str:
        node_id = self._new_id(kind)
        self._conn.execute(
            "INSERT INTO mem_nodes (id, kind, content, namespace, valid_from, recorded_at, "
            "confidence, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                node_id,
                kind,
                content,
                namespace,
                valid_from,
                self._now(),
                confidence,
                json.dumps(data or {}, ensure_ascii=False, sort_keys=True),
            ),
        )
        return node_id

    def _link(self, src: str, dst: str, kind: str, data: dict[str, Any] | None = None) -> None:
        self._conn.execute(
            "INSERT OR IGNORE INTO mem_edges (src, dst, kind, created_at, data) "
            "VALUES (?, ?, ?, ?, ?)",
            (src, dst, kind, self._now(), json.dumps(data or {}, sort_keys=True)),
        )

    def _update_data(self, node_id: str, changes: dict[str, Any]) -> None:
        row = self._conn.execute("SELECT data FROM mem_nodes WHERE id = ?", (node_id,)).fetchone()
        data = json.loads(row[0]) if row else {}
        data.update(changes)
        self._conn.execute(
            "UPDATE mem_nodes SET data = ? WHERE id = ?",
            (json.dumps(data, ensure_ascii=False, sort_keys=True), node_id),
        )

    def _resolve_or_create_entity(self, name: str, namespace: str, valid_from: str) -> str:
        clean = " ".join(name.split())
        if not clean:
            raise BadInputError("an entity name cannot be empty")
        _check_text(clean, "entity name")
        found = entity_rules.find_entity(self._conn, namespace, clean)
        if found:
            return found
        entity_id = self._insert_node("entity", clean, namespace, valid_from=valid_from)
        for alias in entity_rules.alias_forms(clean):
            # A tombstoned entity may still own the alias: the live one takes it over.
            self._conn.execute(
                "INSERT OR REPLACE INTO mem_aliases (namespace, alias, entity_id) VALUES (?,?,?)",
                (namespace, alias, entity_id),
            )
        return entity_id

    def store(
        self,
        kind: str,
        content: str,
        *,
        entities: Sequence[str] = (),
        confidence: float = 1.0,
        valid_from: str | datetime | None = None,
        supersedes: str | None = None,
        contradicts: Sequence[str] = (),
        caused_by: Sequence[str] = (),
        derived_from: Sequence[str] = (),
        rationale: str | None = None,
        rejected: Sequence[str] = (),
        session: str | None = None,
        namespace: str | None = None,
    ) -> str:
        """Store one memory node and its edges; return its ID."""
        data = _checked_memory(kind, content, confidence, rationale, rejected, entities)
        ns = self._ns(namespace)
        explicit_start = self._valid_from(valid_from) if valid_from is not None else None

        with self._write():
            start = explicit_start or self._now()
            session_id = self._session_for_write(session, ns)
            old = self._supersedable(supersedes, ns, start) if supersedes else None
            links = [
                (self.resolve_id(ref, namespace=ns), edge)
                for refs, edge in (
                    (contradicts, "CONTRADICTS"),
                    (caused_by, "CAUSED"),
                    (derived_from, "DERIVED_FROM"),
                )
                for ref in refs
            ]
            if kind == "entity":
                # An existing entity is returned as is; it must not end up linked to itself.
                node_id = self._resolve_or_create_entity(content, ns, start)
                if node_id == old or any(target == node_id for target, _ in links):
                    raise BadInputError(f"{node_id} cannot supersede or link to itself")
            else:
                node_id = self._insert_node(
                    kind, content, ns, valid_from=start, confidence=float(confidence), data=data
                )
            if old is not None:
                self._conn.execute(
                    "UPDATE mem_nodes SET valid_until = ? WHERE id = ?", (start, old)
                )
                self._link(node_id, old, "SUPERSEDES")
            for target, edge in links:
                if edge == "CAUSED":
                    self._link(target, node_id, "CAUSED")  # the cause produced this node
                else:
                    self._link(node_id, target, edge)
            entity_ids: list[tuple[str, str]] = []
            for name in entities:
                entity_id = self._resolve_or_create_entity(name, ns, start)
                if entity_id != node_id:
                    self._link(node_id, entity_id, "ABOUT")
                    entity_ids.append((name, entity_id))
            if session_id and kind != "entity":
                self._link(node_id, session_id, "OCCURRED_IN")
            if entity_ids:
                self._anchor_code(node_id, entity_ids)
        return node_id

    def store_many(self, memories: Iterable[NewMemory]) -> list[str]:
        """Store many memories in one transaction and return their IDs, in order.

        Exactly what ``store()`` called for each memory in order inside one batch does
        (same checks, entity resolution, supersession rules and edges), with the rows
        written by multi-row statements: several times faster for imports. A reference
        (``supersedes``, ``caused_by``, ...) is an ID, or the index of an earlier memory
        of the same call. All or nothing: one bad memory writes none of them.
        """
        from .bulk import store_many

        return store_many(self, memories)

    def _anchor_code(self, node_id: str, entity_ids: list[tuple[str, str]]) -> None:
        """TOUCHES bridge: only when a code graph exists beside the store (lazy import)."""
        graph_path = self.path.parent / "graph.graphml"
        if not graph_path.is_file():
            return
        from .codegraph import anchor_entities

        # Kept for the caller: ambiguous names and graph problems are reported, not raised.
        self.code_anchoring[node_id] = anchor_entities(self, node_id, entity_ids, graph_path)

    def _valid_from(self, value: str | datetime | None) -> str:
        if value is None:
            return self._now()
        if isinstance(value, datetime):
            return format_time(value)
        return parse_time(value, option="--valid-from")

    def _supersedable(self, ref: str, namespace: str, new_start: str) -> str:
        old = self.get(ref, namespace=namespace)
        # A forgotten superseder does not count: the chain can go on from the old node.
        row = self._conn.execute(
            "SELECT e.src FROM mem_edges e JOIN mem_nodes n ON n.id = e.src "
            "WHERE e.dst = ? AND e.kind = 'SUPERSEDES' AND n.tombstoned = 0 LIMIT 1",
            (old.id,),
        ).fetchone()
        _check_supersedable(
            old.id, old.kind, old.valid_from, old.tombstoned, row[0] if row else None, new_start
        )
        return old.id

    def _session_for_write(self, explicit: str | None, namespace: str) -> str | None:
        if explicit:
            node = self.get(explicit, namespace=namespace)
            if node.kind != "session":
                raise BadInputError(f"{node.id} is a {node.kind}, not a session")
            return node.id
        active = self.state.session
        if not active:
            return None
        row = self._conn.execute(
            "SELECT 1 FROM mem_nodes WHERE id = ? AND namespace = ? AND kind = 'session' "
            "AND tombstoned = 0",
            (active, namespace),
        ).fetchone()
        return active if row else None

    # ------------------------------------------------------------------ sessions
    def start_session(self, title: str | None = None, *, namespace: str | None = None) -> str:
        self._ns(namespace)  # a bad name or a broken state.yaml fails before the lock
        text = " ".join((title or "").split())
        _check_text(text, "title")
        with self._write():
            active = self._reload_state()
            ns = self._ns(namespace)  # another process may have switched since we started
            now = self._now()
            session_id = self._insert_node(
                "session", text or f"session {now[:16].replace('T', ' ')}", ns, valid_from=now
            )
            if ns == active.namespace:
                self._save_state(State(namespace=ns, session=session_id))
        return session_id

    def end_session(self, session: str | None = None, *, summary: str | None = None) -> str:
        if summary is not None:
            _check_text(summary, "summary")
        self._reload_state()
        self._session_to_end(session)  # bad input fails before the lock, touching nothing
        with self._write():
            self._reload_state()
            # Again under the lock: meanwhile another process may have ended it, or
            # started the session that is the active one now.
            node = self._session_to_end(session)
            now = self._now()
            changes: dict[str, Any] = {"ended_at": now}
            if summary:
                changes["summary"] = summary
            self._update_data(node.id, changes)
            self._conn.execute(
                "INSERT INTO mem_review_queue (kind, session_id, namespace, created_at) "
                "VALUES ('consolidate', ?, ?, ?)",
                (node.id, node.namespace, now),
            )
            active = self.state
            if active.session == node.id:
                self._save_state(State(namespace=active.namespace, session=None))
        return node.id

    def _session_to_end(self, session: str | None) -> Node:
        ref = session or self.current().session
        if not ref:
            raise BadInputError(
                f"no active session in namespace {self.namespace!r}: pass --session ID"
            )
        node = self.get(ref)
        if node.kind != "session":
            raise BadInputError(f"{node.id} is a {node.kind}, not a session")
        if node.data.get("ended_at"):
            raise BadInputError(f"session {node.id} already ended at {node.data['ended_at']}")
        return node

    def _reload_state(self) -> State:
        """state.yaml as it is now, not as this object first read it. Inside a write
        transaction that stays true until COMMIT: every change of the state is made
        under the write lock. A change this transaction made itself (a batch) is newer
        than the file, and is kept."""
        if not self._state_pending:
            self._state = load_state(self.path)
        return self.state

    def _save_state(self, state: State) -> None:
        if self._in_transaction:
            # Inside a batch, state.yaml is written once, when the batch commits: a
            # rolled-back session never becomes the active one, and an import that starts
            # a thousand sessions does not pay a thousand fsyncs.
            self._state = state
            self._state_pending = True
            return
        save_state(self.path, state)
        self._state = state

    # ------------------------------------------------------------------ namespaces
    def switch_namespace(self, name: str) -> CurrentContext:
        ns = validate_namespace(name)
        # Staying put keeps the active session; switching resets it so that OCCURRED_IN
        # can never cross namespaces.
        if ns != self._reload_state().namespace:
            if self.read_only:  # it cannot take the write lock; writes the state as before
                self._save_state(State(namespace=ns, session=None))
            else:
                # The lock every other change of the state holds, so that none of them
                # writes back, after this switch, a state it read before it.
                with self._write():
                    if ns != self._reload_state().namespace:
                        self._save_state(State(namespace=ns, session=None))
        self._namespace_override = None
        return self.current()

    def current(self) -> CurrentContext:
        ns = self.namespace
        session = self.state.session if ns == self.state.namespace else None
        from .models import CurrentContext

        return CurrentContext(namespace=ns, session=session)

    def list_namespaces(self) -> list[NamespaceInfo]:
        counts = dict(
            self._conn.execute(
                "SELECT namespace, count(*) FROM mem_nodes WHERE tombstoned = 0 GROUP BY namespace"
            ).fetchall()
        )
        counts.setdefault(self.namespace, 0)
        from .models import NamespaceInfo

        return [NamespaceInfo(name=n, nodes=int(c)) for n, c in sorted(counts.items())]

    # ------------------------------------------------------------------ forget
    def forget(self, ref: str, *, purge: bool = False) -> ForgetResult:
        from .models import ForgetResult

        node_id = self.resolve_id(ref)
        if not purge:
            with self._write():
                self._tombstone(node_id)
                self._forget_active_session(node_id)
            return ForgetResult(id=node_id, purged=False)
        removed = self._purge(node_id)
        return ForgetResult(id=node_id, purged=True, removed=removed)

    def _forget_active_session(self, node_id: str) -> None:
        active = self._reload_state()
        if active.session == node_id:
            self._save_state(State(namespace=active.namespace, session=None))

    def _tombstone(self, node_id: str) -> None:
        """Soft delete inside an open write transaction (consolidation)."""
        self._conn.execute("UPDATE mem_nodes SET tombstoned = 1 WHERE id = ?", (node_id,))

    def _purge(self, node_id: str) -> tuple[str, ...]:
        """Hard delete that leaves no trace of the content in any file of the store.

        secure_delete zeroes the cells and pages this delete frees; 'rebuild' makes the
        FTS5 index anew so no segment still holds the node's terms; a TRUNCATE
        checkpoint empties the WAL, whose older frames still hold the content; VACUUM
        rebuilds the file, which drops the copies that earlier writes left in free space
        where SQLite was built without SECURE_DELETE (an update that moves a row, an
        alias taken over; tests/reliability/test_purge.py shows it).
        """
        secure_before = self._conn.execute("PRAGMA secure_delete").fetchone()[0]
        self._conn.execute("PRAGMA secure_delete = ON")
        try:
            with self._write():
                superseded = [
                    r[0]
                    for r in self._conn.execute(
                        "SELECT dst FROM mem_edges WHERE src = ? AND kind = 'SUPERSEDES'",
                        (node_id,),
                    )
                ]
                # Purging a middle version keeps the chain: what superseded it now
                # supersedes what it superseded, so the older version stays closed.
                self._conn.execute(
                    "INSERT OR IGNORE INTO mem_edges (src, dst, kind, created_at) "
                    "SELECT newer.src, older.dst, 'SUPERSEDES', ? FROM mem_edges newer "
                    "JOIN mem_edges older ON older.src = newer.dst AND older.kind = 'SUPERSEDES' "
                    "WHERE newer.dst = ? AND newer.kind = 'SUPERSEDES'",
                    (self._now(), node_id),
                )
                self._forget_active_session(node_id)
                removed = self._entities_only_named_by(node_id)
                self._conn.executemany(
                    "DELETE FROM mem_nodes WHERE id = ?", [(i,) for i in (node_id, *removed)]
                )
                for old in superseded:
                    self._recompute_valid_until(old)
                # 'rebuild' rather than 'optimize': the optimized segment goes one level
                # above the highest in use, so repeated purges grew the index structure
                # until FTS5 refused to load it (search_index.py).
                search_index.rebuild(self._conn)
            self._scrub_files()
        finally:
            self._conn.execute(f"PRAGMA secure_delete = {int(secure_before)}")
        return removed

    def _entities_only_named_by(self, node_id: str) -> tuple[str, ...]:
        """Entities that exist only because this memory named them: created by the same
        write (one clock reading per transaction, so the same recorded_at) and linked to
        nothing else. A purge removes them too, or the name of a person or a secret would
        stay recallable. An entity stored on its own, or named by any other memory,
        stays."""
        rows = self._conn.execute(
            "SELECT ent.id FROM mem_edges e JOIN mem_nodes ent ON ent.id = e.dst "
            "JOIN mem_nodes purged ON purged.id = e.src "
            "WHERE e.src = ?1 AND e.kind = 'ABOUT' AND ent.kind = 'entity' "
            "AND ent.recorded_at = purged.recorded_at "
            "AND NOT EXISTS (SELECT 1 FROM mem_edges o WHERE o.dst = ent.id AND o.src <> ?1) "
            "AND NOT EXISTS (SELECT 1 FROM mem_edges o WHERE o.src = ent.id) ORDER BY ent.id",
            (node_id,),
        ).fetchall()
        return tuple(str(row[0]) for row in rows)

    def _recompute_valid_until(self, node_id: str) -> None:
        """valid_until is derived: the earliest valid_from of what supersedes the node."""
        self._conn.execute(
            "UPDATE mem_nodes SET valid_until = (SELECT min(n.valid_from) FROM mem_edges e "
            "JOIN mem_nodes n ON n.id = e.src WHERE e.dst = ? AND e.kind = 'SUPERSEDES') "
            "WHERE id = ?",
            (node_id, node_id),
        )

    def _scrub_files(self) -> None:
        try:
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._conn.execute("VACUUM")
            emptied = self._truncate_wal()
        except sqlite3.Error as exc:
            raise self._store_error(exc) from None
        if not emptied:
            # A reader's snapshot still needs the old pages, so they could not be
            # overwritten yet: say so instead of claiming there is no trace left.
            raise StoreLockedError(
                f"the node is deleted, but other processes kept reading or checkpointing "
                f"{self.path} for {self._busy_timeout_ms / 1000:g}s, so its old bytes stay on "
                "disk until the last process using the store closes it"
            )

    def _truncate_wal(self) -> bool:
        """Checkpoint and empty the WAL; False if that stayed impossible for the busy
        timeout. A TRUNCATE checkpoint waits for readers through the busy handler, but
        answers 'busy' at once while another connection checkpoints: retry that."""
        deadline = time.monotonic() + self._busy_timeout_ms / 1000
        while True:
            busy = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            if not busy or time.monotonic() >= deadline:
                return not busy
            time.sleep(0.02)

    # ------------------------------------------------------------------ reads
    def recall(
        self,
        query: str,
        *,
        budget_tokens: int = 500,
        as_of: str | datetime | None = None,
        kinds: Sequence[str] | None = None,
        hops: int = 2,
        namespace: str | None = None,
        tokenizer: str | None = None,
    ) -> RecallResult:
        from .recall.api import run_recall

        return run_recall(
            self,
            query,
            budget_tokens=budget_tokens,
            as_of=as_of,
            kinds=kinds,
            hops=hops,
            namespace=namespace,
            tokenizer=tokenizer,
        )

    def timeline(
        self, query: str, *, namespace: str | None = None, limit: int = 100
    ) -> list[TimelineItem]:
        from .recall.timeline import run_timeline

        return run_timeline(self, query, namespace=namespace, limit=limit)

    def stats(self, *, namespace: str | None = None) -> Stats:
        from .models import Stats

        ns = self._ns(namespace)
        nodes = dict(
            self._conn.execute(
                "SELECT kind, count(*) FROM mem_nodes WHERE namespace = ? AND tombstoned = 0 "
                "GROUP BY kind",
                (ns,),
            ).fetchall()
        )
        edges = dict(
            self._conn.execute(
                # An edge of a forgotten node is forgotten with it.
                "SELECT e.kind, count(*) FROM mem_edges e JOIN mem_nodes n ON n.id = e.src "
                "JOIN mem_nodes d ON d.id = e.dst "
                "WHERE n.namespace = ? AND n.tombstoned = 0 AND d.tombstoned = 0 GROUP BY e.kind",
                (ns,),
            ).fetchall()
        )
        tombstoned, superseded = self._conn.execute(
            "SELECT coalesce(sum(tombstoned), 0), "
            "coalesce(sum(tombstoned = 0 AND valid_until IS NOT NULL), 0) "
            "FROM mem_nodes WHERE namespace = ?",
            (ns,),
        ).fetchone()
        pending = self._conn.execute(
            "SELECT count(*) FROM mem_review_queue WHERE namespace = ? AND status = 'pending'",
            (ns,),
        ).fetchone()[0]
        size = sum(
            os.path.getsize(p) for p in (self.path, Path(f"{self.path}-wal")) if os.path.exists(p)
        )
        return Stats(
            namespace=ns,
            nodes={k: int(nodes.get(k, 0)) for k in KIND_PREFIX if nodes.get(k)},
            edges={k: int(v) for k, v in sorted(edges.items())},
            tombstoned=int(tombstoned),
            superseded=int(superseded),
            pending_consolidation=int(pending),
            db_path=str(self.path.resolve()),
            db_bytes=size,
        )


def _may_convert_to_wal(conn: sqlite3.Connection) -> bool:
    """Only an empty file or a store this version understands is switched to WAL: another
    program's database, or a newer store, is refused by _migrate and must stay untouched."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version:
        return version <= SCHEMA_VERSION
    return not conn.execute(
        "SELECT 1 FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' LIMIT 1"
    ).fetchone()


def _switch_to_wal(conn: sqlite3.Connection, busy_timeout_ms: int) -> None:
    """PRAGMA journal_mode = WAL needs an exclusive lock, and when several processes
    open a new store at once SQLite answers 'locked' at once instead of calling the busy
    handler: retry until the busy timeout, as the handler would have waited."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    while True:
        try:
            # A file system without WAL support answers with the old mode, no error:
            # that is accepted at once, as before.
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(0.01)


_NOT_REGULAR = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
)
WAL_HEADER_BYTES = 32
WAL_FRAME_HEADER_BYTES = 24
MIN_PAGE_BYTES = 512


def _check_store_file(path: Path) -> None:
    """Refuse a path that exists but is not a regular file before SQLite touches it: it
    would open /dev/null and leave /dev/null-journal behind, or wait on a named pipe."""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return  # created on first use; a parent that is a file fails at mkdir
    except OSError as exc:
        raise _path_error(exc, f"cannot use {shown_path(path)}") from None
    if not stat.S_ISREG(mode):
        what = next((name for test, name in _NOT_REGULAR if test(mode)), "not a regular file")
        raise StoreError(f"{shown_path(path)} is {what}, not a nervamem store")


def _path_error(exc: OSError, doing: str) -> NervamemError:
    if exc.errno == errno.ENAMETOOLONG:  # the path the user gave, not the store, is wrong
        return BadInputError(f"{doing}: the path is too long for this system")
    return StoreError(f"{doing}: {exc.strerror or exc}")


def _wal_has_frames(wal: str) -> bool:
    """Whether a -wal file holds at least one whole frame. SQLite ignores a shorter one
    (nothing in it was ever committed); one that cannot be read is assumed to matter."""
    try:
        with open(wal, "rb") as handle:
            header = handle.read(WAL_HEADER_BYTES)
            size = os.fstat(handle.fileno()).st_size
    except FileNotFoundError:
        return False
    except OSError:
        return True
    if len(header) < WAL_HEADER_BYTES:
        return False
    page = max(int.from_bytes(header[8:12], "big"), MIN_PAGE_BYTES)
    return size >= WAL_HEADER_BYTES + WAL_FRAME_HEADER_BYTES + page


def _busy_timeout_from_env() -> int:
    raw = os.environ.get(ENV_BUSY_TIMEOUT, "").strip()
    if not raw:
        return DEFAULT_BUSY_TIMEOUT_MS
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise BadInputError(
            f"{ENV_BUSY_TIMEOUT}={raw[:40]!r} is not a whole number of milliseconds >= 0"
        )
    return value


def _common_prefix(a: str, b: str) -> int:
    # Binary search on slice equality: a few C-level compares instead of a Python loop
    # over ~30 characters per ID.
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _checked_memory(
    kind: str,
    content: str,
    confidence: float,
    rationale: str | None,
    rejected: Sequence[str],
    entities: Sequence[str],
) -> dict[str, Any]:
    """The checks every stored memory passes (store and store_many); returns its data."""
    if kind not in STORABLE_KINDS:
        raise BadInputError(f"unknown kind {kind[:40]!r}: use one of {', '.join(STORABLE_KINDS)}")
    _check_text(content, "content")
    if not content.strip():
        raise BadInputError("content cannot be empty")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        raise BadInputError("confidence must be a number between 0 and 1")
    if math.isnan(confidence) or not 0.0 <= confidence <= 1.0:
        raise BadInputError(f"confidence {confidence} is outside [0, 1]")
    if (rationale or rejected) and kind != "decision":
        raise BadInputError("--rationale and --rejected apply to decisions only")
    for text in (rationale or "", *rejected, *entities):
        _check_text(text, "option value")
    data: dict[str, Any] = {}
    if rationale:
        data["rationale"] = rationale
    if rejected:
        data["rejected"] = list(rejected)
    return data


def _check_supersedable(
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
        raise BadInputError(
            f"the new node would be valid from {new_start[:10]}, before {old_id} "
            f"({valid_from[:10]}); give --valid-from on or after it"
        )


def _check_text(text: str, what: str) -> None:
    if "\x00" in text:
        raise BadInputError(f"{what} contains a NUL byte")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInputError(f"{what} is not valid UTF-8 text") from None
