"""recall/node_cache.py: the in-process cache of node rows, degrees and neighbours.

What it must never do: serve a fact the store no longer holds (another connection's
write, this store's own store / supersede / forget / purge), lose the access counts a
recall commits, or let a cached row past the namespace filter or the temporal mask that
the SQL would have applied."""

from __future__ import annotations

import gc
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nervamem import MemoryStore, nodes
from nervamem.errors import NervamemError
from nervamem.models import RecallResult
from nervamem.recall import api, candidates, expansion, node_cache
from nervamem.recall.candidates import NODE_COLUMNS
from nervamem.recall.mask import mask_sql

from ..conftest import CountingRandom, FakeClock

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

sqlite_only = pytest.mark.sqlite_only


def facts_of(store: MemoryStore) -> node_cache.NodeFacts:
    facts = node_cache.for_recall(store.storage)
    assert facts is not None
    return facts


def cached_row_ids(store: MemoryStore) -> set[str]:
    return {row[0] for row in facts_of(store).rows.values()}


def ids_of(store: MemoryStore, query: str, **kwargs: Any) -> list[str]:
    return [item.id for item in store.recall(query, **kwargs).items]


def traced_recall(store: MemoryStore, query: str) -> tuple[RecallResult, list[str]]:
    """A recall and every statement SQLite ran for it."""
    statements: list[str] = []
    store.storage.connection.set_trace_callback(statements.append)
    try:
        return store.recall(query), statements
    finally:
        store.storage.connection.set_trace_callback(None)


@pytest.fixture
def filled(store: MemoryStore) -> dict[str, str]:
    first = store.store("decision", "Chose redis for the session cache", entities=["Cache"])
    second = store.store("fact", "The session cache holds tokens for an hour", entities=["Cache"])
    third = store.store("action", "Deployed the cache cluster to eu-west", entities=["Deploy"])
    return {"first": first, "second": second, "third": third}


# --------------------------------------------------------------------- when it is used


def test_postgresql_and_transactions_have_no_cache(store: MemoryStore, engine: str) -> None:
    store.store("fact", "anything")
    if engine == "postgresql":
        assert node_cache.for_recall(store.storage) is None
        return
    assert node_cache.for_recall(store.storage) is not None
    with store.storage.transaction():
        assert node_cache.for_recall(store.storage) is None


@sqlite_only
def test_a_second_recall_reads_no_node_row_again(
    store: MemoryStore, filled: dict[str, str]
) -> None:
    first = store.recall("session cache")
    cached = cached_row_ids(store)
    assert set(filled.values()) <= cached
    again, statements = traced_recall(store, "session cache")
    assert not [s for s in statements if "FROM mem_nodes n WHERE n.seq IN" in s]
    assert not [s for s in statements if "FROM mem_degree" in s]
    assert [i.id for i in again.items] == [i.id for i in first.items]


@sqlite_only
def test_short_ids_and_successors_are_looked_up_once_a_generation(
    store: MemoryStore, filled: dict[str, str]
) -> None:
    first = store.recall("session cache")
    again, statements = traced_recall(store, "session cache")
    assert not [s for s in statements if "LEFT JOIN mem_nodes own" in s]
    # Nothing here supersedes anything, so no rival is looked up either.
    assert not [s for s in statements if "'SUPERSEDES'" in s or "FROM mem_links" in s]
    assert [i.short_id for i in again.items] == [i.short_id for i in first.items]
    store.store("fact", "The session cache keeps its keys warm", entities=["Cache"])
    after = store.recall("session cache")
    shown = {i.id: i.short_id for i in after.items}
    assert len(shown) > len(first.items)
    assert shown == nodes.short_ids(store.storage, list(shown))


