"""The memory commands: init, store, recall, timeline, forget, stats and consolidate.
Each parses its arguments, calls one MemoryStore method (or one core function) and hands
the result to the renderer of the chosen format."""

# No "from __future__ import annotations" here: Typer reads these signatures on every
# call, and string annotations would make it eval() each one again (~3 ms a call).
import inspect
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import BadInputError
from ..kinds import NODE_KINDS, STORABLE_KINDS
from ..render import emit
from ..visible import visible
from . import context, direct
from .direct import read_stdin
from .options import (
    TOKENIZER_CHOICES,
    FormatOption,
    NsOption,
    choices,
    complete_namespace,
    open_store,
    output_format,
    report_skipped,
    root_settings,
)

if TYPE_CHECKING:
    from ..models import EventProblem


def _complete_kind(incomplete: str) -> list[str]:
    return [k for k in STORABLE_KINDS if k.startswith(incomplete)]


def _complete_any_kind(incomplete: str) -> list[str]:
    return [k for k in NODE_KINDS if k.startswith(incomplete)]


KindsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--kind",
        "-k",
        metavar=choices(NODE_KINDS),
        help="Only these kinds (repeatable).",
        autocompletion=_complete_any_kind,
    ),
]


KnownAtOption = Annotated[
    str | None,
    typer.Option(
        "--known-at",
        help="Answer from what had been recorded by this date/time (later memories, "
        "supersessions and forgetting ignored).",
    ),
]


def init(
    ctx: typer.Context,
    global_: Annotated[
        bool, typer.Option("--global", help="Create the home store ~/.nervapack/memory.db.")
    ] = False,
    shared: Annotated[
        bool,
        typer.Option(
            "--shared",
            help="Share it through git: every change is also an event file in "
            ".nervapack/events/ (an existing store's history becomes events).",
        ),
    ] = False,
    fmt: FormatOption = None,
) -> None:
    """Create the store (idempotent): ./.nervapack/memory.db, or what --db names.

    --db or NERVAMEM_DB names an SQLite file or a postgresql:// URL.

    It also writes .nervapack/.gitignore, which keeps the store out of git (all but
    events/, which team memory shares).

    \b
    Example:
      nervamem init            # project store in the current folder
      nervamem init --shared   # team memory: commit .nervapack/events/ with the code
      nervamem init --global   # ~/.nervapack/memory.db
      nervamem --db postgresql://agent@db/memory init   # a store on a server
    """
    from ..locate import (
        STORE_DIR,
        STORE_FILE,
        find_project_store,
        home_store,
        keep_store_out_of_git,
        resolve_db_path,
        resolve_store,
        store_path_in_environment,
        working_folder,
    )
    from ..models import InitResult

    settings = root_settings(ctx)
    output = output_format(ctx, fmt)
    if global_ and settings.db is not None:
        # Each names the store to create: --global made the home store, --db unheeded.
        raise BadInputError("--db and --global exclude each other: give one")
    above = None
    url = resolve_store(settings.db) if not global_ else None
    if isinstance(url, str):  # a PostgreSQL database: its schema, nothing on disk
        memory = context.store_factory(url, None)
        try:
            if shared:
                memory.share()  # refused: a server is shared already
            result = InitResult(
                db_path=memory.location,
                created=bool(getattr(memory.storage, "created", False)),
                shared=False,
                events_folder=None,
                events_written=0,
            )
        finally:
            memory.close()
        emit("init", result, output)
        return
    if global_:
        target = home_store()
    elif settings.db is not None or store_path_in_environment():
        target = resolve_db_path(settings.db)  # refuses a blank path or a folder's
    else:
        target = working_folder() / STORE_DIR / STORE_FILE
        above = find_project_store(working_folder().parent)
        if above is not None and above.resolve() == home_store().resolve():
            above = None  # the home store is the fallback, not another project's store
    existed = target.exists()
    # Looked up on the module, not imported by name: tests replace the factory.
    memory = context.store_factory(str(target), None)
    skipped: tuple[EventProblem, ...] = ()
    try:
        written = memory.share() if shared else 0
        if memory.shared and not written:
            # A clone of a repository that shares its memory: the cache starts with it.
            skipped = memory.sync().problems
        result = InitResult(
            db_path=str(target.resolve()),
            created=not existed,
            shared=memory.shared,
            events_folder=str(memory.storage.events.folder.resolve())
            if memory.storage.events is not None
            else None,
            events_written=written,
        )
    finally:
        memory.close()
    keep_store_out_of_git(target.parent)
    emit("init", result, output)
    if skipped:
        # The clone's bad event files, said as sync says them (exit 4), not in silence.
        report_skipped(skipped)
    if above is not None and not existed:
        # Commands here used that store until now; from now on they use this one.
        sys.stderr.write(
            f"nervamem: warning: {visible(str(above))} already holds a store for a folder "
            "above this one; commands run here now use the new store instead\n"
        )


