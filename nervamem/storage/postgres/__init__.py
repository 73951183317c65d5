"""The PostgreSQL storage engine: the same public names as sqlite/__init__.py's Storage
(engine.py's ``Storage``), over one psycopg 3 connection to a server.

Chosen by a ``postgresql://`` or ``postgres://`` URL (``--db``, ``NERVAMEM_DB``,
``NERVAPACK_MEMORY_DB``, ``MemoryStore(url)``); psycopg is imported only then.

How it keeps SQLite's guarantees on a server shared by many machines:

* **One writer at a time, as SQLite.** Every write transaction starts by taking a
  transaction-level advisory lock of the store (one per schema), the counterpart of
  SQLite's ``BEGIN IMMEDIATE``. What the features read inside the transaction is then
  current when they decide (is this node superseded already? does this entity exist?
  which ``seq`` comes next?), so a supersession race between two writers ends with one
  winner and a clear "already superseded" for the other, enforced by the server, and
  concurrent readers never wait. Transactions stay short (one command's writes); the
  lock is held only until COMMIT or ROLLBACK, so a writer killed mid-command holds
  nothing.
* **Timeouts.** ``NERVAMEM_BUSY_TIMEOUT_MS`` bounds the wait for the write lock (as for
  SQLite, default 15 s), ``NERVAMEM_PG_CONNECT_TIMEOUT`` the connection (seconds,
  default 10) and ``NERVAMEM_PG_STATEMENT_TIMEOUT_MS`` any one statement (default
  60 000). Running out of one is a StoreError (exit 1) and the transaction is rolled
  back.
* **Faults.** A dropped connection or a server restart mid-command ends the command with
  one line (exit 1); the transaction it was in never committed, so nothing changed, and
  the next command opens a new connection.
* **Credentials** never leave this module: messages and ``stats`` show the URL without
  its password (:func:`shown_url`), and the driver's messages are scrubbed of it.
* **Errors** are nervamem's (errors.py): a row the server refuses is an
  IntegrityViolation, any other failure of a statement a DatabaseFault; no psycopg
  class and no ``sqlite3`` class leaves this module.
* **State.** The active namespace and sessions (state.yaml beside an SQLite file) are a
  row of ``mem_state`` in the database, read and written inside the write transaction.
* **The event log** of team memory (event_log.py) is for SQLite files shared through
  git; a server is shared already, so ``events`` stays None here.

**Why an adapter, not a second copy of the SQL.** The features' ~300 statements are
written once, in the subset both engines accept (``ON CONFLICT``, aliased subqueries,
``count(*) FILTER``); the few SQLite functions PostgreSQL lacks are defined by its schema
(postgres/schema.py), and the few fragments that must differ are this engine's own
(postgres/sql.py, ``storage.sql``). What is left is the placeholder style:
:func:`translate` maps ``?``, ``?NNN`` and ``:name`` to psycopg's ``%s`` /
``%(name)s`` outside quoted text, escaping ``%``. It is a scan of the statement's text,
not a rewrite of its SQL, and it runs once per distinct statement (an LRU cache), so
its cost is a dictionary lookup per call.

The connection runs in autocommit mode; :meth:`PostgresStorage.transaction` sends
BEGIN and COMMIT itself, as sqlite/__init__.py does with ``isolation_level=None``. Reads outside
a transaction are single statements, each its own snapshot.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import (
    BadInputError,
    ConnectionLostError,
    DatabaseFault,
    IntegrityViolation,
    StoreError,
    StoreLockedError,
)
from ...ids import RandomSource, random_bits
from ...locate import (
    STORE_DIR,
    home_store,
    secrets_of,
    shown_url,
    store_url,
    working_folder,
)
from ...state import State, state_from_text, state_text, validate_namespace
from ..common import StorageBase, env_whole_number
from ..engine import POSTGRESQL, Connection, Cursor
from .errors import (
    LOCK_TIMEOUT,
    LOST,
    QUERY_CANCELED,
    encoding_hint,
    first_line,
    parse_error,
)
from .search import index_pending
from .sql import FRAGMENTS, insert_rows

if TYPE_CHECKING:
    from collections.abc import Callable

    import psycopg

    from ..event_log import EventLog

ENV_CONNECT_TIMEOUT = "NERVAMEM_PG_CONNECT_TIMEOUT"
ENV_STATEMENT_TIMEOUT = "NERVAMEM_PG_STATEMENT_TIMEOUT_MS"
ENV_BUSY_TIMEOUT = "NERVAMEM_BUSY_TIMEOUT_MS"
DEFAULT_CONNECT_TIMEOUT_S = 10
DEFAULT_STATEMENT_TIMEOUT_MS = 60_000
DEFAULT_BUSY_TIMEOUT_MS = 15_000
# The first key of the store's advisory lock (the second is the schema's hash): "nm".
LOCK_CLASS = 0x6E6D
WRITE_LOCK_SQL = f"SELECT pg_advisory_xact_lock({LOCK_CLASS}, hashtext(current_schema()))"
# The lock, then the server's clock once it is held: a transaction's time (IDs,
# recorded_at, default valid_from) comes from the one server every machine shares, so
# machines with skewed clocks still write in the order their transactions committed.
WRITE_LOCK_AND_TIME_SQL = WRITE_LOCK_SQL + ", clock_timestamp()"
# Nodes indexed by one transaction from which refresh_statistics looks at the planner's
# statistics (a bulk write: store_many, an import).
ANALYZE_AFTER_ROWS = 1000


def companion_folder() -> Path:
    """Where the files that live beside a store (the code graph) go for a store on a
    server: the project's .nervapack folder (walking up from the working folder), else
    the home one."""
    here = working_folder().resolve()
    for folder in (here, *here.parents):
        if (folder / STORE_DIR).is_dir():
            return folder / STORE_DIR
    return home_store().parent


# ---------------------------------------------------------------------- placeholders
_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\?(\d*)|::|:([A-Za-z_]\w*)|%")


@lru_cache(maxsize=512)
def translate(sql: str) -> tuple[str, tuple[int, ...] | None]:
    """``?``, ``?NNN`` and ``:name`` placeholders as psycopg's ``%s`` / ``%(name)s``,
    outside string literals and quoted names, ``%`` escaped. For ``?NNN``, also the
    (0-based) parameter each ``%s`` takes, in order. Cached: the features' statements
    are a few hundred fixed strings, so each is scanned once per process."""
    numbered: list[int] = []
    plain = False

    def replace(match: re.Match[str]) -> str:
        nonlocal plain
        text = match.group(0)
        if text == "::":
            return text
        if text[0] in "'\"":  # psycopg reads every '%' of a statement with parameters
            return text.replace("%", "%%")
        if text == "%":
            return "%%"
        if text[0] == "?":
            if match.group(1):
                numbered.append(int(match.group(1)) - 1)
            else:
                plain = True
            return "%s"
        return f"%({match.group(2)})s"

    translated = _TOKEN.sub(replace, sql)
    if numbered and plain:
        raise ValueError("a statement mixes ? and ?NNN placeholders")
    return translated, tuple(numbered) if numbered else None


def _arguments(sql: str, parameters: Any) -> tuple[str, Any]:
    if not parameters:  # psycopg sends a statement without parameters as it is
        return sql, None
    translated, order = translate(sql)
    if order is not None:
        parameters = [parameters[i] for i in order]
    elif parameters is not None and not isinstance(parameters, dict):
        parameters = list(parameters)
    return translated, parameters


class PgConnection:
    """A psycopg connection that speaks the DB-API dialect of sqlite3: ``?``
    placeholders and tuples; its errors are nervamem's (IntegrityViolation for a refused
    row, a StoreError at once for a lost server or a timeout)."""

    engine = POSTGRESQL

    def __init__(self, raw: psycopg.Connection[Any], storage: PostgresStorage) -> None:
        self.raw = raw
        self.storage = storage

    def execute(self, sql: str, parameters: Sequence[Any] | Mapping[str, Any] = (), /) -> Cursor:
        translated, arguments = _arguments(sql, parameters)
        try:
            # cursor() too: on a connection the server dropped it raises "the
            # connection is closed", which must read as the lost connection it is.
            cursor = self.raw.cursor()
            cursor.execute(translated, arguments or None)
        except Exception as exc:
            raise self.storage.error_from(exc) from None
        return cursor

    def executemany(self, sql: str, seq_of_parameters: Iterable[Sequence[Any]], /) -> Cursor:
        translated, order = translate(sql)
        rows = [
            [row[i] for i in order] if order is not None else list(row) for row in seq_of_parameters
        ]
        try:
            cursor = self.raw.cursor()
            if rows:
                cursor.executemany(translated, rows)
        except Exception as exc:
            raise self.storage.error_from(exc) from None
        return cursor

    def close(self) -> None:
        self.raw.close()


class PostgresStorage(StorageBase):
    engine = POSTGRESQL
    sql = FRAGMENTS
    in_process = False
    # A server every agent reaches: no file of its own (team memory's event files are
    # for SQLite files shared through git).
    store_file = None

    def __init__(
        self,
        url: str,
        *,
        namespace: str | None = None,
        clock: Callable[[], datetime] | None = None,
        random_source: RandomSource | None = None,
        busy_timeout_ms: int | None = None,
        migrate: bool = True,
    ) -> None:
        super().__init__()
        self.migrate = migrate
        url = store_url(url)
        self.url = url
        self.location = shown_url(url)
        self.secrets = secrets_of(url)
        self.clock = clock or _utc_now
        self.server_clock = clock is None
        self.commits_sent = 0
        self.random = random_source or random_bits
        self.namespace_override = validate_namespace(namespace) if namespace is not None else None
        self.in_transaction = False
        self.transaction_time: datetime | None = None
        self.read_only = False
        self.events: EventLog | None = None
        self.busy_timeout_ms = (
            busy_timeout_ms
            if busy_timeout_ms is not None
            else env_whole_number(ENV_BUSY_TIMEOUT, DEFAULT_BUSY_TIMEOUT_MS, "milliseconds")
        )
        self.connect_timeout_s = env_whole_number(
            ENV_CONNECT_TIMEOUT, DEFAULT_CONNECT_TIMEOUT_S, "seconds"
        )
        self.statement_timeout_ms = env_whole_number(
            ENV_STATEMENT_TIMEOUT, DEFAULT_STATEMENT_TIMEOUT_MS, "milliseconds"
        )
        self.created = False  # whether opening it created nervamem's tables
        self.path = companion_folder() / "postgresql"
        self._connection: PgConnection | None = None
        self._connection = self._open()

    # ------------------------------------------------------------------ connection
    @property
    def connection(self) -> Connection:
        if self._connection is None:  # closed after a lost server: the next call reconnects
            self._connection = self._open()
        return self._connection

    def _open(self) -> PgConnection:
        try:
            import psycopg
        except ImportError:
            raise StoreError(
                f"{self.location} is a PostgreSQL store, and the driver is not installed: "
                "pip install 'nervamem[postgres]'"
            ) from None

        try:
            psycopg.conninfo.conninfo_to_dict(self.url)
        except psycopg.Error as exc:
            raise BadInputError(
                "the PostgreSQL URL does not parse (not shown: it may hold a password): "
                + self.scrub(parse_error(first_line(exc), self.secrets))
            ) from None
        try:
            raw = psycopg.connect(
                self.url,
                autocommit=True,
                connect_timeout=max(self.connect_timeout_s, 1),
                application_name="nervamem",
            )
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot connect to {self.location}: {self.scrub(first_line(exc))}"
                + encoding_hint(self.url)
            ) from None
        except ValueError as exc:  # a URL libpq cannot parse
            raise BadInputError(f"{self.location} is not a usable PostgreSQL URL: {exc}") from None
        encoding = raw.info.parameter_status("server_encoding") or "unknown"
        if encoding.upper() != "UTF8":
            raw.close()
            # Checked before anything is created: in another encoding, text outside it
            # (any emoji, Greek in LATIN1) would fail every command as an internal error.
            raise StoreError(
                f"{self.location} is a database in the {encoding} encoding; nervamem needs "
                "UTF8: CREATE DATABASE ... ENCODING 'UTF8' TEMPLATE template0 (docs/postgres.md)"
            )
        conn = PgConnection(raw, self)
        try:
            # Through conn, whose errors are mapped: a server that goes away between
            # the connect and this first statement (a restart) is a lost connection.
            conn.execute(
                "SELECT set_config('statement_timeout', ?, false), "
                "set_config('lock_timeout', ?, false), set_config('TimeZone', 'UTC', false)",
                (str(self.statement_timeout_ms), str(self.busy_timeout_ms)),
            )
            self._connection = conn
            self._migrate(conn)
        except BaseException:
            raw.close()
            self._connection = None
            raise
        return conn

    def _migrate(self, conn: PgConnection) -> None:
        from .schema import MIGRATIONS

        self.migrate_schema(conn, MIGRATIONS)

    def schema_version(self, conn: PgConnection) -> int:
        from .schema import applied_version

        return applied_version(conn)

    def prepare_migrations(self, conn: PgConnection, version: int) -> None:
        from .schema import create_migrations_table

        create_migrations_table(conn)
        self.created = version == 0

    def record_migration(self, conn: PgConnection, number: int, name: str) -> None:
        conn.execute(
            "INSERT INTO mem_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            (number, name, self.now()),
        )

    def close(self) -> None:
        if self._connection is not None:
            try:
                self._connection.close()
            finally:
                self._connection = None

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text

    def insert_rows(
        self, head: str, rows: Sequence[tuple[Any, ...]], columns: int, tail: str = ""
    ) -> None:
        if rows:
            insert_rows(self.connection, head, rows, columns, tail)

    def prepare_bulk_write(self) -> None:
        """Nothing: a server sizes its own cache."""

    def refusals(self) -> AbstractContextManager[None]:
        # PgConnection raises IntegrityViolation itself.
        return nullcontext()

    def error_from(self, exc: BaseException) -> Exception:
        """The error a driver exception stands for: a StoreError for what ends the
        command (a lost server, a timeout), IntegrityViolation for what a feature may
        catch (a refused row), a DatabaseFault for the rest; the password scrubbed."""
        import psycopg

        if not isinstance(exc, psycopg.Error):
            return exc if isinstance(exc, Exception) else StoreError(str(exc))
        state = exc.sqlstate or ""
        text = self.scrub(first_line(exc))
        broken = isinstance(exc, psycopg.OperationalError) and self._lost()
        if state.startswith(LOST) or broken:
            self._drop()
            return ConnectionLostError(
                f"lost the connection to {self.location} ({text}); "
                "the command's changes were not committed"
            )
        if state == LOCK_TIMEOUT:
            return StoreLockedError(
                f"{self.location} stayed locked by another writer for "
                f"{self.busy_timeout_ms / 1000:g}s; nothing was written"
            )
        if state == QUERY_CANCELED:
            return StoreError(
                f"a statement on {self.location} ran longer than {ENV_STATEMENT_TIMEOUT}="
                f"{self.statement_timeout_ms}; nothing was written"
            )
        if isinstance(exc, psycopg.IntegrityError):
            return IntegrityViolation(text)
        if isinstance(exc, psycopg.errors.InsufficientPrivilege):
            return StoreError(f"{self.location}: {text}")
        return DatabaseFault(f"{self.location}: {text}")

    def _lost(self) -> bool:
        raw = self._connection.raw if self._connection is not None else None
        return raw is None or raw.closed or raw.broken

    def _drop(self) -> None:
        if self._connection is not None:
            try:
                self._connection.raw.close()
            except Exception:
                pass
            self._connection = None
        self._state = None

    # ------------------------------------------------------------------ transactions
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One short write transaction, the store's write lock taken up front (waiting
        at most the busy timeout), one reading of the clock, COMMIT."""
        if self.in_transaction:
            yield
            return
        conn = self.connection
        conn.execute("BEGIN")
        self.in_transaction = True
        try:
            locked = conn.execute(WRITE_LOCK_AND_TIME_SQL).fetchone()
            # An injected clock (tests, tools) wins; by default the server's.
            self.transaction_time = locked[1] if self.server_clock else self.clock()
            yield
            if self._state_pending and self._state is not None:
                conn.execute(
                    "INSERT INTO mem_state (id, body) VALUES (1, ?) "
                    "ON CONFLICT (id) DO UPDATE SET body = excluded.body",
                    (state_text(self._state),),
                )
            self._state_pending = False
            # The search index's terms come from Python (postgres/search.py): the nodes
            # this transaction wrote are indexed before it commits.
            indexed = index_pending(conn)
            if indexed >= ANALYZE_AFTER_ROWS:
                refresh_statistics(conn)
            # Counted before it is sent: once a COMMIT went out, a lost connection
            # leaves its outcome unknown, and a caller must not retry (mcp_server).
            self.commits_sent += 1
            conn.execute("COMMIT")
        except BaseException:
            if self._state_pending:
                self._state_pending = False
                self._state = None
            if self._connection is not None:
                try:
                    self._connection.raw.execute("ROLLBACK")
                except Exception:
                    self._drop()
            raise
        finally:
            self.in_transaction = False
            self.transaction_time = None

    # ------------------------------------------------------------------ state
    def read_state(self) -> State:
        row = self.connection.execute("SELECT body FROM mem_state WHERE id = 1").fetchone()
        return state_from_text(row[0], f"{self.location} (mem_state)") if row else State()

    def save_state(self, state: State) -> None:
        self._state = state
        self._state_pending = True
        if not self.in_transaction:
            with self.transaction():
                pass

    # ------------------------------------------------------------------ files
    def scrub_files(self) -> str | None:
        """After a purge has committed: rewrite every relation file that may hold the
        content: the tables that held it, their TOAST tables and indexes (VACUUM FULL),
        and the statistics ANALYZE copied from them (postgres/scrub.py says where the
        bytes hide and why each step is there).

        None when done; else one line saying why the files were not scrubbed and what
        to run. A purge is never undone by this: it committed before, so a role that
        does not own the tables, a lock or an older transaction held past the busy
        timeout, or a lost server is a warning, not an error. The server's WAL,
        replicas and backups keep the old bytes until they are recycled
        (docs/postgres.md, "Purge")."""
        import psycopg

        from .scrub import REWRITE_TABLES, not_owned, scrub

        todo = f"run as the tables' owner: {REWRITE_TABLES}"
        try:
            raw = self.connection.raw  # type: ignore[attr-defined]
            others = not_owned(raw)
            if others:
                return (
                    f"this role does not own {', '.join(others)}, so the "
                    f"server's table files still hold the purged bytes; {todo}"
                )
            return scrub(raw, self.busy_timeout_ms)
        except (psycopg.Error, StoreError) as exc:
            error = self.error_from(exc) if isinstance(exc, psycopg.Error) else exc
            reason = (
                "a lock"
                if isinstance(error, StoreLockedError)
                else error.detail
                if isinstance(error, DatabaseFault)
                else first_line(error)
            )
            return f"the server's table files still hold the purged bytes ({reason}); {todo}"

    @contextmanager
    def secure_deletes(self) -> Iterator[None]:
        """Nothing to switch on: PostgreSQL has no secure-delete mode (scrub_files)."""
        yield

    def commits_by_others(self) -> None:
        return None

    def own_writes(self) -> tuple[int, int]:
        return 0, 0

    def count_accesses_now(self, ids: list[str], now: str) -> bool:
        # Row locks only, so it never waits for the store's write lock. As SQLite's
        # synchronous=NORMAL for its counts: the commit does not wait for its WAL flush
        # (synchronous_commit off for this transaction only, set_config(..., true)),
        # ~1-2 ms of every recall on a server that flushes. A crash can lose the last few
        # hundred ms of counts, never more, never anything else.
        try:
            self.connection.execute(
                "UPDATE mem_nodes SET access_count = access_count + 1, last_accessed = ? "
                "FROM (SELECT set_config('synchronous_commit', 'off', true)) AS unsynced "
                "WHERE id = ANY (?)",  # one array: one statement text, prepared once
                [now, list(ids)],
            )
        except StoreError:  # DatabaseFault included: the counts are best effort
            pass
        return True

    def commit_bookkeeping(self, recalls: int = 1, *, closing: bool = False) -> None:
        self.connection.execute("COMMIT")  # never reached: counts are written at once

    def rebuild_search_index(self) -> None:
        """The search tables follow mem_nodes row by row; nothing to rebuild."""

    def size_bytes(self) -> int:
        row = self.connection.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c "
            "JOIN pg_namespace s ON s.oid = c.relnamespace "
            "WHERE s.nspname = current_schema() AND c.relkind IN ('r', 'm')"
        ).fetchone()
        return int(row[0])

    # How recall's access counts would be written in a batch: never here, as
    # count_accesses_now writes them at once; best effort, as those.

    def write_access_counts(
        self, rows: Sequence[tuple[int, str, str]], recalls: int, *, closing: bool = False
    ) -> bool:
        try:
            self.connection.executemany(
                "UPDATE mem_nodes SET access_count = access_count + ?, last_accessed = ? "
                "WHERE id = ?",
                rows,
            )
        except StoreError:  # DatabaseFault included: best effort
            return False
        return True

    def access_counts_writer(self) -> Callable[[Sequence[tuple[int, str, str]]], bool]:
        return lambda rows: True  # nothing is ever left pending


def refresh_statistics(conn: Connection) -> None:
    """After a bulk write: ANALYZE the tables the write path reads by key when the
    planner's row count of mem_nodes is under half the nodes indexed. psycopg prepares
    a statement run five times, and the server then keeps one generic plan for it, made
    with the statistics of that moment: on a fresh store's first batch, an empty table,
    where a sequential scan or any index is as cheap as the key's. Those plans stay
    after the table has grown (autovacuum analyses a minute later at best), and the next
    batch's lookups of an entity's alias or a session scanned every node (2-5 ms each
    instead of 0.1). ANALYZE invalidates them. Counted as autovacuum does, but on
    doubling, so a bulk load of n nodes analyses O(log n) times; inside the transaction,
    it sees the rows just written. A role that does not own the tables gets a warning, no error."""
    row = conn.execute(
        "SELECT c.reltuples, (SELECT rows FROM mem_search_totals) FROM pg_class c "
        "WHERE c.oid = 'mem_nodes'::regclass"
    ).fetchone()
    if row is not None and 2 * float(row[0]) < float(row[1]):
        conn.execute("ANALYZE mem_nodes, mem_aliases, mem_edges")


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)
