"""nervamem's stdio transport (nervamem/mcp_server/stdio.py) against the SDK's.

The transport only moves bytes; it must behave as ``mcp.server.stdio.stdio_server`` does.
Two real servers on one store, ``nervamem mcp`` and the same server on the SDK's
transport, are fed the same raw lines (invalid JSON, a blank line, CRLF, bytes that are
not UTF-8, a line longer than a read and than a pipe's buffer) and must answer alike.
The line reader and the writer are also driven directly over an ``os.pipe``.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from nervamem import MemoryStore
from nervamem.mcp_server import stdio

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parents[2]
SDK_TRANSPORT_SERVER = (
    "import sys; from mcp.server.stdio import stdio_server; "
    "from nervamem.mcp_server.server import serve; "
    "from nervamem.mcp_server.tools import MemoryServer; "
    "serve(MemoryServer(sys.argv[1]), transport=stdio_server)"
)
WAIT = 120  # seconds before a silent server counts as hung (not a timing assertion)


class RawServer:
    """A server process fed raw bytes, its replies read line by line."""

    def __init__(self, db: Path, transport: str) -> None:
        args = ["-m", "nervamem", "--db", str(db), "mcp"]
        if transport == "sdk":
            args = ["-c", SDK_TRANSPORT_SERVER, str(db)]
        self.process = subprocess.Popen(
            [sys.executable, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(db.parent)},
            cwd=db.parent,
        )
        self.pending = b""
        self.next_id = 0

    def send(self, raw: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(raw)
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self.pending:
            ready, _, _ = select.select([fd], [], [], WAIT)
            assert ready, "the server did not answer"
            chunk = os.read(fd, 1 << 16)
            assert chunk, "the server closed its output"
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        answer: dict[str, Any] = json.loads(line)
        return answer

    def request(self, method: str, params: dict[str, Any], *, end: bytes = b"\n") -> bytes:
        """The raw line of a request (sent by the caller, possibly altered)."""
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        return json.dumps(message).encode() + end

    def handshake(self) -> None:
        self.send(
            self.request(
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"},
                },
            )
        )
        assert self.reply()["result"]["serverInfo"]["name"] == "nervamem"
        self.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')

    def ping(self) -> None:
        """A ping answered next: what came before it produced no reply and no harm."""
        self.send(self.request("ping", {}))
        assert self.reply() == {"jsonrpc": "2.0", "id": self.next_id, "result": {}}

    def close(self) -> int:
        """End of input: the server's exit code."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        try:
            return self.process.wait(timeout=WAIT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self.process.stdout.close()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("stdio") / "memory.db"
    with MemoryStore(path) as memory:
        memory.store("fact", "The caf\u00e9 on the corner opens at seven")
    return path


@pytest.fixture(params=["nervamem", "sdk"])
def server(request: pytest.FixtureRequest, db: Path) -> Iterator[RawServer]:
    raw = RawServer(db, request.param)
    raw.handshake()
    yield raw
    raw.close()


def recall_line(server: RawServer, query: bytes) -> bytes:
    line = server.request("tools/call", {"name": "memory_recall", "arguments": {"query": "Q"}})
    return line.replace(b'"query": "Q"', b'"query": "' + query + b'"')


def test_lines_that_are_not_messages_are_dropped_and_the_server_goes_on(
    server: RawServer,
) -> None:
    for line in (b"{not json\n", b"\n", b'{"jsonrpc": "2.0"}\n', b"[1, 2\n", b"\xff\xfe\n"):
        server.send(line)
        server.ping()
    assert server.close() == 0


def test_crlf_ends_a_line_as_newline_does(server: RawServer) -> None:
    server.send(server.request("ping", {}, end=b"\r\n"))
    assert server.reply() == {"jsonrpc": "2.0", "id": server.next_id, "result": {}}


def test_bytes_that_are_not_utf8_become_replacement_characters(server: RawServer) -> None:
    server.send(recall_line(server, b"caf\xe9"))
    reply = server.reply()
    assert reply["id"] == server.next_id
    assert not reply["result"]["isError"]
    assert "caf\ufffd" in reply["result"]["content"][0]["text"]


def test_a_lone_surrogate_escape_is_answered_not_dropped(db: Path) -> None:
    """json.dumps writes a lone surrogate as the escape \\ud800, valid JSON that the SDK's
    parser refuses: the SDK's transport drops the request and its client waits forever.
    nervamem's answers it: the core refuses the text, and an answer that echoes it (a
    path) comes back with the escape it came in with; the server goes on."""
    server = RawServer(db, "nervamem")
    try:
        server.handshake()
        store = {"name": "memory_store", "arguments": {"kind": "fact", "content": "a\ud800b"}}
        server.send(server.request("tools/call", store))
        reply = server.reply()
        assert reply["id"] == server.next_id and reply["result"]["isError"]
        error = reply["result"]["structuredContent"]["error"]
        assert (error["code"], error["message"]) == ("bad_input", "content is not valid UTF-8 text")
        code_for = {"name": "memory_for_code", "arguments": {"file_path": "\ud800"}}
        server.send(server.request("tools/call", code_for))
        reply = server.reply()
        assert reply["id"] == server.next_id
        assert reply["result"]["structuredContent"]["file_path"] == "\ud800"
        server.ping()
    finally:
        assert server.close() == 0


def test_a_line_longer_than_a_read_and_a_pipe_buffer(server: RawServer) -> None:
    # 300 kB in one message: several reads of the transport and a full pipe on the way.
    name = "x" * 300_000
    server.send(server.request("tools/call", {"name": name, "arguments": {}}))
    reply = server.reply()
    assert reply["result"]["isError"]
    assert "(300002 characters)" in reply["result"]["content"][0]["text"]
    # And a reply longer than the pipe's buffer on the way out.
    server.send(recall_line(server, b"corner " * 40_000))
    long_reply = server.reply()
    assert long_reply["id"] == server.next_id
    assert not long_reply["result"]["isError"]


def test_two_messages_in_one_write_are_both_answered(server: RawServer) -> None:
    first = server.request("ping", {})
    second = server.request("ping", {})
    server.send(first + second)
    assert {server.reply()["id"], server.reply()["id"]} == {server.next_id - 1, server.next_id}


def test_end_of_input_ends_the_server_cleanly(server: RawServer) -> None:
    server.ping()
    assert server.close() == 0


def test_both_transports_answer_the_same_bytes(db: Path) -> None:
    replies = []
    for transport in ("nervamem", "sdk"):
        raw = RawServer(db, transport)
        raw.handshake()
        line = raw.request("tools/call", {"name": "N", "arguments": {}})
        raw.send(line.replace(b'"N"', b'"caf\xc3\xa9 \xff\xfe tool"'))
        try:
            replies.append(raw.reply())
        finally:
            assert raw.close() == 0
    assert replies[0] == replies[1]
    assert "caf\u00e9 \ufffd\ufffd tool" in replies[0]["result"]["content"][0]["text"]


# ------------------------------------------------------------- the reader and the writer alone
def read_lines(chunks: list[bytes]) -> list[bytes]:
    """What stdio.lines yields from a pipe that receives chunks, then end of input."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)

    def feed() -> None:
        for chunk in chunks:
            os.write(write_fd, chunk)
        os.close(write_fd)

    async def collect() -> list[bytes]:
        return [line async for line in stdio.lines(read_fd)]

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        return anyio.run(collect)
    finally:
        feeder.join()
        os.close(read_fd)


def test_lines_split_on_newlines_whatever_the_chunks() -> None:
    assert read_lines([b"a\nb", b"c\n\nd\r", b"\ne"]) == [b"a\n", b"bc\n", b"\n", b"d\r\n", b"e"]


def test_a_line_of_a_megabyte_arrives_whole() -> None:
    big = b"y" * (1 << 20)
    assert read_lines([big[:1000], big[1000:] + b"\nz\n"]) == [big + b"\n", b"z\n"]


def test_no_input_yields_no_line() -> None:
    assert read_lines([]) == []


def test_write_all_waits_on_a_full_pipe() -> None:
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    data = bytes(range(256)) * 8192  # 2 MiB: many times a pipe's buffer
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read_fd, 4096):
            received.extend(chunk)

    async def write() -> None:
        await stdio.write_all(write_fd, data)
        os.close(write_fd)

    reader = threading.Thread(target=drain)
    reader.start()
    anyio.run(write)
    reader.join()
    os.close(read_fd)
    assert bytes(received) == data


def test_an_idle_server_writes_its_access_counts(tmp_path: Path) -> None:
    """A recall's counts wait in memory (recall/access_counts.py); a server that gets no
    more calls writes them within ~FLUSH_AFTER seconds, not only when it stops."""
    import sqlite3
    import time
    from contextlib import closing

    db = tmp_path / "memory.db"
    with MemoryStore(db) as memory:
        shown = memory.store("fact", "The caf\u00e9 on the corner opens at seven")
    raw = RawServer(db, "nervamem")
    try:
        raw.handshake()
        raw.send(recall_line(raw, b"corner cafe"))
        assert shown in json.dumps(raw.reply())
        count = 0
        deadline = time.monotonic() + 30  # ~1-2 s expected; a loaded machine is slower
        while count == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
            with closing(sqlite3.connect(db)) as conn:
                row = conn.execute("SELECT access_count FROM mem_nodes WHERE id = ?", (shown,))
                count = row.fetchone()[0]
        assert count == 1
        assert raw.process.poll() is None  # still serving
    finally:
        assert raw.close() == 0


def test_a_client_that_stops_reading_ends_the_server_cleanly(tmp_path: Path) -> None:
    """A client that closes its end of the server's output (or exits) can get no answer:
    the server stops as at the end of its input, with status 0, the calls it ran
    committed and their access counts written, not with an internal error."""
    import sqlite3
    from contextlib import closing

    db = tmp_path / "memory.db"
    with MemoryStore(db) as memory:
        shown = memory.store("fact", "The caf\u00e9 on the corner opens at seven")
    raw = RawServer(db, "nervamem")
    assert raw.process.stdin is not None and raw.process.stdout is not None
    raw.handshake()
    raw.process.stdout.close()
    store = {"name": "memory_store", "arguments": {"kind": "fact", "content": "written"}}
    raw.send(raw.request("tools/call", store))
    raw.send(recall_line(raw, b"corner cafe"))
    try:
        assert raw.process.wait(timeout=WAIT) == 0  # its input still open
    finally:
        if raw.process.poll() is None:
            raw.process.kill()
            raw.process.wait()
        raw.process.stdin.close()
    with closing(sqlite3.connect(db)) as conn:
        (stored,) = conn.execute("SELECT count(*) FROM mem_nodes WHERE content = 'written'")
        (count,) = conn.execute("SELECT access_count FROM mem_nodes WHERE id = ?", (shown,))
    assert stored == (1,)
    assert count == (1,)
