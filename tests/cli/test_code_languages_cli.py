"""The code bridge beyond Python through the CLI: ``code index`` of a mixed repository
(every language in one pass, a file without its grammar listed as skipped), then
anchoring, ``code-for`` and ``verify-staleness`` on a Go file, with snapshots of the
new index summary in Markdown and JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nervamem.code import treesitter
from nervamem.code.languages import SourceLanguage
from nervamem.code.treesitter import GrammarMissing
from tests.cli.test_code_cli import _masked, _ok
from tests.code.test_code_languages import FIXTURES, write_repo

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

Run = Callable[..., Any]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_repo(tmp_path / "repo", list(FIXTURES.values()))


@pytest.fixture
def db_path(repo: Path) -> Path:
    return repo / ".nervapack" / "memory.db"


def _without_rust(monkeypatch: pytest.MonkeyPatch) -> None:
    real = treesitter.load_grammar

    def load(language: SourceLanguage) -> object:
        if language.name == "Rust":
            raise GrammarMissing("no tree-sitter grammar for Rust is installed")
        return real(language)

    monkeypatch.setattr(treesitter, "load_grammar", load)


@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_code_index_of_a_mixed_repository_lists_languages_and_skipped_files(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, snapshot: Any, fmt: str
) -> None:
    _without_rust(monkeypatch)
    result = cli("code", "index", "--format", fmt)
    assert result.stderr == ""
    assert _masked(_ok(result), tmp_path) == snapshot


def test_code_index_json_names_each_skipped_file(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    _without_rust(monkeypatch)
    data = json.loads(_ok(cli("code", "index", "--format", "json")))
    assert data["skipped"] == [
        {
            "file_path": "src/auth/session.rs",
            "language": "Rust",
            "reason": "no tree-sitter grammar for Rust is installed",
        }
    ]
    assert data["languages"] == {
        "Go": 1,
        "Java": 1,
        "JavaScript": 1,
        "Python": 1,
        "TypeScript": 1,
    }
    assert data["files"] == 5


def test_a_go_method_anchored_edited_and_verified_through_the_cli(cli: Run, repo: Path) -> None:
    _ok(cli("code", "index"))
    memory = _ok(
        cli(
            "store",
            "decision",
            "Refresh stays cheap",
            "-e",
            "auth/session.go::SessionStore.Refresh",
        )
    )
    anchors = json.loads(_ok(cli("code-to", memory.strip(), "--format", "json")))["anchors"]
    assert [(a["graph_node_id"], a["start_line"], a["end_line"]) for a in anchors] == [
        ("auth/session.go::SessionStore.Refresh", 7, 9)
    ]
    found = json.loads(_ok(cli("code-for", "auth/session.go:8", "--format", "json")))
    assert [item["id"] for item in found["items"]] == [memory.strip()]
    assert json.loads(_ok(cli("verify-staleness", "--format", "json")))["stale"] == []

    path = repo / "auth" / "session.go"
    path.write_text(path.read_text().replace("1041", "1042"))
    stale = json.loads(_ok(cli("verify-staleness", "--format", "json")))["stale"]
    assert [(s["id"], s["reason"]) for s in stale] == [(memory.strip(), "source changed")]
