"""How SQLite writes recall's batched access counts (recall/access_counts.py): one
transaction of their own, unsynced, waiting at most 2 s for the write lock.

Best effort: a count is bookkeeping, and a read never fails because the store is
read-only or briefly locked; the counts stay pending for the next flush.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

from ..dbapi import Connection

# (accesses to add, the time of the last, node ID)
CountRow = tuple[int, str, str]

_UPDATE_MANY = (
    "UPDATE mem_nodes SET access_count = access_count + ?, last_accessed = ? WHERE id = ?"
)


def write_counts(
    conn: Connection,
    rows: Sequence[CountRow],
    busy_timeout_ms: int | None,
    commit: Callable[[], None] | None,
) -> bool:
    """UPDATE ``rows`` in one transaction; whether it committed. ``commit``: how the store
    commits it (None: a plain COMMIT, from a finalizer); ``busy_timeout_ms``: the
    store's, restored after (None: read from the connection)."""
    synchronous = conn.execute("PRAGMA synchronous").fetchone()[0]
    if busy_timeout_ms is None:
        busy_timeout_ms = int(conn.execute("PRAGMA busy_timeout").fetchone()[0])
    try:
        conn.execute("PRAGMA busy_timeout = 2000")
        # An access count is not worth an fsync (~4 ms, more than the whole recall):
        # NORMAL commits it to the WAL unsynced; the next synced commit or checkpoint
        # makes it durable, and a power cut can at worst lose the count.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(_UPDATE_MANY, rows)
        if commit is None:
            conn.execute("COMMIT")
        else:
            commit()
        return True
    except sqlite3.Error:
        if getattr(conn, "in_transaction", False):  # sqlite3.Connection's
            conn.execute("ROLLBACK")
        return False
    finally:
        conn.execute(f"PRAGMA synchronous = {int(synchronous)}")
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")


def write_counts_left(conn: Connection, rows: Sequence[CountRow]) -> bool:
    """:func:`write_counts` from the finalizer of a store collected or left open at exit:
    a plain COMMIT, and no error (e.g. a connection closed behind the store's back)."""
    try:
        return write_counts(conn, rows, None, None)
    except sqlite3.Error:
        return False
