"""A purge is forever on a clone that applied it (issue 35): a checkout of a commit from
before the purge, a rebuild of the cache, or a teammate's clone that pulled the purge
brings no byte of the purged text back into recall, the store's files or the events
folder. Also: which memory of two that name an entity is purged last does not decide
whether the entity's name stays, and a purge in a repository with no commits does not
speak of committed copies.

Each marker is a unique word that ends in a digit (tests/reliability/test_purge.py): the
porter stemmer keeps it whole, so the FTS5 index would hold it verbatim.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from typer.testing import CliRunner, Result

from nervamem.cli import app

from .gitrepo import Clock, Clone, git, make_origin


def marker(prefix: str = "zq") -> str:
    return f"{prefix}{secrets.token_hex(6)}7"


def run_cli(db: Path, *args: str) -> Result:
    return CliRunner().invoke(app, ["--db", str(db), *args])


def ok(db: Path, *args: str) -> str:
    result = run_cli(db, *args)
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


def traces(folder: Path, *markers: str) -> dict[str, list[str]]:
    """Every file under ``folder`` (database, WAL, shm, event files) that holds a
    marker, and which. A marker's first three letters are not looked for: FTS5 may
    store a term as a suffix after the prefix it shares with the term before."""
    found: dict[str, list[str]] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            hits = [m for m in markers if m[3:].encode() in data or m[3:].upper().encode() in data]
            if hits:
                found[str(path.relative_to(folder))] = hits
    return found


def recalled(db: Path, query: str) -> list[str]:
    items = json.loads(ok(db, "-f", "json", "recall", query))["items"]
    return [item["content"] for item in items]


def test_a_checkout_of_a_commit_from_before_the_purge_brings_nothing_back(
    tmp_path: Path,
) -> None:
    origin = make_origin(tmp_path)
    alice = Clone(tmp_path, "alice", origin, Clock(), seed=1)
    db, store = alice.memory.path, alice.folder / ".nervapack"
    secret = marker()
    # One command stores both: one event file holds the secret and the neighbour.
    with alice.memory.batch():
        target = alice.memory.store("fact", f"the vault code is {secret}")
        alice.memory.store("fact", "the vault neighbour zkeepword5 stays")
    alice.commit()
    ok(db, "forget", target, "--purge", "--yes")
    alice.commit()
    assert traces(store, secret) == {}

    git(alice.folder, "checkout", "-q", "-b", "feature", "HEAD~1")
    assert traces(store / "events", secret), "precondition: the checkout restored the file"
    ok(db, "sync")
    assert recalled(db, secret) == []
    assert recalled(db, "zkeepword5") == ["the vault neighbour zkeepword5 stays"]
    assert traces(store, secret) == {}
    # The restored file is out of git's index too: a commit on this branch drops it.
    staged = git(alice.folder, "diff", "--cached", "--name-only").stdout
    assert ".nervapack/events/" in staged
    ok(db, "sync", "--rebuild")
    assert recalled(db, secret) == []
    assert recalled(db, "zkeepword5") == ["the vault neighbour zkeepword5 stays"]
    assert traces(store, secret) == {}
    # Committed on the branch, the purge travels with it: back on main and here again.
    alice.commit()
    git(alice.folder, "checkout", "-q", "main")
    ok(db, "sync")
    git(alice.folder, "checkout", "-q", "feature")
    ok(db, "sync")
    assert recalled(db, secret) == [] and traces(store, secret) == {}
    alice.memory.close()


def test_a_clone_that_pulled_the_purge_keeps_it_through_a_checkout(tmp_path: Path) -> None:
    """The three-clone run of the issue: bob and carol pulled the purge and synced; a
    checkout of the commit before it brings it back on neither."""
    origin = make_origin(tmp_path)
    clock = Clock()
    alice, bob, carol = (Clone(tmp_path, n, origin, clock, seed=i) for i, n in enumerate("abc"))
    secret = marker()
    target = ok(alice.memory.path, "store", "fact", f"the client is {secret}")
    alice.push()
    bob.pull()
    carol.pull()
    ok(alice.memory.path, "forget", target, "--purge", "--yes")
    alice.push()
    for clone in (bob, carol):
        clone.pull()
        db, store = clone.memory.path, clone.folder / ".nervapack"
        assert recalled(db, secret) == [] and traces(store, secret) == {}
        git(clone.folder, "checkout", "-q", "-b", "old", "HEAD~1")
        assert traces(store / "events", secret), "precondition: the checkout restored it"
        ok(db, "sync")
        assert recalled(db, secret) == [] and traces(store, secret) == {}
        ok(db, "sync", "--rebuild")
        assert recalled(db, secret) == [] and traces(store, secret) == {}
    for clone in (alice, bob, carol):
        clone.memory.close()


def test_an_entity_goes_with_the_last_memory_that_named_it_in_either_order(
    tmp_path: Path,
) -> None:
    origin = make_origin(tmp_path)
    clock = Clock()
    for order in ((0, 1), (1, 0)):
        name = f"Zqx{secrets.token_hex(4)}7 Client"
        clone = Clone(tmp_path, f"c{order[0]}", origin, clock, seed=order[0])
        db, store = clone.memory.path, clone.folder / ".nervapack"
        first = ok(db, "store", "fact", "met the client", "-e", name)
        second = ok(db, "store", "fact", "called the client", "-e", name)
        clone.commit()
        memories = (first, second)
        for index in order:
            ok(db, "forget", memories[index], "--purge", "--yes")
        entities = json.loads(ok(db, "-f", "json", "recall", name))["items"]
        assert entities == [], order
        assert traces(store, name.split()[0]) == {}, order
        clone.memory.close()


def test_a_purge_in_a_repository_without_commits_claims_no_committed_copies(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "project"
    git(tmp_path, "init", "-q", "--initial-branch=main", str(folder))
    db = folder / ".nervapack" / "memory.db"
    ok(db, "init", "--shared")
    first = ok(db, "store", "fact", "never committed")
    result = run_cli(db, "forget", first, "--purge", "--yes")
    assert result.exit_code == 0, result.output
    assert "git history" not in result.stderr
    # Once a commit holds its event file, the note is due.
    second = ok(db, "store", "fact", "committed once")
    git(folder, "add", "-A", ".nervapack")
    git(folder, "commit", "-q", "-m", "memory")
    result = run_cli(db, "forget", second, "--purge", "--yes")
    assert result.exit_code == 0, result.output
    assert "copies already committed stay in git history" in result.stderr
