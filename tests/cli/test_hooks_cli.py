"""``nervamem hooks record`` and ``hooks backfill`` through the CLI, with snapshots of
every format (fixed commit dates and authors make the commit hashes fixed too), and the
post-commit hook on a repository named like its package."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Run = Callable[..., Any]
FORMATS = ("markdown", "json", "table")
ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.both_engines,
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]


def git(repo: Path, *args: str, **env: str) -> str:
    full = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    full.update(
        GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com", GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_DATE="2026-07-01T10:00:00Z", GIT_COMMITTER_DATE="2026-07-01T10:00:00Z",
        **env,
    )  # fmt: skip
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=full, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "rich"
    (repo / "rich").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "rich" / "__init__.py").write_text(
        'VERSION = "1"\n\n\ndef render(text):\n    return text\n', encoding="utf-8"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    (repo / "rich" / "__init__.py").write_text(
        'VERSION = "1"\n\n\ndef render(text):\n    return text.strip()\n', encoding="utf-8"
    )
    git(repo, "commit", "-q", "-am", "strip\n\nDecision: render strips its text")
    return repo


@pytest.mark.parametrize("fmt", FORMATS)
def test_backfill_formats(
    cli: Run, repo: Path, snapshot: Any, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    db = str(repo / ".nervapack" / "memory.db")
    assert cli("--db", db, "code", "index").exit_code == 0
    result = cli("--db", db, "hooks", "backfill", "--format", fmt, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.stderr
    assert result.stdout == snapshot
    again = cli("--db", db, "hooks", "record", "HEAD", "--format", fmt, env={"COLUMNS": "200"})
    assert again.exit_code == 0, again.stderr
    assert again.stdout == snapshot


def test_backfill_outside_a_repository_is_bad_input(cli: Run, tmp_path: Path) -> None:
    result = cli("hooks", "backfill", "--repo", str(tmp_path))
    assert result.exit_code == 2
    assert "git rev-parse" in result.stderr


def _foreground_hook(repo: Path, tmp_path: Path, db: Path) -> dict[str, str]:
    """Install the post-commit hook in ``repo``, running this checkout's nervamem in the
    foreground on ``db``; the environment a commit needs for it."""
    import sys

    shim = tmp_path / "bin" / "nervamem"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m nervamem "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    hook = repo / ".git" / "hooks" / "post-commit"
    shutil.copyfile(ROOT / "nervamem" / "git_hooks" / "post-commit", hook)
    hook.chmod(0o755)
    return {
        "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}",
        "NERVAMEM_DB": str(db),
        "NERVAMEM_HOOK_FOREGROUND": "1",
        "PYTHONPATH": str(ROOT),
    }


def test_the_hook_anchors_the_changed_function_not_the_package(repo: Path, tmp_path: Path) -> None:
    """The repository is named like its package: the older hook passed -e rich, which
    anchored every commit to rich/__init__.py."""
    from nervamem import MemoryStore

    db = repo / ".nervapack" / "memory.db"
    env = _foreground_hook(repo, tmp_path, db)
    with MemoryStore(db) as memory:
        memory.index_code()
    (repo / "rich" / "__init__.py").write_text(
        'VERSION = "2"\n\n\ndef render(text):\n    return text.strip().lower()\n',
        encoding="utf-8",
    )
    git(repo, "-c", "core.hooksPath=.git/hooks", "commit", "-q", "-am", "lower", **env)
    with MemoryStore(db) as memory:
        [action] = memory.list_nodes()
        [detail] = memory.show([action.id])
        assert [a.qualname for a in detail.anchors] == ["render"]
        assert detail.entities == ("rich/__init__.py::render",)
        assert "rich" not in detail.entities
        json.dumps(detail.data)  # plain data


UPGRADE = "the store needs a schema upgrade: run 'nervamem stats' once, then "


def _store_before_the_last_migration(db: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """A store as the nervamem before the newest migration left it; its schema version."""
    from nervamem import MemoryStore
    from nervamem.storage import sqlite
    from nervamem.storage.sqlite import migrations
    from nervamem.storage.sqlite import sql as sqlite_sql

    old = len(migrations.MIGRATIONS) - 1
    with monkeypatch.context() as patch:
        patch.setattr(sqlite, "MIGRATIONS", migrations.MIGRATIONS[:old])
        patch.setattr(sqlite, "SCHEMA_VERSION", old)
        patch.setattr(sqlite_sql.FRAGMENTS, "ignore_existing_edge", " ON CONFLICT DO NOTHING")
        with MemoryStore(db) as memory:
            memory.store("fact", "written before the upgrade", entities=["render"])
    return old


def _version(db: Path) -> int:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def test_hook_commands_refuse_a_store_that_needs_an_upgrade_instead_of_migrating(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review F-6: a large store's migration outlasted the post-commit hook's time limit,
    so the hook was killed every time and commits went unrecorded in silence. The hook
    commands now fail at once with one line saying what to run, which the foreground
    hook shows; the store is left as it was until a plain command upgrades it."""
    db = repo / ".nervapack" / "memory.db"
    db.parent.mkdir()
    old = _store_before_the_last_migration(db, monkeypatch)
    env = _foreground_hook(repo, tmp_path, db)
    (repo / "rich" / "__init__.py").write_text("VERSION = '2'\n", encoding="utf-8")
    full = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | env
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "core.hooksPath=.git/hooks", "-c", "user.name=t",
         "-c", "user.email=t@example.com", "commit", "-q", "-am", "two"],
        env=full, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == f"nervamem: error: {UPGRADE}'nervamem hooks backfill'"
    assert "not recorded" in lines[1]
    assert _version(db) == old  # not migrated, nothing written

    from typer.testing import CliRunner

    from nervamem.cli import app

    runner = CliRunner()
    record = runner.invoke(
        app, ["--db", str(db), "-f", "json", "hooks", "record", "--repo", str(repo)]
    )
    assert record.exit_code == 1
    error = json.loads(record.stderr)["error"]
    assert error["code"] == "schema_upgrade_needed"
    assert error["message"] == f"{UPGRADE}'nervamem hooks backfill'"
    sync = runner.invoke(app, ["--db", str(db), "sync"], env={"NERVAMEM_NO_UPGRADE": "1"})
    assert sync.exit_code == 1
    assert sync.stderr == f"nervamem: error: {UPGRADE}'nervamem sync'\n"
    assert _version(db) == old

    # One plain command upgrades it; then the hook's command works and backfill catches up.
    assert runner.invoke(app, ["--db", str(db), "stats"]).exit_code == 0
    assert _version(db) > old
    assert (
        runner.invoke(app, ["--db", str(db), "hooks", "record", "--repo", str(repo)]).exit_code == 0
    )
    backfill = runner.invoke(app, ["--db", str(db), "hooks", "backfill", "--repo", str(repo)])
    assert backfill.exit_code == 0, backfill.stderr
