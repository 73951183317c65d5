"""Command tree. Each command parses its arguments, calls one MemoryStore method and
hands the result to the renderer of the chosen format."""

# No "from __future__ import annotations" here: Typer reads these signatures on every
# call, and string annotations would make it eval() each one again (~3 ms a call).
import copy
import gc
import os
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .. import __version__
from ..errors import BadInputError
from ..kinds import NODE_KINDS, STORABLE_KINDS
from ..render import emit, resolve_format
from ..visible import visible
from .edge import NervamemGroup

if TYPE_CHECKING:
    from ..store import MemoryStore

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

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


class Settings:
    """The root options, shared with every command through the context.

    A plain class: @dataclass would cost ~1 ms (and the dataclasses import) per call.
    """

    __slots__ = ("db", "namespace", "fmt", "tokenizer")

    def __init__(
        self,
        db: str | None = None,
        namespace: str | None = None,
        fmt: str | None = None,
        tokenizer: str | None = None,
    ) -> None:
        self.db = db
        self.namespace = namespace
        self.fmt = fmt
        self.tokenizer = tokenizer


def _complete_kind(incomplete: str) -> list[str]:
    return [k for k in STORABLE_KINDS if k.startswith(incomplete)]


def _complete_any_kind(incomplete: str) -> list[str]:
    return [k for k in NODE_KINDS if k.startswith(incomplete)]


def _complete_namespace(ctx: typer.Context, incomplete: str) -> list[str]:
    try:
        from ..locate import resolve_db_path
        from ..store import MemoryStore

        # Pressing Tab must never create a store as a side effect.
        path = resolve_db_path(ctx.find_root().params.get("db"))
        if not path.is_file():
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
        autocompletion=_complete_namespace,
    ),
]
FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format",
        "-f",
        help="Output format: markdown, json or table (default: table on a terminal, "
        "markdown when piped; env NERVAMEM_FORMAT).",
        autocompletion=lambda incomplete: [
            f for f in ("markdown", "json", "table") if f.startswith(incomplete)
        ],
    ),
]


def _settings(ctx: typer.Context) -> Settings:
    obj = ctx.find_root().obj
    return obj if isinstance(obj, Settings) else Settings()


def _default_store_factory(db: str | None, namespace: str | None) -> "MemoryStore":
    from ..store import MemoryStore

    return MemoryStore(db, namespace=namespace)


# Tests replace this to inject a fixed clock and ID source into every command.
store_factory = _default_store_factory


def _open(ctx: typer.Context, namespace: str | None = None) -> "MemoryStore":
    settings = _settings(ctx)
    return store_factory(settings.db, namespace if namespace is not None else settings.namespace)


def _format(ctx: typer.Context, fmt: str | None) -> str:
    return resolve_format(fmt, _settings(ctx).fmt)


