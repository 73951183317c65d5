"""MemoryStore: the face of nervamem for the CLI, embedders and the package's users.

A thin facade. The storage engine (storage/sqlite/) owns the connection, transactions,
the clock and ID source, and the active namespace and session; each operation lives in
the module named for its concept (writing, nodes, sessions, forgetting, stats, recall,
consolidate, the code bridge) and takes the storage. This class only wires them to one
object whose methods return plain values.

Invariants (kept by those modules): nodes are never deleted except by
``forget(purge=True)``; superseding only closes ``valid_until``, which is derived from
SUPERSEDES edges; ``recorded_at`` is never rewritten; every query filters by namespace.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from . import nodes
from .ids import MIN_SHORT_DIGITS, RandomSource
from .storage.choose import open_storage
from .storage.engine import Clock, Connection, Storage

if TYPE_CHECKING:
    from .browse import ListedNode, ListFilter, NodeDetail
    from .code.values import (
        AnchorReport,
        CodeForResult,
        CodeToResult,
        IndexResult,
        StalenessReport,
    )
    from .consolidate import ConsolidationResult, Consolidator
    from .memory_fields import NewMemory
    from .models import (
        CurrentContext,
        ForgetResult,
        NamespaceInfo,
        Node,
        RecallResult,
        Stats,
        SyncReport,
        TimelineItem,
    )
    from .state import State
    from .team.hooks import BackfillResult, CommitRecord

# The result classes of models.py are imported where they are built, not here: building
# nine frozen dataclasses costs ~7 ms, and `nervamem store` returns a plain ID.


class MemoryStore:
    def __init__(
        self,
        db_path: str | os.PathLike[str] | None = None,
        *,
        namespace: str | None = None,
        clock: Clock | None = None,
        random_source: RandomSource | None = None,
        busy_timeout_ms: int | None = None,
        migrate: bool = True,
    ) -> None:
        # A postgresql:// URL opens a PostgreSQL database, anything else an SQLite file.
        # migrate=False: a store with an older schema is refused, not upgraded (the git
        # hooks, whose time limit a large store's migration can outlast).
        self.storage: Storage = open_storage(
            db_path,
            namespace=namespace,
            clock=clock,
            random_source=random_source,
            busy_timeout_ms=busy_timeout_ms,
            migrate=migrate,
        )

    # ------------------------------------------------------------------ the store itself
    @property
    def path(self) -> Path:
        return self.storage.path

    @property
    def engine(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self.storage.engine

    @property
    def location(self) -> str:
        """The store as shown to people: the file's path, or the URL without password."""
        return self.storage.location

    @property
    def read_only(self) -> bool:
        return self.storage.read_only

    @property
    def connection(self) -> Connection:
        # Whoever reads the store through it sees every recall's access counts.
        self.storage.flush_access_counts()
        return self.storage.connection

    @property
    def state(self) -> State:
        return self.storage.state

    @property
    def namespace(self) -> str:
        return self.storage.namespace

    def close(self) -> None:
        self.storage.close()

    def flush_access_counts(self) -> None:
        """Write now the access counts of recalls that wait in memory (SQLite: up to
        32 recalls or 1 s, recall/access_counts.py), for other processes to see."""
        self.storage.flush_access_counts()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def batch(self) -> Iterator[MemoryStore]:
        """Group many writes into one transaction (imports, benchmarks)."""
        with self.storage.transaction():
            yield self

    # ------------------------------------------------------------------ nodes
    def resolve_id(self, ref: str, *, namespace: str | None = None) -> str:
        """A full ID, a unique prefix of one (as git resolves short hashes) or a short
        ID (``f-3a9c``), within the namespace. Raises NotFoundError or AmbiguousIdError
        (exit 3)."""
        return nodes.resolve_id(self.storage, ref, namespace=namespace)

    def get(self, ref: str, *, namespace: str | None = None) -> Node:
        return nodes.get(self.storage, ref, namespace=namespace)

    def short_ids(self, ids: Iterable[str], *, min_hex: int = MIN_SHORT_DIGITS) -> dict[str, str]:
        return nodes.short_ids(self.storage, ids, min_hex=min_hex)

    # ------------------------------------------------------------------ browsing
    def show(self, refs: Sequence[str], *, namespace: str | None = None) -> list[NodeDetail]:
        """Everything stored about each node ``refs`` name (IDs, prefixes or short IDs),
        forgotten ones included and marked so."""
        from . import browse

        return browse.show_nodes(self.storage, refs, namespace=namespace)

    def list_nodes(
        self, wanted: ListFilter | None = None, *, namespace: str | None = None
    ) -> list[ListedNode]:
        """Nodes newest first under ``wanted``'s filters (by default: current memories,
        no sessions or entities, at most 50)."""
        from . import browse

        return browse.list_nodes(self.storage, wanted or browse.ListFilter(), namespace=namespace)

    # ------------------------------------------------------------------ writes
    def store(
        self,
        kind: str,
        content: str,
        *,
        entities: Sequence[str] = (),
        confidence: float = 1.0,
        valid_from: str | datetime | None = None,
        valid_until: str | datetime | None = None,
        supersedes: str | Sequence[str] | None = None,
        contradicts: Sequence[str] = (),
        caused_by: Sequence[str] = (),
        derived_from: Sequence[str] = (),
        rationale: str | None = None,
        rejected: Sequence[str] = (),
        session: str | None = None,
        namespace: str | None = None,
    ) -> str:
        """Store one memory node and its edges; return its ID."""
        # The keywords of store_anchored, which makes the NewMemory of them: both take
        # exactly the declared fields (tests/test_memory_fields.py).
        arguments = locals()
        del arguments["self"]
        return self.store_anchored(**arguments)[0]

    def store_anchored(
        self,
        kind: str,
        content: str,
        *,
        entities: Sequence[str] = (),
        confidence: float = 1.0,
        valid_from: str | datetime | None = None,
        valid_until: str | datetime | None = None,
        supersedes: str | Sequence[str] | None = None,
        contradicts: Sequence[str] = (),
        caused_by: Sequence[str] = (),
        derived_from: Sequence[str] = (),
        rationale: str | None = None,
        rejected: Sequence[str] = (),
        session: str | None = None,
        namespace: str | None = None,
    ) -> tuple[str, AnchorReport | None]:
        """``store``, and the code bridge's report of how the memory's entities were
        anchored to code (None when nothing was anchored or no code graph exists)."""
        from .memory_fields import NewMemory

        memory = NewMemory(
            kind=kind,
            content=content,
            entities=entities,
            confidence=confidence,
            valid_from=valid_from,
            valid_until=valid_until,
            supersedes=supersedes,
            contradicts=contradicts,
            caused_by=caused_by,
            derived_from=derived_from,
            rationale=rationale,
            rejected=rejected,
            session=session,
            namespace=namespace,
        )
        return self.store_memory(memory)

    def store_memory(self, memory: NewMemory) -> tuple[str, AnchorReport | None]:
        """The one write of one memory, under ``store`` and ``store_anchored`` and the
        CLI's and MCP's ``store``: its ID, and how its entities were anchored to code."""
        from . import writing  # not on the path of a read: recall, show, list

        note = self._refresh_code_graph(memory.entities)
        result = writing.store_memories(self.storage, (memory,), bulk=False)
        node_id = result.ids[0]
        report = result.anchoring.get(node_id)
        if report is not None and note:
            from dataclasses import replace

            report = replace(report, notes=(*report.notes, note))
        return node_id, report

    def _refresh_code_graph(self, entities: Sequence[str]) -> str | None:
        """Before anchoring, outside the write transaction: re-index the files changed
        since the last index when a name written as code matches nothing yet (an agent
        naming the symbol it just wrote). A note when it did."""
        if not entities:
            return None
        from .locate import graph_path_beside

        graph_path = graph_path_beside(self.storage.path)
        if not graph_path.is_file():
            return None
        from .code.indexing import refresh_before_anchoring

        return refresh_before_anchoring(graph_path, list(entities))

    def store_many(self, memories: Iterable[NewMemory]) -> list[str]:
        """Store many memories in one transaction and return their IDs, in order.

        The same write path as ``store()`` (same checks, entity resolution, supersession
        rules and edges), with the rows written by multi-row statements: several times
        faster for imports. A reference (``supersedes``, ``caused_by``, ...) is an ID,
        or the index of an earlier memory of the same call. All or nothing: one bad
        memory writes none of them.
        """
        from . import writing

        return writing.store_memories(self.storage, memories).ids

    # ------------------------------------------------------------------ sessions
    def start_session(self, title: str | None = None, *, namespace: str | None = None) -> str:
        from . import sessions

        return sessions.start_session(self.storage, title, namespace=namespace)

    def end_session(self, session: str | None = None, *, summary: str | None = None) -> str:
        from . import sessions

        return sessions.end_session(self.storage, session, summary=summary)

    # ------------------------------------------------------------------ namespaces
    def switch_namespace(self, name: str) -> CurrentContext:
        from . import sessions

        return sessions.switch_namespace(self.storage, name)

    def current(self) -> CurrentContext:
        from . import sessions

        return sessions.current(self.storage)

    def list_namespaces(self) -> list[NamespaceInfo]:
        from . import sessions

        return sessions.list_namespaces(self.storage)

    def has_memories(self, namespace: str) -> bool:
        from . import sessions

        return sessions.has_memories(self.storage, namespace)

    # ------------------------------------------------------------------ team memory
    @property
    def shared(self) -> bool:
        """Whether this store is shared: its truth is an events folder (team-memory.md)."""
        return self.storage.events is not None

    def share(self) -> int:
        """Share this store: its history becomes event files; returns how many."""
        from .team.share import share

        return share(self.storage)

    def sync(self, *, full: bool = False, rebuild: bool = False) -> SyncReport:
        """Import the event files the cache has not seen (``rebuild``: all, from scratch)."""
        from .team import sync

        report = sync.sync(self.storage, full=full, rebuild=rebuild)
        if rebuild or report.rebuilt:
            sync.restore_access_counts(self.storage)
        return report

    def export_events(self, *, namespace: str | None = None) -> Iterator[str]:
        """The store's history as event lines (JSON Lines), oldest first."""
        from .team import exchange

        ns = self.storage.namespace_for(namespace) if namespace is not None else None
        return exchange.export_lines(self.storage, ns)

    def import_events(self, lines: Iterable[tuple[str, str]]) -> SyncReport:
        """Import events given as (where it came from, JSON text); idempotent."""
        from .team import exchange

        return exchange.import_events(
            self.storage, lines, write_files=self.storage.events is not None
        )

    def canonical_state(self) -> str:
        """What this store shares, as one canonical text (equal on synced clones)."""
        from .team import exchange

        return exchange.canonical_state(self.storage)

    # ------------------------------------------------------------------ forget
    def forget(self, ref: str, *, purge: bool = False) -> ForgetResult:
        from . import forgetting

        result = forgetting.forget(self.storage, ref, purge=purge)
        if result.purged and self.storage.events is not None:
            # The purge removed its event files; their deletion goes into git's index
            # too, once the purge has committed (team/git.py).
            from .team.git import untrack_removed

            untrack_removed(self.storage.events)
        return result

    # ------------------------------------------------------------------ reads
    def recall(
        self,
        query: str,
        *,
        budget_tokens: int = 500,
        as_of: str | datetime | None = None,
        kinds: Sequence[str] | None = None,
        hops: int = 2,
        namespace: str | None = None,
        tokenizer: str | None = None,
        min_score: float = 0.0,
        known_at: str | datetime | None = None,
    ) -> RecallResult:
        """What best answers ``query`` within ``budget_tokens`` (docs/recall.md).
        ``min_score`` (0 to 1) leaves out memories scoring below that share of the best
        one's score, even when the budget has room for them; 0 fills the budget.
        ``known_at``: answer from what had been recorded by then (transaction time)."""
        from .recall.api import run_recall

        return run_recall(
            self.storage,
            query,
            budget_tokens=budget_tokens,
            as_of=as_of,
            kinds=kinds,
            hops=hops,
            namespace=namespace,
            tokenizer=tokenizer,
            min_score=min_score,
            known_at=known_at,
        )

    def timeline(
        self,
        query: str,
        *,
        namespace: str | None = None,
        limit: int = 100,
        known_at: str | datetime | None = None,
    ) -> list[TimelineItem]:
        from .recall.timeline import run_timeline

        return run_timeline(
            self.storage, query, namespace=namespace, limit=limit, known_at=known_at
        )

    def stats(self, *, namespace: str | None = None) -> Stats:
        from . import stats

        return stats.stats(self.storage, namespace=namespace)

    # ------------------------------------------------------------------ consolidation
    def consolidate(
        self,
        *,
        strategy: str | Consolidator = "rule-based",
        dry_run: bool = False,
        namespace: str | None = None,
        all_namespaces: bool = False,
    ) -> ConsolidationResult:
        from .consolidate import consolidate

        return consolidate(
            self.storage,
            strategy=strategy,
            dry_run=dry_run,
            namespace=namespace,
            all_namespaces=all_namespaces,
        )

    # ------------------------------------------------------------------ git commits
    def record_commit(self, repo: str | os.PathLike[str], rev: str = "HEAD") -> CommitRecord:
        """Record one commit as an action (and its ``Decision:`` trailers as decisions),
        anchored to the symbols its diff changed; idempotent, keyed by the hash."""
        from .team import hooks

        return hooks.record_commit(self.storage, Path(repo), rev)

    def backfill_commits(
        self, repo: str | os.PathLike[str], since: str | None = None, *, limit: int | None = None
    ) -> BackfillResult:
        """Record the commits after ``since`` (default: all) not recorded yet."""
        from .team import hooks

        return hooks.backfill(self.storage, Path(repo), since, limit=limit)

    # ------------------------------------------------------------------ the code bridge
    def index_code(self, root: str | os.PathLike[str] | None = None) -> IndexResult:
        from .code.indexing import index_code

        return index_code(self.storage, root)

    def code_for(
        self, target: str, *, namespace: str | None = None, cwd: Path | None = None
    ) -> CodeForResult:
        from .code.queries import code_for

        return code_for(self.storage, target, namespace=namespace, cwd=cwd)

    def code_to(self, ref: str, *, namespace: str | None = None) -> CodeToResult:
        from .code.queries import code_to

        return code_to(self.storage, ref, namespace=namespace)

    def verify_staleness(self, *, namespace: str | None = None) -> StalenessReport:
        from .code.queries import verify_staleness

        return verify_staleness(self.storage, namespace=namespace)
