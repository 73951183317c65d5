"""Every git command team memory runs. Reading commits for ``hooks record`` and
``backfill`` (:func:`git`: a failure is bad input); where git runs hooks from, for
``hooks install``; and after a purge removed event files, their deletion staged in git's
index and whether a commit holds a copy. The storage layer removes the files and knows
nothing of git (EventLog.take_removed); what git makes of the removal is asked here,
once the purge's write has committed: best effort and silent, as no git, a folder
outside a repository, or an index locked by a running git leave the index as it is
(docs/team-memory.md)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BadInputError

if TYPE_CHECKING:
    from ..storage.event_log import EventLog

# A purge's git commands run after it has committed, best effort: they must not hold
# the command up long. Reading a commit (its diff, on a large repository) may take longer.
GIT_TIMEOUT_S = 10
READ_TIMEOUT_S = 60


def git(repo: Path, *args: str) -> bytes:
    """Run git in ``repo``; a failure is bad input (not a repository, an unknown REV)."""
    try:
        completed = subprocess.run(
            ["git", "-C", str(repo), "-c", "core.quotePath=false", *args],
            capture_output=True,
            timeout=READ_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        raise BadInputError("git is not installed (it is needed to read commits)") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise BadInputError(f"git failed: {exc}") from None
    if completed.returncode != 0:
        message = completed.stderr.decode("utf-8", "replace").strip().splitlines()
        raise BadInputError(f"git {args[0]}: {message[0] if message else 'failed'}")
    return completed.stdout


def work_tree(folder: Path) -> Path:
    return Path(git(folder, "rev-parse", "--show-toplevel").decode("utf-8", "replace").strip())


def hooks_folder(repo: Path) -> Path:
    """The folder git runs hooks from (core.hooksPath, else .git/hooks)."""
    try:
        completed = subprocess.run(
            ["git", "rev-parse", "--path-format=absolute", "--git-path", "hooks"],
            cwd=repo,
            capture_output=True,
            check=False,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BadInputError(f"cannot run git in {repo}: {exc}") from None
    if completed.returncode != 0:
        raise BadInputError(f"{repo} is not in a git repository")
    return Path(completed.stdout.decode().strip())


def untrack_removed(log: EventLog) -> None:
    """The event files the last purge (or a sync's take-out) removed, out of git's index
    too, and ``log.removed_in_history`` set to whether a commit holds one of them (the
    purge's note about history says so only then)."""
    removed = log.take_removed()
    if removed:
        unstage(log.folder, removed)
        log.removed_in_history = in_history(log.folder, removed)


def unstage(folder: Path, paths: list[Path]) -> None:
    """Take event files a purge deleted out of git's index too (``git rm --cached``):
    one staged with ``git add`` and never committed would otherwise go into the next
    commit with the purged content; for one committed already, its deletion is staged."""
    try:
        subprocess.run(
            ["git", "-C", str(folder), "rm", "--cached", "--quiet", "--ignore-unmatch", "--"]
            + [str(path) for path in paths],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        pass


def in_history(folder: Path, paths: list[Path]) -> bool | None:
    """Whether any commit of the repository holds one of ``paths``: False in a
    repository with no commits (or none that touched them), None where git cannot say
    (no git, no repository, a time-out)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "rev-list", "--all", "-n", "1", "--"]
            + [str(path) for path in paths],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return bool(done.stdout.strip())
