"""``nervamem mcp`` driven as a client drives it: the MCP SDK's own client, talking to a
real ``python -m nervamem --db ... mcp`` subprocess over stdio.

One server serves the whole module (start-up costs about a second); each test works in
a namespace or on memories of its own, so the order of the tests does not matter. What
the server answers is checked against what the CLI prints for the same store.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult
from typer.testing import CliRunner

from nervamem import MemoryStore
from nervamem.cli import app
from nervamem.mcp_server.tools import TOOLS
from tests.code.test_codegraph import edit, make_repo
from tests.reliability import harness
from tests.reliability.test_hostile_input import HOSTILE_TEXT

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parents[2]


class Wire:
    """A connected client, called from synchronous tests through a blocking portal."""

    def __init__(self, portal: BlockingPortal, client: Client, db: Path) -> None:
        self.portal = portal
        self.client = client
        self.db = db

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        return self.portal.call(self.client.call_tool, name, arguments or {})

    def ok(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        result = self.call(name, arguments)
        assert not result.is_error, (name, arguments, text(result))
        return result


def text(result: CallToolResult) -> str:
    (content,) = result.content
    assert content.type == "text"
    return content.text


def server_env(home: Path) -> dict[str, str]:
    return {"PYTHONPATH": str(ROOT), "HOME": str(home), "PYTHONUNBUFFERED": "1"}


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wire]:
    # The store lives in a repository, as a project's does, so the code bridge has code.
    folder = make_repo(tmp_path_factory.mktemp("mcp") / "repo")
    db = folder / ".nervapack" / "memory.db"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "nervamem", "--db", str(db), "mcp"],
        env=server_env(folder.parent / "home"),
        cwd=str(folder),
    )
    with start_blocking_portal() as portal:
        # The initialize handshake (protocol 2025-11-25), as today's clients connect.
        client = Client(params, read_timeout_seconds=60, mode="legacy")
        with portal.wrap_async_context_manager(client):
            yield Wire(portal, client, db)


@pytest.fixture
def run_cli(wire: Wire, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The CLI in-process on the server's store, stdout and stderr apart."""
    runner = CliRunner()

    def run(*args: str) -> Any:
        return runner.invoke(app, ["--db", str(wire.db), *args])

    return run


# ----------------------------------------------------------------------------- the contract
def test_the_tool_list_is_the_contract(wire: Wire, snapshot: Any) -> None:
    listed = wire.portal.call(wire.client.list_tools)
    tools = [
        tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools
    ]
    assert [tool["name"] for tool in tools] == [tool.name for tool in TOOLS]
    assert len(tools) == 12
    for tool in tools:  # every argument is described for the model that must choose it
        schema = tool["inputSchema"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert all(prop.get("description") for prop in schema["properties"].values()), tool
    assert tools == snapshot


def test_a_client_of_the_newer_protocol_gets_the_same(wire: Wire) -> None:
    """The SDK serves the 2026-07-28 protocol (no handshake) too: same tools, same answers."""
    listed = wire.portal.call(wire.client.list_tools)

    async def newer() -> tuple[Any, Any, str]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "nervamem", "--db", str(wire.db), "mcp"],
            env=server_env(wire.db.parent.parent.parent / "home"),
        )
        async with Client(params, read_timeout_seconds=60) as client:
            tools = await client.list_tools()
            stats = await client.call_tool("memory_stats", {"namespace": "newer"})
            return tools, stats, client.protocol_version

    tools, stats, version = wire.portal.call(newer)
    assert version == "2026-07-28"
    assert tools.tools == listed.tools
    again = wire.ok("memory_stats", {"namespace": "newer"}).structured_content
    assert steady(stats.structured_content) == steady(again)


def test_the_server_says_how_to_use_it(wire: Wire) -> None:
    instructions = wire.client.instructions or ""
    assert "memory_recall" in instructions and "supersedes" in instructions
    prompts = wire.portal.call(wire.client.list_prompts)
    assert [prompt.name for prompt in prompts.prompts] == ["use_memory"]


