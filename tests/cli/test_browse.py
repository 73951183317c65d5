"""`show` and `list`: reading memories back by ID and browsing them newest first, in
every format (syrupy snapshots; fixed clock and IDs from conftest.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

Run = Callable[..., Any]
FORMATS = ("markdown", "json", "table")


@pytest.fixture
def history(cli: Run) -> dict[str, str]:
    session = cli("session", "start", "auth rework").stdout.strip()
    old = cli(
        "store", "decision", "Chose session cookies for auth", "-e", "AuthService",
        "--rationale", "simple", "--valid-from", "2026-01-01",
    ).stdout.strip()  # fmt: skip
    new = cli(
        "store", "decision", "Chose JWT for auth", "-e", "AuthService", "--supersedes", old,
        "--rationale", "stateless", "--rejected", "cookies", "--rejected", "opaque tokens",
    ).stdout.strip()  # fmt: skip
    action = cli(
        "store", "action", "Commit 1a2b: switch login to JWT", "--caused-by", new
    ).stdout.strip()  # fmt: skip
    cli("session", "end")
    fact = cli("store", "fact", "tokens last 15 minutes", "-e", "AuthService").stdout.strip()
    gone = cli("store", "fact", "a mistaken note").stdout.strip()
    cli("forget", gone)
    return {
        "session": session, "old": old, "new": new, "action": action, "fact": fact, "gone": gone
    }  # fmt: skip


def short(cli: Run, node_id: str) -> str:
    return str(json.loads(cli("show", node_id, "-f", "json").stdout)["nodes"][0]["short_id"])


@pytest.mark.parametrize("fmt", FORMATS)
def test_show_formats(cli: Run, history: dict[str, str], snapshot: Any, fmt: str) -> None:
    result = cli(
        "show", short(cli, history["new"]), history["gone"], "--format", fmt,
        env={"COLUMNS": "100"},
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stdout == snapshot


def test_show_reads_back_rationale_alternatives_edges_and_session(
    cli: Run, history: dict[str, str]
) -> None:
    node = json.loads(cli("show", history["new"], "-f", "json").stdout)["nodes"][0]
    assert node["rationale"] == "stateless"
    assert node["rejected"] == ["cookies", "opaque tokens"]
    assert node["session"]["id"] == history["session"]
    assert node["entities"] == ["AuthService"]
    links = {(link["edge"], link["direction"], link["id"]) for link in node["links"]}
    assert links == {
        ("SUPERSEDES", "out", history["old"]),
        ("CAUSED", "out", history["action"]),
    }
    old = json.loads(cli("show", history["old"], "-f", "json").stdout)["nodes"][0]
    assert old["status"] == "superseded"
    assert ("SUPERSEDES", "in", history["new"]) in {
        (link["edge"], link["direction"], link["id"]) for link in old["links"]
    }


def test_show_marks_a_forgotten_node(cli: Run, history: dict[str, str]) -> None:
    result = cli("show", history["gone"], "-f", "markdown")
    assert result.exit_code == 0
    assert result.stdout.startswith("## [f-") and " · forgotten\n" in result.stdout


def test_show_unknown_id_fails_with_exit_3(cli: Run, history: dict[str, str]) -> None:
    result = cli("show", history["new"], "d-ffffffff")
    assert result.exit_code == 3
    assert result.stdout == ""
    assert "no node" in result.stderr


@pytest.mark.parametrize("fmt", FORMATS)
def test_list_formats(cli: Run, history: dict[str, str], snapshot: Any, fmt: str) -> None:
    result = cli("list", "--include-superseded", "--include-forgotten", "--format", fmt,
                 env={"COLUMNS": "100"})  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stdout == snapshot


def test_list_table_fits_a_60_column_terminal(cli: Run, history: dict[str, str]) -> None:
    result = cli("list", "-f", "table", env={"COLUMNS": "60"})
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 60
    # The content column keeps a readable width: whole words, not 7-letter slivers.
    assert any("Commit 1a2b: switch login" in line for line in lines)


def ids(cli: Run, *args: str) -> list[str]:
    result = cli("list", *args, "-f", "json")
    assert result.exit_code == 0, result.stderr
    return [item["id"] for item in json.loads(result.stdout)["items"]]


def test_list_is_newest_first_and_hides_superseded_and_forgotten(
    cli: Run, history: dict[str, str]
) -> None:
    assert ids(cli) == [history["fact"], history["action"], history["new"]]
    assert ids(cli, "--include-superseded") == [
        history["fact"], history["action"], history["new"], history["old"]
    ]  # fmt: skip
    assert history["gone"] in ids(cli, "--include-forgotten")


def test_list_filters(cli: Run, history: dict[str, str]) -> None:
    assert ids(cli, "--kind", "decision") == [history["new"]]
    assert ids(cli, "--kind", "session") == [history["session"]]
    assert ids(cli, "--session", history["session"]) == [history["action"], history["new"]]
    assert ids(cli, "--entity", "auth_service") == [history["fact"], history["new"]]
    assert ids(cli, "--limit", "1") == [history["fact"]]
    # The fixed clock starts at 2026-07-03T12:00:00 and ticks one second per reading.
    assert ids(cli, "--until", "2026-07-02") == []
    assert ids(cli, "--until", "2026-07-03") == ids(cli)  # a date alone: the whole day
    assert ids(cli, "--since", "2026-07-04") == []


def test_list_bad_filters_exit_2_or_3(cli: Run, history: dict[str, str]) -> None:
    assert cli("list", "--kind", "nonsense").exit_code == 2
    assert cli("list", "--limit", "0").exit_code == 2
    assert cli("list", "--since", "yesterday").exit_code == 2
    assert cli("list", "--entity", "nobody").exit_code == 3
