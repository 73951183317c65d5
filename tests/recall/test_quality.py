"""Ranking behaviours added for recall quality (bench/quality.py measures their effect):
key terms, the prefix fallback, common terms, coverage, session context, the compact
layout, repeated content, the recency floor, and the budget with a per-item footer."""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, timezone

import pytest

from nervamem import MemoryStore
from nervamem.recall import questions, relevance, scoring, search
from nervamem.recall.packing import confidence_label
from nervamem.recall.terms import content_terms, query_terms

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL


def test_stop_words_and_fragments_are_not_key_terms() -> None:
    terms = query_terms("What did Gina's team do about the cache?")
    assert content_terms(terms) == ["gina", "team", "cache"]
    # A query of nothing but stop words still searches with them.
    assert content_terms(query_terms("what is it")) == ["what", "is", "it"]
    assert content_terms(query_terms("version 2 of x")) == ["version", "2"]


def test_stop_words_alone_never_match(store: MemoryStore) -> None:
    redis = store.store("fact", "Redis is the session cache")
    store.store("fact", "What we did about it was not much")
    result = store.recall("what did we do about redis", hops=0)
    assert [item.id for item in result.items] == [redis]


def test_prefix_stage_runs_when_exact_terms_find_too_few(store: MemoryStore) -> None:
    node = store.store("fact", "AuthService rotates its signing keys weekly")
    result = store.recall("auth", hops=0)
    assert [item.id for item in result.items] == [node]


def test_prefix_stage_stays_off_when_exact_terms_find_enough(store: MemoryStore) -> None:
    for n in range(6):
        store.store("fact", f"cache node {n} was restarted")
    fragment = store.store("fact", "cachedb keeps the warm copy")
    ids = {item.id for item in store.recall("cache", budget_tokens=500, hops=0).items}
    assert len(ids) == 6 and fragment not in ids


def test_node_with_all_key_terms_outranks_one_with_a_single_term(store: MemoryStore) -> None:
    partial = store.store("fact", "kafka broker disk")
    full = store.store("fact", "kafka consumer lag on the billing topic grew overnight")
    items = store.recall("kafka consumer lag", hops=0).items
    assert [item.id for item in items] == [full, partial]


@pytest.mark.sqlite_only  # the FTS5 search module itself
def test_common_terms_only_score_what_rare_terms_found(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "COMMON_DF", 3)
    with store.batch():
        for n in range(10):
            store.store("fact", f"service {n} deploy finished")
    both = store.store("fact", "payment service deploy rolled back")
    rare_only = store.store("fact", "payment refunds are manual")
    found = search.search(
        store.connection, "default", "payment service deploy", as_of=None, kinds=None, want=0
    )
    # "service" and "deploy" are common: they never propose a candidate of their own,
    # but they still raise the one candidate that holds them.
    assert set(found) == {both, rare_only}
    assert found[both].relevance == 1.0 > found[rare_only].relevance


@pytest.mark.sqlite_only  # the FTS5 search module itself
def test_a_query_of_common_terms_returns_the_newest_matches(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "COMMON_DF", 3)
    monkeypatch.setattr(search, "PRE_LIMIT", 4)
    ids = [store.store("fact", f"service {n} deploy finished") for n in range(10)]
    found = {item.id for item in store.recall("service deploy", budget_tokens=200, hops=0).items}
    assert found == set(ids[-4:])


# Under 500 tokens neighbours get a smaller share; the answer after a question keeps its.
@pytest.mark.parametrize("budget", [200, 1000])
def test_session_context_brings_the_next_memory_of_the_same_session(
    store: MemoryStore, budget: int
) -> None:
    store.start_session("incident")
    question = store.store("fact", "Why did the nightly export fail on Tuesday?")
    answer = store.store("fact", "The disk of the report host was full")
    store.end_session()
    store.start_session("other task")
    elsewhere = store.store("fact", "The disk of the build host was replaced")
    store.end_session()
    items = {
        item.id: item for item in store.recall("nightly export fail", budget_tokens=budget).items
    }
    assert question in items and answer in items
    assert items[answer].via == "context"
    # The hit asks a question and the memory after it answers it: the answer comes first.
    assert items[answer].relevance > items[question].relevance
    assert elsewhere not in items
    assert list(item.id for item in store.recall("nightly export fail", hops=0).items) == [question]


