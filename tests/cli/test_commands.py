"""CLI tests through Typer's CliRunner: exit codes, stdout and stderr separately, and
syrupy snapshots of every output format. IDs and times come from the fixed clock and
counting ID source of conftest.py, so snapshots are exact."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import store_fingerprint

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

Run = Callable[..., Any]
FORMATS = ("markdown", "json", "table")


@pytest.fixture
def seeded(cli: Run) -> dict[str, str]:
    session = cli("session", "start", "auth rework").stdout.strip()
    old = cli(
        "store",
        "decision",
        "Chose session cookies for auth",
        "-e",
        "AuthService",
        "--valid-from",
        "2026-01-01",
        "--rationale",
        "simple",
    ).stdout.strip()
    new = cli(
        "store",
        "decision",
        "Chose JWT for auth",
        "-e",
        "auth_service",
        "--valid-from",
        "2026-06-01",
        "--supersedes",
        old,
        "--rejected",
        "cookies",
    ).stdout.strip()
    fact = cli(
        "store",
        "fact",
        "auth_service issues 15-minute access tokens",
        "-e",
        "auth-service",
        "--confidence",
        "0.9",
    ).stdout.strip()
    return {"session": session, "old": old, "new": new, "fact": fact}


def test_store_prints_only_the_id(cli: Run) -> None:
    result = cli("store", "fact", "the sky is blue")
    assert result.exit_code == 0
    assert result.stderr == ""
    assert result.stdout == "f_0019f27d99de89e3779b97f4a7c15\n"


def test_store_reads_content_from_stdin(cli: Run) -> None:
    node_id = cli("store", "action", "-", input="deployed v2\nto staging\n").stdout.strip()
    shown = json.loads(cli("timeline", "staging", "--format", "json").stdout)
    assert shown["items"][0]["id"] == node_id
    assert shown["items"][0]["content"] == "deployed v2\nto staging\n"


def test_recall_reads_query_from_stdin_and_double_dash(cli: Run) -> None:
    cli("store", "fact", "--", "-x marks the spot")
    assert "-x marks" in cli("recall", "-", input="marks spot").stdout
    assert "-x marks" in cli("recall", "--", "-x marks").stdout


@pytest.mark.parametrize("fmt", FORMATS)
def test_recall_formats(cli: Run, seeded: dict[str, str], snapshot: Any, fmt: str) -> None:
    result = cli("recall", "auth mechanism", "--format", fmt)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == snapshot


def test_recall_as_of_shows_the_old_decision(cli: Run, seeded: dict[str, str]) -> None:
    now = json.loads(cli("recall", "auth mechanism", "-k", "decision", "-f", "json").stdout)
    then = json.loads(
        cli(
            "recall", "auth mechanism", "--as-of", "2026-03-15", "-k", "decision", "-f", "json"
        ).stdout
    )
    assert [i["id"] for i in now["items"]] == [seeded["new"]]
    assert [i["id"] for i in then["items"]] == [seeded["old"]]
    # A date alone is the end of that day (timeparse.py).
    assert then["as_of"] == "2026-03-15T23:59:59.999Z"


def test_recall_json_contract(cli: Run, seeded: dict[str, str]) -> None:
    document = json.loads(cli("recall", "auth", "--format", "json").stdout)
    assert {"query", "as_of", "budget_tokens", "used_tokens", "items"} <= set(document)
    for item in document["items"]:
        assert {
            "id",
            "kind",
            "content",
            "score",
            "confidence",
            "valid_from",
            "valid_until",
            "recorded_at",
        } <= set(item)
    markdown = cli("recall", "auth", "--format", "markdown").stdout
    # The JSON items are exactly those the Markdown shows.
    shown = [line for line in markdown.splitlines() if line.startswith("- ")]
    assert len(shown) == len(document["items"])


@pytest.mark.parametrize("fmt", FORMATS)
def test_timeline_formats(cli: Run, seeded: dict[str, str], snapshot: Any, fmt: str) -> None:
    result = cli("timeline", "auth", "--format", fmt)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == snapshot


def test_timeline_marks_superseded(cli: Run, seeded: dict[str, str]) -> None:
    items = json.loads(cli("timeline", "auth", "-f", "json").stdout)["items"]
    by_id = {i["id"]: i for i in items}
    assert by_id[seeded["old"]]["superseded_by"] == seeded["new"]
    assert by_id[seeded["new"]]["superseded_by"] is None
    assert "[superseded by " in cli("timeline", "auth", "-f", "markdown").stdout


def _mask_store_facts(text: str, db_path: Path) -> str:
    # The store's path and byte size depend on the machine, not on nervamem.
    # On PostgreSQL, db_path is the URL (shown without a password: there is none).
    shown = str(db_path.resolve()) if isinstance(db_path, Path) else str(db_path)
    text = text.replace(shown, "<DB>")
    return re.sub(r'("db_bytes": |\(|db_bytes\s+)\d+', r"\1<BYTES>", text)


@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_stats_formats(
    cli: Run, seeded: dict[str, str], snapshot: Any, fmt: str, db_path: Path
) -> None:
    result = cli("stats", "--format", fmt)
    assert result.exit_code == 0
    assert _mask_store_facts(result.stdout, db_path) == snapshot


def test_stats_table(cli: Run, seeded: dict[str, str]) -> None:
    result = cli("stats", "--format", "table", env={"COLUMNS": "400"})
    assert result.exit_code == 0
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in result.stdout.splitlines()
        if line.count("│") == 3
    }
    assert rows["nodes"] == "session 1, fact 1, decision 2, entity 1"
    assert rows["superseded"] == "1"


@pytest.mark.parametrize("fmt", FORMATS)
def test_ns_commands_formats(cli: Run, seeded: dict[str, str], snapshot: Any, fmt: str) -> None:
    switched = cli("ns", "switch", "project_b", "--format", fmt)
    listed = cli("ns", "list", "--format", fmt)
    current = cli("ns", "current", "--format", fmt)
    assert (switched.exit_code, listed.exit_code, current.exit_code) == (0, 0, 0)
    assert (switched.stdout, listed.stdout, current.stdout) == snapshot


def test_switching_to_a_new_namespace_says_so_on_stderr(cli: Run) -> None:
    cli("store", "fact", "in the default namespace")
    new = cli("ns", "switch", "project_b")
    assert new.exit_code == 0
    assert new.stdout == "namespace: project_b\nsession: -\n"
    assert new.stderr == "nervamem: namespace 'project_b' is new (no memories yet)\n"
    cli("store", "fact", "now project_b has one")
    cli("ns", "switch", "default")
    back = cli("ns", "switch", "project_b")
    assert back.exit_code == 0 and back.stderr == ""
    assert back.stdout == new.stdout


@pytest.mark.parametrize("fmt", FORMATS)
def test_session_and_forget_formats(cli: Run, snapshot: Any, fmt: str) -> None:
    started = cli("session", "start", "x", "--format", fmt)
    stored = cli("store", "fact", "temporary", "--format", fmt)
    node_id = cli("store", "fact", "second").stdout.strip()
    forgot = cli("forget", node_id, "--format", fmt)
    purged = cli("forget", node_id, "--purge", "--yes", "--format", fmt)
    ended = cli("session", "end", "--format", fmt)
    outputs = [started, stored, forgot, purged, ended]
    assert [r.exit_code for r in outputs] == [0] * 5
    assert [r.stdout for r in outputs] == snapshot


def test_forgetting_twice_says_it_already_was(cli: Run) -> None:
    node_id = cli("store", "fact", "temporary").stdout.strip()
    first = cli("forget", node_id, "-f", "json")
    again = cli("forget", node_id)
    again_json = cli("forget", node_id, "-f", "json")
    assert [r.exit_code for r in (first, again, again_json)] == [0, 0, 0]
    assert json.loads(first.stdout)["already"] is False
    assert again.stdout == f"already forgotten {node_id}\n"
    assert json.loads(again_json.stdout) == {
        "id": node_id,
        "purged": False,
        "removed": [],
        "already": True,
        "files_not_scrubbed": None,
    }


def test_init_is_idempotent(cli: Run, tmp_path: Path) -> None:
    target = tmp_path / "proj" / "m.db"
    first = cli("--db", str(target), "init", "-f", "json")
    second = cli("--db", str(target), "init", "-f", "json")
    assert json.loads(first.stdout)["created"] is True
    assert json.loads(second.stdout)["created"] is False


@pytest.mark.sqlite_only  # the SQLite file itself
def test_nervamem_db_wins_over_nervapack_memory_db(cli: Run, db_path: Path, tmp_path: Path) -> None:
    newer = tmp_path / "newer" / "m.db"
    # The cli fixture sets NERVAPACK_MEMORY_DB to db_path.
    init = cli("init", "-f", "json", env={"NERVAMEM_DB": str(newer)})
    assert json.loads(init.stdout)["db_path"] == str(newer.resolve())
    stored = cli("store", "fact", "kept in the newer store", env={"NERVAMEM_DB": str(newer)})
    assert stored.exit_code == 0, stored.stderr
    assert newer.is_file() and not db_path.exists()
    legacy = cli("init", "-f", "json")
    assert json.loads(legacy.stdout)["db_path"] == str(db_path.resolve())


def test_init_in_project_and_global(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NERVAPACK_MEMORY_DB")
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.chdir(project)
    assert cli("init").exit_code == 0
    assert (project / ".nervapack" / "memory.db").is_file()
    assert cli("init", "--global").exit_code == 0
    assert (Path.home() / ".nervapack" / "memory.db").is_file()


def test_init_global_with_db_is_bad_input(cli: Run, tmp_path: Path) -> None:
    """'--db X init --global' made the home store and left X unmade, saying nothing."""
    named = tmp_path / "named.db"
    result = cli("--db", str(named), "init", "--global")
    assert result.exit_code == 2 and "--global" in result.stderr, result.stderr
    assert not named.exists() and not (Path.home() / ".nervapack").exists()


def test_global_options_before_the_command(cli: Run, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    node_id = cli("--db", str(other), "--ns", "team", "store", "fact", "in team").stdout.strip()
    found = json.loads(
        cli("--db", str(other), "--ns", "team", "--format", "json", "recall", "team").stdout
    )
    assert [i["id"] for i in found["items"]] == [node_id]
    assert json.loads(cli("--db", str(other), "-f", "json", "recall", "team").stdout)["items"] == []


def test_format_from_environment(cli: Run) -> None:
    result = cli("store", "fact", "x", env={"NERVAMEM_FORMAT": "json"})
    assert json.loads(result.stdout)["id"].startswith("f_")


def test_version(cli: Run) -> None:
    result = cli("--version")
    assert result.exit_code == 0
    assert result.stdout.startswith("nervamem ")


ERROR_CASES = [
    (["store", "opinion", "x"], 2, "bad_input"),
    (["store", "fact", "x", "--confidence", "2"], 2, "bad_input"),
    (["store", "fact", "x", "--valid-from", "last tuesday"], 2, "bad_input"),
    (["store", "fact", "x", "--supersedes", "f_ffff"], 3, "not_found"),
    (["store", "fact", "x", "--bogus"], 2, "usage"),
    (["recall", "x", "--budget", "-1"], 2, "bad_input"),
    (["recall", "x", "--budget", "3"], 2, "bad_input"),
    (["recall", "x", "--budget", "lots"], 2, "usage"),
    (["recall", "x", "--as-of", "2026-13-45"], 2, "bad_input"),
    (["recall", "x", "--kind", "gossip"], 2, "bad_input"),
    (["recall", "x", "--hops", "99"], 2, "bad_input"),
    (["recall", "x", "--format", "yaml"], 2, "bad_input"),
    (["forget", "f_'x"], 2, "bad_input"),
    (["forget", "f_1"], 3, "not_found"),
    (["session", "end"], 2, "bad_input"),
    (["ns", "switch", "bad name"], 2, "bad_input"),
    (["nonsense"], 2, "usage"),
]


@pytest.mark.parametrize(("args", "code", "name"), ERROR_CASES)
def test_errors_are_one_line_with_documented_exit_code(
    cli: Run, db_path: Path, args: list[str], code: int, name: str
) -> None:
    cli("store", "fact", "existing")
    before = store_fingerprint(db_path)
    result = cli(*args)
    assert result.exit_code == code, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("nervamem: error: ")
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr
    as_json = cli(*args, "--format", "json") if "--format" not in args else result
    if "--format" not in args and args != ["nonsense"]:
        error = json.loads(as_json.stderr)["error"]
        assert (error["code"], error["exit_code"]) == (name, code)
    assert store_fingerprint(db_path) == before


@pytest.mark.parametrize(
    "args", [["store", "fact", "x", "--session", ""], ["session", "end", "--session", ""]]
)
def test_a_blank_session_id_is_bad_input_not_the_active_session(
    cli: Run, db_path: Path, args: list[str]
) -> None:
    """``--session "$SID"`` with SID unset stored into, or ended, the active session."""
    active = cli("session", "start", "the task").stdout.strip()
    before = store_fingerprint(db_path)
    result = cli(*args)
    assert result.exit_code == 2, result.stderr
    assert "not a node ID" in result.stderr and result.stderr.count("\n") == 1
    assert store_fingerprint(db_path) == before
    assert json.loads(cli("--format", "json", "ns", "current").stdout)["session"] == active


def test_ambiguous_prefix_lists_candidates(cli: Run) -> None:
    first = cli("store", "fact", "one").stdout.strip()
    second = cli("store", "fact", "two").stdout.strip()
    result = cli("forget", "f_")
    assert result.exit_code == 3
    assert first in result.stderr and second in result.stderr


def test_purge_without_yes_refuses_when_stdin_is_not_a_terminal(cli: Run) -> None:
    node_id = cli("store", "fact", "keep me").stdout.strip()
    result = cli("forget", node_id, "--purge")
    assert result.exit_code == 2
    assert "--yes" in result.stderr
    assert json.loads(cli("timeline", "keep", "-f", "json").stdout)["items"][0]["id"] == node_id


@pytest.mark.sqlite_only  # the SQLite file itself
def test_corrupt_state_file_is_exit_1(cli: Run, db_path: Path) -> None:
    cli("store", "fact", "x")
    (db_path.parent / "state.yaml").write_text("namespace: {{{\n")
    result = cli("recall", "x")
    assert result.exit_code == 1
    assert "state.yaml" in result.stderr


def test_invalid_utf8_on_stdin_is_bad_input(cli: Run) -> None:
    result = cli("store", "fact", "-", input=b"\xff\xfe bad")
    assert result.exit_code == 2
    assert "UTF-8" in result.stderr


def test_table_shows_rich_markup_in_content_verbatim(cli: Run) -> None:
    cli("store", "fact", "markup [/] test [bold]x[/bold]")
    result = cli("timeline", "markup", "--format", "table", env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.stderr
    assert "markup [/] test [bold]x[/bold]" in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["store", "bogus", "x", "-f", "json"],
        ["-fjson", "store", "bogus", "x"],
        ["--format", "markdown", "--format=json", "store", "bogus", "x"],
    ],
)
def test_json_error_line_for_every_spelling_of_the_format_option(cli: Run, args: list[str]) -> None:
    result = cli(*args)
    assert result.exit_code == 2
    assert json.loads(result.stderr)["error"]["code"] == "bad_input"


def test_short_ids_shown_by_recall_work_as_arguments(cli: Run, seeded: dict[str, str]) -> None:
    shown = cli("recall", "auth mechanism", "--format", "json")
    short = {item["id"]: item["short_id"] for item in json.loads(shown.stdout)["items"]}
    fact = seeded["fact"]
    assert short[fact] == "f-" + fact[-16:][: len(short[fact]) - 2]
    newer = cli("store", "fact", "auth tokens last 30 minutes", "--supersedes", short[fact])
    assert newer.exit_code == 0, newer.stderr
    timeline = json.loads(cli("timeline", "auth", "--format", "json").stdout)["items"]
    assert {i["id"]: i["superseded_by"] for i in timeline}[fact] == newer.stdout.strip()
    forgot = cli("forget", short[seeded["new"]].upper(), "--format", "json")
    assert json.loads(forgot.stdout) == {
        "id": seeded["new"],
        "purged": False,
        "removed": [],
        "already": False,
        "files_not_scrubbed": None,
    }


@pytest.mark.parametrize("ref", ["f-123", "x-1234", "f-12ab-", "f-" + "1" * 17])
def test_a_malformed_short_id_is_refused_with_one_line(cli: Run, ref: str) -> None:
    cli("store", "fact", "something")
    result = cli("forget", ref)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "short ID" in result.stderr


def test_recall_min_score_out_of_range_is_one_line_and_exit_2(
    cli: Run, seeded: dict[str, str]
) -> None:
    result = cli("recall", "auth", "--min-score", "1.5")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "nervamem: error: --min-score must be between 0 and 1, not 1.5"
    ]
    kept = json.loads(cli("recall", "auth", "--min-score", "0.9", "-f", "json").stdout)
    best = kept["items"][0]["score"]
    assert all(item["score"] >= 0.9 * best for item in kept["items"])


@pytest.mark.sqlite_only  # the SQLite file itself
@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["store", "bogus", "x"], 2),
        (["store", "fact", "  "], 2),
        (["store", "fact", "x", "--confidence", "2"], 2),
        (["store", "fact", "x", "--valid-from", "not a date"], 2),
        (["store", "fact", "x", "--valid-until", "not a date"], 2),
        (["store", "fact", "x", "--rationale", "why"], 2),
        (["ns", "switch", "bad name"], 2),
        (["import", "/nonexistent/events.jsonl"], 2),
        (["code", "index", "/nonexistent/folder"], 3),
    ],
)
def test_a_failed_command_creates_no_store(
    cli: Run, db_path: Path, args: list[str], code: int
) -> None:
    """``store``, ``ns switch``, ``import`` and ``code index`` create a missing store;
    with arguments that need no store to be refused, they used to create it first (the
    file, its lock and queue files) and then fail, leaving an empty store behind."""
    result = cli(*args)
    assert result.exit_code == code, result.stderr
    assert result.stderr.startswith("nervamem: error:") and result.stderr.count("\n") == 1
    assert not db_path.parent.exists() or not any(db_path.parent.iterdir())
