"""Forgotten is forgotten everywhere (issue 19, item 7): no command shows a tombstoned
node's content or counts its edges, and a purge takes with it the entities that only the
purged memory named, so a person's or a secret's name does not stay recallable."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nervamem import MemoryStore

from . import harness

pytestmark = pytest.mark.sqlite_only  # not yet run against PostgreSQL

Run = Callable[..., Any]


def _ok(cli: Run, *args: str) -> str:
    result = cli(*args)
    assert (result.exit_code, result.stderr) == (0, ""), result.stderr
    return str(result.stdout)


def test_code_to_a_forgotten_memory_is_not_found(cli: Run) -> None:
    node = _ok(cli, "store", "fact", "the forgotten secret lives here", "-e", "Vault").strip()
    _ok(cli, "forget", node)
    result = cli("code-to", node, "--format", "json")
    assert result.exit_code == 3 and result.stdout == ""
    assert json.loads(result.stderr)["error"]["code"] == "not_found"
    assert "secret" not in result.stderr


def test_stats_does_not_count_the_edges_of_forgotten_nodes(cli: Run) -> None:
    kept = _ok(cli, "store", "fact", "kept fact", "-e", "Vault").strip()
    forgotten = _ok(cli, "store", "fact", "forgotten fact", "-e", "Vault", "-e", "Door").strip()
    before = json.loads(_ok(cli, "stats", "--format", "json"))["edges"]
    assert before["ABOUT"] == 3
    _ok(cli, "forget", forgotten)
    after = json.loads(_ok(cli, "stats", "--format", "json"))["edges"]
    assert after["ABOUT"] == 1, after
    _ok(cli, "forget", kept)
    assert "ABOUT" not in json.loads(_ok(cli, "stats", "--format", "json"))["edges"]


def test_purge_removes_the_entities_only_it_named(cli: Run, db_path: Path) -> None:
    secret = "Zqx Hidden Person"
    shared = _ok(cli, "store", "fact", "an older fact about the team", "-e", "Team").strip()
    standalone = _ok(cli, "store", "entity", "Lonely Entity").strip()
    target = _ok(
        cli,
        "store",
        "fact",
        "met someone about the team",
        "-e",
        secret,
        "-e",
        "Team",
        "-e",
        "Lonely Entity",
    ).strip()
    with MemoryStore(db_path) as memory:
        secret_entity = memory.connection.execute(
            "SELECT id FROM mem_nodes WHERE kind = 'entity' AND content = ?", (secret,)
        ).fetchone()[0]
    result = json.loads(_ok(cli, "forget", target, "--purge", "--yes", "--format", "json"))
    assert result == {
        "id": target,
        "purged": True,
        "removed": [secret_entity],
        "already": False,
        "files_not_scrubbed": None,
    }

    health = harness.inspect_store(db_path)
    assert health.ok and target not in health.ids and secret_entity not in health.ids
    assert {shared, standalone} <= health.ids
    recalled = json.loads(_ok(cli, "recall", "Zqx Hidden Person", "--format", "json"))
    assert recalled["items"] == []
    markdown = _ok(cli, "store", "fact", "again", "-e", "Team")  # Team still resolves
    assert markdown.strip()
    for path in db_path.parent.iterdir():
        if path.is_file():
            assert b"Zqx Hidden" not in path.read_bytes(), path.name


def test_purge_says_what_else_it_removed(cli: Run) -> None:
    target = _ok(cli, "store", "fact", "about a one-off name", "-e", "Onlyhere").strip()
    text = _ok(cli, "forget", target, "--purge", "--yes", "--format", "markdown")
    lines = text.splitlines()
    assert lines[0] == f"purged {target}"
    assert len(lines) == 2 and lines[1].startswith("purged e_") and "only it named" in lines[1]
