"""CLI tests of consolidate and the code bridge through Typer's CliRunner: exit codes,
stdout and stderr apart, syrupy snapshots of the JSON and Markdown of every new command,
and a subprocess proof that ``store`` and ``recall`` never import NetworkX."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.code.test_codegraph import edit, make_repo

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

Run = Callable[..., Any]
SNAPSHOT_FORMATS = ("markdown", "json")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def db_path(repo: Path) -> Path:
    """The store lives in the repository, so the graph's paths are relative to it."""
    return repo / ".nervapack" / "memory.db"


def _masked(text: str, tmp_path: Path) -> str:
    return text.replace(str(tmp_path.resolve()), "<tmp>").replace(str(tmp_path), "<tmp>")


def _ok(result: Any) -> str:
    assert result.exit_code == 0, result.stderr
    return str(result.stdout)


@pytest.fixture
def anchored(cli: Run, repo: Path) -> dict[str, str]:
    """An indexed repository and four memories: three anchored, one about no code."""
    _ok(cli("code", "index"))
    stored = {
        "service": cli("store", "decision", "AuthService owns tokens", "-e", "AuthService"),
        "login": cli("store", "fact", "login returns a token", "-e", "AuthService.login"),
        "save": cli("store", "fact", "save is cached", "-e", "pkg.storage.save"),
        "plain": cli("store", "fact", "chose JWT", "-e", "JWT"),
    }
    return {key: _ok(result).strip() for key, result in stored.items()}


# ----------------------------------------------------------------------------- consolidate
@pytest.fixture
def finished_session(cli: Run) -> list[str]:
    _ok(cli("session", "start", "deploy work"))
    ids = [
        _ok(cli("store", "fact", text)).strip()
        for text in ("The deploy runs on push.", "the deploy runs on PUSH", "tests run nightly")
    ]
    _ok(cli("session", "end"))
    return ids


@pytest.mark.parametrize("fmt", SNAPSHOT_FORMATS)
def test_consolidate_formats(
    cli: Run, finished_session: list[str], snapshot: Any, fmt: str
) -> None:
    dry = cli("consolidate", "--dry-run", "--format", fmt)
    real = cli("consolidate", "--format", fmt)
    again = cli("consolidate", "--format", fmt)
    assert [r.exit_code for r in (dry, real, again)] == [0, 0, 0]
    assert (dry.stdout, real.stdout, again.stdout) == snapshot


def test_consolidate_json_contract(cli: Run, finished_session: list[str]) -> None:
    preview = json.loads(_ok(cli("consolidate", "--dry-run", "--format", "json")))
    assert preview["jobs_processed"] == 1
    assert preview["tombstoned"] == [finished_session[0]]
    assert preview["dry_run"] is True
    done = json.loads(_ok(cli("consolidate", "--format", "json")))
    assert {"jobs_processed", "tombstoned"} <= set(done)
    assert done["tombstoned"] == [finished_session[0]]
    assert json.loads(_ok(cli("consolidate", "--format", "json")))["jobs_processed"] == 0
    stats = json.loads(_ok(cli("stats", "--format", "json")))
    assert stats["pending_consolidation"] == 0 and stats["tombstoned"] == 1


def test_consolidate_table_and_unknown_strategy(cli: Run, finished_session: list[str]) -> None:
    table = cli("consolidate", "--dry-run", "--format", "table", env={"COLUMNS": "100"})
    assert table.exit_code == 0 and "1 pending job" in table.stdout
    # A real table: short IDs and the reason, no dump of the result's fields.
    assert "duplicate of" in table.stdout and "jobs_processed" not in table.stdout
    assert finished_session[0] not in table.stdout
    bad = cli("consolidate", "--strategy", "nope", "--format", "json")
    assert bad.exit_code == 2 and bad.stdout == ""
    assert json.loads(bad.stderr)["error"]["code"] == "bad_input"


# ----------------------------------------------------------------------------- code index
@pytest.mark.parametrize("fmt", SNAPSHOT_FORMATS)
def test_code_index_formats(cli: Run, repo: Path, tmp_path: Path, snapshot: Any, fmt: str) -> None:
    first = _ok(cli("code", "index", "--format", fmt))
    edit(repo / "pkg" / "storage.py", "return key", "return key.upper()")
    second = _ok(cli("code", "index", str(repo), "--format", fmt))
    assert (repo / ".nervapack" / "graph.graphml").is_file()
    assert (_masked(first, tmp_path), _masked(second, tmp_path)) == snapshot


