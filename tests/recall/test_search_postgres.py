"""Search on PostgreSQL ranks as on SQLite: for the same memories, the PostgreSQL
engine's term tables hold FTS5's postings, its text index (storage/postgres/text_index.py)
answers as FTS5's (storage/sqlite/text_index.py), and recall's one search pipeline
(recall/search.py) finds the same candidates with the same relevance over either,
through every stage (rare terms, all-common queries, prefixes), mask, kinds and
namespace, on SQLite with and without the node cache; the index follows every write
(store, a changed content or rationale, purge)."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.agentset import agent_corpora
from nervamem import MemoryStore
from nervamem.recall import node_cache, search
from nervamem.recall.candidates import NODE_COLUMNS
from nervamem.recall.mask import KnownAt
from nervamem.storage.postgres.search import why_text
from nervamem.storage.text_index import text_index_of
from nervamem.storage.tokenizer import tokens
from nervamem.writing import NewMemory

from ..conftest import CountingRandom

pytestmark = pytest.mark.postgresql_only

LOCOMO = Path("/work/shared/data/locomo/locomo-dev.json")
MOMENT = datetime(2026, 7, 3, 12, 0, 0, tzinfo=timezone.utc)
NOW = "2026-07-03T12:00:00.000Z"


def fixed_clock() -> datetime:
    return MOMENT


def pair(sqlite_path: Path, url: str) -> tuple[MemoryStore, MemoryStore]:
    """Two stores, one per engine, given the same clock and IDs: the same writes make
    the same rows in both."""
    return (
        MemoryStore(sqlite_path, clock=fixed_clock, random_source=CountingRandom()),
        MemoryStore(url, clock=fixed_clock, random_source=CountingRandom()),
    )


def fts5_postings(store: MemoryStore) -> Counter[tuple[str, int]]:
    conn = store.connection
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, mem_fts, 'instance')"
    )
    return Counter((term, doc) for term, doc in conn.execute("SELECT term, doc FROM temp.vocab"))


def pg_postings(store: MemoryStore) -> dict[tuple[str, int], int]:
    rows = store.connection.execute("SELECT term, seq, tf FROM mem_search_terms").fetchall()
    return {(term, seq): tf for term, seq, tf in rows}


def assert_index_equal(lite: MemoryStore, pg: MemoryStore) -> None:
    postings = fts5_postings(lite)
    assert pg_postings(pg) == dict(postings)
    rows = lite.connection.execute("SELECT count(*) FROM mem_nodes").fetchone()[0]
    assert pg.connection.execute("SELECT rows, tokens FROM mem_search_totals").fetchone() == (
        rows,
        sum(postings.values()),
    )
    assert pg.connection.execute("SELECT count(*) FROM mem_search_pending").fetchone()[0] == 0


def assert_same_search(
    lite: MemoryStore,
    pg: MemoryStore,
    query: str,
    *,
    namespace: str = "default",
    as_of: str | KnownAt | None = NOW,
    kinds: list[str] | None = None,
    want: int = 40,
    apply_mask: bool = True,
    cached: bool = False,
) -> dict[str, Any]:
    """The one pipeline over each engine's index; ``cached``: on SQLite through the node
    cache too, as recall runs it outside a transaction."""
    expected, found = (
        search.search(
            store.connection,
            namespace,
            query,
            as_of=as_of,
            kinds=kinds,
            want=want,
            apply_mask=apply_mask,
            facts=node_cache.for_recall(store.storage) if cached else None,
        )
        for store in (lite, pg)
    )
    assert list(found) == list(expected), query
    for node_id, candidate in expected.items():
        assert math.isclose(found[node_id].relevance, candidate.relevance, rel_tol=1e-9), query
        assert found[node_id].seq == candidate.seq
    return expected


@pytest.fixture
def stores(tmp_path: Path, pg_server: Any) -> Iterator[tuple[MemoryStore, MemoryStore]]:
    lite, pg = pair(tmp_path / "memory.db", pg_server.fresh_url())
    yield lite, pg
    lite.close()
    pg.close()


def store_both(stores: tuple[MemoryStore, MemoryStore], memories: list[NewMemory]) -> list[str]:
    lite, pg = stores
    ids = lite.store_many(memories)
    assert pg.store_many(memories) == ids
    return ids


# ---------------------------------------------------------------- real memories
def agent_memories() -> tuple[list[NewMemory], list[str]]:
    memories: list[NewMemory] = []
    questions: list[str] = []
    for corpus in agent_corpora():
        for session in corpus.sessions:
            for memory in session.memories:
                memories.append(
                    NewMemory(
                        memory.kind,
                        memory.content,
                        entities=memory.entities,
                        valid_from=memory.valid_from,
                        rationale=memory.rationale,
                        rejected=memory.rejected,
                    )
                )
        questions += [question.text for question in corpus.questions]
    return memories, questions


def test_agent_set_same_postings_and_results(stores: tuple[MemoryStore, MemoryStore]) -> None:
    memories, questions = agent_memories()
    store_both(stores, memories)
    lite, pg = stores
    assert_index_equal(lite, pg)
    hits = 0
    for question in questions:
        hits += len(assert_same_search(lite, pg, question))
        assert_same_search(lite, pg, question, cached=True)
    assert hits > 0
    # Short lookups reach the prefix stage (few exact hits).
    for query in ("auth", "retr", "billing_serv", "pool size", "deploy", "tenac"):
        assert_same_search(lite, pg, query, want=200)


@pytest.mark.skipif(not LOCOMO.exists(), reason="the LoCoMo data set is not on this machine")
def test_locomo_same_postings_and_results(stores: tuple[MemoryStore, MemoryStore]) -> None:
    conversations = json.loads(LOCOMO.read_text(encoding="utf-8"))[:2]
    memories = [
        NewMemory("fact", f"{turn['speaker']}: {turn['text']}")
        for conversation in conversations
        for key, turns in conversation["conversation"].items()
        if key.startswith("session_") and isinstance(turns, list)
        for turn in turns
    ]
    store_both(stores, memories)
    lite, pg = stores
    assert_index_equal(lite, pg)
    for conversation in conversations:
        for qa in conversation["qa"][:80]:
            assert_same_search(lite, pg, qa["question"])


def test_common_terms_and_filters_follow_sqlite(
    stores: tuple[MemoryStore, MemoryStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With COMMON_DF lowered, ordinary words are common: the all-common path (newest
    rows holding all, else any) and the IDF of common terms are compared too, under
    every mask, the kinds filter and another namespace."""
    memories, questions = agent_memories()
    store_both(stores, memories)
    store_both(stores, [NewMemory("fact", "deploy the billing service", namespace="other")] * 3)
    lite, pg = stores
    monkeypatch.setattr(search, "COMMON_DF", 20)
    for question in questions[:40] + ["service test deploy", "deploy", "the service"]:
        assert_same_search(lite, pg, question)
        assert_same_search(lite, pg, question, cached=True)
        assert_same_search(lite, pg, question, as_of=None)
        assert_same_search(lite, pg, question, as_of=KnownAt(NOW, NOW))
        assert_same_search(lite, pg, question, kinds=["decision", "procedure"])
        assert_same_search(lite, pg, question, namespace="other")
        assert_same_search(lite, pg, question, apply_mask=False)


