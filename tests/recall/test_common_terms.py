"""All-common queries (every key term in more than search.COMMON_DF rows): the newest
rows their expression matches, kept in the node cache for a generation and filtered in
Python (search._newest_held), are those the SQL filters inside its scan
(the text index's newest_matching), whatever the namespace, mask and kinds (issue 21, round 6)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nervamem import MemoryStore
from nervamem.recall import node_cache, search
from nervamem.storage.text_index import text_index_of

pytestmark = pytest.mark.sqlite_only  # the node cache is SQLite's

WORDS = ["alpha", "beta", "gamma", "delta"]
TIMES = ["2020-06-01T00:00:00Z", "2024-06-01T00:00:00Z", "2030-06-01T00:00:00Z"]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryStore]:
    """A store whose rows the filters keep or drop at random: two namespaces, three
    kinds, validity ending in the past or the future or open, some forgotten."""
    chooser = random.Random(21)
    store = MemoryStore(Path(tmp_path_factory.mktemp("common")) / "memory.db")
    mine: list[str] = []
    with store.batch():
        for n in range(60):
            words = chooser.sample(WORDS, chooser.randint(1, 3))
            namespace = chooser.choice(["default", "default", "other"])
            node_id = store.store(
                chooser.choice(["fact", "decision", "action"]),
                f"note {n} " + " ".join(words),
                namespace=namespace,
                valid_from=TIMES[0],
                valid_until=chooser.choice([None, None, "2022-01-01T00:00:00Z", TIMES[2]]),
            )
            if namespace == "default":
                mine.append(node_id)
    for node_id in chooser.sample(mine, 8):
        store.forget(node_id)
    yield store
    store.close()


@settings(max_examples=200, deadline=None)
@given(
    common=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True),
    namespace=st.sampled_from(["default", "other", "none"]),
    as_of=st.one_of(st.none(), st.sampled_from([*TIMES, "2023-01-01T00:00:00Z"])),
    kinds=st.one_of(st.none(), st.lists(st.sampled_from(["fact", "decision", "action"]))),
    pool=st.integers(min_value=1, max_value=8),
    depth=st.integers(min_value=1, max_value=20),
    warm=st.booleans(),
)
def test_newest_rows_kept_and_filtered_in_python_are_the_sqls(
    mixed: MemoryStore,
    common: list[str],
    namespace: str,
    as_of: str | None,
    kinds: list[str] | None,
    pool: int,
    depth: int,
    warm: bool,
) -> None:
    conn = mixed.connection
    facts = node_cache.for_recall(mixed.storage)
    assert facts is not None
    if not warm:  # else some rows are cached, some not
        facts.clear()
    facts.search.newest.clear()  # kept at another example's depth
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(search, "PRE_LIMIT", pool)
        patch.setattr(search, "NEWEST_DEPTH", depth)
        index = text_index_of(conn)
        kept = search._newest_held(conn, index, facts, common, namespace, as_of, kinds)
        by_sql = index.newest_matching(
            common, namespace, search._filters(index, as_of, kinds, True), pool
        )
    if kept is None:  # the rows kept could not tell: they are NEWEST_DEPTH, all kept
        assert any(len(rows) == depth for rows in facts.search.newest.values())
    else:
        assert kept == by_sql


def test_the_rows_kept_decide_when_they_can(mixed: MemoryStore) -> None:
    """Neither always None (the SQL every time) nor kept past a change of the store."""
    conn = mixed.connection
    facts = node_cache.for_recall(mixed.storage)
    assert facts is not None
    facts.clear()
    index = text_index_of(conn)
    kept = search._newest_held(conn, index, facts, ["alpha", "beta"], "default", None, None)
    assert kept is not None and kept == index.newest_matching(
        ["alpha", "beta"], "default", search._filters(index, None, None, True), search.PRE_LIMIT
    )
    assert "alpha AND beta" in facts.search.newest


def test_a_store_empties_the_rows_kept(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "memory.db") as store, pytest.MonkeyPatch.context() as patch:
        patch.setattr(search, "COMMON_DF", 0)  # every term is common
        first = store.store("fact", "alpha beta one")
        assert [item.id for item in store.recall("alpha beta", hops=0).items] == [first]
        facts = node_cache.for_recall(store.storage)
        assert facts is not None and list(facts.search.newest) == ["alpha AND beta"]
        second = store.store("fact", "alpha beta two")
        found = {item.id for item in store.recall("alpha beta", hops=0).items}
        assert found == {first, second}


def test_newest_lists_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_cache, "MAX_NEWEST_ROWS", 8)
    held = node_cache.SearchFacts()
    for n in range(10):
        held.keep_newest(f"e{n}", tuple(range(n % 4)))
        assert held.newest_rows == sum(map(len, held.newest.values())) <= 8
    held.clear()
    assert held.newest == {} and held.newest_rows == 0