def test_code_index_of_a_missing_folder_is_not_found(cli: Run) -> None:
    result = cli("code", "index", "nowhere")
    assert result.exit_code == 3
    assert result.stderr.startswith("nervamem: error: nowhere does not exist")


@pytest.mark.parametrize("blank", ["", "  "])
def test_code_index_of_a_blank_folder_is_bad_input(cli: Run, repo: Path, blank: str) -> None:
    """``code index "$DIR"`` with DIR unset indexed the whole project (exit 0), and
    blanks said " does not exist" (exit 3): a blank path is bad input (exit-codes.md)."""
    result = cli("code", "index", blank)
    assert result.exit_code == 2, result.stderr
    assert "blank" in result.stderr and result.stdout == ""
    assert not (repo / ".nervapack" / "graph.graphml").exists()


def test_code_index_of_a_symbolic_link_loop_is_bad_input(cli: Run, repo: Path) -> None:
    (repo / "loop_a").symlink_to(repo / "loop_b")
    (repo / "loop_b").symlink_to(repo / "loop_a")
    result = cli("code", "index", str(repo / "loop_a"))
    assert result.exit_code == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "internal" not in result.stderr
    assert not (repo / ".nervapack" / "graph.graphml").exists()
    assert not (repo / ".nervapack" / "memory.db").exists()


# ----------------------------------------------------------------------------- store
def test_store_prints_only_the_id_and_warns_of_ambiguity_on_stderr(cli: Run) -> None:
    _ok(cli("code", "index"))
    result = cli("store", "fact", "load never caches", "-e", "load")
    assert result.exit_code == 0
    assert result.stdout.strip().startswith("f_") and result.stdout.count("\n") == 1
    assert result.stderr == (
        "nervamem: warning: entity 'load' is ambiguous in the code graph: 2 symbols "
        "(pkg/auth.py::load, pkg/storage.py::load); anchored to each\n"
    )
    anchors = json.loads(_ok(cli("code-to", result.stdout.strip(), "--format", "json")))
    assert [a["graph_node_id"] for a in anchors["anchors"]] == [
        "pkg/auth.py::load",
        "pkg/storage.py::load",
    ]


def test_store_without_a_graph_is_silent(cli: Run) -> None:
    result = cli("store", "fact", "load never caches", "-e", "load")
    assert result.exit_code == 0 and result.stderr == ""


# ----------------------------------------------------------------------------- code-for
@pytest.mark.parametrize("fmt", SNAPSHOT_FORMATS)
def test_code_for_formats(cli: Run, anchored: dict[str, str], snapshot: Any, fmt: str) -> None:
    by_file = _ok(cli("code-for", "pkg/auth.py", "--format", fmt))
    by_line = _ok(cli("code-for", "pkg/auth.py:10", "--format", fmt))
    nothing = _ok(cli("code-for", "pkg/auth.py:2", "--format", fmt))
    assert (by_file, by_line, nothing) == snapshot


def test_code_for_json_contract(cli: Run, anchored: dict[str, str]) -> None:
    ids = anchored
    document = json.loads(_ok(cli("code-for", "pkg/auth.py:8", "--format", "json")))
    assert [item["id"] for item in document["items"]] == [ids["login"], ids["service"]]
    for item in document["items"]:
        assert {"id", "kind", "content"} <= set(item)
    by_file = json.loads(_ok(cli("code-for", "pkg/storage.py", "--format", "json")))
    assert [item["id"] for item in by_file["items"]] == [ids["save"]]


def test_code_for_bad_line_is_bad_input(cli: Run) -> None:
    result = cli("code-for", "pkg/auth.py:0")
    assert result.exit_code == 2 and "line numbers start at 1" in result.stderr


# ----------------------------------------------------------------------------- code-to
@pytest.mark.parametrize("fmt", SNAPSHOT_FORMATS)
def test_code_to_formats(cli: Run, anchored: dict[str, str], snapshot: Any, fmt: str) -> None:
    ids = anchored
    anchored_one = _ok(cli("code-to", ids["login"], "--format", fmt))
    unanchored = _ok(cli("code-to", ids["plain"], "--format", fmt))
    assert (anchored_one, unanchored) == snapshot


