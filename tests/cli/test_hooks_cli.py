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
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


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


def test_the_hook_anchors_the_changed_function_not_the_package(repo: Path, tmp_path: Path) -> None:
    """The repository is named like its package: the older hook passed -e rich, which
    anchored every commit to rich/__init__.py."""
    import sys

    from nervamem import MemoryStore

    db = repo / ".nervapack" / "memory.db"
    shim = tmp_path / "bin" / "nervamem"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m nervamem "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    hook = repo / ".git" / "hooks" / "post-commit"
    shutil.copyfile(ROOT / "nervamem" / "git_hooks" / "post-commit", hook)
    hook.chmod(0o755)
    env = {
        "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}",
        "NERVAMEM_DB": str(db),
        "NERVAMEM_HOOK_FOREGROUND": "1",
        "PYTHONPATH": str(ROOT),
    }
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
