"""Issue 20's smaller cuts, each through the CLI: what a new user and an agent tripped
over. Each test failed before its fix."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

Run = Callable[..., Any]

READS = [
    ("recall", "hello"),
    ("timeline", "hello"),
    ("list",),
    ("show", "f-1234"),
    ("stats",),
    ("forget", "f-1234"),
    ("consolidate",),
    ("ns", "list"),
    ("ns", "current"),
    ("session", "end"),
    ("code-for", "x.py"),
    ("code-to", "f-1234"),
    ("verify-staleness",),
]


@pytest.mark.parametrize("command", READS, ids=" ".join)
def test_a_read_of_a_missing_db_path_fails_and_creates_nothing(
    cli: Run, tmp_path: Path, command: tuple[str, ...]
) -> None:
    typo = tmp_path / "typo.db"
    result = cli("--db", str(typo), *command)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert "no store at" in result.stderr and "init" in result.stderr
    assert list(tmp_path.glob("typo.db*")) == []
    assert not (tmp_path / "state.yaml").exists()


def test_a_missing_db_path_error_in_json(cli: Run, tmp_path: Path) -> None:
    result = cli("--db", str(tmp_path / "typo.db"), "-f", "json", "recall", "x")
    assert json.loads(result.stderr)["error"]["code"] == "store_missing"


def test_init_and_writes_create_the_db_path(cli: Run, tmp_path: Path) -> None:
    assert cli("--db", str(tmp_path / "a.db"), "init").exit_code == 0
    assert cli("--db", str(tmp_path / "b.db"), "store", "fact", "x").exit_code == 0
    assert cli("--db", str(tmp_path / "c.db"), "session", "start").exit_code == 0
    assert {p.name for p in tmp_path.glob("?.db")} == {"a.db", "b.db", "c.db"}
    assert cli("--db", str(tmp_path / "b.db"), "recall", "x").exit_code == 0


def test_global_options_are_accepted_after_the_command(cli: Run, tmp_path: Path) -> None:
    db = str(tmp_path / "after.db")
    node = cli("store", "fact", "written after", "--db", db).stdout.strip()
    assert (tmp_path / "after.db").is_file()
    found = json.loads(cli("recall", "written", "--db", db, "--format", "json").stdout)
    assert [item["id"] for item in found["items"]] == [node]
    assert json.loads(cli("ns", "list", f"--db={db}", "-f", "json").stdout) == {
        "namespaces": [{"name": "default", "nodes": 1}]
    }
    listed = cli("list", "--db", db, "--tokenizer", "char", "-f", "json")
    assert listed.exit_code == 0, listed.stderr
    assert [item["id"] for item in json.loads(listed.stdout)["items"]] == [node]


@pytest.mark.parametrize(
    "args",
    [("store", "fact", "x", "--db"), ("recall", "auth", "--db"), ("list", "--tokenizer")],
)
def test_a_global_option_after_the_command_without_its_value(
    cli: Run, args: tuple[str, ...]
) -> None:
    """Moved before the command, it took the command's name for its value: "No such
    command 'fact'" for 'store fact x --db'."""
    result = cli(*args)
    assert result.exit_code == 2 and result.stdout == ""
    assert f"Option '{args[-1]}' requires an argument." in result.stderr, result.stderr


def test_after_double_dash_a_global_option_is_content(cli: Run, tmp_path: Path) -> None:
    db = str(tmp_path / "after.db")
    result = cli("store", "fact", "--db", db, "--", "--db is an option")
    assert result.exit_code == 0, result.stderr
    shown = json.loads(cli("--db", db, "list", "-f", "json").stdout)
    assert shown["items"][0]["content"] == "--db is an option"
    # An option value that looks like a root option stays the command's.
    result = cli("--db", db, "store", "decision", "x", "--rationale", "--db")
    assert result.exit_code == 0, result.stderr


def test_ns_session_start_then_store_and_end_in_that_namespace(cli: Run) -> None:
    session = cli("--ns", "x", "session", "start", "x work").stdout.strip()
    assert cli("--ns", "x", "ns", "current").stdout == f"namespace: x\nsession: {session}\n"
    node = cli("--ns", "x", "store", "fact", "in x").stdout.strip()
    shown = json.loads(cli("--ns", "x", "show", node, "-f", "json").stdout)["nodes"][0]
    assert shown["session"]["id"] == session
    ended = cli("--ns", "x", "session", "end")
    assert (ended.exit_code, ended.stdout.strip()) == (0, session)


