"""Hypothesis properties of recall over random stores, queries and budgets:
the budget is never exceeded, --as-of never shows a node outside its validity, and
namespaces never leak."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nervamem import MemoryStore
from nervamem.errors import BadInputError
from nervamem.timeparse import format_time

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
