"""A real git repository for team-memory tests: a bare origin holding a project, and
clones of it, each with a shared store (``nervamem init --shared`` through the CLI) and
git run as a subprocess with no user configuration and no network."""

from __future__ import annotations

import random
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

from typer.testing import CliRunner

from nervamem import MemoryStore
from nervamem.cli import app

GIT = ("git", "-c", "user.name=Team Test", "-c", "user.email=team@example.invalid")
GIT_ENV = {
    "PATH": "/usr/bin:/bin:/usr/local/bin",
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
}
START = datetime(2026, 1, 30, 12, 0, tzinfo=timezone.utc)


def git(folder: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*GIT, *args], cwd=folder, env=GIT_ENV, capture_output=True, text=True, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {folder}:\n{done.stderr}")
    return done


class Clock:
    """One clock for every clone (as machines share wall time): 9 hours a reading, so
    the events fall into several month folders."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(hours=9)
        return self.now


class Clone:
    def __init__(self, root: Path, name: str, origin: Path, clock: Clock, seed: int) -> None:
        self.name = name
        self.folder = root / name
        git(root, "clone", "-q", str(origin), name)
        db = self.folder / ".nervapack" / "memory.db"
        result = CliRunner().invoke(app, ["--db", str(db), "init", "--shared"])
        assert result.exit_code == 0, result.output
        draw = random.Random(seed)
        self.memory = MemoryStore(db, clock=clock, random_source=lambda: draw.getrandbits(64))
        assert self.memory.shared
        self.session: str | None = None

    # ------------------------------------------------------------------ git
    def commit(self) -> None:
        git(self.folder, "add", "-A", ".nervapack")
        if git(self.folder, "diff", "--cached", "--quiet", check=False).returncode:
            git(self.folder, "commit", "-q", "-m", f"memory of {self.name}")

    def merge(self, *source: str) -> None:
        """Commit, then merge ``source`` (a remote and branch, or a peer's path):
        (b) it never stops on a conflict."""
        self.commit()
        done = git(self.folder, "pull", "-q", "--no-rebase", "--no-edit", *source, check=False)
        unmerged = git(self.folder, "diff", "--name-only", "--diff-filter=U").stdout.split()
        assert not unmerged, f"merge conflict in {unmerged}"
        assert done.returncode == 0, done.stderr
        self.memory.sync()

    def pull(self) -> None:
        self.merge("origin", "main")

    def push(self) -> None:
        self.pull()
        git(self.folder, "push", "-q", "origin", "HEAD:main")

    # ------------------------------------------------------------------ memory
    def current(self, kinds: tuple[str, ...] = ("fact", "decision")) -> list[str]:
        marks = ",".join("?" * len(kinds))
        return [
            row[0]
            for row in self.memory.connection.execute(
                f"SELECT id FROM mem_nodes WHERE kind IN ({marks}) AND tombstoned = 0 "
                "AND valid_until IS NULL ORDER BY id",
                kinds,
            )
        ]

    def purged(self) -> set[str]:
        """The nodes a purge removed for good, here or on a clone merged here."""
        rows = self.memory.connection.execute("SELECT node_id FROM mem_purged")
        return {row[0] for row in rows}

    def conflicts(self) -> list[list[str]]:
        """Groups of current successors of one node."""
        rows = self.memory.connection.execute(
            "SELECT e.dst, group_concat(e.src) FROM mem_edges e JOIN mem_nodes s "
            "ON s.id = e.src WHERE e.kind = 'SUPERSEDES' AND s.tombstoned = 0 "
            "AND s.valid_until IS NULL GROUP BY e.dst HAVING count(*) > 1 ORDER BY e.dst"
        ).fetchall()
        return [sorted(row[1].split(",")) for row in rows]


def make_origin(root: Path) -> Path:
    """The project the team works on: one commit on main, before anyone shares memory."""
    origin = root / "origin.git"
    git(root, "init", "-q", "--bare", "--initial-branch=main", str(origin))
    folder = root / "project"
    git(root, "init", "-q", "--initial-branch=main", str(folder))
    (folder / "README").write_text("the project\n")
    git(folder, "add", "README")
    git(folder, "commit", "-q", "-m", "project")
    git(folder, "push", "-q", str(origin), "main")
    return origin
