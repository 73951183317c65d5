"""store_many: the bulk path writes exactly what store() called in order would, in one
transaction, all or nothing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from nervamem import MemoryStore
from nervamem.errors import BadInputError, NotFoundError
from nervamem.state import load_state
from nervamem.writing import NewMemory
from tests.conftest import CountingRandom, FakeClock

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL


def dump(store: MemoryStore) -> dict[str, Any]:
    """Everything a store holds, in row order, IDs included."""
    conn = store.connection
    return {
        "nodes": conn.execute(
            "SELECT seq, id, kind, content, namespace, valid_from, valid_until, recorded_at, "
            "confidence, tombstoned, data FROM mem_nodes ORDER BY seq"
        ).fetchall(),
        "edges": conn.execute("SELECT * FROM mem_edges ORDER BY src, kind, dst").fetchall(),
        "aliases": conn.execute("SELECT * FROM mem_aliases ORDER BY namespace, alias").fetchall(),
        "degree": conn.execute("SELECT * FROM mem_degree ORDER BY node_id").fetchall(),
        # The SQLite full-text index (PostgreSQL's search tables have their own tests).
        "fts": conn.execute(
            "SELECT rowid FROM mem_fts WHERE mem_fts MATCH 'auth OR jwt OR tokens' ORDER BY rowid"
        ).fetchall()
        if store.engine == "sqlite"
        else None,
    }


def fresh(tmp_path: Path, name: str) -> MemoryStore:
    path = tmp_path / name / "memory.db"
    return MemoryStore(path, clock=FakeClock(), random_source=CountingRandom())


def replay(store: MemoryStore, memories: Sequence[NewMemory]) -> list[str]:
    """The reference: one store() call per memory, in one batch, indexes turned into IDs."""
    ids: list[str] = []

    def ref(value: str | int | None) -> str | None:
        return ids[value] if isinstance(value, int) else value

    with store.batch():
        for m in memories:
            ids.append(
                store.store(
                    m.kind,
                    m.content,
                    entities=m.entities,
                    confidence=m.confidence,
                    valid_from=m.valid_from,
                    supersedes=ref(m.supersedes),
                    contradicts=[str(ref(r)) for r in m.contradicts],
                    caused_by=[str(ref(r)) for r in m.caused_by],
                    derived_from=[str(ref(r)) for r in m.derived_from],
                    rationale=m.rationale,
                    rejected=m.rejected,
                    session=m.session,
                    namespace=m.namespace,
                )
            )
    return ids


def scenario(session: str, old_fact: str) -> list[NewMemory]:
    return [
        NewMemory("fact", "auth_service issues 15-minute tokens", entities=["AuthService"]),
        NewMemory(
            "decision",
            "Chose JWT for auth",
            entities=["auth_service", "TokenStore"],  # an alias, then a new entity
            rationale="stateless",
            rejected=["cookies", "opaque tokens"],
            valid_from="2026-07-01",
            session=session,
        ),
        NewMemory(
            "action", "Deployed JWT auth to staging", entities=["auth-service"], caused_by=[1]
        ),
        NewMemory("outcome", "Login p95 dropped to 80 ms", caused_by=[2], derived_from=[0]),
        NewMemory(
            "fact", "auth tokens now last 30 minutes", supersedes=0, entities=["AuthService"]
        ),
        NewMemory("fact", "the old cache expiry is 5 minutes, now 10", supersedes=old_fact),
        NewMemory("entity", "TokenStore"),  # resolves to the entity created above
        NewMemory("entity", "RateLimiter"),
        NewMemory(
            "fact",
            "RateLimiter allows 100 requests per second",
            entities=["rate_limiter"],
            contradicts=[3],
            confidence=0.7,
        ),
        NewMemory("preference", "Always pin dependency versions", namespace="other"),
    ]


def prepare(store: MemoryStore) -> tuple[str, str]:
    session = store.start_session("auth rework")
    old_fact = store.store("fact", "the cache expiry is 5 minutes", entities=["CacheLayer"])
    return session, old_fact


def test_store_many_writes_what_store_calls_write(tmp_path: Path) -> None:
    reference, bulk = fresh(tmp_path, "reference"), fresh(tmp_path, "bulk")
    session, old_fact = prepare(reference)
    assert prepare(bulk) == (session, old_fact)
    memories = scenario(session, old_fact)
    expected = replay(reference, memories)
    assert bulk.store_many(memories) == expected
    assert dump(bulk) == dump(reference)


def test_store_many_inside_a_batch_with_other_writes(tmp_path: Path) -> None:
    reference, bulk = fresh(tmp_path, "reference"), fresh(tmp_path, "bulk")
    for store in (reference, bulk):
        with store.batch():
            session, old_fact = prepare(store)
            memories = scenario(session, old_fact)
            if store is reference:
                replay(store, memories)
            else:
                store.store_many(memories)
            store.store("fact", "auth tokens are signed with RS256", entities=["TokenStore"])
    assert dump(bulk) == dump(reference)


def test_a_bad_memory_writes_nothing(store: MemoryStore) -> None:
    before = dump(store)
    with pytest.raises(BadInputError, match="unknown kind"):
        store.store_many([NewMemory("fact", "fine"), NewMemory("opinion", "not a kind")])
    assert dump(store) == before


def test_a_failed_call_inside_a_batch_undoes_only_itself(store: MemoryStore) -> None:
    with store.batch():
        kept = store.store("fact", "written before the failed call")
        with pytest.raises(NotFoundError):
            store.store_many(
                [NewMemory("fact", "lost"), NewMemory("fact", "x", caused_by=["f_ffff"])]
            )
        after = store.store_many([NewMemory("fact", "written after it")])
    contents = [r[0] for r in store.connection.execute("SELECT content FROM mem_nodes")]
    assert contents == ["written before the failed call", "written after it"]
    assert store.get(kept).content == "written before the failed call"
    assert len(after) == 1


def test_supersession_rules_hold_within_one_call(store: MemoryStore) -> None:
    old = store.store("fact", "tokens last 15 minutes", valid_from="2026-03-01")
    with pytest.raises(BadInputError, match="already superseded"):
        store.store_many(
            [
                NewMemory("fact", "tokens last 30 minutes", supersedes=old),
                NewMemory("fact", "tokens last 60 minutes", supersedes=old),
            ]
        )
    with pytest.raises(BadInputError, match="already superseded"):
        store.store_many(
            [
                NewMemory("fact", "v2", valid_from="2026-04-01"),
                NewMemory("fact", "v3", supersedes=0, valid_from="2026-05-01"),
                NewMemory("fact", "v3 again", supersedes=0, valid_from="2026-05-01"),
            ]
        )
    with pytest.raises(BadInputError, match="before"):
        store.store_many([NewMemory("fact", "too early", supersedes=old, valid_from="2026-01-01")])
    assert store.get(old).valid_until is None


@pytest.mark.parametrize("ref", [-1, 1, 5])
def test_an_index_must_name_an_earlier_memory(store: MemoryStore, ref: int) -> None:
    with pytest.raises(BadInputError, match="earlier memory"):
        store.store_many([NewMemory("fact", "a", caused_by=[ref])])


@pytest.mark.sqlite_only  # state.yaml beside the file
def test_sessions_started_in_a_batch_set_state_once_it_commits(
    store: MemoryStore, db_path: Path
) -> None:
    with store.batch():
        first = store.start_session("one")
        second = store.start_session("two")
        assert store.current().session == second
        assert load_state(db_path).session is None  # nothing written before the commit
    assert load_state(db_path).session == second != first
    with pytest.raises(RuntimeError), store.batch():
        store.start_session("three")
        raise RuntimeError("rolled back")
    assert load_state(db_path).session == second
    assert store.current().session == second


def test_short_ids_work_as_references(store: MemoryStore) -> None:
    session = store.start_session("refs")
    old = store.store("fact", "tokens last 15 minutes")
    cause = store.store("decision", "shorter tokens")
    store.end_session()
    short = store.short_ids([session, old, cause])
    (new,) = store.store_many(
        [
            NewMemory(
                "fact",
                "tokens last 5 minutes",
                supersedes=short[old],
                caused_by=[short[cause]],
                session=short[session],
            )
        ]
    )
    assert store.get(old).valid_until is not None
    edges = set(store.connection.execute("SELECT kind, dst FROM mem_edges WHERE src = ?", (new,)))
    assert {("SUPERSEDES", old), ("OCCURRED_IN", session)} <= edges
    assert ("CAUSED", new) in set(
        store.connection.execute("SELECT kind, dst FROM mem_edges WHERE src = ?", (cause,))
    )
