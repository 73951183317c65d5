"""The code bridge: ``code index``, ``code-for``, ``code-to`` and ``verify-staleness``.
They parse, call one core function and render; the core lives in the nervamem.code package."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..errors import ExitCode
from ..render import emit
from ..visible import visible
from .edge import NervamemGroup
from .options import CONTEXT_SETTINGS, FormatOption, NsOption, open_store, output_format


def code_index(
    ctx: typer.Context,
    root: Annotated[
        str | None,
        typer.Argument(
            help="Folder to index (default: the project: the folder that holds the store's "
            ".nervapack/, else the git work tree, else the current folder)."
        ),
    ] = None,
    fmt: FormatOption = None,
) -> None:
    """Index the code into graph.graphml beside the store.

    Python always; Go, Rust, Java, TypeScript and JavaScript with the code extra
    (pip install 'nervamem[code]'); files whose grammar is missing are listed as skipped.
    One node per module, class, function and method (and struct, interface, trait,
    enum, impl...), with file_path, start_line, end_line, qualname, kind, name and
    source_hash; CONTAINS edges. Files git tracks or would track are indexed; unchanged
    files are reused from the previous graph.

    \b
    Example:
      nervamem code index
      nervamem code index src/
    """
    from ..locate import home_store

    output = output_format(ctx, fmt)

    def check() -> None:
        if root is not None:
            from ..code.indexing import checked_root

            checked_root(root)

    with open_store(ctx, create=True, before_create=check) as memory:
        result = memory.index_code(root)
        in_home_store = memory.path.resolve() == home_store().resolve()
    emit("code_index", result, output)
    if in_home_store:
        # No project store was found: say where the graph went, and how to keep each
        # project's code and memories apart.
        sys.stderr.write(
            f"nervamem: note: no project store here, so the code graph is in the home "
            f"store's folder; run 'nervamem init' in {visible(result.root)} for a project store\n"
        )


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
    output = output_format(ctx, fmt)
    with open_store(ctx, namespace) as memory:
        result = memory.code_for(target)
    emit("code_for", result, output)


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
    output = output_format(ctx, fmt)
    with open_store(ctx, namespace) as memory:
        result = memory.code_to(node_id)
    emit("code_to", result, output)


def verify_staleness(
    ctx: typer.Context,
    namespace: NsOption = None,
    fmt: FormatOption = None,
    exit_code: Annotated[
        bool,
        typer.Option(
            "--exit-code",
            help="Exit with status 5 when any memory is stale (the report is printed as usual).",
        ),
    ] = False,
) -> None:
    """Check every anchored memory against the source as it is now.

    A memory is stale when the code under it was removed ("symbol removed", "file
    missing", "file does not parse") or changed since it was anchored ("source changed").
    The source files are re-read, so no fresh 'code index' is needed. With --exit-code
    the status is 5 when anything is stale, 0 when nothing is, so a script or CI job can
    branch on it.

    \b
    Example:
      nervamem verify-staleness --format json
      nervamem verify-staleness --exit-code || echo "some memories are stale"
    """
    output = output_format(ctx, fmt)
    with open_store(ctx, namespace) as memory:
        result = memory.verify_staleness()
    emit("verify_staleness", result, output)
    if exit_code and result.stale:
        raise typer.Exit(int(ExitCode.STALE))


def register(app: typer.Typer) -> None:
    """Add the ``code`` group and the code-bridge commands to ``app``, in the order
    --help lists them."""
    code_app = typer.Typer(
        cls=NervamemGroup,
        help=(
            "The code graph that memories are anchored to (.nervapack/graph.graphml).\n\n"
            "\b\nExample:\n  nervamem code index\n  nervamem code index src/"
        ),
        no_args_is_help=True,
        context_settings=CONTEXT_SETTINGS,
    )
    code_app.command("index")(code_index)
    app.add_typer(code_app, name="code")
    app.command("code-for")(code_for)
    app.command("code-to")(code_to)
    app.command("verify-staleness")(verify_staleness)