@pytest.mark.parametrize("hops", [0, 2])
def test_a_question_without_an_answer_after_it_is_weighed_down(
    store: MemoryStore, hops: int
) -> None:
    statement = store.store("fact", "Nightly export fails on Tuesday.")
    question = store.store("fact", "Nightly export fails on Tuesday?")
    items = {i.id: i for i in store.recall("nightly export fails tuesday", hops=hops).items}
    assert items[statement].relevance == pytest.approx(1.0)
    assert items[question].relevance == pytest.approx(0.6)  # the same words, asked


def test_context_of_a_statement_ranks_below_the_hit(store: MemoryStore) -> None:
    store.start_session("incident")
    hit = store.store("fact", "The nightly export failed on Tuesday.")
    after = store.store("fact", "The disk of the report host was full")
    store.end_session()
    items = {item.id: item for item in store.recall("nightly export fail").items}
    assert items[after].via == "context"
    assert items[after].relevance < items[hit].relevance


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("Why did the export fail?", True),
        ("Why did the export fail?  \n", True),
        ('He asked "why did it fail?"', True),
        ("(did it fail?)", True),
        ("失敗したのはなぜ？", True),
        ("The export failed. Why?", True),
        ("Why? The disk was full.", False),
        ("The export failed", False),
        ("", False),
    ],
)
def test_asks(text: str, asks: bool) -> None:
    assert questions.asks(text) is asks


def test_session_context_respects_the_temporal_mask(store: MemoryStore) -> None:
    store.start_session("cache work")
    store.store("fact", "The cache eviction storm happened at noon", valid_from="2026-01-01")
    old = store.store("fact", "Cache TTL is 5 minutes", valid_from="2026-01-01")
    store.store("fact", "Cache TTL is 10 minutes", valid_from="2026-02-01", supersedes=old)
    store.end_session()
    ids = {item.id for item in store.recall("eviction storm").items}
    assert old not in ids


def test_item_line_and_session_group_layout(store: MemoryStore) -> None:
    session = store.start_session("layout")
    one = store.store("fact", "grpc uses http2", confidence=0.9)
    two = store.store("decision", "use grpc between services", confidence=0.85)
    store.end_session()
    result = store.recall("grpc", hops=0)
    short = {item.id: item.short_id for item in result.items}
    lines = result.markdown.splitlines()
    session_short = result.items[0].session_short_id
    assert session_short and store.resolve_id(session_short) == session
    # One group line per section names the session and the date its items share.
    for heading, line in (
        ("### Facts", f"- {short[one]} c0.9 grpc uses http2"),
        ("### Decisions", f"- {short[two]} c0.85 use grpc between services"),
    ):
        at = lines.index(heading)
        assert lines[at + 1 : at + 3] == [f"{session_short} 2026-07-03", line]


def test_full_confidence_has_no_label(store: MemoryStore) -> None:
    full = store.store("fact", "grpc deadline is 5 seconds")
    partial = store.store("fact", "grpc retries twice", confidence=0.99)
    result = store.recall("grpc", hops=0)
    short = {item.id: item.short_id for item in result.items}
    lines = result.markdown.splitlines()
    # Stored outside a session: no group, the line carries the date.
    assert f"- {short[full]} 2026-07-03 grpc deadline is 5 seconds" in lines
    assert f"- {short[partial]} 2026-07-03 c0.99 grpc retries twice" in lines


def test_groups_follow_the_score_order_of_their_best_item(store: MemoryStore) -> None:
    sessions = []
    for n in range(3):
        sessions.append(store.start_session(f"task {n}"))
        store.store("fact", f"zeppelin hangar inspection {n}" + " zeppelin" * (3 - n))
        store.end_session()
    loose = store.store("fact", "zeppelin spotted without a session")
    result = store.recall("zeppelin", budget_tokens=1000, hops=0)
    lines = result.markdown.splitlines()
    groups = [line for line in lines if line.startswith("s-")]
    expected = list(
        dict.fromkeys(
            f"{item.session_short_id} {item.valid_from[:10]}"
            for item in result.items
            if item.session_short_id
        )
    )
    assert groups == expected
    assert [store.resolve_id(g.split()[0]) for g in groups] == [
        next(s for s in sessions if store.short_ids([s])[s] == g.split()[0]) for g in groups
    ]
    for item in result.items:
        line = next(line for line in lines if line.startswith(f"- {item.short_id} "))
        if item.id == loose:
            assert lines.index(line) == 1  # memories without a session come first
        else:
            group = f"{item.session_short_id} {item.valid_from[:10]}"
            assert lines[lines.index(line) - 1] == group


