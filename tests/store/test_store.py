"""Core store tests on real SQLite files: writes, supersession, sessions, namespaces,
forget, ID resolution, migrations and location."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from nervamem import MemoryStore
from nervamem.errors import (
    AmbiguousIdError,
    BadInputError,
    NotFoundError,
    SchemaTooNewError,
    StoreError,
)
from nervamem.ids import ID_PATTERN, make_id
from nervamem.locate import resolve_db_path
from nervamem.storage.sqlite.migrations import SCHEMA_VERSION

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL


def edges(store: MemoryStore) -> set[tuple[str, str, str]]:
    return {
        (r[0], r[1], r[2])
        for r in store.connection.execute("SELECT src, kind, dst FROM mem_edges").fetchall()
    }


def test_id_format_is_prefix_13_hex_ms_16_hex_random() -> None:
    node_id = make_id("preference", 0x19F2A3B4C5D, 0xDEADBEEF)
    assert node_id == "pr_0019f2a3b4c5d00000000deadbeef"
    assert ID_PATTERN.match(node_id)


def test_store_returns_id_and_persists_all_columns(store: MemoryStore, db_path: Path) -> None:
    node_id = store.store("fact", "auth_service issues 15-minute tokens", confidence=0.8)
    store.close()
    reopened = MemoryStore(db_path)
    node = reopened.get(node_id)
    assert node.kind == "fact"
    assert node.content == "auth_service issues 15-minute tokens"
    assert node.namespace == "default"
    assert node.confidence == 0.8
    assert node.valid_until is None
    assert node.recorded_at == "2026-07-03T12:00:01.000Z"  # 12:00:00 was the migration
    assert node.valid_from == node.recorded_at
    assert not node.tombstoned
    reopened.close()


@pytest.mark.sqlite_only  # the SQLite file itself
def test_store_pragmas_wal_busy_timeout_foreign_keys(store: MemoryStore) -> None:
    conn = store.connection
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] > 0
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


@pytest.mark.sqlite_only  # the SQLite file itself
def test_fts_is_kept_in_sync_by_triggers(store: MemoryStore) -> None:
    node_id = store.store("fact", "zebra crossing near the depot")
    conn = store.connection
    hits = conn.execute(
        "SELECT n.id FROM mem_fts JOIN mem_nodes n ON n.seq = mem_fts.rowid "
        "WHERE mem_fts MATCH 'zebra'"
    ).fetchall()
    assert hits == [(node_id,)]
    conn.execute("INSERT INTO mem_fts (mem_fts, rank) VALUES ('integrity-check', 1)")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "opinion"}, "unknown kind"),
        ({"kind": "session"}, "unknown kind"),
        ({"content": "   "}, "cannot be empty"),
        ({"content": "a\x00b"}, "NUL"),
        ({"confidence": 1.5}, "outside"),
        ({"confidence": -0.1}, "outside"),
        ({"confidence": float("nan")}, "outside"),
        ({"valid_from": "yesterday"}, "ISO-8601"),
        ({"rationale": "why"}, "decisions only"),
    ],
)
def test_store_rejects_bad_input_and_writes_nothing(
    store: MemoryStore, kwargs: dict[str, object], message: str
) -> None:
    args: dict[str, object] = {"kind": "fact", "content": "something"}
    args.update(kwargs)
    kind = str(args.pop("kind"))
    content = str(args.pop("content"))
    with pytest.raises(BadInputError, match=message):
        store.store(kind, content, **args)  # type: ignore[arg-type]
    assert store.connection.execute("SELECT count(*) FROM mem_nodes").fetchone()[0] == 0


def test_decision_keeps_rationale_and_rejected_alternatives(store: MemoryStore) -> None:
    node_id = store.store(
        "decision", "Chose JWT", rationale="stateless", rejected=["cookies", "opaque tokens"]
    )
    assert store.get(node_id).data == {
        "rationale": "stateless",
        "rejected": ["cookies", "opaque tokens"],
    }


def test_supersede_closes_old_validity_and_links(store: MemoryStore) -> None:
    old = store.store("decision", "Chose session cookies for auth", valid_from="2026-01-01")
    new = store.store(
        "decision", "Chose JWT for auth", valid_from="2026-06-01", supersedes=old[:16]
    )
    assert store.get(old).valid_until == "2026-06-01T00:00:00.000Z"
    assert store.get(new).valid_until is None
    assert (new, "SUPERSEDES", old) in edges(store)


def test_superseding_twice_names_the_superseder(store: MemoryStore) -> None:
    old = store.store("fact", "v1", valid_from="2026-01-01")
    new = store.store("fact", "v2", valid_from="2026-02-01", supersedes=old)
    with pytest.raises(BadInputError, match=f"already superseded by {new}"):
        store.store("fact", "v3", valid_from="2026-03-01", supersedes=old)
    assert store.connection.execute("SELECT count(*) FROM mem_nodes").fetchone()[0] == 2


def test_supersede_refuses_a_start_before_the_old_node(store: MemoryStore) -> None:
    old = store.store("fact", "v1", valid_from="2026-05-01")
    with pytest.raises(BadInputError, match="before"):
        store.store("fact", "v0", valid_from="2026-01-01", supersedes=old)
    assert store.get(old).valid_until is None


def test_contradicts_caused_by_derived_from_edges(store: MemoryStore) -> None:
    decision = store.store("decision", "Deploy on Fridays")
    fact = store.store("fact", "Friday deploys broke twice")
    outcome = store.store("outcome", "Weekend outage", caused_by=[decision])
    derived = store.store("fact", "Friday deploys are risky", derived_from=[fact])
    conflict = store.store("preference", "Never deploy on Fridays", contradicts=[decision])
    assert {
        (decision, "CAUSED", outcome),
        (derived, "DERIVED_FROM", fact),
        (conflict, "CONTRADICTS", decision),
    } <= edges(store)


def test_unknown_reference_is_not_found_and_nothing_written(store: MemoryStore) -> None:
    with pytest.raises(NotFoundError):
        store.store("fact", "x", derived_from=["f_ffff"])
    assert store.connection.execute("SELECT count(*) FROM mem_nodes").fetchone()[0] == 0


def test_resolve_id_by_unique_prefix_and_ambiguity(store: MemoryStore) -> None:
    first = store.store("fact", "one")
    second = store.store("fact", "two")
    assert store.resolve_id(first) == first
    common = len(Path(first).name)
    while first[:common] != second[:common]:
        common -= 1
    assert store.resolve_id(first[: common + 1]) == first
    with pytest.raises(AmbiguousIdError) as caught:
        store.resolve_id(first[:common])
    assert set(caught.value.candidates) == {first, second}
    with pytest.raises(NotFoundError):
        store.resolve_id("d_")
    with pytest.raises(BadInputError):
        store.resolve_id("f_'; DROP TABLE")


def test_short_ids_are_the_shortest_unambiguous_random_part(store: MemoryStore) -> None:
    ids = [store.store("fact", f"fact {n}") for n in range(300)]
    short = store.short_ids(ids)
    tails = [node_id[-16:] for node_id in ids]
    for node_id, shown in short.items():
        kind, digits = shown.split("-")
        assert kind == "f" and len(digits) >= 4
        assert node_id[-16:].startswith(digits)
        assert store.resolve_id(shown) == node_id
        # No other node shares these digits, and one digit fewer would be shared.
        assert sum(tail.startswith(digits) for tail in tails) == 1
        if len(digits) > 4:
            assert sum(tail.startswith(digits[:-1]) for tail in tails) > 1
    assert max(len(shown) for shown in short.values()) <= 2 + 6  # 300 nodes: 4-6 digits


@pytest.mark.sqlite_only  # the SQLite file itself
def test_a_store_written_before_m003_gets_the_random_part_index(
    make_store: Callable[..., MemoryStore], db_path: Path
) -> None:
    store = make_store()
    fact = store.store("fact", "written by an older nervamem")
    store.close()
    conn = sqlite3.connect(db_path)
    conn.execute("DROP INDEX mem_nodes_id_random")
    conn.execute(
        "DELETE FROM mem_migrations WHERE name NOT IN ('m001_initial', 'm002_node_degree')"
    )
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    reopened = make_store()
    assert reopened.connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    plan = reopened.connection.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM mem_nodes WHERE substr(id, -16) >= 'a'"
    ).fetchall()
    assert "mem_nodes_id_random" in str(plan)
    assert reopened.resolve_id(reopened.short_ids([fact])[fact]) == fact
    reopened.close()


def test_short_ids_collide_only_in_all_sixteen_digits(
    make_store: Callable[..., MemoryStore],
) -> None:
    twins = iter([0x1234, 0x1234, 0x12345678, 0x12340000])
    store = make_store()
    store.storage.random = lambda: next(twins)
    a, b = store.store("fact", "one"), store.store("fact", "two")
    c, d = store.store("fact", "three"), store.store("fact", "four")
    short = store.short_ids([a, b, c, d])
    assert short[a] == a and short[b] == b  # same random part: only the whole ID tells
    assert short[c] == "f-0000000012345"
    assert short[d] == "f-0000000012340"
    assert store.resolve_id(short[c]) == c


def test_an_ambiguous_short_id_lists_the_candidates(make_store: Callable[..., MemoryStore]) -> None:
    parts = iter([0x1234_0000_0000_0000, 0x1234_1000_0000_0000])
    store = make_store()
    store.storage.random = lambda: next(parts)
    first, second = store.store("fact", "one"), store.store("fact", "two")
    with pytest.raises(AmbiguousIdError) as raised:
        store.resolve_id("f-1234")
    assert first in str(raised.value) and second in str(raised.value)
    assert store.short_ids([first, second]) == {first: "f-12340", second: "f-12341"}
    assert store.resolve_id("f-12341") == second


@pytest.mark.sqlite_only  # the SQLite file itself
def test_id_lookups_use_the_random_part_index(store: MemoryStore) -> None:
    """The statements resolve_id and short_ids really run, not hand-written copies."""
    fact = store.store("fact", "one")
    statements: list[str] = []
    conn = store.connection
    conn.set_trace_callback(statements.append)
    try:
        store.resolve_id(store.short_ids([fact])[fact])
    finally:
        conn.set_trace_callback(None)
    lookups = [s for s in statements if "substr(id, -16)" in s]
    assert len(lookups) == 2, statements
    for statement in lookups:
        plan = str(conn.execute("EXPLAIN QUERY PLAN " + statement).fetchall())
        assert "mem_nodes_id_random" in plan, (statement, plan)
        assert "SCAN mem_nodes" not in plan, (statement, plan)


@pytest.mark.parametrize("ref", ["f-123", "f-12345678901234567", "x-1234", "f-12g4", "-1234"])
def test_a_malformed_short_id_is_bad_input(store: MemoryStore, ref: str) -> None:
    store.store("fact", "one")
    with pytest.raises(BadInputError):
        store.resolve_id(ref)


def test_short_id_resolves_within_its_kind_and_namespace(
    make_store: Callable[..., MemoryStore],
) -> None:
    store = make_store()
    fact = store.store("fact", "one")
    digits = store.short_ids([fact])[fact].split("-")[1]
    with pytest.raises(NotFoundError):
        store.resolve_id(f"d-{digits}")
    with pytest.raises(NotFoundError):
        store.resolve_id(f"f-{digits}", namespace="elsewhere")
    assert store.resolve_id(f"F-{digits.upper()}") == fact


def test_session_links_nodes_and_end_queues_consolidation(store: MemoryStore) -> None:
    session = store.start_session("auth work")
    assert store.current().session == session
    fact = store.store("fact", "tokens last 15 minutes")
    assert (fact, "OCCURRED_IN", session) in edges(store)
    assert store.end_session(summary="done") == session
    assert store.current().session is None
    assert store.get(session).data["summary"] == "done"
    queued = store.connection.execute("SELECT session_id, status FROM mem_review_queue").fetchall()
    assert queued == [(session, "pending")]
    with pytest.raises(BadInputError, match="already ended"):
        store.end_session(session)
    with pytest.raises(BadInputError, match="no active session"):
        store.end_session()


def test_store_without_session_has_no_occurred_in(store: MemoryStore) -> None:
    store.store("fact", "lonely fact")
    assert not [e for e in edges(store) if e[1] == "OCCURRED_IN"]


def test_namespaces_isolate_nodes_and_switch_resets_session(
    store: MemoryStore, make_store: Callable[..., MemoryStore]
) -> None:
    store.start_session("in default")
    mine = store.store("fact", "default secret about zebras")
    context = store.switch_namespace("project_b")
    assert context.session is None
    theirs = store.store("fact", "project_b note about zebras")
    assert [i.id for i in store.recall("zebras").items] == [theirs]
    with pytest.raises(NotFoundError):
        store.resolve_id(mine)
    other = make_store()
    assert other.namespace == "project_b"  # persisted in state.yaml
    assert {n.name: n.nodes for n in other.list_namespaces()} == {"default": 2, "project_b": 1}
    assert [i.id for i in other.recall("zebras", namespace="default").items] == [mine]
    assert theirs not in [e[0] for e in edges(other) if e[1] == "OCCURRED_IN"]


def test_invalid_namespace_names(store: MemoryStore) -> None:
    for bad in ("", "a b", "../x", "x" * 65):
        with pytest.raises(BadInputError):
            store.switch_namespace(bad)


def test_forget_tombstones_and_purge_deletes_everything(store: MemoryStore) -> None:
    target = store.store("fact", "the quokka password is hunter2", entities=["Quokka"])
    result = store.forget(target)
    assert (result.id, result.purged) == (target, False)
    assert store.get(target).tombstoned
    assert store.recall("quokka password").items == () or all(
        i.id != target for i in store.recall("quokka password").items
    )
    purged = store.forget(target[:12], purge=True)
    assert purged.purged
    conn = store.connection
    assert conn.execute("SELECT count(*) FROM mem_nodes WHERE id = ?", (target,)).fetchone()[0] == 0
    assert (
        conn.execute(
            "SELECT count(*) FROM mem_edges WHERE src = ? OR dst = ?", (target, target)
        ).fetchone()[0]
        == 0
    )
    search_hits = (
        "SELECT count(*) FROM mem_fts WHERE mem_fts MATCH 'hunter2'"
        if store.engine == "sqlite"
        else "SELECT count(*) FROM mem_search_terms WHERE term = 'hunter2'"
    )
    assert conn.execute(search_hits).fetchone()[0] == 0


def test_purging_the_superseder_reopens_the_old_version(store: MemoryStore) -> None:
    old = store.store("fact", "v1", valid_from="2026-01-01")
    new = store.store("fact", "v2", valid_from="2026-02-01", supersedes=old)
    store.forget(new, purge=True)
    assert store.get(old).valid_until is None


def test_stats_counts(store: MemoryStore) -> None:
    store.start_session("s")
    old = store.store("fact", "v1", entities=["Thing"])
    store.store("fact", "v2", supersedes=old)
    gone = store.store("fact", "v3")
    store.forget(gone)
    store.end_session()
    stats = store.stats()
    assert stats.nodes == {"session": 1, "fact": 2, "entity": 1}
    # The forgotten v3 and its OCCURRED_IN edge are not counted.
    assert stats.edges == {"ABOUT": 1, "OCCURRED_IN": 2, "SUPERSEDES": 1}
    assert (stats.tombstoned, stats.superseded, stats.pending_consolidation) == (1, 1, 1)


def test_batch_is_one_transaction(store: MemoryStore) -> None:
    with pytest.raises(RuntimeError), store.batch():
        store.store("fact", "first")
        store.store("fact", "second")
        raise RuntimeError("abort the batch")
    assert store.connection.execute("SELECT count(*) FROM mem_nodes").fetchone()[0] == 0
    with store.batch():
        for n in range(50):
            store.store("fact", f"fact {n}")
    assert store.connection.execute("SELECT count(*) FROM mem_nodes").fetchone()[0] == 50


@pytest.mark.sqlite_only  # the SQLite file itself
def test_newer_schema_is_refused_without_damage(db_path: Path) -> None:
    MemoryStore(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    before = db_path.read_bytes()
    with pytest.raises(SchemaTooNewError, match="upgrade nervamem"):
        MemoryStore(db_path)
    assert db_path.read_bytes() == before


def test_non_sqlite_file_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "memory.db"
    bogus.write_text("this is not a database " * 100)
    with pytest.raises(StoreError):
        MemoryStore(bogus)
    assert bogus.read_text().startswith("this is not a database")


def test_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not a nervamem store"):
        MemoryStore(other)


@pytest.mark.sqlite_only  # the SQLite file itself
def test_migrations_are_recorded(store: MemoryStore) -> None:
    names = [r[0] for r in store.connection.execute("SELECT name FROM mem_migrations")]
    assert names[0] == "m001_initial"
    assert len(names) == SCHEMA_VERSION


def test_location_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    project = tmp_path / "repo"
    nested = project / "src" / "pkg"
    nested.mkdir(parents=True)
    (project / ".nervapack").mkdir()
    (project / ".nervapack" / "memory.db").write_bytes(b"")
    monkeypatch.chdir(nested)
    assert resolve_db_path() == project / ".nervapack" / "memory.db"
    monkeypatch.setenv("NERVAPACK_MEMORY_DB", str(tmp_path / "env.db"))
    assert resolve_db_path() == tmp_path / "env.db"
    assert resolve_db_path(tmp_path / "explicit.db") == tmp_path / "explicit.db"
    monkeypatch.delenv("NERVAPACK_MEMORY_DB")
    monkeypatch.chdir(tmp_path)
    assert resolve_db_path() == Path.home() / ".nervapack" / "memory.db"


def test_nervamem_db_names_the_store_and_wins_over_nervapack_memory_db(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NERVAMEM_DB", str(tmp_path / "nervamem.db"))
    assert resolve_db_path() == tmp_path / "nervamem.db"
    monkeypatch.setenv("NERVAPACK_MEMORY_DB", str(tmp_path / "nervapack.db"))
    assert resolve_db_path() == tmp_path / "nervamem.db"
    assert resolve_db_path(tmp_path / "explicit.db") == tmp_path / "explicit.db"
    monkeypatch.setenv("NERVAMEM_DB", "")  # empty counts as unset
    assert resolve_db_path() == tmp_path / "nervapack.db"


@pytest.mark.sqlite_only  # the SQLite file itself
def test_state_file_is_written_atomically_and_validated(
    store: MemoryStore, db_path: Path, make_store: Callable[..., MemoryStore]
) -> None:
    session = store.start_session("x")
    state_file = db_path.parent / "state.yaml"
    text = state_file.read_text()
    assert f'session: "{session}"' in text
    assert not list(db_path.parent.glob(".state-*"))
    state_file.write_text("namespace: [1, 2\n")
    with pytest.raises(StoreError, match="state.yaml"):
        _ = make_store().namespace
    state_file.write_text("namespace: 'hand edited'\n")
    with pytest.raises(StoreError, match="namespace"):
        _ = make_store().namespace
    state_file.write_text("# edited by hand\nnamespace: team\nsession:\n")
    assert make_store().namespace == "team"


def test_any_text_is_valid_content(store: MemoryStore) -> None:
    for text in [
        '"unbalanced',
        "NEAR(a b)",
        "a AND b OR c",
        "col:val ^start *",
        "🙂 emoji",
        "x" * 100_000,
    ]:
        node_id = store.store("fact", text)
        assert store.get(node_id).content == text
    assert json.loads(json.dumps(store.stats().nodes)) == {"fact": 6}


def test_an_entity_cannot_supersede_or_link_to_itself(store: MemoryStore) -> None:
    entity = store.store("entity", "AuthService")
    for option in ({"supersedes": entity}, {"derived_from": [entity]}, {"contradicts": [entity]}):
        with pytest.raises(BadInputError, match="itself"):
            store.store("entity", "auth_service", **option)  # type: ignore[arg-type]
    assert store.get(entity).valid_until is None
    assert not edges(store)


def test_purging_a_middle_version_keeps_the_older_one_closed(store: MemoryStore) -> None:
    a = store.store("fact", "kiwi alpha", valid_from="2026-01-01")
    b = store.store("fact", "kiwi beta", valid_from="2026-02-01", supersedes=a)
    c = store.store("fact", "kiwi gamma", valid_from="2026-03-01", supersedes=b)
    store.forget(b, purge=True)
    assert [i.id for i in store.recall("kiwi").items] == [c]
    assert store.get(a).valid_until == "2026-03-01T00:00:00.000Z"
    assert [t.superseded_by for t in store.timeline("kiwi")] == [c, None]


def test_a_chain_goes_on_after_its_newest_version_is_forgotten(store: MemoryStore) -> None:
    a = store.store("fact", "lemon v1", valid_from="2026-01-01")
    b = store.store("fact", "lemon v2", valid_from="2026-02-01", supersedes=a)
    store.forget(b)
    assert store.timeline("lemon")[0].superseded_by is None
    c = store.store("fact", "lemon v3", valid_from="2026-03-01", supersedes=a)
    assert store.timeline("lemon")[0].superseded_by == c


def test_a_purge_inside_a_batch_is_refused_and_the_batch_goes_on(
    store: MemoryStore,
) -> None:
    # A purge scrubs the files after its own commit (VACUUM, an empty WAL; on
    # PostgreSQL VACUUM FULL), none of which runs inside a transaction: inside a batch it
    # used to delete, fail with a "stayed locked by another writer" that was not true,
    # and roll the batch back.
    target = store.store("fact", "the wombat pin is 4711", entities=["Wombat"])
    with store.batch():
        kept = store.store("fact", "a memory written in the same batch")
        with pytest.raises(BadInputError, match="inside a batch"):
            store.forget(target, purge=True)
    assert store.get(target).content == "the wombat pin is 4711"
    assert store.get(kept).content == "a memory written in the same batch"
    assert store.forget(target, purge=True).purged


def test_forgetting_the_active_session_clears_it(store: MemoryStore) -> None:
    session = store.start_session("doomed")
    store.forget(session)
    assert store.current().session is None
    with pytest.raises(BadInputError, match="no active session"):
        store.end_session()


@pytest.mark.sqlite_only  # state.yaml beside the file
def test_a_session_whose_state_cannot_be_written_is_rolled_back(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nervamem.storage.sqlite as store_module

    def broken(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(store_module, "write_state_file", broken)
    with pytest.raises(OSError):
        store.start_session("never")
    count = store.connection.execute("SELECT count(*) FROM mem_nodes").fetchone()[0]
    assert count == 0


def test_switching_to_the_current_namespace_keeps_the_session(store: MemoryStore) -> None:
    session = store.start_session("stay")
    assert store.switch_namespace("default").session == session
    assert store.switch_namespace("elsewhere").session is None


def test_an_empty_namespace_is_refused(make_store: Callable[..., MemoryStore]) -> None:
    with pytest.raises(BadInputError, match="namespace"):
        make_store(namespace="")
    with pytest.raises(BadInputError, match="namespace"):
        make_store().store("fact", "x", namespace="")


def test_valid_until_bounds_a_memory_in_time(store: MemoryStore) -> None:
    # The fixed clock reads 2026-07-03T12:00: the freeze ends on Friday the 10th.
    freeze = store.store("fact", "deploys are frozen", valid_until="2026-07-10T18:00:00Z")
    assert store.get(freeze).valid_until == "2026-07-10T18:00:00.000Z"
    assert [i.id for i in store.recall("deploys frozen").items] == [freeze]
    assert store.recall("deploys frozen", as_of="2026-07-11").items == ()
    noon = store.recall("deploys frozen", as_of="2026-07-10T12:00:00Z")
    assert [i.id for i in noon.items] == [freeze]
    # Superseded after its end: the stated end stays; purging the superseder keeps it.
    later = store.store("fact", "deploys resume", valid_from="2026-07-20", supersedes=freeze)
    assert store.get(freeze).valid_until == "2026-07-10T18:00:00.000Z"
    store.forget(later, purge=True)
    assert store.get(freeze).valid_until == "2026-07-10T18:00:00.000Z"
    # Superseded before its end: the successor's start ends it.
    early = store.store("fact", "freeze lifted early", valid_from="2026-07-05", supersedes=freeze)
    assert store.get(freeze).valid_until == "2026-07-05T00:00:00.000Z"
    assert early


def test_valid_until_must_come_after_the_start(store: MemoryStore) -> None:
    with pytest.raises(BadInputError, match="--valid-until"):
        store.store("fact", "x", valid_from="2026-07-10", valid_until="2026-07-09")
    with pytest.raises(BadInputError, match="--valid-until"):
        store.store("entity", "Thing", valid_until="2026-07-09")
    with pytest.raises(BadInputError, match="--valid-until"):
        store.store("fact", "x", valid_until="friday")


def test_stats_do_not_count_a_stated_end_as_superseded(store: MemoryStore) -> None:
    store.store("fact", "frozen until Friday", valid_until="2026-07-10")
    old = store.store("fact", "v1")
    store.store("fact", "v2", supersedes=old)
    assert store.stats().superseded == 1


def test_a_purge_takes_the_duplicates_consolidation_folded_into_it(store: MemoryStore) -> None:
    """Consolidation forgets the older of two duplicates (``duplicate_of`` the newer);
    a purge of the newer takes the older too (it holds the same text), with the
    entities only they named, and keeps the history consistent: what the older copy
    superseded is current again, as after a purge of the newest version of a chain."""
    earlier = store.store("fact", "the limit is four")
    session = store.start_session("limits")
    older = store.store(
        "fact", "the limit is five quokkaword", entities=["Quokkaent"], supersedes=earlier
    )
    newer = store.store("fact", "the limit is five quokkaword", entities=["Quokkaent"])
    kept = store.store("fact", "another fact of the session")
    store.end_session(session)
    assert store.consolidate().tombstoned == (older,)
    entity = store.connection.execute(
        "SELECT dst FROM mem_edges WHERE src = ? AND kind = 'ABOUT'", (older,)
    ).fetchone()[0]

    result = store.forget(newer, purge=True)

    assert result.removed == (older, entity)
    conn = store.connection
    left = {row[0] for row in conn.execute("SELECT id FROM mem_nodes")}
    assert not {newer, older, entity} & left and {earlier, kept, session} <= left
    assert store.get(earlier).valid_until is None
    assert not conn.execute("SELECT 1 FROM mem_nodes WHERE content LIKE '%quokka%'").fetchall()
