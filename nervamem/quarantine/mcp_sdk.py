"""The MCP SDK's private names that nervamem's stdio transport (mcp_server/stdio.py) uses.

Why: the transport answers every line a client sends (a malformed one with its JSON-RPC
error, which the SDK's transport drops) and moves the bytes on the event loop instead
of a worker thread per line: the server's CPU per ``ping`` round trip 0.73-0.89 ->
0.45-0.55 ms, its p95 1.8-3.2 -> 1.1-1.5 ms (bench/mcp_latency.py, bench/results.md,
"The MCP server"; docs/architecture.md, "Private APIs"). To hand its messages to
``Server.run`` exactly as the SDK's own transport does, it needs two of the SDK's
private pieces, which the public API has no equivalent of:

* ``mcp.server.stdio._claim_fd`` with ``_open_stdin_diversion`` and
  ``_open_stdout_diversion``: descriptors 0 and 1 are claimed while serving (0 reads
  the null device, 1 writes to stderr, so a stray print cannot corrupt the wire), the
  claim registered with the SDK's so that two transports cannot take the same
  descriptor, and restored afterwards;
* ``mcp.shared._context_streams``: the streams ``Server.run`` reads and writes, which
  carry each request's context to its handler.

Tested on: mcp 2.3 (TESTED_MCP; pyproject pins ``mcp>=2.3,<2.4``). Fallback: when these
names are missing, ``AVAILABLE`` is false and ``nervamem mcp`` serves over the SDK's
public ``mcp.server.stdio.stdio_server``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import BinaryIO, TextIO

from mcp.server import stdio as sdk_stdio

# The mcp releases (major, minor) this module was written for.
TESTED_MCP = ((2, 3),)

try:
    from mcp.shared._context_streams import (
        ContextReceiveStream,
        ContextSendStream,
        create_context_streams,
    )

    _claim_fd = sdk_stdio._claim_fd
    _open_stdin_diversion = sdk_stdio._open_stdin_diversion
    _open_stdout_diversion = sdk_stdio._open_stdout_diversion
except (ImportError, AttributeError):  # pragma: no cover (an SDK outside TESTED_MCP)
    AVAILABLE = False
else:
    AVAILABLE = True

__all__ = [
    "AVAILABLE",
    "TESTED_MCP",
    "ContextReceiveStream",
    "ContextSendStream",
    "claim_stdin",
    "claim_stdout",
    "create_context_streams",
]

Restore = Callable[[], None] | None


def claim_stdin(stream: TextIO) -> tuple[BinaryIO, Restore]:
    """Descriptor 0 claimed as the SDK's transport claims it: the wire is read from a
    private duplicate, 0 reads the null device until ``restore`` is called."""
    return _claim_fd(0, stream, "rb", _open_stdin_diversion)


def claim_stdout(stream: TextIO) -> tuple[BinaryIO, Restore]:
    """Descriptor 1 claimed as the SDK's transport claims it: the wire is written to a
    private duplicate, 1 writes to standard error until ``restore`` is called."""
    return _claim_fd(1, stream, "wb", _open_stdout_diversion)
