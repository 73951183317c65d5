"""The events folder is hostile input (issue 35): whatever anyone committed under
``events/``, every command that reads it (sync, sync --rebuild, import, the init of a
clone, init --shared and export afterwards, the sync hook) reports each bad file or
folder, skips it (exit 4), imports the rest, and never fails with an internal error.

tests/team/test_event_grammar_property.py checks the same by property, over generated
folders; here each defect of the issue has its own test."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nervamem import MemoryStore

from . import eventfiles
from .gitrepo import git

pytestmark = pytest.mark.sqlite_only  # event files belong to a shared SQLite store

Run = Callable[..., Any]


def shared_folder(root: Path, cli: Run) -> tuple[Path, Path]:
    """A shared store (init --shared through the CLI) holding one good event file;
    returns the database and the events folder."""
    db = root / ".nervapack" / "memory.db"
    assert cli("--db", str(db), "init", "--shared").exit_code == 0
    events = db.parent / "events"
    eventfiles.write(events, eventfiles.fact_event(1, "the good memory"))
    return db, events


def assert_skipped(result: Any, *needles: str) -> list[str]:
    """Exit 4, no internal error, one stderr line per skipped thing, each needle in one."""
    assert result.exit_code == 4, (result.exit_code, result.stderr)
    assert "internal error" not in result.stderr
    lines = result.stderr.splitlines()
    assert all(line.startswith("nervamem: skipped ") for line in lines), lines
    for needle in needles:
        assert sum(needle in line for line in lines) == 1, (needle, lines)
    return lines


def holds_good_memory(db: Path) -> bool:
    with MemoryStore(db) as memory:
        return "the good memory" in memory.canonical_state()


# --------------------------------------------------------------- 1. stray month folders


@pytest.mark.parametrize("stray", ["2026/13", "0000/00", "1969/12", "2026/00"])
def test_a_folder_named_as_no_month_is_reported_and_skipped(
    cli: Run, tmp_path: Path, stray: str
) -> None:
    """Issue 35.1: ``events/2026/13/`` made sync, sync --rebuild and the init of every
    clone fail with ``internal error: ValueError: month must be in 1..12``, and a
    fresh clone recalled nothing. The folder is now reported once, at every sync, and
    its files are skipped; the other events are imported."""
    db, events = shared_folder(tmp_path / "a", cli)
    inside = eventfiles.fact_event(2, "a memory in a stray folder")
    eventfiles.write(events, inside, where=f"{stray}/{inside['id']}.json")
    for args in (("sync",), ("sync",), ("sync", "--rebuild"), ("sync", "--full")):
        result = cli("--db", str(db), *args)
        assert_skipped(result, f"skipped {stray}: not a month's folder")
        assert len(result.stderr.splitlines()) == 1
    assert holds_good_memory(db)
    assert "stray folder" not in cli("--db", str(db), "export").stdout
    # A fresh clone: init makes the cache from the events, and says what it skipped.
    clone = tmp_path / "clone" / ".nervapack"
    shutil.copytree(events, clone / "events")
    result = cli("--db", str(clone / "memory.db"), "init")
    assert_skipped(result, f"skipped {stray}: not a month's folder")
    assert holds_good_memory(clone / "memory.db")
    recalled = cli("--db", str(clone / "memory.db"), "recall", "good memory")
    assert recalled.exit_code == 0 and "the good memory" in recalled.stdout


def test_the_last_month_event_ids_hold_is_read(cli: Run, tmp_path: Path) -> None:
    """``events/9999/12/`` is a real month, the last one a time can name: building the
    range of its event IDs asked datetime for year 10000 (ValueError)."""
    db, events = shared_folder(tmp_path / "a", cli)
    (events / "9999" / "12").mkdir(parents=True)
    result = cli("--db", str(db), "sync")
    assert result.exit_code == 0, result.stderr
    assert cli("--db", str(db), "sync", "--rebuild").exit_code == 0
    assert holds_good_memory(db)


def test_the_sync_hook_skips_a_stray_folder_and_syncs_the_rest(cli: Run, tmp_path: Path) -> None:
    """The post-merge hook (run in the foreground to see its errors) synced nothing
    after a pull that brought ``events/2026/13/``: nervamem failed with an internal
    error every time."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "--initial-branch=main")
    db, events = shared_folder(repo, cli)
    (events / "2026" / "13").mkdir(parents=True)
    (events / "2026" / "13" / "stray.txt").write_text("anyone's\n")
    hook = Path(__file__).parents[2] / "nervamem" / "git_hooks" / "post-merge"
    env = {
        **os.environ,
        "NERVAMEM_BIN": str(Path(sys.executable).with_name("nervamem")),
        "NERVAMEM_HOOK_FOREGROUND": "1",
    }
    done = subprocess.run(
        ["sh", str(hook)], cwd=repo, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert "internal error" not in done.stderr, done.stderr
    assert "skipped 2026/13: not a month's folder" in done.stderr
    assert "not synced" not in done.stderr, done.stderr
    assert holds_good_memory(db)


# --------------------------------------------------------------- 4. numbers out of range


IN_RANGE = "'confidence' (a number from 0 to 1)"


@pytest.mark.parametrize(
    ("confidence", "reason"),
    [
        ("1" + "0" * 400, IN_RANGE),
        ("1e400", "not JSON (1e400 is out of range)"),
        ("-1e400", "not JSON (-1e400 is out of range)"),
        ("2", IN_RANGE),
        ("-0.5", IN_RANGE),
    ],
)
def test_a_confidence_out_of_range_skips_its_event_only(
    cli: Run, tmp_path: Path, confidence: str, reason: str
) -> None:
    """Issue 35.4: an integer confidence of 10**400 aborted the whole import and sync
    (``OverflowError: int too large to convert to float``, exit 1), and every later
    sync, until the file was deleted by hand. 1e400 (infinity once parsed) and numbers
    outside 0..1, which ``store`` refuses, are skipped the same way."""
    bad = eventfiles.fact_event(2, "a bad confidence")
    text = json.dumps(bad).replace('"confidence": 1.0', f'"confidence": {confidence}')
    good = json.dumps(eventfiles.fact_event(1, "the good memory"))
    imported = cli("--format", "json", "import", "-", input=f"{text}\n{good}\n")
    assert imported.exit_code == 4, imported.stderr
    report = json.loads(imported.stdout)
    assert report["imported"] == 1 and reason in report["problems"][0]["reason"]
    db, events = shared_folder(tmp_path / "a", cli)
    eventfiles.write(events, text, where=f"2026/07/{bad['id']}.json")
    for _ in range(2):  # and again at the next sync: never a failure that stays
        assert_skipped(cli("--db", str(db), "sync"), reason)
    assert holds_good_memory(db)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_number_json_does_not_have_is_not_json(cli: Run, constant: str) -> None:
    """Python's parser reads NaN and Infinity, which JSON does not have: in a node's
    data, it was imported, and SQLite's json() and PostgreSQL refused the row later."""
    bad = json.dumps(eventfiles.fact_event(2, "odd data")).replace(
        '"data": {}', f'"data": {{"x": {constant}}}'
    )
    good = json.dumps(eventfiles.fact_event(1, "the good memory"))
    result = cli("import", "-", input=f"{bad}\n{good}\n")
    assert_skipped(result, "not JSON")
    assert "odd data" not in cli("export").stdout


# --------------------------------------------------------------- 5. impossible dates

IMPOSSIBLE_TIMES = [
    ("recorded_at", "2026-13-45T00:44:19.748Z"),
    ("recorded_at", "2026xxxxxxTxxxxxxxxxxxxZ"),
    ("valid_from", "2026-99-99T99:99:99.999Z"),
    ("valid_until", "2026-02-30T00:00:00.000Z"),
    ("node_recorded_at", "1969-12-31T23:59:59.999Z"),
    ("created_at", "2026-07-03T24:00:00.000Z"),
]


def _with_time(field: str, value: str) -> dict[str, Any]:
    document = eventfiles.fact_event(2, "an impossible date")
    node = document["changes"][0]
    if field == "recorded_at":
        document["recorded_at"] = value
    elif field == "node_recorded_at":
        node["recorded_at"] = value
    elif field == "created_at":
        document["changes"].append(
            {
                "type": "edge",
                "src": node["id"],
                "dst": node["id"],
                "kind": "CAUSED",
                "created_at": value,
                "data": {},
            }
        )
    else:
        node[field] = value
    return document


@pytest.mark.parametrize(("field", "value"), IMPOSSIBLE_TIMES)
def test_an_impossible_date_is_skipped(cli: Run, tmp_path: Path, field: str, value: str) -> None:
    """Issue 35.5: a time was checked for its shape only: ``2026-13-45T…``,
    ``2026xxxxxxT…Z`` and ``2026-99-99T99:99:99.999Z`` were imported, and then
    ``export`` and ``init --shared`` failed with an internal error for good, and
    ``list`` showed ``2026xxxxxx``. A time before 1970 where it becomes an event ID on
    export (a node's recorded_at) gave that export an ID import refuses."""
    good = json.dumps(eventfiles.fact_event(1, "the good memory"))
    bad = json.dumps(_with_time(field, value))
    result = cli("import", "-", input=f"{bad}\n{good}\n")
    assert_skipped(result, "stdin:1")
    listed = cli("list")
    assert listed.exit_code == 0 and "the good memory" in listed.stdout
    assert "impossible" not in listed.stdout and "xxxx" not in listed.stdout
    exported = cli("export")
    assert exported.exit_code == 0, exported.stderr
    assert "the good memory" in exported.stdout and "impossible" not in exported.stdout
    other = tmp_path / "other.db"
    again = cli("--db", str(other), "import", "-", input=exported.stdout)
    assert again.exit_code == 0, again.stderr
    shared = cli("init", "--shared")
    assert shared.exit_code == 0, shared.stderr


def test_a_real_date_is_still_imported(cli: Run) -> None:
    """The checks refuse what no calendar has, not what is rare: a leap day, the last
    millisecond of a year, a validity from long before 1970."""
    document = eventfiles.fact_event(1, "the good memory")
    document["changes"][0]["valid_from"] = "0001-01-01T00:00:00.000Z"
    document["changes"][0]["valid_until"] = "2028-02-29T23:59:59.999Z"
    result = cli("import", "-", input=json.dumps(document) + "\n")
    assert result.exit_code == 0, result.stderr
    assert cli("export").stdout.count("\n") == 1


# --------------------------------------------------------------- the rest of the schema


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"id": "d_" + "0" * 29}, "prefix (f_)"),
        ({"namespace": "../etc"}, "'namespace'"),
        ({"namespace": "default\n"}, "'namespace'"),
        ({"id": "f_" + "0" * 29 + "\n"}, "'id'"),
        ({"namespace": ""}, "'namespace'"),
        ({"kind": "rumour"}, "'kind'"),
        ({"confidence": True}, "'confidence'"),
        ({"data": {"deep": json.loads("[" * 70 + "]" * 70)}}, "nested more than"),
    ],
)
def test_every_field_is_checked_against_the_schema(
    cli: Run, change: dict[str, Any], reason: str
) -> None:
    """Each field, against the schema of docs/team-memory.md: an ID or namespace with a
    final newline passed the patterns' ``$``, a node ID of another kind's prefix could
    never be found by its short ID."""
    document = eventfiles.fact_event(2, "a bad field")
    document["changes"][0].update(change)
    good = json.dumps(eventfiles.fact_event(1, "the good memory"))
    result = cli("import", "-", input=f"{json.dumps(document)}\n{good}\n")
    assert_skipped(result, reason)
    assert "a bad field" not in cli("export").stdout


