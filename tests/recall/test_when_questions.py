"""Recall quality, round 3 (issue 18): a question that asks when favours memories that say
when, irregular verbs find their past forms, and session neighbours weigh less at small
budgets. bench/quality.py measures what each bought (bench/results.md)."""

from __future__ import annotations

import pytest

from nervamem import MemoryStore
from nervamem.recall import expansion, session_context, when
from nervamem.recall.irregular import past_forms

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

# (text, asks for a time, says when): a query is read by the first, a memory by the second.
TIME_TEXTS = [
    ("When did Melanie go to the support group?", True, False),
    ("when was the signing key rotated", True, False),
    ("Since when has the cache been cold?", True, True),
    ("How long did the migration take?", True, False),
    ("What year did we move to Postgres?", True, False),
    ("how many weeks did the rollout take", True, False),
    # "when" as a conjunction asks what, not when.
    ("what happened when we rotated the RS256 signing key?", False, False),
    ("what breaks when the cache is cold", False, False),
    ("I went to a support group yesterday", False, True),
    ("We moved the cron job last week", False, True),
    ("The outage was two days ago", False, True),
    ("The review is on Tuesday", False, True),
    ("Signed the lease in March", False, True),
    ("Started at the company in 2019", False, True),
    ("Port 8080 stays open", False, False),
    ("The weekly report is sent by email", False, False),
    ("", False, False),
]


@pytest.mark.parametrize(("text", "asks", "says"), TIME_TEXTS)
def test_asks_for_time_and_says_when(text: str, asks: bool, says: bool) -> None:
    assert when.asks_for_time(text) is asks
    assert when.says_when(text) is says


def test_a_question_asking_when_prefers_the_memory_that_says_when(store: MemoryStore) -> None:
    vague = store.store("fact", "The maintainers support group met at the old library")
    dated = store.store("fact", "The maintainers support group met at the library yesterday")
    # By their words alone the shorter memory leads; asked when, the one that says when
    # ("meet" finds "met", recall/irregular.py).
    about = [i.id for i in store.recall("maintainers support group meeting", hops=0).items]
    assert about == [vague, dated]
    asked = [i.id for i in store.recall("when did the maintainers support group meet").items]
    assert asked[:2] == [dated, vague]


def test_favour_times_weighs_only_memories_that_say_when(store: MemoryStore) -> None:
    dated = store.store("fact", "Rotated the signing key last Friday")
    undated = store.store("fact", "Rotated the signing key after the audit")
    weights = {}
    for query in ("when did we rotate the signing key", "signing key rotated"):
        items = {i.id: i for i in store.recall(query, hops=0).items}
        weights[query] = items[dated].relevance / items[undated].relevance
    ratio = weights["when did we rotate the signing key"] / weights["signing key rotated"]
    assert ratio == pytest.approx(1 + when.TIME_WEIGHT, rel=0.3)


@pytest.mark.parametrize(
    ("term", "forms"),
    [
        ("choose", ("chose", "chosen")),
        ("go", ("went", "gone")),
        ("goes", ("go", "went", "gone")),
        ("going", ("go", "went", "gone")),
        ("making", ("make", "made")),
        ("swimming", ("swim", "swam", "swum")),
        ("buys", ("buy", "bought")),
        # Not verbs of the table, and past forms are not looked up backwards.
        ("deploy", ()),
        ("thing", ()),
        ("string", ()),
        ("went", ()),
        ("left", ()),
    ],
)
def test_past_forms(term: str, forms: tuple[str, ...]) -> None:
    assert past_forms(term) == forms


def test_a_verb_in_the_query_finds_its_irregular_past(store: MemoryStore) -> None:
    chose = store.store("decision", "Chose Elasticsearch for the search engine")
    store.store("fact", "Benchmarked the search engine under load")
    went = store.store("fact", "We went to the offsite in Lisbon")
    found = [i.id for i in store.recall("what did we choose", hops=0).items]
    assert found == [chose]
    assert [i.id for i in store.recall("where did we go offsite", hops=0).items] == [went]
    assert [i.id for i in store.recall("who goes", hops=0).items] == [went]


def test_a_common_verb_still_scores_its_past_forms(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "go" found in more rows than COMMON_DF: it only scores what rarer terms found, by
    # its text, and the text matcher knows the past forms too.
    from nervamem.recall import search

    monkeypatch.setattr(search, "COMMON_DF", 2)
    for n in range(4):
        store.store("fact", f"we go to standup {n}")
    went = store.store("fact", "we went to Lisbon for the offsite")
    other = store.store("fact", "Lisbon office has a new printer")
    items = {i.id: i for i in store.recall("go Lisbon", hops=0).items}
    assert items[went].relevance == 1.0 > items[other].relevance


def test_neighbours_weigh_less_at_a_small_budget(store: MemoryStore) -> None:
    assert session_context.context_weight(200) < session_context.context_weight(500)
    store.start_session("incident")
    hit = store.store("fact", "The nightly export failed on Tuesday.")
    after = store.store("fact", "The disk of the report host was full")
    store.end_session()
    shares = {}
    for budget in (200, 1000):
        items = {i.id: i for i in store.recall("nightly export fail", budget_tokens=budget).items}
        shares[budget] = items[after].relevance / items[hit].relevance
    assert shares[200] < shares[1000]


def test_a_cause_or_effect_of_a_hit_inherits_more_than_a_topic_neighbour(
    store: MemoryStore,
) -> None:
    action = store.store("action", "Rotated the RS256 signing key", entities=["AuthService"])
    # Found by search too ("rotation" stems like "rotated"), with less than its cause.
    outcome = store.store(
        "outcome",
        "The key rotation logged out every mobile user on an old app",
        caused_by=[action],
    )
    # Not found by search (no word of the query): reached over CAUSED only.
    tickets = store.store("outcome", "Support tickets doubled that week", caused_by=[action])
    topic = store.store("fact", "Deployed the service to staging", entities=["AuthService"])
    items = {i.id: i for i in store.recall("rotated the RS256 signing key").items}
    assert items[tickets].via == "expansion"
    assert items[tickets].relevance == pytest.approx(
        expansion.CAUSAL_DECAY * items[action].relevance, rel=1e-3
    )
    assert items[outcome].relevance == pytest.approx(
        expansion.CAUSAL_DECAY * items[action].relevance, rel=1e-3
    )
    assert items[topic].via == "expansion"
    assert items[topic].relevance < items[outcome].relevance
    # Without expansion the outcome keeps what its own words earn.
    plain = {i.id: i for i in store.recall("rotated the RS256 signing key", hops=0).items}
    assert plain[outcome].relevance < expansion.CAUSAL_DECAY * plain[action].relevance
