"""Installing nervamem's git hooks into a repository, and removing them.

The hooks: ``post-commit`` records each commit (docs/guide-git-hooks.md); ``post-merge``,
``post-checkout`` and ``post-rewrite`` run ``nervamem sync`` after git changes the
working tree (docs/team-memory.md). The scripts ship inside the package
(``nervamem/git_hooks/``).

Rules: installing is idempotent (again: the same files); a hook the user wrote is kept
(ours goes beside it as ``nervamem-<name>``, and one marked block at the end of theirs
calls it); uninstalling removes only what install added. Git's ``core.hooksPath`` is
honoured.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from .git import hooks_folder

# Which script serves which hook.
HOOKS = {
    "post-commit": "post-commit",
    "post-merge": "post-merge",
    "post-checkout": "post-merge",
    "post-rewrite": "post-merge",
}
MARKER = "nervamem-managed hook"
BLOCK_START = "# >>> nervamem >>>"
BLOCK_END = "# <<< nervamem <<<"


class HookChange(NamedTuple):
    """What install or uninstall did to one hook: created, updated, unchanged, chained
    (ours called from the end of the user's), removed, unchained, absent."""

    name: str
    path: str
    action: str


def script(name: str) -> str:
    from importlib import resources

    source = resources.files("nervamem").joinpath("git_hooks", HOOKS[name])
    return source.read_text(encoding="utf-8")


def install(repo: Path) -> list[HookChange]:
    folder = hooks_folder(repo)
    folder.mkdir(parents=True, exist_ok=True)
    changes = []
    for name in HOOKS:
        text = script(name)
        target = folder / name
        if not target.exists():
            _write_executable(target, text)
            changes.append(HookChange(name, str(target), "created"))
            continue
        current = target.read_text(encoding="utf-8", errors="replace")
        if MARKER in current:
            action = "unchanged" if current == text else "updated"
            if action == "updated":
                _write_executable(target, text)
            changes.append(HookChange(name, str(target), action))
            continue
        # The user's own hook: ours goes beside it, called from the end of theirs.
        beside = folder / f"nervamem-{name}"
        _write_executable(beside, text)
        if BLOCK_START not in current:
            block = (
                f"\n{BLOCK_START} (added by 'nervamem hooks install'; "
                "'nervamem hooks uninstall' removes it)\n"
                f'"$(dirname "$0")/nervamem-{name}" "$@" || true\n{BLOCK_END}\n'
            )
            _write_executable(target, current.rstrip("\n") + "\n" + block, keep_mode=True)
        changes.append(HookChange(name, str(target), "chained"))
    return changes


def uninstall(repo: Path) -> list[HookChange]:
    folder = hooks_folder(repo)
    changes = []
    for name in HOOKS:
        target = folder / name
        beside = folder / f"nervamem-{name}"
        beside.unlink(missing_ok=True)
        if not target.exists():
            changes.append(HookChange(name, str(target), "absent"))
            continue
        current = target.read_text(encoding="utf-8", errors="replace")
        if MARKER in current:
            target.unlink()
            changes.append(HookChange(name, str(target), "removed"))
        elif BLOCK_START in current:
            before, _, rest = current.partition(BLOCK_START)
            _, _, after = rest.partition(BLOCK_END)
            _write_executable(
                target, before.rstrip("\n") + "\n" + after.lstrip("\n"), keep_mode=True
            )
            changes.append(HookChange(name, str(target), "unchained"))
        else:
            changes.append(HookChange(name, str(target), "absent"))
    return changes


def _write_executable(path: Path, text: str, *, keep_mode: bool = False) -> None:
    mode = path.stat().st_mode & 0o7777 if keep_mode and path.exists() else 0o755
    temporary = path.with_name(f".{path.name}.nervamem-tmp")
    temporary.write_text(text, encoding="utf-8")
    os.chmod(temporary, mode | 0o111)
    os.replace(temporary, path)
