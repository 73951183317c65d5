"""What every storage engine offers the feature modules: the types they are written
against, so that one feature module runs on SQLite (sqlite/) and PostgreSQL
(postgres/) alike.

``Connection`` is the part of a DB-API connection the features use: ``execute`` and
``executemany`` with ``?`` placeholders, returning a cursor of plain tuples. SQLite's
own connection is one; PostgreSQL's is an adapter (postgres/) that maps ``?`` to the
driver's placeholders, a row the server refuses to nervamem's IntegrityViolation and a
lost server to a StoreError.

``Storage`` is the engine object (``sqlite.Storage``, ``postgres.PostgresStorage``):
the connection, write transactions, the clock and ID source, the namespace in use and
the active session, and the capabilities in which the engines differ: the text index
(text_index.py), the write generation that recall's node cache lives for, how a
recall's access counts are written, the SQL fragments that are not the same text on
both (``storage.sql``), bulk inserts, the preparation of a large write, the store's own
file if it has one. Feature modules take it, never a path or a URL, and never ask which
database they are on (tests/test_architecture.py counts the places that still do).

:func:`choose.open_storage` chooses the engine from the store's name: a
``postgresql://`` or ``postgres://`` URL is a PostgreSQL database, anything else an
SQLite file. The driver (psycopg) is imported only for a URL.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .dbapi import Connection as Connection
from .dbapi import Cursor as Cursor

if TYPE_CHECKING:
    from ..ids import RandomSource
    from ..state import State
    from .common import PendingWrites
    from .event_log import EventLog

# What a store asks for the time: a test passes a fixed one.
Clock = Callable[[], datetime]

SQLITE = "sqlite"
POSTGRESQL = "postgresql"


class SqlFragments(Protocol):
    """The pieces of SQL a feature's statement needs in each engine's own words
    (sqlite/sql.py, postgres/sql.py); the rest of the statement is the same text."""

    # The tail of an INSERT into mem_edges that leaves an edge already there alone.
    ignore_existing_edge: str
    # A JSON array parameter (``?``) as rows of one column ``q.value``.
    id_rows: str
    # For short IDs: per ID of ``{ids}``, the random parts of its neighbours in the
    # random-part index; ``{part}``, ``{value}`` and ``{ids}`` to be filled in.
    neighbour_parts: str

    def random_part(self, column: str) -> str:
        """The random part of the ID in ``column``, as the random-part index holds it."""
        ...

    def lower_ascii(self, column: str) -> str:
        """``column`` with ASCII letters folded and ordered byte by byte (as SQLite's
        NOCASE), so that both engines sort an export alike."""
        ...


class Storage(Protocol):
    """The public names of a storage engine (docs/architecture.md, "A storage engine")."""

    engine: str
    # The store as shown to people: a file's path, or a URL without its password.
    location: str
    # The local file that companion files (the code graph, state.yaml, events/) sit
    # beside: the store file itself for SQLite.
    path: Path
    clock: Callable[[], datetime]
    random: RandomSource
    namespace_override: str | None
    in_transaction: bool
    read_only: bool
    busy_timeout_ms: int
    events: EventLog | None
    # This connection wrote bookkeeping (a recall's access counts) outside a
    # transaction(); if that is all it wrote, SQLite's close() leaves it in the -wal for
    # the next writer to checkpoint (sqlite/).
    bookkeeping: bool
    # A recall's access counts not written yet (SQLite only; recall/access_counts.py).
    pending_counts: PendingWrites | None

    # The database runs in this process (SQLite): a query costs no round trip, so a
    # feature may ask again rather than keep what it asked (writing.py's entities).
    in_process: bool

    @property
    def connection(self) -> Connection: ...

    @property
    def sql(self) -> SqlFragments:
        """The fragments of SQL this engine says in its own words."""
        ...

    @property
    def store_file(self) -> Path | None:
        """The file that is the store (SQLite); None for a store on a server, which
        every agent reaches already (team memory's event files are for files)."""
        ...

    def insert_rows(
        self, head: str, rows: Sequence[tuple[Any, ...]], columns: int, tail: str = ""
    ) -> None:
        """INSERT ``rows`` of ``columns`` values each, as few statements as the engine
        does best: ``head`` ends with ``VALUES ``, ``tail`` (``ON CONFLICT ...``)
        follows the rows."""
        ...

    def prepare_bulk_write(self) -> None:
        """Before a write of many rows (store_many, an import of events)."""
        ...

    def refusals(self) -> AbstractContextManager[None]:
        """Inside it, a row the database refuses (a constraint or a trigger) raises
        nervamem's IntegrityViolation, on every engine: a feature that reports and skips
        such a row (an import's event) catches that, never a driver's class."""
        ...

    def transaction(self) -> AbstractContextManager[None]: ...

    def close(self) -> None: ...

    def flush_access_counts(self) -> None: ...

    def moment(self) -> datetime: ...

    def now(self) -> str: ...

    def new_id(self, kind: str) -> str: ...

    @property
    def state(self) -> State: ...

    @property
    def namespace(self) -> str: ...

    def namespace_for(self, namespace: str | None) -> str: ...

    def reload_state(self) -> State: ...

    def save_state(self, state: State) -> None: ...

    def scrub_files(self) -> str | None:
        """After a purge: leave no trace in the store's files; None, or why not (a
        warning: the purge itself committed)."""
        ...

    def secure_deletes(self) -> AbstractContextManager[None]: ...

    def rebuild_search_index(self) -> None: ...

    def size_bytes(self) -> int: ...

    # What recall's node cache (recall/node_cache.py) and access counts
    # (recall/access_counts.py) ask of the engine.

    def commits_by_others(self) -> int | None:
        """A number that moves whenever another connection commits to the store (SQLite's
        ``PRAGMA data_version``); None when a transaction is open on the connection, or on
        an engine whose reader cannot tell cheaply (PostgreSQL: a server's other clients
        write unseen). Recall keeps node rows between recalls only while this and
        :meth:`own_writes` stay the same."""
        ...

    def own_writes(self) -> tuple[int, int]:
        """(write transactions this Storage ended, committed or rolled back; rows its
        connection changed in all): together they move with every write of this
        connection."""
        ...

    def count_accesses_now(self, ids: list[str], now: str) -> bool:
        """Where the engine writes a recall's access counts at once (PostgreSQL: one
        statement of its own, row locks only, unsynced), add one access to each of
        ``ids``, best effort, and return True; False where recalls' counts wait in
        memory and are written in batches (SQLite, recall/access_counts.py)."""
        ...

    def commit_bookkeeping(self, recalls: int = 1, *, closing: bool = False) -> None:
        """COMMIT the access counts of ``recalls`` recalls, begun outside transaction()
        (by :meth:`write_access_counts`); ``closing``: the last such commit, from close()."""
        ...

    def write_access_counts(
        self, rows: Sequence[tuple[int, str, str]], recalls: int, *, closing: bool = False
    ) -> bool:
        """Write recalls' batched access counts, ``rows`` of (accesses to add, the time
        of the last, node ID), in a transaction of their own that does not wait for a
        sync (the :meth:`commit_bookkeeping` of ``recalls`` recalls); whether it
        committed. Best effort: False leaves them pending (recall/access_counts.py)."""
        ...

    def access_counts_writer(self) -> Callable[[Sequence[tuple[int, str, str]]], bool]:
        """:meth:`write_access_counts` for a finalizer: holds the connection, not this
        Storage, commits plainly and raises nothing."""
        ...


def dialect_of(conn: Connection) -> str:
    """The engine whose SQL ``conn`` speaks, for a function that has the connection
    only: ``sqlite3.Connection`` has no ``engine``; postgres/'s adapter has."""
    return str(getattr(conn, "engine", SQLITE))


def one_of(conn: Connection, column: str, values: Sequence[object]) -> tuple[str, list[object]]:
    """SQL for ``column`` being one of ``values``, and its parameters: ``IN (?,?,...)``
    on SQLite, ``= ANY (?)`` with one array on PostgreSQL, where a statement text per
    list length would be parsed and planned by the server on every call; one text is
    prepared once per connection (psycopg prepares a statement run five times)."""
    if dialect_of(conn) == POSTGRESQL:
        return f"{column} = ANY (?)", [list(values)]
    return f"{column} IN ({','.join('?' * len(values))})", list(values)


def is_url(name: str | os.PathLike[str] | None) -> bool:
    from ..locate import is_store_url

    return is_store_url(name)
