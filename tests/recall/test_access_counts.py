"""A SQLite store's access counts wait in memory and are written for several recalls at
once (recall/access_counts.py): this process sees them at once, in recall's ranking and
in every read that shows them; the database gets them after FLUSH_EVERY recalls or
FLUSH_AFTER seconds, before any write of the store, at close, and when the store is
collected or the interpreter exits while it is open."""

from __future__ import annotations

import gc
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from nervamem import MemoryStore
from nervamem.recall import access_counts
from nervamem.recall.access_counts import FLUSH_EVERY

from ..conftest import CountingRandom, FakeClock
from .test_checkpoint import killed_once_ready

pytestmark = pytest.mark.sqlite_only  # PostgreSQL writes them at once: test_postgres_*


def committed(db_path: Path, node_id: str) -> int:
    """The access count another connection reads."""
    with closing(sqlite3.connect(db_path)) as conn:
        row = conn.execute("SELECT access_count FROM mem_nodes WHERE id = ?", (node_id,))
        return int(row.fetchone()[0])


@pytest.fixture(autouse=True)
def _no_flush_by_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Flushes by count only, whatever the machine's speed (one test sets it back)."""
    monkeypatch.setattr(access_counts, "FLUSH_AFTER", 3600.0)


def test_counts_wait_for_close(make_store: Callable[..., MemoryStore], db_path: Path) -> None:
    memory = make_store()
    shown = memory.store("fact", "redis is the session cache")
    for _ in range(3):
        memory.recall("redis cache")
    assert committed(db_path, shown) == 0  # pending: no transaction per recall
    memory.close()
    assert committed(db_path, shown) == 3


def test_counts_written_after_flush_every_recalls(
    make_store: Callable[..., MemoryStore], db_path: Path
) -> None:
    memory = make_store()
    shown = memory.store("fact", "redis is the session cache")
    for _ in range(FLUSH_EVERY - 1):
        memory.recall("redis cache")
    assert committed(db_path, shown) == 0
    memory.recall("redis cache")
    assert committed(db_path, shown) == FLUSH_EVERY
    memory.recall("redis cache")
    assert committed(db_path, shown) == FLUSH_EVERY