def half_cached(store: MemoryStore, notes: int) -> tuple[node_cache.NodeFacts, list[str]]:
    """``notes`` memories about a shared entity (a hub beyond 32 edges at 40) and three
    others, recalled, then every other row dropped from the cache (read by ID through
    the views); the cache and every node ID."""
    for number in range(notes):
        store.store("fact", f"session cache note {number}", entities=["Cache", f"E{number % 3}"])
    store.recall("session cache note")
    facts = facts_of(store)
    every = [row[0] for row in store.storage.connection.execute("SELECT id FROM mem_nodes")]
    for node_id in every[::2]:
        if node_id in facts.ids:
            del facts.rows[facts.ids.pop(node_id)]
    assert any(node_id not in facts.ids for node_id in every)
    assert any(node_id in facts.ids for node_id in every)
    return facts, every


@sqlite_only
def test_degrees_by_seq_are_the_views(store: MemoryStore) -> None:
    facts, every = half_cached(store, 40)
    conn = store.storage.connection
    facts.degree.clear()
    by_view = candidates.degrees(conn, every)
    assert max(by_view.values()) > 32
    cached = candidates.degrees(conn, every, facts)
    assert {k: v for k, v in cached.items() if v} == by_view
    assert dict(facts.degree) == {node_id: by_view.get(node_id, 0) for node_id in every}


@sqlite_only
def test_neighbours_by_seq_are_the_views_with_their_rows(store: MemoryStore) -> None:
    cause = store.store("action", "Rotated the session cache keys")
    store.store("fact", "The session cache logged everyone out", caused_by=[cause])
    store.store("fact", "A note derived from the cache", derived_from=[cause])
    facts, every = half_cached(store, 12)
    conn = store.storage.connection
    facts.neighbours.clear()
    facts.causal.clear()
    plain = expansion.neighbours(conn, every)
    assert any(plain.values())
    assert expansion.neighbours(conn, every, facts) == plain
    causal = expansion.causal_pairs(conn, every)
    assert len(causal) == 4
    assert expansion.causal_pairs(conn, every, facts) == causal
    for seq, row in facts.rows.items():
        assert (
            row[:9]
            == conn.execute(
                f"SELECT {NODE_COLUMNS} FROM mem_nodes n WHERE n.seq = ?", (seq,)
            ).fetchone()
        )


# ------------------------------------------------------------------ this store's writes


@sqlite_only
def test_own_store_empties_it(store: MemoryStore, filled: dict[str, str]) -> None:
    store.recall("session cache")
    new = store.store("fact", "The session cache is flushed nightly", entities=["Cache"])
    assert cached_row_ids(store) == set()
    assert new in ids_of(store, "session cache")


@sqlite_only
def test_own_supersede_shows_the_new_version_only(
    store: MemoryStore, filled: dict[str, str]
) -> None:
    assert filled["first"] in ids_of(store, "session cache redis")
    newer = store.store(
        "decision", "Chose memcached for the session cache", supersedes=filled["first"]
    )
    found = ids_of(store, "session cache redis memcached")
    assert newer in found
    assert filled["first"] not in found


@sqlite_only
@pytest.mark.parametrize("purge", [False, True])
def test_own_forget_never_comes_back(
    store: MemoryStore, filled: dict[str, str], purge: bool
) -> None:
    assert filled["second"] in ids_of(store, "session cache tokens")
    assert filled["second"] in cached_row_ids(store)
    store.forget(filled["second"], purge=purge)
    for _ in range(2):
        assert filled["second"] not in ids_of(store, "session cache tokens")
        assert filled["second"] not in ids_of(store, "tokens hour")
    kept = [row for row in facts_of(store).rows.values() if row[0] == filled["second"]]
    if purge:
        assert kept == []
    else:  # read again after the forget: tombstoned, and the mask keeps it out
        assert [row[10] for row in kept] in ([], [1])


@sqlite_only
def test_a_rolled_back_write_empties_it(store: MemoryStore, filled: dict[str, str]) -> None:
    store.recall("session cache")
    with pytest.raises(RuntimeError), store.storage.transaction():
        store.storage.connection.execute(
            "UPDATE mem_nodes SET content = 'changed' WHERE id = ?", (filled["first"],)
        )
        raise RuntimeError("rolled back")
    assert cached_row_ids(store) == set()


