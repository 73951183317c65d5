"""A WAL checkpoint off the path of recall, for a process that recalls many times.

Recalls commit their access counts (recall/access_counts.py, several recalls at once): on
a large store the ~15-20 pages of the rows each returned go into the -wal. SQLite's
automatic checkpoint copies the -wal back into the file once it passes 1000 pages,
inside the commit that crossed the mark and with two fsyncs: every ~50th recall paid
10-20 ms for it (the slowest recalls at 100k, bench/results.md, "Warm recall"). A store
that keeps recalling
(the MCP server, an agent's long-lived process, a benchmark) hands that checkpoint to a
thread with a connection of its own instead, every CHECKPOINT_EVERY recalls counted,
while recall goes on: the checkpoint's I/O runs with the GIL released.

Invariants a reader must not break:
* It is SQLite's own checkpoint, PASSIVE like the automatic one: it never waits for a
  reader or a writer and never blocks one. A committed write is never lost (the -wal
  keeps every frame until a later writer restarts it after a complete checkpoint), and
  a process killed during it leaves a consistent store.
* Only the access counts' commit goes without the automatic checkpoint (sqlite/__init__.py,
  ``commit_bookkeeping``); every other write keeps it.
* A store that commits counts once, or only at close (a one-shot CLI ``recall``), never
  starts the thread.
* Closing stops the thread before the store's connection closes, after the checkpoint
  under way or asked for: at most one, and only in a process that recalled
  CHECKPOINT_EVERY times since the last.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

# Recalls counted between two checkpoints: ~1000 pages of a 100k store's -wal (15-20
# pages a recall), the cadence of SQLite's automatic checkpoint there; fewer pages and
# fsyncs on a small store, where a recall rewrites a few pages.
CHECKPOINT_EVERY = 50


class Checkpointer:
    """A thread that checkpoints the WAL of the store at ``path`` when asked to."""

    def __init__(self, path: str, prepare: Callable[[sqlite3.Connection], None]) -> None:
        import threading  # only in a process that recalls more than once

        self._path = path
        # Run on the thread's connection before it closes (sqlite/__init__.py passes what keeps
        # the close from checkpointing: the store's own connection may still be open).
        self._prepare = prepare
        self._wake = threading.Event()
        self._pending = False
        self._closing = False
        self._failed = False
        # A daemon: a store left open when the interpreter exits must not hold the exit
        # up; being stopped mid-checkpoint is as safe as being killed.
        self._thread = threading.Thread(target=self._run, name="nervamem-checkpoint", daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        """Whether requests are served: False once closed, when the thread could not
        open its connection, or in a forked child (no thread there): then the automatic
        checkpoint must stay on."""
        return not self._closing and not self._failed and self._thread.is_alive()

    def request(self) -> None:
        """Checkpoint soon; a request made during a checkpoint makes one more."""
        self._pending = True
        self._wake.set()

    def close(self) -> None:
        self._closing = True
        self._wake.set()
        self._thread.join()

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error:
            self._failed = True
            return
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._pending:
                    self._pending = False
                    try:
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    except sqlite3.Error:
                        pass  # e.g. another connection's checkpoint under way: next time
                if self._closing:
                    break
        finally:
            self._prepare(conn)
            conn.close()
