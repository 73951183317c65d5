"""The root command: the Typer app, its global options, the command groups under it, and
main(), the process entry point.

Imports flow one way: this module -> the command-group modules -> options and edge.
A command-group module never imports another, nor this one; each adds its commands
through its register(app), called below in the order --help lists them.
"""

# No "from __future__ import annotations" here: Typer reads these signatures on every
# call, and string annotations would make it eval() each one again (~3 ms a call).
import sys
from typing import Annotated, Any

import typer

from .. import __version__
from . import (
    code_commands,
    hook_commands,
    mcp_commands,
    memory_commands,
    session_commands,
    team_commands,
)
from .edge import NervamemGroup
from .options import (
    CONTEXT_SETTINGS,
    TOKENIZER_CHOICES,
    FormatOption,
    NsOption,
    Settings,
    choices,
)
from .startup import app_for, freeze_start_up_objects, skip_collection_at_exit

app = typer.Typer(
    cls=NervamemGroup,
    name="nervamem",
    help=(
        "Bi-temporal graph memory for AI agents, in one SQLite file.\n\n"
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


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"nervamem {__version__}\n")
        raise typer.Exit(0)


@app.callback()
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


memory_commands.register(app)
session_commands.register(app)
code_commands.register(app)
team_commands.register(app)
hook_commands.register(app)
mcp_commands.register(app)


def main(argv: list[str] | None = None) -> Any:
    args = list(sys.argv[1:] if argv is None else argv)
    command_tree = app_for(app, args)
    if argv is not None:
        return command_tree(args=args, prog_name="nervamem")
    # The process entry point (the console script, python -m nervamem): the process ends
    # with this command.
    freeze_start_up_objects()
    try:
        return command_tree(args=args, prog_name="nervamem")
    finally:
        skip_collection_at_exit()
