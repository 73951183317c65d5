"""The code bridge tells the truth (issue 37), through the CLI on a real git repository:
every view that shows an anchor says what became of its code (fresh, moved, changed,
removed, file missing), a formatter run is no change, and a name that anchors nothing
is said so."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_code_cli import _ok

Run = Callable[..., Any]

SOCKET_GO = """\
package persistenthttps

import "os"

// Socket is where the proxy listens.
type Socket struct {
\tpath string
}

func defaultDir() string {
\thome := os.Getenv("HOME")
\tif home == "" {
\t\treturn "/tmp"
\t}
\treturn home + "/.cache"
}

func (s *Socket) Path() string {
\treturn s.path
}
"""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "persistent-https").mkdir(parents=True)
    (repo / "persistent-https" / "socket.go").write_text(SOCKET_GO)
    (repo / ".nervapack").mkdir()
    _git(repo, "init", "-q")
    _git(repo, "add", "persistent-https/socket.go")
    return repo


@pytest.fixture
def db_path(repo: Path) -> Path:
    return repo / ".nervapack" / "memory.db"


@pytest.fixture
def socket_go(repo: Path) -> Path:
    return repo / "persistent-https" / "socket.go"


def _store(cli: Run, text: str, *entities: str) -> str:
    args = [arg for name in entities for arg in ("-e", name)]
    return _ok(cli("store", "fact", text, *args)).strip()


def _anchor(document: dict[str, Any]) -> dict[str, Any]:
    anchors = document["anchors"] if "anchors" in document else document["items"][0]["anchors"]
    assert len(anchors) == 1, anchors
    return dict(anchors[0])


def _views(cli: Run, memory: str) -> dict[str, dict[str, Any]]:
    """The anchor of ``memory`` as code-for, code-to and show give it in JSON."""
    code_for = json.loads(_ok(cli("code-for", "persistent-https/socket.go", "--format", "json")))
    code_to = json.loads(_ok(cli("code-to", memory, "--format", "json")))
    show = json.loads(_ok(cli("show", memory, "--format", "json")))["nodes"][0]
    return {"code-for": _anchor(code_for), "code-to": _anchor(code_to), "show": _anchor(show)}


def test_a_renamed_symbol_is_shown_removed_everywhere_not_at_lines_now_someone_elses(
    cli: Run, socket_go: Path
) -> None:
    _ok(cli("code", "index"))
    memory = _store(cli, "defaultDir falls back to /tmp", "defaultDir")
    assert {view: a["state"] for view, a in _views(cli, memory).items()} == dict.fromkeys(
        ("code-for", "code-to", "show"), "fresh"
    )
    socket_go.write_text(SOCKET_GO.replace("defaultDir", "defaultDirectory"))
    views = _views(cli, memory)
    for view, anchor in views.items():
        assert (view, anchor["state"], anchor["lines_now"]) == (view, "removed", None)
        assert anchor["lines_recorded"] == [10, 16]
    text = _ok(cli("code-for", "persistent-https/socket.go", "--format", "markdown"))
    # Lines 10-16 now belong to defaultDirectory: they are not shown as defaultDir's.
    assert "(defaultDir — removed since anchored (was L10-16))" in text
    assert "defaultDir L10-16" not in text
    to_text = _ok(cli("code-to", memory, "--format", "markdown"))
    assert "defaultDir via entity defaultDir — removed since anchored (was L10-16)" in to_text
    show_text = _ok(cli("show", memory, "--format", "markdown"))
    assert "removed since anchored" in show_text
    # The same check as verify-staleness: they never disagree.
    stale = json.loads(_ok(cli("verify-staleness", "--format", "json")))["stale"]
    assert [(s["id"], s["reason"]) for s in stale] == [(memory, "symbol removed")]


def test_moved_code_shows_both_its_recorded_and_its_present_lines(
    cli: Run, socket_go: Path
) -> None:
    _ok(cli("code", "index"))
    memory = _store(cli, "defaultDir falls back to /tmp", "defaultDir")
    socket_go.write_text(SOCKET_GO.replace('import "os"\n', 'import "os"\n\n\n\n'))
    for view, anchor in _views(cli, memory).items():
        assert (view, anchor["state"], anchor["lines_recorded"], anchor["lines_now"]) == (
            view,
            "moved",
            [10, 16],
            [13, 19],
        )
    # code-to lists the recorded lines, code-for today's: each says which is which.
    to_text = _ok(cli("code-to", memory, "--format", "markdown"))
    assert "socket.go:10-16 · function defaultDir" in to_text
    assert "moved: L10-16 when anchored, L13-19 now" in to_text
    for_text = _ok(cli("code-for", "persistent-https/socket.go", "--format", "markdown"))
    assert "defaultDir L13-19 — moved: L10-16 when anchored, L13-19 now" in for_text
    table = _ok(cli("code-to", memory, "--format", "table", env={"COLUMNS": "200"}))
    assert "moved" in table
    assert json.loads(_ok(cli("verify-staleness", "--format", "json")))["stale"] == []


def test_changed_and_missing_code_is_marked_in_code_for_and_code_to(
    cli: Run, socket_go: Path
) -> None:
    _ok(cli("code", "index"))
    memory = _store(cli, "defaultDir falls back to /tmp", "defaultDir")
    socket_go.write_text(SOCKET_GO.replace('"/tmp"', '"/var/tmp"'))
    views = _views(cli, memory)
    assert {a["state"] for a in views.values()} == {"changed"}
    assert views["code-to"]["lines_now"] == [10, 16]
    assert "defaultDir via entity defaultDir — changed since anchored\n" in _ok(
        cli("code-to", memory, "--format", "markdown")
    )
    socket_go.unlink()
    anchor = _anchor(json.loads(_ok(cli("code-to", memory, "--format", "json"))))
    assert (anchor["state"], anchor["lines_now"]) == ("file missing", None)
    assert "— file missing" in _ok(cli("code-to", memory, "--format", "markdown"))


def test_gofmt_over_the_file_reports_no_anchor_changed(cli: Run, socket_go: Path) -> None:
    """What gofmt does to code written by hand: indentation, spacing, alignment and the
    place of comments change; the code does not."""
    _ok(cli("code", "index"))
    memories = [
        _store(cli, "defaultDir falls back to /tmp", "defaultDir"),
        _store(cli, "Path is the socket's path", "Socket.Path"),
        _store(cli, "Socket holds a path", "Socket"),
    ]
    formatted = (
        SOCKET_GO.replace("\t", "    ")
        .replace('if home == "" {', 'if home=="" { // none')
        .replace("path string", "path     string  /* where */")
        .replace("func (s *Socket) Path() string {", "func (s *Socket)  Path()  string{")
    )
    socket_go.write_text(formatted)
    result = cli("verify-staleness", "--exit-code", "--format", "json")
    assert result.exit_code == 0, result.stdout
    report = json.loads(result.stdout)
    assert (report["anchors_checked"], report["stale"]) == (3, [])
    for memory in memories:
        assert _anchor(json.loads(_ok(cli("code-to", memory, "--format", "json"))))["state"] in (
            "fresh",
            "moved",
        )
    socket_go.write_text(formatted.replace("return s.path", 'return s.path + "/"'))
    stale = json.loads(_ok(cli("verify-staleness", "--format", "json")))["stale"]
    assert [(s["id"], s["reason"]) for s in stale] == [(memories[1], "source changed")]


# ----------------------------------------------------------------------------- anchoring
def test_a_symbol_just_renamed_is_anchored_by_store_without_a_code_index(
    cli: Run, socket_go: Path
) -> None:
    _ok(cli("code", "index"))
    socket_go.write_text(SOCKET_GO.replace("defaultDir", "defaultDirectory"))
    result = cli("store", "fact", "defaultDirectory is under HOME", "-e", "defaultDirectory")
    assert result.exit_code == 0
    memory = result.stdout.strip()
    assert "re-indexed 1 changed file of the code graph before anchoring" in result.stderr
    assert "warning" not in result.stderr
    anchor = _anchor(json.loads(_ok(cli("code-to", memory, "--format", "json"))))
    assert (anchor["qualname"], anchor["state"]) == ("defaultDirectory", "fresh")


def test_a_name_that_matches_nothing_is_said_so_and_a_later_index_anchors_it(
    cli: Run, socket_go: Path
) -> None:
    _ok(cli("code", "index"))
    result = cli(
        "store", "fact", "socketMode is 0600", "-e", "socketMode", "-e", "JWT", "--format", "json"
    )
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert document["unresolved"] == ["socketMode", "JWT"]
    assert "'socketMode' matches nothing in the code graph" in result.stderr
    assert "JWT" not in result.stderr  # a plain word may be no code at all
    assert json.loads(_ok(cli("code-to", document["id"], "--format", "json")))["anchors"] == []
    # Anchored memories are untouched by a later index; this one is anchored by it.
    other = _store(cli, "Path is the socket's path", "Socket.Path")
    socket_go.write_text(SOCKET_GO + "\nfunc socketMode() int {\n\treturn 0o600\n}\n")
    index = _ok(cli("code", "index", "--format", "markdown"))
    assert "Anchored 1 memory whose entity names now resolve in the code." in index
    anchor = _anchor(json.loads(_ok(cli("code-to", document["id"], "--format", "json"))))
    assert (anchor["qualname"], anchor["state"]) == ("socketMode", "fresh")
    assert len(json.loads(_ok(cli("code-to", other, "--format", "json")))["anchors"]) == 1
    socket_go.write_text(SOCKET_GO + "\nfunc socketMode() int {\n\treturn 0o644\n}\n")
    assert json.loads(_ok(cli("code", "index", "--format", "json")))["anchored"] == 0
