"""store_many on the benchmark's workload: the same rows, IDs, edges, degrees and full-text
index as store() called for each memory, over several calls (references to nodes written
by earlier calls), with statements of many rows and of a few."""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from nervamem import MemoryStore
from nervamem.ids import ID_PATTERN
from nervamem.storage.sqlite import sql as sqlite_sql
from nervamem.writing import NewMemory
from tests.conftest import CountingRandom, FakeClock
from tests.store.test_bulk import dump, replay

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def workload() -> Any:
    sys.path.insert(0, str(BENCH))
    try:
        import workload as module
    finally:
        sys.path.remove(str(BENCH))
    return module


def full_dump(store: MemoryStore) -> dict[str, Any]:
    conn = store.connection
    conn.execute("INSERT INTO mem_fts (mem_fts, rank) VALUES ('integrity-check', 1)")
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, mem_fts, instance)"
    )
    everything = dump(store)
    everything["index"] = conn.execute(
        "SELECT term, doc, col, offset FROM temp.vocab ORDER BY term, doc, offset"
    ).fetchall()
    everything["degree_is_edge_count"] = (
        conn.execute(
            "SELECT count(*) FROM mem_nodes n WHERE coalesce((SELECT degree FROM mem_degree "
            "WHERE node_id = n.id), 0) != (SELECT count(*) FROM mem_edges WHERE src = n.id) + "
            "(SELECT count(*) FROM mem_edges WHERE dst = n.id)"
        ).fetchone()[0]
        == 0
    )
    return everything


def calls(workload: Any, nodes: int, per_call: int) -> list[list[Any]]:
    """The workload's sessions, grouped per call: (title, [memory with keys])."""
    groups: list[list[Any]] = [[]]
    count = 0
    for plan in workload.generate(nodes):
        if count >= per_call:
            groups.append([])
            count = 0
        groups[-1].append(plan)
        count += 1 + len(plan.items)
    return groups


def ingest(
    workload: Any, store: MemoryStore, nodes: int, per_call: int, *, bulk_path: bool
) -> None:
    current: dict[str, str] = {}
    for group in calls(workload, nodes, per_call):
        with store.batch():
            memories, keys = workload.session_memories(store, group, current)
            ids = store.store_many(memories) if bulk_path else replay(store, memories)
        for key, index in keys.items():
            current[key] = ids[index]


def fresh(tmp_path: Path, name: str) -> MemoryStore:
    start = datetime(2025, 1, 6, 8, 0, 0, tzinfo=timezone.utc)
    return MemoryStore(
        tmp_path / name / "memory.db", clock=FakeClock(start), random_source=CountingRandom()
    )


@pytest.mark.parametrize("max_rows", [sqlite_sql.MAX_ROWS, 3])
def test_workload_through_store_many_equals_store_calls(
    tmp_path: Path, workload: Any, monkeypatch: pytest.MonkeyPatch, max_rows: int
) -> None:
    monkeypatch.setattr(sqlite_sql, "MAX_ROWS", max_rows)
    reference, fast = fresh(tmp_path, "reference"), fresh(tmp_path, "bulk")
    ingest(workload, reference, 1500, 500, bulk_path=False)
    ingest(workload, fast, 1500, 500, bulk_path=True)
    expected = full_dump(reference)
    assert expected["degree_is_edge_count"]
    assert len(expected["edges"]) > 2000
    assert full_dump(fast) == expected


def test_ids_from_the_default_random_source(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "memory.db")
    memories = [NewMemory("fact", f"fact number {i}") for i in range(3000)]
    memories += [NewMemory("decision", "one decision", entities=["SomeEntity"])]
    ids = store.store_many(memories)
    assert len(set(ids)) == len(ids)
    assert all(ID_PATTERN.match(node_id) for node_id in ids)
    assert ids[-1].startswith("d_") and ids[0].startswith("f_")
    # One transaction, one moment: the time part is the same in every ID, the entity's too.
    heads = {node_id.split("_")[1][:13] for node_id in ids}
    (entity,) = store.connection.execute(
        "SELECT id FROM mem_nodes WHERE kind = 'entity'"
    ).fetchone()
    assert heads == {entity[2:15]}
    assert len({node_id[-16:] for node_id in ids}) == len(ids)