def test_counts_written_once_the_oldest_waited_flush_after(
    make_store: Callable[..., MemoryStore], db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seconds = [100.0]
    monkeypatch.setattr(access_counts, "FLUSH_AFTER", 1.0)
    monkeypatch.setattr(access_counts, "monotonic", lambda: seconds[0])
    memory = make_store()
    shown = memory.store("fact", "redis is the session cache")
    memory.recall("redis cache")
    seconds[0] += 0.9
    memory.recall("redis cache")
    assert committed(db_path, shown) == 0
    seconds[0] += 0.1  # the first recall's count waited 1 s
    memory.recall("redis cache")
    assert committed(db_path, shown) == 3
    memory.recall("redis cache")  # the clock starts again at the next recall
    seconds[0] += 0.5
    memory.recall("redis cache")
    assert committed(db_path, shown) == 3


def test_a_flush_shows_them_to_another_connection(
    make_store: Callable[..., MemoryStore], db_path: Path
) -> None:
    memory = make_store()
    shown = memory.store("fact", "redis is the session cache")
    memory.recall("redis cache")
    memory.recall("redis cache")
    memory.storage.flush_access_counts()
    assert committed(db_path, shown) == 2
    with closing(sqlite3.connect(db_path)) as conn:
        last = conn.execute("SELECT last_accessed FROM mem_nodes WHERE id = ?", (shown,))
        assert last.fetchone()[0] is not None


def test_reads_in_this_process_see_them_at_once(make_store: Callable[..., MemoryStore]) -> None:
    memory = make_store()
    shown = memory.store("fact", "redis is the session cache")
    memory.recall("redis cache")
    assert memory.get(shown).access_count == 1
    memory.recall("redis cache")
    count = memory.connection.execute("SELECT access_count FROM mem_nodes WHERE id = ?", (shown,))
    assert count.fetchone()[0] == 2


def test_last_accessed_is_the_last_recalls_time(
    make_store: Callable[..., MemoryStore], db_path: Path
) -> None:
    """As if each recall had written its own: the time of the last one."""
    memory = make_store()
    shown = memory.store("fact", "redis is the session cache")
    memory.recall("redis cache")
    before = memory.storage.clock()
    memory.recall("redis cache")
    after = memory.storage.clock()
    last = memory.get(shown).last_accessed
    assert last is not None and before.isoformat()[:19] < last[:19] < after.isoformat()[:19]


def test_a_write_commits_them_first_in_a_transaction_of_their_own(
    make_store: Callable[..., MemoryStore], db_path: Path
) -> None:
    memory = make_store()
    shown = memory.store("fact", "redis is the session cache")
    memory.recall("redis cache")
    with pytest.raises(RuntimeError), memory.batch():
        memory.store("fact", "a write rolled back")
        raise RuntimeError
    assert committed(db_path, shown) == 1  # not rolled back with the batch


def test_a_recall_in_a_batch_counts_as_before(
    make_store: Callable[..., MemoryStore], db_path: Path
) -> None:
    memory = make_store()
    shown = memory.store("fact", "redis is the session cache")
    memory.recall("redis cache")
    with memory.batch():
        memory.recall("redis cache")
        assert memory.get(shown).access_count == 2
    assert committed(db_path, shown) == 2


def _recalls_and_writes(memory: MemoryStore) -> list[object]:
    """Recalls whose frequency factors move, with writes and a forget in between."""
    answers: list[object] = []
    ids = [memory.store("fact", f"redis cache note {n} about sessions") for n in range(12)]
    for round_ in range(3 * FLUSH_EVERY):
        answers.append(memory.recall(f"redis cache note {round_ % 5}", budget_tokens=120))
        if round_ % 7 == 3:
            memory.store("fact", f"redis cache note written at round {round_}")
        if round_ == 40:
            memory.forget(ids[0])
        if round_ % 11 == 5:
            answers.append(memory.recall("sessions", budget_tokens=200, known_at="2099-01-01"))
    return answers


def test_the_answers_are_those_of_counts_written_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recall after recall, with writes between: the same items, scores and factors as
    when every recall writes its counts at once (FLUSH_EVERY 1)."""

    def answers(folder: str) -> list[object]:
        path = tmp_path / folder / "memory.db"
        with MemoryStore(path, clock=FakeClock(), random_source=CountingRandom()) as memory:
            return _recalls_and_writes(memory)

    batched = answers("batched")
    monkeypatch.setattr(access_counts, "FLUSH_EVERY", 1)
    at_once = answers("at-once")
    assert batched == at_once
    frequencies = {item.frequency for answer in at_once for item in answer.items}  # type: ignore[attr-defined]
    assert len(frequencies) > 3  # the counts did move the ranking's factors


def test_a_store_collected_while_open_writes_them(
    make_store: Callable[..., MemoryStore], db_path: Path
) -> None:
    writer = make_store()
    shown = writer.store("fact", "redis is the session cache")
    writer.close()
    memory = MemoryStore(db_path)
    memory.recall("redis cache")
    memory.recall("redis cache")
    del memory
    gc.collect()
    assert committed(db_path, shown) == 2


_RECALL_AND_EXIT = """
import sys
from nervamem import MemoryStore
memory = MemoryStore(sys.argv[1])
for _ in range(3):
    memory.recall("redis cache")
print(len(memory.recall("redis cache").items))
"""


def test_the_interpreter_exit_writes_them(
    make_store: Callable[..., MemoryStore], db_path: Path
) -> None:
    """A library caller that never closes its store: written as the interpreter exits."""
    memory = make_store()
    shown = memory.store("fact", "redis is the session cache")
    memory.close()
    done = subprocess.run(
        [sys.executable, "-c", _RECALL_AND_EXIT, str(db_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "1"
    assert committed(db_path, shown) == 4


_RECALL_THEN_WAIT = """
import sys
from nervamem import MemoryStore
memory = MemoryStore(sys.argv[1])
for _ in range(int(sys.argv[2])):
    memory.recall("redis cache")
print("ready", flush=True)
sys.stdin.readline()
"""


def test_a_killed_process_loses_the_pending_counts_only(
    make_store: Callable[..., MemoryStore], db_path: Path
) -> None:
    """SIGKILL with counts pending: a consistent store that holds every memory and the
    counts flushed before; the last few recalls' counts are lost, nothing else."""
    memory = make_store()
    shown = memory.store("fact", "redis is the session cache")
    memory.close()
    with killed_once_ready(_RECALL_THEN_WAIT, db_path, FLUSH_EVERY + 3):
        pass
    assert committed(db_path, shown) == FLUSH_EVERY
    with MemoryStore(db_path) as again:
        assert [item.id for item in again.recall("redis cache").items] == [shown]


_RECALL_AND_FORK = """
import os, sys
from nervamem import MemoryStore
memory = MemoryStore(sys.argv[1])
memory.recall("redis cache")
memory.recall("redis cache")
child = os.fork()
if child == 0:
    sys.exit(0)  # the interpreter's exit: its finalizers run in the child too
os.waitpid(child, 0)
memory.close()
"""


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork here")
def test_a_forked_child_does_not_write_its_parents_counts(
    make_store: Callable[..., MemoryStore], db_path: Path
) -> None:
    memory = make_store()
    shown = memory.store("fact", "redis is the session cache")
    memory.close()
    subprocess.run([sys.executable, "-c", _RECALL_AND_FORK, str(db_path)], check=True)
    assert committed(db_path, shown) == 2
