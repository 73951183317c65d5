"""Reliability round 2 (issue 19): inputs that used to end in the wrong exit code, an
"internal error" line, a file left behind, or an answer that was not true yet.

* recall without ``--as-of`` answers as of now, with the same mask as ``--as-of`` now;
* paths nothing can be stored at (blank, a folder's, a device, a named pipe, a socket,
  too long, ``~user`` of no such user, no home folder) get their documented exit code,
  one line that never echoes a whole long path, and create nothing;
* a ``state.yaml`` nested too deeply for PyYAML is a bad state (exit 1), like any other;
* a read-only store with a leftover ``-wal`` (with or without its ``-shm``) in a
  read-only folder is read, WAL included, and changes no byte.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nervamem import MemoryStore
from nervamem.cli import app

from . import harness
from .test_hostile_input import (
    _drop_file_permission_override,
    assert_clean_error,
    assert_json_error,
    assert_reads_work_and_writes_refuse,
)

pytestmark = pytest.mark.sqlite_only  # not yet run against PostgreSQL

Run = Callable[..., Any]
LONG = "a" * 300
NO_SUCH_USER = "nervamem-no-such-user-19"


# ----------------------------------------------------------------------------- recall now
def test_recall_without_as_of_hides_what_is_not_true_yet(cli: Run) -> None:
    stored = cli("store", "fact", "rollout waits for the audit", "--valid-from", "9999-12-31")
    assert stored.exit_code == 0, stored.stderr
    now = cli("store", "fact", "rollout goes through the canary").stdout.strip()
    for args in ([], ["--as-of", "2026-07-03T13:00:00Z"]):
        result = cli("--format", "json", "recall", "rollout", *args)
        assert result.exit_code == 0, result.stderr
        assert [item["id"] for item in json.loads(result.stdout)["items"]] == [now], args
    markdown = cli("--format", "markdown", "recall", "rollout").stdout
    assert "(as of 2026-07-03" in markdown and "audit" not in markdown
    # It is not lost: it shows as of its date, and in the timeline (history and plans).
    later = cli("--format", "json", "recall", "audit", "--as-of", "9999-12-31T12:00:00Z")
    assert [item["content"] for item in json.loads(later.stdout)["items"]] == [
        "rollout waits for the audit"
    ]
    timeline = json.loads(cli("--format", "json", "timeline", "audit").stdout)
    assert [item["valid_from"][:10] for item in timeline["items"]] == ["9999-12-31"]


def test_recall_without_as_of_keeps_a_version_until_its_successor_starts(cli: Run) -> None:
    old = cli("store", "fact", "deploys use jenkins").stdout.strip()
    new = cli(
        "store", "fact", "deploys use github actions", "--supersedes", old,
        "--valid-from", "2030-01-01",
    ).stdout.strip()  # fmt: skip

    def ids(*args: str) -> list[str]:
        result = cli("--format", "json", "recall", "deploys", *args)
        return [item["id"] for item in json.loads(result.stdout)["items"]]

    assert ids() == [old]  # still true today
    assert ids("--as-of", "2031-01-01") == [new]


def test_recall_default_is_now_in_the_library_too(store: MemoryStore) -> None:
    store.store("fact", "quota doubles next year", valid_from="2999-01-01")
    assert store.recall("quota").items == ()
    assert [i.content for i in store.recall("quota", as_of="2999-06-01").items] == [
        "quota doubles next year"
    ]


# ----------------------------------------------------------------------------- exit codes
@pytest.fixture
def plain(monkeypatch: pytest.MonkeyPatch) -> Iterator[Run]:
    """The CLI in-process with the real store factory and no store setting."""
    monkeypatch.delenv("NERVAPACK_MEMORY_DB", raising=False)
    runner = CliRunner()

    def run(*args: str, env: dict[str, str] | None = None) -> Any:
        return runner.invoke(app, list(args), env=env)

    yield run


def _no_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """HOME unset and no entry in the user database for this user ID."""
    import pwd

    def no_entry(uid: int) -> Any:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.delenv("HOME")
    monkeypatch.setattr(pwd, "getpwuid", no_entry)


def test_a_path_too_long_for_the_system_is_bad_input(cli: Run, tmp_path: Path) -> None:
    assert cli("stats").exit_code == 0  # the store code-for reads exists
    before = harness.tree_digest(tmp_path)
    for args in (
        ["code-for", LONG],
        ["code-for", f"{LONG}:3"],
        ["code", "index", LONG],
        ["--db", str(tmp_path / LONG), "stats"],
        ["--db", str(tmp_path / LONG / "memory.db"), "store", "fact", "x"],
    ):
        line = assert_clean_error(cli(*args), 2, what=args)
        assert LONG not in line and len(line) < 200, line
        assert_json_error(cli("--format", "json", *args), 2, what=args)
    assert harness.tree_digest(tmp_path) == before


def test_a_path_too_long_for_sqlite_is_bad_input_and_creates_nothing(
    cli: Run, tmp_path: Path
) -> None:
    """Every name short enough for the system, the whole too long for SQLite (504 bytes
    as a full path): refused before a folder is made, as the docs say, not an exit 1
    ("unable to open database file") once its folders are made."""
    assert cli("stats").exit_code == 0
    before = harness.tree_digest(tmp_path)
    deep = tmp_path.joinpath(*["folder"] * 80, "memory.db")
    for args in (["store", "fact", "x"], ["init"], ["session", "start"]):
        line = assert_clean_error(cli("--db", str(deep), *args), 2, what=args)
        assert "too long for SQLite" in line and len(line) < 250, line
        assert_json_error(cli("--format", "json", "--db", str(deep), *args), 2, what=args)
    assert harness.tree_digest(tmp_path) == before
    # The longest path SQLite takes is a store.
    folder = tmp_path
    while len(os.fsencode(folder)) + 1 + 255 < 504:  # no name longer than the system's
        folder /= "f" * 100
    longest = folder / ("m" * (504 - len(os.fsencode(folder)) - 1 - 3) + ".db")
    assert len(os.fsencode(longest)) == 504
    assert cli("--db", str(longest), "store", "fact", "x").exit_code == 0


@pytest.mark.parametrize("where", ["--db", "env"])
def test_a_user_that_does_not_exist_is_bad_input(plain: Run, tmp_path: Path, where: str) -> None:
    path = f"~{NO_SUCH_USER}/memory.db"
    if where == "--db":
        result = plain("--db", path, "stats")
    else:
        result = plain("stats", env={"NERVAPACK_MEMORY_DB": path})
    line = assert_clean_error(result, 2, what=where)
    assert NO_SUCH_USER in line
    line = assert_clean_error(plain("code-for", f"~{NO_SUCH_USER}/x.py"), 2)
    assert NO_SUCH_USER in line


def test_no_home_folder_for_the_default_store(
    plain: Run, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No project store upwards, HOME unset, a user ID without a passwd entry: the store
    cannot be placed (exit 1, naming the way out); a ~ in a given path is bad input."""
    _no_home(monkeypatch)
    for args in (["stats"], ["init", "--global"], ["store", "fact", "x"]):
        line = assert_clean_error(plain(*args), 1, what=args)
        assert "NERVAMEM_DB" in line and "home folder" in line, line
        assert_json_error(plain("--format", "json", *args), 1, what=args)
    assert_clean_error(plain("--db", "~/memory.db", "stats"), 2)
    # The ways out work.
    assert plain("--db", str(tmp_path / "s" / "memory.db"), "init").exit_code == 0
    assert plain("--db", str(tmp_path / "s" / "memory.db"), "stats").exit_code == 0
    assert plain("stats", env={"NERVAPACK_MEMORY_DB": str(tmp_path / "e.db")}).exit_code == 0


