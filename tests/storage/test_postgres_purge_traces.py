"""A purge on PostgreSQL leaves no trace in the relation files of the database, made
deterministic (issue 21, round 5). A clean-clone CI run once found a purged text in a
relation file after the purge and a CHECKPOINT; two things a busy server does at
random put it there, and each test here forces one of them:

- ANALYZE (autovacuum's, or the store's after a bulk write) copies column values into
  pg_statistic (most common values, histograms), a catalog the purge's rewrite of its
  own tables does not touch;
- a transaction of another session older than the purge (an autovacuum ANALYZE of any
  table of the database, a client with a long snapshot) makes VACUUM FULL copy the
  deleted rows into the new files as "recently dead".

Every test runs on the real server of tests/pg_server.py and reads its data directory.
Each test purges words of its own: pg_statistic is one catalog for every schema of the
database, so a word left behind by one test must not fail another."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.storage.test_postgres import one_error_line, run
from tests.storage.test_postgres_parity import _checkpoint, _files_holding, _schema_of

pytestmark = pytest.mark.postgresql_only


def _forms(*words: str) -> list[bytes]:
    """Each word as stored and lower-cased (the search terms, aliases)."""
    return [form.encode() for word in words for form in (word, word.lower())]


def _store_secret(url: str, secret: str, entity: str) -> str:
    stored = run("--db", url, "store", "fact", f"{secret} purge me", "-e", entity)
    assert stored.exit_code == 0, stored.output
    kept = run("--db", url, "store", "fact", "an unrelated memory that stays", "-e", "Keeper")
    assert kept.exit_code == 0, kept.output
    return str(stored.stdout.strip())


def _analyze_every_table(url: str) -> None:
    """What autovacuum does to a table some time after writes: ANALYZE."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchall()
        for (table,) in tables:
            conn.execute(f"ANALYZE {table}")


def _relations_holding(url: str, data_dir: Path, needle: bytes) -> list[str]:
    """The relations whose files hold the needle, named (schema.name)."""
    import psycopg

    names = []
    with psycopg.connect(url, autocommit=True) as conn:
        for path in _files_holding(data_dir, needle):
            node = Path(path).name.split(".")[0].split("_")[0]
            row = None
            if node.isdigit():
                row = conn.execute(
                    "SELECT relnamespace::regnamespace || '.' || relname FROM pg_class "
                    "WHERE pg_relation_filenode(oid) = %s",
                    (int(node),),
                ).fetchone()
            names.append(row[0] if row else path)
    return names


def _purge(url: str, node: str) -> Any:
    return run("--db", url, "-f", "json", "forget", node, "--purge", "--yes")


def _assert_no_trace(result: Any, url: str, data_dir: Path, *words: str) -> None:
    """The purge succeeded, said nothing was left, and no relation file holds a word."""
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["files_not_scrubbed"] is None
    assert result.stderr == ""
    _checkpoint(url)
    for needle in _forms(*words):
        assert not _relations_holding(url, data_dir, needle), needle


def test_a_purge_after_analyze_leaves_no_copy_in_the_servers_statistics(
    db_path: str, pg_server: Any
) -> None:
    node = _store_secret(db_path, "NUMBATSECRET", "Numbatentity")
    _analyze_every_table(db_path)
    _checkpoint(db_path)
    assert "pg_catalog.pg_statistic" in _relations_holding(
        db_path, pg_server.data, b"NUMBATSECRET"
    )  # what the purge must reach: ANALYZE copied the content into the statistics

    _assert_no_trace(_purge(db_path, node), db_path, pg_server.data, "NUMBATSECRET", "Numbatentity")
    kept = run("--db", db_path, "recall", "unrelated memory")
    assert "an unrelated memory that stays" in kept.stdout  # the rest is still searchable


