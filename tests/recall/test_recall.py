"""Recall pipeline: stages, hostile queries, expansion, mask, scoring, budget, touches."""

from __future__ import annotations

import math
import re
import sqlite3
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from nervamem import MemoryStore
from nervamem.errors import BadInputError
from nervamem.recall.terms import query_terms
from nervamem.recall.tokens import CharTokenCounter, get_counter
from nervamem.storage.sqlite.text_index import any_of, every_one_of, quote

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL


@pytest.fixture
def auth_store(store: MemoryStore) -> dict[str, str]:
    store.start_session("auth rework")
    old = store.store(
        "decision",
        "Chose session cookies for auth",
        valid_from="2026-01-01",
        entities=["AuthService"],
    )
    new = store.store(
        "decision",
        "Chose JWT for auth",
        valid_from="2026-06-01",
        supersedes=old,
        entities=["auth_service"],
    )
    fact = store.store(
        "fact", "auth_service issues 15-minute access tokens", entities=["auth-service"]
    )
    return {"old": old, "new": new, "fact": fact}


def test_concepts_example_exactly(store: MemoryStore, auth_store: dict[str, str]) -> None:
    now = store.recall("auth mechanism", kinds=["decision"])
    assert [i.id for i in now.items] == [auth_store["new"]]
    then = store.recall("auth mechanism", as_of="2026-03-15", kinds=["decision"])
    assert [i.id for i in then.items] == [auth_store["old"]]
    timeline = store.timeline("auth")
    versions = [t for t in timeline if t.kind == "decision"]
    assert [t.id for t in versions] == [auth_store["old"], auth_store["new"]]
    assert versions[0].superseded_by == auth_store["new"]


def test_current_recall_never_shows_superseded(
    store: MemoryStore, auth_store: dict[str, str]
) -> None:
    ids = {i.id for i in store.recall("session cookies auth JWT").items}
    assert auth_store["old"] not in ids
    assert auth_store["new"] in ids


def test_fts5_expressions_quote_every_term() -> None:
    terms = query_terms('when did "x" NEAR(a b) col:val ^y')
    assert quote(" ".join(terms)) == '"when did x near a b col val y"'
    for expression in (any_of(terms), every_one_of(terms), any_of([t + '"*' for t in terms])):
        # Outside the quoted terms only FTS5 operators we chose may remain.
        residue = re.sub(r'"(?:[^"]|"")*"', "", expression)
        assert set(residue.replace("OR", "").replace("AND", "")) <= {" ", "*"}, expression
    assert query_terms("🙂 ***") == []


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '""',
        "NEAR(",
        "a AND",
        "OR OR",
        "*",
        "col:val",
        "^x",
        "(a",
        "a)",
        "🙂",
        "x" * 20_000,
        "AND OR NOT",
        "\\",
        "'",
        "-x",
        "a:b:c",
        "NEAR(a b, 3)",
    ],
)
def test_hostile_queries_never_raise(store: MemoryStore, query: str) -> None:
    store.store("fact", "AND OR NOT NEAR col val x")
    result = store.recall(query, budget_tokens=200)
    assert CharTokenCounter().count(result.markdown) <= 200


def test_later_stage_runs_when_phrase_finds_nothing(store: MemoryStore) -> None:
    node = store.store("fact", "postgres replication lag alarms")
    result = store.recall("lag of the replication", hops=0)
    assert [i.id for i in result.items] == [node]


def test_expansion_follows_entities_and_hops_zero_turns_it_off(store: MemoryStore) -> None:
    hit = store.store("fact", "the ledger rounds half-even", entities=["Billing"])
    neighbour = store.store("decision", "Invoices are issued monthly", entities=["Billing"])
    expanded = {i.id: i for i in store.recall("ledger rounds").items}
    assert hit in expanded and neighbour in expanded
    assert expanded[neighbour].via == "expansion"
    assert expanded[neighbour].relevance == pytest.approx(expanded[hit].relevance * 0.6**2)
    plain = [i.id for i in store.recall("ledger rounds", hops=0).items]
    assert plain == [hit]


