"""One exception hierarchy for the whole core.

Every error carries a stable ``code`` (used in JSON error output) and the process
``exit_code`` the CLI maps it to (see docs/exit-codes.md). The core raises these; only
the CLI edge turns them into a line on stderr.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    STORE_UNAVAILABLE = 1
    BAD_INPUT = 2
    NOT_FOUND = 3
    # Not an error: 'sync' or 'import' skipped events it could not read (each reported);
    # it imported every other one.
    SKIPPED = 4
    # Not an error: 'verify-staleness --exit-code' found stale memories and printed them.
    STALE = 5


class NervamemError(Exception):
    code = "error"
    exit_code = ExitCode.STORE_UNAVAILABLE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class StoreError(NervamemError):
    """The store cannot be used: not a database, corrupt, unwritable, too new."""

    code = "store_unavailable"
    exit_code = ExitCode.STORE_UNAVAILABLE


class ConnectionLostError(StoreError):
    """The connection to a PostgreSQL server went away mid-command; the transaction in
    progress never committed. Same code and exit code as StoreError: a long-lived caller
    (the MCP server) may reconnect and retry a call that committed nothing."""

    # Set by a caller that knows whether a COMMIT was sent before the loss.
    committed_nothing = True


class StoreMissingError(StoreError):
    """A read named a store file that does not exist: reading creates no store."""

    code = "store_missing"


class StoreLockedError(StoreError):
    code = "store_locked"


class SchemaTooNewError(StoreError):
    code = "schema_too_new"


class SchemaUpgradeNeededError(StoreError):
    """The store has an older schema and was opened without migrating (the git hooks:
    a migration of a large store can outlast their time limit)."""

    code = "schema_upgrade_needed"


UPGRADE_NEEDED = "the store needs a schema upgrade: run 'nervamem stats' once"


class StateError(StoreError):
    """state.yaml beside the store is unreadable or holds nonsense."""

    code = "bad_state"


class BadInputError(NervamemError):
    code = "bad_input"
    exit_code = ExitCode.BAD_INPUT


class UsageError(BadInputError):
    """Arguments that do not parse: unknown, missing, or of the wrong type. The CLI's
    parser (Click) reports these itself; the MCP server raises this for the same cases."""

    code = "usage"


class NotFoundError(NervamemError):
    code = "not_found"
    exit_code = ExitCode.NOT_FOUND


class AmbiguousIdError(NotFoundError):
    code = "ambiguous"

    def __init__(self, prefix: str, candidates: list[str]) -> None:
        shown = ", ".join(candidates[:10]) + (" ..." if len(candidates) > 10 else "")
        super().__init__(f"ID {prefix!r} is ambiguous: {shown}")
        self.candidates = candidates
