"""Session context reads a seed's session and the rows around it in two statements on
SQLite; another process can write in between."""

from __future__ import annotations

import pytest

from nervamem import MemoryStore
from nervamem.recall.candidates import NODE_COLUMNS, Candidate
from nervamem.recall.session_context import session_context
from nervamem.timeparse import format_time

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL


def test_a_seed_masked_out_of_its_window_gets_no_context(store: MemoryStore) -> None:
    """A seed forgotten (or superseded) after search read it is no longer among its
    window's rows: it gets no context, and the recall does not fail (it raised
    StopIteration, an internal error, in tests/reliability's parallel workers)."""
    store.start_session("auth")
    gone = store.store("fact", "tokens expire hourly")
    store.store("fact", "tokens are JWTs")  # right after it: context, had it stayed
    store.forget(gone)
    conn = store.storage.connection
    row = conn.execute(f"SELECT {NODE_COLUMNS} FROM mem_nodes n WHERE n.id = ?", [gone]).fetchone()
    seed = Candidate(*row, relevance=1.0, via="search")
    found = session_context(
        conn,
        store.storage.namespace_for(None),
        {gone: seed},
        as_of=format_time(store.storage.clock()),
        kinds=None,
    )
    assert list(found) == [gone] and found[gone].relevance == 1.0