# ----------------------------------------------------------------------------- same as the CLI
def test_each_read_tool_answers_what_the_cli_prints(wire: Wire, run_cli: Any) -> None:
    ns = {"namespace": "same-as-cli"}
    old = text(
        wire.ok(
            "memory_store",
            {
                "kind": "decision",
                "content": "Chose cookies for auth",
                "entities": ["AuthService"],
                "valid_from": "2026-01-01",
                **ns,
            },
        )
    ).strip()
    new = wire.ok(
        "memory_store",
        {
            "kind": "decision",
            "content": "Chose JWT for auth",
            "entities": ["AuthService"],
            "supersedes": old,
            "rationale": "stateless",
            "rejected": ["sessions"],
            **ns,
        },
    ).structured_content["id"]

    # recall: the same Markdown, held to the same budget, and the same items in the JSON
    mcp = wire.ok("memory_recall", {"query": "auth", "budget_tokens": 120, **ns})
    cli = run_cli("--ns", "same-as-cli", "recall", "auth", "--budget", "120", "-f", "markdown")
    assert (cli.exit_code, cli.stderr) == (0, "")
    assert text(mcp) == cli.stdout
    assert math.ceil(len(text(mcp)) / 4) <= 120
    as_json = json.loads(run_cli("--ns", "same-as-cli", "recall", "auth", "-f", "json").stdout)
    assert [i["id"] for i in mcp.structured_content["items"]] == [i["id"] for i in as_json["items"]]
    assert "Chose JWT" in text(mcp) and "Chose cookies" not in text(mcp)  # superseded

    cases = [
        ("memory_timeline", {"query": "auth"}, ["timeline", "auth"]),
        (
            "memory_recall",
            {"query": "auth", "as_of": "2026-03-01"},
            ["recall", "auth", "--as-of", "2026-03-01"],
        ),
        (
            "memory_recall",
            {"query": "auth", "known_at": "2000-01-01", "min_score": 0.5},
            ["recall", "auth", "--known-at", "2000-01-01", "--min-score", "0.5"],
        ),
        (
            "memory_timeline",
            {"query": "auth", "known_at": "2099-01-01"},
            ["timeline", "auth", "--known-at", "2099-01-01"],
        ),
        ("memory_consolidate", {"dry_run": True}, ["consolidate", "--dry-run"]),
        ("memory_verify_staleness", {}, ["verify-staleness"]),
        ("memory_to_code", {"memory_id": new}, ["code-to", new]),
    ]
    for tool, arguments, command in cases:
        mcp = wire.call(tool, {**arguments, **ns})
        cli = run_cli("--ns", "same-as-cli", *command, "-f", "markdown")
        if cli.exit_code:
            assert mcp.is_error, (tool, text(mcp))
            failed = run_cli("--ns", "same-as-cli", *command, "-f", "json")
            assert json.loads(text(mcp)) == json.loads(failed.stderr), tool
        else:
            assert text(mcp) == cli.stdout, tool
            as_json = run_cli("--ns", "same-as-cli", *command, "-f", "json").stdout
            assert steady(mcp.structured_content) == steady(json.loads(as_json)), tool

    stats = wire.ok("memory_stats", ns).structured_content
    cli_stats = json.loads(run_cli("--ns", "same-as-cli", "stats", "-f", "json").stdout)
    assert steady(stats) == steady(cli_stats)


def steady(document: Any) -> Any:
    """A JSON document without what every read changes: a recall counts its items' uses
    (so their scores move), and the store file grows."""
    document = {key: value for key, value in document.items() if key != "db_bytes"}
    if "items" in document:
        unscored = ("score", "factors")
        document["items"] = [
            {k: v for k, v in item.items() if k not in unscored} for item in document["items"]
        ]
    return document