def test_expansion_respects_the_temporal_mask(store: MemoryStore) -> None:
    store.store("fact", "the ledger rounds half-even", entities=["Billing"])
    old = store.store("decision", "Invoices are issued weekly", entities=["Billing"])
    store.store("decision", "Invoices are issued monthly", supersedes=old)
    assert old not in {i.id for i in store.recall("ledger rounds").items}


def test_score_is_product_of_factors(store: MemoryStore) -> None:
    store.store("fact", "kafka topic retention is seven days")
    (item,) = store.recall("kafka retention").items
    assert item.score == pytest.approx(
        item.relevance * item.recency * item.frequency * item.connectivity, rel=1e-4
    )
    assert 0 < item.relevance <= 1


def test_only_returned_nodes_are_touched(store: MemoryStore) -> None:
    shown = store.store("fact", "redis is the session cache")
    hidden = store.store("fact", "unrelated note about bikes")
    store.recall("redis cache")
    assert store.get(shown).access_count == 1
    assert store.get(shown).last_accessed is not None
    assert store.get(hidden).access_count == 0


@pytest.mark.sqlite_only  # about SQLite's -wal file
def test_access_counts_outlive_a_close_without_checkpoint(
    make_store: Callable[..., MemoryStore], db_path: Path
) -> None:
    """A store that wrote only access counts leaves them in the -wal when it closes (no
    checkpoint, no fsync); every later connection reads them, and the next close after a
    write moves them into the file."""
    writer = make_store()
    shown = writer.store("fact", "redis is the session cache")
    writer.close()
    assert not Path(f"{db_path}-wal").exists()
    reader = make_store()
    reader.recall("redis cache")
    reader.close()
    if sys.implementation.name == "cpython" and sys.platform == "linux":
        assert Path(f"{db_path}-wal").stat().st_size > 0  # not checkpointed on close
    with closing(sqlite3.connect(db_path)) as conn:
        assert conn.execute("SELECT access_count FROM mem_nodes WHERE id = ?", (shown,)).fetchone()
        count = conn.execute("SELECT access_count FROM mem_nodes WHERE id = ?", (shown,))
        assert count.fetchone()[0] == 1
    again = make_store()
    again.store("fact", "another note")
    again.close()
    assert not Path(f"{db_path}-wal").exists()  # the writer's close checkpointed both
    uri = f"{db_path.resolve().as_uri()}?immutable=1"
    with closing(sqlite3.connect(uri, uri=True)) as conn:  # the file alone
        count = conn.execute("SELECT access_count FROM mem_nodes WHERE id = ?", (shown,))
        assert count.fetchone()[0] == 1


def test_kind_filter(store: MemoryStore) -> None:
    store.store("fact", "grpc uses http2")
    decision = store.store("decision", "use grpc between services")
    assert [i.id for i in store.recall("grpc", kinds=["decision"]).items] == [decision]


@pytest.mark.parametrize("budget", [0, -5, 1_000_001])
def test_budget_out_of_range(store: MemoryStore, budget: int) -> None:
    with pytest.raises(BadInputError, match="--budget"):
        store.recall("x", budget_tokens=budget)


def test_budget_too_small_for_header_is_refused(store: MemoryStore) -> None:
    with pytest.raises(BadInputError, match="too small"):
        store.recall("anything at all", budget_tokens=10)


def test_budget_is_hard_and_header_is_truthful(store: MemoryStore) -> None:
    with store.batch():
        for n in range(300):
            store.store("fact", f"deployment note {n}: the canary stage rolls back on error rate")
    for budget in (40, 100, 250, 500, 1000):
        result = store.recall("canary deployment", budget_tokens=budget)
        used = math.ceil(len(result.markdown) / 4)
        assert used <= budget
        assert result.used_tokens == used
        assert f"{used}/{budget} tokens" in result.markdown.splitlines()[0]
    assert len(store.recall("canary deployment", budget_tokens=1000).items) > len(
        store.recall("canary deployment", budget_tokens=200).items
    )


def test_layout_sections_and_session_groups(store: MemoryStore, auth_store: dict[str, str]) -> None:
    result = store.recall("auth")
    lines = result.markdown.splitlines()
    assert lines[0].startswith('## Memory recall: "auth" (as of 2026-07-03 · ')
    headings = [line for line in lines if line.startswith("### ")]
    assert headings[0] == "### Decisions"
    assert "### Provenance" not in headings  # provenance is in the group lines
    assert headings.index("### Facts") < headings.index("### Entities")
    decision = next(item for item in result.items if item.id == auth_store["new"])
    at = lines.index(f"- {decision.short_id} Chose JWT for auth")
    assert lines[at - 1] == f"{decision.session_short_id} 2026-06-01"


