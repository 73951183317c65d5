"""Access counts: recall adds one to ``access_count`` (and sets ``last_accessed``) of the
memories it returns, the frequency factor of later recalls (recall/scoring.py).

This is the one write a recall makes. It is bookkeeping, best effort: a read never fails
because the store is read-only or briefly locked, and the count is not worth an fsync.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, cast

from ..errors import StoreError
from ..storage.engine import SQLITE
from .node_cache import counted

if TYPE_CHECKING:
    from ..storage.engine import Storage
    from ..storage.sqlite import Storage as SQLiteStorage


def count_accesses(storage: Storage, ids: list[str]) -> None:
    """Count the access of the returned nodes only. A read must not fail because the
    store is read-only or briefly locked, so this bookkeeping is best effort."""
    if not ids or storage.read_only:
        return
    conn = storage.connection
    now = storage.now()
    sql = "UPDATE mem_nodes SET access_count = access_count + 1, last_accessed = ? WHERE id = ?"
    rows = [(now, node_id) for node_id in ids]
    if storage.in_transaction:
        # Inside the caller's batch: its transaction commits this too. BEGIN here would
        # fail, and the ROLLBACK below would throw away the caller's writes.
        conn.executemany(sql, rows)
        return
    if storage.engine != SQLITE:
        # A server: one statement, its own transaction; row locks only, so it never
        # waits for the store's write lock (postgres.py). As SQLite's synchronous=NORMAL
        # below: the commit does not wait for its WAL flush (synchronous_commit off for
        # this transaction only, set_config(..., true)), ~1-2 ms of every recall on a
        # server that flushes. A crash can lose the last few hundred ms of counts,
        # never more, and never anything else: the database stays consistent, and every
        # other write still waits for its flush.
        try:
            conn.execute(
                "UPDATE mem_nodes SET access_count = access_count + 1, last_accessed = ? "
                "FROM (SELECT set_config('synchronous_commit', 'off', true)) AS unsynced "
                "WHERE id = ANY (?)",  # one array: one statement text, prepared once
                [now, list(ids)],
            )
        except (sqlite3.Error, StoreError):
            pass
        return
    synchronous = conn.execute("PRAGMA synchronous").fetchone()[0]
    try:
        conn.execute("PRAGMA busy_timeout = 2000")
        # An access count is not worth an fsync (~4 ms, more than the whole recall):
        # NORMAL commits it to the WAL unsynced; the next synced commit or checkpoint
        # makes it durable, and a power cut can at worst lose the count.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("BEGIN IMMEDIATE")
        storage.bookkeeping = True  # written outside a transaction(): see sqlite.close()
        conn.executemany(sql, rows)
        cast("SQLiteStorage", storage).commit_bookkeeping()
        counted(storage, ids)  # the cached rows hold the new counts too
    except sqlite3.Error:
        if getattr(conn, "in_transaction", False):  # sqlite3.Connection's
            conn.execute("ROLLBACK")
    finally:
        conn.execute(f"PRAGMA synchronous = {int(synchronous)}")
        conn.execute(f"PRAGMA busy_timeout = {storage.busy_timeout_ms}")
