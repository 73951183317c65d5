"""``forget --purge`` leaves no trace: after it, the purged text is in no byte of the
store's files (database, WAL, shared memory), its FTS5 tokens included.

Each marker is a unique word that ends in a digit, so the porter stemmer keeps it whole
and the FTS5 index stores it verbatim. A precondition shows that the marker really sat
in the FTS index (and, for the WAL case, only in the WAL) before the purge, so that a
clean scan afterwards means something. A marker's first three letters are not looked
for: FTS5 may store a term as a suffix after the prefix it shares with the term before.
"""

from __future__ import annotations

import json
import secrets
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nervamem import MemoryStore
from nervamem.storage.sqlite import Storage, search_index

from . import harness

pytestmark = pytest.mark.sqlite_only  # not yet run against PostgreSQL

Run = Callable[..., Any]


def _marker(prefix: str = "zq") -> str:
    return f"{prefix}{secrets.token_hex(6)}7"


def _traces(folder: Path, *markers: str) -> dict[str, list[str]]:
    """File name -> markers found in it, for every file in the store's folder."""
    found: dict[str, list[str]] = {}
    for path in sorted(folder.iterdir()):
        if path.is_file():
            data = path.read_bytes()
            hits = [m for m in markers if m[3:].encode() in data or m.upper()[3:].encode() in data]
            if hits:
                found[path.name] = hits
    return found


def _fts_blobs(db: Path) -> bytes:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return b"".join(row[0] for row in conn.execute("SELECT block FROM mem_fts_data"))
    finally:
        conn.close()


def _store(cli: Run, *args: str) -> str:
    result = cli("store", *args)
    assert (result.exit_code, result.stderr) == (0, ""), result.stderr
    return str(result.stdout.strip())


def _purge(cli: Run, node_id: str) -> None:
    result = cli("forget", node_id, "--purge", "--yes")
    assert (result.exit_code, result.stderr) == (0, ""), result.stderr


@pytest.fixture
def neighbours(cli: Run, db_path: Path) -> list[str]:
    """Other nodes around the purged one: sharing its words, its entity and session."""
    cli("session", "start", "purge neighbours")
    ids = [
        _store(
            cli,
            "decision",
            "Chose JWT for auth alpha tokens",
            "-e",
            "AuthService",
            "--rationale",
            "stateless",
        ),
        _store(cli, "fact", "alpha tokens last fifteen minutes", "-e", "AuthService"),
    ]
    with MemoryStore(db_path) as memory, memory.batch():
        ids += [memory.store("fact", f"zebra quagga alpha filler {i}") for i in range(30)]
    return ids


def test_purge_leaves_no_trace_among_other_nodes(
    cli: Run, db_path: Path, neighbours: list[str]
) -> None:
    content_mark, rationale_mark, entity_free_mark = _marker(), _marker("zr"), _marker("zs")
    target = _store(
        cli,
        "decision",
        f"secret {content_mark} alpha tokens {entity_free_mark}",
        "-e",
        "AuthService",
        "--rationale",
        f"because {rationale_mark}",
    )
    later = _store(cli, "fact", "alpha tokens stored after the secret")
    superseding = _store(
        cli, "decision", f"replacement of {content_mark[:5]} alpha", "--supersedes", target
    )
    assert content_mark[3:].encode() in _fts_blobs(db_path), "precondition: the token is indexed"
    assert _traces(db_path.parent, content_mark), "precondition: the scan sees the content"

    _purge(cli, target)

    assert _traces(db_path.parent, content_mark, rationale_mark, entity_free_mark) == {}
    health = harness.inspect_store(db_path)
    assert health.ok
    assert target not in health.ids
    assert {*neighbours, later, superseding} <= health.ids
    recalled = cli("recall", "alpha tokens", "--format", "json")
    assert recalled.exit_code == 0 and target not in recalled.stdout


