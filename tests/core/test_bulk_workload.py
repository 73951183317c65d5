"""store_many on the benchmark's workload: the same rows, IDs, edges, degrees and full-text
index as store() called for each memory, over several calls (references to nodes written
by earlier calls), with statements of many rows and of a few."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from nervamem import MemoryStore, bulk
from nervamem.bulk import NewMemory
from nervamem.ids import ID_PATTERN
from tests.conftest import CountingRandom, FakeClock
from tests.core.test_bulk import dump, replay

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
            memories: list[NewMemory] = []
            keys: dict[str, int] = {}
            for plan in group:
                session_id = store.start_session(plan.title)
                base = len(memories)
                for item in plan.items:
                    supersedes: str | int | None = None
                    if item.supersedes:
                        supersedes = keys.get(item.supersedes, current.get(item.supersedes))
                    memories.append(
                        NewMemory(
                            item.kind,
                            item.content,
                            entities=item.entities,
                            valid_from=item.valid_from,
                            supersedes=supersedes,
                            caused_by=[base + i for i in item.caused_by],
                            rationale=item.rationale,
                            rejected=item.rejected,
                            session=session_id,
                        )
                    )
                    if item.key:
                        keys[item.key] = len(memories) - 1
            ids = store.store_many(memories) if bulk_path else replay(store, memories)
        for key, index in keys.items():
            current[key] = ids[index]


def fresh(tmp_path: Path, name: str) -> MemoryStore:
    start = datetime(2025, 1, 6, 8, 0, 0, tzinfo=timezone.utc)
    return MemoryStore(
        tmp_path / name / "memory.db", clock=FakeClock(start), random_source=CountingRandom()
    )


@pytest.mark.parametrize("max_rows", [bulk._MAX_ROWS, 3])
def test_workload_through_store_many_equals_store_calls(
    tmp_path: Path, workload: Any, monkeypatch: pytest.MonkeyPatch, max_rows: int
) -> None:
    monkeypatch.setattr(bulk, "_MAX_ROWS", max_rows)
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
