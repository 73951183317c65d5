"""Every git command team memory runs on a shared store's events folder: after a purge
removed event files, their deletion staged in git's index and whether a commit holds a
copy. The storage layer removes the files and knows nothing of git
(EventLog.take_removed); what git makes of the removal is asked here, once the purge's
write has committed.

Best effort and silent throughout: no git, a folder outside a repository, or an index
locked by a running git leave the index as it is (docs/team-memory.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from ..storage.event_log import EventLog

GIT_TIMEOUT_S = 10


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
    import subprocess

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
    import subprocess

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
