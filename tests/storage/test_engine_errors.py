"""The errors an engine raises are nervamem's own (errors.py), never its driver's: a row
the database refuses is an IntegrityViolation on both engines (inside the storage's
``refusals()``, where a feature catches it: an import's event is reported and skipped),
and any other failure of a statement on PostgreSQL a DatabaseFault, shown at the edges
exactly as SQLite's own DatabaseError has always been shown."""

from __future__ import annotations

import sqlite3

import pytest

from nervamem import MemoryStore
from nervamem.errors import DatabaseFault, IntegrityViolation, StoreError
from nervamem.failures import describe


def _refuse_a_duplicate(store: MemoryStore) -> None:
    node_id = store.store("fact", "stated once")
    storage = store.storage
    with storage.transaction(), storage.refusals():
        storage.connection.execute(
            "INSERT INTO mem_nodes (id, kind, content, namespace, valid_from, recorded_at) "
            "VALUES (?, 'fact', 'stated twice', 'default', ?, ?)",
            (node_id, storage.now(), storage.now()),
        )


@pytest.mark.both_engines
def test_a_refused_row_is_an_integrity_violation_on_every_engine(store: MemoryStore) -> None:
    with pytest.raises(IntegrityViolation) as raised:
        _refuse_a_duplicate(store)
    assert not isinstance(raised.value, sqlite3.Error)
    assert isinstance(raised.value, StoreError)
    assert raised.value.detail
    assert raised.value.message == f"the store cannot be used: {raised.value.detail}"
    # Rolled back: the store holds the one node and takes writes again.
    assert store.store("fact", "after the refusal")
    contents = store.connection.execute("SELECT content FROM mem_nodes ORDER BY content")
    assert [row[0] for row in contents] == ["after the refusal", "stated once"]


@pytest.mark.postgresql_only
def test_no_driver_error_leaves_the_postgresql_engine(store: MemoryStore) -> None:
    with pytest.raises(DatabaseFault) as raised:
        store.connection.execute("SELECT no_such_column FROM mem_nodes")
    assert not isinstance(raised.value, sqlite3.Error)
    assert not isinstance(raised.value, IntegrityViolation)
    assert raised.value.detail.startswith(f"{store.storage.location}: ")
    assert "no_such_column" in raised.value.detail


def test_the_edges_show_a_database_fault_as_they_showed_the_drivers_error() -> None:
    """Same code, exit code and message as sqlite3's DatabaseError (which PostgreSQL's
    adapter raised before): CLI and MCP output are unchanged."""
    for ours, theirs in [
        (DatabaseFault("db: relation is gone"), sqlite3.DatabaseError("db: relation is gone")),
        (IntegrityViolation("duplicate key"), sqlite3.IntegrityError("duplicate key")),
    ]:
        assert describe(ours).document() == describe(theirs).document()