def test_long_query_header_is_cut_to_60_chars(store: MemoryStore) -> None:
    result = store.recall("word " * 50)
    quoted = result.markdown.splitlines()[0].split('"')[1]
    assert len(quoted) <= 60


def test_tiktoken_counter_is_offline_and_bounds_budget(store: MemoryStore) -> None:
    pytest.importorskip("tiktoken")
    counter = get_counter("tiktoken")
    with store.batch():
        for n in range(100):
            store.store("fact", f"service {n} talks to the queue über Ünïcödé 🙂")
    result = store.recall("service queue", budget_tokens=150, tokenizer="tiktoken")
    assert result.tokenizer == "tiktoken"
    assert counter.count(result.markdown) <= 150


def test_unknown_tokenizer(store: MemoryStore) -> None:
    with pytest.raises(BadInputError, match="tokenizer"):
        store.recall("x", tokenizer="words")


def test_as_of_excludes_tombstoned(store: MemoryStore) -> None:
    node = store.store("fact", "forgotten detail about llamas", valid_from="2026-01-01")
    store.forget(node)
    assert store.recall("llamas", as_of="2026-03-01").items == ()


def test_timeline_leaves_out_tombstoned_and_follows_chains(store: MemoryStore) -> None:
    v1 = store.store("fact", "api version one", valid_from="2026-01-01")
    v2 = store.store("fact", "rate limits doubled", valid_from="2026-02-01", supersedes=v1)
    v3 = store.store("fact", "rate limits halved", valid_from="2026-03-01", supersedes=v2)
    gone = store.store("fact", "rate limits secret")
    store.forget(gone)
    items = store.timeline("rate limits")
    assert [i.id for i in items] == [v1, v2, v3]
    assert [i.superseded_by for i in items] == [v2, v3, None]


def test_namespace_never_leaks_into_recall(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()
    store.store("fact", "shared word walrus", namespace="a", entities=["Walrus"])
    store.store("fact", "shared word walrus", namespace="b", entities=["Walrus"])
    for ns in ("a", "b"):
        result = store.recall("walrus", namespace=ns)
        assert {store.get(i.id, namespace=ns).namespace for i in result.items} == {ns}


def test_common_terms_in_another_namespace_do_not_crowd_out_matches(store: MemoryStore) -> None:
    mine = store.store("decision", "Chose postgres for the widget registry")
    with store.batch():
        for n in range(600):  # "widget" becomes a common term, all newer, elsewhere
            store.store("fact", f"widget note {n}", namespace="other")
    assert [i.id for i in store.recall("widget").items] == [mine]
    with store.batch():
        for n in range(200):
            store.store("fact", f"widget more {n}", namespace="other")
    other = store.store("decision", "widget decision over there", namespace="other")
    store.store("fact", "widget newest note", namespace="other")
    found = store.recall("widget", namespace="other", kinds=["decision"]).items
    assert [i.id for i in found] == [other]


def test_prefix_matches_of_another_namespace_do_not_crowd_out_matches(store: MemoryStore) -> None:
    mine = store.store("fact", "gadgets are widgetized here")
    with store.batch():
        for n in range(2100):
            store.store("fact", f"widgetry gadget {n}", namespace="other")
    assert mine in [i.id for i in store.recall("widg", hops=0).items]


def test_as_of_a_date_alone_includes_what_was_stored_that_day(
    make_store: Callable[..., MemoryStore],
) -> None:
    # The fixed clock reads 2026-07-03T12:00; "as of 2026-07-03" used to mean midnight
    # and hid everything stored that day.
    store = make_store()
    node = store.store("fact", "the build is green")
    shown = store.recall("build green", as_of="2026-07-03")
    assert [item.id for item in shown.items] == [node]
    assert shown.as_of == "2026-07-03T23:59:59.999Z"
    assert store.recall("build green", as_of="2026-07-03T00:00:00Z").items == ()
