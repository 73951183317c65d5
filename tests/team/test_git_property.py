"""Team memory through a real git repository: random writes in N clones, merged through
``git`` in random orders and topologies, reach one state (docs/team-memory.md).

Each example makes a bare repository and 2-3 clones, each with ``nervamem init --shared``
(through the CLI), then runs random operations: store facts and decisions naming shared
entities (the same names on several clones make rival entities and aliases), supersede a
current node, make rivals (two clones that share a node each supersede it: a conflict),
resolve a conflict, forget, purge, sessions, commit, pull, push, merge another clone's
branch directly, sync. At the end every clone merges everything, and:

(a) every clone has byte-identical ``canonical_state()``;
(b) no ``git merge`` ever stopped on a conflict (nothing but events is committed);
(c) every ID a write returned is in every clone's state, unless a purge removed it;
(d) ``sync --rebuild`` on each clone gives that same state again.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import Phase, event, given, settings
from hypothesis import strategies as st

from nervamem.errors import NervamemError

from .gitrepo import Clock, Clone, git, make_origin

ENTITIES = ("Postgres", "postgres", "Auth Service", "Billing", "Redis")

OPERATIONS = (
    "store",
    "store",
    "supersede",
    "supersede",
    "resolve",
    "forget",
    "purge",
    "session",
    "commit",
    "pull",
    "push",
    "push",
    "merge_peer",
    "rivals",
    "rivals",
    "rivals",
    "sync",
)

operation = st.tuples(
    st.sampled_from(OPERATIONS), st.integers(0, 2), st.integers(0, 2**16), st.integers(0, 2)
)


def run(clone: Clone, clones: list[Clone], op: str, pick: int, peer: int, acked: set[str]) -> None:
    memory = clone.memory
    if op == "store":
        names = [name for bit, name in enumerate(ENTITIES) if pick >> bit & 1][:3]
        kind = "decision" if pick & 64 else "fact"
        acked.add(memory.store(kind, f"{kind} {pick} on {clone.name}", entities=names))
    elif op == "supersede":
        current = clone.current()
        if current:
            # The oldest ones first: two clones that share history often pick the same.
            old = current[pick % min(len(current), 2)]
            acked.add(memory.store("decision", f"instead of {old[-6:]}", supersedes=old))
    elif op == "resolve":
        groups = clone.conflicts()
        if groups:
            rivals = groups[pick % len(groups)]
            acked.add(memory.store("decision", "settled", supersedes=rivals))
    elif op in ("forget", "purge"):
        current = clone.current(("fact", "decision", "entity"))
        if current:
            memory.forget(current[pick % len(current)], purge=op == "purge")
    elif op == "session":
        if clone.session is None:
            clone.session = memory.start_session(f"work {pick}")
            acked.add(clone.session)
        else:
            memory.end_session(clone.session, summary=f"done {pick}")
            clone.session = None
    elif op == "commit":
        clone.commit()
    elif op == "pull":
        clone.pull()
    elif op == "push":
        clone.push()
    elif op == "merge_peer":
        other = clones[peer % len(clones)]
        if other is not clone:
            other.commit()
            clone.merge(str(other.folder), "HEAD")
    elif op == "rivals":
        # Two clones that share a node each supersede it before they merge again.
        other = clones[peer % len(clones)]
        if other is not clone:
            if not other.current():
                acked.add(other.memory.store("decision", f"to be disputed {pick}"))
            other.commit()
            clone.merge(str(other.folder), "HEAD")
            both = sorted(set(clone.current()) & set(other.current()))
            if both:  # none when this clone had superseded all of the other's
                old = both[pick % len(both)]
                acked.add(memory.store("decision", f"mine over {old[-6:]}", supersedes=old))
                acked.add(other.memory.store("decision", f"not {old[-6:]}", supersedes=old))
    elif op == "sync":
        memory.sync()


# Each example runs some fifty git processes: a failure is reported as drawn, not shrunk
# (shrinking one took minutes on a 2-core machine).
@settings(max_examples=12, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(
    clone_count=st.integers(2, 3),
    operations=st.lists(operation, min_size=6, max_size=30),
    seed=st.integers(0, 2**32),
)
def test_clones_merged_through_git_reach_one_state(
    clone_count: int, operations: list[tuple[str, int, int, int]], seed: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        origin = make_origin(root)
        clock = Clock()
        clones = [Clone(root, f"c{i}", origin, clock, seed + i) for i in range(clone_count)]
        acked: set[str] = set()
        purged: set[str] = set()
        try:
            for op, index, pick, peer in operations:
                clone = clones[index % clone_count]
                try:
                    run(clone, clones, op, pick, peer, acked)
                except NervamemError as exc:
                    # Refused by the rules (e.g. the node was superseded by a merge):
                    # nothing was acknowledged; the store must say so in one message.
                    assert str(exc)
                if clone.conflicts():
                    event("a conflict stood in a clone")  # --hypothesis-show-statistics
            purged.update(*(clone.purged() for clone in clones))
            # Everyone merges everything: push in turn, then pull what came after.
            for clone in clones:
                clone.push()
            for clone in clones:
                clone.pull()
            trees = {git(c.folder, "rev-parse", "HEAD^{tree}").stdout for c in clones}
            assert len(trees) == 1
            states = [clone.memory.canonical_state() for clone in clones]
            event(f"conflicts after the merge: {len(clones[0].conflicts())}")
            # (a) one state, byte for byte
            assert all(state == states[0] for state in states), _first_difference(states)
            # (c) nothing acknowledged is lost, except what a purge removed
            purged.update(*(clone.purged() for clone in clones))
            lost = {node_id for node_id in acked - purged if f'"{node_id}"' not in states[0]}
            assert not lost, f"acknowledged writes lost: {sorted(lost)}"
            # (d) the cache made again from the events alone is the same
            for clone in clones:
                clone.memory.sync(rebuild=True)
                assert clone.memory.canonical_state() == states[0], _first_difference(
                    [states[0], clone.memory.canonical_state()]
                )
        finally:
            for clone in clones:
                clone.memory.close()


def _first_difference(states: list[str]) -> str:
    lines = [state.splitlines() for state in states]
    for index, row in enumerate(zip(*lines, strict=False)):
        if len(set(row)) > 1:
            return f"line {index}:\n" + "\n".join(row)
    return f"lengths differ: {[len(x) for x in lines]}"
