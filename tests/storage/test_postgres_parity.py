"""Findings of the new-user review of the PostgreSQL engine (/work/notes/pg-review.md):
passwords in messages, near-miss URLs, purge leaving bytes in the server's files,
entity resolution and export order that differed from SQLite's, a non-UTF8 database,
NUL characters in an import, help texts, hooks, print-config, server time, the MCP
server after a restart. Most run on both engines: the point is the same result."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.storage.test_postgres import one_error_line, run

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

SECRET = "s3cr3tpw"


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


# ---------------------------------------------------------------------- purge


def _files_holding(data_dir: Path, needle: bytes) -> list[str]:
    found = []
    for path in (data_dir / "base").rglob("*"):
        if path.is_file() and needle in path.read_bytes():
            found.append(str(path.relative_to(data_dir)))
    return found


def _checkpoint(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")


@pytest.mark.postgresql_only
def test_a_purge_leaves_no_trace_in_the_servers_relation_files(
    db_path: str, pg_server: Any
) -> None:
    stored = run("--db", db_path, "store", "fact", "QUOKKASECRET purge me", "-e", "Quokkaentity")
    assert stored.exit_code == 0, stored.output
    run("--db", db_path, "store", "fact", "an unrelated memory that stays")
    _checkpoint(db_path)
    assert _files_holding(pg_server.data, b"QUOKKASECRET")  # the check sees it before
    result = run("--db", db_path, "-f", "json", "forget", stored.stdout.strip(), "--purge", "--yes")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["files_not_scrubbed"] is None
    assert result.stderr == ""
    _checkpoint(db_path)
    for needle in (b"QUOKKASECRET", b"quokkasecret", b"Quokkaentity", b"quokkaentity"):
        assert not _files_holding(pg_server.data, needle), needle


def _schema_of(url: str) -> str:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT current_schema()").fetchone()
    assert row is not None
    return str(row[0])


@pytest.mark.postgresql_only
def test_a_role_that_may_not_rewrite_the_tables_purges_and_says_what_to_run(
    db_path: str, pg_server: Any
) -> None:
    assert run("--db", db_path, "init").exit_code == 0
    schema = _schema_of(db_path)
    role = f"rw_{schema}"
    pg_server.admin(
        f"CREATE ROLE {role} LOGIN; GRANT USAGE ON SCHEMA {schema} TO {role}; "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}; "
        f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO {role}",
        "nervamem",
    )
    as_rw = db_path.replace("postgresql://nervamem@", f"postgresql://{role}@", 1)
    node = run("--db", as_rw, "store", "fact", "WALLABY purge as a writer").stdout.strip()
    assert node
    text = run("--db", as_rw, "forget", node, "--purge", "--yes")
    assert text.exit_code == 0, text.output
    assert text.stdout.startswith("purged ")
    line = one_error_line(text)
    assert "not scrubbed" in line and "VACUUM FULL mem_nodes" in line and "owner" in line
    assert run("--db", db_path, "show", node).exit_code == 3  # the purge committed

    node = run("--db", as_rw, "store", "fact", "WALLABY again").stdout.strip()
    as_json = run("--db", as_rw, "-f", "json", "forget", node, "--purge", "--yes")
    assert as_json.exit_code == 0
    assert "VACUUM FULL" in json.loads(as_json.stdout)["files_not_scrubbed"]


@pytest.mark.postgresql_only
def test_a_purge_whose_rewrite_waits_on_a_lock_still_reports_the_committed_purge(
    db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    node = run("--db", db_path, "store", "fact", "WOMBAT purge under lock").stdout.strip()
    monkeypatch.setenv("NERVAMEM_BUSY_TIMEOUT_MS", "300")
    with psycopg.connect(db_path) as reader:  # a reader in an open transaction
        reader.execute("SELECT count(*) FROM mem_nodes").fetchone()
        result = run("--db", db_path, "-f", "json", "forget", node, "--purge", "--yes")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["purged"] is True
    assert "lock" in json.loads(result.stdout)["files_not_scrubbed"]
    assert "not scrubbed" in one_error_line(result)
    assert run("--db", db_path, "show", node).exit_code == 3


# ---------------------------------------------------------------------- engine parity


def test_store_e_gives_the_same_entities_on_both_engines(db_path: Path | str) -> None:
    db = str(db_path)
    names = ["Résumé Parser", "resume parser", "Generality", "generous"]
    names += ["Naïve Bayes", "naive bayes", "Über Client", "uber client", "Café", "cafe"]
    for name in names:
        assert run("--db", db, "store", "fact", "entity probe", "-e", name).exit_code == 0
    # Two names in one command: the second is resolved before the first is indexed.
    assert (
        run("--db", db, "store", "fact", "one call", "-e", "Zoë Ops", "-e", "zoe ops").exit_code
        == 0
    )
    listed = run("--db", db, "-f", "json", "list", "--kind", "entity")
    assert listed.exit_code == 0, listed.output
    found = sorted(item["content"] for item in json.loads(listed.stdout)["items"])
    # What SQLite's FTS5 (unicode61 remove_diacritics 2, porter) resolves; Porter makes
    # "generous" the existing "Generality" (the review's side note, both engines alike).
    assert found == ["Café", "Generality", "Naïve Bayes", "Résumé Parser", "Zoë Ops", "Über Client"]


ENTITY_NAMES = ("API Gateway", "Über Client", "auth-service v2", "Zed_Proxy")


def _nocase_key(alias: str) -> bytes:
    """SQLite's NOCASE: ASCII letters folded, then byte order."""
    return alias.translate({c: c + 32 for c in range(65, 91)}).encode()