def test_a_state_yaml_nested_too_deeply_is_a_bad_state(cli: Run, db_path: Path) -> None:
    assert cli("store", "fact", "x").exit_code == 0
    state = db_path.parent / "state.yaml"
    for body in ("[" * 10_000 + "]" * 10_000, "namespace: " + "{a: " * 5_000 + "1" + "}" * 5_000):
        state.write_text(body + "\n")
        before = harness.tree_digest(db_path.parent)
        for args in (["stats"], ["recall", "x"], ["store", "fact", "y"]):
            line = assert_clean_error(cli(*args), 1, what=args)
            assert "state.yaml" in line and "fix or delete it" in line, line
            assert_json_error(cli("--format", "json", *args), 1, what=args)
        assert harness.tree_digest(db_path.parent) == before


# ----------------------------------------------------------------------------- no store there
def _device(folder: Path) -> Path:
    """A character device like /dev/null, made inside the test's folder (as root),
    else /dev/null itself."""
    path = folder / "memory.db"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError:
        return Path("/dev/null")
    return path


def _fifo(folder: Path) -> Path:
    os.mkfifo(folder / "memory.db")
    return folder / "memory.db"


def _socket(folder: Path) -> Path:
    path = folder / "memory.db"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()  # the socket file stays
    return path


NOT_A_FILE = {"device": _device, "fifo": _fifo, "socket": _socket}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX files")
@pytest.mark.parametrize("kind", sorted(NOT_A_FILE))
def test_a_path_that_is_not_a_regular_file_is_refused(
    tmp_path: Path, env: dict[str, str], kind: str
) -> None:
    """Exit 1 ("not a nervamem store", as for a directory) before SQLite opens it: no
    -journal or -wal appears beside it, nothing hangs on a named pipe."""
    folder = tmp_path / "odd"
    folder.mkdir()
    target = NOT_A_FILE[kind](folder)
    siblings = {p.name for p in target.parent.iterdir()}
    for args in (["stats"], ["store", "fact", "x"], ["recall", "x"], ["init"]):
        for how in ("--db", "env"):
            argv = ["--db", str(target), *args] if how == "--db" else args
            extra = {} if how == "--db" else {"NERVAPACK_MEMORY_DB": str(target)}
            code, out, err, _ = harness.run_fresh(argv, env={**env, **extra}, timeout=20)
            assert {p.name for p in target.parent.iterdir()} == siblings, (kind, args, err)
            assert (code, out) == (1, ""), (kind, args, how, code, err)
            assert len(err.strip().splitlines()) == 1 and "not a nervamem store" in err, err


