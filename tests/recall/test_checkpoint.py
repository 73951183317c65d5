"""A process that recalls many times checkpoints the access counts' WAL in a thread of
its own (storage/checkpoint.py), never inside a recall; a one-shot recall starts no
thread; a killed process leaves a consistent store with every committed write (and the
access counts flushed before it was killed: recall/access_counts.py)."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from nervamem import MemoryStore
from nervamem.recall import access_counts
from nervamem.recall.access_counts import FLUSH_EVERY
from nervamem.storage.sqlite.checkpoint import CHECKPOINT_EVERY

pytestmark = pytest.mark.sqlite_only  # about SQLite's -wal file

THREAD = "nervamem-checkpoint"


def _checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD]


def _counts_in_file_alone(db_path: Path) -> dict[str, int]:
    """The access counts the database file holds without its -wal."""
    uri = f"{db_path.resolve().as_uri()}?immutable=1"
    with closing(sqlite3.connect(uri, uri=True)) as conn:
        return dict(conn.execute("SELECT id, access_count FROM mem_nodes").fetchall())


def test_one_recall_starts_no_thread(make_store: Callable[..., MemoryStore]) -> None:
    memory = make_store()
    memory.store("fact", "redis is the session cache")
    before = len(_checkpoint_threads())
    memory.recall("redis cache")
    assert len(_checkpoint_threads()) == before
    memory.close()


def test_recalls_checkpoint_in_a_thread_that_close_stops(
    make_store: Callable[..., MemoryStore], db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Access counts reach the file itself (not only the -wal) while the store stays
    open and only recalls: a checkpoint ran, and not at close (a store that wrote only
    counts does not checkpoint when it closes: test_recall.py)."""
    monkeypatch.setattr(access_counts, "FLUSH_AFTER", 3600.0)  # flushes by count only
    writer = make_store()
    shown = writer.store("fact", "redis is the session cache")
    writer.close()
    reader = make_store()
    # The automatic checkpoint cannot be what moves them: it is off for these commits,
    # and would in any case wait for 1000 pages. Two flushes at least (the thread starts
    # at the second), the last one past CHECKPOINT_EVERY recalls.
    flushes = max(2, -(-CHECKPOINT_EVERY // FLUSH_EVERY))
    for _ in range(flushes * FLUSH_EVERY):
        assert [item.id for item in reader.recall("redis cache").items] == [shown]
    assert len(_checkpoint_threads()) == 1
    reader.close()  # waits for the checkpoint asked for at the last recall
    assert not _checkpoint_threads()
    assert _counts_in_file_alone(db_path)[shown] == flushes * FLUSH_EVERY
    with MemoryStore(db_path) as again:
        assert again.get(shown).access_count == flushes * FLUSH_EVERY


def test_counts_written_at_close_ask_for_no_checkpoint(
    make_store: Callable[..., MemoryStore], db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second commit of counts, made by close(), starts no thread: the counts stay
    in the -wal for the next writer, as those of a one-shot recall."""
    monkeypatch.setattr(access_counts, "FLUSH_AFTER", 3600.0)
    memory = make_store()
    shown = memory.store("fact", "redis is the session cache")
    for _ in range(FLUSH_EVERY + 1):
        memory.recall("redis cache")
    assert not _checkpoint_threads()
    memory.close()
    assert not _checkpoint_threads()
    with MemoryStore(db_path) as again:
        assert again.get(shown).access_count == FLUSH_EVERY + 1


def test_other_writes_keep_the_automatic_checkpoint(
    make_store: Callable[..., MemoryStore],
) -> None:
    """Only the counts' commit goes without it, and it is put back after each one."""
    memory = make_store()
    memory.store("fact", "redis is the session cache")
    conn = memory.storage.connection
    conn.execute("PRAGMA wal_autocheckpoint = 7")
    for _ in range(3):
        memory.recall("redis cache")
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 7
    memory.close()


_RECALL_FOREVER = """
import sys
from nervamem import MemoryStore
memory = MemoryStore(sys.argv[1])
n = 0
while True:
    memory.recall("redis cache")
    n += 1
    if n == 3 * int(sys.argv[2]):
        print("ready", flush=True)
"""


@contextmanager
def killed_once_ready(script: str, db_path: Path, number: int) -> Iterator[sqlite3.Connection]:
    """Run ``script`` (argv: the store, ``number``) until it prints "ready", SIGKILL it,
    and open the store it leaves, checked for integrity."""
    with subprocess.Popen(
        [sys.executable, "-c", script, str(db_path), str(number)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready"
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait()
    with closing(sqlite3.connect(db_path)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        yield conn


def test_a_killed_recalling_process_leaves_a_consistent_store(
    make_store: Callable[..., MemoryStore], db_path: Path
) -> None:
    """SIGKILL while recalling (a checkpoint may be under way in its thread): the store
    passes an integrity check, holds every memory and every count committed before."""
    memory = make_store()
    ids = [memory.store("fact", f"redis cache note number {n}") for n in range(30)]
    memory.close()
    with killed_once_ready(_RECALL_FOREVER, db_path, CHECKPOINT_EVERY) as conn:
        counts = dict(conn.execute("SELECT id, access_count FROM mem_nodes").fetchall())
    assert set(ids) <= set(counts)
    # Every flush before "ready" committed the counts of FLUSH_EVERY recalls (at least
    # one memory each); those of the recalls after the last flush may be lost.
    flushed = 3 * CHECKPOINT_EVERY // FLUSH_EVERY * FLUSH_EVERY
    assert sum(counts[node_id] for node_id in ids) >= flushed
    with MemoryStore(db_path) as again:
        assert {item.id for item in again.recall("redis cache note").items} <= set(ids)
