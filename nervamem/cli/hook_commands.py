"""The ``hooks`` group: git commits as memories. ``hooks record`` is what the
post-commit hook runs; ``hooks backfill`` records the commits it missed. Each command
parses its arguments, calls one MemoryStore method and hands the result to the renderer
of the chosen format."""

# No "from __future__ import annotations" here: Typer reads these signatures on every
# call, and string annotations would make it eval() each one again (~3 ms a call).
from pathlib import Path
from typing import Annotated

import typer

from ..render import emit
from .edge import command_group
from .options import (
    CONTEXT_SETTINGS,
    FormatOption,
    NsOption,
    open_store,
    output_format,
    root_settings,
)

RepoOption = Annotated[
    Path | None,
    typer.Option(
        "--repo",
        help="A folder in the git repository (default: the current folder).",
        show_default=False,
    ),
]


def hooks_record(
    ctx: typer.Context,
    rev: Annotated[str, typer.Argument(help="The commit to record.")] = "HEAD",
    repo: RepoOption = None,
    namespace: NsOption = None,
    fmt: FormatOption = None,
) -> None:
    """Record a commit as an action, and its Decision: trailers as decisions.

    Both are anchored to the innermost functions, methods and classes whose lines
    the commit changed (when a code graph exists). A commit recorded before is left as
    it is. hooks/post-commit runs this after every commit.

    \b
    Example:
      nervamem hooks record
      nervamem hooks record 3f2a9c1 --format json
    """
    output = output_format(ctx, fmt)
    # Never a schema migration here: on a large store it outlasts the hook's time limit,
    # and the hook is killed every time (docs/guide-git-hooks.md, "Upgrading").
    with open_store(
        ctx, namespace, create=True, never_upgrade=True, after_upgrade="nervamem hooks backfill"
    ) as memory:
        result = memory.record_commit(repo or Path.cwd(), rev)
    emit("hooks_record", result, output)


def hooks_backfill(
    ctx: typer.Context,
    since: Annotated[
        str | None,
        typer.Option("--since", help="Only the commits after this one (default: all)."),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", help="Only the newest N commits of the range.")
    ] = None,
    repo: RepoOption = None,
    namespace: NsOption = None,
    fmt: FormatOption = None,
) -> None:
    """Record the past commits not recorded yet, oldest first (safe to re-run).

    Commits are keyed by their hash: those the post-commit hook recorded, or missed
    while the store was locked, are recorded once. Decision: trailers become decisions.

    \b
    Example:
      nervamem hooks backfill --since v2.0
      nervamem hooks backfill --limit 50
    """
    output = output_format(ctx, fmt)
    with open_store(ctx, namespace, create=True) as memory:
        result = memory.backfill_commits(repo or Path.cwd(), since, limit=limit)
    emit("hooks_backfill", result, output)


def hooks_install(
    ctx: typer.Context,
    repo: RepoOption = None,
    fmt: FormatOption = None,
) -> None:
    """Install nervamem's git hooks in the repository (idempotent).

    post-commit records each commit; post-merge, post-checkout and post-rewrite run
    'nervamem sync' for a shared store. None of them ever blocks or fails git. A hook
    you wrote yourself is kept: ours goes beside it and is called from its end.

    \b
    Example:
      nervamem hooks install
      nervamem hooks install --repo ~/src/project
    """
    from ..team.hook_install import install

    output = output_format(ctx, fmt)
    _refuse_a_url_the_hooks_cannot_see(ctx)
    _check_store(ctx)
    emit("hooks_install", install(repo or Path.cwd()), output)


def hooks_uninstall(
    ctx: typer.Context,
    repo: RepoOption = None,
    fmt: FormatOption = None,
) -> None:
    """Remove nervamem's git hooks, and only those: your own hooks stay as they were.

    \b
    Example:
      nervamem hooks uninstall
    """
    from ..team.hook_install import uninstall

    output = output_format(ctx, fmt)
    _check_store(ctx)
    emit("hooks_install", uninstall(repo or Path.cwd()), output)


def _refuse_a_url_the_hooks_cannot_see(ctx: typer.Context) -> None:
    """The hook scripts find the store as any command does, without --db: from
    NERVAMEM_DB (or the project or home file). Installed with --db URL and no such
    variable, commits would go to a local file while the agents use the server; so
    that is refused, saying what to set (the URL is not written into the scripts: it
    may hold a password, and the scripts are shared by everyone using the clone)."""
    from ..errors import BadInputError
    from ..locate import is_store_url, store_url, url_without_password
    from ..storage.choose import store_name_in_environment

    given = root_settings(ctx).db
    if given is None or not is_store_url(given):
        return
    in_environment = store_name_in_environment()
    if is_store_url(in_environment) and store_url(str(in_environment)) == store_url(given):
        return
    raise BadInputError(
        "the git hooks find the store through NERVAMEM_DB, not --db: set "
        f"NERVAMEM_DB={url_without_password(store_url(given))} (the password in PGPASSWORD "
        "or ~/.pgpass) where you commit, then run 'nervamem hooks install' again"
    )


def _check_store(ctx: typer.Context) -> None:
    """The hooks write to the store in use: if there is one, it must be usable (the
    usual one-line error if not), though installing them does not touch it."""
    from ..locate import resolve_store

    store = resolve_store(root_settings(ctx).db)
    if isinstance(store, str) or store.exists():
        with open_store(ctx) as memory:
            memory.current()


def register(app: typer.Typer) -> None:
    """Add the ``hooks`` group to ``app``."""
    hooks_app = command_group(
        "Git hooks: commits as memories, and sync after pulls.\n\n"
        "\b\nExample:\n  nervamem hooks install\n  nervamem hooks record HEAD\n"
        "  nervamem hooks backfill --since v2.0",
        CONTEXT_SETTINGS,
    )
    hooks_app.command("install")(hooks_install)
    hooks_app.command("uninstall")(hooks_uninstall)
    hooks_app.command("record")(hooks_record)
    hooks_app.command("backfill")(hooks_backfill)
    app.add_typer(hooks_app, name="hooks")