def test_a_statistics_object_someone_made_on_the_tables_is_rewritten_too(
    db_path: str, pg_server: Any
) -> None:
    """An administrator's CREATE STATISTICS keeps its most common values in
    pg_statistic_ext_data, another catalog."""
    import psycopg

    node = _store_secret(db_path, "QUOLLSECRET", "Quollentity")
    with psycopg.connect(db_path, autocommit=True) as conn:
        conn.execute(
            "CREATE STATISTICS mem_nodes_kind_content (mcv) ON kind, content FROM mem_nodes"
        )
    _analyze_every_table(db_path)
    _checkpoint(db_path)
    assert "pg_catalog.pg_statistic_ext_data" in _relations_holding(
        db_path, pg_server.data, b"QUOLLSECRET"
    )
    _assert_no_trace(_purge(db_path, node), db_path, pg_server.data, "QUOLLSECRET", "Quollentity")


def test_a_purge_waits_for_a_transaction_older_than_it_before_rewriting(
    db_path: str, pg_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another client of the database (another schema even) with a snapshot from before
    the purge: a rewrite while it is open would copy the deleted rows into the new
    files. The purge waits for it, within the busy timeout, then rewrites."""
    import psycopg

    node = _store_secret(db_path, "DUGONGSECRET", "Dugongentity")
    monkeypatch.setenv("NERVAMEM_BUSY_TIMEOUT_MS", "60000")
    holder = psycopg.connect(pg_server.fresh_url())
    holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    holder.execute("SELECT 1").fetchone()
    waiting = threading.Event()

    def end_when_the_purge_waits() -> None:
        with psycopg.connect(db_path, autocommit=True) as watcher:
            for _ in range(2000):
                if watcher.execute(
                    "SELECT EXISTS (SELECT 1 FROM pg_stat_activity "
                    "WHERE query LIKE '%%older than the purge%%' AND pid <> pg_backend_pid())"
                ).fetchone() == (True,):
                    waiting.set()
                    break
                threading.Event().wait(0.01)
        holder.rollback()

    ender = threading.Thread(target=end_when_the_purge_waits)
    ender.start()
    try:
        result = _purge(db_path, node)
    finally:
        ender.join()
        holder.close()
    assert waiting.is_set()  # the purge did wait for the older transaction
    _assert_no_trace(result, db_path, pg_server.data, "DUGONGSECRET", "Dugongentity")


def test_a_transaction_older_than_the_purge_past_the_busy_timeout_is_named(
    db_path: str, pg_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    node = _store_secret(db_path, "MARGAYSECRET", "Margayentity")
    monkeypatch.setenv("NERVAMEM_BUSY_TIMEOUT_MS", "300")
    with psycopg.connect(pg_server.fresh_url()) as holder:
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT 1").fetchone()
        pid = holder.info.backend_pid
        result = _purge(db_path, node)
        another = _store_secret(db_path, "SERVALSECRET", "Servalentity")
        text = run("--db", db_path, "forget", another, "--purge", "--yes")
    assert result.exit_code == 0, result.output
    reason = json.loads(result.stdout)["files_not_scrubbed"]
    assert f"older than the purge (process {pid})" in reason
    assert "VACUUM FULL mem_nodes" in reason
    assert run("--db", db_path, "show", node).exit_code == 3  # the purge committed
    assert text.exit_code == 0 and "not scrubbed" in one_error_line(text)

    monkeypatch.delenv("NERVAMEM_BUSY_TIMEOUT_MS")
    with psycopg.connect(db_path, autocommit=True) as conn:  # what the message says to run
        for table in reason.split("VACUUM FULL ", 1)[1].split(", "):
            conn.execute(f"VACUUM FULL {table}")
    _checkpoint(db_path)
    for needle in _forms("MARGAYSECRET", "Margayentity"):
        assert not _relations_holding(db_path, pg_server.data, needle), needle


def _owner_of_its_schema(db_path: str, pg_server: Any) -> str:
    """A URL whose role owns the store's schema and tables but not the database (nor is
    a superuser): it may rewrite its tables, not pg_statistic."""
    schema = _schema_of(db_path)
    role = f"own_{schema}"
    pg_server.admin(f"CREATE ROLE {role} LOGIN; ALTER SCHEMA {schema} OWNER TO {role}", "nervamem")
    return db_path.replace("postgresql://nervamem@", f"postgresql://{role}@", 1)


def test_a_role_that_may_not_rewrite_the_statistics_says_so_when_they_exist(
    db_path: str, pg_server: Any
) -> None:
    url = _owner_of_its_schema(db_path, pg_server)
    node = _store_secret(url, "OKAPISECRET", "Okapientity")
    _analyze_every_table(url)
    result = _purge(url, node)
    assert result.exit_code == 0, result.output
    reason = json.loads(result.stdout)["files_not_scrubbed"]
    assert "pg_statistic" in reason and "VACUUM FULL pg_statistic" in reason
    _checkpoint(db_path)
    for needle in _forms("OKAPISECRET", "Okapientity"):  # its own tables were rewritten
        holding = _relations_holding(db_path, pg_server.data, needle)
        assert set(holding) <= {"pg_catalog.pg_statistic"}, (needle, holding)

    another = _store_secret(url, "PANGOLINSECRET", "Pangolinentity")
    line = one_error_line(run("--db", url, "forget", another, "--purge", "--yes"))
    assert "pg_statistic" in line and "not scrubbed" in line

    pg_server.admin("VACUUM FULL pg_statistic", "nervamem")  # what the message says to run
    _checkpoint(db_path)
    assert not _files_holding(pg_server.data, b"OKAPISECRET")


def test_a_role_that_may_not_rewrite_the_statistics_is_silent_when_none_exist(
    db_path: str, pg_server: Any
) -> None:
    """A small store that nothing analysed (autovacuum waits for 50 changed rows):
    pg_statistic holds none of its values, and the purge is complete."""
    url = _owner_of_its_schema(db_path, pg_server)
    node = _store_secret(url, "TAPIRSECRET", "Tapirentity")
    _assert_no_trace(_purge(url, node), db_path, pg_server.data, "TAPIRSECRET", "Tapirentity")


@pytest.fixture(scope="module")
def server_past_an_epoch() -> Iterator[Any]:
    """A server of its own whose transaction IDs are past 2^32 (pg_resetwal sets the
    epoch), as on every server after its first 4.3 billion transactions."""
    from tests.pg_server import PgServer, PgUnavailable

    server = PgServer()
    try:
        server.start()
        server.pg_ctl("stop")
        server._run(str(server.bindir / "pg_resetwal"), "-e", "1", "-D", str(server.data))
        server.pg_ctl("start")
    except PgUnavailable as exc:
        server.stop()
        pytest.skip(f"PostgreSQL could not be started: {exc}")
    try:
        yield server
    finally:
        server.stop()


class _Recorded:
    """A connection that keeps the parameters of every statement it runs."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.parameters: list[Any] = []

    def execute(self, sql: str, parameters: Any = None) -> Any:
        self.parameters.append(parameters)
        return self.conn.execute(sql, parameters)