def test_code_to_json_contract_and_errors(cli: Run, anchored: dict[str, str]) -> None:
    ids = anchored
    document = json.loads(_ok(cli("code-to", ids["save"][:14], "--format", "json")))
    assert document["id"] == ids["save"]
    assert [
        {k: a[k] for k in ("file_path", "start_line", "end_line", "graph_node_id")}
        for a in document["anchors"]
    ] == [
        {
            "file_path": "pkg/storage.py",
            "start_line": 8,
            "end_line": 10,
            "graph_node_id": "pkg/storage.py::save",
        }
    ]
    missing = cli("code-to", "d_ffff", "--format", "json")
    assert missing.exit_code == 3 and missing.stdout == ""
    assert json.loads(missing.stderr)["error"]["code"] == "not_found"


# ----------------------------------------------------------------------------- staleness
@pytest.mark.parametrize("fmt", SNAPSHOT_FORMATS)
def test_verify_staleness_formats(
    cli: Run, anchored: dict[str, str], repo: Path, snapshot: Any, fmt: str
) -> None:
    fresh = _ok(cli("verify-staleness", "--format", fmt))
    edit(repo / "pkg" / "auth.py", 'f"token-{user}"', 'f"jwt-{user}"')
    edit(
        repo / "pkg" / "storage.py", "@functools.cache\ndef save(key, value):\n", "def put(k, v):\n"
    )
    stale = _ok(cli("verify-staleness", "--format", fmt))
    assert (fresh, stale) == snapshot


def test_verify_staleness_json_contract(cli: Run, anchored: dict[str, str], repo: Path) -> None:
    ids = anchored
    (repo / "pkg" / "storage.py").unlink()
    document = json.loads(_ok(cli("verify-staleness", "--format", "json")))
    assert document["checked"] == 3
    assert [{k: s[k] for k in ("id", "file_path", "reason")} for s in document["stale"]] == [
        {"id": ids["save"], "file_path": "pkg/storage.py", "reason": "file missing"}
    ]


def test_verify_staleness_exit_code_is_5_only_when_something_is_stale(
    cli: Run, anchored: dict[str, str], repo: Path
) -> None:
    fresh = cli("verify-staleness", "--exit-code", "--format", "json")
    assert fresh.exit_code == 0, fresh.stderr
    assert json.loads(fresh.stdout)["stale"] == []
    (repo / "pkg" / "storage.py").unlink()
    without_flag = cli("verify-staleness", "--format", "json")
    stale = cli("verify-staleness", "--exit-code", "--format", "json")
    assert without_flag.exit_code == 0
    assert stale.exit_code == 5
    assert stale.stdout == without_flag.stdout and stale.stderr == ""
    assert json.loads(stale.stdout)["stale"][0]["id"] == anchored["save"]


def test_table_renderings_work(cli: Run, anchored: dict[str, str]) -> None:
    ids = anchored
    for args in (
        ("code-for", "pkg/auth.py"),
        ("code-to", ids["login"]),
        ("verify-staleness",),
        ("code", "index"),
    ):
        result = cli(*args, "--format", "table")
        assert result.exit_code == 0, (args, result.stderr)
        assert result.stdout.strip()


def test_help_of_every_new_command_has_an_example(cli: Run) -> None:
    for args in (
        ("consolidate",),
        ("code", "index"),
        ("code-for",),
        ("code-to",),
        ("verify-staleness",),
    ):
        result = cli(*args, "--help")
        assert result.exit_code == 0 and "Example:" in result.stdout, args


# ----------------------------------------------------------------------------- start-up cost
PROBE = textwrap.dedent(
    """
    import sys
    from nervamem.cli import main
    try:
        main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
    else:
        code = 0
    sys.stderr.write(f"\\nexit={code} networkx={'networkx' in sys.modules}\\n")
    """
)


def _probe(repo: Path, *args: str) -> tuple[str, str]:
    env = {
        **os.environ,
        "NERVAPACK_MEMORY_DB": str(repo / ".nervapack" / "memory.db"),
        "NERVAMEM_FORMAT": "json",
    }
    completed = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=repo,
        timeout=120,
        check=False,
    )
    return completed.stdout, completed.stderr.strip().splitlines()[-1]


def test_store_and_recall_never_import_networkx(repo: Path) -> None:
    out, status = _probe(repo, "code", "index")
    assert status == "exit=0 networkx=True"  # only indexing needs it
    # Without the sidecar, anchoring must read the GraphML itself, still without NetworkX.
    (repo / ".nervapack" / "graph-index.sqlite").unlink()
    out, status = _probe(repo, "store", "decision", "AuthService owns tokens", "-e", "AuthService")
    assert status == "exit=0 networkx=False"
    node_id = json.loads(out)["id"]
    out, status = _probe(repo, "store", "fact", "login returns a token", "-e", "AuthService.login")
    assert status == "exit=0 networkx=False"
    out, status = _probe(repo, "recall", "tokens")
    assert status == "exit=0 networkx=False"
    assert node_id in {item["id"] for item in json.loads(out)["items"]}
    for args in (("code-to", node_id), ("code-for", "pkg/auth.py:8"), ("verify-staleness",)):
        out, status = _probe(repo, *args)
        assert status == "exit=0 networkx=False", args
    anchors = json.loads(_probe(repo, "code-to", node_id)[0])["anchors"]
    assert [a["graph_node_id"] for a in anchors] == ["pkg/auth.py::AuthService"]


