"""Writers take turns (issue 19): a process that commits in a loop cannot keep a one-shot
``nervamem store`` waiting until its busy timeout runs out. The queue in front of the
write lock (nervamem/write_queue.py) is bounded by the busy timeout like SQLite's own
wait, passes on the turn of a writer that gave up, never outlives a killed process, and
is never needed by a reader.

``python bench/stress.py --only mixed`` is the long version (16 and 32 writers).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from nervamem import MemoryStore
from nervamem.errors import StoreLockedError
from nervamem.storage.sqlite.write_queue import PATIENCE, WriteQueue

from . import harness

LOCK_FILES = ("memory.db-queue", "memory.db-lock")


def test_one_shot_writers_get_their_turn(tmp_path: Path, env: dict[str, str], seed: int) -> None:
    """Six long-lived API writers store in a tight loop while two threads run one-shot
    ``nervamem store`` processes one after the other, all with a 2 s busy timeout: every
    store gets through. With SQLite's busy handler alone, the loops took the lock again
    before a sleeping writer woke up: every run had stores that failed with 'locked'."""
    db = tmp_path / "store" / "memory.db"
    report = harness.mixed_load(
        db,
        env={**env, "NERVAMEM_BUSY_TIMEOUT_MS": "2000"},
        cli_writers=2,
        api_writers=6,
        readers=1,
        seconds=8,
        seed=seed,
    )
    problems = harness.check_run(db, report)
    assert problems == [], f"seed {seed}: {problems}"
    one_shots = [r for r in report.records if r.op == "store" and r.extra.get("kind") == "cli"]
    loops = [r for r in report.records if r.op == "store" and r.extra.get("kind") == "api"]
    assert len(one_shots) >= 6 and len(loops) >= 100, (len(one_shots), len(loops))


def test_a_writer_in_a_loop_cannot_overtake_one_that_waited(tmp_path: Path) -> None:
    """The queue's rule, without the timing of a load: a writer that has waited longer
    than PATIENCE is served before a writer that ends its turn and asks again at once
    (as a loop does, still on the CPU). Without the rule the loop often wins that race:
    the kernel wakes the waiter, but the lock is free until the waiter runs."""
    db = tmp_path / "memory.db"
    loop, waiter = WriteQueue(db), WriteQueue(db)
    overtaken = 0
    try:
        for _ in range(10):
            assert loop.take_turn(time.monotonic() + 5)
            served = threading.Event()

            def wait_for_turn(served: threading.Event = served) -> None:
                if waiter.take_turn(time.monotonic() + 5):
                    served.set()
                    waiter.end_turn()

            thread = threading.Thread(target=wait_for_turn)
            thread.start()
            time.sleep(min(PATIENCE, 1.0) + 0.1)  # the waiter insists on its turn by now
            loop.end_turn()
            if loop.take_turn(time.monotonic() + 5) and not served.is_set():
                overtaken += 1
            loop.end_turn()
            thread.join()
            assert served.is_set()
    finally:
        loop.close()
        waiter.close()
    assert overtaken == 0, f"a writer in a loop overtook a waiting one {overtaken} times in 10"


def _hold_turn_in_batch(db: Path, held: threading.Event, release: threading.Event) -> None:
    with MemoryStore(db) as memory, memory.batch():
        memory.store("fact", "written by the writer whose turn it is")
        held.set()
        release.wait(30)


def test_the_busy_timeout_bounds_the_wait_in_the_queue(tmp_path: Path, env: dict[str, str]) -> None:
    """A nervamem writer keeps its turn (a long batch) past another writer's busy timeout:
    that writer gives up after about that time, with the usual one line (store_locked in
    JSON), and writes nothing."""
    db = tmp_path / "store" / "memory.db"
    assert harness.run_fresh(["--db", str(db), "store", "fact", "seed"], env=env)[0] == 0
    before = harness.logical_dump(db)
    held, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_turn_in_batch, args=(db, held, release))
    holder.start()
    try:
        assert held.wait(10)
        quick = {**env, "NERVAMEM_BUSY_TIMEOUT_MS": "300"}
        code, out, err, secs = harness.run_fresh(
            ["--db", str(db), "store", "fact", "must not be written"], env=quick
        )
        json_code, _, json_err, _ = harness.run_fresh(
            ["--db", str(db), "--format", "json", "store", "fact", "nor this"], env=quick
        )
        after = harness.logical_dump(db)
    finally:
        release.set()
        holder.join()
    assert (code, out) == (1, "")
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "locked" in lines[0] and "nothing was written" in lines[0], err
    assert secs < 10
    assert json_code == 1 and '"code": "store_locked"' in json_err
    assert after == before


def test_a_writer_that_gave_up_passes_its_turn_on(tmp_path: Path) -> None:
    """A writer that timed out in the queue leaves it: once the writer ahead is done,
    it and the others write at once (its abandoned wait does not keep the lock)."""
    db = tmp_path / "store" / "memory.db"
    with MemoryStore(db) as ahead, MemoryStore(db, busy_timeout_ms=200) as waiter:
        with ahead.batch():
            ahead.store("fact", "a long batch")
            started = time.monotonic()
            with pytest.raises(StoreLockedError):
                waiter.store("fact", "gives up")
            assert time.monotonic() - started < 5
        with MemoryStore(db, busy_timeout_ms=2000) as other:
            started = time.monotonic()
            other.store("fact", "next in line")
            waiter.store("fact", "tries again")
            ahead.store("fact", "and again")
            assert time.monotonic() - started < 1.5
        assert waiter.stats().nodes.get("fact") == 4


def test_a_killed_writer_leaves_no_lock_behind(tmp_path: Path, env: dict[str, str]) -> None:
    """SIGKILL while a writer holds its turn: the kernel releases the queue's locks with
    the process, so the next writer does not wait for a busy timeout."""
    db = tmp_path / "store" / "memory.db"
    assert harness.run_fresh(["--db", str(db), "store", "fact", "seed"], env=env)[0] == 0
    script = (
        "import sys, time\n"
        "from nervamem import MemoryStore\n"
        "memory = MemoryStore(sys.argv[1])\n"
        "with memory.batch():\n"
        "    memory.store('fact', 'never committed')\n"
        "    print('holding', flush=True)\n"
        "    time.sleep(60)\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script, str(db)], stdout=subprocess.PIPE, env=env
    ) as proc:
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == b"holding"
        finally:
            proc.send_signal(signal.SIGKILL)
    code, out, err, secs = harness.run_fresh(
        ["--db", str(db), "store", "fact", "after the kill"], env=env
    )
    assert (code, err) == (0, "")
    assert secs < 5, "the next writer waited for a lock the dead process left"
    contents = set(harness.inspect_store(db).contents.values())
    assert "after the kill" in contents and "never committed" not in contents


def test_readers_need_no_lock_files(tmp_path: Path, env: dict[str, str]) -> None:
    """Only a write creates the queue's files; creating the store and reading it do not
    (a read-only store never needs them)."""
    db = tmp_path / "store" / "memory.db"
    assert harness.run_fresh(["--db", str(db), "init"], env=env)[0] == 0
    for args in (["recall", "anything"], ["timeline", "anything"], ["stats"]):
        assert harness.run_fresh(["--db", str(db), *args], env=env)[0] == 0, args
    assert not any((db.parent / name).exists() for name in LOCK_FILES)
    assert harness.run_fresh(["--db", str(db), "store", "fact", "x"], env=env)[0] == 0
    assert all((db.parent / name).stat().st_size == 0 for name in LOCK_FILES)
