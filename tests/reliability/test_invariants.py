"""Invariants under any sequence of operations, checked by a hypothesis state machine
over store / session / supersede / forget / purge / namespace switch / recall / timeline,
through the core ``MemoryStore`` API on a real SQLite file:

* no namespace ever sees another's nodes (recall, timeline, get, stats);
* recall never returns a tombstoned node, nor, without ``as_of``, a superseded one; with
  ``as_of`` only nodes valid at that moment;
* the budget is never exceeded: ceil(len(markdown) / 4) <= budget with the char counter.

The model holds what each operation should have done; the database is asked directly
(one SELECT) for the few facts the model does not track (implicitly created entities).
"""

from __future__ import annotations

import math
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from nervamem import MemoryStore
from nervamem.errors import BadInputError, NotFoundError
from nervamem.models import RecallResult
from nervamem.recall.tokens import get_counter
from nervamem.timeparse import format_time

START = datetime(2026, 7, 3, 12, 0, tzinfo=timezone.utc)
NAMESPACES = ("default", "alpha", "beta")
WORDS = ("auth", "jwt", "cookie", "deploy", "cache", "alpha", "NEAR", '"', "*", "ünï")
KINDS = ("fact", "decision", "action", "outcome", "procedure", "preference")
ENTITIES = ("AuthService", "auth_service", "Cache", "deploy-bot")

words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)


