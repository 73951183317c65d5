"""Consolidation on a real store file: what counts as a duplicate, what is never
compared, dry runs, idempotence, and strategies plugged in through entry points."""

from __future__ import annotations

import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nervamem import BadInputError, MemoryStore
from nervamem.consolidate import (
    Consolidator,
    Duplicate,
    RuleBasedConsolidator,
    SessionSnapshot,
    jaccard,
    load_consolidator,
    word_set,
)
from nervamem.render.markdown import render

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

TEN = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
NINE = "alpha beta gamma delta epsilon zeta eta theta iota"


def _session(store: MemoryStore, *contents: str, kind: str = "fact") -> list[str]:
    session = store.start_session("work")
    ids = [store.store(kind, text, session=session) for text in contents]
    store.end_session(session)
    return ids


def _tombstoned(store: MemoryStore, node_id: str) -> bool:
    row = store.connection.execute(
        "SELECT tombstoned FROM mem_nodes WHERE id = ?", (node_id,)
    ).fetchone()
    return bool(row[0])


def _pending(store: MemoryStore) -> int:
    return int(
        store.connection.execute(
            "SELECT count(*) FROM mem_review_queue WHERE status = 'pending'"
        ).fetchone()[0]
    )


def test_jaccard_is_on_word_sets_ignoring_case_order_and_punctuation() -> None:
    assert jaccard(word_set("Deploy, the API!"), word_set("the api deploy")) == 1.0
    assert jaccard(word_set(TEN), word_set(TEN + " lambda")) == pytest.approx(10 / 11)
    assert jaccard(word_set(NINE), word_set(NINE + " kappa")) == pytest.approx(0.9)


def test_older_duplicate_is_tombstoned_and_newer_kept(store: MemoryStore) -> None:
    old, new = _session(store, "The deploy runs on push.", "the deploy runs on PUSH")
    result = store.consolidate()
    assert result.jobs_processed == 1
    assert result.tombstoned == (old,)
    assert _tombstoned(store, old) and not _tombstoned(store, new)
    assert store.get(old).data["duplicate_of"] == new
    assert store.get(old).data["consolidated_by"] == "rule-based"
    assert [item.id for item in store.recall("deploy push").items] == [new]


def test_just_above_threshold_is_a_duplicate(store: MemoryStore) -> None:
    old, new = _session(store, TEN, TEN + " lambda")  # 10/11 = 0.909
    assert store.consolidate().tombstoned == (old,)
    assert not _tombstoned(store, new)


def test_exactly_the_threshold_is_not_a_duplicate(store: MemoryStore) -> None:
    ids = _session(store, NINE, NINE + " kappa")  # 9/10 = 0.9, not > 0.9
    result = store.consolidate()
    assert result.jobs_processed == 1
    assert result.tombstoned == ()
    assert not any(_tombstoned(store, i) for i in ids)


def test_different_kinds_are_never_compared(store: MemoryStore) -> None:
    session = store.start_session("mixed")
    fact = store.store("fact", "use JWT for auth", session=session)
    decision = store.store("decision", "use JWT for auth", session=session)
    store.end_session(session)
    assert store.consolidate().tombstoned == ()
    assert not _tombstoned(store, fact) and not _tombstoned(store, decision)


def test_nothing_is_compared_across_sessions(store: MemoryStore) -> None:
    first = _session(store, "the cache lives in redis")
    second = _session(store, "the cache lives in redis")
    result = store.consolidate()
    assert result.jobs_processed == 2
    assert result.tombstoned == ()
    assert not _tombstoned(store, first[0]) and not _tombstoned(store, second[0])