def test_aliases_are_ordered_and_lower_cased_as_sqlite_nocase(
    make_store: Any, db_path: Path | str, tmp_path: Path
) -> None:
    memory = make_store()
    for name in ENTITY_NAMES:
        memory.store("fact", f"about {name}", entities=[name])
    alias_rows = [
        json.loads(line)
        for line in memory.canonical_state().splitlines()
        if line.startswith('["alias"')
    ]
    lowered = [row[2] for row in alias_rows]
    assert {"api-gateway", "api_gateway", "Über client"} <= set(lowered)
    assert lowered == sorted(lowered, key=_nocase_key)
    assert all(alias == _nocase_key(alias).decode() for alias in lowered)
    memory.close()
    out = tmp_path / "export.jsonl"
    assert run("--db", str(db_path), "export", "-o", str(out)).exit_code == 0
    for line in out.read_text().splitlines():  # one event per moment: its aliases in order
        exported = [c["alias"] for c in json.loads(line)["changes"] if c["type"] == "alias"]
        assert exported == sorted(exported, key=_nocase_key)


@pytest.mark.postgresql_only
def test_an_export_moved_to_postgresql_and_back_is_byte_identical(
    db_path: str, tmp_path: Path
) -> None:
    from nervamem import MemoryStore

    sqlite_db = tmp_path / "sq.db"
    for name in ENTITY_NAMES:
        assert run("--db", str(sqlite_db), "store", "fact", "probe", "-e", name).exit_code == 0
    first, again = tmp_path / "from-sqlite.jsonl", tmp_path / "from-pg.jsonl"
    assert run("--db", str(sqlite_db), "export", "-o", str(first)).exit_code == 0
    assert run("--db", db_path, "import", str(first)).exit_code == 0
    assert run("--db", db_path, "export", "-o", str(again)).exit_code == 0
    assert again.read_bytes() == first.read_bytes()
    with MemoryStore(sqlite_db) as on_sqlite, MemoryStore(db_path) as on_pg:
        assert on_pg.canonical_state() == on_sqlite.canonical_state()


# ---------------------------------------------------------------------- encodings, NUL


@pytest.mark.postgresql_only
def test_a_database_not_in_utf8_is_refused_before_anything_is_created(pg_server: Any) -> None:
    import psycopg

    name = f"latin_{uuid.uuid4().hex[:12]}"
    pg_server.admin(
        f"CREATE DATABASE {name} ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"
    )
    url = pg_server.url(name)
    for args in (
        ("init",),
        ("store", "fact", "rocket 🚀 Ωmega"),
        ("-f", "json", "recall", "Ωmega"),
    ):
        result = run("--db", url, *args)
        assert result.exit_code == 1, result.output
        if args[0] != "-f":
            line = one_error_line(result)
            assert "LATIN1" in line and "UTF8" in line and "internal" not in line
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'mem_%'").fetchone()
    assert row == (0,)


NUL_EVENT = {
    "changes": [
        {
            "confidence": 1.0,
            "content": "has nul \u0000 here",
            "data": {},
            "id": "f_001a23c8335c87b1affff7b2aaaaa",
            "kind": "fact",
            "namespace": "default",
            "recorded_at": "2026-12-03T15:26:12.195Z",
            "type": "node",
            "valid_from": "2026-12-03T15:26:12.195Z",
        }
    ],
    "format": 1,
    "id": "ev_001a23c8333a06024c0925262aaaa",
    "recorded_at": "2026-12-03T15:26:12.195Z",
}
GOOD_EVENT = json.loads(
    json.dumps(NUL_EVENT)
    .replace("has nul \\u0000 here", "a fine memory")
    .replace("f_001a23c8335c87b1affff7b2aaaaa", "f_001a23c8335c87b1affff7b2aaaab")
    .replace("ev_001a23c8333a06024c0925262aaaa", "ev_001a23c8333a06024c0925262aaab")
)


