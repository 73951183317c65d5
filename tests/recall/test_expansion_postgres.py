"""Expansion's one-statement read on PostgreSQL (storage/postgres/graph_reads.py) answers
what expansion.py's per-seed reads answer on the same server: the EXPANSION_FANOUT
newest neighbours of each seed (hub entities with more than BATCH_DEGREE edges
included), which of them are causes or effects, and the rows the mask admits."""

from __future__ import annotations

import pytest

from nervamem import MemoryStore
from nervamem.recall.expansion import (
    EXPANSION_FANOUT,
    _fetch_masked,
    causal_pairs,
    edges_of,
    neighbours,
)
from nervamem.recall.mask import mask_sql

pytestmark = pytest.mark.postgresql_only


def test_frontier_in_one_statement_matches_the_per_seed_reads(store: MemoryStore) -> None:
    first = store.store("fact", "the payment service retries failed charges", entities=["payments"])
    ids = [first]
    for i in range(80):  # 'payments' becomes a hub: more than BATCH_DEGREE edges
        ids.append(
            store.store(
                "fact" if i % 3 else "action",
                f"payment note {i}",
                entities=["payments", f"topic{i % 5}"],
                caused_by=[ids[-1]] if i % 4 == 0 else (),
                derived_from=[ids[-2]] if i % 7 == 0 and len(ids) > 1 else (),
            )
        )
    old = store.store("fact", "an old payment note", entities=["payments"])
    store.store("fact", "the newer payment note", entities=["payments"], supersedes=old)
    other = store.store("fact", "payments elsewhere", entities=["payments"], namespace="other")
    conn = store.connection
    hub = conn.execute("SELECT id FROM mem_nodes WHERE kind = 'entity' AND content = 'payments'")
    frontier = [hub.fetchone()[0], *ids[::9], old, other]
    mask, mask_params = mask_sql(None)

    around, causal, rows = edges_of(conn, frontier, store.namespace, mask, mask_params)

    expected = neighbours(conn, frontier)
    assert around == expected
    assert max(len(near) for near in around.values()) == EXPANSION_FANOUT
    every_causal = causal_pairs(conn, frontier)
    assert causal == {(p, n) for p in frontier for n in expected[p] if (p, n) in every_causal}
    assert causal  # the fixture has causes and effects among the neighbours
    reached = sorted({n for near in expected.values() for n in near})
    assert rows is not None
    masked = _fetch_masked(conn, store.namespace, reached, mask, mask_params)
    assert rows == {row[0]: tuple(row) for row in masked}
    assert old not in rows and other not in rows
