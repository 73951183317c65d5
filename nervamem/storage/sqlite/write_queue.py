"""Writers take turns: a fair queue in front of SQLite's write lock.

SQLite's busy handler is not fair. A writer that finds the lock taken sleeps with a
growing back-off (1, 2, 5 ... 100 ms) and tries again, so a process that commits in a
loop takes the lock again long before a sleeper wakes up, and a one-shot ``nervamem
store`` can wait out the whole busy timeout behind it (issue 19). So writers first take
kernel locks (``flock``) on two empty files beside the store:

* ``<db>-lock`` is held for the whole write transaction. A writer that finds it taken
  waits in a blocking ``flock``: the kernel keeps such waiters in line and wakes the
  first when the lock is released, where SQLite's polling starts the race again.
* ``<db>-queue`` is the gate in front of that line: nobody asks for ``<db>-lock``
  without passing it. A writer that has waited longer than ``PATIENCE`` holds it until
  its turn comes, and then nobody new joins the line or takes the lock out of turn (as
  the writer that has just committed and is still on the CPU would: the kernel does not
  keep a released lock for the waiter it wakes). The writers already in line are
  served in order, the one that insisted among them; the others queue at the gate.

Strict turns from the first wait would be fairer still, but on a busy machine a
hand-over waits for the next writer to be scheduled, far longer than a write. So while
nobody has waited ``PATIENCE`` the lock is taken out of turn, and a writer whose turn
came in line keeps it for ``TENURE``: between its writes for ``LINGER`` (a helper thread
lets go when no write comes), or by taking it out of turn. A writer therefore waits at
most about ``PATIENCE`` plus, for each writer ahead of it in line, a hand-over and
``TENURE``; and the busy timeout, whatever happens.

Invariants a change must keep:

* The queue is a courtesy, never what keeps writes apart: every write still takes
  SQLite's own lock (``BEGIN IMMEDIATE``). Where the files cannot be used (a folder the
  writer may not create files in, no ``flock``), writes go on without the queue.
* A killed process never leaves the queue held: ``flock`` locks belong to open files,
  which the kernel closes when a process dies. The files are never deleted (deleting a
  lock file that someone waits on would split the line in two) and stay empty.
* No wait outlasts the deadline it is given (the busy timeout); a writer that gives up
  leaves the line: its waiting thread releases the lock as soon as it gets it.
* Readers never touch these files: a read-only store needs none of them.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if sys.platform != "win32":  # no flock there: writes go on with SQLite's lock alone
    import fcntl
if TYPE_CHECKING:
    import threading

QUEUE, LOCK = 0, 1
SUFFIXES = ("-queue", "-lock")  # .gitignore lists both (*.db-queue, *.db-lock)
# How long a waiting writer lets others take the lock out of turn before it insists on
# its turn, and how long a writer whose turn came may keep taking it out of turn.
PATIENCE = 0.1
TENURE = 0.05
# How long a writer in its tenure keeps the lock after a write, waiting for its next one.
LINGER = 0.005


class WriteQueue:
    """The two lock files of one store, opened at the first write and kept open."""

    def __init__(self, db_path: Path) -> None:
        self.paths = tuple(f"{db_path}{suffix}" for suffix in SUFFIXES)
        self._fds: list[int | None] = [None, None]
        self._usable = True
        self.holding = False
        self._tenure_until = 0.0
        self._keeper: _TurnKeeper | None = None

    def take_turn(self, deadline: float) -> bool:
        """Wait until it is this writer's turn, at most until ``deadline`` (a
        ``time.monotonic()`` value). True: write now (the turn came, or the queue cannot
        be used here); False: the deadline passed first, and nothing is held."""
        if self._keeper is not None and self._keeper.resume():
            self.holding = True
            return True
        if not self._open():
            return True
        try:
            self.holding = self._take_turn(deadline)
        except OSError:  # e.g. ENOLCK on a file system without locks
            self.close()
            self._usable = False
            return True
        except BaseException:
            self.close()  # closing releases whatever was held
            raise
        return self.holding

    def end_turn(self) -> None:
        if not self.holding:
            return
        self.holding = False
        now = time.monotonic()
        if now < self._tenure_until:
            if self._keeper is None:
                self._keeper = _TurnKeeper(self._release)
            self._keeper.keep(min(now + LINGER, self._tenure_until))
        else:
            self._release()

    def close(self) -> None:
        if self._keeper is not None:
            self._keeper.stop()
            self._keeper = None
        self.holding = False
        for index, fd in enumerate(self._fds):
            if fd is not None:
                self._fds[index] = None
                os.close(fd)

    def _take_turn(self, deadline: float) -> bool:
        started = time.monotonic()
        if started < self._tenure_until and self._flock(LOCK, fcntl.LOCK_EX | fcntl.LOCK_NB):
            return True
        # Nobody asks for the lock without passing QUEUE, which a writer that has waited
        # longer than PATIENCE holds until its turn comes: meanwhile the lock goes to the
        # writers already in line, in order, and to nobody else.
        if not self._flock(QUEUE, fcntl.LOCK_EX | fcntl.LOCK_NB) and not self._wait_for(
            QUEUE, deadline
        ):
            return False
        try:
            if self._flock(LOCK, fcntl.LOCK_EX | fcntl.LOCK_NB):
                return True
        finally:
            self._flock(QUEUE, fcntl.LOCK_UN)
        return self._wait_in_line(started + PATIENCE, deadline)

    def _wait_in_line(self, insist_at: float, deadline: float) -> bool:
        import threading

        changed = threading.Event()
        turn = _LockWaiter(self.paths[LOCK], changed)
        gate: _LockWaiter | None = None  # waiting for QUEUE, to insist
        insisting = adopted = False
        try:
            while not turn.done:
                if gate is not None and gate.done:
                    waited, gate = gate, None
                    self._adopt(QUEUE, waited)
                    insisting = True
                now = time.monotonic()
                if now >= deadline:
                    return False
                if not insisting and gate is None and now >= insist_at:
                    if self._flock(QUEUE, fcntl.LOCK_EX | fcntl.LOCK_NB):
                        insisting = True
                    else:  # another writer insists: ours is the next turn to insist on
                        gate = _LockWaiter(self.paths[QUEUE], changed)
                    continue
                changed.wait((deadline if insisting or gate else min(deadline, insist_at)) - now)
                changed.clear()
            adopted = True
            self._adopt(LOCK, turn)
            self._tenure_until = time.monotonic() + TENURE
            return True
        finally:
            if not adopted:
                turn.abandon()
            if gate is not None:
                gate.abandon()
            if insisting:
                self._flock(QUEUE, fcntl.LOCK_UN)

    def _wait_for(self, index: int, deadline: float) -> bool:
        waiter = _LockWaiter(self.paths[index])
        if not waiter.wait(deadline):
            waiter.abandon()
            return False
        self._adopt(index, waiter)
        return True

    def _adopt(self, index: int, waiter: _LockWaiter) -> None:
        """The waiter's descriptor, which holds the lock now, replaces ours."""
        if waiter.error is not None:
            waiter.abandon()
            raise waiter.error
        old, self._fds[index] = self._fds[index], waiter.fd
        if old is not None:
            os.close(old)

    def _open(self) -> bool:
        if sys.platform == "win32" or not self._usable:
            return False
        try:
            for index, path in enumerate(self.paths):
                if self._fds[index] is None:
                    # Read-only is enough for flock, and lets other accounts that share
                    # the store (and may read it) take their turn too.
                    self._fds[index] = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
        except OSError:
            self.close()
            self._usable = False
            return False
        return True

    def _release(self) -> None:
        with contextlib.suppress(OSError):  # only a closed descriptor fails: nothing held
            self._flock(LOCK, fcntl.LOCK_UN)

    def _flock(self, index: int, operation: int) -> bool:
        """False when a non-blocking lock is taken by someone else."""
        fd = self._fds[index]
        assert fd is not None
        try:
            fcntl.flock(fd, operation)
        except BlockingIOError:
            return False
        return True


