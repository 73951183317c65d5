"""SQLite's edges and degrees keyed by node seq (migrations.m007_edges_by_seq): a store
written before the migration keeps its edges, degrees, export and shared state; the
views answer as the tables did; a hub's newest neighbours are the same by either read
(storage/sqlite/graph_reads.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from nervamem import MemoryStore
from nervamem.recall.expansion import EXPANSION_EDGES, EXPANSION_FANOUT
from nervamem.storage import sqlite
from nervamem.storage.sqlite import migrations
from nervamem.storage.sqlite import sql as sqlite_sql
from nervamem.storage.sqlite.graph_reads import newest_neighbours
from nervamem.storage.sqlite.migrations import DEGREE_KEPT_ABOVE, SCHEMA_VERSION
from nervamem.writing import NewMemory
from tests.conftest import FakeClock

pytestmark = pytest.mark.sqlite_only  # the SQLite file's own tables


def edge_rows(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    return conn.execute("SELECT * FROM mem_edges ORDER BY src, kind, dst").fetchall()


def degree_rows(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    return conn.execute(
        "SELECT node_id, degree FROM mem_degree WHERE degree > 0 ORDER BY node_id"
    ).fetchall()


def counted_degrees(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    return conn.execute(
        "SELECT node_id, count(*) FROM (SELECT src AS node_id FROM mem_edges "
        "UNION ALL SELECT dst FROM mem_edges) GROUP BY node_id ORDER BY node_id"
    ).fetchall()


def populate(store: MemoryStore) -> dict[str, str]:
    """Every kind of edge the features write, one with data and one whose created_at is
    not its source's recorded_at."""
    session_id = store.start_session("migration")
    old = store.store("fact", "billing runs on MySQL", entities=["billing", "MySQL"])
    new = store.store(
        "fact", "billing runs on Postgres", entities=["billing", "Postgres"], supersedes=old
    )
    why = store.store(
        "decision",
        "move billing to Postgres",
        entities=["billing"],
        rationale="JSONB",
        rejected=["stay on MySQL"],
        caused_by=[old],
        derived_from=[new],
        contradicts=[old],
    )
    store.end_session(session_id, summary="moved billing")
    store.connection.execute(
        "INSERT INTO mem_edges (src, dst, kind, created_at, data) "
        "VALUES (?, ?, 'TOUCHES', '2026-01-02T03:04:05.678Z', '{\"file\": \"billing.py\"}')",
        (why, new),
    )
    store.connection.commit()
    return {"old": old, "new": new, "why": why, "session": session_id}


