"""The command line: parse, call the core, render. Nothing else lives here.

root.py makes the app and composes the command groups (memory_commands.py,
session_commands.py, code_commands.py), which share options.py and edge.py; startup.py
holds the start-up tricks and typer_compat.py every use of Typer's private modules.
Importing this package imports none of them: main() imports what its command needs, and
``app`` (the whole tree) is made on first use. ``store`` and ``recall``, written plainly,
run without Typer (direct.py, over context.py).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from .startup import (
    DIRECT_COMMANDS,
    cyclic_gc_paused,
    freeze_start_up_objects,
    invoked_command,
    reopen_closed_streams,
    skip_collection_at_exit,
)

if TYPE_CHECKING:
    from .root import app

__all__ = ["app", "main"]


def main(argv: list[str] | None = None) -> Any:
    """Run one command: ``argv`` in-process, or, with None, the process's arguments as
    its entry point (the console script, ``python -m nervamem``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if argv is None:
        reopen_closed_streams()
    # Typer, Click and the invoked command's tree (or, for store and recall written
    # plainly, the modules they run: direct.prepare) are imported and built with the
    # cyclic GC paused (startup.py). The process entry point then freezes them before the
    # GC is on again: turned on first, its next collection would traverse all of them.
    with cyclic_gc_paused():
        call = None
        if invoked_command(args) in DIRECT_COMMANDS:
            # `store` and `recall` written plainly run without Typer (direct.py).
            from .direct import parse, prepare

            call = parse(args)
        if call is None:
            from .root import command_tree

            tree = command_tree(args)
        else:
            prepare(call)
        if argv is None:
            freeze_start_up_objects()
    if call is not None:
        from .direct import run

        try:
            sys.exit(run(call, args))
        finally:
            if argv is None:
                skip_collection_at_exit()
    if argv is not None:
        return tree(args=args, prog_name="nervamem")
    try:
        return tree(args=args, prog_name="nervamem")
    finally:
        skip_collection_at_exit()


def __getattr__(name: str) -> Any:
    if name == "app":
        with cyclic_gc_paused():
            from .root import whole_app

            return whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
