"""nervamem's git hooks in a real repository: installed idempotently beside a user's own
hooks, removed without touching theirs, and never blocking or failing git."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from nervamem.team import hook_install

GIT = ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com"]


def git(repo: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GIT, *args], cwd=repo, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    assert git(folder, "init", "-q", "-b", "main").returncode == 0
    (folder / "README").write_text("hello\n")
    git(folder, "add", "README")
    assert git(folder, "commit", "-q", "-m", "first").returncode == 0
    return folder


USER_HOOK = '#!/bin/sh\necho user hook ran >> "$(git rev-parse --git-dir)/user-hook.log"\n'


def test_install_keeps_the_users_hook_and_is_idempotent(repo: Path) -> None:
    hooks = repo / ".git" / "hooks"
    (hooks / "post-commit").write_text(USER_HOOK)
    os.chmod(hooks / "post-commit", 0o700)
    first = {change.name: change.action for change in hook_install.install(repo)}
    assert first == {
        "post-commit": "chained",
        "post-merge": "created",
        "post-checkout": "created",
        "post-rewrite": "created",
    }
    user = (hooks / "post-commit").read_text()
    assert user.startswith(USER_HOOK) and user.count(hook_install.BLOCK_START) == 1
    assert stat.S_IMODE((hooks / "post-commit").stat().st_mode) == 0o755 & 0o711 | 0o700
    assert hook_install.MARKER in (hooks / "nervamem-post-commit").read_text()
    for name in ("post-merge", "post-checkout", "post-rewrite"):
        assert os.access(hooks / name, os.X_OK)
    again = {change.name: change.action for change in hook_install.install(repo)}
    assert again == {
        **first,
        "post-merge": "unchanged",
        "post-checkout": "unchanged",
        "post-rewrite": "unchanged",
    }
    assert (hooks / "post-commit").read_text() == user  # one block, not two
    removed = {change.name: change.action for change in hook_install.uninstall(repo)}
    assert removed == {
        "post-commit": "unchained",
        "post-merge": "removed",
        "post-checkout": "removed",
        "post-rewrite": "removed",
    }
    assert (hooks / "post-commit").read_text() == USER_HOOK
    assert sorted(p.name for p in hooks.iterdir() if "nervamem" in p.name) == []
    assert not (hooks / "post-merge").exists()


def test_install_follows_core_hooks_path(repo: Path) -> None:
    git(repo, "config", "core.hooksPath", "githooks")
    hook_install.install(repo)
    assert (repo / "githooks" / "post-merge").exists()
    assert not (repo / ".git" / "hooks" / "post-merge").exists()


def test_install_outside_a_repository_is_bad_input(tmp_path: Path) -> None:
    from nervamem.errors import BadInputError

    with pytest.raises(BadInputError, match="not in a git repository"):
        hook_install.install(tmp_path)


def test_the_sync_hook_never_blocks_or_fails_git(repo: Path, tmp_path: Path) -> None:
    """A nervamem that hangs until told to stop, then fails: git merge and checkout still
    return at once with status 0 (if the hook waited, git would hit the timeout)."""
    (repo / ".nervapack" / "events").mkdir(parents=True)
    (repo / ".nervapack" / "events" / ".keep").write_text("")
    git(repo, "add", "-f", ".nervapack/events/.keep")
    git(repo, "commit", "-q", "-m", "shared")
    hook_install.install(repo)
    release = tmp_path / "release"
    ran = tmp_path / "ran"
    fake = tmp_path / "fake-nervamem"
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> "{ran}"\n'
        f'i=0; while [ ! -e "{release}" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done\n'
        "exit 1\n"
    )
    fake.chmod(0o755)
    env = {**os.environ, "NERVAMEM_BIN": str(fake)}
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "side.txt").write_text("side\n")
    git(repo, "add", "side.txt")
    git(repo, "commit", "-q", "-m", "side")
    git(repo, "checkout", "-q", "main")
    merged = subprocess.run(
        [*GIT, "merge", "-q", "--no-edit", "side"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=15,
        check=False,
    )
    release.write_text("")
    assert merged.returncode == 0, merged.stderr
    assert merged.stdout == "" and merged.stderr == ""
    # The background sync did run, against the repository's store.
    for _ in range(100):
        if ran.exists() and "sync" in ran.read_text():
            break
        subprocess.run(["sleep", "0.05"], check=False)
    assert f"--db {repo}/.nervapack/memory.db sync" in ran.read_text()


def test_the_sync_hook_leaves_a_repository_without_shared_memory_alone(
    repo: Path, tmp_path: Path
) -> None:
    hook_install.install(repo)
    ran = tmp_path / "ran"
    fake = tmp_path / "fake-nervamem"
    fake.write_text(f'#!/bin/sh\necho "$@" >> "{ran}"\n')
    fake.chmod(0o755)
    env = {**os.environ, "NERVAMEM_BIN": str(fake), "NERVAMEM_HOOK_FOREGROUND": "1"}
    subprocess.run(
        [*GIT, "checkout", "-q", "-b", "other"], cwd=repo, env=env, check=True, timeout=15
    )
    assert not ran.exists()
