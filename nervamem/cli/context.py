"""What a command needs besides its own arguments, without Typer: the root settings, the
store it opens, the output format it writes, and the one line an error becomes.

The Typer commands reach these through options.py and edge.py; direct.py runs ``store``
and ``recall`` on them without importing Typer at all. ``store_factory`` is the one place
a store is made: tests replace it to inject a fixed clock and ID source.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..render import resolve_format
from ..visible import visible

if TYPE_CHECKING:
    from ..store import MemoryStore

ENV_DEBUG = "NERVAMEM_DEBUG"
# Set by the git hook scripts: a command they run refuses a store that needs a schema
# upgrade instead of upgrading it (a large store's migration outlasts their time limit).
ENV_NO_UPGRADE = "NERVAMEM_NO_UPGRADE"


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


def _default_store_factory(
    db: str | None, namespace: str | None, migrate: bool = True
) -> MemoryStore:
    from ..store import MemoryStore

    return MemoryStore(db, namespace=namespace, migrate=migrate)


# Tests replace this to inject a fixed clock and ID source into every command.
store_factory = _default_store_factory


def open_store(
    root: Settings,
    namespace: str | None = None,
    *,
    create: bool = False,
    before_create: Callable[[], object] | None = None,
    never_upgrade: bool = False,
    after_upgrade: str | None = None,
) -> MemoryStore:
    """The store the command works on. Only ``init`` and the commands that write
    (``create=True``) may create it: a read of an explicit ``--db`` path that does not
    exist fails (exit 1) instead of answering from a new, empty store left behind, as a
    mistyped path would.

    A store with an older schema is upgraded, unless ``never_upgrade`` (``hooks
    record``, which only the post-commit hook runs) or NERVAMEM_NO_UPGRADE=1 (set by
    the hook scripts): then the command fails at once (exit 1,
    ``schema_upgrade_needed``), its message naming ``after_upgrade``, the command that
    catches up on what it did not do.

    ``before_create``: the command's checks that need no store, run first when the
    store file does not exist yet, so that a command refused for its arguments leaves
    no new, empty store behind. An existing store is opened first, as for every
    command: an unusable store is said before a bad argument."""
    from ..locate import is_store_url

    if create and before_create is not None:
        from ..locate import resolve_store

        target = resolve_store(root.db)
        if not isinstance(target, str) and not target.exists():
            before_create()

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


def output_format(root: Settings, fmt: str | None) -> str:
    return resolve_format(fmt, root.fmt)


def wants_json(args: Sequence[str]) -> bool:
    """Whether the failed command asked for JSON: the last --format/-f wins, as in Click."""
    chosen = os.environ.get("NERVAMEM_FORMAT", "")
    for index, arg in enumerate(args):
        if arg == "--":
            break
        if arg in ("--format", "-f") and index + 1 < len(args):
            chosen = args[index + 1]
        elif arg.startswith("--format="):
            chosen = arg.split("=", 1)[1]
        elif arg.startswith("-f") and len(arg) > 2 and not arg.startswith("--"):
            chosen = arg[2:]
    return chosen.strip().lower() == "json"


def report(code: str, exit_code: int, message: str, args: Sequence[str]) -> None:
    # A message may echo what the user typed (an ID, an option, a path): one line, its
    # controls escaped, in the JSON form too, since stderr is usually a person's terminal.
    message = visible(" ".join(message.split()))
    if wants_json(args):
        from ..render.json import error_line

        sys.stderr.write(error_line(code, exit_code, message))
    else:
        sys.stderr.write(f"nervamem: error: {message}\n")
    sys.stderr.flush()
