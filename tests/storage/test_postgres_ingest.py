"""The PostgreSQL bulk path's shortcuts write what the plain path writes.

store_many on PostgreSQL keeps the entities it resolved when a new entity takes aliases
(writing._Writer.forget_entities forgets only the names that may now resolve otherwise),
where the plain path forgets them all and asks the server again. Both must write the
same rows: the property runs the same calls both ways on fresh schemas, with names whose
spellings collide under the alias column's case-insensitive ICU collation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nervamem import MemoryStore
from nervamem.writing import NewMemory, _rough_key, _Writer
from tests.conftest import CountingRandom, FakeClock, store_fingerprint

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

PIECES = ["auth", "Auth", "AUTH", "service", "Service", "-", "_", " ", ".", "1", "2"]
PIECES += ["ß", "SS", "ss", "é", "E\u0301", "ﬁ", "fi", "ａ", "a", "\u200b"]
names = st.lists(st.sampled_from(PIECES), min_size=1, max_size=4).map("".join)
calls = st.lists(
    st.lists(st.lists(names, min_size=1, max_size=3), min_size=1, max_size=6),
    min_size=1,
    max_size=3,
)


def _write(url: str | Path, plan: list[list[list[str]]]) -> Any:
    with MemoryStore(url, clock=FakeClock(), random_source=CountingRandom()) as store:
        for call in plan:
            memories = [
                NewMemory("fact", f"memory {i}", entities=[n for n in entities if n.split()])
                for i, entities in enumerate(call)
            ]
            if memories:
                store.store_many(memories)
    return store_fingerprint(url)


@pytest.mark.postgresql_only
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(plan=calls)
def test_kept_entities_resolve_as_asking_again_does(
    engine: str,
    new_store: Callable[[str], Path | str],
    plan: list[list[list[str]]],
) -> None:
    kept = _write(new_store("kept"), plan)
    with pytest.MonkeyPatch.context() as patch:

        def forget_all(self: _Writer, namespace: str, *_: object) -> None:
            self.entities.clear()

        patch.setattr(_Writer, "forget_entities", forget_all)
        asked = _write(new_store("asked"), plan)
    assert kept == asked


@pytest.mark.parametrize(
    ("left", "right"),
    [("Auth-Service", "auth_service"), ("AUTH", "auth"), ("ﬁle", "FILE"), ("ａb", "AB")],
)
def test_rough_key_is_equal_for_texts_that_differ_in_case_or_width(left: str, right: str) -> None:
    assert _rough_key(left) == _rough_key(right)


def test_rough_key_of_a_text_beyond_ascii_may_equal_anything() -> None:
    assert _rough_key("straße") is None
    assert _rough_key("café") is None
    assert _rough_key("auth") == "auth"


def _about(store: MemoryStore, node_id: str) -> list[str]:
    rows = store.connection.execute(
        "SELECT dst FROM mem_edges WHERE src = ? AND kind = 'ABOUT' ORDER BY dst", (node_id,)
    ).fetchall()
    return [str(row[0]) for row in rows]


def test_a_name_resolved_earlier_in_the_call_follows_a_new_entity_s_alias(
    store: MemoryStore,
) -> None:
    """ "AuthService" first finds "auth services" by phrase; then "authservice" (one word,
    no phrase hit) becomes an entity whose alias "authservice" equals "AuthService" but
    for case: from then on the alias step finds the new entity first, in the same call
    as in a later one."""
    store.store_many([NewMemory("fact", "first", entities=["auth services"])])
    ids = store.store_many(
        [
            NewMemory("fact", "a", entities=["AuthService"]),
            NewMemory("fact", "b", entities=["authservice"]),
            NewMemory("fact", "c", entities=["AuthService"]),
        ]
    )
    later = store.store_many([NewMemory("fact", "d", entities=["AuthService"])])
    first, second, third = (_about(store, node_id) for node_id in ids)
    assert first != second
    assert third == second == _about(store, later[0])


def test_insert_rows_takes_whole_and_fractional_numbers_in_one_column(store: MemoryStore) -> None:
    """An import's events may give a confidence as 1 beside 0.5 (JSON keeps no type):
    on PostgreSQL the column is one float8[] array, not a bigint[] that 0.5 breaks."""
    conn = store.connection
    rows = [
        (
            f"f_{n:029x}",
            "fact",
            f"row {n}",
            "default",
            "2026-01-01T00:00:00.000Z",
            "2026-01-01T00:00:00.000Z",
            confidence,
        )
        for n, confidence in enumerate([1, 0.5, 0])
    ]
    with store.batch():
        store.storage.insert_rows(
            "INSERT INTO mem_nodes (id, kind, content, namespace, valid_from, recorded_at, "
            "confidence) VALUES ",
            rows,
            7,
        )
    found = conn.execute(
        "SELECT content, confidence FROM mem_nodes WHERE content LIKE 'row %' ORDER BY content"
    ).fetchall()
    assert [(str(c), float(v)) for c, v in found] == [
        ("row 0", 1.0),
        ("row 1", 0.5),
        ("row 2", 0.0),
    ]
