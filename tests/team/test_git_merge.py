"""Two branches of a real git repository, merged: rival successors of one decision are a
visible conflict until a later memory supersedes both, and the aliases that two
branches created for one name converge to one entity on every clone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from nervamem.cli import app

from .gitrepo import Clock, Clone, make_origin


def _json(clone: Clone, *args: str) -> Any:
    """A read command's JSON, through the CLI, on the clone's store."""
    result = CliRunner().invoke(app, ["--db", str(clone.memory.path), *args, "-f", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _conflicts_shown(clone: Clone) -> dict[str, dict[str, list[str]]]:
    """What recall and timeline say each item of the API decisions conflicts with."""
    recall = _json(clone, "recall", "api", "--budget", "2000")
    timeline = _json(clone, "timeline", "api")
    return {
        "recall": {i["id"]: i["conflicts_with"] for i in recall["items"] if i["conflicts_with"]},
        "timeline": {
            i["id"]: i["conflicts_with"] for i in timeline["items"] if i["conflicts_with"]
        },
    }


def test_superseding_one_decision_on_two_branches_is_a_conflict_until_resolved(
    tmp_path: Path,
) -> None:
    origin = make_origin(tmp_path)
    clock = Clock()
    alice = Clone(tmp_path, "alice", origin, clock, seed=1)
    rest = alice.memory.store("decision", "the api speaks REST", entities=["API"])
    alice.push()
    bob = Clone(tmp_path, "bob", origin, clock, seed=2)  # init in the clone syncs
    assert rest in bob.memory.canonical_state()

    graphql = alice.memory.store("decision", "the api speaks GraphQL", supersedes=rest)
    grpc = bob.memory.store("decision", "the api speaks gRPC", supersedes=rest)
    alice.push()
    bob.push()  # merges alice's branch: both successors now stand
    alice.pull()
    for clone in (alice, bob):
        assert _json(clone, "stats")["conflicts"] == 1
        assert _conflicts_shown(clone) == {
            "recall": {graphql: [grpc], grpc: [graphql]},
            "timeline": {graphql: [grpc], grpc: [graphql]},
        }
    assert alice.memory.canonical_state() == bob.memory.canonical_state()

    settled = bob.memory.store("decision", "the api speaks gRPC", supersedes=[graphql, grpc])
    bob.push()
    alice.pull()
    for clone in (alice, bob):
        assert _json(clone, "stats")["conflicts"] == 0
        assert _conflicts_shown(clone) == {"recall": {}, "timeline": {}}
        timeline = {i["id"]: i for i in _json(clone, "timeline", "api")["items"]}
        assert timeline[graphql]["superseded_by"] == settled
        assert timeline[grpc]["superseded_by"] == settled
    assert alice.memory.canonical_state() == bob.memory.canonical_state()
    alice.memory.close()
    bob.memory.close()


def _aliases(clone: Clone) -> dict[str, str]:
    rows = clone.memory.connection.execute(
        "SELECT lower(alias), entity_id FROM mem_aliases ORDER BY 1"
    ).fetchall()
    return dict(rows)


def test_aliases_two_branches_created_for_one_name_converge(tmp_path: Path) -> None:
    origin = make_origin(tmp_path)
    clock = Clock()
    alice = Clone(tmp_path, "alice", origin, clock, seed=1)
    bob = Clone(tmp_path, "bob", origin, clock, seed=2)
    carol = Clone(tmp_path, "carol", origin, clock, seed=3)
    # Each names Postgres before seeing the others: three entities, one name.
    alice.memory.store("fact", "the orders table lives in Postgres", entities=["Postgres"])
    bob.memory.store("fact", "postgres runs version 16", entities=["postgres"])
    carol.memory.store("fact", "Postgres backups run nightly", entities=["PostgreSQL", "Postgres"])
    alice.push()
    carol.merge(str(alice.folder), "HEAD")  # a peer's branch, directly
    bob.push()
    carol.push()
    alice.pull()
    bob.pull()

    mappings = [_aliases(clone) for clone in (alice, bob, carol)]
    assert mappings[0] == mappings[1] == mappings[2]
    # One entity owns the name on every clone, and it is one of the three made.
    owner = mappings[0]["postgres"]
    entities = alice.memory.connection.execute(
        "SELECT id FROM mem_nodes WHERE kind = 'entity' AND lower(content) = 'postgres'"
    ).fetchall()
    assert owner in {row[0] for row in entities} and len(entities) == 3
    # A memory stored after the merge, on any clone, names that one entity.
    later = bob.memory.store("fact", "Postgres moved to a new host", entities=["POSTGRES"])
    named = bob.memory.connection.execute(
        "SELECT dst FROM mem_edges WHERE src = ? AND kind = 'ABOUT'", (later,)
    ).fetchall()
    assert named == [(owner,)]
    states = {clone.memory.canonical_state() for clone in (alice, bob, carol)}
    assert len(states) == 2  # bob's new fact is not pushed yet
    bob.push()
    alice.pull()
    carol.pull()
    assert len({clone.memory.canonical_state() for clone in (alice, bob, carol)}) == 1
    for clone in (alice, bob, carol):
        clone.memory.close()


def test_purging_the_entity_that_owns_a_name_hands_it_to_the_other_claimant(
    tmp_path: Path,
) -> None:
    origin = make_origin(tmp_path)
    clock = Clock()
    alice = Clone(tmp_path, "alice", origin, clock, seed=1)
    bob = Clone(tmp_path, "bob", origin, clock, seed=2)
    bob.memory.store("fact", "the auth service signs tokens", entities=["Auth Service"])
    alice.memory.store("decision", "the auth service moves", entities=["Auth Service"])
    bob.commit()
    alice.merge(str(bob.folder), "HEAD")  # alice's entity, the newer, owns the name
    owner = _aliases(alice)["auth service"]
    assert owner != _aliases(bob)["auth service"]
    alice.memory.forget(owner, purge=True)
    bobs = _aliases(bob)["auth service"]
    assert _aliases(alice)["auth service"] == bobs  # bob's entity claims it next
    alice.push()
    bob.push()
    alice.pull()
    assert _aliases(alice) == _aliases(bob)
    state = alice.memory.canonical_state()
    assert bob.memory.canonical_state() == state
    for clone in (alice, bob):
        clone.memory.sync(rebuild=True)
        assert clone.memory.canonical_state() == state
        clone.memory.close()
