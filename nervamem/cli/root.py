"""The root command: the Typer app, its global options, the command groups under it, and
the tree that runs one command (command_tree(), for main() in __init__.py).

Imports flow one way: this module -> the command-group modules -> options and edge.
A command-group module never imports another, nor this one; each adds its commands
through its register(app), called in the order --help lists them (GROUPS below). A
command imports only the module that registers it (command_tree()): ``app``, the whole
tree, is built on first use, for help, completion, tests and tools/generate.py.
"""

# No "from __future__ import annotations" here: Typer reads these signatures on every
# call, and string annotations would make it eval() each one again (~3 ms a call).
import importlib
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .. import __version__
from .context import Settings
from .edge import NervamemGroup
from .options import (
    CONTEXT_SETTINGS,
    TOKENIZER_CHOICES,
    FormatOption,
    NsOption,
    choices,
)
from .startup import VERSION_ONLY, app_for, invoked_command

if TYPE_CHECKING:
    app: typer.Typer  # the whole command tree, made by __getattr__ below on first use

# The command-group modules in the order --help lists their commands, and the top-level
# commands and groups each one registers (tests/cli/test_layout.py checks both).
GROUPS: dict[str, tuple[str, ...]] = {
    "memory_commands": (
        "init",
        "store",
        "recall",
        "timeline",
        "show",
        "list",
        "forget",
        "stats",
        "consolidate",
    ),
    "session_commands": ("session", "ns"),
    "code_commands": ("code", "code-for", "code-to", "verify-staleness"),
    "team_commands": ("sync", "export", "import"),
    "hook_commands": ("hooks",),
    "mcp_commands": ("mcp",),
}


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"nervamem {__version__}\n")
        raise typer.Exit(0)


def root(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="Store file, or a postgresql:// URL (else NERVAMEM_DB, NERVAPACK_MEMORY_DB, "
            ".nervapack/memory.db upwards, ~/.nervapack/memory.db).",
        ),
    ] = None,
    namespace: NsOption = None,
    fmt: FormatOption = None,
    tokenizer: Annotated[
        str | None,
        typer.Option(
            "--tokenizer",
            metavar=choices(TOKENIZER_CHOICES),
            help="Token counter for budgets: char or tiktoken (env NERVAMEM_TOKENIZER).",
            autocompletion=lambda incomplete: [
                t for t in ("char", "tiktoken") if t.startswith(incomplete)
            ],
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", help="Print the version and exit.", callback=_version, is_eager=True
        ),
    ] = False,
) -> None:
    ctx.obj = Settings(db=db, namespace=namespace, fmt=fmt, tokenizer=tokenizer)


def build_app(groups: Iterable[str] = GROUPS) -> typer.Typer:
    """The root app with the commands of ``groups`` (names of GROUPS), each module
    imported now."""
    made = typer.Typer(
        cls=NervamemGroup,
        name="nervamem",
        help=(
            "Bi-temporal graph memory for AI agents, in SQLite or PostgreSQL.\n\n"
            "The store is one SQLite file, or a PostgreSQL database named by a "
            "postgresql:// URL (--db, NERVAMEM_DB).\n\n"
            "Store decisions, facts and outcomes; recall them within a token budget; "
            "supersede old truths without losing them.\n\n"
            "\b\nExample:\n  nervamem store decision 'Chose JWT for auth' -e AuthService\n"
            "  nervamem recall 'auth mechanism' --budget 300"
        ),
        no_args_is_help=True,
        add_completion=False,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        context_settings=CONTEXT_SETTINGS,
    )
    made.callback()(root)
    for group in groups:
        importlib.import_module(f"{__package__}.{group}").register(made)
    return made


def whole_app() -> typer.Typer:
    """The whole command tree, built on first use and kept as ``app``."""
    built: typer.Typer | None = globals().get("app")
    if built is None:
        built = globals()["app"] = build_app()
    return built


def __getattr__(name: str) -> Any:
    if name == "app":
        return whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def command_tree(args: list[str]) -> typer.Typer:
    """The tree that runs ``args``: the invoked command alone (startup.app_for), from its
    own module alone; ``--version``, from none. The other command modules are never
    imported (~1-2 ms of a fresh process, and their options' objects). Anything else
    (help, completion, no command, an unknown one) gets the whole tree."""
    name = invoked_command(args)
    if name == VERSION_ONLY:
        return app_for(build_app(()), args)
    group = next((g for g, names in GROUPS.items() if name in names), None)
    return app_for(whole_app() if group is None else build_app((group,)), args)
