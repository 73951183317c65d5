"""The session and namespace groups: ``session start|end`` and ``ns switch|list|current``.
Each command parses its arguments, calls one MemoryStore method and hands the result to
the renderer of the chosen format."""

# No "from __future__ import annotations" here: Typer reads these signatures on every
# call, and string annotations would make it eval() each one again (~3 ms a call).
import sys
from typing import Annotated

import typer

from ..render import emit
from ..visible import visible
from .edge import command_group
from .options import (
    CONTEXT_SETTINGS,
    FormatOption,
    NsOption,
    SessionOption,
    complete_namespace,
    open_store,
    output_format,
)


def session_start(
    ctx: typer.Context,
    title: Annotated[str | None, typer.Argument(help="What the session is about.")] = None,
    namespace: NsOption = None,
    fmt: FormatOption = None,
) -> None:
    """Start a session, make it the namespace's active one and print its ID.

    \b
    Example:
      SID=$(nervamem session start "migrate auth to JWT")
    """
    output = output_format(ctx, fmt)
    with open_store(ctx, namespace, create=True) as memory:
        session_id = memory.start_session(title)
    emit("id", session_id, output)


def session_end(
    ctx: typer.Context,
    summary: Annotated[str | None, typer.Option("--summary", help="What was done.")] = None,
    session: SessionOption = None,
    fmt: FormatOption = None,
) -> None:
    """End a session and queue it for consolidation.

    \b
    Example:
      nervamem session end --summary "auth now uses JWT"
    """
    output = output_format(ctx, fmt)
    with open_store(ctx) as memory:
        session_id = memory.end_session(session, summary=summary)
    emit("id", session_id, output)


def ns_switch(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Namespace name.", autocompletion=complete_namespace)],
    fmt: FormatOption = None,
) -> None:
    """Make NAME the active namespace, resuming the session left active there.

    A namespace needs no creating: when NAME holds no memories yet, a note on stderr
    says so, in case the name was mistyped.

    \b
    Example:
      nervamem ns switch project_b
    """
    from ..state import validate_namespace

    output = output_format(ctx, fmt)
    with open_store(ctx, create=True, before_create=lambda: validate_namespace(name)) as memory:
        is_new = not memory.has_memories(name)
        result = memory.switch_namespace(name)
    emit("ns_switch", result, output)
    if is_new:
        # A mistyped name would otherwise start an empty namespace without a word; on
        # stderr, so a script reading stdout sees the same output as before.
        sys.stderr.write(
            f"nervamem: namespace '{visible(result.namespace)}' is new (no memories yet)\n"
        )


def ns_list(ctx: typer.Context, fmt: FormatOption = None) -> None:
    """List namespaces and how many live nodes each holds.

    \b
    Example:
      nervamem ns list --format json
    """
    output = output_format(ctx, fmt)
    with open_store(ctx) as memory:
        result = memory.list_namespaces()
    emit("ns_list", result, output)


def ns_current(ctx: typer.Context, fmt: FormatOption = None) -> None:
    """Show the active namespace and session.

    \b
    Example:
      nervamem ns current
    """
    output = output_format(ctx, fmt)
    with open_store(ctx) as memory:
        result = memory.current()
    emit("ns_current", result, output)


def register(app: typer.Typer) -> None:
    """Add the ``session`` and ``ns`` groups to ``app``, in the order --help lists them."""
    session_app = command_group(
        "Start and end sessions (a session scopes what an agent did in one task).\n\n"
        '\b\nExample:\n  SID=$(nervamem session start "migrate auth to JWT")\n'
        '  nervamem session end --summary "auth now uses JWT"',
        CONTEXT_SETTINGS,
    )
    session_app.command("start")(session_start)
    session_app.command("end")(session_end)
    app.add_typer(session_app, name="session")

    ns_app = command_group(
        "Namespaces: separate memories in one store.\n\n"
        "\b\nExample:\n  nervamem ns list\n  nervamem ns switch project_b",
        CONTEXT_SETTINGS,
    )
    ns_app.command("switch")(ns_switch)
    ns_app.command("list")(ns_list)
    ns_app.command("current")(ns_current)
    app.add_typer(ns_app, name="ns")