@sqlite_only
def test_a_write_outside_transaction_empties_it(store: MemoryStore, filled: dict[str, str]) -> None:
    store.recall("session cache")
    store.storage.connection.execute(
        "UPDATE mem_nodes SET tombstoned = 1 WHERE id = ?", (filled["second"],)
    )
    assert filled["second"] not in ids_of(store, "session cache tokens")


# ------------------------------------------------------------------ another connection


@sqlite_only
def test_another_connection_forgetting_empties_it(
    make_store: Callable[..., MemoryStore], filled: dict[str, str], store: MemoryStore
) -> None:
    assert filled["second"] in ids_of(store, "session cache tokens")
    other = make_store()
    other.forget(filled["second"])
    assert filled["second"] not in ids_of(store, "session cache tokens")


@sqlite_only
def test_another_process_writing_empties_it(
    store: MemoryStore, filled: dict[str, str], db_path: Path
) -> None:
    assert filled["third"] in ids_of(store, "cache cluster")
    script = (
        "import sys; from nervamem import MemoryStore\n"
        "with MemoryStore(sys.argv[1]) as s:\n"
        "    s.forget(sys.argv[2])\n"
        "    s.store('fact', 'The cache cluster moved to us-east', entities=['Deploy'],\n"
        "            valid_from='2026-01-01')\n"
    )
    subprocess.run(
        [sys.executable, "-c", script, str(db_path), filled["third"]], check=True, timeout=60
    )
    found = store.recall("cache cluster").items
    assert filled["third"] not in [i.id for i in found]
    assert "us-east" in " ".join(i.content for i in found)


# ------------------------------------------------------------------------ access counts


def sqlite_rows(db_path: Path, seqs: list[int]) -> dict[int, tuple[Any, ...]]:
    with closing(sqlite3.connect(db_path)) as conn:
        marks = ",".join("?" * len(seqs))
        return {
            row[8]: row
            for row in conn.execute(
                f"SELECT {NODE_COLUMNS}, n.namespace, n.tombstoned FROM mem_nodes n "
                f"WHERE n.seq IN ({marks})",
                seqs,
            )
        }


@sqlite_only
def test_cached_rows_hold_the_committed_access_counts(
    store: MemoryStore, filled: dict[str, str], db_path: Path
) -> None:
    for _ in range(3):
        shown = store.recall("session cache")
        assert shown.items
    facts = facts_of(store)
    assert facts.rows
    cached = dict(facts.rows)
    assert sqlite_rows(db_path, list(cached)) == cached  # the counts wait in memory
    store.storage.flush_access_counts()
    assert len(facts_of(store).rows) == len(cached)  # the same generation: not emptied
    cached = dict(facts.rows)
    assert sqlite_rows(db_path, list(cached)) == cached
    assert max(row[7] for row in cached.values()) == 3


# --------------------------------------------------------- the same answers as without


WORDS = ["session", "cache", "redis", "deploy", "tokens", "cluster", "hour", "auth"]
sentence = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
operation = st.one_of(
    st.tuples(st.just("store"), sentence, st.sampled_from(["Cache", "Deploy", "Auth"])),
    st.tuples(st.just("supersede"), st.integers(0, 20), sentence),
    st.tuples(st.just("forget"), st.integers(0, 20), st.just("")),
    st.tuples(st.just("purge"), st.integers(0, 20), st.just("")),
    st.tuples(st.just("other"), sentence, st.sampled_from(["Cache", "Deploy"])),
    st.tuples(st.just("recall"), sentence, st.sampled_from(["", "2026-07-03T12:00:30Z"])),
    st.tuples(st.just("recall"), sentence, st.just("")),
)


