"""``nervamem mcp`` as a command (the client configurations it prints, how it refuses to
start) and the tools in-process: whatever arguments arrive, a call answers and never
raises, and a failure is one of the documented errors, never an internal one."""

from __future__ import annotations

import json
import os
import pty
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from nervamem.cli import app
from nervamem.cli.mcp_commands import CLIENT_NAMES
from nervamem.mcp_server.clients import CLIENTS
from nervamem.mcp_server.tools import TOOLS, MemoryServer
from tests.test_lazy_imports import heavy_in, run_fresh

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_the_command_and_the_snippets_know_the_same_clients() -> None:
    assert set(CLIENT_NAMES) == set(CLIENTS)


@pytest.mark.parametrize("client", CLIENT_NAMES)
def test_print_config(
    client: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, snapshot: Any
) -> None:
    """Each client's snippet starts the server on the store in use, by absolute path."""
    monkeypatch.setattr("shutil.which", lambda name: None)
    monkeypatch.setenv("NERVAMEM_DB", "store/it's here.db")
    result = runner.invoke(app, ["--ns", "work", "mcp", "--print-config", client])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith(f"nervamem: for {client}: ")  # where it goes
    db = str(tmp_path / "store" / "it's here.db")
    assert not (tmp_path / "store").exists(), "printing a configuration creates nothing"
    expected = ["--db", db, "--ns", "work", "mcp"]
    body = result.stdout  # exactly what goes in the file
    if client == "claude-code":
        assert shlex.split(body)[-6:] == ["nervamem", *expected]
    elif client == "codex":
        tomllib = pytest.importorskip("tomllib")  # Python 3.11+
        server = tomllib.loads(body)["mcp_servers"]["nervamem"]
        assert server == {"command": "nervamem", "args": expected}
    else:
        document = json.loads(body)
        (servers,) = document.values()
        assert servers["nervamem"]["command"] == "nervamem"
        assert servers["nervamem"]["args"] == expected
    assert result.stdout.replace(str(tmp_path), "<tmp>") == snapshot


def test_print_config_of_an_unknown_client_is_bad_input() -> None:
    result = runner.invoke(app, ["mcp", "--print-config", "emacs"])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith("nervamem: error: unknown client 'emacs': use one of")


def test_print_config_loads_no_sdk(tmp_path: Path) -> None:
    code, modules, stdout = run_fresh(tmp_path, "mcp", "--print-config", "cursor")
    assert code == 0 and '"mcpServers"' in stdout
    assert heavy_in(modules) == []


def test_a_person_at_a_terminal_is_told_what_the_command_is_for(tmp_path: Path) -> None:
    controller, terminal = pty.openpty()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "nervamem", "--db", str(tmp_path / "m.db"), "mcp"],
            stdin=terminal,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    finally:
        os.close(controller)
        os.close(terminal)
    assert (result.returncode, result.stdout) == (2, "")
    assert "--print-config" in result.stderr and len(result.stderr.splitlines()) == 1


def test_without_the_sdk_the_command_says_which_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, "nervamem.mcp_server.server", raising=False)
    for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")] or ["mcp"]:
        monkeypatch.setitem(sys.modules, name, None)  # None: "import mcp..." fails
    result = runner.invoke(app, ["--db", str(tmp_path / "m.db"), "mcp"], input="")
    assert (result.exit_code, result.stdout) == (2, "")
    assert "pip install 'nervamem[mcp]'" in result.stderr


# ----------------------------------------------------------------------------- in-process
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)
PLAUSIBLE: dict[str, st.SearchStrategy[Any]] = {
    "string": st.text(max_size=40) | st.sampled_from(["fact", "decision", "2026-01-01", "f-"]),
    "integer": st.integers(min_value=-5, max_value=2_000_000),
    "number": st.floats(allow_nan=False) | st.integers(),
    "boolean": st.booleans(),
    "array": st.lists(st.text(max_size=20), max_size=3),
}
# Failures a caller can cause; "internal" (a bug) is not among them.
DOCUMENTED = {"usage", "bad_input", "not_found", "ambiguous", "store_unavailable"}


def _arguments(tool_index: int) -> st.SearchStrategy[dict[str, Any]]:
    tool = TOOLS[tool_index]
    names = [*tool.properties, "unexpected"]
    return st.dictionaries(
        st.sampled_from(names),
        JSON,
        max_size=4,
    ) | st.fixed_dictionaries(
        {},
        optional={
            name: PLAUSIBLE[schema["type"]] | JSON for name, schema in tool.properties.items()
        },
    )


CALLS = st.integers(min_value=0, max_value=len(TOOLS) - 1).flatmap(
    lambda index: st.tuples(st.just(TOOLS[index].name), _arguments(index))
)


@pytest.fixture(scope="module")
def server() -> Any:
    folder = tempfile.TemporaryDirectory()
    memory = MemoryServer(str(Path(folder.name) / "memory.db"))
    memory.check()
    yield memory
    memory.close()
    folder.cleanup()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(call=CALLS)
def test_a_call_never_raises_and_fails_only_as_documented(
    server: MemoryServer, call: tuple[str, dict[str, Any]]
) -> None:
    name, arguments = call
    answer = server.call(name, arguments)
    json.dumps(answer.document)  # what the protocol will send: JSON, whatever it holds
    if answer.is_error:
        error = answer.document["error"]
        assert error["code"] in DOCUMENTED, (name, arguments, error)
        assert json.loads(answer.text) == answer.document
    else:
        assert answer.text


