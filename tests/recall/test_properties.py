"""Hypothesis properties of recall over random stores, queries and budgets:
the budget is never exceeded, --as-of never shows a node outside its validity, and
namespaces never leak."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from nervamem import MemoryStore
from nervamem.errors import BadInputError
from nervamem.timeparse import format_time

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

WORDS = [
    "auth",
    "jwt",
    "cookie",
    "deploy",
    "canary",
    "cache",
    "redis",
    "the",
    "when",
    "did",
    "NEAR",
    "AND",
    "OR",
    '"',
    "*",
    "(",
    "🙂",
    "ünïcode",
    "x" * 40,
]
text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
any_text = st.one_of(
    text, st.text(min_size=1, max_size=80).filter(lambda s: "\x00" not in s and s.strip())
)
days = st.integers(min_value=0, max_value=400)
BASE = datetime(2026, 1, 1, tzinfo=timezone.utc)

memory_spec = st.lists(
    st.tuples(
        st.sampled_from(["fact", "decision", "action", "outcome", "preference"]),
        any_text,
        days,
        st.booleans(),  # supersede the previous node of this list
        st.sampled_from(["a", "b"]),
        st.lists(st.sampled_from(["Auth", "Cache", "Deploy"]), max_size=2),
    ),
    min_size=1,
    max_size=25,
)

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def build(
    target: Path | str, spec: list[tuple[str, str, int, bool, str, list[str]]]
) -> MemoryStore:
    store = MemoryStore(target)
    last: dict[str, tuple[str, int]] = {}
    ordered = sorted(spec, key=lambda item: item[2])
    for kind, content, day, supersede, ns, entities in ordered:
        previous = last.get(ns)
        node_id = store.store(
            kind,
            content,
            valid_from=format_time(BASE + timedelta(days=day)),
            supersedes=previous[0] if supersede and previous else None,
            namespace=ns,
            entities=entities,
        )
        last[ns] = (node_id, day)
    return store


@SETTINGS
@given(spec=memory_spec, query=any_text, budget=st.integers(min_value=1, max_value=1500))
def test_budget_never_exceeded(new_store, spec, query, budget) -> None:  # type: ignore[no-untyped-def]
    store = build(new_store("budget"), spec)
    try:
        result = store.recall(query, budget_tokens=budget, namespace="a")
    except BadInputError as refused:
        assert "too small" in str(refused)
        return
    finally:
        store.close()
    assert math.ceil(len(result.markdown) / 4) <= budget
    assert result.used_tokens <= budget


@SETTINGS
@given(spec=memory_spec, query=text, day=days)
def test_as_of_never_outside_validity(new_store, spec, query, day) -> None:  # type: ignore[no-untyped-def]
    store = build(new_store("asof"), spec)
    as_of = format_time(BASE + timedelta(days=day, hours=12))
    try:
        for ns in ("a", "b"):
            result = store.recall(query, as_of=as_of, budget_tokens=2000, namespace=ns)
            for item in result.items:
                node = store.get(item.id, namespace=ns)
                assert node.valid_from <= as_of
                assert node.valid_until is None or node.valid_until > as_of
                assert not node.tombstoned
    finally:
        store.close()


@SETTINGS
@given(spec=memory_spec, query=text)
def test_namespaces_never_leak_and_current_is_current(new_store, spec, query) -> None:  # type: ignore[no-untyped-def]
    store = build(new_store("ns"), spec)
    try:
        for ns in ("a", "b"):
            # Without as_of, "current" is "valid now" (some valid_from dates are ahead).
            before = format_time(datetime.now(timezone.utc))
            items = store.recall(query, budget_tokens=2000, namespace=ns).items
            after = format_time(datetime.now(timezone.utc))
            for item in items:
                namespace, valid_from, valid_until, tombstoned = store.connection.execute(
                    "SELECT namespace, valid_from, valid_until, tombstoned FROM mem_nodes "
                    "WHERE id = ?",
                    (item.id,),
                ).fetchone()
                assert (namespace, tombstoned) == (ns, 0)
                assert valid_from <= after and (valid_until is None or valid_until > before)
    finally:
        store.close()


ASCII_TEXT = st.text(alphabet="abdeiloprstuvxy _-.'SDE0123", max_size=60)
# Irregular verbs and their past forms (recall/irregular.py), which common terms also find.
VERB_WORDS = st.sampled_from(["buy", "bought", "sell", "sold", "leave", "left", "lead", "led"])
TEXT_WITH_VERBS = st.lists(st.one_of(ASCII_TEXT, VERB_WORDS), max_size=6).map(" ".join)
COMMON_TERMS = st.lists(
    st.one_of(st.text(alphabet="abdeilrsu", min_size=1, max_size=8), VERB_WORDS)
)


@given(text=TEXT_WITH_VERBS, common=COMMON_TERMS)
@settings(max_examples=400, deadline=None)
def test_common_terms_in_ascii_text_are_found_as_the_pattern_finds_them(
    text: str, common: list[str]
) -> None:
    """The string search that score_rows uses on ASCII text finds exactly the common
    terms that the case-insensitive, word-start pattern finds (overlaps and roots that
    start at the same place included)."""
    from nervamem.recall import text_analysis

    pattern = text_analysis._common_matcher(common)
    expected = {m.lastindex for m in pattern.finditer(text) if m.lastindex} if pattern else set()
    roots = text_analysis.common_term_roots(common)
    assert text_analysis._common_in_ascii(text.lower(), roots) == expected


@given(text=TEXT_WITH_VERBS, common=COMMON_TERMS)
@settings(max_examples=400, deadline=None)
def test_common_terms_apart_are_found_as_the_pattern_finds_them(
    text: str, common: list[str]
) -> None:
    """Where no term's root starts another term's (text_analysis.roots_apart), each term's first
    root at a word start finds what the pattern finds (issue 21, round 6)."""
    from nervamem.recall import text_analysis

    pattern = text_analysis._common_matcher(common)
    expected = {m.lastindex for m in pattern.finditer(text) if m.lastindex} if pattern else set()
    flat = text_analysis.listed_roots(text_analysis.common_term_roots(common))
    assume(text_analysis.roots_apart(flat))
    assert text_analysis.common_in_ascii_apart(text.lower(), flat) == expected


POSITIONS = st.lists(st.integers(min_value=0, max_value=60), unique=True).map(sorted)


@given(first=POSITIONS, second=POSITIONS, window=st.integers(min_value=0, max_value=4))
@settings(max_examples=300, deadline=None)
def test_proximity_window_check_equals_every_pair_compared(
    first: list[int], second: list[int], window: int
) -> None:
    """The linear window check that term proximity uses on masks of positions (a memory
    of a megabyte holds a word thousands of times) answers as comparing every pair of
    positions does."""
    from nervamem.recall import text_analysis

    every_pair = any(abs(x - y) <= window for x in first for y in second)
    masks = [sum(1 << at for at in positions) for positions in (first, second)]
    assert text_analysis.within(*masks, window) == every_pair
