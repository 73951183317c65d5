"""Processes killed with SIGKILL at random moments (an agent's sandbox torn down, a hook
interrupted): the store stays intact, and every write that printed its ID survives."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
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


REBUILD_STOPPED_WHILE_READING = """
import os, sys, time
from pathlib import Path
from nervamem.team import sync
from nervamem.cli import main

real_import = sync.import_events

def reading(*args, **kwargs):  # the cache was emptied; the event files are read back
    if os.environ["REBUILD_AT_IMPORT"] == "die":
        os._exit(9)  # as SIGKILL, or the git hook's time limit, would end it
    Path(os.environ["REBUILD_FLAG"]).touch()
    time.sleep(3)
    return real_import(*args, **kwargs)

sync.import_events = reading
main(sys.argv[1:])
"""


def _shared_store_with_history(db: Path, env: dict[str, str]) -> list[str]:
    def ok(*args: str) -> str:
        code, out, err, _ = harness.run_fresh(["--db", str(db), *args], env=env)
        assert (code, err) == (0, ""), err
        return out.strip()

    ok("init", "--shared")
    old = ok("store", "decision", "cache with redis gadget7", "-e", "CacheLayer")
    new = ok("store", "decision", "cache with valkey gadget7", "--supersedes", old)
    kept = ok("store", "fact", "the gadget7 port is 6379", "-e", "CacheLayer")
    ok("recall", "gadget7")  # access counts, which a rebuild keeps
    return [new, kept]


def _recalled(db: Path, env: dict[str, str]) -> list[str]:
    code, out, err, _ = harness.run_fresh(
        ["--db", str(db), "recall", "gadget7", "--format", "json"], env=env
    )
    assert (code, err) == (0, ""), err
    return [item["id"] for item in json.loads(out)["items"] if item["kind"] != "entity"]


def test_a_rebuild_killed_half_way_leaves_the_cache_whole(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """``sync --rebuild`` (also what a sync does after a checkout removed event files,
    run by a git hook under a time limit) empties the cache and fills it again from the
    event files. Killed in between, it used to leave an empty cache that every recall
    and store then used until the next sync; it is one transaction now."""
    db = tmp_path / "repo" / ".nervapack" / "memory.db"
    current = _shared_store_with_history(db, env)
    before = harness.inspect_store(db)
    child = subprocess.run(
        [sys.executable, "-c", REBUILD_STOPPED_WHILE_READING, "--db", str(db), "sync", "--rebuild"],
        env={**env, "REBUILD_AT_IMPORT": "die", "REBUILD_FLAG": str(tmp_path / "flag")},
        capture_output=True,
        text=True,
    )
    assert child.returncode == 9, child.stderr
    after = harness.inspect_store(db)
    assert after.ok and after.ids == before.ids
    assert sorted(_recalled(db, env)) == sorted(current)


def test_a_recall_during_a_rebuild_sees_the_whole_cache(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """While a rebuild reads the event files back, a recall in another process sees the
    cache as it was before, not an empty one."""
    db = tmp_path / "repo" / ".nervapack" / "memory.db"
    current = _shared_store_with_history(db, env)
    flag = tmp_path / "flag"
    child = subprocess.Popen(
        [sys.executable, "-c", REBUILD_STOPPED_WHILE_READING, "--db", str(db), "sync", "--rebuild"],
        env={**env, "REBUILD_AT_IMPORT": "wait", "REBUILD_FLAG": str(flag)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while not flag.exists() and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.02)
        assert flag.exists(), child.stderr.read() if child.stderr else ""
        assert sorted(_recalled(db, env)) == sorted(current)
    finally:
        _, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    assert sorted(_recalled(db, env)) == sorted(current)
    assert harness.inspect_store(db).ok


SHARE_KILLED = """
import os, sys
from nervamem.cli import main
from nervamem import durable

real_write = durable.write_file_durably
written = []

def write_then_die(*args, **kwargs):  # SIGKILL, or Ctrl-C, while the history is written
    written.append(args[0])
    if len(written) == 8:
        os._exit(9)
    return real_write(*args, **kwargs)

durable.write_file_durably = write_then_die  # share() imports it when it runs
main(sys.argv[1:])
"""


def test_init_shared_killed_half_way_loses_nothing(tmp_path: Path, env: dict[str, str]) -> None:
    """``init --shared`` writes the whole history as event files. Killed part-way (a
    large store, Ctrl-C), it used to leave an events folder with part of the history:
    the store counted as shared, so running ``init --shared`` again did nothing, and the
    memories whose events were not written were dropped by the next rebuild of the
    cache. Now the store is shared whole or not at all."""
    db = tmp_path / "repo" / ".nervapack" / "memory.db"
    with MemoryStore(db) as memory:
        stored = [memory.store("fact", f"fact number {i} sprocket") for i in range(20)]
    child = subprocess.run(
        [sys.executable, "-c", SHARE_KILLED, "--db", str(db), "init", "--shared"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert child.returncode == 9, child.stderr
    for args in (["init", "--shared"], ["sync", "--rebuild"]):
        code, _, err, _ = harness.run_fresh(["--db", str(db), *args], env=env)
        assert (code, err) == (0, ""), err
    health = harness.inspect_store(db)
    assert health.ok and set(stored) <= health.ids
    held = "".join(path.read_text() for path in (db.parent / "events").rglob("ev_*.json"))
    assert all(node in held for node in stored)