def _git_init(folder: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q", str(folder)], check=True)


def test_code_index_without_a_project_store_indexes_the_project_not_home(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No store upwards: the home store is used, but the code indexed is the git work
    tree the user is in, not every project under the home folder."""
    home = tmp_path / "home"
    (home / "otherproject").mkdir(parents=True)
    (home / "otherproject" / "other.py").write_text("def elsewhere():\n    pass\n")
    repo = home / "work" / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "mine.py").write_text("def mine():\n    pass\n")
    _git_init(repo)
    monkeypatch.delenv("NERVAPACK_MEMORY_DB")
    monkeypatch.chdir(repo / "pkg")
    result = cli("code", "index", "-f", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["root"] == str(repo.resolve())
    assert document["files"] == 1
    assert "nervamem init" in result.stderr
    graph = (home / ".nervapack" / "graph.graphml").read_text(encoding="utf-8")
    assert "mine.py" in graph and "other.py" not in graph


def test_code_index_never_reads_above_the_repository(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store in a folder above the repository (an umbrella folder) indexes the
    repository the user works in."""
    umbrella = tmp_path / "umbrella"
    (umbrella / "sibling").mkdir(parents=True)
    (umbrella / "sibling" / "s.py").write_text("x = 1\n")
    repo = umbrella / "repo"
    repo.mkdir()
    (repo / "r.py").write_text("y = 2\n")
    _git_init(repo)
    monkeypatch.chdir(repo)
    db = str(umbrella / ".nervapack" / "memory.db")
    document = json.loads(cli("--db", db, "code", "index", "-f", "json").stdout)
    assert document["root"] == str(repo.resolve()) and document["files"] == 1


def test_init_keeps_the_store_out_of_git(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    monkeypatch.delenv("NERVAPACK_MEMORY_DB")
    project = tmp_path / "project"
    project.mkdir()
    _git_init(project)
    monkeypatch.chdir(project)
    assert cli("init").exit_code == 0
    (project / ".nervapack" / "events").mkdir()
    (project / ".nervapack" / "events" / "e1.json").write_text("{}\n")
    status = subprocess.run(
        ["git", "-C", str(project), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True, text=True, check=True,
    ).stdout.split("\n")  # fmt: skip
    shown = sorted(line[3:] for line in status if line)
    assert shown == [".nervapack/.gitignore", ".nervapack/events/e1.json"]
    # A second init leaves a .gitignore the user changed alone.
    (project / ".nervapack" / ".gitignore").write_text("mine\n")
    assert cli("init").exit_code == 0
    assert (project / ".nervapack" / ".gitignore").read_text() == "mine\n"


def test_init_below_a_folder_with_a_store_warns(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NERVAPACK_MEMORY_DB")
    outer = tmp_path / "outer"
    inner = outer / "sub" / "inner"
    inner.mkdir(parents=True)
    monkeypatch.chdir(outer)
    first = cli("init")
    assert (first.exit_code, first.stderr) == (0, "")
    monkeypatch.chdir(inner)
    second = cli("init")
    assert second.exit_code == 0
    assert str(outer / ".nervapack" / "memory.db") in second.stderr
    assert "warning" in second.stderr
    assert cli("init").stderr == ""  # it exists now: nothing new to warn about


def test_demo_echoes_commands_with_their_quotes(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    shim = tmp_path / "bin" / "nervamem"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m nervamem "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(root)}  # fmt: skip
    done = subprocess.run(
        ["sh", str(root / "demo.sh")], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "\n$ nervamem recall 'auth mechanism' --as-of 2026-03-15\n" in done.stdout
    assert "\n$ nervamem session end --summary 'auth moved to JWT'\n" in done.stdout


def test_store_valid_until_through_the_cli(cli: Run) -> None:
    node = cli("store", "fact", "deploys are frozen", "--valid-until", "2026-07-10T18:00Z")
    assert node.exit_code == 0, node.stderr
    shown = json.loads(cli("show", node.stdout.strip(), "-f", "json").stdout)["nodes"][0]
    assert shown["valid_until"] == "2026-07-10T18:00:00.000Z" and shown["status"] == "current"
    bad = cli("store", "fact", "x", "--valid-until", "2020-01-01")
    assert bad.exit_code == 2 and "--valid-until" in bad.stderr


@pytest.mark.parametrize("path", [(), ("recall",), ("list",), ("stats",)], ids=repr)
def test_options_with_fixed_values_show_their_choices(cli: Run, path: tuple[str, ...]) -> None:
    text = cli(*path, "--help", env={"COLUMNS": "120"}).stdout
    assert "--format [markdown|json|table]" in text
    assert "--format <str>" not in text and "--tokenizer <str>" not in text
    if path in ((), ("recall",)):
        assert "--tokenizer [char|tiktoken]" in text
    if path in (("recall",), ("list",)):
        assert "--kind [session|fact|decision|action|outcome|entity|procedure|preference]" in text