def test_the_store_is_resolved_again_at_each_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Like a CLI command, the server uses the store found from its working folder now:
    a project store made while it runs is the one the next call uses."""
    opened: list[str] = []
    factory: Callable[[str, str | None], Any] = _recording(opened)
    memory = MemoryServer(store_factory=factory)
    first = memory.call("memory_stats", {})
    assert first.document["db_path"] == str(tmp_path / "home" / ".nervapack" / "memory.db")
    assert runner.invoke(app, ["init"]).exit_code == 0  # ./.nervapack/memory.db
    second = memory.call("memory_stats", {})
    assert second.document["db_path"] == str(tmp_path / ".nervapack" / "memory.db")
    memory.close()
    assert len(opened) == 2


def _recording(opened: list[str]) -> Callable[[str, str | None], Any]:
    from nervamem import MemoryStore

    def factory(db: str, namespace: str | None) -> MemoryStore:
        opened.append(db)
        return MemoryStore(db, namespace=namespace)

    return factory


def test_an_integer_too_large_for_a_float_is_out_of_range_not_internal(
    server: MemoryServer,
) -> None:
    """JSON carries integers of any size; confidence and min_score are floats. 10**400 is
    refused as 1e400 is (bad_input, naming the option), not an OverflowError."""
    store = server.call("memory_store", {"kind": "fact", "content": "x", "confidence": 10**400})
    assert store.document["error"]["code"] == "bad_input", store.document
    assert "confidence inf is outside [0, 1]" in store.document["error"]["message"]
    recall = server.call("memory_recall", {"query": "x", "min_score": -(10**400)})
    assert recall.document["error"]["code"] == "bad_input", recall.document
    assert "--min-score" in recall.document["error"]["message"]


def test_an_integral_number_is_an_integer_as_json_schema_says(server: MemoryServer) -> None:
    """The schemas say "integer", which JSON Schema meets with 500.0 as with 500: a
    client that checks its arguments against them may send either."""
    recall = server.call("memory_recall", {"query": "x", "budget_tokens": 60.0, "hops": 1.0})
    assert not recall.is_error, recall.document
    assert recall.document["budget_tokens"] == 60
    timeline = server.call("memory_timeline", {"query": "x", "limit": 5.0})
    assert not timeline.is_error, timeline.document
    fraction = server.call("memory_recall", {"query": "x", "budget_tokens": 60.5})
    assert fraction.document["error"]["code"] == "usage"
    infinite = server.call("memory_recall", {"query": "x", "budget_tokens": float("inf")})
    assert infinite.document["error"]["code"] == "usage"


def test_the_documented_arguments_are_the_tools_arguments() -> None:
    """docs/mcp.md's table names each tool's arguments, the required ones in bold: a
    client's author reads it; an argument the server takes is not left out of it."""
    import re

    rows = {}
    for line in (Path(__file__).parents[2] / "docs" / "mcp.md").read_text().splitlines():
        if match := re.match(r"\| `(memory_\w+)` \|[^|]*\| (.*) \|$", line):
            rows[match.group(1)] = match.group(2)
    assert set(rows) == {tool.name for tool in TOOLS}
    for tool in TOOLS:
        documented = re.findall(r"`(\w+)`", rows[tool.name])
        required = re.findall(r"\*\*`(\w+)`\*\*", rows[tool.name])
        assert sorted(documented) == sorted(tool.properties), tool.name
        assert sorted(required) == sorted(tool.required), tool.name


def test_a_switch_moves_the_namespace_the_server_was_started_in(tmp_path: Path) -> None:
    """`nervamem --ns pinned mcp`: the agent's memory_switch_namespace answered 'other'
    but its next calls stayed in 'pinned'. They follow the switch."""
    memory = MemoryServer(str(tmp_path / "memory.db"), namespace="pinned")
    try:
        assert memory.call("memory_stats", {}).document["namespace"] == "pinned"
        switched = memory.call("memory_switch_namespace", {"name": "other"})
        assert switched.document["namespace"] == "other"
        stored = memory.call("memory_store", {"kind": "fact", "content": "after the switch"})
        assert memory.call("memory_stats", {}).document["namespace"] == "other"
        assert memory.store().get(stored.document["id"], namespace="other") is not None
        refused = memory.call("memory_switch_namespace", {"name": "not a name"})
        assert refused.is_error
        assert memory.call("memory_stats", {}).document["namespace"] == "other"
    finally:
        memory.close()


def test_a_store_deleted_and_made_again_while_serving_gets_the_next_write(
    tmp_path: Path,
) -> None:
    """`rm -r .nervapack && nervamem init` while the server runs: the server kept its
    connection to the unlinked file, answered the next memory_store as stored, and the
    memory was gone when it stopped. It opens the store the path names now."""
    from nervamem import MemoryStore

    db = tmp_path / "project" / "memory.db"
    memory = MemoryServer(str(db))
    try:
        assert not memory.call("memory_store", {"kind": "fact", "content": "first"}).is_error
        for leftover in db.parent.iterdir():
            leftover.unlink()
        runner.invoke(app, ["--db", str(db), "init"])
        stored = memory.call("memory_store", {"kind": "fact", "content": "after the reset"})
        assert not stored.is_error, stored.document
    finally:
        memory.close()
    with MemoryStore(db) as store:
        assert store.get(stored.document["id"]).content == "after the reset"
