"""Recall's graph reads (storage/graph_reads.py) answer on each engine what the mem_edges
table (a view on SQLite) answers by ID: each engine's own SQL, one meaning."""

from __future__ import annotations

import pytest

from nervamem import MemoryStore
from nervamem.recall.mask import mask_sql
from nervamem.storage.graph_reads import graph_reads_of

pytestmark = pytest.mark.both_engines

EDGES = ("ABOUT", "CAUSED", "DERIVED_FROM")


def _graph(store: MemoryStore) -> dict[str, int]:
    """A small graph: a session, a hub entity, causes, a supersession, another
    namespace; the seq of every node by ID."""
    store.start_session("payments")
    ids = [store.store("fact", "the payment service retries", entities=["payments"])]
    for i in range(12):
        ids.append(
            store.store(
                "action" if i % 2 else "fact",
                f"payment note {i}",
                entities=["payments"],
                caused_by=[ids[-1]] if i % 3 == 0 else (),
            )
        )
    store.end_session()
    old = store.store("fact", "an old note", entities=["payments"])
    store.store("fact", "the newer note", supersedes=old)
    store.store("fact", "payments elsewhere", entities=["payments"], namespace="other")
    return dict(store.connection.execute("SELECT id, seq FROM mem_nodes").fetchall())


def _linked(store: MemoryStore, node_id: str, kinds: tuple[str, ...]) -> list[tuple[str, str]]:
    return [
        (kind, far)
        for far, kind, near in store.connection.execute(
            "SELECT dst, kind, src FROM mem_edges UNION ALL SELECT src, kind, dst FROM mem_edges"
        )
        if near == node_id and kind in kinds
    ]


def test_neighbours_are_the_edges_by_id(store: MemoryStore) -> None:
    seq_of = _graph(store)
    graph = graph_reads_of(store.connection)
    hub = store.connection.execute(
        "SELECT id FROM mem_nodes WHERE kind = 'entity' AND content = 'payments'"
    ).fetchone()[0]

    for node_id in seq_of:
        every = sorted({far for _, far in _linked(store, node_id, EDGES)}, reverse=True)
        assert graph.newest_neighbours(node_id, EDGES, 5) == every[:5]
    assert len(graph.newest_neighbours(hub, EDGES, 5)) == 5

    id_of = {seq: node_id for node_id, seq in seq_of.items()}
    found = sorted(
        (id_of[seq], kind, row[0])
        for seq, kind, row in graph.neighbour_rows(list(seq_of.values()), EDGES, "n.id")
    )
    expected = sorted(
        (node_id, kind, far) for node_id in seq_of for kind, far in _linked(store, node_id, EDGES)
    )
    assert found == expected
    assert expected  # the graph has edges of those kinds


def test_sessions_windows_and_supersessions_are_the_edges_by_id(store: MemoryStore) -> None:
    seq_of = _graph(store)
    graph = graph_reads_of(store.connection)
    nodes = list(seq_of.items())
    memories = {
        src: dst
        for src, dst in store.connection.execute(
            "SELECT src, dst FROM mem_edges WHERE kind = 'OCCURRED_IN'"
        )
    }
    assert graph.sessions_of(nodes) == memories
    assert memories  # the memories of the session
    assert graph.any_sessions()

    seeds = [(node_id, seq) for node_id, seq in nodes if node_id in memories][:2]
    session_of, rows, known = graph.session_windows(
        seeds, nodes, 1, "n.id", store.namespace, mask_sql(None)
    )
    assert {seed: session_of[seed] for seed, _ in seeds} == {s: memories[s] for s, _ in seeds}
    near = {seq + d for _, seq in seeds for d in (-1, 0, 1)}
    assert sorted(row[0] for row in rows) == sorted(
        node_id for node_id, seq in nodes if seq in near and node_id in memories
    )
    assert all(row[-1] == memories[row[0]] for row in rows)
    assert {seed for seed, _ in seeds} <= known

    successors = {
        seq_of[src]
        for (src,) in store.connection.execute(
            "SELECT src FROM mem_edges WHERE kind = 'SUPERSEDES'"
        )
    }
    assert graph.superseding(list(seq_of.values())) == successors
    assert len(successors) == 1