class _TurnKeeper:
    """Keeps the turn of a writer in its tenure for ``LINGER`` after each write, so that
    its next write does not race the woken waiter for the lock (a race the writer on the
    CPU loses about as often as it wins on two cores). A helper thread lets the lock go
    when no write came in time (``end_turn`` cannot: the caller may never write again)."""

    def __init__(self, release: Callable[[], None]) -> None:
        import threading

        self._release = release
        self._changed = threading.Condition()
        self._until: float | None = None  # kept until then; None: not kept
        self._stopped = False
        threading.Thread(target=self._run, name="nervamem-write-turn", daemon=True).start()

    def keep(self, until: float) -> None:
        with self._changed:
            self._until = until
            self._changed.notify()

    def resume(self) -> bool:
        """True when the turn was still kept: the caller holds the lock again."""
        with self._changed:
            kept, self._until = self._until is not None, None
            return kept

    def stop(self) -> None:
        with self._changed:
            self._until = None
            self._stopped = True
            self._changed.notify()

    def _run(self) -> None:
        with self._changed:
            while not self._stopped:
                left = None if self._until is None else self._until - time.monotonic()
                if left is None or left > 0:
                    self._changed.wait(left)
                else:
                    self._until = None
                    self._release()


class _LockWaiter:
    """A blocking flock on a new descriptor of ``path``, in a helper thread because flock
    has no timeout. (Polling with LOCK_NB instead would give up the place in line.)
    ``done`` once the lock is held or the wait failed (``error``); ``changed`` is set
    then."""

    def __init__(self, path: str, changed: threading.Event | None = None) -> None:
        import threading

        self.fd = os.open(path, os.O_RDONLY)
        self.error: OSError | None = None
        self.done = False
        self._changed = changed or threading.Event()
        self._guard = threading.Lock()
        self._abandoned = False
        threading.Thread(target=self._wait, name="nervamem-write-queue", daemon=True).start()

    def wait(self, until: float) -> bool:
        while not self.done:
            if not self._changed.wait(max(until - time.monotonic(), 0)):
                return self.done
        return True

    def abandon(self) -> None:
        """Leave the line. The thread closes its descriptor when the lock comes, which
        passes the lock on at once."""
        with self._guard:
            self._abandoned = True
            if not self.done:
                return
        os.close(self.fd)  # the thread is done with it

    def _wait(self) -> None:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except OSError as exc:
            self.error = exc
        with self._guard:
            if not self._abandoned:
                self.done = True
                self._changed.set()
                return
        os.close(self.fd)