def replay(folder: Path, operations: list[tuple[str, Any, str]]) -> list[object]:
    """Run the operations on a new store in ``folder`` (a second MemoryStore on the
    same file for "other"), and return what each recall answered."""
    path = folder / "memory.db"
    start = datetime(2026, 7, 3, 12, 0, 0, tzinfo=timezone.utc)
    answers: list[object] = []
    with (
        MemoryStore(path, clock=FakeClock(), random_source=CountingRandom()) as store,
        MemoryStore(
            path,
            clock=FakeClock(start + timedelta(days=1)),
            random_source=CountingRandom(),
        ) as other,
    ):
        stored: list[str] = []
        for name, first, second in operations:
            try:
                if name == "store":
                    stored.append(store.store("fact", first, entities=[second]))
                elif name == "other":
                    stored.append(other.store("fact", first, entities=[second]))
                elif name == "supersede" and stored:
                    old = stored[first % len(stored)]
                    stored.append(store.store("fact", second, supersedes=old))
                elif name in ("forget", "purge") and stored:
                    store.forget(stored[first % len(stored)], purge=name == "purge")
                if name == "recall":
                    answers.append(answer(store, first, second or None))
                else:  # what was there before the write and what changed, at once
                    answers.append(answer(store, "session cache redis tokens", None))
            except NervamemError as exc:
                answers.append(type(exc).__name__)
    return answers


def answer(store: MemoryStore, query: str, as_of: str | None) -> object:
    result = store.recall(query, as_of=as_of, budget_tokens=300)
    return [result.markdown, [(i.id, i.score, i.frequency, i.connectivity) for i in result.items]]


@pytest.fixture
def no_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], None]]:
    def turn_off() -> None:
        monkeypatch.setattr(api, "for_recall", lambda storage: None)

    yield turn_off