def test_import_skips_an_event_with_a_nul_character_as_store_would(
    db_path: Path | str, tmp_path: Path
) -> None:
    source = tmp_path / "nul.jsonl"
    source.write_text(json.dumps(NUL_EVENT) + "\n" + json.dumps(GOOD_EVENT) + "\n")
    result = run("--db", str(db_path), "-f", "json", "import", str(source))
    assert result.exit_code == 4, result.output
    report = json.loads(result.stdout)
    assert report["imported"] == 1
    assert len(report["problems"]) == 1
    assert "NUL" in report["problems"][0]["reason"]
    listed = json.loads(run("--db", str(db_path), "-f", "json", "list").stdout)
    assert [item["content"] for item in listed["items"]] == ["a fine memory"]


# ---------------------------------------------------------------------- help texts


@pytest.mark.parametrize("command", [(), ("init",)])
def test_help_says_the_store_may_be_a_postgresql_database(command: tuple[str, ...]) -> None:
    result = run(*command, "--help")
    assert result.exit_code == 0
    summary = " ".join(result.stdout.split("Options:")[0].split())
    assert "postgresql://" in summary and "in one SQLite file." not in summary


# ---------------------------------------------------------------------- hooks, print-config


@pytest.mark.postgresql_only
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_hooks_install_with_a_url_needs_nervamem_db_to_name_it(
    pg_server: Any, tmp_path: Path
) -> None:
    url = pg_server.fresh_url(password=SECRET)
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    refused = run("--db", url, "hooks", "install", "--repo", str(repo))
    assert refused.exit_code == 2, refused.output
    line = one_error_line(refused)
    assert "NERVAMEM_DB=postgresql://nervamem@" in line and SECRET not in line
    assert not (repo / ".git" / "hooks" / "post-commit").exists()
    done = run("--db", url, "hooks", "install", "--repo", str(repo), env={"NERVAMEM_DB": url})
    assert done.exit_code == 0, done.output
    assert (repo / ".git" / "hooks" / "post-commit").exists()


@pytest.mark.postgresql_only
def test_print_config_says_when_it_left_a_password_out(pg_server: Any) -> None:
    with_password = run(
        "--db", pg_server.fresh_url(password=SECRET), "mcp", "--print-config", "claude-code"
    )
    assert with_password.exit_code == 0 and SECRET not in with_password.output
    assert "password is left out" in with_password.stderr and "PGPASSWORD" in with_password.stderr
    without = run("--db", pg_server.fresh_url(), "mcp", "--print-config", "claude-code")
    assert without.exit_code == 0 and "password" not in without.stderr


# ---------------------------------------------------------------------- clocks


@pytest.mark.postgresql_only
def test_a_machine_whose_clock_is_behind_still_supersedes_on_a_shared_server(
    db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import datetime, timedelta, timezone

    import nervamem.storage.postgres as pg
    from nervamem import MemoryStore

    with MemoryStore(db_path) as machine_a:
        first = machine_a.store("fact", "deploy window is Friday 18:00 UTC")
    behind = datetime.now(timezone.utc) - timedelta(minutes=10)
    monkeypatch.setattr(pg, "_utc_now", lambda: behind)
    with MemoryStore(db_path) as machine_b:
        second = machine_b.store("fact", "deploy window moved to Thursday", supersedes=first)
    # Stored, not refused as "valid before" the first; its time is the server's.
    shown = json.loads(run("--db", db_path, "-f", "json", "show", second).stdout)
    assert shown["nodes"][0]["recorded_at"] > behind.isoformat()[:19]


def test_a_supersession_before_the_old_node_on_the_same_day_shows_the_times(
    make_store: Any,
) -> None:
    from nervamem.errors import BadInputError

    memory = make_store()
    first = memory.store("fact", "old truth", valid_from="2026-07-03T15:30:00Z")
    with pytest.raises(BadInputError) as caught:
        memory.store("fact", "new truth", valid_from="2026-07-03T15:20:00Z", supersedes=first)
    assert "2026-07-03T15:20:00" in str(caught.value) and "2026-07-03T15:30:00" in str(caught.value)


# ---------------------------------------------------------------------- MCP


@pytest.mark.postgresql_only
def test_the_mcp_server_reconnects_after_a_server_restart_and_answers(
    db_path: str, pg_server: Any
) -> None:
    from nervamem.mcp_server.tools import MemoryServer

    server = MemoryServer(db_path)
    try:
        stored = server.call("memory_store", {"kind": "fact", "content": "kept across restart"})
        assert not stored.is_error, stored
        pg_server.restart()  # every open connection is gone
        recalled = server.call("memory_recall", {"query": "kept across restart"})
        assert not recalled.is_error, recalled
        assert "kept across restart" in recalled.text
        pg_server.restart()
        again = server.call("memory_store", {"kind": "fact", "content": "after a second restart"})
        assert not again.is_error, again
    finally:
        server.close()
    listed = json.loads(run("--db", db_path, "-f", "json", "list").stdout)
    assert sorted(item["content"] for item in listed["items"]) == [
        "after a second restart",
        "kept across restart",
    ]
