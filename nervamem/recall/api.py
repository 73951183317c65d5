"""The recall and timeline operations of MemoryStore (kept apart so that write-only
calls never import the ranking code)."""

from __future__ import annotations

import heapq
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ..errors import BadInputError
from ..models import NODE_KINDS, RecallItem, RecallResult, TimelineItem
from ..timeparse import format_time, parse_time, to_datetime
from . import search as rank
from .packing import pack
from .tokens import get_counter

if TYPE_CHECKING:
    from ..store import MemoryStore

MAX_BUDGET = 1_000_000
MAX_HOPS = 5


def _check_query(query: str) -> None:
    if "\x00" in query:
        raise BadInputError("the query contains a NUL byte")
    try:
        # Undecodable argv bytes arrive as lone surrogates, which no output can encode.
        query.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInputError("the query is not valid UTF-8 text") from None


def _candidate_target(budget: int) -> int:
    # The prefix stage (term*) runs when the exact key terms found fewer nodes than this:
    # a handful, more for a larger budget. It is a fallback for a query whose words are
    # fragments of stored ones; on most queries it never runs.
    return max(3, min(50, budget // 100))


# Items completed (session, short IDs) at a time when packing asks for one.
COMPLETE_CHUNK = 16

# Tokens of a typical item line (ID, date, confidence, footnote, a sentence of content).
ITEM_TOKENS = 30


def _expansion_width(budget: int) -> int:
    # Seeds per expansion hop: about as many as the budget can show items (a 500-token
    # budget shows ~15), at most rank.EXPANSION_SEEDS. Each seed costs a neighbour read and
    # its neighbours' rows; seeds far below what can be shown only add candidates that
    # cannot be packed.
    return max(5, budget // ITEM_TOKENS)


def run_recall(
    store: MemoryStore,
    query: str,
    *,
    budget_tokens: int,
    as_of: str | datetime | None,
    kinds: Sequence[str] | None,
    hops: int,
    namespace: str | None,
    tokenizer: str | None,
) -> RecallResult:
    if isinstance(budget_tokens, bool) or not 1 <= budget_tokens <= MAX_BUDGET:
        raise BadInputError(f"--budget must be between 1 and {MAX_BUDGET}, not {budget_tokens}")
    if not 0 <= hops <= MAX_HOPS:
        raise BadInputError(f"--hops must be between 0 and {MAX_HOPS}, not {hops}")
    for kind in kinds or ():
        if kind not in NODE_KINDS:
            raise BadInputError(f"unknown kind {kind[:40]!r}: use one of {', '.join(NODE_KINDS)}")
    _check_query(query)
    counter = get_counter(tokenizer)
    ns = store._ns(namespace)
    as_of_text = None
    if as_of is not None:
        as_of_text = (
            format_time(as_of)
            if isinstance(as_of, datetime)
            else parse_time(as_of, option="--as-of")
        )
    now = store._clock()
    reference = to_datetime(as_of_text) if as_of_text else now
    # Without --as-of the answer is as of now, with the same mask as --as-of now: a
    # memory valid only from a later date is not true yet, and one that a later-dated
    # version supersedes is still true until then.
    mask_time = as_of_text or format_time(now)
    conn = store.connection

    found = rank.search(
        conn, ns, query, as_of=mask_time, kinds=kinds, want=_candidate_target(budget_tokens)
    )
    if hops > 0 and found:
        found = rank.session_context(conn, ns, found, as_of=mask_time, kinds=kinds)
        found = rank.expand(
            conn,
            ns,
            found,
            hops=hops,
            as_of=mask_time,
            kinds=kinds,
            width=_expansion_width(budget_tokens),
        )
    # A question restates what is asked; the memory after it, which session context has
    # already raised, holds the answer (recall.QUESTION_DAMP).
    for candidate in found.values():
        if rank.asks(candidate.content):
            candidate.relevance *= rank.QUESTION_DAMP
    # An item line costs at least ~8 tokens, so no more than ``head`` items can be
    # packed. Degrees (a hub entity has thousands of edges to count), short IDs and
    # sessions are looked up only for the best 2 x head by the other three factors;
    # connectivity (at most ~1.7x) then orders them.
    head = max(20, budget_tokens // 6)
    # Recency (a date parse) only where it can matter: it is at most 1, so a candidate
    # whose relevance x frequency is below the 2 x head-th score computed so far cannot
    # enter the 2 x head best. Visited by that bound, best first; the rest are skipped.
    bounded = []
    for candidate in found.values():
        f = rank.frequency(candidate.access_count)
        bounded.append((candidate.relevance * f, f, candidate))
    bounded.sort(key=lambda b: -b[0])
    partial = []
    best: list[float] = []  # min-heap of the 2 x head best scores so far
    for upper, f, candidate in bounded:
        if len(best) == 2 * head and upper < best[0]:
            break
        r = rank.recency(candidate.recorded_at, reference)
        score = candidate.relevance * r * f
        partial.append((score, r, f, candidate))
        if len(best) < 2 * head:
            heapq.heappush(best, score)
        elif score > best[0]:
            heapq.heapreplace(best, score)
    partial.sort(key=lambda s: (-s[0], s[3].id))
    partial = partial[: 2 * head]
    degree = rank.degrees(conn, [p[3].id for p in partial])
    scored = []
    for score, r, f, candidate in partial:
        c = rank.connectivity(degree.get(candidate.id, 0))
        scored.append((score * c, r, f, c, candidate))
    scored.sort(key=lambda s: (-s[0], s[4].id))
    scored = scored[:head]
    # Sessions and short IDs (index lookups) only for what packing may show: it asks for
    # an item when its content is new and could still fit; looked up COMPLETE_CHUNK at a time.
    items: dict[int, RecallItem] = {}

    def complete(index: int) -> RecallItem:
        if index not in items:
            chunk = scored[index : index + COMPLETE_CHUNK]
            sessions = rank.sessions_of(conn, [s[4].id for s in chunk])
            short = store.short_ids([*(s[4].id for s in chunk), *sessions.values()])
            for offset, (score, r, f, c, cand) in enumerate(chunk, start=index):
                items[offset] = RecallItem(
                    id=cand.id,
                    short_id=short[cand.id],
                    kind=cand.kind,
                    content=cand.content,
                    score=round(score, 6),
                    relevance=round(cand.relevance, 6),
                    recency=round(r, 6),
                    frequency=round(f, 6),
                    connectivity=round(c, 6),
                    confidence=cand.confidence,
                    valid_from=cand.valid_from,
                    valid_until=cand.valid_until,
                    recorded_at=cand.recorded_at,
                    session_id=sessions.get(cand.id),
                    session_short_id=short[sessions[cand.id]] if cand.id in sessions else None,
                    via=cand.via,
                )
        return items[index]

    as_of_label = (as_of_text or format_time(now))[:10]
    drafts = [s[4] for s in scored]
    chosen, markdown, used = pack(query, as_of_label, drafts, budget_tokens, counter, complete)
    _touch(store, [item.id for item in chosen])
    return RecallResult(
        query=query,
        as_of=as_of_text,
        budget_tokens=budget_tokens,
        used_tokens=used,
        items=tuple(chosen),
        markdown=markdown,
        tokenizer=counter.name,
    )


def _touch(store: MemoryStore, ids: list[str]) -> None:
    """Count the access of the returned nodes only. A read must not fail because the
    store is read-only or briefly locked, so this bookkeeping is best effort."""
    if not ids or store.read_only:
        return
    conn = store.connection
    now = store._now()
    sql = "UPDATE mem_nodes SET access_count = access_count + 1, last_accessed = ? WHERE id = ?"
    rows = [(now, node_id) for node_id in ids]
    if store._in_transaction:
        # Inside the caller's batch: its transaction commits this too. BEGIN here would
        # fail, and the ROLLBACK below would throw away the caller's writes.
        conn.executemany(sql, rows)
        return
    synchronous = conn.execute("PRAGMA synchronous").fetchone()[0]
    try:
        conn.execute("PRAGMA busy_timeout = 2000")
        # An access count is not worth an fsync (~4 ms, more than the whole recall):
        # NORMAL commits it to the WAL unsynced; the next synced commit or checkpoint
        # makes it durable, and a power cut can at worst lose the count.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(sql, rows)
        conn.execute("COMMIT")
    except sqlite3.Error:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    finally:
        conn.execute(f"PRAGMA synchronous = {int(synchronous)}")
        conn.execute(f"PRAGMA busy_timeout = {store._busy_timeout_ms}")


def run_timeline(
    store: MemoryStore, query: str, *, namespace: str | None, limit: int
) -> list[TimelineItem]:
    if not 1 <= limit <= 100_000:
        raise BadInputError(f"--limit must be between 1 and 100000, not {limit}")
    _check_query(query)
    ns = store._ns(namespace)
    conn = store.connection
    hits = rank.search(conn, ns, query, as_of=None, kinds=None, want=limit, apply_mask=False)
    ids = set(list(hits)[:limit])
    # Every version of what matched: follow SUPERSEDES both ways, transitively.
    frontier = set(ids)
    while frontier:
        marks = ",".join("?" * len(frontier))
        rows = conn.execute(
            f"SELECT e.src, e.dst FROM mem_edges e WHERE e.kind = 'SUPERSEDES' AND "
            f"(e.src IN ({marks}) OR e.dst IN ({marks}))",
            [*frontier, *frontier],
        ).fetchall()
        linked = {node for row in rows for node in row} - ids
        ids |= linked
        frontier = linked
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT n.id, n.kind, n.content, n.valid_from, n.valid_until, n.recorded_at, "
        f"(SELECT e.src FROM mem_edges e JOIN mem_nodes s ON s.id = e.src "
        f" WHERE e.dst = n.id AND e.kind = 'SUPERSEDES' AND s.tombstoned = 0 "
        f" ORDER BY e.src LIMIT 1) FROM mem_nodes n WHERE n.id IN ({marks}) "
        f"AND +n.namespace = ? AND n.tombstoned = 0 ORDER BY n.valid_from, n.recorded_at, n.id",
        [*ids, ns],
    ).fetchall()
    short = store.short_ids([r[0] for r in rows] + [r[6] for r in rows if r[6]])
    items = [
        TimelineItem(
            id=r[0],
            short_id=short[r[0]],
            kind=r[1],
            content=r[2],
            valid_from=r[3],
            valid_until=r[4],
            recorded_at=r[5],
            superseded_by=r[6],
            superseded_by_short=short[r[6]] if r[6] else None,
        )
        for r in rows
    ]
    return items[-limit:]