@pytest.mark.parametrize("columns", ["100", "60"])
def test_code_tables_show_short_ids_and_no_python_reprs(
    cli: Run, anchored: dict[str, str], repo: Path, snapshot: Any, columns: str
) -> None:
    """Real tables at a wide and a 60-column terminal: short IDs, symbols with their
    lines, never a full ID, a dict or a tuple."""
    edit(repo / "pkg" / "auth.py", 'f"token-{user}"', 'f"jwt-{user}"')
    outputs = []
    for args in (("code-for", "pkg/auth.py"), ("code-to", anchored["login"]),
                 ("verify-staleness",)):  # fmt: skip
        result = cli(*args, "--format", "table", env={"COLUMNS": columns})
        text = _ok(result)
        assert max(len(line) for line in text.splitlines()) <= int(columns)
        assert "{'" not in text and "('" not in text and anchored["login"] not in text
        outputs.append(text)
    assert tuple(outputs) == snapshot


def test_timeline_is_readable_in_60_columns(cli: Run, anchored: dict[str, str]) -> None:
    text = _ok(cli("timeline", "login", "--format", "table", env={"COLUMNS": "60"}))
    assert "login returns a token" in text  # whole words, not 7-letter slivers


def test_anchoring_a_code_name_that_matches_nothing_warns(
    cli: Run, anchored: dict[str, str]
) -> None:
    result = cli("store", "fact", "init is lazy", "-e", "pkg/auth.py::_init")
    assert result.exit_code == 0
    assert result.stdout.strip().startswith("f_")
    assert "'pkg/auth.py::_init' matches nothing in the code graph" in result.stderr
    # A plain word may name something that is not code: no warning.
    plain = cli("store", "fact", "tokens are JWTs", "-e", "JWT")
    assert (plain.exit_code, plain.stderr) == (0, "")


def test_code_for_a_line_labels_the_symbol_with_todays_lines(
    cli: Run, anchored: dict[str, str], repo: Path
) -> None:
    # Three lines above the class: login moves from lines 7-8 to 10-11.
    edit(repo / "pkg" / "auth.py", '"""Authentication."""\n', '"""Authentication."""\n\n\n\n')
    text = _ok(cli("code-for", "pkg/auth.py:10", "--format", "markdown"))
    assert "AuthService.login L10-11" in text
    document = json.loads(_ok(cli("code-for", "pkg/auth.py:10", "--format", "json")))
    login = next(item for item in document["items"] if item["id"] == anchored["login"])
    assert (login["anchors"][0]["start_line"], login["anchors"][0]["end_line"]) == (10, 11)


@pytest.mark.parametrize("line", ["\N{SUPERSCRIPT ONE}", "9" * 5000])
def test_code_for_a_line_int_refuses_is_no_internal_error(cli: Run, line: str) -> None:
    """'¹' is a digit to str.isdigit but not to int(), and int() refuses 4,300 digits:
    neither may end in an internal error."""
    _ok(cli("code", "index"))
    result = cli("code-for", f"pkg/auth.py:{line}", "--format", "json")
    assert result.exit_code in (0, 2), result.stderr
    assert "internal" not in result.stderr


def test_code_commands_in_a_deleted_working_folder_given_the_store(
    cli: Run, anchored: dict[str, str], repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the store named (as NERVAPACK_MEMORY_DB here), code-for needs no working
    folder (a relative path is read from the root) and code index falls back on the
    store's project; both were internal errors or a wrong 'give --db'."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    for target in ("pkg/storage.py", str(repo / "pkg" / "storage.py")):
        result = cli("code-for", target, "--format", "json")
        assert result.exit_code == 0, result.stderr
        assert [item["id"] for item in json.loads(result.stdout)["items"]] == [anchored["save"]]
    indexed = cli("code", "index", "--format", "json")
    assert indexed.exit_code == 0, indexed.stderr
    assert json.loads(indexed.stdout)["root"] == str(repo.resolve())
