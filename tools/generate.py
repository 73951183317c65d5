"""Regenerate every generated file from the command tree, or check that they are fresh.

    python tools/generate.py           # rewrite what changed
    python tools/generate.py --check   # exit 1 and list what is stale (tests, pre-commit)

Generated: shell completions (from the CLI itself, ``_NERVAMEM_COMPLETE=source_<shell>``),
the man page ``man/nervamem.1`` and the reference ``docs/cli.md``. Nothing here depends on
the clock (except SOURCE_DATE_EPOCH), the terminal width or the order of a directory
listing, so running it twice, or on another machine, gives the same bytes.
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make `tools` and `nervamem` importable
    sys.path.insert(0, str(ROOT))

from tools import clitree, gen_docs, gen_man  # noqa: E402

REGENERATE = "run python tools/generate.py"
SHELLS = {
    "bash": "completions/nervamem.bash",
    "zsh": "completions/nervamem.zsh",
    "fish": "completions/nervamem.fish",
}
# Directories that hold only generated files: anything else in them is left over.
OWNED_DIRS = ("completions", "man")


def completion_script(shell: str) -> str:
    """Exactly what `_NERVAMEM_COMPLETE=source_<shell> nervamem` prints."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_COMPLETE")}
    env["_NERVAMEM_COMPLETE"] = f"source_{shell}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "nervamem"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(
            f"nervamem did not print a {shell} completion script "
            f"(exit {done.returncode}): {done.stderr.strip()}"
        )
    return done.stdout


def _version() -> str:
    from nervamem import __version__

    return __version__


def targets() -> dict[str, Callable[[], str]]:
    """Every generated file, relative to the repository root, and how to make it."""
    commands: list[clitree.CommandDoc] = []

    def tree() -> list[clitree.CommandDoc]:
        if not commands:
            commands.extend(clitree.walk())
        return commands

    made: dict[str, Callable[[], str]] = {
        path: functools.partial(completion_script, shell) for shell, path in SHELLS.items()
    }
    made["man/nervamem.1"] = lambda: gen_man.render(tree(), _version())
    made["docs/cli.md"] = lambda: gen_docs.render(tree(), _version())
    return dict(sorted(made.items()))


def expected() -> dict[str, str]:
    return {path: make() for path, make in targets().items()}


def leftovers(wanted: dict[str, str]) -> list[str]:
    """Files in the generated-only directories that the generator no longer makes."""
    found: list[str] = []
    for folder in OWNED_DIRS:
        base = ROOT / folder
        if base.is_dir():
            for path in sorted(base.rglob("*")):
                relative = path.relative_to(ROOT).as_posix()
                if path.is_file() and relative not in wanted:
                    found.append(relative)
    return found


def stale(wanted: dict[str, str] | None = None) -> list[str]:
    """Generated files that are missing, out of date, or no longer generated."""
    wanted = expected() if wanted is None else wanted
    out: list[str] = []
    for path, text in wanted.items():
        target = ROOT / path
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            out.append(path)
    return out + leftovers(wanted)


def write(wanted: dict[str, str] | None = None) -> list[str]:
    wanted = expected() if wanted is None else wanted
    changed: list[str] = []
    for path, text in wanted.items():
        target = ROOT / path
        if target.is_file() and target.read_text(encoding="utf-8") == text:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        changed.append(path)
    for path in leftovers(wanted):
        (ROOT / path).unlink()
        changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if a file is stale"
    )
    args = parser.parse_args(argv)
    if args.check:
        out_of_date = stale()
        if out_of_date:
            print("stale generated files: " + ", ".join(out_of_date), file=sys.stderr)
            print(f"{REGENERATE} and commit the result", file=sys.stderr)
            return 1
        return 0
    for path in write():
        print(f"updated {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
