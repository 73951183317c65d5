"""One active session per namespace (state.yaml): starting one in a namespace that is
not the active one makes it active there, stores in that namespace join it, switching
away and back resumes it, and a state file of the older form is read and migrated."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nervamem import MemoryStore
from nervamem.state import State, load_state, save_state

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL


def test_a_session_started_with_ns_is_active_for_that_namespace(
    make_store: Callable[..., MemoryStore],
) -> None:
    with_x = make_store(namespace="x")
    session = with_x.start_session("x work")
    assert with_x.current().session == session
    node = with_x.store("fact", "stored in x")
    assert with_x.show([node])[0].session is not None
    assert with_x.show([node])[0].session.id == session  # type: ignore[union-attr]
    plain = make_store()
    assert plain.current().session is None  # the active namespace is still default
    assert with_x.end_session() == session
    assert with_x.current().session is None


@pytest.mark.sqlite_only  # the SQLite file itself
def test_switching_back_resumes_the_session_left_there(store: MemoryStore) -> None:
    first = store.start_session("in default")
    store.switch_namespace("other")
    assert store.current().session is None
    second = store.start_session("in other")
    store.switch_namespace("default")
    assert store.current().session == first
    store.switch_namespace("other")
    assert store.current().session == second
    assert load_state(store.path) == State("other", second, {"default": first})


def test_forgetting_a_session_ends_it_in_whatever_namespace(
    make_store: Callable[..., MemoryStore],
) -> None:
    store = make_store()
    session = store.start_session("in default")
    store.switch_namespace("other")
    make_store(namespace="default").forget(session)  # --ns default forget ID
    store.switch_namespace("default")
    assert store.current().session is None


@pytest.mark.sqlite_only  # state.yaml beside the file
def test_an_old_state_file_is_read_and_rewritten_in_the_new_form(
    store: MemoryStore, db_path: Path
) -> None:
    session = store.start_session("old")
    state_file = db_path.parent / "state.yaml"
    state_file.write_text(f'namespace: "default"\nsession: "{session}"\n', encoding="utf-8")
    store.storage.reload_state()
    assert store.current().session == session
    store.switch_namespace("b")
    assert f'sessions: {{"default": "{session}"}}' in state_file.read_text(encoding="utf-8")
    assert store.switch_namespace("default").session == session


def test_the_state_file_round_trips_and_stays_readable_by_yaml(tmp_path: Path) -> None:
    import yaml

    db = tmp_path / "memory.db"
    state = State("a", "s_" + "1" * 29, {"b": "s_" + "2" * 29})
    save_state(db, state)
    assert load_state(db) == state
    # An older nervamem falls back to a YAML parse of a line it does not know.
    parsed: Any = yaml.safe_load((tmp_path / "state.yaml").read_text(encoding="utf-8"))
    assert parsed["session"] == "s_" + "1" * 29 and parsed["sessions"]["b"] == "s_" + "2" * 29


NAMES = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,10}", fullmatch=True)
SESSION_IDS = st.from_regex(r"s_[0-9a-f]{29}", fullmatch=True)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    active=NAMES,
    sessions=st.dictionaries(NAMES, SESSION_IDS, max_size=6),
    switches=st.lists(NAMES, max_size=5),
)
def test_state_round_trips_and_switching_keeps_every_session(
    tmp_path: Path, active: str, sessions: dict[str, str], switches: list[str]
) -> None:
    db = tmp_path / "memory.db"
    state = State(active, sessions.get(active), sessions)
    for name in switches:
        state = state.switched(name)
        assert state.sessions() == sessions  # a switch ends no namespace's session
        assert state.session == sessions.get(name)
    save_state(db, state)
    assert load_state(db) == state
