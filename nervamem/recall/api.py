"""The recall operation of MemoryStore, as a pipeline of named steps:

    validate -> search -> session context -> expansion -> rank sessions below their
             memories -> damp questions -> favour times for "when" -> favour
             decisions for a topic -> top-k -> pack (completing only the items it may
             show) -> count accesses

Kept apart from store.py so that write-only calls never import the ranking code. Each
step is its own module in this package; what is here is how the budget sizes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..models import RecallItem, RecallResult
from ..storage.engine import Connection
from ..storage.graph_reads import graph_reads_of
from ..timeparse import format_time, parse_time, to_datetime
from .access_counts import count_accesses, pending_of
from .candidates import Candidate, any_sessions, reasons_of, sessions_of
from .expansion import expand
from .mask import KnownAt, mask_sql, until_known_sql
from .node_cache import NodeFacts, for_recall, rivals_of, short_ids
from .packing import pack
from .passages import weigh_passages
from .questions import damp_questions
from .scoring import Scored, above_floor, top_k
from .search import search
from .session_context import context_weight, session_context
from .sessions_rank import rank_sessions
from .tokens import get_counter
from .topics import favour_decisions
from .validation import check_recall_request
from .when import favour_times

if TYPE_CHECKING:
    from ..storage.engine import Storage

# Items completed (session, short IDs, rivals, a decision's reasons: a lookup each per
# chunk) at a time when packing asks for one. On SQLite the first chunk is about as many
# items as the budget can show (_shown), nearly all of which packing asks for;
# after them it asks for few and far between (it skips what can no longer fit: at 500
# tokens on the peers workload ~15 of the first ~29 items), so COMPLETE_LATER at a time:
# ~23 items looked up a recall instead of ~33 in chunks of 16 (bench/results.md, "Fewer
# SQL statements").
COMPLETE_LATER = 4
# Where each of a chunk's four lookups is a round trip, which costs more than the rows,
# the engine sizes the chunks (GraphReads.lookups_per_batch).

# Tokens of a typical item line (ID, date, confidence, footnote, a sentence of content).
ITEM_TOKENS = 30


def run_recall(
    storage: Storage,
    query: str,
    *,
    budget_tokens: int,
    as_of: str | datetime | None,
    kinds: Sequence[str] | None,
    hops: int,
    namespace: str | None,
    tokenizer: str | None,
    min_score: float = 0.0,
    known_at: str | datetime | None = None,
) -> RecallResult:
    check_recall_request(
        query, budget_tokens=budget_tokens, hops=hops, kinds=kinds, min_score=min_score
    )
    counter = get_counter(tokenizer)
    ns = storage.namespace_for(namespace)
    as_of_text = None
    if as_of is not None:
        as_of_text = (
            format_time(as_of)
            if isinstance(as_of, datetime)
            else parse_time(as_of, option="--as-of", end_of_day=True)
        )
    now = storage.clock()
    reference = to_datetime(as_of_text) if as_of_text else now
    # Without --as-of the answer is as of now, with the same mask as --as-of now: a
    # memory valid only from a later date is not true yet, and one that a later-dated
    # version supersedes is still true until then.
    mask_time = as_of_text or format_time(now)
    known_at_text = moment_text(known_at, "--known-at")
    mask: str | KnownAt = mask_time if known_at_text is None else KnownAt(mask_time, known_at_text)
    conn = storage.connection
    # Node rows, degrees and neighbours read by earlier recalls of this process, for as
    # long as the store has not changed (SQLite only; None elsewhere).
    facts = for_recall(storage)
    in_sessions = any_sessions(conn)

    found = search(
        conn, ns, query, as_of=mask, kinds=kinds, want=_candidate_target(budget_tokens), facts=facts
    )
    if hops > 0 and found:
        found = session_context(
            conn,
            ns,
            found,
            as_of=mask,
            kinds=kinds,
            neighbour_weight=context_weight(budget_tokens),
            sessions=in_sessions,
        )
        found = expand(
            conn,
            ns,
            found,
            hops=hops,
            as_of=mask,
            kinds=kinds,
            width=_expansion_width(budget_tokens),
            facts=facts,
        )
    rank_sessions(found)
    damp_questions(found.values())
    favour_times(found.values(), query)
    favour_decisions(found.values(), query)
    weigh_passages(found.values(), query, budget_tokens)
    _renormalise(found.values())
    ranked = top_k(
        conn,
        found,
        reference=reference,
        k=_most_packable(budget_tokens),
        facts=facts,
        pending=pending_of(storage),
    )
    ranked = above_floor(ranked, min_score)
    label = mask_time[:10]
    if known_at_text is not None:
        label += f", known at {known_at_text[:16].replace('T', ' ')}"
    chosen, markdown, used = pack(
        query,
        label,
        [s[4] for s in ranked],
        budget_tokens,
        counter,
        _item_completer(
            storage,
            ranked,
            mask,
            known_at_text,
            sessions=in_sessions,
            budget=budget_tokens,
            facts=facts,
        ),
    )
    count_accesses(storage, [item.id for item in chosen])
    return RecallResult(
        query=query,
        as_of=as_of_text,
        budget_tokens=budget_tokens,
        used_tokens=used,
        items=tuple(chosen),
        markdown=markdown,
        tokenizer=counter.name,
        known_at=known_at_text,
    )


def _renormalise(candidates: Iterable[Candidate]) -> None:
    """Relevance back to 0-1 (concepts.md) after the rules that raise some candidates
    (times, decisions): divided by the best when it is above 1. The order is the same."""
    found = list(candidates)
    best = max((c.relevance for c in found), default=0.0)
    if best > 1.0:
        for candidate in found:
            candidate.relevance /= best


def _until_known(conn: Connection, node_ids: list[str], known_at: str) -> dict[str, str | None]:
    marks = ",".join("?" * len(node_ids))
    rows = conn.execute(
        f"SELECT n.id, {until_known_sql('n')} FROM mem_nodes n WHERE n.id IN ({marks})",
        [known_at, *node_ids],
    ).fetchall()
    return {row[0]: row[1] for row in rows}


def moment_text(value: str | datetime | None, option: str) -> str | None:
    """A time given as text or a datetime, in the stored form; None stays None."""
    if value is None:
        return None
    return format_time(value) if isinstance(value, datetime) else parse_time(value, option=option)


def _candidate_target(budget: int) -> int:
    # The prefix stage (term*) runs when the exact key terms found fewer nodes than this:
    # a handful, more for a larger budget. It is a fallback for a query whose words are
    # fragments of stored ones; on most queries it never runs.
    return max(3, min(50, budget // 100))


def _expansion_width(budget: int) -> int:
    # Seeds per expansion hop: about as many as the budget can show items (a 500-token
    # budget shows ~15), at most EXPANSION_SEEDS. Each seed costs a neighbour read and
    # its neighbours' rows; seeds far below what can be shown only add candidates that
    # cannot be packed.
    return max(5, budget // ITEM_TOKENS)


def _shown(budget: int) -> int:
    # About as many items as the budget can show (~16 at 500 tokens), at least a few.
    return max(COMPLETE_LATER, budget // ITEM_TOKENS)


def _most_packable(budget: int) -> int:
    # An item line costs at least ~8 tokens, so no more than this many items can be
    # packed: only these are scored in full (degrees) and completed.
    return max(20, budget // 6)


def _item_completer(
    storage: Storage,
    ranked: list[Scored],
    mask: str | KnownAt,
    known_at: str | None = None,
    *,
    sessions: bool = True,
    budget: int,
    facts: NodeFacts | None = None,
) -> Callable[[int, tuple[int, int] | None], RecallItem]:
    """The item of ``ranked[i]``, for packing. Sessions and short IDs (index lookups) only
    for what packing may show: it asks for an item when its content is new and could
    still fit; looked up as many at a time as the budget can show, then COMPLETE_LATER
    at a time (on a server GraphReads.lookups_per_batch at a time).
    With ``known_at``, an item's valid_until is the one known then (supersessions
    recorded later left out). ``sessions`` False: the store has none
    (candidates.any_sessions), none is looked up. Short IDs that ``facts`` (the node
    cache) holds are not looked up again."""
    conn = storage.connection
    # The lookups of each index's chunk; an item is built only when packing asks for
    # it (it shows about half of what a chunk looks up).
    looked_up: dict[int, tuple[Any, ...]] = {}
    # A rival is shown if recall could show it: the same temporal mask.
    rival_mask = mask_sql(mask, "rival")
    server_chunk = graph_reads_of(conn).lookups_per_batch

    def complete(index: int, passage: tuple[int, int] | None = None) -> RecallItem:
        if index not in looked_up:
            size = server_chunk or (COMPLETE_LATER if looked_up else _shown(budget))
            chunk = ranked[index : index + size]
            in_session = sessions_of(conn, [s[4] for s in chunk]) if sessions else {}
            why = reasons_of(conn, [s[4].id for s in chunk if s[4].kind == "decision"])
            rivals = rivals_of(conn, facts, [s[4].id for s in chunk], rival_mask)
            until = (
                {} if known_at is None else _until_known(conn, [s[4].id for s in chunk], known_at)
            )
            short = short_ids(
                storage,
                facts,
                [
                    *(s[4].id for s in chunk),
                    *in_session.values(),
                    *(r for named in rivals.values() for r in named),
                ],
            )
            lookups = (in_session, why, rivals, until, short)
            looked_up.update(dict.fromkeys(range(index, index + len(chunk)), lookups))
        in_session, why, rivals, until, short = looked_up[index]
        score, r, f, c, cand = ranked[index]
        return RecallItem(
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
            valid_until=until.get(cand.id, cand.valid_until),
            recorded_at=cand.recorded_at,
            session_id=in_session.get(cand.id),
            session_short_id=short[in_session[cand.id]] if cand.id in in_session else None,
            via=cand.via,
            rationale=why[cand.id][0] if cand.id in why else None,
            rejected=why[cand.id][1] if cand.id in why else (),
            conflicts_with=rivals.get(cand.id, ()),
            conflicts_with_short=tuple(short[r] for r in rivals.get(cand.id, ())),
            passage=passage,
        )

    return complete
