"""What every command group shares: the option types declared once, the root settings,
and the two things each command does first (choose the output format, open the store).

Command modules import from here and never from one another. The parts that need no
Typer live in context.py (``context.store_factory``, the one place a store is made).
"""

# No "from __future__ import annotations" here: Typer reads the option types below on
# every call, and string annotations would make it eval() each one again.
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from . import context
from .context import Settings

if TYPE_CHECKING:
    from ..models import EventProblem
    from ..store import MemoryStore

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def choices(values: "tuple[str, ...] | list[str]") -> str:
    """The metavar of an option that takes one of fixed values: usage and help show
    ``[markdown|json|table]`` instead of ``<str>``."""
    return "[" + "|".join(values) + "]"


TOKENIZER_CHOICES = ("char", "tiktoken")


def complete_namespace(ctx: typer.Context, incomplete: str) -> list[str]:
    try:
        from ..locate import resolve_store
        from ..store import MemoryStore

        # Pressing Tab must never create a store as a side effect.
        path = resolve_store(ctx.find_root().params.get("db"))
        # A server's database is not opened either: opening creates nervamem's tables.
        if isinstance(path, str) or not path.is_file():
            return []
        with MemoryStore(str(path)) as store:
            names = [info.name for info in store.list_namespaces()]
    except Exception:
        return []
    return [n for n in names if n.startswith(incomplete)]


NsOption = Annotated[
    str | None,
    typer.Option(
        "--ns",
        help="Namespace to use instead of the active one.",
        autocompletion=complete_namespace,
    ),
]
FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format",
        "-f",
        metavar=choices(("markdown", "json", "table")),
        help="Output format: markdown, json or table (default: table on a terminal, "
        "markdown when piped; env NERVAMEM_FORMAT).",
        autocompletion=lambda incomplete: [
            f for f in ("markdown", "json", "table") if f.startswith(incomplete)
        ],
    ),
]
SessionOption = Annotated[
    str | None, typer.Option("--session", help="Session ID (default: the active one).")
]


def root_settings(ctx: typer.Context) -> Settings:
    obj = ctx.find_root().obj
    return obj if isinstance(obj, Settings) else Settings()


def open_store(
    ctx: typer.Context,
    namespace: str | None = None,
    *,
    create: bool = False,
    before_create: Callable[[], object] | None = None,
    never_upgrade: bool = False,
    after_upgrade: str | None = None,
) -> "MemoryStore":
    """The store the command works on: context.open_store() with the root options."""
    return context.open_store(
        root_settings(ctx),
        namespace,
        create=create,
        before_create=before_create,
        never_upgrade=never_upgrade,
        after_upgrade=after_upgrade,
    )


def output_format(ctx: typer.Context, fmt: str | None) -> str:
    return context.output_format(root_settings(ctx), fmt)


def report_skipped(problems: "tuple[EventProblem, ...]", *, listed: bool = False) -> None:
    """The events skipped, one line each on stderr (unless ``listed`` in the JSON
    output already), and exit 4."""
    import sys

    from ..errors import ExitCode
    from ..visible import visible

    if not listed:
        for problem in problems:
            sys.stderr.write(
                f"nervamem: skipped {visible(problem.source)}: {visible(problem.reason)}\n"
            )
    raise typer.Exit(int(ExitCode.SKIPPED))