@sqlite_only
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(operations=st.lists(operation, min_size=1, max_size=14))
def test_recalls_answer_as_without_the_cache(
    operations: list[tuple[str, Any, str]],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cached = replay(tmp_path_factory.mktemp("cached"), operations)
    with monkeypatch.context() as patch:
        patch.setattr(api, "for_recall", lambda storage: None)
        plain = replay(tmp_path_factory.mktemp("plain"), operations)
    assert cached == plain


# ------------------------------------------------------ the mask's twin agrees with SQL

TIMES = ["2026-01-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-03-01T00:00:00.5Z", "2027-01-01"]
rows = st.lists(
    st.tuples(
        st.sampled_from(["fact", "decision", "entity"]),
        st.sampled_from(TIMES),  # valid_from
        st.one_of(st.none(), st.sampled_from(TIMES)),  # valid_until
        st.sampled_from([0, 1]),  # tombstoned
        st.sampled_from(["default", "a", "A", "a "]),  # namespace
    ),
    max_size=20,
)


@settings(max_examples=300, deadline=None)
@given(
    spec=rows,
    as_of=st.one_of(st.none(), st.sampled_from(TIMES)),
    namespace=st.sampled_from(["default", "a", "A"]),
    kinds=st.one_of(st.none(), st.lists(st.sampled_from(["fact", "decision", "entity"]))),
)
def test_admits_agrees_with_the_sql_mask(
    spec: list[tuple[str, str, str | None, int, str]],
    as_of: str | None,
    namespace: str,
    kinds: list[str] | None,
) -> None:
    with closing(sqlite3.connect(":memory:")) as conn:
        conn.execute(
            "CREATE TABLE mem_nodes (seq INTEGER PRIMARY KEY, id TEXT, kind TEXT, "
            "content TEXT, namespace TEXT, valid_from TEXT NOT NULL, valid_until TEXT, "
            "recorded_at TEXT, confidence REAL, tombstoned INTEGER, access_count INTEGER)"
        )
        conn.executemany(
            "INSERT INTO mem_nodes VALUES (?, ?, ?, 'x', ?, ?, ?, '2026-01-01', 1.0, ?, 0)",
            [
                (seq, f"n{seq}", kind, ns, start, until, dead)
                for seq, (kind, start, until, dead, ns) in enumerate(spec, start=1)
            ],
        )
        mask, params = mask_sql(as_of)
        if kinds:
            mask += f" AND n.kind IN ({','.join('?' * len(kinds))})"
            params = [*params, *kinds]
        by_sql = {
            seq
            for (seq,) in conn.execute(
                f"SELECT n.seq FROM mem_nodes n WHERE +n.namespace = ? AND {mask}",
                [namespace, *params],
            )
        }
        cached = conn.execute(
            f"SELECT {NODE_COLUMNS}, n.namespace, n.tombstoned FROM mem_nodes n"
        ).fetchall()
    by_twin = {row[8] for row in cached if node_cache.admits(row, namespace, as_of, kinds)}
    assert by_twin == by_sql


# ------------------------- what search reads again: words, postings (issue 21, round 5)


@sqlite_only
def test_scored_rows_keep_their_words_until_the_store_changes(
    store: MemoryStore, filled: dict[str, str]
) -> None:
    store.recall("session cache")
    search = facts_of(store).search
    kept = dict(search.texts)
    seqs = {row[8] for row in facts_of(store).rows.values() if row[0] in filled.values()}
    assert seqs <= set(kept)
    words = {word for analysis in kept.values() for word in analysis[0]}
    assert "redis" in words
    # Every word is the vocabulary's one copy of it.
    assert all(search.vocabulary[word] is word for word in words)
    store.recall("session cache")
    assert dict(facts_of(store).search.texts) == kept
    store.store("fact", "The session cache is flushed nightly", entities=["Cache"])
    assert dict(facts_of(store).search.texts) == {}
    assert facts_of(store).search.vocabulary == {}


@sqlite_only
def test_postings_are_read_once_until_the_store_changes(
    store: MemoryStore, filled: dict[str, str]
) -> None:
    first = ids_of(store, "session cache")
    postings = dict(facts_of(store).search.postings)
    assert set(postings) == {"session", "cache"}
    cache_rows = len(postings["cache"] or ())
    assert cache_rows >= 3  # the three memories (and the entity's own node)
    statements: list[str] = []
    store.storage.connection.set_trace_callback(statements.append)
    try:
        again = ids_of(store, "session cache")
    finally:
        store.storage.connection.set_trace_callback(None)
    assert again == first
    assert not [s for s in statements if "SELECT rowid FROM mem_fts" in s]
    new = store.store("fact", "A second session cache for the workers", entities=["Cache"])
    assert facts_of(store).search.postings == {}
    assert new in ids_of(store, "session cache")
    assert len(facts_of(store).search.postings["cache"] or ()) == cache_rows + 1


def test_text_analyses_postings_and_vocabulary_are_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(node_cache, "MAX_TEXTS", 3)
    monkeypatch.setattr(node_cache, "MAX_VOCABULARY", 4)
    monkeypatch.setattr(node_cache, "MAX_POSTING_ROWS", 5)
    search = node_cache.SearchFacts()
    for seq in range(10):
        words = search.interned([f"w{seq}", "shared", f"v{seq}"])
        search.keep_text(seq, (words, words, True))
        search.keep_postings(f"t{seq}", (seq, seq + 100) if seq % 3 else None)
        assert len(search.texts) <= 3
        assert len(search.vocabulary) <= 4 + 3
        assert search.posting_rows == sum(len(rows or ()) for rows in search.postings.values())
        assert search.posting_rows <= 5
    assert list(search.texts) == [7, 8, 9]  # the first kept dropped first
    assert list(search.postings) == ["t6", "t7", "t8", "t9"]  # 0 + 2 + 2 + 0 rows


# ------------------------------------------------------------------ bounded tables


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["put", "use", "settle"]), st.integers(min_value=0, max_value=40)
        ),
        max_size=300,
    ),
    st.integers(min_value=1, max_value=24),
)
def test_recent_stays_bounded_and_drops_what_was_not_used_first(
    steps: list[tuple[str, int]], limit: int
) -> None:
    # Odd keys hold a value the GC tracks (a tuple holding a list), which waits in
    # ``fresh`` however often the table settles; even keys a string, which never does.
    def value_of(key: int) -> object:
        return (f"v{key}", []) if key % 2 else f"v{key}"

    def key_of(value: object) -> int:
        return int((value if isinstance(value, str) else value[0])[1:])  # type: ignore[index]

    table: node_cache.Recent[int, object] = node_cache.Recent()
    model: dict[int, object] = {}  # what the table must hold, but for what it dropped
    for step, key in steps:
        if step == "put":
            table[key] = model[key] = value_of(key)
            if len(table) > limit:
                used_before = set(table.used)
                unused_before = [k for k in table if k not in used_before]
                dropped = table.evict(limit)
                assert len(table) == limit - limit // 8
                # Nothing used since the last eviction goes while an unused entry stays.
                if any(key_of(v) in used_before for v in dropped):
                    assert all(k not in table for k in unused_before)
                for value in dropped:
                    del model[key_of(value)]
        elif step == "settle":
            table.settle(every=key % 2 == 0)
        elif key in table:
            table.move_to_end(key)
        assert dict(table) == model
        assert set(table.used) <= set(table)
        assert not set(table.entries) & set(table.fresh)
        assert not gc.is_tracked(table.entries)  # what the GC tracks waits in fresh


