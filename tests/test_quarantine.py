"""Each quarantine module (tests/test_architecture.py, QUARANTINE) runs only on the
library versions it was written for: these tests fail when the installed version, or
pyproject's pin, leaves that range, and show each module's public-API fallback."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from nervamem.quarantine import cpython_sqlite, mcp_sdk

PYPROJECT = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


def _pins(library: str) -> set[str]:
    return set(re.findall(rf'"{library}(>=[\d.]+,<[\d.]+)"', PYPROJECT))


def test_mcp_installed_and_pinned_to_the_release_the_transport_was_written_for() -> None:
    assert _release(version("mcp")) in mcp_sdk.TESTED_MCP
    # One minor release: its private names may move in any other.
    (low, high) = min(mcp_sdk.TESTED_MCP), max(mcp_sdk.TESTED_MCP)
    assert _pins("mcp") == {f">={low[0]}.{low[1]},<{high[0]}.{high[1] + 1}"}
    assert mcp_sdk.AVAILABLE


def test_typer_installed_within_its_pin() -> None:
    (pin,) = _pins("typer")
    low, high = (_release(bound) for bound in pin.split(","))
    assert low <= _release(version("typer")) < high


def test_python_reaches_the_sqlite_handle_publicly_or_in_a_tested_layout() -> None:
    assert (
        hasattr(sqlite3.Connection, "setconfig")
        or sys.version_info[:2] in cpython_sqlite.TESTED_PYTHON
    )


def _wal_left_after_close(tmp_path: Path) -> bool:
    path = tmp_path / "store.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = wal")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    cpython_sqlite.skip_checkpoint_on_close(conn)
    conn.close()
    return Path(f"{path}-wal").exists()


def test_a_connection_told_to_skip_the_checkpoint_leaves_its_wal(tmp_path: Path) -> None:
    assert _wal_left_after_close(tmp_path)


def test_outside_the_tested_layouts_the_close_checkpoints_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if hasattr(sqlite3.Connection, "setconfig"):
        pytest.skip("Python 3.12+ reaches the handle through the public setconfig")
    monkeypatch.setattr(cpython_sqlite, "TESTED_PYTHON", ())
    assert not _wal_left_after_close(tmp_path)


def test_without_the_sdks_private_names_mcp_serves_over_the_sdks_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcp.server import stdio as sdk_stdio

    from nervamem.mcp_server import stdio

    monkeypatch.setattr(mcp_sdk, "AVAILABLE", False)
    monkeypatch.setattr(sdk_stdio, "stdio_server", lambda: "the SDK's transport")
    assert stdio.stdio_transport() == "the SDK's transport"


def test_an_sdk_without_those_private_names_still_loads_the_server() -> None:
    code = (
        "import mcp.server.stdio as sdk\n"
        "import mcp.shared._context_streams as streams\n"
        "del sdk._claim_fd, streams.ContextReceiveStream\n"
        "from nervamem.quarantine import mcp_sdk\n"
        "from nervamem.mcp_server import server, stdio\n"
        "sdk.stdio_server = lambda: 'the SDK transport'\n"
        "assert not mcp_sdk.AVAILABLE\n"
        "print(stdio.stdio_transport())\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (run.returncode, run.stdout, run.stderr) == (0, "the SDK transport\n", "")