@pytest.mark.parametrize(
    "given", [" ", "\t", "", "folder/", "folder/ ", "  /", "folder/.."], ids=repr
)
def test_a_path_that_cannot_name_a_store_file_is_bad_input(
    plain: Run, tmp_path: Path, given: str
) -> None:
    """Exit 2, and no store named ' ' (or anything else) appears. An empty
    NERVAPACK_MEMORY_DB is unset, as usual for variables; an empty --db is not."""
    (tmp_path / "folder").mkdir()
    before = harness.tree_digest(tmp_path)
    for args in (["stats"], ["store", "fact", "x"], ["init"]):
        assert_clean_error(plain("--db", given, *args), 2, what=(given, args))
        assert_json_error(plain("--format", "json", "--db", given, *args), 2, what=given)
        if given:
            result = plain(*args, env={"NERVAPACK_MEMORY_DB": given})
            line = assert_clean_error(result, 2, what=(given, args))
            assert "NERVAPACK_MEMORY_DB" in line
        assert harness.tree_digest(tmp_path) == before, (given, args)


def test_library_refuses_a_blank_path(tmp_path: Path) -> None:
    from nervamem.errors import BadInputError

    before = harness.tree_digest(tmp_path)
    for given in (" ", "", str(tmp_path) + os.sep):
        with pytest.raises(BadInputError):
            MemoryStore(given)
    assert harness.tree_digest(tmp_path) == before


# ----------------------------------------------------------------------------- read-only + WAL
def _store_with_leftover_wal(folder: Path) -> tuple[Path, str]:
    """A store whose last writer died: its last fact is only in the -wal file. Returns
    the store and the ID of its other fact."""
    db = folder / "memory.db"
    with MemoryStore(db) as memory:
        fact = memory.store("fact", "sample content that exists", entities=["Sample"])
    script = (
        "import os, sys\n"
        "from nervamem import MemoryStore\n"
        "memory = MemoryStore(sys.argv[1])\n"
        "memory.store('fact', 'walonly marker content')\n"
        "os._exit(0)\n"  # no close: no checkpoint, the -wal and -shm stay
    )
    subprocess.run([sys.executable, "-c", script, str(db)], check=True)
    assert b"walonly" in (folder / "memory.db-wal").read_bytes()
    assert b"walonly" not in db.read_bytes()  # only the -wal holds it
    return db, fact


LEFTOVERS: dict[str, Callable[[Path], object]] = {
    "wal-and-shm": lambda folder: None,
    "wal-without-shm": lambda folder: (folder / "memory.db-shm").unlink(),
    "empty-wal-without-shm": lambda folder: (
        (folder / "memory.db-shm").unlink(),
        (folder / "memory.db-wal").write_bytes(b""),
    ),
}


@pytest.mark.parametrize("leftover", sorted(LEFTOVERS))
def test_read_only_store_with_a_leftover_wal(
    tmp_path: Path, env: dict[str, str], leftover: str
) -> None:
    """Store, -wal (and -shm) and folder read-only, as test_read_only_store: reads exit
    0 and see what only the -wal holds, writes exit 1 naming the read-only store, and no
    byte changes."""
    folder = tmp_path / "ro"
    folder.mkdir()
    db, fact = _store_with_leftover_wal(folder)
    LEFTOVERS[leftover](folder)
    (folder / "state.yaml").write_text('namespace: "default"\nsession: null\n')
    files = sorted(p for p in folder.iterdir())
    for path in files:
        path.chmod(0o444)
    folder.chmod(0o555)
    preexec = _drop_file_permission_override if os.geteuid() == 0 else None
    try:
        probe = subprocess.run(
            [sys.executable, "-c", f"open({str(db)!r}, 'r+b')"],
            preexec_fn=preexec,
            capture_output=True,
        )
        if probe.returncode == 0:
            pytest.skip("cannot make the store read-only for a child process here")
        before = harness.tree_digest(folder)
        code, out, err, _ = harness.run_fresh(
            ["--db", str(db), "--format", "json", "recall", "walonly"],
            env=env,
            preexec_fn=preexec,
        )
        assert (code, err) == (0, ""), err
        found = [item["content"] for item in json.loads(out)["items"]]
        # An empty -wal holds nothing; the file then holds the whole store.
        assert found == ([] if leftover.startswith("empty") else ["walonly marker content"])
        assert_reads_work_and_writes_refuse(db, fact, env, preexec, folder, before)
    finally:
        folder.chmod(0o755)
        for path in files:
            path.chmod(0o644)


def test_a_deleted_working_folder(
    plain: Run, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No store path given and the working folder deleted under the process: the project
    store cannot be looked for (exit 1, one line), neither by a command nor by init."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    for args in (["stats"], ["init"], ["store", "fact", "x"]):
        line = assert_clean_error(plain(*args), 1, what=args)
        assert "working folder" in line and "NERVAMEM_DB" in line, line
    assert not (tmp_path / "home").exists()
