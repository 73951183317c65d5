"""Findings of the new-user review of the PostgreSQL engine (/work/notes/pg-review.md):
passwords in messages, near-miss URLs, purge leaving bytes in the server's files,
entity resolution and export order that differed from SQLite's, a non-UTF8 database,
NUL characters in an import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nervamem.cli import app as cli_app

SECRET = "s3cr3tpw"


def run(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> Any:
    return CliRunner().invoke(cli_app, list(args), env=env, input=input)


def one_error_line(result: Any) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return str(lines[0])


# ---------------------------------------------------------------------- credentials


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://agent:{SECRET}@[::1/memory",  # unclosed IPv6 bracket
        f"postgresql://agent@127.0.0.1:5432,[::1/memory?password={SECRET}",
        f"postgresql://agent:{SECRET[:4]} {SECRET[4:]}@localhost/memory",  # a space
        f"postgresql://agent:{SECRET}@localhost/memory?bogus_option=1",
    ],
)
@pytest.mark.parametrize("output", ["markdown", "json"])
def test_a_url_that_does_not_parse_is_refused_without_quoting_it(
    url: str, output: str, tmp_path: Path
) -> None:
    result = run("--db", url, "-f", output, "stats")
    assert result.exit_code == 2, result.output
    text = result.stdout + result.stderr
    for piece in (SECRET, SECRET[:4], SECRET[4:], "agent:"):
        assert piece not in text
    if output == "markdown":
        assert "does not parse" in one_error_line(result)
    assert not list(tmp_path.iterdir())  # nothing created


def test_no_part_of_a_password_with_an_unencoded_at_sign_is_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NERVAMEM_PG_CONNECT_TIMEOUT", "1")
    result = run("--db", "postgresql://agent:s3c@r3tpw@127.0.0.1:9/memory", "stats")
    assert result.exit_code == 1
    line = one_error_line(result)
    assert "r3tpw" not in line and "s3c" not in line
    assert "percent-encode" in line


@pytest.mark.parametrize(
    "value",
    [
        f"postgresql:/agent:{SECRET}@127.0.0.1:5432/memory",
        f"psql://agent:{SECRET}@127.0.0.1:5432/memory",
        f"postgressql://agent:{SECRET}@127.0.0.1:5432/memory",
        f" psql://agent:{SECRET}@127.0.0.1:5432/memory",
        f"file://agent:{SECRET}@x/memory.db",
    ],
)
@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_near_miss_url_is_refused_never_a_sqlite_path(
    value: str, how: str, tmp_path: Path
) -> None:
    if how == "option":
        result = run("--db", value, "init")
    else:
        result = run("init", env={"NERVAMEM_DB": value})
    assert result.exit_code == 2, result.output
    line = one_error_line(result)
    assert "not a postgresql://" in line and SECRET not in line
    assert not [p for p in tmp_path.rglob("*") if p.name not in ("home",)]


@pytest.mark.postgresql_only
@pytest.mark.parametrize("change", ["spaces", "upper", "newline"])
def test_a_pasted_url_with_spaces_or_an_upper_case_scheme_is_postgresql(
    db_path: str, change: str, tmp_path: Path
) -> None:
    url = {
        "spaces": f"  {db_path} ",
        "upper": "POSTGRESQL" + db_path[len("postgresql") :],
        "newline": db_path + "\n",
    }[change]
    result = run("--db", url, "-f", "json", "stats")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["db_path"].startswith("postgresql://")
    assert run("stats", env={"NERVAMEM_DB": url}).exit_code == 0
    assert not list(tmp_path.glob("*postgres*"))
