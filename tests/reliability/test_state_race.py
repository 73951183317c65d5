"""state.yaml (the active namespace and session) under concurrent commands: every
read-modify-write of it is atomic against every other, so a change that was
acknowledged (exit 0) is never undone by a command that read the state before it and
wrote after it. The final state is always that of some serial order of the commands.

The subprocess rounds widen the race window on purpose: the test holds the store's
write lock, starts the command under test (it reads the state, then waits for the
lock), runs ``ns switch`` meanwhile, and only then releases the lock.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nervamem import MemoryStore
from nervamem.state import State, load_state

from . import harness

SETTLE_SECONDS = 0.15  # from opening the store to waiting for its lock takes ~1 ms
Outcome = tuple[int, str, str]  # exit code, stdout, stderr


def _launch(db: Path, env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*harness.NERVAMEM, "--db", str(db), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def _has_opened(proc: subprocess.Popen[bytes], db: Path) -> bool:
    try:
        fds = os.listdir(f"/proc/{proc.pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{proc.pid}/fd/{fd}") == str(db):
                return True
        except OSError:
            continue
    return False


def _wait_until_waiting(proc: subprocess.Popen[bytes], db: Path) -> None:
    """Until the process has opened the store (and so read the state, then reached the
    write lock), or has exited. Without /proc, a start-up's worth of time."""
    deadline = time.monotonic() + (10 if os.path.isdir("/proc/self/fd") else 1.0)
    while time.monotonic() < deadline and proc.poll() is None and not _has_opened(proc, db):
        time.sleep(0.01)
    time.sleep(SETTLE_SECONDS)


def _finish(proc: subprocess.Popen[bytes]) -> Outcome:
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out.decode().strip(), err.decode().strip()


def _node(db: Path, node_id: str) -> tuple[str, int, str | None]:
    conn = sqlite3.connect(db)
    try:
        namespace, tombstoned, data = conn.execute(
            "SELECT namespace, tombstoned, json_extract(data, '$.ended_at') FROM mem_nodes "
            "WHERE id = ?",
            (node_id,),
        ).fetchone()
    finally:
        conn.close()
    return namespace, tombstoned, data


def _active_session_in_a(db: Path) -> str:
    with MemoryStore(db) as memory:
        memory.switch_namespace("a")
        return memory.start_session("already active")


def _race_round(db: Path, env: dict[str, str], command: list[str]) -> tuple[Outcome, State]:
    """``command`` and ``ns switch b`` at once, both while the write lock is held."""
    with harness.write_lock_held(db):
        racer = _launch(db, env, *command)
        _wait_until_waiting(racer, db)
        switch = _launch(db, env, "ns", "switch", "b")
        _wait_until_waiting(switch, db)
    racer_outcome = _finish(racer)
    switch_code, _, switch_err = _finish(switch)
    assert switch_code == 0
    # The note comes when b held no memories as the switch began; a racer may add one.
    assert switch_err in ("", "nervamem: namespace 'b' is new (no memories yet)")
    return racer_outcome, load_state(db)


def _check_session_start(db: Path, outcome: Outcome, state: State, _: str) -> None:
    code, started, err = outcome
    assert (code, err) == (0, "")
    assert state.namespace == "b", f"the acknowledged switch was undone: {state}"
    started_in = _node(db, started)[0]
    if state.session is None:  # start, then switch
        assert started_in == "a", (state, started_in)
        assert state.session_of("a") == started  # resumed when a is active again
    else:  # switch, then start in the namespace now active
        assert (state.session, started_in) == (started, "b")


def _check_session_end(db: Path, outcome: Outcome, state: State, session: str) -> None:
    assert (state.namespace, state.session) == ("b", None), f"the switch was undone: {state}"
    code, ended, err = outcome
    if code == 0:  # end, then switch
        assert ended == session and _node(db, session)[2] is not None
        assert state.session_of("a") is None  # ended: active nowhere
    else:  # switch, then end: namespace b has no active session
        assert code == 2 and "no active session in namespace 'b'" in err, (code, err)
        assert _node(db, session)[2] is None
        assert state.session_of("a") == session  # left active in a, resumed there


def _check_forget(db: Path, outcome: Outcome, state: State, session: str) -> None:
    code, _, err = outcome
    assert (code, err) == (0, "")
    # Forgotten: active nowhere, whichever came first.
    assert state == State("b", None), f"the acknowledged switch was undone: {state}"
    assert _node(db, session)[1] == 1  # tombstoned


Check = Callable[[Path, Outcome, State, str], None]
RACERS: dict[str, tuple[list[str], Check]] = {
    "session-start": (["session", "start", "raced"], _check_session_start),
    "session-end": (["session", "end"], _check_session_end),
    "forget-active-session": (["forget", "{session}"], _check_forget),
}


