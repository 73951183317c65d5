"""Purging the middle of a supersession chain on a shared store (review F-4): the purge
event re-asserts the newest version, whose own event file it removes, and the edge
that closes the chain again. Every clone, the purger's own rebuilt cache and a
teammate who already held the chain, ends with the newest version current and the
oldest superseded by it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from nervamem.cli import app

from .gitrepo import Clock, Clone, git, make_origin


def _cli(clone: Clone, *args: str) -> str:
    result = CliRunner().invoke(app, ["--db", str(clone.memory.path), *args])
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


def _timeline(clone: Clone) -> dict[str, Any]:
    """Each queue decision's content and what superseded it, through the CLI."""
    items = json.loads(_cli(clone, "-f", "json", "timeline", "queue"))["items"]
    return {i["id"]: i["superseded_by"] for i in items if i["kind"] == "decision"}


def _chain(clone: Clone) -> tuple[str, str, str]:
    a = _cli(clone, "store", "decision", "queue on postgres", "-e", "Queue")
    b = _cli(clone, "store", "decision", "queue on redis", "-e", "Queue", "--supersedes", a)
    c = _cli(clone, "store", "decision", "queue on sqs", "-e", "Queue", "--supersedes", b)
    return a, b, c


def test_purging_the_middle_of_a_chain_keeps_the_newest_current_on_every_clone(
    tmp_path: Path,
) -> None:
    origin = make_origin(tmp_path)
    clock = Clock()
    alice = Clone(tmp_path, "alice", origin, clock, seed=1)
    bob = Clone(tmp_path, "bob", origin, clock, seed=2)
    a, b, c = _chain(alice)
    alice.push()
    bob.pull()
    assert _timeline(bob) == {a: b, b: c, c: None}
    _cli(alice, "forget", b, "--purge", "--yes")
    expected = {a: c, c: None}
    assert _timeline(alice) == expected
    alice.push()
    bob.commit()
    git(bob.folder, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
    _cli(bob, "sync")  # exit 0: the purge event imports
    assert _timeline(bob) == expected
    assert bob.current(("decision",)) == [c]
    for clone in (alice, bob):
        _cli(clone, "sync", "--rebuild")
        assert _timeline(clone) == expected
    assert alice.memory.canonical_state() == bob.memory.canonical_state()
    for clone in (alice, bob):
        clone.memory.close()


def test_an_event_that_names_a_node_before_stating_it_imports(tmp_path: Path) -> None:
    """Purge events written before the fix listed the relinking edge before the node it
    names: an import applies an event's nodes first, so those files import too."""
    origin = make_origin(tmp_path)
    clock = Clock()
    alice = Clone(tmp_path, "alice", origin, clock, seed=1)
    a, b, c = _chain(alice)
    _cli(alice, "forget", b, "--purge", "--yes")
    events = alice.folder / ".nervapack" / "events"
    (path,) = [p for p in events.glob("*/*/ev_*.json") if b in p.read_text()]
    event = json.loads(path.read_text())
    event["changes"].sort(key=lambda change: change["type"] != "edge")
    assert event["changes"][0] == {**event["changes"][0], "type": "edge", "src": c, "dst": a}
    path.write_text(json.dumps(event, sort_keys=True, separators=(",", ":")) + "\n")
    alice.push()
    carol = Clone(tmp_path, "carol", origin, clock, seed=3)
    carol.pull()
    _cli(carol, "sync", "--rebuild")
    assert _timeline(carol) == {a: c, c: None}
    for clone in (alice, carol):
        clone.memory.close()
