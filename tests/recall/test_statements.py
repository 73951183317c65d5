"""Recall's statements that do not depend on the ranking (issue 21): a store without
sessions skips the session lookups, and skipping them changes no recall; a session
that another connection starts is seen by the next recall of a long-lived store;
sessions read by seq are the edges' sessions; short IDs, read from the random-part
index alone, are as long as the closest other node needs."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nervamem import MemoryStore, nodes
from nervamem.recall import api
from nervamem.recall.candidates import NODE_COLUMNS, Candidate, sessions_of
from nervamem.storage.sqlite.migrations import EDGE_KIND_CODES

from .test_properties import SETTINGS, build, memory_spec, text

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

FIXED = datetime(2027, 1, 1, tzinfo=timezone.utc)
# What a statement that reads sessions names: the edge kind (the mem_edges view), or its
# code (mem_links, which SQLite's session lookups read by seq).
SESSION_READS = ("OCCURRED_IN", f"l.kind = {EDGE_KIND_CODES.index('OCCURRED_IN')}")


def session_reads(seen: list[str]) -> list[str]:
    return [sql for sql in seen if any(mark in sql for mark in SESSION_READS)]


@contextmanager
def statements(store: MemoryStore) -> Iterator[list[str]]:
    """The SQL texts the store's SQLite connection runs inside the block."""
    seen: list[str] = []
    conn = store.connection
    assert isinstance(conn, sqlite3.Connection)
    conn.set_trace_callback(seen.append)
    try:
        yield seen
    finally:
        conn.set_trace_callback(None)


@pytest.mark.sqlite_only  # SQLite's statement trace
def test_a_store_without_sessions_runs_no_session_lookup(
    make_store: Callable[..., MemoryStore],
) -> None:
    store = make_store()
    store.store("fact", "redis is the session cache", entities=["Redis"])
    store.store("decision", "Chose redis for the cache", entities=["Redis"])
    with statements(store) as seen:
        result = store.recall("redis cache")
    assert [item.session_id for item in result.items] == [None] * len(result.items)
    assert len(result.items) >= 2
    assert not session_reads(seen)
    store.start_session("cache work")
    store.store("fact", "redis keeps the cache warm")
    with statements(store) as seen:
        result = store.recall("redis cache")
    assert session_reads(seen)


def test_a_session_started_elsewhere_is_seen_by_the_next_recall(
    make_store: Callable[..., MemoryStore],
) -> None:
    """A long-lived store (an MCP server) recalls, another process starts a session and
    stores in it, and the next recall shows the session: nothing is cached between
    recalls."""
    server = make_store()
    server.store("fact", "the deploy uses a canary stage")
    assert all(item.session_id is None for item in server.recall("canary deploy").items)
    other = make_store()
    session = other.start_session("release")
    in_session = other.store("fact", "the canary deploy waits ten minutes")
    other.close()
    items = {item.id: item for item in server.recall("canary deploy").items}
    assert items[in_session].session_id == session
    assert items[in_session].session_short_id is not None


@SETTINGS
@given(spec=memory_spec, query=text, budget=st.sampled_from([200, 500, 1000]))
def test_skipping_the_session_lookups_changes_no_recall(  # type: ignore[no-untyped-def]
    new_store, spec, query, budget
) -> None:
    """On a store without sessions, recall with every session lookup made (as if the
    store might have one) is the recall without them, item for item."""
    target = new_store("sessions")
    build(target, spec).close()
    store = MemoryStore(target, clock=lambda: FIXED)
    try:
        with pytest.MonkeyPatch.context() as patch:
            # The same store state for both recalls: no access counts in between.
            patch.setattr(api, "count_accesses", lambda storage, ids: None)
            skipped = store.recall(query, budget_tokens=budget, namespace="a")
            patch.setattr(api, "any_sessions", lambda conn: True)
            looked_up = store.recall(query, budget_tokens=budget, namespace="a")
    finally:
        store.close()
    assert skipped == looked_up


hex_parts = st.text(alphabet="01f", min_size=16, max_size=16)


@given(own=hex_parts, before=st.none() | hex_parts, after=st.none() | hex_parts)
def test_shared_digits_is_the_longest_common_prefix(
    own: str, before: str | None, after: str | None
) -> None:
    expected = max(
        (nodes.common_prefix(own, other) for other in (before, after) if other), default=0
    )
    assert nodes.shared_digits(own, before, after) == expected


@given(own=st.text(max_size=20), before=st.text(max_size=20), after=st.text(max_size=20))
def test_shared_digits_of_anything_else_compares_text(own: str, before: str, after: str) -> None:
    expected = max(
        (nodes.common_prefix(own, other) for other in (before, after) if other), default=0
    )
    assert nodes.shared_digits(own, before, after) == expected


@pytest.mark.sqlite_only  # nodes written with chosen IDs, straight into the SQLite file
@SETTINGS
@given(
    stored=st.lists(hex_parts, min_size=1, max_size=12),
    asked=st.lists(hex_parts, max_size=4),
)
def test_short_ids_are_as_long_as_the_closest_other_node_needs(  # type: ignore[no-untyped-def]
    new_store, stored, asked
) -> None:
    """Random parts from three digits, so that neighbours share long prefixes and twins
    (the same random part) happen; IDs asked for that no node has are answered too."""
    store = MemoryStore(new_store("short"), clock=lambda: FIXED)
    try:
        ids = [f"f_{index:013x}{part}" for index, part in enumerate(stored)]
        for node_id in ids:
            store.connection.execute(
                "INSERT INTO mem_nodes (id, kind, content, valid_from, recorded_at) "
                "VALUES (?, 'fact', 'x', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
                (node_id,),
            )
        absent = [f"d_{index:013x}{part}" for index, part in enumerate(asked)]
        short = store.short_ids([*ids, *absent])
    finally:
        store.close()
    for node_id in [*ids, *absent]:
        shared = max(
            (nodes.common_prefix(node_id[-16:], other[-16:]) for other in ids if other != node_id),
            default=0,
        )
        expected = (
            node_id if shared >= 16 else f"{node_id[0]}-{node_id[-16:][: max(shared + 1, 4)]}"
        )
        assert short[node_id] == expected


def test_sessions_of_is_what_the_edges_say(make_store: Callable[..., MemoryStore]) -> None:
    """SQLite reads sessions by seq from mem_links: the same as the mem_edges view's
    OCCURRED_IN edges, for every node (sessions, memories in none, entities)."""
    store = make_store()
    store.store("fact", "before any session", entities=["Redis"])
    for title in ("first", "second"):
        store.start_session(title)
        for n in range(3):
            store.store("fact", f"{title} session note {n}", entities=["Redis"])
        store.end_session()
    store.store("fact", "after the sessions")
    conn = store.connection
    rows = conn.execute(f"SELECT {NODE_COLUMNS} FROM mem_nodes n").fetchall()
    everyone = [Candidate(*row, relevance=1.0, via="search") for row in rows]
    expected = dict(
        conn.execute("SELECT src, dst FROM mem_edges WHERE kind = 'OCCURRED_IN'").fetchall()
    )
    assert len(expected) == 6
    assert sessions_of(conn, everyone) == expected
    assert sessions_of(conn, everyone[::-1][:3]) == {
        c.id: expected[c.id] for c in everyone[::-1][:3] if c.id in expected
    }