def test_rows_beyond_the_cap_are_dropped_with_their_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(node_cache, "MAX_ROWS", 16)
    facts = node_cache.NodeFacts()
    for seq in range(1, 60):
        if seq % 3 == 0:
            facts.rows.move_to_end(1)  # one row in use all along
        facts.keep_row(
            (f"f{seq:04d}", "fact", "x", "2026", None, "2026", 1.0, 0, seq, "default", 0)
        )
        assert len(facts.rows) <= 16
        assert facts.ids == {row[0]: seq_ for seq_, row in facts.rows.items()}
    assert 1 in facts.rows


@sqlite_only
def test_what_the_cache_keeps_per_node_is_left_alone_by_the_cyclic_gc(
    store: MemoryStore, filled: dict[str, str]
) -> None:
    # A full collection walks every tracked object: lists and sets kept per node made
    # each one cost ~9 ms at 100k nodes (bench/results.md, "The GC and the caches").
    # Tuples of strings and ints are untracked by the first collection that sees them
    # (a tuple of such tuples, a text's words, by the next).
    store.recall("session cache")
    store.recall("cache cluster deploy")
    facts = facts_of(store)
    gc.collect()
    gc.collect()
    kept = [
        *facts.rows.values(),
        *facts.neighbours.values(),
        *facts.causal.values(),
        *(rows for rows in facts.search.postings.values() if rows is not None),
        *facts.search.texts.values(),
    ]
    assert facts.neighbours and facts.search.postings  # the recalls filled them
    assert [value for value in kept if gc.is_tracked(value)] == []


@sqlite_only
def test_the_caches_tables_stay_untracked_by_the_cyclic_gc_between_full_collections(
    store: MemoryStore, filled: dict[str, str]
) -> None:
    # Only a full collection untracks a dict again, and it walks every entry of each
    # tracked one (~5-8 ms over the tables at 100k nodes). What a recall keeps waits in
    # ``fresh`` until a young collection has let go of it; the next recall settles it.
    # A recall's items go back to ``fresh`` when their access counts are raised (new
    # rows); at 30 tokens it shows one or two of the rows it read.
    store.recall("session cache", budget_tokens=30)
    gc.collect(0)
    # A text's words are a tuple of tuples: let go of by the collection that sees the
    # outer one again, in the next generation.
    gc.collect(1)
    store.recall("cache cluster deploy", budget_tokens=30)
    facts = facts_of(store)
    tables = {
        "rows": facts.rows,
        "degree": facts.degree,
        "neighbours": facts.neighbours,
        "causal": facts.causal,
        "short": facts.short,
        "supersedes": facts.supersedes,
        "texts": facts.search.texts,
    }
    assert facts.rows.entries and facts.search.texts.entries and facts.neighbours.entries
    tracked = [
        name
        for name, table in tables.items()
        if gc.is_tracked(table.entries) or gc.is_tracked(table.used)
    ]
    # Where each root starts a word, by root and seq (issue 21, round 7): ints, never
    # tracked, so only the small table of roots is walked.
    assert facts.search.starts
    tracked += [root for root, codes in facts.search.starts.items() if gc.is_tracked(codes)]
    assert tracked == []


