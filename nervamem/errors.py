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


class DatabaseFault(StoreError):
    """The database failed a statement for a reason of its own (not a lost connection,
    not a lock): the store cannot be used for this command. Raised by an engine in place
    of its driver's error, so that no feature or edge knows the driver's classes; the
    message reads as the edges have always shown such a failure."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"the store cannot be used: {detail}")
        # What the database said, without the preamble (for a report that adds its own).
        self.detail = detail


class IntegrityViolation(DatabaseFault):
    """The database refused a row: a constraint or a trigger (a duplicate key, a value
    missing). A feature that skips such a row and reports it (an import's event)
    catches this; elsewhere it ends the command as any DatabaseFault."""


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
