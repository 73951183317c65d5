"""Recall as an agent uses it (issue 18): sessions named after the task, decisions with
their rationale, a budget that must hold what matters."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import pytest

from nervamem import MemoryStore
from nervamem.errors import BadInputError
from nervamem.storage.sqlite.migrations import _split_sql

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

DECISION = (
    "Use a urllib3 Retry(total=5, backoff_factor=0.5) as max_retries of the HTTPAdapter "
    "mounted on the API client's Session"
)


@pytest.fixture
def task_store(store: MemoryStore) -> dict[str, str]:
    """Three sessions named after one task, as docs/guide-agents.md recommends."""
    ids: dict[str, str] = {}
    ids["s1"] = store.start_session("configure retries on HTTPAdapter")
    ids["old"] = store.store("decision", "Mount HTTPAdapter(max_retries=3) on the Session")
    store.store("fact", "The API client keeps one requests Session per worker thread")
    store.end_session()
    ids["s2"] = store.start_session("configure retries on HTTPAdapter: backoff on 429")
    ids["decision"] = store.store(
        "decision",
        DECISION,
        supersedes=ids["old"],
        rationale="a bare integer never retries on 429; urllib3 1.24.2 fixes CVE-2018-18074",
        rejected=["tenacity decorators around each call"],
    )
    store.store("fact", "The staging proxy drops about one request in fifty with a 502")
    store.end_session()
    ids["s3"] = store.start_session("configure retries on HTTPAdapter: review fixes")
    store.store("action", "Fixed typos in the client docstrings")
    store.end_session()
    return ids


def test_sessions_rank_below_the_memories_recorded_in_them(
    store: MemoryStore, task_store: dict[str, str]
) -> None:
    result = store.recall("how are retries configured on HTTPAdapter", budget_tokens=1000)
    kinds = [item.kind for item in result.items]
    assert result.items[0].id == task_store["decision"]
    assert kinds.index("session") > 0
    assert task_store["old"] not in {item.id for item in result.items}


def test_a_query_about_the_session_itself_still_finds_it(
    store: MemoryStore, task_store: dict[str, str]
) -> None:
    # Only the title holds "review": the session is the answer.
    assert store.recall("code review", budget_tokens=500).items[0].id == task_store["s3"]
    # Memories hold "fixes" too (an action, a rationale): they come first.
    ids = [item.id for item in store.recall("review fixes", budget_tokens=500).items]
    assert ids.index(task_store["s3"]) > 0


def test_a_decision_is_found_by_its_rationale_and_rejected_alternatives(
    store: MemoryStore, task_store: dict[str, str]
) -> None:
    for query in ("CVE-2018-18074", "tenacity"):
        result = store.recall(query, budget_tokens=500)
        assert [item.id for item in result.items][:1] == [task_store["decision"]], query


def test_a_decision_is_shown_with_its_reasons_within_the_budget(
    store: MemoryStore, task_store: dict[str, str]
) -> None:
    wide = store.recall("CVE-2018-18074", budget_tokens=500)
    item = wide.items[0]
    assert item.rationale is not None and "CVE-2018-18074" in item.rationale
    assert item.rejected == ("tenacity decorators around each call",)
    assert "why: a bare integer never retries on 429" in wide.markdown
    assert "rejected: tenacity decorators around each call" in wide.markdown
    # A budget that holds the decision but not its reasons shows the decision alone.
    tight = store.recall("CVE-2018-18074", budget_tokens=70)
    assert tight.items[0].id == task_store["decision"]
    assert "why:" not in tight.markdown and tight.used_tokens <= 70


def test_a_store_from_before_the_rationale_index_is_reindexed(
    make_store: Callable[..., MemoryStore], tmp_path: Path
) -> None:
    path = tmp_path / "old.db"
    with make_store(path) as old:
        decision = old.store("decision", "Chose JWT", rationale="mobile clients need it")
    _downgrade_to_m004(path)
    with make_store(path) as upgraded:
        assert [i.id for i in upgraded.recall("mobile clients").items] == [decision]
        # The triggers follow the new column: a later decision is found by its reason too.
        later = upgraded.store("decision", "Chose Redis", rejected=["Memcached"])
        assert [i.id for i in upgraded.recall("memcached").items] == [later]


def _downgrade_to_m004(path: Path) -> None:
    """The store as nervamem wrote it before m005: mem_fts on content alone."""
    conn = sqlite3.connect(path)
    with conn:
        for trigger in ("insert", "delete", "update"):
            conn.execute(f"DROP TRIGGER mem_nodes_fts_{trigger}")
        conn.execute("DROP TABLE mem_fts")
        conn.execute("ALTER TABLE mem_nodes DROP COLUMN why")
        statements = _split_sql(
            resources.files("nervamem.storage.sqlite").joinpath("schema.sql").read_text("utf-8")
        )
        for statement in statements:
            if "mem_fts" in statement:
                conn.execute(statement)
        conn.execute("INSERT INTO mem_fts (mem_fts) VALUES ('rebuild')")
        conn.execute("DELETE FROM mem_migrations WHERE name >= 'm005'")
        conn.execute("PRAGMA user_version = 4")
    conn.close()


def test_a_tight_budget_gets_a_short_header_and_one_kind_no_headings(
    store: MemoryStore, task_store: dict[str, str]
) -> None:
    tight = store.recall("staging proxy", budget_tokens=120, kinds=["fact"])
    lines = tight.markdown.splitlines()
    assert lines[0] == f"## Facts as of 2026-07-03 · {tight.used_tokens}/120 tokens"
    assert not any(line.startswith("### ") for line in lines)
    mixed = store.recall("how are retries configured on HTTPAdapter", budget_tokens=200)
    assert mixed.markdown.startswith("## Recall as of 2026-07-03 · ")
    assert "### Decisions" in mixed.markdown.splitlines()


def test_the_relevant_decision_fits_at_80_tokens(
    store: MemoryStore, task_store: dict[str, str]
) -> None:
    result = store.recall("how are retries configured on HTTPAdapter", budget_tokens=80)
    assert result.items[0].id == task_store["decision"]
    assert result.used_tokens <= 80


def test_a_version_whose_validity_ends_says_until_when(
    store: MemoryStore, task_store: dict[str, str]
) -> None:
    old = store.get(task_store["old"])
    result = store.recall("max_retries", as_of=old.valid_from, budget_tokens=500)
    shown = next(item for item in result.items if item.id == task_store["old"])
    until = (shown.valid_until or "")[:10]
    assert until and f"- {shown.short_id} until {until} Mount" in result.markdown


def test_min_score_leaves_out_what_is_only_loosely_related(store: MemoryStore) -> None:
    store.start_session("API client credentials")
    store.store("fact", "The API client keeps one requests Session per worker thread")
    netrc = store.store("fact", "requests reads credentials from ~/.netrc when no auth is passed")
    store.store("fact", "The API client logs each request at DEBUG level")
    store.store("fact", "The API client sends a User-Agent header with its version")
    trust = store.store("fact", "Session.trust_env = False stops requests reading ~/.netrc")
    store.store("fact", "The API client session is closed when the worker stops")
    store.end_session()
    filled = store.recall("netrc", budget_tokens=500)
    assert len(filled.items) > 2  # the budget is filled with the session's other notes
    precise = store.recall("netrc", budget_tokens=500, min_score=0.8)
    assert {item.id for item in precise.items} == {netrc, trust}
    best = precise.items[0].score
    assert all(item.score >= 0.8 * best for item in precise.items)


@pytest.mark.parametrize("min_score", [-0.1, 1.5, float("nan")])
def test_min_score_out_of_range_is_refused(store: MemoryStore, min_score: float) -> None:
    with pytest.raises(BadInputError, match="--min-score"):
        store.recall("anything", min_score=min_score)