def store(ctx: typer.Context, kind: str, content: str, **fields: Any) -> None:
    """Store a memory and print its ID.

    \b
    Example:
      nervamem store decision "Chose JWT for auth" -e AuthService --rationale stateless
      ID=$(nervamem store fact "auth tokens last 15 minutes" -e auth_service)
      git log -1 --format=%B | nervamem store action -
      nervamem store fact "deploys are frozen" --valid-until 2026-12-04T18:00Z
    """
    direct.store_memory(root_settings(ctx), kind, content, **fields)


# What the command line adds to a field's declaration: Tab completion of its values.
_COMPLETIONS: dict[str, Callable[..., list[str]]] = {
    "kind": _complete_kind,
    "namespace": complete_namespace,
}


_POSITIONAL = inspect.Parameter.POSITIONAL_OR_KEYWORD


def _store_signature() -> inspect.Signature:
    """``store``'s parameters as Typer reads them: one for each field of a new memory that
    memory_fields.FIELDS gives the command line, in its order, then the output format."""
    from ..memory_fields import DEFAULTS, FIELDS, Cli

    parameters = [inspect.Parameter("ctx", _POSITIONAL, annotation=typer.Context)]
    for field in FIELDS:
        cli = field.cli
        if not isinstance(cli, Cli):
            continue
        completion = _COMPLETIONS.get(field.name)
        if not cli.names:
            # Required: there is no default to show.
            argument = typer.Argument(help=cli.help, autocompletion=completion, show_default=False)
            parameters.append(
                inspect.Parameter(field.name, _POSITIONAL, annotation=Annotated[str, argument])
            )
            continue
        option = typer.Option(*cli.names, help=cli.help, autocompletion=completion)
        default = DEFAULTS[field.name]
        if cli.repeatable:
            value: Any = list[str] | None
            default = None  # Click's "not given", for every repeatable option
        elif default is None:
            value = cli.value | None
        else:
            value = cli.value
        parameters.append(
            inspect.Parameter(
                field.name, _POSITIONAL, default=default, annotation=Annotated[value, option]
            )
        )
    parameters.append(inspect.Parameter("fmt", _POSITIONAL, default=None, annotation=FormatOption))
    return inspect.Signature(parameters, return_annotation=None)


store.__signature__ = _store_signature()  # type: ignore[attr-defined]


def recall(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to remember, or '-' to read it from stdin.")],
    budget: Annotated[
        int, typer.Option("--budget", "-b", help="Hard limit on output tokens.")
    ] = 500,
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            help="Show what was true at this date/time (a date alone: the end of that day).",
        ),
    ] = None,
    known_at: KnownAtOption = None,
    kind: KindsOption = None,
    hops: Annotated[
        int, typer.Option("--hops", help="Graph expansion depth (0 turns it off).")
    ] = 2,
    namespace: NsOption = None,
    fmt: FormatOption = None,
    tokenizer: Annotated[
        str | None,
        typer.Option(
            "--tokenizer", metavar=choices(TOKENIZER_CHOICES), help="Token counter for the budget."
        ),
    ] = None,
    min_score: Annotated[
        float,
        typer.Option(
            "--min-score",
            help="Leave out memories scoring below this share of the best one (0-1). "
            "Default 0: fill the budget.",
        ),
    ] = 0.0,
) -> None:
    """Recall what is relevant to QUERY, within a token budget.

    \b
    Example:
      nervamem recall "auth mechanism"
      nervamem recall "auth mechanism" --as-of 2026-03-15 --budget 300
      nervamem recall "why JWT" --kind decision --format json
      nervamem recall netrc --min-score 0.3
      nervamem recall "auth mechanism" --known-at 2026-03-15   # what we knew then
    """
    direct.recall_memories(
        root_settings(ctx),
        query,
        budget=budget,
        as_of=as_of,
        known_at=known_at,
        kind=kind,
        hops=hops,
        namespace=namespace,
        fmt=fmt,
        tokenizer=tokenizer,
        min_score=min_score,
    )


def timeline(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to trace, or '-' to read it from stdin.")],
    limit: Annotated[int, typer.Option("--limit", help="At most this many versions.")] = 100,
    known_at: KnownAtOption = None,
    namespace: NsOption = None,
    fmt: FormatOption = None,
) -> None:
    """Every version of what matches QUERY, oldest first, superseded ones marked.

    \b
    Example:
      nervamem timeline auth
      nervamem timeline auth --known-at 2026-03-15   # as it was recorded by then
    """
    output = output_format(ctx, fmt)
    text = read_stdin("query") if query == "-" else query
    with open_store(ctx, namespace) as memory:
        items = memory.timeline(text, limit=limit, known_at=known_at)
    emit("timeline", items, output)


def show(
    ctx: typer.Context,
    node_ids: Annotated[
        list[str], typer.Argument(metavar="ID...", help="Short IDs, IDs or prefixes.")
    ],
    namespace: NsOption = None,
    fmt: FormatOption = None,
) -> None:
    """Show everything stored about nodes, forgotten ones included.

    Content, validity, session, entities, rationale, rejected alternatives, edges both
    ways (what it supersedes, what caused it, what it caused) and code anchors.

    \b
    Example:
      nervamem show d-3a9c
      nervamem show d-3a9c f-07b1 --format json
    """
    output = output_format(ctx, fmt)
    with open_store(ctx, namespace) as memory:
        details = memory.show(node_ids)
    emit("show", details, output)