def test_the_code_bridge_answers_what_the_cli_prints(wire: Wire, run_cli: Any) -> None:
    assert run_cli("code", "index").exit_code == 0
    ns = {"namespace": "code"}
    about = {"kind": "fact", "content": "login returns a token", "entities": ["AuthService.login"]}
    node = wire.ok("memory_store", {**about, **ns}).structured_content["id"]
    auth = wire.db.parent.parent / "pkg" / "auth.py"
    edit(auth, "def login", "def login_renamed")
    cases = [
        ("memory_for_code", {"file_path": str(auth)}, ["code-for", str(auth)]),
        ("memory_to_code", {"memory_id": node}, ["code-to", node]),
        ("memory_verify_staleness", {}, ["verify-staleness"]),
    ]
    for tool, arguments, command in cases:
        mcp = wire.ok(tool, {**arguments, **ns})
        cli = run_cli("--ns", "code", *command, "-f", "markdown")
        assert (cli.exit_code, text(mcp)) == (0, cli.stdout), tool
        as_json = json.loads(run_cli("--ns", "code", *command, "-f", "json").stdout)
        assert mcp.structured_content == as_json, tool
    stale = wire.ok("memory_verify_staleness", ns).structured_content["stale"]
    assert [item["id"] for item in stale] == [node]

    # What the CLI warns of on stderr is part of the answer (stdout is the protocol's).
    ambiguous = {"kind": "fact", "content": "load never caches", "entities": ["load"], **ns}
    warned = wire.ok("memory_store", ambiguous)
    cli = run_cli("--ns", "code", "store", "fact", "load never caches", "-e", "load")
    (warning,) = warned.structured_content["warnings"]
    assert cli.stderr == f"nervamem: warning: {warning}\n"
    assert text(warned).endswith(f"\nwarning: {warning}\n")


def test_errors_carry_the_cli_s_code_and_message(wire: Wire, run_cli: Any) -> None:
    cases = [
        ("memory_forget", {"memory_id": "f_0"}, ["forget", "f_0"]),
        ("memory_forget", {"memory_id": "f-12"}, ["forget", "f-12"]),
        ("memory_to_code", {"memory_id": "zzz"}, ["code-to", "zzz"]),
        ("memory_store", {"kind": "rumour", "content": "x"}, ["store", "rumour", "x"]),
        (
            "memory_store",
            {"kind": "fact", "content": "x", "confidence": 7},
            ["store", "fact", "x", "--confidence", "7"],
        ),
        (
            "memory_store",
            {"kind": "fact", "content": "x", "valid_from": "yesterday"},
            ["store", "fact", "x", "--valid-from", "yesterday"],
        ),
        ("memory_recall", {"query": "x", "budget_tokens": 0}, ["recall", "x", "--budget", "0"]),
        ("memory_recall", {"query": "x", "kinds": ["rumour"]}, ["recall", "x", "--kind", "rumour"]),
        (
            "memory_recall",
            {"query": "x", "tokenizer": "bpe"},
            ["recall", "x", "--tokenizer", "bpe"],
        ),
        ("memory_timeline", {"query": "x", "limit": 0}, ["timeline", "x", "--limit", "0"]),
        ("memory_stats", {"namespace": "../etc"}, ["stats", "--ns", "../etc"]),
        ("memory_switch_namespace", {"name": "a b"}, ["ns", "switch", "a b"]),
        ("memory_end_session", {"session": "s_0"}, ["session", "end", "--session", "s_0"]),
        ("memory_consolidate", {"strategy": "llm"}, ["consolidate", "--strategy", "llm"]),
        ("memory_for_code", {"file_path": "x.py:0"}, ["code-for", "x.py:0"]),
    ]
    for tool, arguments, command in cases:
        mcp = wire.call(tool, arguments)
        cli = run_cli("-f", "json", *command)
        assert cli.exit_code != 0 and cli.stdout == "", (command, cli.stdout)
        assert mcp.is_error, (tool, arguments, text(mcp))
        assert json.loads(text(mcp)) == json.loads(cli.stderr), (tool, arguments)
        assert mcp.structured_content == json.loads(cli.stderr)


