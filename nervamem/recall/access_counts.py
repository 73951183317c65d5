"""Access counts: recall adds one to ``access_count`` (and sets ``last_accessed``) of the
memories it returns, the frequency factor of later recalls (recall/scoring.py).

This is the one write a recall makes. It is bookkeeping, best effort: a read never fails
because the store is read-only or briefly locked, and the count is not worth an fsync.

On SQLite a recall's counts wait in memory (:class:`PendingCounts`), and one transaction
writes those of several recalls: its own ``BEGIN IMMEDIATE ... COMMIT`` cost ~0.35-0.45
ms of every recall at 100k nodes, ~8 % of a warm one (bench/results.md, "Access counts
batched"). Rules a reader must not break:
* This process sees every count at once: recall's frequency factor adds the pending
  counts to the committed ones (:func:`pending_of`, scoring.top_k), the only place a
  recall reads a count; a read that shows counts (``get``, a session's snapshot in
  consolidation, the facade's ``connection``) writes them first
  (``Storage.flush_access_counts``).
* A write of this store never carries them: ``Storage.transaction()`` writes them first,
  in a transaction of their own; inside a transaction a recall writes its counts at
  once, in the caller's transaction, as before. PostgreSQL writes them at once.
* Written after FLUSH_EVERY recalls or when the oldest waited FLUSH_AFTER seconds
  (checked at each recall; the MCP server also writes them each FLUSH_AFTER seconds
  between calls), at ``close()``, and when the store is collected or the interpreter
  exits while it is open. A process killed meanwhile loses those counts, never anything
  else; another process sees them that much later (docs/recall.md).
* The node cache holds committed rows only: after a flush, :func:`node_cache.counted`
  adds what was written to the rows it holds, so its generation stays exact.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Sequence
from time import monotonic
from typing import TYPE_CHECKING, cast

from .node_cache import counted

if TYPE_CHECKING:
    from ..storage.engine import Storage

# A flush after this many recalls, or once the oldest count waited this long (seconds),
# whichever comes first. At 100k nodes a flush costs ~0.2 ms a recall it holds (an
# UPDATE and a -wal page per row: batching saves the transaction, not the rows): 32
# recalls, ~8 ms once, leave the flushes out of the p95 (1 recall in 32) and save nearly
# what 128 do (0.26 against 0.23 ms a recall, 0.62 unbatched; 8 and 16 put a 2-3 ms
# flush into the p95). bench/results.md, "Access counts batched".
FLUSH_EVERY = 32
FLUSH_AFTER = 1.0

_UPDATE_MANY = (
    "UPDATE mem_nodes SET access_count = access_count + ?, last_accessed = ? WHERE id = ?"
)


class PendingCounts:
    """The counts of a SQLite store's recalls not written yet: by ID, how many accesses
    and the time of the last (as the UPDATE of each recall would have left them)."""

    __slots__ = ("__weakref__", "added", "finalizer", "last", "recalls", "since", "storage")

    def __init__(self, storage: Storage) -> None:
        self.storage = weakref.ref(storage)
        self.added: dict[str, int] = {}
        self.last: dict[str, str] = {}
        self.recalls = 0
        self.since = 0.0  # monotonic() of the first recall counted
        # Written when the store is collected, or at the interpreter's exit, while open.
        self.finalizer = weakref.finalize(
            storage, _write_left, storage.access_counts_writer(), self.added, self.last
        )
        _every_pending.add(self)

    def forget(self) -> None:
        """In a forked child: the parent writes these counts; written twice otherwise."""
        self.finalizer.detach()
        self.added.clear()
        self.last.clear()
        self.recalls = 0

    def add(self, ids: list[str], now: str) -> None:
        added, last = self.added, self.last
        if not self.recalls:
            self.since = monotonic()
        self.recalls += 1
        for node_id in ids:
            added[node_id] = added.get(node_id, 0) + 1
            last[node_id] = now
        if self.recalls >= FLUSH_EVERY or monotonic() - self.since >= FLUSH_AFTER:
            self.flush()

    def flush(self, *, closing: bool = False) -> None:
        """Write the counts in one transaction of their own (best effort: kept for the
        next flush if the store stays locked)."""
        if not self.added:
            return
        storage = self.storage()
        if storage is None:
            return
        written = dict(self.added)
        rows = _rows(self.added, self.last)
        if storage.write_access_counts(rows, self.recalls, closing=closing):
            counted(storage, written)  # the cached rows hold the new counts too
            self.added.clear()
            self.last.clear()
            self.recalls = 0

    def close(self) -> None:
        """At the store's close: write what is left, whatever happens; no finalizer."""
        try:
            self.flush(closing=True)
        finally:
            self.finalizer.detach()
            self.added.clear()
            self.last.clear()


_every_pending: weakref.WeakSet[PendingCounts] = weakref.WeakSet()


def _forget_in_child() -> None:
    for pending in list(_every_pending):
        pending.forget()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_forget_in_child)


def _rows(added: dict[str, int], last: dict[str, str]) -> list[tuple[int, str, str]]:
    """The UPDATE's parameters: accesses to add, the time of the last, the node's ID."""
    return [(count, last[node_id], node_id) for node_id, count in added.items()]


def _write_left(
    write: Callable[[Sequence[tuple[int, str, str]]], bool],
    added: dict[str, int],
    last: dict[str, str],
) -> None:
    """The finalizer of a store collected or left open at exit with counts pending:
    ``write`` is the engine's (Storage.access_counts_writer), holding the connection
    but not the store."""
    if added:
        write(_rows(added, last))


def pending_of(storage: Storage) -> dict[str, int] | None:
    """The accesses not written yet by ID (recall's frequency factor adds them), or
    None when there are none."""
    pending = cast("PendingCounts | None", storage.pending_counts)
    return pending.added if pending is not None and pending.added else None


def count_accesses(storage: Storage, ids: list[str]) -> None:
    """Count the access of the returned nodes only. A read must not fail because the
    store is read-only or briefly locked, so this bookkeeping is best effort."""
    if not ids or storage.read_only:
        return
    conn = storage.connection
    now = storage.now()
    if storage.in_transaction:
        # Inside the caller's batch: its transaction commits this too. BEGIN here would
        # fail, and the ROLLBACK below would throw away the caller's writes. Nothing is
        # pending here: transaction() wrote it first.
        conn.executemany(_UPDATE_MANY, [(1, now, node_id) for node_id in ids])
        return
    if storage.count_accesses_now(ids, now):
        return
    pending = storage.pending_counts
    if pending is None:
        pending = storage.pending_counts = PendingCounts(storage)
    cast("PendingCounts", pending).add(ids, now)
