"""A leaner stdio transport for the SDK's server: the bytes of stdin and stdout moved on
the event loop, without a worker thread per line.

The SDK's ``mcp.server.stdio.stdio_server`` reads and writes through ``anyio.wrap_file``,
so every line in and every line out crosses a worker thread; over a call that is several
thread wake-ups, which cost about as much as the rest of the protocol on a loaded machine
(bench/results.md, "The MCP server"). This transport moves only bytes: the messages are
parsed and serialised by the SDK's own code, exactly as its transport does
(``jsonrpc_message_adapter.validate_json`` on each line, ``model_dump_json(by_alias=True,
exclude_unset=True)`` plus a newline on the way out), and handed to ``Server.run`` in the
SDK's own context streams. Its behaviour is the SDK transport's:

* one message per line, a newline ends it (a ``\\r`` before it is JSON whitespace); a
  last line without a newline is still read at end of input; no length limit;
* input is UTF-8 (JSON text is); a blank line is ignored.

Where it departs from the SDK's transport, it is to answer every line a client sent: the
SDK hands a line it cannot read to its server as an exception, which the server drops, and
the client waits forever for its answer. Here such a line gets the JSON-RPC 2.0 error
reply, written by the transport:

* a line that is not JSON, or nested too deeply to parse (thousands of levels): parse
  error -32700, id null;
* a line with a byte that is not UTF-8: parse error -32700, with the request's id when
  the rest of the line still parses (the SDK read such a byte as U+FFFD and a tool stored
  that; the CLI refuses the same bytes with exit 2);
* JSON that is not a JSON-RPC message (a batch array, which MCP does not use, a request
  without a method, an object, a float or null as its id): invalid request -32600, with the id
  when it is a string or an integer, null otherwise;
* end of input closes the read stream, which ends ``Server.run`` (the SDK's server then
  cancels the requests it has not answered; the SDK's transport, slower to see the end of
  input through its thread, often answered them first);
* while serving, descriptor 0 reads the null device and descriptor 1 writes to standard
  error, and both are restored afterwards (the SDK's own claim of the descriptors).

Standard input and output are read and written without blocking (``O_NONBLOCK`` on the
transport's private descriptors, put back on exit), waiting on the event loop when a pipe
is empty or full. A descriptor the loop cannot wait on (a regular file) falls back to the
SDK's transport.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp.server import stdio as sdk_stdio
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR
from pydantic_core import PydanticSerializationError

from ..quarantine import mcp_sdk

if TYPE_CHECKING:  # without the SDK's private names these are missing (mcp_sdk.AVAILABLE)
    from ..quarantine.mcp_sdk import ContextReceiveStream, ContextSendStream

CHUNK = 1 << 16

Streams = tuple[
    "ContextReceiveStream[SessionMessage | Exception]", "ContextSendStream[SessionMessage]"
]
Transport = Callable[[], AbstractAsyncContextManager[Any]]


def pollable(fd: int) -> bool:
    """Whether the event loop can wait on fd: a pipe, a socket or a terminal, not a file."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def stdio_transport() -> AbstractAsyncContextManager[Any]:
    """The transport ``nervamem mcp`` serves over: this module's on pipes, terminals and
    sockets; the SDK's when stdin or stdout is something else."""
    if (
        sys.platform == "win32" or not (pollable(0) and pollable(1)) or not mcp_sdk.AVAILABLE
    ):  # pragma: no cover
        return sdk_stdio.stdio_server()
    return fd_stdio_server()


@asynccontextmanager
async def fd_stdio_server() -> AsyncIterator[Streams]:
    """Serve over descriptors 0 and 1, claimed as the SDK's transport claims them."""
    restore_stdin: Callable[[], None] | None = None
    restore_stdout: Callable[[], None] | None = None
    try:
        stdin, restore_stdin = mcp_sdk.claim_stdin(sys.stdin)
        stdout, restore_stdout = mcp_sdk.claim_stdout(sys.stdout)
        async with fd_streams(stdin.fileno(), stdout.fileno()) as streams:
            yield streams
    finally:
        if restore_stdout is not None:
            restore_stdout()
        if restore_stdin is not None:
            restore_stdin()