def test_the_wait_compares_32_bit_xids_past_the_first_epoch(server_past_an_epoch: Any) -> None:
    """The xid the wait compares with is given to the server as an xid: PostgreSQL 16
    and later refuse 2^32 or more there ("out of range for type xid"), so a scrub that
    passed an xid8's full value failed on every purge of a server past its first epoch
    (PostgreSQL 15, which the tests start, truncates it silently)."""
    import psycopg

    from nervamem.storage.postgres.scrub import older_transaction

    with psycopg.connect(server_past_an_epoch.url(), autocommit=True) as conn:
        assert int(conn.execute("SELECT pg_current_xact_id()::text").fetchone()[0]) >= 2**32
        recorded = _Recorded(conn)
        assert older_transaction(recorded, 1000) is None
    xids = [int(p["xid"]) for p in recorded.parameters if isinstance(p, dict) and "xid" in p]
    assert xids and all(0 < xid < 2**32 for xid in xids)


def test_a_purge_past_the_first_epoch_scrubs_the_files(server_past_an_epoch: Any) -> None:
    url = server_past_an_epoch.fresh_url()
    node = _store_secret(url, "NUMBATSECRET", "Numbatentity")
    _analyze_every_table(url)
    _assert_no_trace(
        _purge(url, node), url, server_past_an_epoch.data, "NUMBATSECRET", "Numbatentity"
    )