def _read_stdin(what: str) -> str:
    if sys.stdin is None:
        raise BadInputError(f"{what} '-' needs standard input")
    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInputError(
            f"{what} on standard input is not valid UTF-8 (byte {exc.start})"
        ) from None


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
            help="Store file (else NERVAPACK_MEMORY_DB, .nervapack/memory.db upwards, "
            "~/.nervapack/memory.db).",
        ),
    ] = None,
    namespace: NsOption = None,
    fmt: FormatOption = None,
    tokenizer: Annotated[
        str | None,
        typer.Option(
            "--tokenizer",
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


@app.command()
def init(
    ctx: typer.Context,
    global_: Annotated[
        bool, typer.Option("--global", help="Create the home store ~/.nervapack/memory.db.")
    ] = False,
    fmt: FormatOption = None,
) -> None:
    """Create a store in ./.nervapack/memory.db (idempotent).

    \b
    Example:
      nervamem init            # project store in the current folder
      nervamem init --global   # ~/.nervapack/memory.db
    """
    from ..locate import (
        ENV_DB,
        STORE_DIR,
        STORE_FILE,
        home_store,
        resolve_db_path,
        working_folder,
    )
    from ..models import InitResult

    settings = _settings(ctx)
    output = _format(ctx, fmt)
    if global_:
        target = home_store()
    elif settings.db is not None or os.environ.get(ENV_DB):
        target = resolve_db_path(settings.db)  # refuses a blank path or a folder's
    else:
        target = working_folder() / STORE_DIR / STORE_FILE
    existed = target.exists()
    store_factory(str(target), None).close()
    emit("init", InitResult(db_path=str(target.resolve()), created=not existed), output)


@app.command()
def store(
    ctx: typer.Context,
    kind: Annotated[
        str,
        typer.Argument(
            help="fact, decision, action, outcome, entity, procedure or preference.",
            autocompletion=_complete_kind,
            show_default=False,
        ),
    ],
    content: Annotated[
        str, typer.Argument(help="The memory text, or '-' to read it from standard input.")
    ],
    entity: Annotated[
        list[str] | None,
        typer.Option("--entity", "-e", help="Entity the memory is about (repeatable)."),
    ] = None,
    confidence: Annotated[
        float, typer.Option("--confidence", help="Confidence between 0 and 1.")
    ] = 1.0,
    valid_from: Annotated[
        str | None,
        typer.Option("--valid-from", help="When it became true (ISO-8601; default now, UTC)."),
    ] = None,
    supersedes: Annotated[
        str | None, typer.Option("--supersedes", help="ID of the node this one replaces.")
    ] = None,
    contradicts: Annotated[
        list[str] | None, typer.Option("--contradicts", help="ID this conflicts with.")
    ] = None,
    caused_by: Annotated[
        list[str] | None,
        typer.Option("--caused-by", help="ID of the decision or action that produced this."),
    ] = None,
    derived_from: Annotated[
        list[str] | None, typer.Option("--derived-from", help="ID this is inferred from.")
    ] = None,
    rationale: Annotated[
        str | None, typer.Option("--rationale", help="Why (decisions only).")
    ] = None,
    rejected: Annotated[
        list[str] | None,
        typer.Option("--rejected", help="An alternative that was rejected (decisions only)."),
    ] = None,
    session: Annotated[
        str | None, typer.Option("--session", help="Session ID (default: the active one).")
    ] = None,
    namespace: NsOption = None,
    fmt: FormatOption = None,
) -> None:
    """Store a memory and print its ID.

    \b
    Example:
      nervamem store decision "Chose JWT for auth" -e AuthService --rationale stateless
      ID=$(nervamem store fact "auth tokens last 15 minutes" -e auth_service)
      git log -1 --format=%B | nervamem store action -
    """
    output = _format(ctx, fmt)
    text = _read_stdin("content") if content == "-" else content
    with _open(ctx, namespace) as memory:
        node_id, anchoring = memory.store_anchored(
            kind,
            text,
            entities=entity or (),
            confidence=confidence,
            valid_from=valid_from,
            supersedes=supersedes,
            contradicts=contradicts or (),
            caused_by=caused_by or (),
            derived_from=derived_from or (),
            rationale=rationale,
            rejected=rejected or (),
            session=session,
        )
    for warning in anchoring.warnings if anchoring else ():
        # Warnings name entities (user text) and go to a person's terminal.
        sys.stderr.write(f"nervamem: warning: {visible(warning)}\n")
    emit("id", node_id, output)


@app.command()
def recall(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to remember, or '-' to read it from stdin.")],
    budget: Annotated[
        int, typer.Option("--budget", "-b", help="Hard limit on output tokens.")
    ] = 500,
    as_of: Annotated[
        str | None, typer.Option("--as-of", help="Show what was true at this date/time.")
    ] = None,
    kind: Annotated[
        list[str] | None,
        typer.Option(
            "--kind", "-k", help="Only these kinds (repeatable).", autocompletion=_complete_any_kind
        ),
    ] = None,
    hops: Annotated[
        int, typer.Option("--hops", help="Graph expansion depth (0 turns it off).")
    ] = 2,
    namespace: NsOption = None,
    fmt: FormatOption = None,
    tokenizer: Annotated[str | None, typer.Option("--tokenizer", help="char or tiktoken.")] = None,
) -> None:
    """Recall what is relevant to QUERY, within a token budget.

    \b
    Example:
      nervamem recall "auth mechanism"
      nervamem recall "auth mechanism" --as-of 2026-03-15 --budget 300
      nervamem recall "why JWT" --kind decision --format json
    """
    output = _format(ctx, fmt)
    text = _read_stdin("query") if query == "-" else query
    with _open(ctx, namespace) as memory:
        result = memory.recall(
            text,
            budget_tokens=budget,
            as_of=as_of,
            kinds=kind or None,
            hops=hops,
            tokenizer=tokenizer or _settings(ctx).tokenizer,
        )
    emit("recall", result, output)


@app.command()
def timeline(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to trace, or '-' to read it from stdin.")],
    limit: Annotated[int, typer.Option("--limit", help="At most this many versions.")] = 100,
    namespace: NsOption = None,
    fmt: FormatOption = None,
) -> None:
    """Every version of what matches QUERY, oldest first, superseded ones marked.

    \b
    Example:
      nervamem timeline auth
    """
    output = _format(ctx, fmt)
    text = _read_stdin("query") if query == "-" else query
    with _open(ctx, namespace) as memory:
        items = memory.timeline(text, limit=limit)
    emit("timeline", items, output)


@app.command()
def forget(
    ctx: typer.Context,
    node_id: Annotated[str, typer.Argument(metavar="ID", help="Short ID, ID or prefix.")],
    purge: Annotated[
        bool, typer.Option("--purge", help="Delete it for good, leaving no trace on disk.")
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
    output = _format(ctx, fmt)
    with _open(ctx, namespace) as memory:
        target = memory.resolve_id(node_id)
        if purge and not yes:
            if not sys.stdin.isatty():
                raise BadInputError("forget --purge needs --yes when no one can be asked")
            if not typer.confirm(f"Purge {target} for good?", default=False):
                raise typer.Exit(1)
        result = memory.forget(target, purge=purge)
    emit("forget", result, output)


@app.command()
def stats(ctx: typer.Context, namespace: NsOption = None, fmt: FormatOption = None) -> None:
    """Counts of nodes and edges in a namespace, and where the store is.

    \b
    Example:
      nervamem stats --format json
    """
    output = _format(ctx, fmt)
    with _open(ctx, namespace) as memory:
        result = memory.stats()
    emit("stats", result, output)


session_app = typer.Typer(
    cls=NervamemGroup,
    help=(
        "Start and end sessions (a session scopes what an agent did in one task).\n\n"
        '\b\nExample:\n  SID=$(nervamem session start "migrate auth to JWT")\n'
        '  nervamem session end --summary "auth now uses JWT"'
    ),
    no_args_is_help=True,
    context_settings=CONTEXT_SETTINGS,
)
app.add_typer(session_app, name="session")


@session_app.command("start")
def session_start(
    ctx: typer.Context,
    title: Annotated[str | None, typer.Argument(help="What the session is about.")] = None,
    namespace: NsOption = None,
    fmt: FormatOption = None,
) -> None:
    """Start a session, make it active and print its ID.

    \b
    Example:
      SID=$(nervamem session start "migrate auth to JWT")
    """
    output = _format(ctx, fmt)
    with _open(ctx, namespace) as memory:
        session_id = memory.start_session(title)
    emit("id", session_id, output)


@session_app.command("end")
def session_end(
    ctx: typer.Context,
    summary: Annotated[str | None, typer.Option("--summary", help="What was done.")] = None,
    session: Annotated[
        str | None, typer.Option("--session", help="Session ID (default: the active one).")
    ] = None,
    fmt: FormatOption = None,
) -> None:
    """End a session and queue it for consolidation.

    \b
    Example:
      nervamem session end --summary "auth now uses JWT"
    """
    output = _format(ctx, fmt)
    with _open(ctx) as memory:
        session_id = memory.end_session(session, summary=summary)
    emit("id", session_id, output)


ns_app = typer.Typer(
    cls=NervamemGroup,
    help=(
        "Namespaces: separate memories in one store.\n\n"
        "\b\nExample:\n  nervamem ns list\n  nervamem ns switch project_b"
    ),
    no_args_is_help=True,
    context_settings=CONTEXT_SETTINGS,
)
app.add_typer(ns_app, name="ns")


@ns_app.command("switch")
def ns_switch(
    ctx: typer.Context,
    name: Annotated[
        str, typer.Argument(help="Namespace name.", autocompletion=_complete_namespace)
    ],
    fmt: FormatOption = None,
) -> None:
    """Make NAME the active namespace (this ends the active session's scope).

    \b
    Example:
      nervamem ns switch project_b
    """
    output = _format(ctx, fmt)
    with _open(ctx) as memory:
        result = memory.switch_namespace(name)
    emit("ns_switch", result, output)


@ns_app.command("list")
def ns_list(ctx: typer.Context, fmt: FormatOption = None) -> None:
    """List namespaces and how many live nodes each holds.

    \b
    Example:
      nervamem ns list --format json
    """
    output = _format(ctx, fmt)
    with _open(ctx) as memory:
        result = memory.list_namespaces()
    emit("ns_list", result, output)


@ns_app.command("current")
def ns_current(ctx: typer.Context, fmt: FormatOption = None) -> None:
    """Show the active namespace and session.

    \b
    Example:
      nervamem ns current
    """
    output = _format(ctx, fmt)
    with _open(ctx) as memory:
        result = memory.current()
    emit("ns_current", result, output)


# Root options that take a value: the word after them is not the command.
_ROOT_VALUE_OPTIONS = frozenset({"--db", "--ns", "--format", "-f", "--tokenizer"})


def _command_name(info: Any) -> str:
    """The name Typer gives a registered command (its function name, dashed)."""
    callback_name = info.callback.__name__ if info.callback else ""
    return str(info.name or callback_name.lower().replace("_", "-"))


def _app_for(args: list[str]) -> typer.Typer:
    """The app with only the command that ``args`` invoke.

    Typer builds the Click object of every command (signatures, annotations, options)
    before it runs one: ~20 ms of each call, which agents and hooks pay on every call.
    A shallow copy that holds the invoked command alone runs it identically (a command's
    parsing, help and errors do not depend on its siblings). Help, completion, a missing
    or unknown command get the whole app, so listings and suggestions stay complete.
    """
    if os.environ.get("_NERVAMEM_COMPLETE"):
        return app
    name = None
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in ("-h", "--help", "--"):
            return app
        if arg in _ROOT_VALUE_OPTIONS:
            index += 2
        elif arg.startswith("-"):
            index += 1
        else:
            name = arg
            break
    if name is None:
        if args and all(arg in ("-V", "--version") for arg in args):
            trimmed = copy.copy(app)
            trimmed.registered_commands, trimmed.registered_groups = [], []
            return trimmed
        return app
    commands = [info for info in app.registered_commands if _command_name(info) == name]
    groups = [info for info in app.registered_groups if info.name == name]
    if not commands and not groups:
        return app
    trimmed = copy.copy(app)
    trimmed.registered_commands, trimmed.registered_groups = commands, groups
    return trimmed


def main(argv: list[str] | None = None) -> Any:
    args = list(sys.argv[1:] if argv is None else argv)
    if argv is not None:
        return _app_for(args)(args=args, prog_name="nervamem")
    # The process entry point (the console script, python -m nervamem): the process ends
    # with this command. Before the interpreter shuts down, every object alive is frozen
    # out of the cyclic GC, whose collections at shut-down (~20k objects of Typer, Click,
    # inspect, sqlite3, and the cycles it frees one by one) cost 10-15 ms of every call
    # and release nothing that exiting does not. Exit handlers, flushing and exit codes
    # are unchanged.
    try:
        return _app_for(args)(args=args, prog_name="nervamem")
    finally:
        gc.freeze()


from . import code_commands  # noqa: E402,F401  (code bridge and consolidate commands)