def test_purge_clears_content_that_only_the_wal_holds(
    cli: Run, db_path: Path, neighbours: list[str]
) -> None:
    """Another process keeps the store open (so no checkpoint happens when a command
    closes it): the marker is written to the WAL only, then purged."""
    mark = _marker()
    holder = sqlite3.connect(db_path, isolation_level=None)  # idle, no transaction
    try:
        holder.execute("SELECT count(*) FROM mem_nodes").fetchone()
        target = _store(cli, "fact", f"fresh secret {mark} alpha tokens")
        traces = _traces(db_path.parent, mark)
        assert "memory.db-wal" in traces and "memory.db" not in traces, (
            f"precondition: the marker is in the WAL only, found in {traces}"
        )

        _purge(cli, target)

        assert _traces(db_path.parent, mark) == {}, "while the other process is still open"
    finally:
        holder.close()
    assert _traces(db_path.parent, mark) == {}
    assert harness.inspect_store(db_path).ok


def test_purge_says_so_when_a_reader_pins_the_old_pages(
    cli: Run, db_path: Path, neighbours: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader inside a long read transaction needs the old pages, so they cannot be
    overwritten yet: the purge deletes the node but exits 1 and says why, instead of
    claiming there is no trace. Once the reader is gone, the bytes are gone too."""
    mark = _marker()
    target = _store(cli, "fact", f"pinned secret {mark} alpha")
    monkeypatch.setenv("NERVAMEM_BUSY_TIMEOUT_MS", "200")
    reader = sqlite3.connect(db_path, isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM mem_nodes").fetchone()
        result = cli("forget", target, "--purge", "--yes")
        assert result.exit_code == 1 and result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "reading" in lines[0] and "deleted" in lines[0], lines
        reader.execute("COMMIT")
    finally:
        reader.close()
    assert target not in harness.inspect_store(db_path).ids
    assert _traces(db_path.parent, mark) == {}


INTERRUPTED_PURGE = """
import os, sys
from nervamem.cli import main
from nervamem.storage.sqlite import Storage

def killed(self):  # as if SIGKILL landed right after the delete committed
    os._exit(9)

Storage.scrub_files = killed
main(sys.argv[1:])
"""


def test_purge_interrupted_before_the_scrub_leaves_no_trace_after_reopen(
    cli: Run, db_path: Path, neighbours: list[str], env: dict[str, str]
) -> None:
    """The process dies after the purge's delete committed but before the checkpoint
    and VACUUM: the node is gone (a second purge would say 'not found'), so the bytes
    must go too, by the next command that opens the store. secure_delete is what makes
    the delete itself overwrite the text."""
    mark = _marker()
    target = _store(cli, "fact", f"interrupted secret {mark} alpha tokens")
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            INTERRUPTED_PURGE,
            "--db",
            str(db_path),
            "forget",
            target,
            "--purge",
            "--yes",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert child.returncode == 9, child.stderr
    assert "memory.db-wal" in {p.name for p in db_path.parent.iterdir()}, "killed mid-way"
    health = harness.inspect_store(db_path)  # opens and closes the store: a checkpoint
    assert health.ok and target not in health.ids
    assert _traces(db_path.parent, mark) == {}


def _levels(db: Path) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        levels = search_index.structure_levels(conn)
    finally:
        conn.close()
    assert levels is not None
    return levels


def _fts_check(db: Path) -> None:
    """FTS5's own check of the index against mem_nodes: raises if they disagree."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("INSERT INTO mem_fts (mem_fts, rank) VALUES ('integrity-check', 1)")
    finally:
        conn.close()


def test_thousands_of_purges_keep_the_index_loadable(db_path: Path) -> None:
    """Issue 19: 'optimize' after each purge added index levels until, after ~1,000
    purges among 600 nodes, FTS5 refused to load the index and every store and recall
    failed. The level count must stay bounded, purge after purge."""
    with MemoryStore(db_path) as memory:
        with memory.batch():
            kept = [
                memory.store("fact", f"small fact {i} about widget{i % 37}") for i in range(600)
            ]
        levels = []
        for i in range(2000):
            memory.forget(memory.store("fact", f"fact to purge {i} widget"), purge=True)
            if i % 200 == 0:
                levels.append(_levels(db_path))
        assert max(levels) <= search_index.MAX_HEALTHY_LEVELS, levels
        after = memory.store("fact", "stored after the purges widget7")
        recalled = memory.recall("widget7", budget_tokens=2000)
    assert after in recalled.markdown or any(after.endswith(i.id[-16:]) for i in recalled.items)
    health = harness.inspect_store(db_path)
    assert health.ok and set(kept) | {after} <= health.ids and len(health.ids) >= 601
    _fts_check(db_path)


def _brick_like_old_purges(db: Path) -> int:
    """What ~1,000 purges did to a store before the fix, done directly: a node deleted,
    then FTS5 'optimize', over and over until FTS5 gives up, with the schema put back at
    version 3 (before m004). Returns how many rounds that took."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA synchronous = OFF")  # a fixture, not a store to keep
    try:
        for round_ in range(1, 5000):
            try:
                conn.execute(
                    "INSERT INTO mem_nodes (id, kind, content, valid_from, recorded_at) "
                    "VALUES (?, 'fact', ?, '2026-01-01T00:00:00.000Z', "
                    "'2026-01-01T00:00:00.000Z')",
                    (f"f_{round_:029x}", f"doomed fact {round_}"),
                )
                conn.execute("DELETE FROM mem_nodes WHERE id = ?", (f"f_{round_:029x}",))
                conn.execute("INSERT INTO mem_fts (mem_fts) VALUES ('optimize')")
            except sqlite3.DatabaseError:
                break
        conn.execute("DELETE FROM mem_migrations WHERE name >= 'm004'")
        conn.execute("PRAGMA user_version = 3")
    finally:
        conn.close()
    return round_


def test_a_store_bricked_by_old_purges_is_repaired_on_open(
    cli: Run, db_path: Path, clock: Callable[[], Any]
) -> None:
    # The CLI's clock: recall answers as of its now, which must not precede the facts.
    with MemoryStore(db_path, clock=clock) as memory, memory.batch():
        kept = [memory.store("fact", f"kept fact {i} about gadget{i % 11}") for i in range(300)]
    rounds = _brick_like_old_purges(db_path)
    assert 500 < rounds < 4999 and _levels(db_path) > 1000
    conn = sqlite3.connect(db_path)
    with pytest.raises(sqlite3.DatabaseError, match="vtable constructor failed: mem_fts"):
        conn.execute("SELECT count(*) FROM mem_fts WHERE mem_fts MATCH 'gadget3'").fetchone()
    conn.close()

    # The first command after the upgrade runs migration m004, which rebuilds the index.
    recalled = cli("recall", "gadget3", "--budget", "4000", "--format", "json")
    assert recalled.exit_code == 0, recalled.stderr
    assert len(json.loads(recalled.stdout)["items"]) == len([k for k in range(300) if k % 11 == 3])
    _store(cli, "fact", "stored after the repair gadget3")
    assert _levels(db_path) <= search_index.MAX_HEALTHY_LEVELS
    health = harness.inspect_store(db_path)
    assert health.ok and set(kept) <= health.ids
    _fts_check(db_path)


def test_purge_leaves_no_trace_without_secure_delete_by_default(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What VACUUM adds. Python's bundled SQLite is built with SECURE_DELETE, but many
    builds are not: there, a row rewritten by an update (a session's summary) or an alias
    taken over by a new entity leaves its old bytes in free space, which the purge's own
    secure_delete cannot reach. VACUUM rewrites the file without them."""
    real_connect = Storage._connect

    def connect_without_secure_delete(
        self: Storage, path: Path, *, read_only: bool
    ) -> sqlite3.Connection:
        conn = real_connect(self, path, read_only=read_only)
        conn.execute("PRAGMA secure_delete = OFF")
        return conn

    monkeypatch.setattr(Storage, "_connect", connect_without_secure_delete)
    title_mark, entity_mark = _marker(), _marker("Zs")
    with MemoryStore(db_path) as memory:
        for i in range(50):
            memory.store("fact", f"filler fact {i}", entities=[f"Widget{i}x"])
        session = memory.start_session(f"session {title_mark} " + "pad " * 300)
        memory.end_session(session, summary="the summary makes the row longer " * 20)
        first = memory.store("fact", "about the secret", entities=[entity_mark])
        first_entity = memory.connection.execute(
            "SELECT dst FROM mem_edges WHERE src = ? AND kind = 'ABOUT'", (first,)
        ).fetchone()[0]
        memory.forget(first_entity)
        for i in range(50):
            memory.store("fact", f"more filler {i}", entities=[f"Widget{i}y"])
        second = memory.store("fact", "about the secret again", entities=[entity_mark])
        second_entity = memory.connection.execute(
            "SELECT dst FROM mem_edges WHERE src = ? AND kind = 'ABOUT'", (second,)
        ).fetchone()[0]
    with MemoryStore(db_path) as memory:
        for node in (session, second_entity, first_entity):
            memory.forget(node, purge=True)
    marks = (title_mark, entity_mark, entity_mark.lower())
    assert _traces(db_path.parent, *marks) == {}
    assert harness.inspect_store(db_path).ok


def test_purge_drops_the_index_samples_that_an_analyze_with_stat4_copied(
    cli: Run, db_path: Path
) -> None:
    """nervamem never runs ANALYZE or PRAGMA optimize, and Python's SQLite is built
    without STAT4; but an SQLite built with it (a user's sqlite3, a browser of the file)
    that runs ANALYZE on the store copies up to 24 keys of each index into sqlite_stat4:
    aliases, IDs, FTS5 terms. Those rows are live: neither secure_delete nor VACUUM
    touches them. The purge deletes the samples (stat1's counts stay)."""
    apsw = pytest.importorskip("apsw")
    entity_mark = _marker("Zt")
    target = _store(cli, "fact", "about the secret", "-e", entity_mark)
    for i in range(5):
        _store(cli, "fact", f"filler fact {i}", "-e", f"Widget{i}x")
    conn = apsw.Connection(str(db_path))
    try:
        conn.execute("ANALYZE")
        samples = b"".join(row[0] for row in conn.execute("SELECT sample FROM sqlite_stat4"))
    finally:
        conn.close()
    assert entity_mark[3:].encode() in samples, "precondition: ANALYZE sampled the alias"

    _purge(cli, target)

    assert _traces(db_path.parent, entity_mark, entity_mark.lower()) == {}
    assert harness.inspect_store(db_path).ok
    recalled = cli("recall", "filler fact", "--format", "json")
    assert recalled.exit_code == 0 and "Widget1x" in recalled.stdout


def test_purge_takes_the_duplicates_that_consolidation_forgot(cli: Run, db_path: Path) -> None:
    """An agent stored the same secret twice in a session; consolidation forgot the
    older copy as a duplicate of the newer (``duplicate_of``), so recall shows one. A
    purge of the one shown must take the hidden copy too: it holds the same text. In a
    shared store, no event file keeps it either, and a cache rebuilt from the events
    has neither copy."""
    assert cli("init", "--shared").exit_code == 0
    content_mark, entity_mark = _marker(), _marker("Zu")
    cli("session", "start", "work")
    older = _store(cli, "fact", f"the api key is {content_mark}", "-e", entity_mark)
    newer = _store(cli, "fact", f"the api key is {content_mark}", "-e", entity_mark)
    other = _store(cli, "fact", "an unrelated fact of the session")
    assert cli("session", "end", "--summary", "done").exit_code == 0
    consolidated = json.loads(cli("consolidate", "--format", "json").stdout)
    assert consolidated["tombstoned"] == [older], "precondition: the older copy was folded"
    recalled = json.loads(cli("recall", "api key", "--format", "json").stdout)
    shown = {item["id"] for item in recalled["items"]}
    assert newer in shown and older not in shown
    with MemoryStore(db_path) as memory:
        entity = memory.connection.execute(
            "SELECT dst FROM mem_edges WHERE src = ? AND kind = 'ABOUT'", (newer,)
        ).fetchone()[0]

    result = cli("forget", newer, "--purge", "--yes", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["removed"] == [older, entity]

    traces = {
        str(path.relative_to(db_path.parent)): hits
        for path in db_path.parent.rglob("*")
        if path.is_file()
        for hits in [
            [m for m in (content_mark, entity_mark.lower()) if m[3:].encode() in path.read_bytes()]
        ]
        if hits
    }
    assert traces == {}
    health = harness.inspect_store(db_path)
    assert health.ok and not {newer, older, entity} & health.ids and other in health.ids
    assert cli("sync", "--rebuild").exit_code == 0
    rebuilt = harness.inspect_store(db_path)
    assert not {newer, older, entity} & rebuilt.ids and other in rebuilt.ids
    markdown = cli("forget", other, "--purge", "--yes", "--format", "markdown").stdout
    assert markdown == f"purged {other}\n"


SYNC_KILLED_BEFORE_THE_SCRUB = """
import os, sys
from nervamem.cli import main
from nervamem.storage.sqlite import Storage

real_connect = Storage._connect

def connect_without_secure_delete(self, path, *, read_only):  # many system builds
    conn = real_connect(self, path, read_only=read_only)
    conn.execute("PRAGMA secure_delete = OFF")
    return conn

def killed(self):  # as if SIGKILL landed right after the import committed
    os._exit(9)

Storage._connect = connect_without_secure_delete
Storage.scrub_files = killed
main(sys.argv[1:])
"""


def test_a_purge_synced_from_another_clone_and_killed_before_the_scrub_leaves_no_trace(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """A purge that arrives by sync deletes the rows and commits, then scrubs the files.
    Killed in between on an SQLite built without SECURE_DELETE, the deleted cells'
    bytes stayed in the file, as they would not after a local purge (which switches
    secure_delete on for its delete): a sync now deletes with it on too."""
    ours, theirs = (tmp_path / name / ".nervapack" / "memory.db" for name in ("ours", "theirs"))
    mark = _marker()
    for db in (ours, theirs):
        db.parent.mkdir(parents=True)
    with MemoryStore(ours) as memory:
        memory.share()
        for i in range(30):
            memory.store("fact", f"filler fact {i}", entities=[f"Widget{i}"])
        secret = memory.store("fact", f"the secret is {mark}")
    shutil.copytree(ours.parent / "events", theirs.parent / "events")
    code, _, err, _ = harness.run_fresh(["--db", str(theirs), "sync"], env=env)
    assert (code, err) == (0, "")
    assert _traces(theirs.parent, mark), "precondition: the other clone holds the secret"
    with MemoryStore(ours) as memory:
        memory.forget(secret, purge=True)
    shutil.rmtree(theirs.parent / "events")
    shutil.copytree(ours.parent / "events", theirs.parent / "events")  # a git pull

    child = subprocess.run(
        [sys.executable, "-c", SYNC_KILLED_BEFORE_THE_SCRUB, "--db", str(theirs), "sync"],
        env=env,
        capture_output=True,
        text=True,
    )

    assert child.returncode == 9, child.stderr
    health = harness.inspect_store(theirs)  # opens and closes the store: a checkpoint
    assert health.ok and secret not in health.ids and len(health.ids) == 60
    assert _traces(theirs.parent, mark) == {}


def test_a_purge_takes_its_event_files_out_of_gits_index(tmp_path: Path) -> None:
    """The event file of a memory was staged (``git add``), then the memory was purged.
    The purge deleted the file from events/, but git's index still held it, so the next
    ``git commit`` published the purged content, which had never been committed. The
    purge now takes the files it deletes out of the index too (a committed one: its
    deletion is staged, so the next commit no longer has it)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    from ..team.gitrepo import git

    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    db = repo / ".nervapack" / "memory.db"
    committed_mark, staged_mark = _marker(), _marker("zr")
    db.parent.mkdir()
    with MemoryStore(db) as memory:
        memory.share()
        kept = memory.store("fact", "a fact that stays")
        committed = memory.store("fact", f"the secret is {committed_mark}")
        git(repo, "add", ".nervapack/events")
        git(repo, "commit", "-q", "-m", "events so far")
        staged = memory.store("fact", f"staged, never committed: {staged_mark}")
        git(repo, "add", ".nervapack/events")
        memory.forget(staged, purge=True)
        memory.forget(committed, purge=True)
    git(repo, "commit", "-q", "-m", "after the purges")  # without adding anything

    every_commit = git(repo, "rev-list", "--all").stdout.split()
    assert git(repo, "grep", "-l", staged_mark[3:], *every_commit, check=False).stdout == ""
    assert git(repo, "grep", "-l", committed_mark[3:], "HEAD", check=False).stdout == ""
    assert git(repo, "grep", "-l", kept, "HEAD").stdout  # the rest stays
