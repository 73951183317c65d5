"""Walk the command tree the way ``--help`` sees it, so that the man page and the CLI
reference are built from the same facts as the help text and cannot drift from it.

Invariants the generators rely on:
- commands are visited in sorted order and hidden commands and parameters are skipped;
- help is rendered at a fixed width (``HELP_WIDTH``), never the caller's terminal width;
- nothing here reads the clock; the only date is ``source_date()`` (SOURCE_DATE_EPOCH).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone

import typer
from typer.core import TyperGroup as Group

from nervamem.cli.typer_compat import Command, Context

HELP_WIDTH = 100
# The committed files are generated with this date unless SOURCE_DATE_EPOCH says
# otherwise, so regenerating them on another day changes nothing (2026-01-01T00:00:00Z).
DEFAULT_SOURCE_DATE_EPOCH = 1767225600


@dataclass(frozen=True)
class ParamDoc:
    kind: str  # "argument" or "option"
    names: str  # as --help shows them, e.g. "-b, --budget <int>"
    help: str


@dataclass(frozen=True)
class HelpBlock:
    """One paragraph of a command's help: flowing text, or a block kept as written
    (Click's ``\\b`` marker), such as an ``Example:`` block."""

    preformatted: bool
    lines: tuple[str, ...]

    @property
    def is_example(self) -> bool:
        return bool(self.lines) and self.lines[0].strip().rstrip(":").lower() in (
            "example",
            "examples",
        )


@dataclass(frozen=True)
class CommandDoc:
    path: tuple[str, ...]  # ("nervamem", "session", "start")
    is_group: bool
    summary: str
    usage: str  # "nervamem recall [OPTIONS] {query}"
    blocks: tuple[HelpBlock, ...]
    params: tuple[ParamDoc, ...]
    subcommands: tuple[tuple[str, str], ...]  # (name, summary) of a group's commands
    help_page: str  # exactly what `<path> --help` prints at HELP_WIDTH

    @property
    def name(self) -> str:
        return " ".join(self.path)

    @property
    def anchor(self) -> str:
        return "-".join(self.path)

    @property
    def arguments(self) -> tuple[ParamDoc, ...]:
        return tuple(p for p in self.params if p.kind == "argument")

    @property
    def options(self) -> tuple[ParamDoc, ...]:
        return tuple(p for p in self.params if p.kind == "option")

    @property
    def description(self) -> tuple[HelpBlock, ...]:
        return tuple(b for b in self.blocks if not b.is_example)

    @property
    def examples(self) -> tuple[str, ...]:
        lines: list[str] = []
        for block in self.blocks:
            if block.is_example:
                lines.extend(_dedent(block.lines[1:]))
        return tuple(lines)


def source_date() -> str:
    """The date stamped into generated files: SOURCE_DATE_EPOCH, else a fixed default."""
    raw = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    epoch = int(raw) if raw.isdigit() else DEFAULT_SOURCE_DATE_EPOCH
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%d")


def root_command() -> Command:
    from nervamem.cli import app

    return typer.main.get_command(app)


def walk(prog_name: str = "nervamem") -> Iterator[CommandDoc]:
    """Every command, groups included, depth first, siblings in sorted order."""
    root = root_command()
    ctx = root.make_context(
        prog_name,
        [],
        resilient_parsing=True,
        terminal_width=HELP_WIDTH,
        max_content_width=HELP_WIDTH,
    )
    yield from _walk(root, ctx, (prog_name,))


def _walk(command: Command, ctx: Context, path: tuple[str, ...]) -> Iterator[CommandDoc]:
    yield _describe(command, ctx, path)
    if not isinstance(command, Group):
        return
    for name in sorted(command.list_commands(ctx)):
        sub = command.get_command(ctx, name)
        if sub is None or sub.hidden:
            continue
        sub_ctx = sub.make_context(
            name,
            [],
            parent=ctx,
            resilient_parsing=True,
            terminal_width=HELP_WIDTH,
            max_content_width=HELP_WIDTH,
        )
        yield from _walk(sub, sub_ctx, (*path, name))


def _describe(command: Command, ctx: Context, path: tuple[str, ...]) -> CommandDoc:
    params: list[ParamDoc] = []
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        kind = "argument" if param.param_type_name == "argument" else "option"
        params.append(ParamDoc(kind=kind, names=record[0], help=" ".join(record[1].split())))
    subcommands: list[tuple[str, str]] = []
    if isinstance(command, Group):
        for name in sorted(command.list_commands(ctx)):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                subcommands.append((name, sub.get_short_help_str(limit=HELP_WIDTH * 2)))
    usage = " ".join([ctx.command_path, *command.collect_usage_pieces(ctx)])
    return CommandDoc(
        path=path,
        is_group=isinstance(command, Group),
        summary=command.get_short_help_str(limit=HELP_WIDTH * 2),
        usage=usage,
        blocks=parse_help(command.help or ""),
        params=tuple(params),
        subcommands=tuple(subcommands),
        help_page=ctx.get_help().rstrip() + "\n",
    )


def parse_help(text: str) -> tuple[HelpBlock, ...]:
    """Split help text into paragraphs the way Click's formatter does."""
    text = inspect.cleandoc(text).partition("\f")[0]
    blocks: list[HelpBlock] = []
    for paragraph in text.split("\n\n"):
        lines = paragraph.splitlines()
        if not any(line.strip() for line in lines):
            continue
        if lines[0].strip() == "\b":
            blocks.append(HelpBlock(preformatted=True, lines=tuple(lines[1:])))
        else:
            blocks.append(HelpBlock(preformatted=False, lines=(" ".join(paragraph.split()),)))
    return tuple(blocks)


def _dedent(lines: tuple[str, ...]) -> list[str]:
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    cut = min(indents, default=0)
    return [line[cut:].rstrip() for line in lines]


# Facts the man page states that the command tree does not hold. The test suite checks
# that every environment variable the package reads is listed here and in
# docs/exit-codes.md, and that every exit code in nervamem.errors.ExitCode is described.
ENVIRONMENT: tuple[tuple[str, str], ...] = (
    (
        "NERVAMEM_DB",
        "Path of the store, or a postgresql:// URL, when --db is not given; wins over "
        "NERVAPACK_MEMORY_DB.",
    ),
    (
        "NERVAPACK_MEMORY_DB",
        "Path of the store when neither --db nor NERVAMEM_DB is given (before "
        ".nervapack/memory.db found walking up from the working directory, and "
        "~/.nervapack/memory.db).",
    ),
    (
        "NERVAMEM_FORMAT",
        "Output format when --format is not given: markdown, json or table.",
    ),
    (
        "NERVAMEM_TOKENIZER",
        "Token counter for budgets when --tokenizer is not given: char (default) or tiktoken.",
    ),
    (
        "NERVAMEM_DEBUG",
        "Set to 1 to let errors end in a Python traceback instead of one line.",
    ),
    (
        "NERVAMEM_BUSY_TIMEOUT_MS",
        "How long to wait for another writer's lock before giving up with exit status 1 "
        "(default 15000).",
    ),
    (
        "NERVAMEM_PG_CONNECT_TIMEOUT",
        "A store on PostgreSQL: seconds to wait for the server before giving up with exit "
        "status 1 (default 10).",
    ),
    (
        "NERVAMEM_PG_STATEMENT_TIMEOUT_MS",
        "A store on PostgreSQL: the longest one statement may run before the command fails "
        "with exit status 1 and changes nothing (default 60000).",
    ),
    (
        "NERVAMEM_NO_UPGRADE",
        "1: a store that needs a schema upgrade is refused (exit status 1), not upgraded; "
        "the git hooks set it.",
    ),
    (
        "NERVAMEM_AUTHOR",
        "The author a shared store's events name (else git's author e-mail).",
    ),
    ("NO_COLOR", "When set to any value, terminal output has no colour."),
    (
        "SOURCE_DATE_EPOCH",
        "Only for building this page: the date printed in its footer.",
    ),
    (
        "_NERVAMEM_COMPLETE",
        "Set by the shell completion scripts; source_bash, source_zsh or source_fish "
        "prints the completion script for that shell.",
    ),
)

EXIT_STATUS: tuple[tuple[int, str], ...] = (
    (0, "Success. A recall that finds nothing is a success with zero items."),
    (1, "The store cannot be used: not a database, corrupt, unwritable, or locked past the wait."),
    (
        2,
        "Bad input: unknown kind, malformed date, unknown option, budget out of range, "
        "forget --purge without --yes when no one can be asked.",
    ),
    (3, "Not found or ambiguous: an ID that matches no node, or several."),
    (4, "Some events were skipped by sync or import (each reported); the others were imported."),
    (5, "Stale memories found, only with verify-staleness --exit-code; the report is printed."),
)

FILES: tuple[tuple[str, str], ...] = (
    (
        ".nervapack/memory.db",
        "The project store, found by walking up from the working "
        "directory; nervamem init creates it.",
    ),
    (
        "~/.nervapack/memory.db",
        "The home store, used when there is no project store (created on first use).",
    ),
    ("state.yaml", "Beside the store in use: the active namespace and session."),
    ("graph.graphml", "Beside the store in use: the code graph that code index builds."),
)