def test_text_indexes_answer_alike(stores: tuple[MemoryStore, MemoryStore]) -> None:
    """Each capability of the two engines' text indexes, asked the same, answers the
    same: the parity under the one search pipeline, and what the node cache alone asks
    on SQLite (newest_unfiltered) and entity resolution (entities_by_phrase)."""
    memories, _ = agent_memories()
    store_both(stores, memories)
    store_both(stores, [NewMemory("fact", "deploy the billing service", namespace="other")] * 3)
    lite, pg = stores
    store_both(
        stores,
        [NewMemory("fact", "names", entities=["Billing Service", "Résumé Parser", "auth-svc v2"])],
    )
    indexes = [text_index_of(store.connection) for store in stores]
    sqlite_index, pg_index = indexes
    terms = [["deploy"], ["servic", "deploy"], ["billing", "test", "the"], ["zzzunknown"]]
    for limit in (1, 5, 40, 10_000):
        assert _same_sets(
            sqlite_index.postings([("deploy",), ("choose", "chose", "chosen")], limit),
            pg_index.postings([("deploy",), ("choose", "chose", "chosen")], limit),
        )
        for group in terms:
            for every in (True, False):
                assert sqlite_index.newest_unfiltered(group, every, limit) == (
                    pg_index.newest_unfiltered(group, every, limit)
                ), (group, every, limit)
            for namespace in ("default", "other"):
                for kinds in (None, ["decision"]):
                    lite_filters, pg_filters = (
                        index.filters("n.tombstoned = 0", [], kinds) for index in indexes
                    )
                    assert sqlite_index.newest_matching(group, namespace, lite_filters, limit) == (
                        pg_index.newest_matching(group, namespace, pg_filters, limit)
                    )
                    lite_ranked = dict(
                        sqlite_index.prefix_ranked(group, namespace, lite_filters, limit)
                    )
                    pg_ranked = dict(pg_index.prefix_ranked(group, namespace, pg_filters, limit))
                    assert lite_ranked.keys() == pg_ranked.keys()
                    for seq, rank in lite_ranked.items():
                        assert math.isclose(pg_ranked[seq], rank, rel_tol=1e-9)
                    seqs = sorted(lite_ranked)
                    assert sqlite_index.read_rows(NODE_COLUMNS, seqs, namespace, lite_filters) == (
                        pg_index.read_rows(NODE_COLUMNS, seqs, namespace, pg_filters)
                    )
    for words in (["billing", "service"], ["resume", "parser"], ["auth", "svc", "v2"]):
        found = [index.entities_by_phrase(words, "default", 20) for index in indexes]
        assert found[0] and sorted(found[0]) == sorted(found[1]), words