def test_nothing_is_compared_across_namespaces(
    store: MemoryStore, make_store: Callable[..., MemoryStore]
) -> None:
    default = _session(store, "the cache lives in redis")
    elsewhere = make_store(namespace="other")
    other = _session(elsewhere, "the cache lives in redis", "the cache lives in redis")
    # The namespace in use only: the other namespace's job stays pending.
    assert store.consolidate().jobs_processed == 1
    assert _pending(store) == 1
    result = store.consolidate(all_namespaces=True)
    assert result.jobs_processed == 1
    assert result.tombstoned == (other[0],)
    assert not _tombstoned(store, default[0])


def test_memories_outside_the_session_are_untouched(store: MemoryStore) -> None:
    loose = store.store("fact", "the cache lives in redis")
    inside = _session(store, "the cache lives in redis")
    assert store.consolidate().tombstoned == ()
    assert not _tombstoned(store, loose) and not _tombstoned(store, inside[0])


def test_dry_run_changes_nothing_and_consumes_no_job(store: MemoryStore) -> None:
    old, new = _session(store, "ship it on friday", "Ship it on Friday!")
    before = store.connection.execute("SELECT id, tombstoned, data FROM mem_nodes").fetchall()
    preview = store.consolidate(dry_run=True)
    assert preview.dry_run
    assert preview.jobs_processed == 1
    assert preview.tombstoned == (old,)
    assert (
        store.connection.execute("SELECT id, tombstoned, data FROM mem_nodes").fetchall() == before
    )
    assert _pending(store) == 1
    assert store.consolidate().tombstoned == preview.tombstoned
    assert not _tombstoned(store, new)


def test_second_run_does_nothing(store: MemoryStore) -> None:
    _session(store, "ship it on friday", "ship it on friday")
    first = store.consolidate()
    assert first.jobs_processed == 1 and len(first.tombstoned) == 1
    second = store.consolidate()
    assert second.jobs_processed == 0 and second.tombstoned == ()
    job = store.connection.execute("SELECT status, processed_at FROM mem_review_queue").fetchone()
    assert job[0] == "done" and job[1]
    assert store.stats().pending_consolidation == 0


def test_a_chain_of_near_copies_keeps_only_the_newest(store: MemoryStore) -> None:
    ids = _session(store, "the build is green", "The build is green.", "the BUILD is green")
    result = store.consolidate()
    assert sorted(result.tombstoned) == sorted(ids[:2])
    assert {d.duplicate_of for d in result.duplicates} == {ids[2]}


def test_forgotten_and_superseding_nodes_are_not_paired(store: MemoryStore) -> None:
    session = store.start_session("history")
    forgotten = store.store("fact", "the port is 8080", session=session)
    store.forget(forgotten)
    old = store.store("fact", "the api port is 8080", session=session)
    new = store.store("fact", "the api port is 8080", session=session, supersedes=old)
    store.end_session(session)
    assert store.consolidate().tombstoned == ()
    assert not _tombstoned(store, old) and not _tombstoned(store, new)


def test_empty_session_job_is_consumed(store: MemoryStore) -> None:
    session = store.start_session("nothing happened")
    store.end_session(session)
    assert store.consolidate().jobs_processed == 1
    assert _pending(store) == 0


def test_markdown_reports_what_was_tombstoned(store: MemoryStore) -> None:
    _session(store, "ship it on friday", "ship it on friday")
    text = render("consolidate", store.consolidate(dry_run=True))
    assert text.startswith("## Consolidation dry run (rule-based): 1 pending job, 1 would be")
    assert "duplicate of" in text and "jaccard 1.00 > 0.9" in text


# ----------------------------------------------------------------------------- strategies
class KeepFirst:
    """A strategy that drops every member but the oldest."""

    name = "keep-first"

    def find_duplicates(self, session: SessionSnapshot) -> list[Duplicate]:
        first, *rest = session.nodes
        return [Duplicate(n.id, first.id, 1.0, "test strategy") for n in rest]


def test_a_strategy_object_can_be_passed_directly(store: MemoryStore) -> None:
    ids = _session(store, "one", "two", "three")
    assert isinstance(KeepFirst(), Consolidator)
    result = store.consolidate(strategy=KeepFirst())
    assert result.strategy == "keep-first"
    assert sorted(result.tombstoned) == sorted(ids[1:])
    assert {d.session_id for d in result.duplicates} == {result.sessions[0]}


