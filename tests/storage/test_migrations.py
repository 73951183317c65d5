"""The migration runner both engines share (StorageBase.migrate_schema): the names it
records are the history existing stores hold, and a store left at any older SQLite
version migrates to exactly the file the per-engine loop it replaced wrote."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from nervamem import MemoryStore
from nervamem.storage import sqlite
from nervamem.storage.postgres import schema as postgres_schema
from nervamem.storage.sqlite import migrations
from nervamem.storage.sqlite import sql as sqlite_sql
from tests.storage.test_edges_by_seq import populate

pytestmark = pytest.mark.sqlite_only  # the SQLite file's own tables

# What mem_migrations holds in every store ever written: never renamed.
RECORDED_SQLITE = [
    "m001_initial",
    "m002_node_degree",
    "m003_id_random_part",
    "m004_search_index_repair",
    "m005_search_rationale",
    "m006_event_log",
    "m007_edges_by_seq",
]
RECORDED_POSTGRES = ["m001_initial", "m002_search_index"]


def test_the_recorded_names_are_the_history_of_existing_stores() -> None:
    assert [name for name, _ in migrations.MIGRATIONS[:7]] == RECORDED_SQLITE
    assert [name for name, _ in postgres_schema.MIGRATIONS[:2]] == RECORDED_POSTGRES
    # The functions say what they do; the version is the place in the list.
    for _, function in migrations.MIGRATIONS + postgres_schema.MIGRATIONS:
        assert not function.__name__.startswith("m0"), function.__name__


def migrate_as_before(path: Path) -> None:
    """The SQLite loop as it was before the shared runner (sqlite.py at ad9013e)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS mem_migrations "
        "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    for index, (name, migrate) in enumerate(migrations.MIGRATIONS, start=1):
        if index <= version:
            continue
        migrate(conn)
        conn.execute("INSERT INTO mem_migrations (name, applied_at) VALUES (?, ?)", (name, "then"))
        conn.execute(f"PRAGMA user_version = {index}")
    conn.execute("COMMIT")
    conn.close()


def contents(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    conn.execute("UPDATE mem_migrations SET applied_at = 'then'")
    lines = [f"user_version {conn.execute('PRAGMA user_version').fetchone()[0]}"]
    lines += conn.iterdump()
    conn.close()
    return lines


@pytest.mark.parametrize("version", range(1, len(RECORDED_SQLITE)))
def test_a_store_at_an_older_version_migrates_as_before(
    version: int,
    make_store: Callable[..., MemoryStore],
    db_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(sqlite, "MIGRATIONS", migrations.MIGRATIONS[:version])
        patch.setattr(sqlite, "SCHEMA_VERSION", version)
        old = make_store()
        if version == 6:  # the features' SQL runs on this schema: give it memories
            patch.setattr(sqlite_sql.FRAGMENTS, "ignore_existing_edge", " ON CONFLICT DO NOTHING")
            populate(old)
        old.close()
    reference = tmp_path / "reference.db"
    shutil.copyfile(db_path, reference)
    migrate_as_before(reference)

    make_store().close()

    migrated = contents(db_path)
    assert migrated[0] == f"user_version {len(migrations.MIGRATIONS)}"
    assert migrated == contents(reference)
    conn = sqlite3.connect(db_path)
    names = [row[0] for row in conn.execute("SELECT name FROM mem_migrations ORDER BY rowid")]
    conn.close()
    assert names[: len(RECORDED_SQLITE)] == RECORDED_SQLITE