def _same_sets(a: Any, b: Any) -> bool:
    """Postings compare as sets: FTS5 returns a tuple in its order, PostgreSQL a set."""
    (total_a, lists_a), (total_b, lists_b) = a, b
    return total_a == total_b and [None if x is None else set(x) for x in lists_a] == [
        None if x is None else set(x) for x in lists_b
    ]


# ---------------------------------------------------------------- write paths
def test_index_follows_changes_and_purges(stores: tuple[MemoryStore, MemoryStore]) -> None:
    memories, _ = agent_memories()
    ids = store_both(stores, memories[:200])
    lite, pg = stores
    decision = next(i for i, m in zip(ids, memories, strict=False) if m.kind == "decision")
    for store in stores:
        with store.storage.transaction():
            # Content and a decision's rationale rewritten in place (no command does the
            # former today; the index must follow any write path that does).
            store.connection.execute(
                "UPDATE mem_nodes SET content = ? WHERE id = ?", ("zebra crossing rebuilt", ids[3])
            )
            store.connection.execute(
                "UPDATE mem_nodes SET data = ? WHERE id = ?",
                (json.dumps({"rationale": "quokka habitat", "rejected": ["wombat"]}), decision),
            )
        store.forget(ids[5])
        store.forget(ids[7], purge=True)
        store.forget(ids[9], purge=True)
    assert_index_equal(lite, pg)
    for query in ("zebra", "quokka habitat", "wombat", memories[3].content, memories[7].content):
        assert_same_search(lite, pg, query)
        assert_same_search(lite, pg, query, apply_mask=False)


def test_why_is_sqlite_json_text() -> None:
    """A decision's reasons are indexed as SQLite's json_extract renders them: escapes
    stay as written (FTS5 sees "u00e9", not "é")."""
    data = json.dumps({"rationale": "café", "rejected": ["naïve\nplan"]})
    assert why_text("decision", data) == 'caf\u00e9 ["na\\u00efve\\nplan"]'
    assert why_text("fact", data) is None
    assert tokens(why_text("decision", data) or "") == ["cafe", "na", "u00efv", "nplan"]


# ---------------------------------------------------------------- random stores
WORDS = (
    "deploy deployed deploying deployment service services test tests testing cache "
    "cached redis auth token tokens rotation rotated the a of and to fix fixed fixing "
    "billing bill queue kafka rabbitmq café naïve Über resume résumé x2 v1 42 2026 "
    "relational conditional hopeful goodness running runner runs generalization"
).split()
text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=14).map(" ".join)
query = st.one_of(
    text,
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(
        lambda words: " ".join(w[: max(3, len(w) - 2)] for w in words)
    ),
)
memory = st.builds(
    lambda kind, content, rationale, namespace: NewMemory(
        kind,
        content,
        rationale=rationale if kind == "decision" else None,
        namespace=namespace,
    ),
    st.sampled_from(["fact", "decision", "action"]),
    text,
    st.one_of(st.none(), text),
    st.sampled_from([None, "other"]),
)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, pg_server: Any) -> Iterator[Any]:
    """One pair of stores for every example: each example adds its memories to both,
    so corpus-wide figures (IDF, average length) stay equal between the engines."""
    lite, pg = pair(tmp_path_factory.mktemp("shared") / "memory.db", pg_server.fresh_url())
    yield lite, pg
    lite.close()
    pg.close()


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(memories=st.lists(memory, min_size=1, max_size=25), queries=st.lists(query, max_size=4))
def test_random_stores_rank_alike(
    shared: Any, memories: list[NewMemory], queries: list[str]
) -> None:
    store_both(shared, memories)
    lite, pg = shared
    for q in queries + [memories[0].content]:
        for namespace in ("default", "other"):
            assert_same_search(lite, pg, q, namespace=namespace, want=10)
            assert_same_search(lite, pg, q, namespace=namespace, as_of=None, want=10)


def test_irregular_past_forms_found_alike(stores: tuple[MemoryStore, MemoryStore]) -> None:
    """A key term that is an irregular verb is looked up with its past forms (recall/
    irregular.py) on both engines: one key, the union of the forms' rows."""
    store_both(
        stores,
        [
            NewMemory("decision", "We chose Elasticsearch for search"),
            NewMemory("fact", "Caroline went to the support group"),
            NewMemory("fact", "The chosen queue is Kafka"),
            NewMemory("fact", "We go to the office on Mondays"),
        ],
    )
    lite, pg = stores
    for query in ("what did we choose", "where did Caroline go", "choosing a queue", "goes"):
        assert_same_search(lite, pg, query)
    assert assert_same_search(lite, pg, "what did we choose")