def test_a_store_at_schema_6_keeps_its_edges_degrees_and_export(
    make_store: Callable[..., MemoryStore], db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Written by the nervamem before m007: its migrations, its edge SQL.
    monkeypatch.setattr(sqlite, "MIGRATIONS", migrations.MIGRATIONS[:6])
    monkeypatch.setattr(sqlite, "SCHEMA_VERSION", 6)
    monkeypatch.setattr(sqlite_sql.FRAGMENTS, "ignore_existing_edge", " ON CONFLICT DO NOTHING")
    before = make_store()
    ids = populate(before)
    conn = before.connection
    assert conn.execute("SELECT type FROM sqlite_master WHERE name = 'mem_edges'").fetchone() == (
        "table",
    )
    edges, degrees = edge_rows(conn), degree_rows(conn)
    export, state = list(before.export_events()), before.canonical_state()
    before.close()
    monkeypatch.undo()

    after = make_store()
    conn = after.connection
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    kinds = dict(conn.execute("SELECT name, type FROM sqlite_master WHERE name LIKE 'mem_%'"))
    assert kinds["mem_edges"] == kinds["mem_degree"] == "view"
    assert kinds["mem_links"] == kinds["mem_node_degree"] == "table"
    assert edge_rows(conn) == edges
    assert {row[2] for row in edges} >= {"ABOUT", "OCCURRED_IN", "SUPERSEDES", "TOUCHES"}
    assert degree_rows(conn) == degrees == counted_degrees(conn)
    assert list(after.export_events()) == export
    assert after.canonical_state() == state
    # Only what differs from the defaults is stored: the time of an edge written after
    # its source (the cause of a later effect, the TOUCHES edge), data that is not {}.
    stored = conn.execute(
        "SELECT k.kind, created_at, data FROM mem_links JOIN mem_edge_kinds k ON code = "
        "mem_links.kind WHERE created_at IS NOT NULL OR data IS NOT NULL ORDER BY k.kind"
    ).fetchall()
    assert [row[0] for row in stored] == ["CAUSED", "TOUCHES"]
    assert stored[1][1:] == ("2026-01-02T03:04:05.678Z", '{"file": "billing.py"}')
    # The migrated store goes on: a purge cascades and the degrees follow.
    after.forget(ids["new"], purge=True)
    assert not conn.execute(
        "SELECT 1 FROM mem_edges WHERE ? IN (src, dst)", (ids["new"],)
    ).fetchone()
    assert degree_rows(conn) == counted_degrees(conn)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    after.close()


def test_the_edge_view_writes_as_the_table_did(store: MemoryStore) -> None:
    a = store.store("fact", "alpha", entities=["x"])
    b = store.store("fact", "beta", entities=["x"])
    conn = store.connection
    insert = "INSERT INTO mem_edges (src, dst, kind, created_at) VALUES (?, ?, 'CAUSED', ?)"
    conn.execute(insert, (a, b, "2026-05-05T00:00:00.000Z"))
    conn.execute(insert, (a, b, "2027-01-01T00:00:00.000Z"))  # there already: left alone
    assert conn.execute(
        "SELECT created_at, data FROM mem_edges WHERE src = ? AND kind = 'CAUSED'", (a,)
    ).fetchall() == [("2026-05-05T00:00:00.000Z", "{}")]
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(insert, (a, "f_0000000000000000000000000000", "2026-05-05T00:00:00.000Z"))
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO mem_edges (src, dst, kind) VALUES (?, ?, 'CAUSED')", (b, a))
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(insert.replace("CAUSED", "LIKES"), (b, a, "2026-05-05T00:00:00.000Z"))
    conn.execute("UPDATE mem_edges SET data = '{\"n\": 1}' WHERE src = ? AND kind = 'CAUSED'", (a,))
    assert conn.execute("SELECT data FROM mem_edges WHERE kind = 'CAUSED'").fetchall() == [
        ('{"n": 1}',)
    ]
    conn.execute("DELETE FROM mem_edges WHERE src = ? AND kind = 'CAUSED'", (a,))
    assert not conn.execute("SELECT 1 FROM mem_edges WHERE kind = 'CAUSED'").fetchone()
    assert degree_rows(conn) == counted_degrees(conn)
    conn.rollback()


def test_the_planner_reads_edges_by_index() -> None:
    conn = sqlite3.connect(":memory:")
    for _, migrate in migrations.MIGRATIONS:
        migrate(conn)

    def plan(sql: str) -> str:
        return " / ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, ("x",)))

    by_src = plan("SELECT dst FROM mem_edges WHERE src = ? AND kind = 'ABOUT'")
    by_dst = plan("SELECT src FROM mem_edges WHERE dst = ? AND kind = 'ABOUT'")
    assert "SCAN" not in by_src and "SCAN" not in by_dst
    assert "PRIMARY KEY (src=? AND kind=?)" in by_src
    assert "mem_links_dst (dst=? AND kind=?)" in by_dst


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    hub_edges=st.integers(min_value=0, max_value=150),
    others=st.integers(min_value=0, max_value=400),
    hub_first=st.booleans(),
)
@example(hub_edges=150, others=400, hub_first=False)  # the walk
@example(hub_edges=150, others=400, hub_first=True)  # the walk, then all of them
@example(hub_edges=40, others=400, hub_first=True)  # sorted
def test_a_hubs_newest_neighbours_are_the_same_by_either_read(
    new_store: Callable[[str], Path], clock: FakeClock, hub_edges: int, others: int, hub_first: bool
) -> None:
    """Few neighbours (sorted), many (the walk down the ID index), and many but all
    older than the rest (the walk finds too few and reads them all) agree with the
    neighbours' IDs sorted. Each batch is one transaction: its IDs share a millisecond
    and are ordered by their random part, not as they were inserted."""
    store = MemoryStore(new_store("hub"), clock=clock)
    about_hub = [NewMemory("fact", f"hub note {i}", ["hub"]) for i in range(hub_edges)]
    elsewhere = [NewMemory("fact", f"note {i}", [f"topic{i % 3}"]) for i in range(others)]
    for batch in (about_hub, elsewhere) if hub_first else (elsewhere, about_hub):
        store.store_many(batch)
    conn = store.connection
    row = conn.execute("SELECT id FROM mem_nodes WHERE content = 'hub' AND kind = 'entity'")
    hub = (row.fetchone() or ("e_none",))[0]
    kinds = ",".join(f"'{kind}'" for kind in EXPANSION_EDGES)
    expected = sorted(
        {
            near
            for (near,) in conn.execute(
                f"SELECT src FROM mem_edges WHERE dst = ?1 AND kind IN ({kinds}) "
                f"UNION SELECT dst FROM mem_edges WHERE src = ?1 AND kind IN ({kinds})",
                (hub,),
            )
        },
        reverse=True,
    )[:EXPANSION_FANOUT]
    assert newest_neighbours(conn, hub, EXPANSION_EDGES, EXPANSION_FANOUT) == expected
    assert len(expected) == min(hub_edges, EXPANSION_FANOUT)
    # The hub's degree is kept in mem_node_degree past DEGREE_KEPT_ABOVE, the others'
    # counted; both agree with the edges, and go on agreeing after a purge.
    assert degree_rows(conn) == counted_degrees(conn)
    kept = conn.execute(
        "SELECT n.id, g.degree FROM mem_node_degree g JOIN mem_nodes n USING (seq) ORDER BY n.id"
    ).fetchall()
    assert kept == [row for row in counted_degrees(conn) if row[1] > DEGREE_KEPT_ABOVE]
    if hub_edges:
        note = conn.execute("SELECT id FROM mem_nodes WHERE content = 'hub note 0'").fetchone()
        store.forget(note[0], purge=True)
        assert degree_rows(conn) == counted_degrees(conn)
    store.close()
