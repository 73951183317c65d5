"""What every command group shares: the option types declared once, the root settings,
and the two things each command does first (choose the output format, open the store).

Command modules import from here and never from one another. ``store_factory`` is the
one place a store is made: tests replace it to inject a fixed clock and ID source.
"""

# No "from __future__ import annotations" here: Typer reads the option types below on
# every call, and string annotations would make it eval() each one again.
from typing import TYPE_CHECKING, Annotated

import typer

from ..render import resolve_format

if TYPE_CHECKING:
    from ..store import MemoryStore

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def choices(values: "tuple[str, ...] | list[str]") -> str:
    """The metavar of an option that takes one of fixed values: usage and help show
    ``[markdown|json|table]`` instead of ``<str>``."""
    return "[" + "|".join(values) + "]"


TOKENIZER_CHOICES = ("char", "tiktoken")


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


def _default_store_factory(
    db: str | None, namespace: str | None, migrate: bool = True
) -> "MemoryStore":
    from ..store import MemoryStore

    return MemoryStore(db, namespace=namespace, migrate=migrate)


# Tests replace this to inject a fixed clock and ID source into every command.
store_factory = _default_store_factory


# Set by the git hook scripts: a command they run refuses a store that needs a schema
# upgrade instead of upgrading it (a large store's migration outlasts their time limit).
ENV_NO_UPGRADE = "NERVAMEM_NO_UPGRADE"


def open_store(
    ctx: typer.Context,
    namespace: str | None = None,
    *,
    create: bool = False,
    never_upgrade: bool = False,
    after_upgrade: str | None = None,
) -> "MemoryStore":
    """The store the command works on. Only ``init`` and the commands that write
    (``create=True``) may create it: a read of an explicit ``--db`` path that does not
    exist fails (exit 1) instead of answering from a new, empty store left behind, as a
    mistyped path would.

    A store with an older schema is upgraded, unless ``never_upgrade`` (``hooks
    record``, which only the post-commit hook runs) or NERVAMEM_NO_UPGRADE=1 (set by
    the hook scripts): then the command fails at once (exit 1,
    ``schema_upgrade_needed``), its message naming ``after_upgrade``, the command that
    catches up on what it did not do."""
    import os

    root = root_settings(ctx)
    from ..locate import is_store_url

    if not create and root.db is not None and not is_store_url(root.db):
        from ..errors import StoreMissingError
        from ..locate import given_path, shown_path

        path = given_path(root.db, "the store path")
        if not path.exists():
            raise StoreMissingError(
                f"no store at {shown_path(path)}: check the path, or create it with "
                f"'nervamem --db {shown_path(root.db)} init'"
            )
    namespace = namespace if namespace is not None else root.namespace
    if not never_upgrade and os.environ.get(ENV_NO_UPGRADE) != "1":
        return store_factory(root.db, namespace)
    from ..errors import UPGRADE_NEEDED, SchemaUpgradeNeededError

    try:
        return store_factory(root.db, namespace, migrate=False)
    except SchemaUpgradeNeededError:
        if after_upgrade is None:
            raise
        raise SchemaUpgradeNeededError(f"{UPGRADE_NEEDED}, then '{after_upgrade}'") from None


def output_format(ctx: typer.Context, fmt: str | None) -> str:
    return resolve_format(fmt, root_settings(ctx).fmt)