def written_nodes(store: MemoryStore) -> dict[str, str]:
    """Nodes already in the database when store_many runs (not in its buffer)."""
    nodes = {
        "session": store.start_session("earlier work"),
        "old": store.store("fact", "tokens last 15 minutes", valid_from="2026-03-01"),
        "replaced": store.store("fact", "cache expiry is 5 minutes", valid_from="2026-03-01"),
        "forgotten": store.store("fact", "a mistake", valid_from="2026-03-01"),
        "chain": store.store("fact", "pool size is 10", valid_from="2026-03-01"),
        "elsewhere": store.store("fact", "other team's fact", namespace="other"),
        "other_session": store.start_session("theirs", namespace="other"),
    }
    nodes["replacement"] = store.store(
        "fact", "cache expiry is 10 minutes", supersedes=nodes["replaced"]
    )
    chain_head = store.store("fact", "pool size is 20", supersedes=nodes["chain"])
    store.forget(chain_head)  # a forgotten superseder: the chain goes on from "chain"
    store.forget(nodes["forgotten"])
    nodes["missing"] = "f_" + "0" * 29
    return nodes


SUCCEEDS = {
    "supersede a current fact",
    "supersede a fact whose superseder is forgotten",
    "in a session",
    "valid from an aware UTC time",
    "valid from a naive time",
    "valid from another zone",
}
CASES: list[tuple[str, dict[str, Any]]] = [
    ("supersede a current fact", {"supersedes": "old"}),
    ("supersede an already superseded fact", {"supersedes": "replaced"}),
    ("supersede a fact whose superseder is forgotten", {"supersedes": "chain"}),
    ("supersede a forgotten fact", {"supersedes": "forgotten"}),
    ("supersede a session", {"supersedes": "session"}),
    ("supersede another namespace's fact", {"supersedes": "elsewhere"}),
    ("supersede a node that does not exist", {"supersedes": "missing"}),
    ("supersede with an earlier start", {"supersedes": "old", "valid_from": "2026-01-01"}),
    ("in a session", {"session": "session"}),
    ("in a fact as session", {"session": "old"}),
    ("in another namespace's session", {"session": "other_session"}),
    ("in a session that does not exist", {"session": "missing"}),
    (
        "valid from an aware UTC time",
        {"valid_from": datetime(2026, 5, 1, 9, 30, 1, 123456, timezone.utc)},
    ),
    ("valid from a naive time", {"valid_from": datetime(2026, 5, 1, 9, 30, 1, 999999)}),
    (
        "valid from another zone",
        {"valid_from": datetime(2026, 5, 1, 9, 30, tzinfo=timezone(timedelta(hours=-5)))},
    ),
]


@pytest.mark.parametrize(("name", "case"), CASES, ids=[name for name, _ in CASES])
def test_references_to_written_nodes_as_store_calls(
    tmp_path: Path, name: str, case: dict[str, Any]
) -> None:
    outcomes = []
    for path in ("reference", "bulk"):
        store = MemoryStore(
            tmp_path / path / "memory.db", clock=FakeClock(), random_source=CountingRandom()
        )
        nodes = written_nodes(store)
        args = {
            key: nodes.get(value, value) if key != "valid_from" else value
            for key, value in case.items()
        }
        memories = [
            NewMemory("fact", "a first fact", entities=["AuthService"]),
            NewMemory("fact", "the new version", **args),
            NewMemory("fact", "a second one", supersedes=1 if "supersedes" in args else None),
        ]
        try:
            if path == "reference":
                replay(store, memories)
            else:
                store.store_many(memories)
            error = None
        except Exception as exc:  # noqa: BLE001 - compared, not swallowed
            error = (type(exc), str(exc))
        outcomes.append((error, full_dump(store)))
    assert outcomes[1] == outcomes[0]
    succeeded = outcomes[0][0] is None
    assert succeeded == (name in SUCCEEDS)


def test_with_the_code_bridge_as_store_calls(tmp_path: Path) -> None:
    """Beside a code graph each memory's entities are anchored as it is stored: new
    entities, buffered rows and TOUCHES edges interleave as with store() calls."""
    from tests.code.test_codegraph import make_repo

    dumps = []
    for path in ("reference", "bulk"):
        repo = make_repo(tmp_path / path)
        store = MemoryStore(
            repo / ".nervapack" / "memory.db", clock=FakeClock(), random_source=CountingRandom()
        )
        store.index_code()
        memories = [
            NewMemory("fact", "login returns a token", entities=["AuthService.login"]),
            NewMemory("decision", "cache loads", entities=["pkg.storage", "NotCode"]),
            NewMemory("fact", "a plain fact"),
            NewMemory("action", "moved save", entities=["save", "AuthService"], caused_by=[1]),
            NewMemory("entity", "pkg/auth.py"),
            NewMemory("fact", "logout is a no-op", entities=["auth_service.logout"], supersedes=0),
        ]
        with store.batch():
            if path == "reference":
                replay(store, memories)
            else:
                store.store_many(memories)
        dumps.append(full_dump(store))
    assert len([edge for edge in dumps[0]["edges"] if edge[2] == "TOUCHES"]) >= 4
    assert dumps[1] == dumps[0]
