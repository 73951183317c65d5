import pytest

from nervamem import MemoryStore

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL


def test_concepts_example(store: MemoryStore) -> None:
    old = store.store("decision", "Chose session cookies for auth", valid_from="2026-01-01")
    new = store.store("decision", "Chose JWT for auth", valid_from="2026-06-01", supersedes=old)
    now_ids = [item.id for item in store.recall("auth mechanism").items]
    then_ids = [item.id for item in store.recall("auth mechanism", as_of="2026-03-15").items]
    assert now_ids == [new]
    assert then_ids == [old]
    timeline = store.timeline("auth")
    assert [t.id for t in timeline] == [old, new]
    assert timeline[0].superseded_by == new
