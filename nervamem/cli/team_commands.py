"""The team-memory commands: ``sync``, ``export`` and ``import`` (docs/team-memory.md).
Each parses its arguments, calls one MemoryStore method and renders the result."""

# No "from __future__ import annotations" here: Typer reads these signatures on every
# call, and string annotations would make it eval() each one again (~3 ms a call).
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import BadInputError, ExitCode
from ..render import emit
from ..visible import visible
from .options import FormatOption, NsOption, open_store, output_format

if TYPE_CHECKING:
    from pathlib import Path

    from ..models import SyncReport


def sync(
    ctx: typer.Context,
    rebuild: Annotated[
        bool,
        typer.Option("--rebuild", help="Make the cache again from the event files alone."),
    ] = False,
    full: Annotated[
        bool,
        typer.Option("--full", help="Read every folder, not only those that changed."),
    ] = False,
    fmt: FormatOption = None,
) -> None:
    """Import the event files of a shared store that its cache has not seen.

    Run it after a pull, a merge or a checkout (the hooks installed by 'nervamem hooks
    install' do). Importing an event twice, or events in any order, gives the same store.
    A bad event file is reported on stderr and skipped (exit 4); the others are imported.

    \b
    Example:
      git pull && nervamem sync
      nervamem sync --rebuild      # the database from the events alone
    """
    output = output_format(ctx, fmt)
    # It writes: in a fresh clone, the first sync (a hook's) makes the cache.
    with open_store(ctx, create=True, after_upgrade="nervamem sync") as memory:
        memory.current()  # as every command: a broken state.yaml is said first
        report = memory.sync(full=full, rebuild=rebuild)
    _finish("sync", report, output)


def export(
    ctx: typer.Context,
    output_file: Annotated[
        str | None,
        typer.Option("--output", "-o", help="Write to this file instead of standard output."),
    ] = None,
    namespace: NsOption = None,
    all_namespaces: Annotated[
        bool, typer.Option("--all-namespaces", help="Export every namespace (the default).")
    ] = False,
) -> None:
    """Write the store's history as events, one JSON object per line (JSON Lines).

    The same event format as a shared store's files: node asserted, edge and alias added,
    node forgotten, data set, with the original IDs and times. 'nervamem import' reads it
    into another store; the round trip is lossless.

    \b
    Example:
      nervamem export > memory.jsonl
      nervamem --ns project-x export -o project-x.jsonl
    """
    if namespace is not None and all_namespaces:
        raise BadInputError("--ns and --all-namespaces exclude each other")
    settings_ns = None if all_namespaces else namespace
    with open_store(ctx) as memory:
        # A broken state.yaml is a broken store: refused here as by every command,
        # though exporting every namespace would not need it.
        memory.current()
        lines = memory.export_events(namespace=settings_ns)
        if output_file is None:
            for line in lines:
                sys.stdout.write(line)
            sys.stdout.flush()
            return
        from ..durable import write_file_durably

        target = _output_path(output_file)
        _refuse_the_store_itself(target, memory.path)
        try:
            write_file_durably(target, "".join(lines))
        except OSError as exc:
            raise BadInputError(f"cannot write {output_file}: {exc.strerror or exc}") from None


def import_(
    ctx: typer.Context,
    source: Annotated[
        str, typer.Argument(help="A JSON Lines file written by 'export', or '-' for stdin.")
    ],
    fmt: FormatOption = None,
) -> None:
    """Import events (JSON Lines, as 'export' writes them) into this store.

    Idempotent: importing a file twice changes nothing. A bad line is reported on stderr
    and skipped (exit 4); every other event is imported. Into a shared store, each new
    event is also written as an event file.

    \b
    Example:
      nervamem --db other.db import memory.jsonl
      ssh laptop nervamem export | nervamem import -
    """
    output = output_format(ctx, fmt)
    read: list[list[tuple[str, str]]] = []

    def lines() -> list[tuple[str, str]]:
        # Once: before a missing store is created (a file that cannot be read then
        # leaves no store behind), else after an existing one is opened.
        if not read:
            read.append(_event_lines(source))
        return read[0]

    with open_store(ctx, create=True, before_create=lines) as memory:
        memory.current()  # as every command: an unusable store is said first
        report = memory.import_events(lines())
    _finish("import", report, output)


def _event_lines(source: str) -> list[tuple[str, str]]:
    """The non-blank lines of ``source`` (a file, or '-' for stdin), each with where it
    came from (``name:number``)."""
    if source == "-":
        data = sys.stdin.buffer.read()
        name = "stdin"
    else:
        try:
            with open(_output_path(source), "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise BadInputError(f"cannot read {source}: {exc.strerror or exc}") from None
        name = source
    # A line that is not UTF-8 is reported as not JSON; the others are imported.
    text = data.decode("utf-8", errors="replace")
    return [
        (f"{name}:{number}", line)
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip()
    ]


def _output_path(text: str) -> "Path":
    from pathlib import Path

    from ..locate import given_path

    return Path(given_path(text, "the file"))


def _refuse_the_store_itself(target: "Path", store: "Path") -> None:
    """BadInputError when ``export -o`` names the store's file or one beside it that
    SQLite or nervamem keeps (its WAL, its lock files): writing the export there would
    replace the store with its own export."""
    import os

    from ..locate import shown_path

    for suffix in ("", "-wal", "-shm", "-journal", "-lock", "-queue"):
        try:
            same = os.path.samefile(target, f"{store}{suffix}")
        except OSError:  # either is missing: not the same file
            continue
        if same:
            raise BadInputError(
                f"--output {shown_path(target)} is the store's own file: write the "
                "export to another file"
            )


def _finish(view: str, report: "SyncReport", output: str) -> None:
    emit(view, report, output)
    if report.problems:
        if output != "json":
            for problem in report.problems:
                sys.stderr.write(
                    f"nervamem: skipped {visible(problem.source)}: {visible(problem.reason)}\n"
                )
        raise typer.Exit(int(ExitCode.SKIPPED))


def register(app: typer.Typer) -> None:
    app.command()(sync)
    app.command()(export)
    app.command("import")(import_)
