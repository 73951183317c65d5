"""Session context: what was recorded just before and after a search hit in its session
(see :func:`session_context`).

Every row read here passes the temporal mask (recall/mask.py) and the namespace filter;
a session's rows are read by a few primary keys per hit, never the whole session.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any

from ..storage.engine import Connection
from ..storage.graph_reads import graph_reads_of
from .candidates import NODE_COLUMNS, Candidate, NodeRow, sessions_of
from .mask import KnownAt, mask_sql
from .questions import QUESTION_SHARE, asks

CONTEXT_SEEDS = 20
CONTEXT_WINDOW = 2
CONTEXT_SPAN = 4
CONTEXT_WEIGHT = 0.5
CONTEXT_DECAY = 0.5
CONTEXT_BEFORE = 0.7
SESSION_WEIGHT = 0.5
# Below TIGHT_BUDGET tokens a neighbour gets CONTEXT_WEIGHT_TIGHT instead (see
# context_weight); the answer right after a question keeps its share (QUESTION_SHARE).
CONTEXT_WEIGHT_TIGHT = 0.35
TIGHT_BUDGET = 500


def context_weight(budget: int) -> float:
    """The share of a hit's relevance that its session neighbours get, by budget.

    A neighbour that holds none of the query's words is a guess: of the context items
    that 1000-token recalls showed on three LoCoMo conversations, one in 57 answered the
    question, against one in 17 of the search hits. Where the budget holds only a
    handful of items (under TIGHT_BUDGET tokens; ~6 LoCoMo turns at 200) a guess takes
    the place of a hit, so it weighs less there; a larger
    budget has room for both, and the context share also ranks a hit with relevant
    neighbours above a lone one, which a lower weight loses (bench/results.md, "Recall
    quality, round 3")."""
    return CONTEXT_WEIGHT_TIGHT if budget < TIGHT_BUDGET else CONTEXT_WEIGHT


def session_context(
    conn: Connection,
    namespace: str,
    found: dict[str, Candidate],
    *,
    as_of: str | KnownAt | None,
    kinds: Sequence[str] | None,
    neighbour_weight: float = CONTEXT_WEIGHT,
    sessions: bool = True,
) -> dict[str, Candidate]:
    """Context from the same session: what was recorded just before and after a hit.

    A session is one task, and what is stored next to a memory in it is usually its
    context: the question a reply answers, the action that followed a decision. Each of
    the CONTEXT_SEEDS best hits passes ``neighbour_weight x decay^(d-1)`` of its
    relevance to the memories up to CONTEXT_WINDOW places after it in its session (d =
    distance),
    and CONTEXT_BEFORE times that to those before it; hits receive it too, so a hit with
    relevant neighbours outranks a lone one. Then each candidate's score is raised by
    SESSION_WEIGHT x (its session's summed hit relevance / the best session's), so the
    task that matches the query most is preferred. Reads only a few rows per seed by
    primary key; never a whole session, so a long session cannot flood the result.

    ``neighbour_weight`` is CONTEXT_WEIGHT, or less at a small budget
    (:func:`context_weight`). A question is answered by what follows it: a hit that asks
    one (:func:`asks`) passes QUESTION_SHARE of its relevance to the memory right after
    it, whatever ``neighbour_weight`` is (and the pipeline weighs every candidate that
    asks one QUESTION_DAMP, after expansion, with or without hops: recall/questions.py,
    where the reasons are).

    ``sessions`` False (the store has none, candidates.any_sessions): nothing is read,
    and the relevances are only normalised, as they would be after finding no session.
    """
    seeds = sorted(found.values(), key=attrgetter("relevance"), reverse=True)[:CONTEXT_SEEDS]
    if not seeds:
        return found
    if not sessions:
        return _normalised(dict(found))
    session_of, rows, asked = _windows(conn, namespace, seeds, as_of, found)
    by_session: dict[str, list[NodeRow]] = {}
    for row in rows:
        by_session.setdefault(row[-1], []).append(row[:-1])
        session_of[row[0]] = row[-1]
    for members in by_session.values():
        members.sort(key=lambda r: r[8])
    gained: dict[str, float] = {}
    rows_by_id: dict[str, NodeRow] = {}
    for seed in seeds:
        session = session_of.get(seed.id)
        if session is None:
            continue
        members = by_session.get(session, [])
        place = next((i for i, r in enumerate(members) if r[0] == seed.id), None)
        if place is None:
            # Its session and its window are two reads: a write between them (another
            # process superseding or forgetting the seed) masks it out of the window.
            # It then has no context, as on PostgreSQL, where one statement reads both.
            continue
        for index, row in enumerate(members):
            distance = index - place
            if distance == 0 or abs(distance) > CONTEXT_WINDOW:
                continue
            if abs(row[8] - seed.seq) > CONTEXT_SPAN:
                continue
            share = neighbour_weight * CONTEXT_DECAY ** (abs(distance) - 1) * seed.relevance
            if distance < 0:
                share *= CONTEXT_BEFORE
            elif distance == 1 and asks(seed.content):
                share = QUESTION_SHARE * seed.relevance
            gained[row[0]] = gained.get(row[0], 0.0) + share
            rows_by_id[row[0]] = row
    result = dict(found)
    base = {node_id: c.relevance for node_id, c in found.items()}
    for node_id, extra in gained.items():
        if node_id in result:
            result[node_id].relevance += extra
        elif not kinds or rows_by_id[node_id][1] in kinds:
            result[node_id] = Candidate(*rows_by_id[node_id], relevance=extra, via="context")
    # Sessions of every candidate (hits outside the fetched windows included).
    missing = [
        c for node_id, c in result.items() if node_id not in session_of and node_id not in asked
    ]
    session_of.update(sessions_of(conn, missing))
    weight: dict[str, float] = {}
    for node_id, relevance in base.items():
        session = session_of.get(node_id)
        if session:
            weight[session] = weight.get(session, 0.0) + relevance
    top = max(weight.values(), default=0.0)
    if top > 0:  # else no candidate is in a session with hits (a store without sessions)
        for node_id, candidate in result.items():
            session = session_of.get(node_id)
            if session:
                candidate.relevance *= 1.0 + SESSION_WEIGHT * weight.get(session, 0.0) / top
    return _normalised(result)


def _normalised(result: dict[str, Candidate]) -> dict[str, Candidate]:
    best = max(c.relevance for c in result.values())
    for candidate in result.values():
        relevance = candidate.relevance / best
        candidate.relevance = relevance if relevance >= 1e-6 else 1e-6
    return result


def _windows(
    conn: Connection,
    namespace: str,
    seeds: list[Candidate],
    as_of: str | KnownAt | None,
    found: dict[str, Candidate],
) -> tuple[dict[str, str], list[Any], set[str]]:
    """The session of each seed in one, the rows (with their session) up to
    CONTEXT_SPAN places of seq around those seeds, and the IDs whose sessions are known
    now (in one or in none). Only a seed in a session has context: the windows of the
    others are not read (a store written without sessions reads none). A seed passed
    the same mask, so it is among its window's rows. An engine may look up the sessions
    of every candidate in ``found`` at once (seeds among them: GraphReads.session_windows)."""
    return graph_reads_of(conn).session_windows(
        [(c.id, c.seq) for c in seeds],
        [(c.id, c.seq) for c in found.values()],
        CONTEXT_SPAN,
        NODE_COLUMNS,
        namespace,
        mask_sql(as_of),
    )
