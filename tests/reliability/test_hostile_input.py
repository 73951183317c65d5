"""Hostile input over every command: whatever an LLM, a hook or a damaged disk hands
nervamem, it answers with its documented exit code (0 ok, 1 store unusable, 2 bad input,
3 not found or ambiguous), one clear line on stderr and no traceback; and a command that
fails changes nothing (every file in the store's folder is compared byte for byte).

Commands are discovered from the command tree, so a command added later is covered by
the store-level cases without editing this file.
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer.main

from nervamem import MemoryStore
from nervamem.cli import app

from . import harness

pytestmark = pytest.mark.sqlite_only  # not yet run against PostgreSQL

Run = Callable[..., Any]

# ----------------------------------------------------------------------------- helpers
SAMPLE_ARGUMENTS = {
    "kind": "fact",
    "content": "sample content",
    "query": "sample",
    "node_id": "f_0",
    "target": "src/example.py",
    "name": "elsewhere",
    "title": "a title",
}


def _leaf_commands() -> list[tuple[list[str], Any]]:
    found: list[tuple[list[str], Any]] = []

    def walk(command: Any, path: list[str]) -> None:
        children = getattr(command, "commands", None)
        if children:
            for name, child in sorted(children.items()):
                walk(child, [*path, name])
        else:
            found.append((path, command))

    walk(typer.main.get_command(app), [])
    return found


def _invocation(path: list[str], command: Any) -> list[str]:
    """The command with a plausible value for each required argument."""
    args = list(path)
    for param in command.params:
        if param.param_type_name == "argument" and param.required:
            args.append(SAMPLE_ARGUMENTS.get(param.name, "x"))
    return args


COMMANDS = {" ".join(path): _invocation(path, cmd) for path, cmd in _leaf_commands()}
OPTIONS = {
    " ".join(path): {o for p in cmd.params for o in p.opts} for path, cmd in _leaf_commands()
}


def assert_clean_error(result: Any, code: int, *, what: object = "") -> str:
    """Exit ``code``, nothing on stdout, exactly one plain line on stderr."""
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        what,
        result.exception,
    )
    assert result.exit_code == code, (what, result.exit_code, result.stdout, result.stderr)
    assert result.stdout == "", (what, result.stdout)
    lines = result.stderr.rstrip("\n").split("\n")
    assert len(lines) == 1, (what, result.stderr)
    assert lines[0].startswith("nervamem: error: "), (what, result.stderr)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, what
    return lines[0]


def assert_json_error(result: Any, code: int, *, what: object = "") -> dict[str, Any]:
    assert result.exit_code == code, (what, result.exit_code, result.stderr)
    assert result.stdout == "", what
    lines = result.stderr.rstrip("\n").split("\n")
    assert len(lines) == 1, (what, result.stderr)
    error = json.loads(lines[0])["error"]
    assert error["exit_code"] == code and error["code"] and error["message"], (what, error)
    assert error["code"] != "internal", (what, error)
    return dict(error)


def _fill(args: list[str], ids: dict[str, str]) -> list[str]:
    return [a.format(**ids) if "{" in a and "}" in a and "{{" not in a else a for a in args]


@pytest.fixture(scope="module")
def seeded_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """Built once: a session, a decision with an entity, two facts (so 'f_' is
    ambiguous) and a fact in another namespace."""
    folder = tmp_path_factory.mktemp("seeded")
    with MemoryStore(folder / "memory.db") as memory:
        ids = {"session": memory.start_session("seeded session")}
        ids["decision"] = memory.store(
            "decision", "Chose JWT for auth", entities=["AuthService"], rationale="x"
        )
        ids["fact"] = memory.store("fact", "tokens last 15 minutes alpha")
        ids["fact2"] = memory.store("fact", "another fact about alpha")
        ids["other"] = memory.store("fact", "lives elsewhere alpha", namespace="other")
    return folder, ids


@pytest.fixture
def seeded(seeded_template: tuple[Path, dict[str, str]], db_path: Path) -> dict[str, str]:
    """A copy of the template at db_path, closed, so its folder is stable between
    commands."""
    folder, ids = seeded_template
    shutil.copytree(folder, db_path.parent)
    names = {p.name for p in db_path.parent.iterdir()}
    assert names == {"memory.db", "state.yaml", "memory.db-queue", "memory.db-lock"}
    return ids


# ----------------------------------------------------------------------------- bad input
BAD_DATES = [
    "2026-13-01",
    "2026-02-30",
    "yesterday",
    "",
    " ",
    "2026-01-01T25:00",
    "9" * 200,
    "0001-01-01T00:00:00+05:00",
    "9999-12-31T23:59:59-05:00",
    "2026-01-01T00:00:00+99:00",
    "2026-01-01\x00",
    "１２３４-01-01x",
    "--",
]
BAD_BUDGETS = ["0", "-1", "-99999999999999999999", "1000001", "1" + "0" * 40, "abc", "2.5", "1"]

# (case id, arguments, standard input, expected exit code). {name} is a seeded node ID.
CASES: list[tuple[str, list[str], bytes | None, int]] = [
    ("kind-capitalised", ["store", "Fact", "x"], None, 2),
    ("kind-session", ["store", "session", "x"], None, 2),
    ("kind-empty", ["store", "", "x"], None, 2),
    ("kind-huge", ["store", "k" * 10_000, "x"], None, 2),
    ("content-empty", ["store", "fact", ""], None, 2),
    ("content-blank", ["store", "fact", " \n\t "], None, 2),
    ("content-nul", ["store", "fact", "a\x00b"], None, 2),
    ("content-surrogate", ["store", "fact", "bad \udcff byte"], None, 2),
    ("stdin-empty", ["store", "fact", "-"], b"", 2),
    ("stdin-nul", ["store", "fact", "-"], b"a\x00b", 2),
    ("stdin-invalid-utf8", ["store", "fact", "-"], b"\xff\xfe\xfd", 2),
    ("stdin-truncated-utf8", ["store", "fact", "-"], b"ok \xc3", 2),
    ("stdin-overlong-utf8", ["store", "fact", "-"], b"\xc0\xaf", 2),
    ("stdin-encoded-surrogate", ["store", "decision", "-"], b"\xed\xa0\x80", 2),
    *[
        (f"confidence-{v}", ["store", "fact", "x", "--confidence", v], None, 2)
        for v in ("nan", "inf", "-inf", "-0.1", "1.5", "abc", "")
    ],
    *[
        (f"valid-from-{i}", ["store", "fact", "x", "--valid-from", v], None, 2)
        for i, v in enumerate(BAD_DATES)
    ],
    ("supersedes-garbage", ["store", "fact", "x", "--supersedes", "!!"], None, 2),
    ("supersedes-session", ["store", "fact", "x", "--supersedes", "{session}"], None, 2),
    (
        "supersedes-earlier",
        ["store", "fact", "x", "--supersedes", "{fact}", "--valid-from", "2020-01-01"],
        None,
        2,
    ),
    ("rationale-on-fact", ["store", "fact", "x", "--rationale", "why"], None, 2),
    ("rejected-on-fact", ["store", "fact", "x", "--rejected", "other"], None, 2),
    ("entity-empty", ["store", "fact", "x", "-e", ""], None, 2),
    ("entity-nul", ["store", "fact", "x", "-e", "a\x00"], None, 2),
    ("entity-surrogate", ["store", "fact", "x", "-e", "\udcff"], None, 2),
    ("session-not-a-session", ["store", "fact", "x", "--session", "{fact}"], None, 2),
    ("ns-traversal", ["store", "fact", "x", "--ns", "../etc"], None, 2),
    ("ns-too-long", ["store", "fact", "x", "--ns", "n" * 65], None, 2),
    ("ns-space", ["store", "fact", "x", "--ns", "a b"], None, 2),
    ("ns-empty", ["store", "fact", "x", "--ns", ""], None, 2),
    ("global-ns-empty", ["--ns", "", "recall", "x"], None, 2),
    ("store-missing-args", ["store"], None, 2),
    ("format-unknown", ["store", "fact", "x", "--format", "xml"], None, 2),
    ("tokenizer-unknown", ["--tokenizer", "bpe", "recall", "x"], None, 2),
    *[(f"budget-{v[:12]}", ["recall", "x", "--budget", v], None, 2) for v in BAD_BUDGETS],
    *[(f"hops-{v}", ["recall", "x", "--hops", v], None, 2) for v in ("-1", "6", "99", "x")],
    *[(f"as-of-{i}", ["recall", "x", "--as-of", v], None, 2) for i, v in enumerate(BAD_DATES)],
    ("kind-filter-unknown", ["recall", "x", "--kind", "facts"], None, 2),
    ("query-nul", ["recall", "a\x00b"], None, 2),
    ("query-surrogate", ["recall", "\udcff"], None, 2),
    ("query-stdin-invalid", ["recall", "-"], b"\xff", 2),
    ("query-stdin-nul", ["recall", "-"], b"alpha\x00", 2),
    ("timeline-limit-0", ["timeline", "x", "--limit", "0"], None, 2),
    ("timeline-limit-negative", ["timeline", "x", "--limit", "-5"], None, 2),
    ("timeline-nul", ["timeline", "a\x00"], None, 2),
    ("timeline-surrogate", ["timeline", "\udcff"], None, 2),
    ("forget-empty", ["forget", ""], None, 2),
    ("forget-garbage", ["forget", "'; DROP TABLE mem_nodes; --"], None, 2),
    ("forget-huge", ["forget", "f" * 100], None, 2),
    ("forget-wildcard", ["forget", "%"], None, 2),
    ("purge-without-yes", ["forget", "{fact}", "--purge"], None, 2),
    ("session-end-not-session", ["session", "end", "--session", "{fact}"], None, 2),
    ("session-end-nul-summary", ["session", "end", "--summary", "a\x00"], None, 2),
    ("session-start-nul", ["session", "start", "a\x00"], None, 2),
    ("ns-switch-empty", ["ns", "switch", ""], None, 2),
    ("ns-switch-traversal", ["ns", "switch", "../x"], None, 2),
    ("ns-switch-too-long", ["ns", "switch", "n" * 65], None, 2),
    ("ns-switch-newline", ["ns", "switch", "a\nb"], None, 2),
    ("stats-bad-ns", ["stats", "--ns", "!!"], None, 2),
    ("global-bad-ns", ["--ns", "no/slash", "recall", "x"], None, 2),
    # not found or ambiguous
    ("forget-unknown", ["forget", "f_fffffffffff"], None, 3),
    ("forget-ambiguous", ["forget", "f_"], None, 3),
    ("forget-other-namespace", ["forget", "{other}"], None, 3),
    ("purge-unknown", ["forget", "d_fff", "--purge", "--yes"], None, 3),
    ("supersedes-unknown", ["store", "fact", "x", "--supersedes", "f_ffff"], None, 3),
    ("supersedes-other-namespace", ["store", "fact", "x", "--supersedes", "{other}"], None, 3),
    ("contradicts-unknown", ["store", "fact", "x", "--contradicts", "d_ffff"], None, 3),
    ("caused-by-other-namespace", ["store", "fact", "x", "--caused-by", "{other}"], None, 3),
    ("derived-from-ambiguous", ["store", "fact", "x", "--derived-from", "f_"], None, 3),
    ("session-unknown", ["store", "fact", "x", "--session", "s_ffff"], None, 3),
    ("session-end-unknown", ["session", "end", "--session", "s_ffff"], None, 3),
]


@pytest.mark.parametrize(
    ("args", "stdin", "code"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_refused_and_changes_nothing(
    cli: Run,
    db_path: Path,
    seeded: dict[str, str],
    args: list[str],
    stdin: bytes | None,
    code: int,
) -> None:
    args = _fill(args, seeded)
    before = harness.tree_digest(db_path.parent)
    assert_clean_error(cli(*args, input=stdin), code, what=args)
    if "--format" not in args:  # the last --format wins, for errors too
        assert_json_error(cli("--format", "json", *args, input=stdin), code, what=args)
    assert harness.tree_digest(db_path.parent) == before


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_refuses_unknown_options(
    cli: Run, db_path: Path, seeded: dict[str, str], name: str
) -> None:
    """Unknown options, unknown formats and bad namespaces, on every command."""
    before = harness.tree_digest(db_path.parent)
    args = COMMANDS[name]
    depth = len(name.split())
    assert_clean_error(cli(*args, "--no-such-option"), 2, what=name)
    if "--format" in OPTIONS[name]:
        assert_clean_error(cli(*args[:depth], "--format", "yaml", *args[depth:]), 2, what=name)
    if "--ns" in OPTIONS[name]:
        assert_clean_error(cli(*args[:depth], "--ns", "../up", *args[depth:]), 2, what=name)
    assert harness.tree_digest(db_path.parent) == before


# ----------------------------------------------------------------------------- the store
def _valid_store(folder: Path) -> Path:
    db = folder / "memory.db"
    with MemoryStore(db) as memory:
        memory.store("fact", "sample content that exists", entities=["Sample"])
    return db


def _not_sqlite(folder: Path) -> Path:
    (folder / "memory.db").write_bytes(os.urandom(8192))
    return folder / "memory.db"


def _text_file(folder: Path) -> Path:
    (folder / "memory.db").write_text("# my notes\nnot a database at all\n")
    return folder / "memory.db"


def _truncated(folder: Path) -> Path:
    db = _valid_store(folder)
    db.write_bytes(db.read_bytes()[:3000])
    return db


def _other_application(folder: Path) -> Path:
    db = folder / "memory.db"
    conn = sqlite3.connect(db)  # rollback journal, as most programs leave it
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('somebody else''s data')")
    conn.commit()
    conn.close()
    return db


def _newer_schema(folder: Path) -> Path:
    db = _valid_store(folder)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    return db


def _directory(folder: Path) -> Path:
    (folder / "memory.db").mkdir()
    (folder / "memory.db" / "keep").write_text("x")
    return folder / "memory.db"


UNUSABLE = {
    "random-bytes": _not_sqlite,
    "text-file": _text_file,
    "truncated": _truncated,
    "other-application": _other_application,
    "newer-schema": _newer_schema,
    "directory": _directory,
}


@pytest.mark.parametrize("condition", sorted(UNUSABLE))
def test_unusable_store_every_command_exits_1(cli: Run, tmp_path: Path, condition: str) -> None:
    """Every command, text and JSON: exit 1, one line, and not a byte changed (the
    other application's database is not even switched to WAL)."""
    folder = tmp_path / "unusable"
    folder.mkdir()
    db = UNUSABLE[condition](folder)
    before = harness.tree_digest(folder)
    for name, args in COMMANDS.items():
        assert_clean_error(cli("--db", str(db), *args), 1, what=(condition, name))
        assert_json_error(
            cli("--db", str(db), "--format", "json", *args), 1, what=(condition, name)
        )
        assert harness.tree_digest(folder) == before, (condition, name)


def test_corrupt_pages_never_crash(cli: Run, tmp_path: Path) -> None:
    """Garbage in the middle of a real store: a command may still answer from pages it
    can read, but never with a traceback or an 'internal error', and never by writing."""
    folder = tmp_path / "corrupt"
    folder.mkdir()
    db = folder / "memory.db"
    with MemoryStore(db) as memory, memory.batch():
        for index in range(150):
            memory.store(
                "fact",
                f"sample content {index} " + "padding " * 40,
                entities=[f"Entity{index % 5}"],
            )
    data = bytearray(db.read_bytes())
    for page in range(3, len(data) // 4096, 2):
        data[page * 4096 + 100 : page * 4096 + 300] = bytes(range(200))
    db.write_bytes(bytes(data))
    for name, args in COMMANDS.items():
        result = cli("--db", str(db), *args)
        assert result.exit_code in (0, 1, 2, 3), (name, result.exit_code)
        assert "Traceback" not in result.stderr and "internal" not in result.stderr, name
        if result.exit_code:
            assert_clean_error(result, result.exit_code, what=name)
        assert db.read_bytes() == bytes(data), name


STATE_VARIANTS: dict[str, bytes | None] = {
    "binary": b"\xff\xfe\x00\x01garbage\x00",
    "invalid-yaml": b"namespace: [1, 2\n",
    "a-list": b"- default\n- other\n",
    "namespace-number": b"namespace: 5\n",
    "namespace-traversal": b'namespace: "../etc"\n',
    "session-garbage": b'namespace: "default"\nsession: "f_nonsense"\n',
    "python-tag": b'namespace: !!python/object/apply:os.system ["echo pwned"]\n',
    "huge": b"#" * 2_000_000 + b"\nnamespace: [\n",
    "directory": None,
}
# Commands that succeed although state.yaml is broken, and why that is right:
STATE_INDEPENDENT = {
    "init": "creates or checks the database only",
    "code index": "builds the code graph, which has no namespace",
}


@pytest.mark.parametrize("variant", sorted(STATE_VARIANTS))
def test_corrupt_state_yaml(cli: Run, tmp_path: Path, variant: str) -> None:
    """A state.yaml that is corrupt or hand-edited into nonsense: exit 1 naming the
    file, nothing changed; never a silent fallback to another namespace."""
    folder = tmp_path / "state"
    folder.mkdir()
    db = _valid_store(folder)
    content = STATE_VARIANTS[variant]
    state = folder / "state.yaml"
    if content is None:
        state.mkdir()
    else:
        state.write_bytes(content)
    before = harness.tree_digest(folder)
    for name, args in COMMANDS.items():
        if name in STATE_INDEPENDENT:
            continue
        line = assert_clean_error(cli("--db", str(db), *args), 1, what=(variant, name))
        assert "state.yaml" in line, (variant, name, line)
        assert harness.tree_digest(folder) == before, (variant, name)
    # The message says "fix or delete it": deleting it is enough.
    if content is None:
        state.rmdir()
    else:
        state.unlink()
    assert cli("--db", str(db), "ns", "current").exit_code == 0


def _drop_file_permission_override() -> None:
    """In the child: give up root's CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER
    so that file modes apply to it (PR_CAPBSET_DROP; the exec then loses them)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2, 3):
        if libc.prctl(24, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


READS = ("recall", "timeline", "stats", "ns list", "ns current")
WRITES = ("store", "forget", "session start", "ns switch")


def assert_reads_work_and_writes_refuse(
    db: Path,
    node_ref: str,
    env: dict[str, str],
    preexec: Any,
    folder: Path,
    before: dict[str, str],
) -> None:
    """Every command on a read-only store, in a child that cannot write: reads exit 0
    with nothing on stderr, writes exit 1 naming the read-only store, any failure is
    one clean line, and no file in the folder changes."""
    for name, args in COMMANDS.items():
        args = [a.replace("f_0", node_ref) for a in args]
        code, out, err, _ = harness.run_fresh(["--db", str(db), *args], env=env, preexec_fn=preexec)
        assert code in (0, 1, 2, 3), (name, code, err)
        if code:
            lines = err.strip().splitlines()
            assert len(lines) == 1 and "Traceback" not in err, (name, err)
            assert "internal" not in err, (name, err)
        if name in READS:
            assert (code, err) == (0, ""), (name, err)
        if name.startswith(WRITES):
            assert code == 1, (name, code, out)
            assert "read-only" in err or "cannot write" in err, (name, err)
        assert harness.tree_digest(folder) == before, name


def test_read_only_store(tmp_path: Path, env: dict[str, str]) -> None:
    """A store whose file and folder are read-only: reads work, writes exit 1 with one
    clear line, and nothing changes. Tests run as root, for whom file modes do not stop
    writes, so the commands run with root's file-permission override dropped; a check
    first proves that this child really cannot write the file."""
    folder = tmp_path / "ro"
    folder.mkdir()
    db = _valid_store(folder)
    (folder / "state.yaml").write_text('namespace: "default"\nsession: null\n')
    for path in (db, folder / "state.yaml"):
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
            pytest.skip(
                "cannot make the store read-only for a child process here "
                "(root without a way to drop CAP_DAC_OVERRIDE)"
            )
        before = harness.tree_digest(folder)
        assert_reads_work_and_writes_refuse(db, "f_", env, preexec, folder, before)
    finally:
        folder.chmod(0o755)
        for path in (db, folder / "state.yaml"):
            path.chmod(0o644)


def test_bad_busy_timeout_setting(tmp_path: Path, env: dict[str, str]) -> None:
    db = tmp_path / "store" / "memory.db"
    for value in ("abc", "-5", "1.5", "1e9x"):
        code, out, err, _ = harness.run_fresh(
            ["--db", str(db), "store", "fact", "x"], env={**env, "NERVAMEM_BUSY_TIMEOUT_MS": value}
        )
        assert (code, out) == (2, ""), (value, err)
        assert "NERVAMEM_BUSY_TIMEOUT_MS" in err and len(err.strip().splitlines()) == 1
    assert not db.exists()


def test_undecodable_arguments_in_a_real_process(tmp_path: Path, env: dict[str, str]) -> None:
    """Bytes that are not UTF-8 on the command line (Python hands them over as lone
    surrogates), with a strict UTF-8 stdout as on most desktops: exit 2, never a crash."""
    db = tmp_path / "store" / "memory.db"
    assert harness.run_fresh(["--db", str(db), "store", "fact", "alpha"], env=env)[0] == 0
    strict = {**env, "PYTHONIOENCODING": "utf-8:strict"}
    for args in (
        [b"store", b"fact", b"alpha \xff beta"],
        [b"recall", b"alpha \xff"],
        [b"recall", b"\xc3"],
        [b"timeline", b"alpha\xfe"],
        [b"forget", b"f_\xff"],
        [b"ns", b"switch", b"ns\xff"],
        [b"--ns", b"\xff", b"stats"],
        [b"store", b"fact", b"x", b"-e", b"\xffEntity"],
        [b"recall", b"x", b"--as-of", b"2026\xff"],
    ):
        before = harness.tree_digest(db.parent)
        code, out, err, _ = harness.run_fresh([b"--db", str(db).encode(), *args], env=strict)
        assert (code, out) == (2, ""), (args, code, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, (args, err)
        assert harness.tree_digest(db.parent) == before


# ----------------------------------------------------------------------------- accepted text
HOSTILE_TEXT = [
    '"',
    '""',
    '"unbalanced quote',
    "it's",
    "'",
    "`",
    "NEAR(alpha bravo)",
    "alpha NEAR/2 bravo",
    "alpha AND",
    "OR",
    "NOT",
    "AND OR NOT",
    "*",
    "alpha*",
    "^alpha",
    "content:alpha",
    "mem_fts:alpha",
    "rank:1",
    "{alpha bravo}: charlie",
    "(",
    ")",
    "(()",
    "-alpha",
    "+alpha",
    ":",
    "\\",
    "%",
    "_",
    "'; DROP TABLE mem_nodes; --",
    "emoji 😀🚀 alpha",
    "مرحبا بالعالم",
    "zero\u200bwidth",
    "e\u0301 combining",
    "ﬁ ligature",
    "line1\nline2\r\nline3",
    "# heading\n- [x] list",
    "<script>alert(1)</script>",
    "\u202eright-to-left override",
    "a" * 5000,
    " ".join(["word"] * 3000),
    "\x1b[31mred\x1b[0m",
    "tab\tseparated",
]


def test_any_text_is_valid_content_and_query(cli: Run, db_path: Path) -> None:
    """FTS5 syntax, quotes, control and bidi characters, long text: stored exactly as
    given, and as a query it recalls within the budget without an error."""
    stored_ids = {}
    for text in HOSTILE_TEXT:
        stored = cli("store", "fact", "--", text)
        assert (stored.exit_code, stored.stderr) == (0, ""), (text, stored.stderr)
        stored_ids[stored.stdout.strip()] = text
    with MemoryStore(db_path) as memory:
        for node_id, text in stored_ids.items():
            assert memory.get(node_id).content == text
    for text in HOSTILE_TEXT:
        recalled = cli("recall", "--budget", "60", "--", text)
        assert (recalled.exit_code, recalled.stderr) == (0, ""), (text, recalled.stderr)
        assert math.ceil(len(recalled.stdout) / 4) <= 60, text
        as_json = cli("recall", "--format", "json", "-", input=text.encode("utf-8"))
        assert as_json.exit_code == 0, (text, as_json.stderr)
        assert json.loads(as_json.stdout)["budget_tokens"] == 500
    for text in HOSTILE_TEXT[::3]:
        timeline = cli("timeline", "--", text)
        assert (timeline.exit_code, timeline.stderr) == (0, ""), text


def test_a_megabyte_of_content_and_of_query(cli: Run, db_path: Path) -> None:
    words = ("alpha", "bravo", "NEAR", "AND", '"q"', "(x)", "ünïcode", "😀")
    big = "megamarker9 " + " ".join(words[i % 8] + str(i % 97) for i in range(150_000))
    assert len(big.encode("utf-8")) > 1_048_576
    stored = cli("store", "fact", "-", input=big.encode("utf-8"))
    assert (stored.exit_code, stored.stderr) == (0, "")
    with MemoryStore(db_path) as memory:
        assert memory.get(stored.stdout.strip()).content == big
    for budget in (500, 1_000_000):
        recalled = cli("recall", "megamarker9", "--budget", str(budget))
        assert recalled.exit_code == 0 and math.ceil(len(recalled.stdout) / 4) <= budget
    whole = cli("recall", "megamarker9", "--budget", "1000000", "--format", "json")
    assert [i["content"] for i in json.loads(whole.stdout)["items"]] == [big]
    for query in (cli("recall", "-", input=big.encode()), cli("recall", "--", big)):
        assert (query.exit_code, query.stderr) == (0, "")
        assert len(query.stdout) <= 2000  # the default budget of 500 tokens
    timeline = cli("timeline", "-", input=big.encode())
    assert (timeline.exit_code, timeline.stderr) == (0, "")


def test_every_accepted_budget_is_respected(cli: Run, seeded: dict[str, str]) -> None:
    """Small budgets are either refused with exit 2 or respected, never exceeded."""
    for index in range(12):
        cli("store", "fact", f"alpha item {index} with a few more words of content")
    accepted = 0
    for budget in [*range(1, 41), 45, 50, 60, 75, 100, 150, 250, 999, 1_000_000]:
        result = cli("recall", "alpha", "--budget", str(budget))
        if result.exit_code == 2:
            assert_clean_error(result, 2, what=budget)
            continue
        assert (result.exit_code, result.stderr) == (0, ""), budget
        assert math.ceil(len(result.stdout) / 4) <= budget, (budget, result.stdout)
        accepted += 1
    assert accepted > 25


def test_empty_and_emptied_store_answers(cli: Run, tmp_path: Path) -> None:
    """A zero-byte file is a new store (as SQLite treats it), not an error."""
    db = tmp_path / "blank" / "memory.db"
    db.parent.mkdir()
    db.write_bytes(b"")
    result = cli("--db", str(db), "recall", "anything")
    assert (result.exit_code, result.stderr) == (0, "")
    shutil.rmtree(db.parent)
