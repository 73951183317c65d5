"""What went wrong, in the words of the error contract: a stable code, an exit code and a
one-line message (docs/exit-codes.md). Shared by the two edges that turn exceptions into
answers, the command line (cli/edge.py: a line on stderr and an exit status) and the MCP
server (mcp_server/: a tool error), so that both say the same thing about the same failure.
"""

from __future__ import annotations

import errno
import sqlite3

from .errors import ExitCode, NervamemError
from .locate import shown_path
from .visible import visible


class Failure:
    """A failure as the JSON error contract shows it. A plain class: built once per error."""

    __slots__ = ("code", "exit_code", "message")

    def __init__(self, code: str, exit_code: int, message: str) -> None:
        self.code = code
        self.exit_code = exit_code
        self.message = message

    def document(self) -> dict[str, object]:
        """The JSON error, exactly as ``--format json`` prints it."""
        return {"error": {"code": self.code, "exit_code": self.exit_code, "message": self.message}}


def one_line(message: str) -> str:
    """A message may echo what the user typed (an ID, an option, a path): one line, its
    controls escaped, since it usually ends up in front of a person."""
    return visible(" ".join(message.split()))


def describe(exc: Exception) -> Failure:
    """The failure an exception stands for; ``internal`` when it is a bug."""
    if isinstance(exc, NervamemError):
        return Failure(exc.code, int(exc.exit_code), one_line(exc.message))
    if isinstance(exc, sqlite3.DatabaseError):
        # A read that met a corrupt page: the store is unusable (exit 1), and saying
        # "internal error" would send the user looking for a nervamem bug.
        return Failure(
            "store_unavailable",
            int(ExitCode.STORE_UNAVAILABLE),
            one_line(f"the store cannot be used: {exc}"),
        )
    if isinstance(exc, OSError) and exc.filename:
        reason = exc.strerror or type(exc).__name__
        where = shown_path(str(exc.filename))
        if exc.errno == errno.ENAMETOOLONG:
            # A path given as an argument that no file can have: bad input.
            return Failure(
                "bad_input", int(ExitCode.BAD_INPUT), one_line(f"cannot use {where}: {reason}")
            )
        # e.g. a read-only or full folder beside the store: unusable, exit 1.
        return Failure(
            "store_unavailable",
            int(ExitCode.STORE_UNAVAILABLE),
            one_line(f"cannot use {where}: {reason}"),
        )
    if isinstance(exc, OSError) and exc.errno in _SYSTEM_FAILURES:
        # No file named: standard output redirected to a full disk (`export > f`), or an
        # event file's write. The system's failure, not a bug to report.
        return Failure(
            "error",
            int(ExitCode.STORE_UNAVAILABLE),
            one_line(f"the system refused to read or write: {exc.strerror or exc}"),
        )
    return Failure(
        "internal",
        int(ExitCode.STORE_UNAVAILABLE),
        one_line(f"internal error: {type(exc).__name__}: {exc}"),
    )


# A full disk or quota, a file too large, a failing device.
_SYSTEM_FAILURES = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
