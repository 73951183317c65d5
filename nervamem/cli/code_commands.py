"""Commands that work after the fact: ``consolidate`` and the code bridge (``code index``,
``code-for``, ``code-to``, ``verify-staleness``). They parse, call one core function and
render; the core lives in nervamem.consolidate and the nervamem.code package."""

from __future__ import annotations

from typing import Annotated

import typer

from ..render import emit
from .commands import CONTEXT_SETTINGS, FormatOption, NsOption, _format, _open, app
from .edge import NervamemGroup


def _complete_strategy(incomplete: str) -> list[str]:
    try:
        from ..consolidate import available_strategies

        return [name for name in available_strategies() if name.startswith(incomplete)]
    except Exception:
        return []


@app.command()
def consolidate(
    ctx: typer.Context,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", "-n", help="Report what would be tombstoned; change nothing."),
    ] = False,
    strategy: Annotated[
        str,
        typer.Option(
            "--strategy",
            help="Consolidator to use (entry-point group nervamem.consolidators).",
            autocompletion=_complete_strategy,
        ),
    ] = "rule-based",
    all_namespaces: Annotated[
        bool,
        typer.Option("--all-namespaces", help="Process the jobs of every namespace."),
    ] = False,
    namespace: NsOption = None,
    fmt: FormatOption = None,
) -> None:
    """Deduplicate the sessions that ended since the last run.

    Within each session, two live nodes of the same kind whose word sets overlap with
    Jaccard > 0.9 are duplicates: the older one is tombstoned. Nothing is compared
    across sessions or namespaces; a second run finds no pending jobs and does nothing.

    \b
    Example:
      nervamem consolidate --dry-run
      nervamem consolidate --format json
    """
    output = _format(ctx, fmt)
    with _open(ctx, namespace) as memory:
        result = memory.consolidate(
            strategy=strategy, dry_run=dry_run, all_namespaces=all_namespaces
        )
    emit("consolidate", result, output)


code_app = typer.Typer(
    cls=NervamemGroup,
    help=(
        "The code graph that memories are anchored to (.nervapack/graph.graphml).\n\n"
        "\b\nExample:\n  nervamem code index\n  nervamem code index src/"
    ),
    no_args_is_help=True,
    context_settings=CONTEXT_SETTINGS,
)
app.add_typer(code_app, name="code")


@code_app.command("index")
def code_index(
    ctx: typer.Context,
    root: Annotated[
        str | None,
        typer.Argument(
            help="Folder to index (default: the folder that holds the store's .nervapack/)."
        ),
    ] = None,
    fmt: FormatOption = None,
) -> None:
    """Index the Python code into graph.graphml beside the store.

    One node per module, class, function and method, with file_path, start_line,
    end_line, qualname, kind, name and source_hash; CONTAINS edges. Files git tracks or
    would track are indexed; unchanged files are reused from the previous graph.

    \b
    Example:
      nervamem code index
      nervamem code index src/
    """
    output = _format(ctx, fmt)
    with _open(ctx) as memory:
        result = memory.index_code(root)
    emit("code_index", result, output)


@app.command("code-for")
def code_for(
    ctx: typer.Context,
    target: Annotated[
        str,
        typer.Argument(
            metavar="FILE_PATH[:LINE]",
            help="A file (or folder), optionally with the line whose code you mean.",
        ),
    ],
    namespace: NsOption = None,
    fmt: FormatOption = None,
) -> None:
    """Current memories about a file, or about the code that contains a line.

    \b
    Example:
      nervamem code-for nervamem/store.py
      nervamem code-for nervamem/store.py:120 --format json
    """
    output = _format(ctx, fmt)
    with _open(ctx, namespace) as memory:
        result = memory.code_for(target)
    emit("code_for", result, output)


@app.command("code-to")
def code_to(
    ctx: typer.Context,
    node_id: Annotated[str, typer.Argument(metavar="ID", help="Short ID, ID or prefix.")],
    namespace: NsOption = None,
    fmt: FormatOption = None,
) -> None:
    """Where in the code a memory is anchored (through its TOUCHES edges).

    \b
    Example:
      nervamem code-to d-3a9c
    """
    output = _format(ctx, fmt)
    with _open(ctx, namespace) as memory:
        result = memory.code_to(node_id)
    emit("code_to", result, output)


@app.command("verify-staleness")
def verify_staleness(
    ctx: typer.Context, namespace: NsOption = None, fmt: FormatOption = None
) -> None:
    """Check every anchored memory against the source as it is now.

    A memory is stale when the code under it was removed ("symbol removed", "file
    missing", "file does not parse") or changed since it was anchored ("source changed").
    The source files are re-read, so no fresh 'code index' is needed.

    \b
    Example:
      nervamem verify-staleness --format json
    """
    output = _format(ctx, fmt)
    with _open(ctx, namespace) as memory:
        result = memory.verify_staleness()
    emit("verify_staleness", result, output)