def test_start_codes_past_the_cap_are_dropped_with_the_roots_first_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(node_cache, "MAX_START_CODES", 16)
    search = node_cache.SearchFacts()
    for number in range(6):
        codes = search.starts_of(f"root{number}")
        assert search.starts_of(f"root{number}") is codes
        codes.update(dict.fromkeys(range(4), number))
        search.kept_starts(4)
        assert search.start_codes == sum(map(len, search.starts.values())) <= 16
    assert list(search.starts) == ["root2", "root3", "root4", "root5"]  # 20 codes: 12 left
    search.clear()
    assert search.starts == {} and search.start_codes == 0


def test_texts_past_the_cap_are_dropped_in_a_batch_the_first_kept_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(node_cache, "MAX_TEXTS", 16)
    search = node_cache.SearchFacts()
    for seq in range(17):
        search.keep_text(seq, ((), (), True))
    assert list(search.texts) == list(range(3, 17))  # down to 7/8 of the cap
    for seq in range(17, 19):
        search.keep_text(seq, ((), (), True))
    assert list(search.texts) == list(range(3, 19))


def test_the_tables_settle_only_after_the_gc_collected(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only a collection lets go of a value, so between two collections a settle would
    # check every fresh value in vain (~0.4 ms a repeat recall at 100k nodes).
    counters = [(5, 3, 1)]
    monkeypatch.setattr(node_cache, "get_count", lambda: counters[0])
    facts = node_cache.NodeFacts()
    facts.settle()
    facts.rows[1] = tuple(["f0001", "fact"])  # a new tuple: tracked
    assert 1 in facts.rows.fresh
    gc.collect()  # lets go of it; the counters node_cache reads stay as they were
    assert not gc.is_tracked(facts.rows.fresh[1])
    facts.settle()  # no collection since the last settle: not looked at
    assert 1 in facts.rows.fresh and 1 not in facts.rows.entries
    counters[0] = (5, 4, 1)  # a young collection
    facts.settle()
    assert facts.rows.entries == {1: ("f0001", "fact")} and not facts.rows.fresh


def test_after_young_collections_only_the_values_put_since_are_looked_at(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A value still tracked when the tables settled waits for a middle collection: a
    # first recall at 100k nodes looked at ~840 waiting texts' words again after every
    # young collection (bench/results.md, "A query's first recall at 100k, round 7").
    counters = [(5, 3, 1)]
    monkeypatch.setattr(node_cache, "get_count", lambda: counters[0])
    facts = node_cache.NodeFacts()
    facts.settle()
    for seq in range(1, 4):
        facts.rows[seq] = tuple([f"f{seq:04d}", "fact"])
    facts.rows[4] = (f"f{4:04d}", [])  # holds a list: tracked for as long as it lives
    counters[0] = (5, 4, 1)  # a young collection, before the GC saw them
    facts.settle()
    assert set(facts.rows.fresh) == {1, 2, 3, 4} and not facts.rows.added
    gc.collect()  # lets go of 1-3
    facts.rows[5] = tuple(["f0005", "fact"])
    gc.collect()
    counters[0] = (5, 5, 1)  # young collections only: 5 is looked at, not 1-4
    facts.settle()
    assert set(facts.rows.entries) == {5} and set(facts.rows.fresh) == {1, 2, 3, 4}
    counters[0] = (5, 0, 2)  # a middle collection: every fresh value is looked at
    facts.settle()
    assert set(facts.rows.entries) == {1, 2, 3, 5} and set(facts.rows.fresh) == {4}
    counters[0] = (5, 1, 2)
    facts.settle()
    assert set(facts.rows.fresh) == {4}


def test_the_keys_put_since_the_last_settle_stay_bounded() -> None:
    # A process that never collects (gc.disable()) never settles: past the fresh
    # values' number, settle looks at them all, so no more keys are listed.
    table: node_cache.Recent[int, object] = node_cache.Recent()
    for _ in range(50):
        table[1] = ("v", [])
        table[2] = ("w", [])
    assert len(table.added) <= len(table.fresh) + 1 == 3
    table.settle(every=False)
    assert set(table.fresh) == {1, 2} and not table.added