def test_a_lone_surrogate_outside_the_changes_is_skipped(cli: Run, tmp_path: Path) -> None:
    """An ``author`` (or any field of the event) that is no Unicode text: imported
    into a shared store, the event's file could not be written (UnicodeEncodeError,
    an internal error that rolled back the whole import)."""
    db, _ = shared_folder(tmp_path / "a", cli)
    document = eventfiles.fact_event(2, "by nobody")
    text = json.dumps(document)[:-1] + ', "author": "\\ud800"}'
    good = json.dumps(eventfiles.fact_event(3, "the good memory"))
    result = cli("--db", str(db), "import", "-", input=f"{text}\n{good}\n")
    assert_skipped(result, "lone surrogate")
    assert holds_good_memory(db)


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_export_import_keeps_a_text_with_a_line_separator(cli: Run, separator: str) -> None:
    """Export writes texts unescaped (canonical JSON, UTF-8), and import cut its input
    with str.splitlines(), which ends a line at U+2028, U+2029 and U+0085 too:
    the event holding such a text was cut in two, both halves skipped as not JSON."""
    good = eventfiles.fact_event(1, f"one{separator}memory")
    assert cli("import", "-", input=json.dumps(good) + "\n").exit_code == 0
    exported = cli("export").stdout
    assert separator in exported
    other = cli("--db", "other.db", "--format", "json", "import", "-", input=exported)
    assert other.exit_code == 0, other.stdout
    assert cli("--db", "other.db", "export").stdout == exported