class Clock:
    """One minute per reading: every write has its own time, supersedes move forward."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now


@dataclass
class Model:
    namespace: str
    kind: str
    content: str = ""
    tombstoned: bool = False
    superseded_by: str | None = None


class MemoryMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="nervamem-invariants-"))
        self.counter = 0
        self.clock = Clock()
        self.store = MemoryStore(
            self.folder / "memory.db", clock=self.clock, random_source=self._random
        )
        self.current = "default"
        self.nodes: dict[str, Model] = {}

    def _random(self) -> int:
        self.counter += 1
        return self.counter

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    # ----------------------------------------------------------------- helpers
    def _db_rows(self, ids: list[str]) -> dict[str, tuple[str, int, str, str | None]]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.store.connection.execute(
            f"SELECT id, namespace, tombstoned, valid_from, valid_until FROM mem_nodes "
            f"WHERE id IN ({marks})",
            ids,
        ).fetchall()
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    def _choices(self, *, live_only: bool, same_namespace: bool = True) -> list[str]:
        """Nodes of (or outside) the active namespace; live_only: those that can be
        superseded (current, not forgotten, not sessions)."""
        return sorted(
            node_id
            for node_id, node in self.nodes.items()
            if (node.namespace == self.current) == same_namespace
            and not (
                live_only and (node.tombstoned or node.superseded_by or node.kind == "session")
            )
        )

    # ----------------------------------------------------------------- operations
    @rule(
        kind=st.sampled_from(KINDS),
        content=words,
        entities=st.lists(st.sampled_from(ENTITIES), max_size=2),
        explicit=st.none() | st.sampled_from(NAMESPACES),
    )
    def store_node(
        self, kind: str, content: str, entities: list[str], explicit: str | None
    ) -> None:
        node_id = self.store.store(kind, content, entities=entities, namespace=explicit)
        ns = explicit or self.current
        self.nodes[node_id] = Model(namespace=ns, kind=kind, content=content)
        for other in NAMESPACES:  # its own words, asked from every other namespace
            if other != ns:
                assert node_id not in self._probe(content, namespace=other)

    @rule(title=words, explicit=st.none() | st.sampled_from(NAMESPACES))
    def start_session(self, title: str, explicit: str | None) -> None:
        """Later stores in the active namespace join it (OCCURRED_IN), which recall
        follows to neighbouring rows: rows that may belong to another namespace."""
        session_id = self.store.start_session(title, namespace=explicit)
        self.nodes[session_id] = Model(
            namespace=explicit or self.current, kind="session", content=title
        )

    @precondition(lambda self: self._choices(live_only=True))
    @rule(data=st.data(), content=words)
    def supersede(self, data: st.DataObject, content: str) -> None:
        old = data.draw(st.sampled_from(self._choices(live_only=True)), label="old")
        new = self.store.store(self.nodes[old].kind, content, supersedes=old)
        self.nodes[new] = Model(namespace=self.current, kind=self.nodes[old].kind, content=content)
        self.nodes[old].superseded_by = new
        assert old not in self._probe(self.nodes[old].content), "superseded, yet recalled"

    @precondition(lambda self: self._choices(live_only=False))
    @rule(data=st.data())
    def forget(self, data: st.DataObject) -> None:
        node_id = data.draw(st.sampled_from(self._choices(live_only=False)), label="forget")
        assert self.store.forget(node_id).id == node_id
        self.nodes[node_id].tombstoned = True
        assert node_id not in self._probe(self.nodes[node_id].content), "forgotten, yet recalled"
        as_of = format_time(self.clock.now)
        assert node_id not in self._probe(self.nodes[node_id].content, as_of=as_of)

    @precondition(lambda self: self._choices(live_only=False))
    @rule(data=st.data())
    def purge(self, data: st.DataObject) -> None:
        node_id = data.draw(st.sampled_from(self._choices(live_only=False)), label="purge")
        self.store.forget(node_id, purge=True)
        purged = self.nodes.pop(node_id)
        for node in self.nodes.values():
            # The chain survives: what superseded the purged node now supersedes what it
            # superseded; at the head of a chain, the version before becomes current.
            if node.superseded_by == node_id:
                node.superseded_by = purged.superseded_by

    @rule(name=st.sampled_from(NAMESPACES))
    def switch_namespace(self, name: str) -> None:
        self.store.switch_namespace(name)
        self.current = name

    @precondition(lambda self: self._choices(live_only=False, same_namespace=False))
    @rule(data=st.data())
    def ids_do_not_cross_namespaces(self, data: st.DataObject) -> None:
        foreign = data.draw(
            st.sampled_from(self._choices(live_only=False, same_namespace=False)), label="id"
        )
        for call in (self.store.get, self.store.forget):
            try:
                call(foreign)
            except NotFoundError:
                continue
            raise AssertionError(
                f"{foreign} of {self.nodes[foreign].namespace!r} reached from {self.current!r}"
            )

    @rule(
        query=words,
        budget=st.integers(min_value=1, max_value=120) | st.sampled_from([250, 500, 5000]),
        explicit=st.none() | st.sampled_from(NAMESPACES),
        minutes=st.none() | st.integers(min_value=-5, max_value=300),
        kinds=st.none() | st.lists(st.sampled_from(("fact", "decision", "entity")), min_size=1),
        hops=st.integers(min_value=0, max_value=3),
        tokenizer=st.sampled_from(["char", "char", "tiktoken"]),
    )
    def recall(
        self,
        query: str,
        budget: int,
        explicit: str | None,
        minutes: int | None,
        kinds: list[str] | None,
        hops: int,
        tokenizer: str,
    ) -> None:
        as_of = None if minutes is None else format_time(START + timedelta(minutes=minutes))
        try:
            result = self.store.recall(
                query,
                budget_tokens=budget,
                namespace=explicit,
                as_of=as_of,
                kinds=kinds,
                hops=hops,
                tokenizer=tokenizer,
            )
        except BadInputError as exc:
            assert "too small" in str(exc), exc  # refused, never broken
            return
        self._check_recall(result, explicit or self.current, as_of, kinds, budget)
        if tokenizer == "tiktoken":  # the budget holds under the configured counter too
            assert get_counter("tiktoken").count(result.markdown) <= budget

    def _probe(
        self, query: str, *, namespace: str | None = None, as_of: str | None = None
    ) -> set[str]:
        """IDs a generous recall returns, after checking it like any other; a tight
        recall of the same query is checked too (the budget is the invariant at stake)."""
        tight = self.store.recall(query, budget_tokens=40, namespace=namespace, as_of=as_of)
        self._check_recall(tight, namespace or self.current, as_of, None, 40)
        result = self.store.recall(query, budget_tokens=5000, namespace=namespace, as_of=as_of)
        self._check_recall(result, namespace or self.current, as_of, None, 5000)
        return {item.id for item in result.items}

    def _check_recall(
        self,
        result: RecallResult,
        ns: str,
        as_of: str | None,
        kinds: list[str] | None,
        budget: int,
    ) -> None:
        assert math.ceil(len(result.markdown) / 4) <= budget, (budget, result.markdown)
        assert result.used_tokens <= budget
        rows = self._db_rows([item.id for item in result.items])
        for item in result.items:
            namespace, tombstoned, valid_from, valid_until = rows[item.id]
            model = self.nodes.get(item.id)
            assert namespace == ns and (model is None or model.namespace == ns), (
                f"{item.id} of {namespace!r} leaked into a recall in {ns!r}"
            )
            assert not tombstoned and not (model and model.tombstoned), f"{item.id} forgotten"
            if as_of is None:
                assert valid_until is None, f"{item.id} closed"
                assert not (model and model.superseded_by), f"{item.id} superseded"
            else:
                assert valid_from <= as_of and (valid_until is None or as_of < valid_until)
            if kinds:
                assert item.kind in kinds

    @rule(query=words, explicit=st.none() | st.sampled_from(NAMESPACES))
    def timeline(self, query: str, explicit: str | None) -> None:
        items = self.store.timeline(query, namespace=explicit)
        ns = explicit or self.current
        rows = self._db_rows([item.id for item in items])
        for item in items:
            assert rows[item.id][0] == ns, f"{item.id} leaked into a timeline in {ns!r}"
            assert not rows[item.id][1], f"{item.id} is forgotten"

    # ----------------------------------------------------------------- invariants
    @invariant()
    def stats_count_only_this_namespace(self) -> None:
        for ns in NAMESPACES:
            expected: dict[str, int] = {}
            for node in self.nodes.values():
                if node.namespace == ns and not node.tombstoned and node.kind in KINDS:
                    expected[node.kind] = expected.get(node.kind, 0) + 1
            counted = self.store.stats(namespace=ns).nodes
            assert {k: v for k, v in counted.items() if k in KINDS} == expected, ns

    @invariant()
    def model_matches_the_database(self) -> None:
        rows = self._db_rows(list(self.nodes))
        assert set(rows) == set(self.nodes)
        for node_id, node in self.nodes.items():
            namespace, tombstoned, _, valid_until = rows[node_id]
            assert namespace == node.namespace and bool(tombstoned) == node.tombstoned
            assert (valid_until is not None) == (node.superseded_by is not None), node_id


MemoryMachine.TestCase.settings = settings(
    max_examples=30,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestMemoryInvariants = MemoryMachine.TestCase


def test_machine_store_is_a_real_file() -> None:
    """The machine runs on a real SQLite file in WAL mode, as the CLI does."""
    machine = MemoryMachine()
    try:
        machine.store_node("fact", "auth jwt", [], None)
        mode = (
            sqlite3.connect(machine.folder / "memory.db")
            .execute("PRAGMA journal_mode")
            .fetchone()[0]
        )
        assert mode == "wal"
    finally:
        machine.teardown()


def test_session_context_keeps_to_the_namespace_when_a_session_crosses_it(
    tmp_path: Path,
) -> None:
    # No command makes a session hold another namespace's memory (sessions.py:
    # OCCURRED_IN never crosses namespaces), but a hand-edited or foreign store can:
    # session context, which adds a seed's session neighbours whatever their words, must
    # still filter them by namespace.
    path = tmp_path / "memory.db"
    with MemoryStore(path) as store:
        store.start_session("release week", namespace="a")
        asked = store.store("fact", "the quokka deploy runs on tuesdays", namespace="a")
        moved = store.store("fact", "the wallaby vault code is 4711", namespace="a")
        assert moved in [item.id for item in store.recall("quokka deploy", namespace="a").items]
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE mem_nodes SET namespace = 'b' WHERE id = ?", (moved,))
    with MemoryStore(path) as store:
        shown = [item.id for item in store.recall("quokka deploy", namespace="a").items]
    assert asked in shown
    assert moved not in shown