def test_one_memory_for_the_terminal_and_the_agent(wire: Wire, run_cli: Any) -> None:
    """The active namespace and session live in state.yaml, for both."""
    assert run_cli("ns", "switch", "shared-state").exit_code == 0
    stored = text(wire.ok("memory_store", {"kind": "fact", "content": "shared state works"}))
    assert "shared state works" in run_cli("--ns", "shared-state", "recall", "shared").stdout
    timeline = json.loads(run_cli("timeline", "shared", "-f", "json").stdout)  # no --ns
    assert [item["id"] for item in timeline["items"]] == [stored.strip()]

    session = wire.ok("memory_start_session", {"title": "agent task"}).structured_content["id"]
    assert run_cli("ns", "current").stdout == f"namespace: shared-state\nsession: {session}\n"
    assert run_cli("session", "end", "--summary", "done").stdout.strip() == session
    wire.ok("memory_store", {"kind": "fact", "content": "elsewhere", "namespace": "home-ns"})
    switched = wire.ok("memory_switch_namespace", {"name": "home-ns"})
    assert text(switched) == "namespace: home-ns\nsession: -\n"
    assert "new" not in switched.structured_content
    assert run_cli("ns", "current").stdout == "namespace: home-ns\nsession: -\n"
    fresh = wire.ok("memory_switch_namespace", {"name": "brand-new-ns"})
    assert fresh.structured_content["new"] is True and "is new" in text(fresh)
    wire.ok("memory_switch_namespace", {"name": "default"})


def test_forget_and_purge(wire: Wire, run_cli: Any) -> None:
    ns = {"namespace": "forgetting"}
    kept = wire.ok("memory_store", {"kind": "fact", "content": "api key is hunter2", **ns})
    node = kept.structured_content["id"]
    forgot = wire.ok("memory_forget", {"memory_id": node, **ns})
    assert forgot.structured_content == {
        "id": node,
        "purged": False,
        "removed": [],
        "already": False,
        "files_not_scrubbed": None,
    }
    again = wire.ok("memory_forget", {"memory_id": node, **ns})
    assert again.structured_content["already"] is True
    purged = wire.ok("memory_forget", {"memory_id": node, "purge": True, **ns})
    assert purged.structured_content["purged"] is True
    assert b"hunter2" not in wire.db.read_bytes()
    gone = run_cli("--ns", "forgetting", "-f", "json", "forget", node)
    assert json.loads(gone.stderr)["error"]["code"] == "not_found"


# ----------------------------------------------------------------------------- hostile input
def test_any_text_is_valid_content_and_query(wire: Wire) -> None:
    """The reliability suite's hostile corpus, as content and as query."""
    ns = {"namespace": "hostile"}
    stored = {}
    for content in HOSTILE_TEXT:
        result = wire.ok("memory_store", {"kind": "fact", "content": content, **ns})
        stored[result.structured_content["id"]] = content
    with MemoryStore(wire.db) as memory:
        for node_id, content in stored.items():
            assert memory.get(node_id, namespace="hostile").content == content
    for query in HOSTILE_TEXT:
        recalled = wire.ok("memory_recall", {"query": query, "budget_tokens": 60, **ns})
        assert math.ceil(len(text(recalled)) / 4) <= 60, query
        assert "\x1b" not in text(recalled) and "\u202e" not in text(recalled)
    for query in HOSTILE_TEXT[::3]:
        wire.ok("memory_timeline", {"query": query, **ns})


WRONG_VALUES: list[object] = ["text", 1, 2.5, True, ["a"], {"a": 1}, [1, 2], -(2**70)]


