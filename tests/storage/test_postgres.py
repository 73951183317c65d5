"""What only a store on a PostgreSQL server has to show: choosing it by URL, its schema
and migrations, credentials kept out of every output, one winner of a supersession
race, lock and statement timeouts, a server that goes away mid-command, and moving a
store between engines. The rest of the core and CLI suites runs on both engines
(tests/conftest.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from nervamem import MemoryStore, writing
from nervamem.cli import app as cli_app
from nervamem.errors import (
    BadInputError,
    ConnectionLostError,
    SchemaTooNewError,
    SchemaUpgradeNeededError,
    StoreError,
    StoreLockedError,
)
from nervamem.locate import shown_url, url_without_password
from nervamem.storage.postgres import translate
from nervamem.storage.postgres.schema import MIGRATIONS, SCHEMA_VERSION
from tests.conftest import store_fingerprint

pytestmark = pytest.mark.postgresql_only

PASSWORD = "s3cret-pw"


def run(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> Any:
    return CliRunner().invoke(cli_app, list(args), env=env, input=input)


def one_error_line(result: Any) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return str(lines[0])


# ---------------------------------------------------------------------- choosing it


@pytest.mark.parametrize("variable", ["NERVAMEM_DB", "NERVAPACK_MEMORY_DB"])
def test_a_url_in_the_environment_selects_postgresql(
    db_path: str, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, db_path)
    stored = run("store", "fact", "kept on the server")
    assert stored.exit_code == 0, stored.stderr
    with MemoryStore(db_path) as store:
        assert store.engine == "postgresql"
        assert store.get(stored.stdout.strip()).content == "kept on the server"


def test_the_postgres_scheme_and_the_db_option_select_it_too(db_path: str) -> None:
    url = "postgres://" + db_path.split("://", 1)[1]
    stored = run("--db", url, "store", "fact", "by --db")
    assert stored.exit_code == 0, stored.stderr
    listed = run("--db", db_path, "list", "--format", "json")
    assert json.loads(listed.stdout)["items"][0]["content"] == "by --db", listed.stdout


def test_placeholders_are_translated_outside_quoted_text() -> None:
    assert translate("SELECT '?', \"a?\", x::text FROM t WHERE a = ? AND b LIKE '%x' % 2") == (
        "SELECT '?', \"a?\", x::text FROM t WHERE a = %s AND b LIKE '%%x' %% 2",
        None,
    )
    assert translate("SELECT ?2, ?1, ?2") == ("SELECT %s, %s, %s", (1, 0, 1))
    assert translate("SELECT :id, :fanout") == ("SELECT %(id)s, %(fanout)s", None)


@pytest.mark.parametrize(
    ("url", "shown", "for_a_file"),
    [
        (
            "postgresql://agent:p%40ss@db:5432/memory?sslmode=require&password=other",
            "postgresql://agent:***@db:5432/memory?sslmode=require&password=***",
            "postgresql://agent@db:5432/memory?sslmode=require",
        ),
        ("postgres://db/memory", "postgres://db/memory", "postgres://db/memory"),
    ],
)
def test_a_url_is_shown_without_its_password(url: str, shown: str, for_a_file: str) -> None:
    assert shown_url(url) == shown
    assert url_without_password(url) == for_a_file


def test_text_with_percent_signs_and_question_marks_round_trips(store: MemoryStore) -> None:
    text = "100% sure? it's '50%' of ?1 and :name -- not SQL"
    node_id = store.store("fact", text)
    assert store.get(node_id).content == text
    row = store.connection.execute(
        "SELECT content FROM mem_nodes WHERE content LIKE '%sure?%' AND id = ?", (node_id,)
    ).fetchone()
    assert row == (text,)


# ---------------------------------------------------------------------- schema


def test_init_creates_the_schema_once_and_shows_the_url_without_password(
    pg_server: Any,
) -> None:
    url = pg_server.fresh_url(password=PASSWORD)
    first = run("--db", url, "init", "--format", "json")
    second = run("--db", url, "init", "--format", "json")
    assert first.exit_code == second.exit_code == 0, first.stderr
    assert (json.loads(first.stdout)["created"], json.loads(second.stdout)["created"]) == (
        True,
        False,
    )
    assert json.loads(first.stdout)["db_path"] == shown_url(url)
    assert PASSWORD not in first.stdout + second.stdout + first.stderr


def test_migrations_are_recorded_in_order(store: MemoryStore) -> None:
    rows = store.connection.execute(
        "SELECT version, name FROM mem_migrations ORDER BY version"
    ).fetchall()
    assert rows == [(i, name) for i, (name, _) in enumerate(MIGRATIONS, start=1)]


def test_a_store_from_a_newer_nervamem_is_refused_untouched(db_path: str) -> None:
    MemoryStore(db_path).close()
    with psycopg.connect(db_path, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO mem_migrations (version, name, applied_at) VALUES (%s, 'm999', 'x')",
            (SCHEMA_VERSION + 1,),
        )
    before = store_fingerprint(db_path)
    with pytest.raises(SchemaTooNewError, match="upgrade nervamem"):
        MemoryStore(db_path)
    result = run("--db", db_path, "store", "fact", "x")
    assert result.exit_code == 1
    assert "newer than this nervamem" in one_error_line(result)
    assert store_fingerprint(db_path) == before


def test_a_store_that_needs_an_upgrade_is_refused_untouched_without_migrating(
    db_path: str,
) -> None:
    """The git hooks open the store without migrating (review F-6): an older schema
    fails at once, saying what to run, and nothing changes."""
    MemoryStore(db_path).close()
    with psycopg.connect(db_path, autocommit=True) as conn:
        conn.execute("DELETE FROM mem_migrations WHERE version = %s", (SCHEMA_VERSION,))
    before = store_fingerprint(db_path)
    with pytest.raises(SchemaUpgradeNeededError, match="run 'nervamem stats' once"):
        MemoryStore(db_path, migrate=False)
    result = run("--db", db_path, "stats", env={"NERVAMEM_NO_UPGRADE": "1"})
    assert result.exit_code == 1
    assert "needs a schema upgrade" in one_error_line(result)
    assert store_fingerprint(db_path) == before


def test_state_lives_in_the_database(db_path: str) -> None:
    with MemoryStore(db_path) as first:
        session = first.start_session("on machine one")
        first.switch_namespace("team")
        first.start_session("team work")
        first.switch_namespace("default")
    with MemoryStore(db_path) as second:  # another machine, same server
        assert (second.namespace, second.current().session) == ("default", session)


# ---------------------------------------------------------------------- credentials


def test_credentials_never_appear_in_output_errors_or_stats(pg_server: Any) -> None:
    url = pg_server.fresh_url(password=PASSWORD)
    seen = []
    for args in (
        ("store", "fact", "x"),
        ("stats",),
        ("stats", "--format", "json"),
        ("show", "f-ffff"),  # not found
        ("init", "--shared"),  # refused
        ("sync",),
        ("mcp", "--print-config", "claude-code"),
    ):
        result = run("--db", url, *args)
        seen.append(result.stdout + result.stderr)
    stats = json.loads(run("--db", url, "stats", "--format", "json").stdout)
    assert stats["db_path"] == shown_url(url) and ":***@" in stats["db_path"]
    assert not [text for text in seen if PASSWORD in text]
    assert url_without_password(url) in seen[-1]


def test_a_server_that_cannot_be_reached_is_one_line_without_the_password(
    pg_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NERVAMEM_PG_CONNECT_TIMEOUT", "1")
    url = f"postgresql://nervamem:{PASSWORD}@127.0.0.1:9/nervamem"  # discard port
    result = run("--db", url, "stats")
    assert result.exit_code == 1
    line = one_error_line(result)
    assert "cannot connect to postgresql://nervamem:***@127.0.0.1:9/nervamem" in line
    assert PASSWORD not in line


def test_a_bad_timeout_setting_is_bad_input(db_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NERVAMEM_PG_STATEMENT_TIMEOUT_MS", "soon")
    result = run("--db", db_path, "stats")
    assert result.exit_code == 2
    assert "NERVAMEM_PG_STATEMENT_TIMEOUT_MS" in one_error_line(result)


# ---------------------------------------------------------------------- team memory


@pytest.mark.parametrize("args", [("init", "--shared"), ("sync",)])
def test_event_files_are_for_sqlite_stores(db_path: str, args: tuple[str, ...]) -> None:
    result = run("--db", db_path, *args)
    assert result.exit_code == 2
    assert "PostgreSQL server" in one_error_line(result)


@pytest.mark.parametrize("direction", ["sqlite_to_postgresql", "postgresql_to_sqlite"])
def test_export_and_import_move_a_store_between_engines(
    db_path: str, tmp_path: Path, direction: str
) -> None:
    sqlite_file = tmp_path / "file" / "memory.db"
    source, target = (
        (str(sqlite_file), db_path)
        if direction == "sqlite_to_postgresql"
        else (db_path, str(sqlite_file))
    )
    with MemoryStore(source) as store:
        session = store.start_session("migration")
        auth = store.store("decision", "Use JWT", entities=["AuthService"], rationale="stateless")
        store.store("decision", "Use sessions", supersedes=auth, entities=["auth service"])
        gone = store.store("fact", "temporary note")
        store.forget(gone)
        store.store("fact", "in another namespace", namespace="other", valid_until="2030-01-01")
        store.end_session()
        assert session
    exported = tmp_path / "history.jsonl"
    result = run("--db", source, "export", "-o", str(exported))
    assert result.exit_code == 0, result.stderr
    imported = run("--db", target, "import", str(exported))
    assert imported.exit_code == 0, imported.stderr
    with MemoryStore(source) as before, MemoryStore(target) as after:
        assert after.canonical_state() == before.canonical_state()


# ---------------------------------------------------------------------- concurrency


def _in_thread(work: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    outcome: list[object] = []

    def target() -> None:
        try:
            outcome.append(work())
        except Exception as exc:  # the outcome under test
            outcome.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    return thread, outcome


def test_a_supersession_race_has_one_winner_and_a_clear_error(db_path: str) -> None:
    with MemoryStore(db_path) as setup:
        old = setup.store("fact", "the API listens on port 8080")
    first, second = MemoryStore(db_path), MemoryStore(db_path)
    try:
        with first.batch():
            winner = first.store("fact", "the API listens on 9090", supersedes=old)
            # The second writer starts while the first holds its transaction open: it
            # waits for the store's write lock, then finds the node superseded.
            thread, outcome = _in_thread(
                lambda: second.store("fact", "the API listens on 7070", supersedes=old)
            )
            thread.join(0.3)
            assert thread.is_alive(), "the second writer must wait, not write"
        thread.join(10)
        assert len(outcome) == 1 and isinstance(outcome[0], BadInputError)
        assert f"already superseded by {winner}" in str(outcome[0])
        successors = first.connection.execute(
            "SELECT src FROM mem_edges WHERE dst = ? AND kind = 'SUPERSEDES'", (old,)
        ).fetchall()
        assert successors == [(winner,)]
    finally:
        first.close()
        second.close()


def test_a_writer_that_cannot_get_the_lock_in_time_writes_nothing(db_path: str) -> None:
    holder, waiter = MemoryStore(db_path), MemoryStore(db_path, busy_timeout_ms=200)
    try:
        with holder.batch():
            holder.store("fact", "held")
            with pytest.raises(StoreLockedError, match="nothing was written"):
                waiter.store("fact", "never written")
        assert waiter.store("fact", "written once the lock is free")
        contents = {r[0] for r in holder.connection.execute("SELECT content FROM mem_nodes")}
        assert "never written" not in contents and "held" in contents
    finally:
        holder.close()
        waiter.close()


def test_a_statement_past_its_timeout_ends_the_command(
    db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    MemoryStore(db_path).close()  # the schema made first: DDL may take longer than 50 ms
    monkeypatch.setenv("NERVAMEM_PG_STATEMENT_TIMEOUT_MS", "50")
    with MemoryStore(db_path) as store:
        with pytest.raises(StoreError, match="NERVAMEM_PG_STATEMENT_TIMEOUT_MS"):
            store.connection.execute("SELECT pg_sleep(1)")
        assert store.store("fact", "the connection is usable again")


def test_sixteen_concurrent_writers_lose_no_acknowledged_write(db_path: str) -> None:
    """A fleet: 16 writers, each its own connection, storing at once; some name the same
    new entity. Every acknowledged ID is there, the entity exists once, and the only
    error allowed is the documented lock timeout (store_locked, exit 1)."""
    MemoryStore(db_path).close()
    writers, writes = 16, 6
    start = threading.Barrier(writers)
    acknowledged: list[str] = []
    errors: list[Exception] = []
    lock = threading.Lock()

    def writer(number: int) -> None:
        with MemoryStore(db_path) as store:
            start.wait()
            for index in range(writes):
                try:
                    node_id = store.store(
                        "fact",
                        f"writer {number} note {index}",
                        entities=["SharedService"] if index % 2 == 0 else [f"Own{number}"],
                    )
                except Exception as exc:
                    with lock:
                        errors.append(exc)
                else:
                    with lock:
                        acknowledged.append(node_id)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert all(isinstance(e, StoreLockedError) for e in errors), errors
    assert len(acknowledged) + len(errors) == writers * writes
    with MemoryStore(db_path) as store:
        present = {r[0] for r in store.connection.execute("SELECT id FROM mem_nodes")}
        assert set(acknowledged) <= present
        shared = store.connection.execute(
            "SELECT count(*) FROM mem_nodes WHERE kind = 'entity' AND content = 'SharedService'"
        ).fetchone()[0]
        assert shared == 1
        seqs = store.connection.execute("SELECT count(DISTINCT seq), count(*) FROM mem_nodes")
        distinct, total = seqs.fetchone()
        assert distinct == total


def test_sixteen_fresh_processes_store_at_once(db_path: str, tmp_path: Path) -> None:
    """The fleet as agents are started: 16 ``nervamem store`` processes released at once,
    each its own connection. Every one exits 0 with its ID (or, at worst, the documented
    store_locked), and every printed ID is in the store."""
    import os
    import subprocess
    import sys

    MemoryStore(db_path).close()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NERVAMEM_", "NERVAPACK_"))}
    env.update(HOME=str(tmp_path), NERVAMEM_DB=db_path, NERVAMEM_FORMAT="json")
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "nervamem",
                "store",
                "fact",
                f"agent {n} was here",
                "-e",
                "SharedService",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        for n in range(16)
    ]
    results = [(proc.wait(120), *proc.communicate()) for proc in procs]
    printed = []
    for code, out, err in results:
        if code == 0:
            printed.append(json.loads(out)["id"])
        else:
            assert code == 1 and '"store_locked"' in err, err
    with MemoryStore(db_path) as store:
        present = {r[0] for r in store.connection.execute("SELECT id FROM mem_nodes")}
        shared = store.connection.execute(
            "SELECT count(*) FROM mem_nodes WHERE kind = 'entity' AND tombstoned = 0"
        ).fetchone()[0]
    assert printed and set(printed) <= present
    assert shared == 1


# ---------------------------------------------------------------------- faults


def test_a_server_restart_mid_command_changes_nothing_and_the_next_command_works(
    db_path: str, pg_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with MemoryStore(db_path) as store:
        store.store("fact", "before the restart")
        before = store_fingerprint(db_path)
        with pytest.raises(StoreError, match="lost the connection"), store.batch():
            store.store("fact", "written, never committed")
            pg_server.restart()  # what a managed server's failover does
            store.store("fact", "the connection is gone")
        assert store_fingerprint(db_path) == before
        # The same object reconnects; a new process would simply connect.
        assert store.store("fact", "after the restart")
    monkeypatch.setenv("NERVAMEM_DB", db_path)
    assert run("recall", "restart", "--format", "json").exit_code == 0


def _terminate_own_backend(store: MemoryStore, pg_server: Any) -> Callable[[], None]:
    """A call that ends the store's server connection from another one, as a restart
    does, at the moment a test chooses: inside the write, after its savepoint."""
    backend = store.storage.connection.raw.info.backend_pid  # type: ignore[attr-defined]
    return lambda: pg_server.admin(f"SELECT pg_terminate_backend({backend})")


def test_a_connection_lost_inside_a_write_is_lost_the_connection_not_internal(
    db_path: str, pg_server: Any
) -> None:
    """Before, the write's ROLLBACK TO ran on the dead connection and its "the connection
    is closed" replaced the ConnectionLostError: an internal error (issue 35, item 6)."""
    with MemoryStore(db_path) as store:
        store.store("fact", "before the connection is lost")
        before = store_fingerprint(db_path)
        terminate = _terminate_own_backend(store, pg_server)

        def memories() -> Any:
            terminate()
            yield writing.NewMemory("fact", "written, never committed")

        with pytest.raises(ConnectionLostError, match="lost the connection"):
            store.store_many(memories())
        assert store_fingerprint(db_path) == before
        assert store.store("fact", "after the connection came back")