@pytest.mark.parametrize(
    ("confidence", "label"), [(1.0, "c1.0"), (0.9, "c0.9"), (0.85, "c0.85"), (0.0, "c0.0")]
)
def test_confidence_label(confidence: float, label: str) -> None:
    assert confidence_label(confidence) == label


def test_repeated_content_is_shown_once(store: MemoryStore) -> None:
    for _ in range(3):
        store.start_session("routine")
        store.store("action", "Ran the billing test suite: all tests pass")
        store.end_session()
    other = store.store("fact", "billing test data lives in fixtures/billing")
    result = store.recall("billing test", hops=0)
    assert result.markdown.count("Ran the billing test suite") == 1
    assert other in {item.id for item in result.items}


def test_recency_keeps_a_floor() -> None:
    now = datetime(2026, 7, 3, tzinfo=timezone.utc)
    fresh = scoring.recency("2026-07-03T00:00:00.000Z", now)
    month = scoring.recency((now - timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%S.000Z"), now)
    year = scoring.recency("2025-07-03T00:00:00.000Z", now)
    assert fresh == pytest.approx(1.0)
    assert month == pytest.approx(0.75)
    assert scoring.RECENCY_FLOOR <= year < month < fresh


def test_budget_holds_with_a_footer_line_per_session(store: MemoryStore) -> None:
    for n in range(40):
        store.start_session(f"task {n}")
        store.store("fact", f"canary rollout {n} paused on error rate " + "x" * (n % 7 * 9))
        store.end_session()
    for budget in (40, 60, 90, 120, 200, 333, 500, 1000):
        result = store.recall("canary rollout", budget_tokens=budget)
        used = math.ceil(len(result.markdown) / 4)
        assert used <= budget
        assert result.used_tokens == used
        assert f"{used}/{budget} tokens" in result.markdown.splitlines()[0]
        cited = re.findall(r"^- \[\S+\] \S+ \S+ \^(\d+) — ", result.markdown, re.MULTILINE)
        footer = result.markdown.split("### Provenance\n")[-1] if cited else ""
        for label in cited:
            assert re.search(rf"^\^{label}: s_", footer, re.MULTILINE)
    # The footer is charged item by item: a large budget is nearly filled.
    assert store.recall("canary rollout", budget_tokens=1000).used_tokens > 900


def test_quality_bench_scoring_and_agent_set_are_deterministic() -> None:
    from bench.agentset import agent_corpora
    from bench.quality import Question, locomo_time, normalise, score_text

    assert normalise("It’s  “Fine”\n") == 'it\'s "fine"'
    question = Question("q", "c", ("It's fine", "missing"), ("old value",))
    assert score_text("- [f_1] … IT’S   fine", question) == (0.5, 0)
    assert score_text("old value", question) == (0.0, 1)
    assert locomo_time("1:56 pm on 8 May, 2023") == "2023-05-08T13:56:00Z"
    assert locomo_time("12:09 am on 13 September, 2023") == "2023-09-13T00:09:00Z"
    first, second = agent_corpora(seed=3), agent_corpora(seed=3)
    assert [q.text for q in first[0].questions] == [q.text for q in second[0].questions]
    assert [m.content for s in first[0].sessions for m in s.memories] == [
        m.content for s in second[0].sessions for m in s.memories
    ]


def test_beam_counts_a_long_message_found_by_an_excerpt_of_300_characters(tmp_path) -> None:
    import json

    from bench.beam import beam_corpus
    from bench.quality import best_possible, holds, score_text

    long = " ".join(f"word{i}" for i in range(120))  # ~830 characters
    assert holds("x " + long[100:400] + " y", long, 300)
    assert not holds("x " + long[100:399] + " y", long, 300)  # 299 characters
    assert not holds(long[:200] + " … " + long[200:400], long, 300)  # two short runs
    assert not holds("short message"[:-1], "short message", 300)
    # A folder shaped as one BEAM conversation (written here: no BEAM data in the repo).
    chat = [
        {
            "batch_number": 1,
            "time_anchor": None,
            "turns": [
                [
                    {"role": "user", "id": 0, "time_anchor": "March-02-2024", "content": long},
                    {"role": "assistant", "id": 1, "content": "the figure is 150 ms"},
                    {"role": "user", "id": 2, "content": "the figure is now 90 ms"},
                ]
            ],
        }
    ]
    questions = {
        "abstention": [{"question": "nothing", "source_chat_ids": None}],
        "knowledge_update": [
            {
                "question": "what is the figure",
                "source_chat_ids": {"original_info": [1], "updated_info": [2]},
            }
        ],
        "information_extraction": [{"question": "which words", "source_chat_ids": [0, 99]}],
    }
    (tmp_path / "probing_questions").mkdir()
    (tmp_path / "chat.json").write_text(json.dumps(chat))
    (tmp_path / "probing_questions" / "probing_questions.json").write_text(json.dumps(questions))
    corpus = beam_corpus(tmp_path)
    memories = corpus.sessions[0].memories
    assert [m.valid_from for m in memories][:2] == ["2024-03-02T00:00:01Z", "2024-03-02T00:00:02Z"]
    assert memories[1].content == "assistant: the figure is 150 ms"
    update, extraction = corpus.questions  # abstention has no evidence: left out
    assert update.forbidden == ("the figure is 150 ms",)
    assert extraction.expected == (long,)
    assert score_text("… " + long[-320:], extraction) == (1.0, 0)
    assert score_text(best_possible(extraction, 200), extraction) == (1.0, 0)


def test_specificity_prefers_a_particular_memory_over_routine_notes() -> None:
    routine = [f"ran the {svc} test suite all tests pass".split() for svc in "abcdef"]
    particular = "ledger appends double entry rows for every settled payment".split()
    scores = relevance.specificity([*routine, particular], ["ledger"])
    assert scores[-1] == 1.0 > max(scores[:-1])


def test_query_terms_near_each_other_outrank_scattered_ones(store: MemoryStore) -> None:
    scattered = store.store("fact", "my favorite thing is a walk; the book was long")
    near = store.store("fact", "dune is my favorite book, the walk was long")
    items = store.recall("favorite book", hops=0).items
    assert [item.id for item in items][:2] == [near, scattered]


@pytest.mark.parametrize(
    ("query", "spans"),
    [
        ("what changed on 2026-03-15?", [("2026-03-08", "2026-03-22")]),
        ("deploys in 2026-03", [("2026-03-01", "2026-03-31")]),
        ("the outage of March 15, 2026", [("2026-03-08", "2026-03-22")]),
        ("the outage of 15th of March 2026", [("2026-03-08", "2026-03-22")]),
        ("what broke in Dec. 2025", [("2025-12-01", "2025-12-31")]),
        (
            "releases in 2024 and in February 2026",
            [("2026-02-01", "2026-02-28"), ("2024-01-01", "2024-12-31")],
        ),
        ("what was decided last week", []),
        ("port 8080, build 2026.1, v2-2026", []),
        ("2026-02-30 is no day", []),
        ("may we cache it for 5 minutes", []),
    ],
)
def test_date_spans_read_the_dates_a_query_names(query: str, spans: list[tuple[str, str]]) -> None:
    assert relevance.date_spans(query) == spans


def test_a_date_in_the_query_prefers_memories_valid_then(store: MemoryStore) -> None:
    march = store.store("fact", "the billing export ran out of disk", valid_from="2026-03-16")
    april = store.store("fact", "the billing export ran out of heap", valid_from="2026-04-20")
    # Without a date the newer of two equal matches leads (recency); naming the day (or its
    # month) puts the memory valid then first. Neither memory is masked: both show.
    undated = [item.id for item in store.recall("billing export", hops=0).items]
    assert undated[0] == april
    for query in ("billing export on March 15, 2026", "billing export in 2026-03"):
        dated = [item.id for item in store.recall(query, hops=0).items]
        assert dated == [march, april], query
    # A date that no memory falls in changes nothing.
    assert [item.id for item in store.recall("billing export in 2019", hops=0).items] == undated
