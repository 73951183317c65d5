"""Recall as an agent uses it (issue 18): sessions named after the task, decisions with
their rationale, a budget that must hold what matters."""

from __future__ import annotations

import pytest

from nervamem import MemoryStore

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
    # A memory holds "fixes" too: it comes first, the session right after it.
    ids = [item.id for item in store.recall("review fixes", budget_tokens=500).items]
    assert ids.index(task_store["s3"]) == 1