def list_nodes(
    ctx: typer.Context,
    kind: KindsOption = None,
    session: Annotated[
        str | None, typer.Option("--session", help="Only what was stored in this session.")
    ] = None,
    entity: Annotated[
        str | None, typer.Option("--entity", "-e", help="Only memories about this entity.")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", help="Only what was recorded at or after this date/time."),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            "--until", help="Only what was recorded up to this date/time (a date: its end)."
        ),
    ] = None,
    include_superseded: Annotated[
        bool, typer.Option("--include-superseded", help="Also superseded versions.")
    ] = False,
    include_forgotten: Annotated[
        bool, typer.Option("--include-forgotten", help="Also forgotten (tombstoned) nodes.")
    ] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many.")] = 50,
    namespace: NsOption = None,
    fmt: FormatOption = None,
) -> None:
    """List memories newest first: browse rather than search.

    Without --kind every kind but session and entity is listed. Superseded and
    forgotten nodes are left out unless asked for.

    \b
    Example:
      nervamem list
      nervamem list --kind decision --since 2026-12-01
      nervamem list --entity AuthService --include-superseded --format json
    """
    from ..browse import ListFilter

    output = output_format(ctx, fmt)
    wanted = ListFilter(
        kinds=tuple(kind or ()),
        session=session,
        entity=entity,
        since=since,
        until=until,
        include_superseded=include_superseded,
        include_forgotten=include_forgotten,
        limit=limit,
    )
    with open_store(ctx, namespace) as memory:
        items = memory.list_nodes(wanted)
    emit("list", items, output)


def forget(
    ctx: typer.Context,
    node_id: Annotated[str, typer.Argument(metavar="ID", help="Short ID, ID or prefix.")],
    purge: Annotated[
        bool,
        typer.Option(
            "--purge",
            help="Delete it for good. SQLite: no trace left in the store's "
            "files. PostgreSQL: the tables are rewritten (VACUUM FULL; a warning if the "
            "role may not), but the server's WAL, replicas and backups keep the old "
            "bytes until recycled (docs/postgres.md).",
        ),
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before purging.")] = False,
    namespace: NsOption = None,
    fmt: FormatOption = None,
) -> None:
    """Forget a node (tombstone it), or purge it for good.

    \b
    Example:
      nervamem forget f-3a9c
      nervamem forget f-3a9c --purge --yes
    """
    output = output_format(ctx, fmt)
    with open_store(ctx, namespace) as memory:
        target = memory.resolve_id(node_id)
        if purge and not yes:
            if not sys.stdin.isatty():
                raise BadInputError("forget --purge needs --yes when no one can be asked")
            if not typer.confirm(f"Purge {target} for good?", default=False):
                raise typer.Exit(1)
        result = memory.forget(target, purge=purge)
        events = memory.storage.events
        # Only where a commit may hold a copy: in a repository with no commits (or none
        # that took the files) there is no copy in history to warn about.
        in_history = events is not None and events.removed_in_history is not False
    emit("forget", result, output)
    if result.files_not_scrubbed:
        sys.stderr.write(
            f"nervamem: warning: purged, but not scrubbed: {result.files_not_scrubbed}\n"
        )
    if purge and in_history:
        sys.stderr.write(
            "nervamem: note: its event files are deleted from .nervapack/events/, but copies "
            "already committed stay in git history until it is rewritten "
            "(docs/team-memory.md, 'Forgetting in shared history')\n"
        )


def stats(ctx: typer.Context, namespace: NsOption = None, fmt: FormatOption = None) -> None:
    """Counts of nodes and edges in a namespace, and where the store is.

    \b
    Example:
      nervamem stats --format json
    """
    output = output_format(ctx, fmt)
    with open_store(ctx, namespace) as memory:
        result = memory.stats()
    emit("stats", result, output)


def _complete_strategy(incomplete: str) -> list[str]:
    try:
        from ..consolidate import available_strategies

        return [name for name in available_strategies() if name.startswith(incomplete)]
    except Exception:
        return []


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
    output = output_format(ctx, fmt)
    with open_store(ctx, namespace) as memory:
        result = memory.consolidate(
            strategy=strategy, dry_run=dry_run, all_namespaces=all_namespaces
        )
    emit("consolidate", result, output)


def register(app: typer.Typer) -> None:
    """Add the memory commands to ``app``, in the order --help lists them."""
    commands: list[tuple[str | None, Callable[..., None]]] = [
        (None, init),
        (None, store),
        (None, recall),
        (None, timeline),
        (None, show),
        ("list", list_nodes),
        (None, forget),
        (None, stats),
        (None, consolidate),
    ]
    for name, command in commands:
        app.command(name)(command)
