"""browse.py on a real store file: show and list return plain values."""

from __future__ import annotations

import pytest

from nervamem import MemoryStore
from nervamem.browse import ListFilter
from nervamem.errors import NotFoundError

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL


def test_show_returns_every_part_of_a_decision(store: MemoryStore) -> None:
    session = store.start_session("auth")
    old = store.store("decision", "cookies", entities=["Auth"])
    new = store.store(
        "decision", "JWT", entities=["Auth"], supersedes=old, rationale="stateless",
        rejected=["cookies"],
    )  # fmt: skip
    [detail] = store.show([store.short_ids([new])[new]])
    assert (detail.id, detail.status, detail.rationale, detail.rejected) == (
        new, "current", "stateless", ("cookies",)
    )  # fmt: skip
    assert detail.session is not None and detail.session.id == session
    assert detail.entities == ("Auth",)
    assert [(link.edge, link.direction, link.id) for link in detail.links] == [
        ("SUPERSEDES", "out", old)
    ]
    [old_detail] = store.show([old])
    assert old_detail.status == "superseded"


def test_show_keeps_forgotten_nodes_and_list_hides_them(store: MemoryStore) -> None:
    node = store.store("fact", "wrong")
    store.forget(node)
    assert store.show([node])[0].status == "forgotten"
    assert store.list_nodes() == []
    assert [n.id for n in store.list_nodes(ListFilter(include_forgotten=True))] == [node]


def test_show_fails_before_reading_when_one_reference_names_nothing(store: MemoryStore) -> None:
    node = store.store("fact", "x")
    with pytest.raises(NotFoundError):
        store.show([node, "f-ffffffff"])


def test_list_never_crosses_the_namespace(make_store) -> None:  # type: ignore[no-untyped-def]
    first = make_store()
    first.store("fact", "in default")
    other = make_store(namespace="other")
    assert other.list_nodes() == []
    assert [n.content for n in first.list_nodes()] == ["in default"]
