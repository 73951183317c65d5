"""Recall quality, round 4 (issue 18): a query that names a topic favours the decision
about it. bench/quality.py measures what it bought (bench/results.md)."""

from __future__ import annotations

import pytest

from nervamem import MemoryStore
from nervamem.recall import topics

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

RETRY_DECISION = (
    "Use a urllib3 Retry(total=5, backoff_factor=0.5, status_forcelist=[429, 502, 503]) "
    "as max_retries of the HTTPAdapter mounted on the API client's Session"
)


@pytest.mark.parametrize(
    ("query", "topic"),
    [
        ("retries on the API client", True),
        ("netrc", True),
        ("CVE-2018-18074", True),
        ("JWT auth for the mobile app", True),
        ("where does the API client get its base URL", False),
        ("how are retries configured on HTTPAdapter", False),
        ("retries on the API client?", False),
        ("is the cache warm", False),
        ("Did we pin urllib3", False),
        ("the reason why we pinned urllib3", False),
        ("", False),
        ("  ", False),
    ],
)
def test_names_a_topic(query: str, topic: bool) -> None:
    assert topics.names_a_topic(query) is topic


def _store_retries(store: MemoryStore) -> tuple[str, str]:
    decision = store.store(
        "decision", RETRY_DECISION, rationale="a bare integer never retries on 429"
    )
    note = store.store("fact", "Added a test that the API client retries a 503 response")
    for n in range(6):
        store.store("fact", f"Routine note {n} about the build cache and the linter")
    return decision, note


def test_a_topic_puts_the_decision_before_a_note_with_the_same_words(store: MemoryStore) -> None:
    decision, note = _store_retries(store)
    topic = [i.id for i in store.recall("retries on the API client", hops=0).items]
    assert topic[:2] == [decision, note]
    # Asked as a question, the note that holds the words closest together leads.
    asked = [i.id for i in store.recall("does the API client have retries", hops=0).items]
    assert asked[:2] == [note, decision]


def test_favour_decisions_weighs_decisions_only_for_a_topic(store: MemoryStore) -> None:
    decision, note = _store_retries(store)
    ratios = {}
    for query in ("retries on the API client", "does the API client have retries"):
        items = {i.id: i for i in store.recall(query, hops=0).items}
        ratios[query] = items[decision].relevance / items[note].relevance
    # Asked, the note is the best match (1.0); named as a topic, the decision is raised
    # 2.5x but to no more than 1.1x the best relevance before it (the note's).
    asked = ratios["does the API client have retries"]
    raised = min(topics.TOPIC_DECISION_WEIGHT * asked, topics.TOPIC_DECISION_CEILING)
    assert asked < 1.0
    assert ratios["retries on the API client"] == pytest.approx(raised, rel=0.05)


def test_a_topic_recall_at_80_tokens_shows_the_decision(store: MemoryStore) -> None:
    decision, _ = _store_retries(store)
    result = store.recall("retries on the API client", budget_tokens=80)
    assert result.used_tokens <= 80
    assert result.items[0].id == decision
    assert "### Decisions" in result.markdown or result.markdown.startswith("## Decisions")


def test_a_decision_that_only_expansion_reached_keeps_its_weight(store: MemoryStore) -> None:
    hit = store.store("fact", "the ledger rounds half-even", entities=["Billing"])
    neighbour = store.store("decision", "Invoices are issued monthly", entities=["Billing"])
    items = {i.id: i for i in store.recall("ledger rounds").items}
    assert items[neighbour].via == "expansion"
    assert items[neighbour].relevance == pytest.approx(items[hit].relevance * 0.6**2)


def test_relevance_stays_within_one_when_a_rule_raises_a_candidate(store: MemoryStore) -> None:
    decision, note = _store_retries(store)
    items = {i.id: i for i in store.recall("retries on the API client", hops=0).items}
    assert items[decision].relevance == 1.0
    assert 0.0 < items[note].relevance < 1.0


def test_a_raised_decision_stays_near_the_notes_that_match_as_well(store: MemoryStore) -> None:
    # Review finding F-2: unbounded, the loosely matching decision scored 2.5x the notes
    # that matched best, and a relative floor of 0.5 left only the decision.
    notes = [
        store.store("fact", "The API client lives in client.py"),
        store.store("fact", "API client timeouts are 10 seconds"),
    ]
    decision = store.store("decision", "Cache API client responses for 60 seconds")
    for n in range(6):
        store.store("fact", f"Routine note {n} about the build cache and the linter")
    result = store.recall("API client", hops=0, min_score=0.5)
    ids = [i.id for i in result.items]
    assert ids[0] == decision
    assert set(notes) <= set(ids)
    relevance = {i.id: i.relevance for i in result.items}
    assert relevance[decision] == 1.0
    best_note = max(relevance[note] for note in notes)
    assert best_note == pytest.approx(1.0 / topics.TOPIC_DECISION_CEILING)
