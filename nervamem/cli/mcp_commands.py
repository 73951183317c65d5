"""``nervamem mcp``: serve the memory to MCP clients over stdio, or print the
configuration that connects a client to it. The server lives in nervamem.mcp_server;
the MCP SDK is imported only when the server starts."""

# No "from __future__ import annotations" here: Typer reads these signatures on every
# call, and string annotations would make it eval() each one again (~3 ms a call).
import sys
from typing import Annotated

import typer

from ..errors import BadInputError
from .options import root_settings

CLIENT_NAMES = (
    "claude-code",
    "claude-desktop",
    "cursor",
    "vscode",
    "zed",
    "codex",
    "windsurf",
)


def _server_command() -> str:
    """The command a client should run: the installed ``nervamem`` script by absolute
    path (desktop apps do not search the shell's PATH), else plain ``nervamem``."""
    import shutil
    from pathlib import Path

    found = shutil.which("nervamem")
    return str(Path(found).resolve()) if found else "nervamem"


def mcp(
    ctx: typer.Context,
    print_config: Annotated[
        str | None,
        typer.Option(
            "--print-config",
            metavar="CLIENT",
            help=f"Print the configuration that connects CLIENT to this store, and exit: "
            f"{', '.join(CLIENT_NAMES)}.",
            autocompletion=lambda incomplete: [c for c in CLIENT_NAMES if c.startswith(incomplete)],
        ),
    ] = None,
) -> None:
    """Serve the memory to MCP clients (Claude Code, Cursor, Codex...) over stdio.

    The client starts this command and talks to it on standard input and output. The
    tools (memory_store, memory_recall, ...) use the store and the active namespace and
    session that the other commands use. Needs the 'mcp' extra: pip install 'nervamem[mcp]'.

    \b
    Example:
      nervamem mcp --print-config claude-code
      claude mcp add nervamem -- nervamem --db ~/.nervapack/memory.db mcp
    """
    settings = root_settings(ctx)
    if print_config is not None:
        from ..locate import resolve_store
        from ..mcp_server.clients import config_for

        client = print_config.strip().lower()
        if client not in CLIENT_NAMES:
            raise BadInputError(
                f"unknown client {print_config[:40]!r}: use one of {', '.join(CLIENT_NAMES)}"
            )
        store = resolve_store(settings.db)
        left_out = False
        if isinstance(store, str):
            from ..locate import secrets_of, url_without_password

            # A configuration file is output too: the password stays out of it (libpq
            # reads it from PGPASSWORD or ~/.pgpass, docs/postgres.md).
            db = url_without_password(store)
            left_out = bool(secrets_of(store))
        else:
            db = str(store.absolute())
        where, snippet = config_for(client, _server_command(), db, settings.namespace)
        # stdout is the snippet alone, ready for a file; where it goes is for the person.
        sys.stderr.write(f"nervamem: for {client}: {where}\n")
        if left_out:
            sys.stderr.write(
                "nervamem: note: the URL's password is left out of the configuration: give "
                "it to the server through PGPASSWORD or ~/.pgpass (docs/postgres.md)\n"
            )
        sys.stdout.write(snippet)
        return
    if sys.stdin.isatty():
        raise BadInputError(
            "nervamem mcp speaks MCP on standard input and output: let an MCP client start "
            "it ('nervamem mcp --print-config CLIENT' prints how)"
        )
    from ..mcp_server.tools import MemoryServer
    from . import context

    memory = MemoryServer(
        settings.db,
        namespace=settings.namespace,
        tokenizer=settings.tokenizer,
        # Looked up on the module, not imported by name: tests replace the factory.
        store_factory=lambda db, namespace: context.store_factory(db, namespace),
    )
    try:
        memory.check()  # an unusable store fails here, as any command would, not per call
        try:
            from ..mcp_server.server import serve
        except ImportError as exc:
            raise BadInputError(
                f"nervamem mcp needs the MCP SDK ({exc.name or 'mcp'} is missing): "
                "pip install 'nervamem[mcp]'"
            ) from None
    except BaseException:
        memory.close()
        raise
    serve(memory)


def register(app: typer.Typer) -> None:
    app.command()(mcp)
