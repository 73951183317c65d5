"""Consolidation of finished sessions: the ``Consolidator`` protocol and the rule-based
default.

``session end`` queues a job in ``mem_review_queue``; :func:`consolidate` works through
the pending jobs. For each job it takes a snapshot of the session's live members (nodes
with an ``OCCURRED_IN`` edge to that session, in the session's namespace, not
tombstoned), asks a consolidator which of them duplicate another, tombstones those and
marks the job done.

Invariants a reader must not break:

* Nothing is compared across sessions or namespaces: a consolidator only ever sees one
  session's members, and a proposal naming any other node is refused.
* Consolidation only tombstones (soft delete) and records ``duplicate_of`` in the
  dropped node's data; it never purges, never edits content, never touches
  ``recorded_at``. The newer node of a duplicate pair survives.
* Two nodes linked by ``SUPERSEDES`` are history, not duplication, and are never paired.
* ``dry_run`` reads only: no tombstones, no job consumed. A job is consumed exactly once,
  so running consolidate twice does nothing the second time.
* Plans are made outside the write transaction (an LLM-based strategy may be slow and
  must not hold the store's write lock); they are applied in one short transaction that
  re-checks that each job is still pending and each node still live.

Other strategies plug in through the ``nervamem.consolidators`` entry-point group: an
entry point names a class (instantiated without arguments), a factory, or an instance
that satisfies :class:`Consolidator`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from . import forgetting, nodes
from .errors import BadInputError
from .models import Node
from .storage import rows

if TYPE_CHECKING:
    from .storage.engine import Storage

ENTRY_POINT_GROUP = "nervamem.consolidators"
DEFAULT_STRATEGY = "rule-based"
JACCARD_THRESHOLD = 0.9
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class SessionSnapshot:
    """What a consolidator sees of one session: its live members, oldest first, and the
    SUPERSEDES links among them as ``(newer, older)`` pairs."""

    session_id: str
    namespace: str
    nodes: tuple[Node, ...]
    supersedes: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True)
class Duplicate:
    """A proposal: tombstone ``tombstone`` because it repeats ``keep``."""

    tombstone: str
    keep: str
    score: float
    reason: str
    session_id: str = ""


@runtime_checkable
class Consolidator(Protocol):
    """A consolidation strategy. It proposes; the core validates and applies."""

    name: str

    def find_duplicates(self, session: SessionSnapshot) -> Sequence[Duplicate]: ...


@dataclass(frozen=True)
class TombstonedNode:
    """A duplicate that was (or, in a dry run, would be) tombstoned."""

    id: str
    short_id: str
    duplicate_of: str
    duplicate_of_short: str
    session_id: str
    score: float
    reason: str


@dataclass(frozen=True)
class ConsolidationResult:
    strategy: str
    dry_run: bool
    jobs_processed: int
    sessions: tuple[str, ...]
    tombstoned: tuple[str, ...]
    duplicates: tuple[TombstonedNode, ...]


def word_set(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.casefold()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


class RuleBasedConsolidator:
    """Same kind, word-set Jaccard above the threshold: the older node is the duplicate.

    Members are visited newest first; each is compared with the newer members kept so
    far, so in a chain of near-copies the newest survives and a node is dropped only in
    favour of a node that stays live.
    """

    name = DEFAULT_STRATEGY

    def __init__(self, threshold: float = JACCARD_THRESHOLD) -> None:
        self.threshold = threshold

    def find_duplicates(self, session: SessionSnapshot) -> list[Duplicate]:
        by_kind: dict[str, list[Node]] = {}
        for node in session.nodes:
            by_kind.setdefault(node.kind, []).append(node)
        found: list[Duplicate] = []
        for same_kind in by_kind.values():
            kept: list[tuple[Node, frozenset[str]]] = []
            for node in sorted(same_kind, key=lambda n: (n.recorded_at, n.id), reverse=True):
                words = word_set(node.content)
                best: tuple[float, Node] | None = None
                for other, other_words in kept:
                    if _linked(node.id, other.id, session.supersedes):
                        continue
                    if not words and not other_words:
                        # No words at all: only an exact repeat is a duplicate.
                        if " ".join(node.content.split()) != " ".join(other.content.split()):
                            continue
                    elif not _size_allows(len(words), len(other_words), self.threshold):
                        continue
                    score = jaccard(words, other_words)
                    if score > self.threshold and (best is None or score > best[0]):
                        best = (score, other)
                if best is None:
                    kept.append((node, words))
                else:
                    found.append(
                        Duplicate(
                            tombstone=node.id,
                            keep=best[1].id,
                            score=round(best[0], 4),
                            reason=f"jaccard {best[0]:.2f} > {self.threshold:g}",
                            session_id=session.session_id,
                        )
                    )
        return found


def _linked(a: str, b: str, supersedes: frozenset[tuple[str, str]]) -> bool:
    return (a, b) in supersedes or (b, a) in supersedes


def _size_allows(a: int, b: int, threshold: float) -> bool:
    """Jaccard is at most min/max of the set sizes: skip pairs that cannot pass."""
    small, large = sorted((a, b))
    return large > 0 and small / large > threshold


def available_strategies() -> list[str]:
    from importlib.metadata import entry_points

    names = {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    names.add(DEFAULT_STRATEGY)
    return sorted(names)


def load_consolidator(name: str = DEFAULT_STRATEGY) -> Consolidator:
    """The consolidator registered under ``name`` in the entry-point group."""
    from importlib.metadata import entry_points

    matches = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not matches:
        if name == DEFAULT_STRATEGY:  # running from a checkout without package metadata
            return RuleBasedConsolidator()
        raise BadInputError(
            f"unknown consolidation strategy {name[:40]!r}: "
            f"installed are {', '.join(available_strategies())}"
        )
    try:
        loaded: object = matches[0].load()
    except Exception as exc:
        raise BadInputError(
            f"consolidation strategy {name!r} cannot be loaded "
            f"({matches[0].value}): {type(exc).__name__}: {exc}"
        ) from None
    instance: object
    if isinstance(loaded, type) or (callable(loaded) and not isinstance(loaded, Consolidator)):
        instance = loaded()
    else:
        instance = loaded
    if not isinstance(instance, Consolidator):
        raise BadInputError(
            f"consolidation strategy {name!r} ({matches[0].value}) does not provide "
            "'name' and 'find_duplicates(session)'"
        )
    return instance


def consolidate(
    storage: Storage,
    *,
    strategy: str | Consolidator = DEFAULT_STRATEGY,
    dry_run: bool = False,
    namespace: str | None = None,
    all_namespaces: bool = False,
) -> ConsolidationResult:
    """Process the pending consolidation jobs of the namespace in use (or of all)."""
    consolidator = load_consolidator(strategy) if isinstance(strategy, str) else strategy
    ns = None if all_namespaces else storage.namespace_for(namespace)
    jobs = _pending_jobs(storage, ns)
    plans: list[tuple[int, SessionSnapshot, list[Duplicate]]] = []
    for job_id, session_id, job_ns in jobs:
        snapshot = _snapshot(storage, session_id, job_ns)
        proposals = list(consolidator.find_duplicates(snapshot)) if snapshot.nodes else []
        plans.append((job_id, snapshot, _validated(consolidator.name, snapshot, proposals)))

    applied: list[Duplicate] = []
    processed = 0
    if dry_run:
        processed = len(plans)
        applied = [dup for _, _, dups in plans for dup in dups]
    elif plans:
        with storage.transaction():
            now = storage.now()
            for job_id, _snapshot_of_job, dups in plans:
                still_pending = storage.connection.execute(
                    "SELECT 1 FROM mem_review_queue WHERE job_id = ? AND status = 'pending'",
                    (job_id,),
                ).fetchone()
                if not still_pending:
                    continue  # another process consumed it meanwhile
                for dup in dups:
                    if not _both_live(storage, dup):
                        continue
                    forgetting.tombstone(storage, dup.tombstone)
                    rows.update_data(
                        storage,
                        dup.tombstone,
                        {
                            "duplicate_of": dup.keep,
                            "consolidated_at": now,
                            "consolidated_by": consolidator.name,
                        },
                    )
                    applied.append(dup)
                storage.connection.execute(
                    "UPDATE mem_review_queue SET status = 'done', processed_at = ? "
                    "WHERE job_id = ?",
                    (now, job_id),
                )
                processed += 1
    sessions = tuple(snapshot.session_id for _, snapshot, _ in plans)
    short = nodes.short_ids(storage, [i for dup in applied for i in (dup.tombstone, dup.keep)])
    return ConsolidationResult(
        strategy=consolidator.name,
        dry_run=dry_run,
        jobs_processed=processed,
        sessions=sessions,
        tombstoned=tuple(dup.tombstone for dup in applied),
        duplicates=tuple(
            TombstonedNode(
                id=dup.tombstone,
                short_id=short[dup.tombstone],
                duplicate_of=dup.keep,
                duplicate_of_short=short[dup.keep],
                session_id=dup.session_id,
                score=dup.score,
                reason=dup.reason,
            )
            for dup in applied
        ),
    )


def _pending_jobs(storage: Storage, namespace: str | None) -> list[tuple[int, str, str]]:
    sql = (
        "SELECT job_id, session_id, namespace FROM mem_review_queue "
        "WHERE status = 'pending' AND kind = 'consolidate'"
    )
    params: tuple[str, ...] = ()
    if namespace is not None:
        sql += " AND namespace = ?"
        params = (namespace,)
    rows = storage.connection.execute(sql + " ORDER BY job_id", params).fetchall()
    return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]


def _snapshot(storage: Storage, session_id: str, namespace: str) -> SessionSnapshot:
    from .nodes import NODE_SELECT, row_to_node

    storage.flush_access_counts()  # the nodes show them (recall/access_counts.py)
    conn = storage.connection
    rows = conn.execute(
        NODE_SELECT + " WHERE id IN (SELECT src FROM mem_edges WHERE dst = ? AND "
        "kind = 'OCCURRED_IN') AND namespace = ? AND tombstoned = 0 ORDER BY recorded_at, id",
        (session_id, namespace),
    ).fetchall()
    nodes = tuple(row_to_node(row) for row in rows)
    ids = [node.id for node in nodes]
    links: set[tuple[str, str]] = set()
    if len(ids) > 1:
        # Only pairs inside the session can matter; a temp table would do for huge ones.
        for start in range(0, len(ids), 400):
            chunk = ids[start : start + 400]
            marks = ",".join("?" * len(chunk))
            links.update(
                (str(src), str(dst))
                for src, dst in conn.execute(
                    f"SELECT src, dst FROM mem_edges WHERE kind = 'SUPERSEDES' "
                    f"AND src IN ({marks})",
                    chunk,
                )
            )
        members = set(ids)
        links = {(a, b) for a, b in links if a in members and b in members}
    return SessionSnapshot(
        session_id=session_id, namespace=namespace, nodes=nodes, supersedes=frozenset(links)
    )


def _validated(
    strategy: str, snapshot: SessionSnapshot, proposals: list[Duplicate]
) -> list[Duplicate]:
    members = {node.id for node in snapshot.nodes}
    dropped: set[str] = set()
    result: list[Duplicate] = []
    for dup in proposals:
        for node_id in (dup.tombstone, dup.keep):
            if node_id not in members:
                raise BadInputError(
                    f"consolidation strategy {strategy!r} proposed {node_id[:40]!r}, which is "
                    f"not a live member of session {snapshot.session_id}"
                )
        if dup.tombstone == dup.keep or dup.tombstone in dropped or dup.keep in dropped:
            continue  # keep only proposals whose survivor survives
        dropped.add(dup.tombstone)
        if dup.session_id != snapshot.session_id:
            dup = Duplicate(dup.tombstone, dup.keep, dup.score, dup.reason, snapshot.session_id)
        result.append(dup)
    return result


def _both_live(storage: Storage, dup: Duplicate) -> bool:
    count = storage.connection.execute(
        "SELECT count(*) FROM mem_nodes WHERE id IN (?, ?) AND tombstoned = 0",
        (dup.tombstone, dup.keep),
    ).fetchone()[0]
    return int(count) == 2