def test_a_cli_store_whose_connection_is_lost_mid_write_is_exit_1_and_one_line(
    db_path: str, pg_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    MemoryStore(db_path).close()
    before = store_fingerprint(db_path)
    add = writing._Writer.add

    def add_after_losing_the_connection(self: Any, memory: Any) -> str:
        backend = self.storage.connection.raw.info.backend_pid
        pg_server.admin(f"SELECT pg_terminate_backend({backend})")
        return add(self, memory)

    monkeypatch.setattr(writing._Writer, "add", add_after_losing_the_connection)
    result = run("--db", db_path, "store", "fact", "never committed", "--format", "json")
    assert result.exit_code == 1, result.stderr
    assert json.loads(one_error_line(result))["error"]["code"] == "store_unavailable"
    assert "lost the connection" in result.stderr
    monkeypatch.undo()
    assert store_fingerprint(db_path) == before


def test_a_server_that_goes_away_just_after_the_connect_is_exit_1_and_one_line(
    db_path: str, pg_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restart between the connect and the session's first statement (seen once in
    the stress run's restarts): before, that statement ran outside the error mapping and
    psycopg's error came out as an internal one."""
    MemoryStore(db_path).close()
    connect = psycopg.connect

    def connect_then_lose_it(*args: Any, **kwargs: Any) -> Any:
        raw = connect(*args, **kwargs)
        with connect(pg_server.url("postgres"), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (raw.info.backend_pid,))
        return raw

    monkeypatch.setattr(psycopg, "connect", connect_then_lose_it)
    result = run("--db", db_path, "store", "fact", "never written", "--format", "json")
    monkeypatch.undo()
    assert result.exit_code == 1, result.stderr
    error = json.loads(one_error_line(result))["error"]
    assert error["code"] == "store_unavailable" and "lost the connection" in error["message"]
    assert run("--db", db_path, "store", "fact", "the server is back").exit_code == 0


def test_a_server_that_went_away_is_exit_1_and_one_line(db_path: str, pg_server: Any) -> None:
    MemoryStore(db_path).close()
    pg_server.pg_ctl("stop")
    try:
        result = run("--db", db_path, "store", "fact", "nowhere to go")
    finally:
        pg_server.pg_ctl("start")
    assert result.exit_code == 1
    assert one_error_line(result).startswith("nervamem: error: cannot connect to postgresql://")
    assert run("--db", db_path, "store", "fact", "the server is back").exit_code == 0