@pytest.mark.parametrize("where", ["2026/07/ev_{other}.json", "2026/08/ev_{id}.json"])
def test_an_event_file_out_of_its_place_is_skipped(cli: Run, tmp_path: Path, where: str) -> None:
    """A copy of an event under another name (or in another month's folder) was
    imported, and sync, which knows the events it holds by the names in each month's
    folder, then took the event for one gone from its place: at each new file in that
    month it made the whole cache again (``rebuilt: true``)."""
    db, events = shared_folder(tmp_path / "a", cli)
    document = eventfiles.fact_event(2, "a copy")
    place = where.format(other=f"{5:029x}", id=document["id"][3:])
    eventfiles.write(events, document, where=place)
    result = cli("--db", str(db), "sync")
    assert_skipped(result, f"{place}: not where its event belongs")
    eventfiles.write(events, eventfiles.fact_event(3, "a later memory"))
    again = cli("--db", str(db), "--format", "json", "sync", "--full")
    assert json.loads(again.stdout)["rebuilt"] is False
    assert holds_good_memory(db)


def test_an_event_id_with_a_final_newline_is_refused(cli: Run, tmp_path: Path) -> None:
    """``$`` matches before a final newline: an event "ev_…\\n" was imported into a
    shared store and written as a file whose name ends in a line break."""
    db, events = shared_folder(tmp_path / "a", cli)
    document = eventfiles.fact_event(2, "a broken name")
    document["id"] += "\n"
    result = cli("--db", str(db), "import", "-", input=json.dumps(document) + "\n")
    assert_skipped(result, "no valid event 'id'")
    assert not any("\n" in path.name for path in events.rglob("*"))
