"""The graph reads of recall as a capability: the neighbours expansion follows, the
sessions of candidates, the rows around them in their sessions, which nodes supersede
any. Each engine answers with its own SQL: SQLite reads edges by the nodes' integer
``seq`` (mem_links, migrations.key_edges_by_seq) where a statement is a function call
(sqlite/graph_reads.py); PostgreSQL reads the mem_edges table by ID and folds steps into
one statement where each is a round trip (postgres/graph_reads.py). Both return the
same answers (tests/recall/test_expansion_postgres.py, tests/storage/test_edges_by_seq.py).

What stays with the caller (recall/): which edge kinds to follow, the fanout, the
columns it reads, the mask (recall/mask.py) and every score. ``columns`` is SQL over
``mem_nodes n``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from .dbapi import Connection
from .engine import POSTGRESQL, dialect_of

# A node as the graph reads take it: its ID and its seq (read in one row).
Node = tuple[str, int]
# expand's answer for a frontier: the neighbours of each node newest first, the
# (node, neighbour) pairs that are a causal edge, and the neighbours' rows the mask admits.
Frontier = tuple[dict[str, list[str]], set[tuple[str, str]], dict[str, Any]]


class GraphReads(Protocol):
    # Items a batch of lookups (sessions, reasons, rivals, short IDs) should hold where
    # each statement is a round trip that costs more than its rows; None: the caller
    # sizes the batches by what it will use (recall/api.py).
    lookups_per_batch: int | None

    def frontier(
        self,
        ids: Sequence[str],
        edges: tuple[str, ...],
        causal_edges: tuple[str, ...],
        fanout: int,
        columns: str,
        namespace: str,
        mask: tuple[str, list[str]],
    ) -> Frontier | None:
        """The ``fanout`` newest neighbours of each of ``ids`` over ``edges`` (both
        directions), which are causal, and ``columns`` of those the namespace and mask
        admit, in one statement; None where the engine reads them in steps
        (:meth:`newest_neighbours`, :meth:`neighbour_rows`, the caller's batches)."""
        ...

    def newest_neighbours(self, node_id: str, edges: Sequence[str], fanout: int) -> list[str]:
        """The ``fanout`` highest IDs among the nodes linked to ``node_id`` by an edge of
        ``edges`` in either direction, highest first, however many it has."""
        ...

    def neighbour_rows(
        self, seqs: Sequence[int], edges: Sequence[str], columns: str
    ) -> Iterable[tuple[int, str, Any]]:
        """(node seq, edge kind, the neighbour's ``columns``) for every edge of ``edges``
        of the nodes ``seqs``, both directions, before any mask."""
        ...

    def any_sessions(self) -> bool:
        """Whether the store may hold a session node (True where asking costs more than
        the session lookups it would save)."""
        ...

    def sessions_of(self, nodes: Sequence[Node]) -> dict[str, str]:
        """The session each of ``nodes`` occurred in (OCCURRED_IN), by node ID."""
        ...

    def session_windows(
        self,
        seeds: Sequence[Node],
        others: Sequence[Node],
        span: int,
        columns: str,
        namespace: str,
        mask: tuple[str, list[str]],
    ) -> tuple[dict[str, str], list[Any], set[str]]:
        """The session of each seed in one, and ``columns`` plus the session's ID of the
        rows up to ``span`` seqs around the seeds in a session that the namespace and
        mask admit, and the IDs whose sessions the first answer tells (found in one or
        in none). An engine may look up the sessions of ``others`` in the same
        statement."""
        ...

    def superseding(self, seqs: Sequence[int]) -> set[int]:
        """Which of ``seqs`` supersede any node (the source of a SUPERSEDES edge)."""
        ...


def graph_reads_of(conn: Connection) -> GraphReads:
    """The graph reads of ``conn``'s engine. PostgreSQL's module is imported only for a
    PostgreSQL connection."""
    if dialect_of(conn) == POSTGRESQL:
        from .postgres.graph_reads import PostgresGraphReads

        return PostgresGraphReads(conn)
    from .sqlite.graph_reads import SQLiteGraphReads

    return SQLiteGraphReads(conn)
