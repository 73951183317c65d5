"""Which source files a repository has, and the paths the bridge records: relative POSIX
paths from the folder that holds ``.nervapack/`` (or from a recorded root)."""

from __future__ import annotations

import errno
import os
import re
import stat
import subprocess
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from ..errors import BadInputError
from ..locate import shown_path
from .languages import SOURCE_SUFFIXES

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".nervapack",
        "__pycache__",
        "node_modules",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "site-packages",
    }
)


# Build output and vendored dependencies: skipped in a walk outside git, where no
# .gitignore says so (in a git work tree, what git tracks is indexed, vendor/ included).
BUILD_DIRS = frozenset({"target", "dist", "vendor", "bower_components"})
# A file at the scanned root, in gitignore syntax, naming what else not to index.
IGNORE_FILE = ".nervamemignore"


def _in_skipped_dir(rel_parts: Sequence[str]) -> bool:
    return any(part in SKIP_DIRS for part in rel_parts[:-1])


class IgnoreRules:
    """The patterns of a ``.nervamemignore`` in gitignore syntax: ``#`` comments, ``!``
    to re-include, a trailing ``/`` for folders only, a ``/`` elsewhere to anchor at the
    root, ``*``, ``?``, ``[...]`` and ``**``. The last pattern that matches decides."""

    def __init__(self, text: str) -> None:
        self.rules: list[tuple[re.Pattern[str], bool, bool]] = []
        for raw in text.splitlines():
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            line = line[1:] if negated else line
            line = line[1:] if line.startswith("\\") else line
            folder_only = line.endswith("/")
            line = line.rstrip("/")
            anchored = "/" in line
            line = line.lstrip("/")
            if line:
                pattern = _glob_regex(line)
                if not anchored:
                    pattern = f"(?:.*/)?{pattern}"
                self.rules.append((re.compile(f"^{pattern}$"), negated, folder_only))

    def ignores(self, rel: str) -> bool:
        """Whether the file at ``rel`` (relative POSIX path) is ignored: itself or a
        folder above it matched."""
        parts = rel.split("/")
        folders = ["/".join(parts[:i]) for i in range(1, len(parts))]
        # An ignored folder's files stay ignored, as in git.
        return any(self._decide(f, True) for f in folders) or self._decide(rel, False)

    def _decide(self, path: str, is_folder: bool) -> bool:
        verdict = False
        for pattern, negated, folder_only in self.rules:
            if folder_only and not is_folder:
                continue
            if pattern.match(path):
                verdict = not negated
        return verdict


def _glob_regex(glob: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(glob):
        char = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = glob.find("]", i + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = glob[i + 1 : end]
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def ignore_rules(root: Path) -> IgnoreRules | None:
    try:
        text = (root / IGNORE_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return IgnoreRules(text)


def list_source_files(root: Path) -> list[str]:
    """Source files under ``root`` (relative POSIX paths, sorted): what git tracks or
    would track when ``root`` is in a git work tree, else a walk that skips VCS folders,
    ``.nervapack``, caches, virtual environments and build and dependency folders
    (``target``, ``dist``, ``vendor``); either way less what ``.nervamemignore`` names."""
    listed = _git_files(root)
    if listed is None:
        listed = _walk_files(root)
    rules = ignore_rules(root)
    venv_dirs: dict[Path, bool] = {}
    result: list[str] = []
    for rel in listed:
        parts = PurePosixPath(rel).parts
        if not rel.endswith(SOURCE_SUFFIXES) or _in_skipped_dir(parts):
            continue
        if rules is not None and rules.ignores(rel):
            continue
        if _inside_venv(root, parts, venv_dirs):
            continue
        if (root / rel).is_file():
            result.append(rel)
    return sorted(set(result))


def _git_files(root: Path) -> list[str] | None:
    try:
        completed = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ],
            capture_output=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if completed.returncode != 0:
        return None
    names = completed.stdout.decode("utf-8", "surrogateescape").split("\0")
    return [name for name in names if name]


def _walk_files(root: Path) -> list[str]:
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in SKIP_DIRS
            and d not in BUILD_DIRS
            and not d.startswith(".")
            and not (here / d / "pyvenv.cfg").exists()
        )
        rel_folder = here.relative_to(root)
        found.extend((rel_folder / name).as_posix() for name in files)
    return found


def _inside_venv(root: Path, parts: Sequence[str], cache: dict[Path, bool]) -> bool:
    folder = root
    for part in parts[:-1]:
        folder = folder / part
        if folder not in cache:
            cache[folder] = (folder / "pyvenv.cfg").exists()
        if cache[folder]:
            return True
    return False


def default_root(graph_path: Path) -> Path:
    """The folder that holds ``.nervapack/``: graph file paths are relative to it."""
    return graph_path.parent.parent.resolve()


def default_scan_root(base: Path, cwd: Path, home: Path | None) -> Path:
    """The folder ``code index`` reads when given none: the project. That is ``base``,
    the folder holding the store's folder, unless the store in use is the home store
    (``home``: no project store was found) or ``base`` lies above the git work tree of
    the working folder: then the work tree, else the working folder. Never silently
    a folder above the user's repository."""
    here = cwd.resolve()
    top = git_work_tree(here)
    if top is not None and top != base and relative_to(top, base) is not None:
        return top  # the store's folder is above the repository: index the repository
    if home is not None and base == home.resolve():
        return top or here
    return base


def git_work_tree(folder: Path) -> Path | None:
    """The top of the git work tree holding ``folder``, or None (no git, not in one)."""
    try:
        completed = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--show-toplevel"],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    top = completed.stdout.decode("utf-8", "surrogateescape").strip()
    return Path(top).resolve() if completed.returncode == 0 and top else None


def relative_to(path: Path, base: Path) -> str | None:
    try:
        rel = path.relative_to(base).as_posix()
    except ValueError:
        return None
    return "" if rel == "." else rel


def normalise_path(text: str, *, strip: bool = True) -> str:
    """``text`` with ``/`` separators and no leading ``./``; typed text is also stripped
    (``strip``), a recorded path is not: `` lead.py`` is a file name of its own."""
    posix = (text.strip() if strip else text).replace("\\", "/")
    while posix.startswith("./"):
        posix = posix[2:]
    return posix


def source_path(root: Path, file_path: str) -> Path:
    path = Path(file_path)
    return path if path.is_absolute() else root / file_path


def read_source(path: Path) -> bytes:
    """The bytes of a regular file. Anything else at that path (a named pipe, a device
    such as ``/dev/zero`` or ``/dev/stdin``) raises OSError instead of blocking or
    reading forever: the open does not wait for a pipe's writer."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read()
    finally:
        os.close(fd)


def expanded_path(text: str | os.PathLike[str]) -> Path:
    """A path the user gave, ~ expanded: ~user of no such user (or ~ with no home
    folder) is bad input, not an internal error; so is a NUL byte, which no path holds."""
    given = os.fspath(text)
    if "\0" in given:
        shown = shown_path(given.replace("\0", "\\0"))
        raise BadInputError(f"{shown} holds a NUL byte, which no path can")
    try:
        return Path(text).expanduser()
    except (RuntimeError, KeyError):
        raise BadInputError(
            f"{shown_path(text)} cannot be expanded: no such user or no home folder"
        ) from None
