"""Processes killed with SIGKILL at random moments (an agent's sandbox torn down, a hook
interrupted): the store stays intact, and every write that printed its ID survives."""

from __future__ import annotations

import random
import signal
import subprocess
import time
from pathlib import Path

from nervamem import MemoryStore

from . import harness


def test_sigkill_at_random_moments_loses_nothing(
    tmp_path: Path, env: dict[str, str], seed: int
) -> None:
    """Four rounds: two busy writer processes (stores with ~250 KB content now and then,
    supersedes, forgets, purges, session starts) and two one-shot ``nervamem store``
    processes, all killed at a random moment. After each round: integrity_check, the FTS5
    integrity-check, foreign keys, every acknowledged write present with its content, and
    a fresh command still works."""
    db = tmp_path / "store" / "memory.db"
    report, problems = harness.crash_rounds(db, env=env, rounds=4, seed=seed)
    assert problems == [], f"seed {seed}: {problems}"
    assert len(report.acknowledged) >= 4, "the scenario should have written before the kills"


def test_sigkill_during_purge(tmp_path: Path, env: dict[str, str], seed: int) -> None:
    """A purge deletes, optimizes the FTS index, then rewrites the whole file (VACUUM).
    Killed part-way, the node is either still there or gone (never half-deleted), the
    store is intact, and purging what is left then works."""
    db = tmp_path / "store" / "memory.db"
    filler = " ".join(f"filler{i}" for i in range(60_000))
    with MemoryStore(db) as memory, memory.batch():
        for index in range(6):  # ~3 MB, so that VACUUM takes a noticeable time
            memory.store("fact", f"bulk {index} {filler}")
        targets = [memory.store("fact", f"purge target {index}") for index in range(14)]
    startup = harness.run_fresh(["--db", str(db), "stats"], env=env)[3]
    code, _, err, whole = harness.run_fresh(
        ["--db", str(db), "forget", targets.pop(), "--purge", "--yes"], env=env
    )
    assert (code, err) == (0, "")
    rng = random.Random(seed)
    outcomes: list[str] = []
    low, high = startup * 0.8, whole  # narrowed below towards the moments inside a purge
    for node in targets:
        proc = subprocess.Popen(
            [*harness.NERVAMEM, "--db", str(db), "forget", node, "--purge", "--yes"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        delay = rng.uniform(low, high)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
        health = harness.inspect_store(db)
        assert health.ok, f"seed {seed}, kill {len(outcomes)}: {health}"
        if proc.returncode == 0:
            assert node not in health.ids
            outcomes.append("finished")
            high = delay  # too late: the purge had finished
        elif node in health.ids:
            outcomes.append("kept")
            low = delay  # too early, or before the delete committed
        else:
            outcomes.append("gone")  # killed after the delete committed, during the scrub
        if "gone" in outcomes:
            break
    assert "gone" in outcomes, f"no kill landed inside a purge: {outcomes}"
    for node, outcome in zip(targets, outcomes, strict=False):  # outcomes may be shorter
        if outcome == "kept":
            code, _, err, _ = harness.run_fresh(
                ["--db", str(db), "forget", node, "--purge", "--yes"], env=env
            )
            assert (code, err) == (0, "")
    assert not set(targets[: len(outcomes)]) & harness.inspect_store(db).ids