@asynccontextmanager
async def fd_streams(in_fd: int, out_fd: int) -> AsyncIterator[Streams]:
    """The SDK's message streams over two descriptors the event loop can wait on."""
    flags = {fd: os.get_blocking(fd) for fd in (in_fd, out_fd)}
    try:
        for fd in flags:
            os.set_blocking(fd, False)
        read_stream_writer, read_stream = mcp_sdk.create_context_streams[
            SessionMessage | Exception
        ](0)
        write_stream, write_stream_reader = mcp_sdk.create_context_streams[SessionMessage](0)
        # The reader answers the lines it refuses itself: one message at a time on stdout.
        output = anyio.Lock()

        async def send(session_message: SessionMessage) -> None:
            try:
                async with output:
                    await write_all(out_fd, serialise(session_message))
            except (BrokenPipeError, ConnectionResetError):
                # The client stopped reading (it exited, or closed its end): no answer
                # can reach it, so the session is over, as at the end of its input. The
                # calls already made have committed; the server stops cleanly.
                tg.cancel_scope.cancel()

        async def reader() -> None:
            try:
                async with read_stream_writer:
                    async for line in lines(in_fd):
                        if not line.strip():
                            continue
                        message = parse(line)
                        if isinstance(message.message, types.JSONRPCError):
                            await send(message)
                        else:
                            await read_stream_writer.send(message)
            except anyio.ClosedResourceError:  # pragma: no cover - the server went first
                await anyio.lowlevel.checkpoint()

        async def writer() -> None:
            try:
                async with write_stream_reader:
                    async for session_message in write_stream_reader:
                        await send(session_message)
            except anyio.ClosedResourceError:  # pragma: no cover - the server went first
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            yield read_stream, write_stream
    finally:
        for fd, blocking in flags.items():
            try:
                os.set_blocking(fd, blocking)
            except OSError:  # pragma: no cover - the descriptor is gone
                pass


def parse(line: bytes) -> SessionMessage:
    """One line: the message it holds, or the JSON-RPC error that answers it.

    A string escape of a lone surrogate (``"\\ud800"``, what ``json.dumps`` writes for
    one) is JSON that the adapter's parser refuses: such a line is parsed by ``json``
    instead, so the request is answered (the tools refuse text that is not UTF-8)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return refusal(
            PARSE_ERROR,
            f"the message is not valid UTF-8 (byte 0x{line[exc.start]:02x} at offset {exc.start})",
            request_id(line.decode("utf-8", errors="replace")),
        )
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except Exception:
        pass
    else:
        if not isinstance(message, types.JSONRPCNotification) or b'"id"' not in line:
            return SessionMessage(message)
    try:
        value = json.loads(text)
    except RecursionError:
        return refusal(PARSE_ERROR, "the message is nested too deeply to parse", None)
    except ValueError as exc:
        return refusal(PARSE_ERROR, f"the message is not JSON ({exc})", None)
    try:
        message = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except Exception:
        pass
    else:
        # The SDK's union reads a request whose id is not a string or an integer (an
        # object, a float, null) as a notification, which nobody answers.
        if not isinstance(message, types.JSONRPCNotification) or "id" not in value:
            return SessionMessage(message)
    if isinstance(value, list):
        why = "a batch (an array) is not an MCP message: send one request per line"
    else:
        why = "not a JSON-RPC 2.0 request, notification or response"
    return refusal(INVALID_REQUEST, f"the message is {why}", request_id_of(value))


def refusal(code: int, message: str, answer_id: str | int | None) -> SessionMessage:
    error = types.ErrorData(code=code, message=message)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=answer_id, error=error))


def request_id(text: str) -> str | int | None:
    """The id of a request that could not be read whole, if the rest of it parses."""
    try:
        return request_id_of(json.loads(text))
    except (ValueError, RecursionError):
        return None


def request_id_of(value: Any) -> str | int | None:
    """The id an answer may carry: a string or an integer, else null (JSON-RPC 2.0)."""
    found = value.get("id") if isinstance(value, dict) else None
    if isinstance(found, str) or (isinstance(found, int) and not isinstance(found, bool)):
        return found
    return None


def serialise(session_message: SessionMessage) -> bytes:
    """One message as the SDK's transport writes it: its JSON, then a newline. A message
    holding a lone surrogate (a path a client sent back in an answer), which has no UTF-8,
    is written with it escaped (``\\ud800``), as it came in, rather than failing the
    writer and so the server."""
    message = session_message.message
    try:
        text = message.model_dump_json(by_alias=True, exclude_unset=True)
    except PydanticSerializationError:
        text = json.dumps(message.model_dump(mode="json", by_alias=True, exclude_unset=True))
    return (text + "\n").encode("utf-8")


async def lines(fd: int) -> AsyncIterator[bytes]:
    """The lines read from a non-blocking descriptor, each with its newline; at end of
    input, what is left after the last newline, if anything."""
    buffer = bytearray()
    while True:
        try:
            chunk = os.read(fd, CHUNK)
        except BlockingIOError:
            await anyio.wait_readable(fd)
            continue
        if not chunk:
            break
        scanned = len(buffer)
        buffer += chunk
        start = 0
        while (end := buffer.find(b"\n", scanned)) != -1:
            yield bytes(buffer[start : end + 1])
            start = scanned = end + 1
        del buffer[:start]
    if buffer:
        yield bytes(buffer)


async def write_all(fd: int, data: bytes) -> None:
    """Write all of data to a non-blocking descriptor, waiting while its pipe is full."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            await anyio.wait_writable(fd)
            continue
        view = view[written:]
