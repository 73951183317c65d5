"""Every start-up trick of the command line, in one place, with what it saves.

Agents and hooks pay start-up on every call, so a fresh ``nervamem store`` or ``recall``
is measured against ``python -c "import typer"`` (bench/latency.py). Three tricks keep it
close; each is invisible to behaviour (tests/test_lazy_imports.py checks that). What each
saves, measured 2026-12-03 by turning it off alone in a regular install (``pip install
.``, Typer 0.28, Python 3.11, 10k-node store) and timing fresh processes beside the
unchanged install in 40-120 interleaved rounds (median CPU time; the machine was shared):

- ``skip_collection_at_exit()``, no GC pass over the heap at shut-down: 17-21 ms of
  ``store`` and ``recall``, 10-14 ms of ``--version``;
- ``app_for()``, build only the invoked command: 8-14 ms of ``store`` and ``recall``,
  1-8 ms of ``--version``;
- ``cyclic_gc_paused()``, no cyclic GC while the CLI and Typer are imported: 22 fewer
  collections, but under 1 ms (below the noise of 120 rounds of ``import nervamem.cli``);
- ``freeze_start_up_objects()``, those objects frozen before the command runs: 7-13 ms
  of ``recall`` (issue 21, bench/results.md "Performance, round 2"); since round 3 with
  the GC still paused (cli/__init__.py main()), which saves the generation-0 collection
  over all of them that turning it back on first triggered (~10M instructions);
- ``invoked_command()``, the name root.command_tree() imports the one command-group
  module of (``--version``: none), and the one main() offers cli/direct.py when it is
  ``store`` or ``recall`` (DIRECT_COMMANDS), which then run without Typer.

Not a trick but start-up too: ``reopen_closed_streams()``, the process entry point's
first call, gives a standard stream the caller closed to /dev/null.

Nothing here imports Typer: the first trick must run before Typer is imported.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer
    from typer.models import CommandInfo


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Keep the cyclic GC off meanwhile, then restore it as it was.

    Importing Typer and the command tree creates ~20k objects and no garbage worth a
    collection, yet triggers dozens of them. The GC is turned back on for whatever
    imports the CLI (tests, embedders) and for the command itself.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def freeze_start_up_objects() -> None:
    """Freeze the objects alive before the command runs out of the cyclic GC.

    They were made with the GC paused (cyclic_gc_paused), so they all sit in its
    youngest generation: the first collections the command's own allocations trigger
    would traverse every one of them again, generation after generation: a fresh
    ``recall`` ran a generation-1 collection of ~15 ms that freed nothing (load 3; 7
    young collections of ~1 ms in all once frozen; 7-13 ms less CPU per call in 20-30
    interleaved rounds). They live as long as the process anyway. Only for the process
    entry point, as skip_collection_at_exit: an embedder's heap stays as it was.
    """
    gc.freeze()


def skip_collection_at_exit() -> None:
    """Freeze every object alive out of the cyclic GC, for a process about to end.

    Before the interpreter shuts down, the GC's collections (~20k objects of Typer,
    Click, inspect, sqlite3, and the cycles it frees one by one) cost 17-21 ms of every
    call and release nothing that exiting does not. Exit handlers, flushing and exit
    codes are unchanged. Only for the process entry point: an embedder's heap stays as
    it was.
    """
    gc.freeze()


def reopen_closed_streams() -> None:
    """Give a standard stream the caller closed (``<&-``, ``>&-``, ``2>&-``, a launcher
    that closes them) to /dev/null, for the process entry point.

    Python makes such a stream None, and the first ``sys.stdout.write`` or
    ``sys.stdin.isatty()`` was an internal error, reported on a closed stderr with the
    wrong exit code. Read from /dev/null, a closed stdin is empty and not a terminal;
    written to it, the output the caller closed goes nowhere, and the exit code is the
    command's. A closed descriptor is filled with /dev/null too, so that no file the
    command opens (a lock file, an event file) takes its number and receives what is
    written to the stream.
    """
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        if getattr(sys, name) is not None:
            continue
        try:
            os.fstat(fd)
        except OSError:  # closed: /dev/null takes its number
            null = os.open(os.devnull, os.O_RDONLY if mode == "r" else os.O_WRONLY)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            target: int | str = fd
        else:  # reused since start-up: leave that file alone
            target = os.devnull
        # Open for the rest of the process, as the stream it stands for.
        stream = open(target, mode, encoding="utf-8", closefd=target != fd)  # noqa: SIM115
        setattr(sys, name, stream)


# Root options that take a value: the word after them is not the command.
ROOT_VALUE_OPTIONS = frozenset({"--db", "--ns", "--format", "-f", "--tokenizer"})


def command_name(info: CommandInfo) -> str:
    """The name Typer gives a registered command (its function name, dashed)."""
    callback_name = info.callback.__name__ if info.callback else ""
    return str(info.name or callback_name.lower().replace("_", "-"))


# What invoked_command() answers for ``--version`` / ``-V`` alone: no command is needed.
VERSION_ONLY = ""

# The commands cli/direct.py may run without Typer (its COMMANDS): main() imports it
# only for these, so every other command's start-up is as it was.
DIRECT_COMMANDS = frozenset({"store", "recall"})


def invoked_command(args: list[str]) -> str | None:
    """The name of the top-level command or group that ``args`` invoke; VERSION_ONLY for
    ``--version`` alone; None when the whole tree is needed: help, completion, no command
    or ``--`` (listings and suggestions stay complete)."""
    if os.environ.get("_NERVAMEM_COMPLETE"):
        return None
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in ("-h", "--help", "--"):
            return None
        if arg in ROOT_VALUE_OPTIONS:
            index += 2
        elif arg.startswith("-"):
            index += 1
        else:
            return arg
    if args and all(arg in ("-V", "--version") for arg in args):
        return VERSION_ONLY
    return None


def app_for(app: typer.Typer, args: list[str]) -> typer.Typer:
    """``app`` with only the command that ``args`` invoke.

    Typer builds the Click object of every command (signatures, annotations, options)
    before it runs one: 8-14 ms of each call. A shallow copy that holds the invoked
    command alone runs it identically (a command's parsing, help and errors do not
    depend on its siblings). Help, completion, a missing or unknown command get the
    whole app, so listings and suggestions stay complete.

    It relies on Typer building the tree from the app's ``registered_commands`` and
    ``registered_groups`` lists when it is called (tests/test_lazy_imports.py runs
    whole and trimmed trees side by side, and fails if a Typer release changes that).
    """
    name = invoked_command(args)
    if name is None:
        return app
    if name == VERSION_ONLY:
        commands, groups = [], []
    else:
        commands = [info for info in app.registered_commands if command_name(info) == name]
        groups = [info for info in app.registered_groups if info.name == name]
        if not commands and not groups:
            return app
    import copy  # here: store and recall (cli/direct.py) never trim an app

    trimmed = copy.copy(app)
    trimmed.registered_commands, trimmed.registered_groups = commands, groups
    return trimmed