def test_a_strategy_cannot_reach_outside_the_session(store: MemoryStore) -> None:
    outsider = _session(store, "elsewhere")[0]
    _session(store, "here")

    class Rogue:
        name = "rogue"

        def find_duplicates(self, session: SessionSnapshot) -> list[Duplicate]:
            return [Duplicate(outsider, session.nodes[0].id, 1.0, "rogue")]

    with pytest.raises(BadInputError, match="not a live member"):
        store.consolidate(strategy=Rogue())
    assert not _tombstoned(store, outsider)
    assert _pending(store) == 2


def test_default_strategy_comes_from_the_entry_point() -> None:
    assert isinstance(load_consolidator("rule-based"), RuleBasedConsolidator)


def test_unknown_strategy_is_bad_input() -> None:
    with pytest.raises(BadInputError, match="unknown consolidation strategy 'nope'.*rule-based"):
        load_consolidator("nope")


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An installed distribution that registers a consolidator entry point."""
    site = tmp_path / "site"
    dist = site / "nervamem_keep_first-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: nervamem-keep-first\nVersion: 1.0\n"
    )
    (dist / "entry_points.txt").write_text(
        "[nervamem.consolidators]\nkeep-first = nervamem_keep_first:KeepFirst\n"
    )
    (site / "nervamem_keep_first.py").write_text(
        textwrap.dedent(
            """
            from nervamem.consolidate import Duplicate

            class KeepFirst:
                name = "keep-first"

                def find_duplicates(self, session):
                    first, *rest = session.nodes
                    return [Duplicate(n.id, first.id, 1.0, "plugin") for n in rest]
            """
        )
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "nervamem_keep_first", raising=False)
    return "keep-first"


def test_a_plugin_strategy_loads_through_entry_points(store: MemoryStore, plugin: str) -> None:
    ids = _session(store, "completely", "different", "words")
    result = store.consolidate(strategy=plugin)
    assert result.strategy == "keep-first"
    assert sorted(result.tombstoned) == sorted(ids[1:])


# ----------------------------------------------------------------------------- invariant
WORDS = ["cache", "redis", "port", "api", "deploy", "auth", "jwt"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sessions=st.lists(
        st.lists(
            st.tuples(
                st.sampled_from(["fact", "decision"]),
                st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
            ),
            max_size=5,
        ),
        min_size=1,
        max_size=3,
    )
)
def test_every_tombstone_has_a_live_twin_in_its_own_session(
    sessions: list[list[tuple[str, list[str]]]],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        memory = MemoryStore(Path(folder) / "memory.db")
        try:
            owner: dict[str, str] = {}
            for members in sessions:
                session = memory.start_session("s")
                for kind, words in members:
                    owner[memory.store(kind, " ".join(words), session=session)] = session
                memory.end_session(session)
            result = memory.consolidate()
            assert result.jobs_processed == len(sessions)
            for dup in result.duplicates:
                dropped, kept = memory.get(dup.id), memory.get(dup.duplicate_of)
                assert dropped.tombstoned and not kept.tombstoned
                assert owner[dup.id] == owner[dup.duplicate_of] == dup.session_id
                assert dropped.kind == kept.kind
                assert jaccard(word_set(dropped.content), word_set(kept.content)) > 0.9
                assert (dropped.recorded_at, dropped.id) < (kept.recorded_at, kept.id)
            assert memory.consolidate().jobs_processed == 0
        finally:
            memory.close()


def test_rule_based_threshold_is_configurable(make_store: Callable[..., MemoryStore]) -> None:
    memory = make_store()
    _session(memory, NINE, NINE + " kappa")
    assert len(memory.consolidate(strategy=RuleBasedConsolidator(threshold=0.85)).tombstoned) == 1