def test_arguments_of_the_wrong_shape_are_usage_errors(wire: Wire) -> None:
    """Every argument of every tool, given every wrong JSON type: a usage error naming it,
    and the server keeps serving."""
    for tool in TOOLS:
        for name, schema in tool.properties.items():
            for value in WRONG_VALUES:
                if _fits(schema["type"], value):
                    continue
                arguments = {key: "x" for key in tool.required}
                arguments[name] = value
                result = wire.call(tool.name, arguments)
                assert result.is_error, (tool.name, name, value)
                error = json.loads(text(result))["error"]
                assert (error["code"], error["exit_code"]) == ("usage", 2), error
                assert name in error["message"]
        unknown_argument = wire.call(tool.name, {"no_such_argument": 1})
        assert json.loads(text(unknown_argument))["error"]["code"] == "usage"
        if tool.required:
            missing = wire.call(tool.name, {})
            assert json.loads(text(missing))["error"]["code"] == "usage"
    unknown = wire.call("memory_delete_everything", {})
    assert unknown.is_error and "unknown tool" in text(unknown)
    assert not wire.call("memory_stats").is_error


def _fits(kind: str, value: object) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def test_nulls_mean_defaults_and_huge_values_are_refused_cleanly(wire: Wire) -> None:
    ns = {"namespace": "edges"}
    stored = wire.ok(
        "memory_store",
        {
            "kind": "fact",
            "content": "nulls are defaults",
            "entities": None,
            "valid_from": None,
            **ns,
        },
    )
    assert stored.structured_content["id"].startswith("f_")
    recalled = wire.ok("memory_recall", {"query": "nulls", "budget_tokens": None, **ns})
    assert recalled.structured_content["budget_tokens"] == 500
    huge = wire.call("memory_recall", {"query": "x", "budget_tokens": 10**30, **ns})
    assert json.loads(text(huge))["error"]["code"] == "bad_input"
    nul = wire.call("memory_store", {"kind": "fact", "content": "a\x00b", **ns})
    assert json.loads(text(nul))["error"]["code"] == "bad_input"


# ----------------------------------------------------------------------------- concurrency
def test_concurrent_mcp_and_cli_writers_lose_nothing(wire: Wire) -> None:
    """CLI writer processes (the reliability suite's workers: the real entry point, with
    supersedes and forgets) and the MCP server write to one store at once; every write
    that either acknowledged is on disk afterwards."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NERVAMEM_BUSY_TIMEOUT_MS": "30000"}
    start_at = time.time() + 1.0
    workers = [
        harness.spawn_worker(wire.db, "writer", env=env, wid=w, ops=25, seed=w, start_at=start_at)
        for w in range(2)
    ]
    acknowledged = {}
    try:
        while time.time() < start_at:
            time.sleep(0.01)
        for index in range(40):
            content = f"mcp writer note {index}"
            result = wire.ok("memory_store", {"kind": "fact", "content": content})
            acknowledged[result.structured_content["id"]] = content
    finally:
        outputs = [proc.communicate(timeout=120) for proc in workers]
    assert [proc.returncode for proc in workers] == [0, 0], [err[-2000:] for _, err in outputs]
    records = [record for out, _ in outputs for record in harness.worker_records(out, killed=False)]
    cli_writes = {r.id for r in records if r.op in ("store", "supersede") and r.rc == 0}
    assert len(cli_writes) >= 40 and len(acknowledged) == 40
    assert [r.err for r in records if r.rc] == []
    with sqlite3.connect(wire.db) as connection:
        rows = dict(connection.execute("SELECT id, content FROM mem_nodes").fetchall())
    assert cli_writes <= set(rows)
    assert {node: rows.get(node) for node in acknowledged} == acknowledged


# ----------------------------------------------------------------------------- start-up
def test_an_unusable_store_stops_the_server_at_start(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    db.write_text("not a database\n")
    result = subprocess.run(
        [sys.executable, "-m", "nervamem", "--db", str(db), "-f", "json", "mcp"],
        env={**server_env(tmp_path), "PATH": os.environ.get("PATH", "")},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stdout) == (1, "")
    assert json.loads(result.stderr)["error"]["code"] == "store_unavailable"
    assert db.read_text() == "not a database\n"