@pytest.mark.parametrize("racer", sorted(RACERS))
def test_a_concurrent_command_never_undoes_a_switch(
    tmp_path: Path, env: dict[str, str], racer: str
) -> None:
    """Two rounds each: the racer read namespace a (with an active session), then
    ``ns switch b`` was acknowledged; namespace b must survive whatever the racer did."""
    command, check = RACERS[racer]
    db = tmp_path / "store" / "memory.db"
    for round_no in range(2):
        session = _active_session_in_a(db)
        args = [a.replace("{session}", session) for a in command]
        outcome, state = _race_round(db, env, args)
        try:
            check(db, outcome, state, session)
        except AssertionError as exc:
            raise AssertionError(f"round {round_no}: {exc}") from None


def test_a_switch_waits_for_the_write_lock_and_gives_up_cleanly(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """``ns switch`` takes the same lock as every other change of the state: held past
    NERVAMEM_BUSY_TIMEOUT_MS, it exits 1 with one line and leaves the state alone."""
    db = tmp_path / "store" / "memory.db"
    _active_session_in_a(db)
    before = (db.parent / "state.yaml").read_bytes()
    quick = {**env, "NERVAMEM_BUSY_TIMEOUT_MS": "300"}
    with harness.write_lock_held(db):
        code, out, err, secs = harness.run_fresh(["--db", str(db), "ns", "switch", "b"], env=quick)
    assert (code, out) == (1, "")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "locked" in err and "nothing was written" in err and "0.3s" in err
    assert secs < 10
    assert (db.parent / "state.yaml").read_bytes() == before


# ------------------------------------------------------------------ one process, two stores
# A MemoryStore caches the state it read first; a second store in the same process
# changes it meanwhile, as another process would. No timing involved.


@pytest.fixture
def two_stores(tmp_path: Path) -> Iterator[tuple[MemoryStore, MemoryStore, str]]:
    db = tmp_path / "store" / "memory.db"
    session = _active_session_in_a(db)
    with MemoryStore(db) as stale, MemoryStore(db) as other:
        assert stale.state == State("a", session)  # cached from here on
        yield stale, other, session


def test_a_stale_store_starting_a_session_keeps_the_switch(
    two_stores: tuple[MemoryStore, MemoryStore, str],
) -> None:
    stale, other, session = two_stores
    other.switch_namespace("b")
    started = stale.start_session("after the switch")
    assert load_state(stale.path) == State("b", started, {"a": session})
    assert stale.get(started).namespace == "b"
    assert stale.current().session == started


@pytest.mark.parametrize("purge", [False, True], ids=["forget", "purge"])
def test_a_stale_store_forgetting_the_session_keeps_the_switch(
    two_stores: tuple[MemoryStore, MemoryStore, str], purge: bool
) -> None:
    stale, other, session = two_stores
    other.switch_namespace("b")
    stale.forget(session, purge=purge)
    assert load_state(stale.path) == State("b", None)
    assert stale.current().namespace == "b"  # what it cached is read again


def test_a_stale_store_ends_the_session_active_now(
    two_stores: tuple[MemoryStore, MemoryStore, str],
) -> None:
    stale, other, session = two_stores
    other.end_session()
    newer = other.start_session("the next one")
    assert stale.end_session() == newer  # not the one it cached, which has ended
    assert load_state(stale.path) == State("a", None)
    assert other.get(session).data["ended_at"]


def test_a_stale_store_switching_back_really_switches(
    two_stores: tuple[MemoryStore, MemoryStore, str],
) -> None:
    stale, other, _ = two_stores
    stale.switch_namespace("b")
    other.switch_namespace("a")  # it still believes a is active: nothing to do?
    assert load_state(stale.path).namespace == "a"
    other.end_session()
    other.start_session("in a")
    assert stale.switch_namespace("a").namespace == "a"
    assert load_state(stale.path).session is not None  # staying put keeps the session


def test_a_switch_waits_for_a_session_start_in_its_critical_section(tmp_path: Path) -> None:
    """The switch comes while a session start has read the state and not yet written it
    (its ID source is called in between): it must wait for that start to commit."""
    db = tmp_path / "store" / "memory.db"
    _active_session_in_a(db)
    switched = threading.Event()
    switcher: list[threading.Thread] = []

    def switch_to_b() -> None:
        with MemoryStore(db) as other:
            other.switch_namespace("b")
        switched.set()

    def random_part_during_a_switch() -> int:
        if not switcher:
            switcher.append(threading.Thread(target=switch_to_b))
            switcher[0].start()
            switched.wait(0.5)  # the old code finished the switch here
        return 42

    with MemoryStore(db, random_source=random_part_during_a_switch) as memory:
        started = memory.start_session("in its critical section")
        switched_early = switched.is_set()
    switcher[0].join(10)
    assert not switched_early, "the switch did not wait for the session start"
    assert load_state(db) == State("b", None, {"a": started}), "the switch was undone"
    assert _node(db, started)[0] == "a"
