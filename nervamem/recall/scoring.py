"""Scoring: a candidate's score is relevance x recency x frequency x connectivity
(concepts.md), and :func:`top_k` keeps the best ones that packing may show.

Relevance comes from search, session context and expansion (recall/relevance.py,
session_context.py, expansion.py); the other three factors are read here. Ties are
broken by node ID, so the same store and query always rank the same way.
"""

from __future__ import annotations

import functools
import heapq
import math
from datetime import datetime
from operator import itemgetter
from typing import Any

from ..storage.engine import Connection
from ..timeparse import to_datetime
from .candidates import Candidate, degrees
from .node_cache import NodeFacts

RECENCY_HALF_LIFE_DAYS = 30.0
RECENCY_FLOOR = 0.5

# A ranked candidate: (score, recency, frequency, connectivity, candidate).
Scored = tuple[float, float, float, float, Candidate]


def recency(recorded_at: str, reference: datetime) -> float:
    """RECENCY_FLOOR + (1 - RECENCY_FLOOR) x exp(-ln2 x age_days / 30).

    The half-life is concepts.md's; the floor is ours. The temporal mask already keeps
    out what stopped being true, so what is left is still valid however old it is: a
    decision taken five months ago must not lose to last week's note that merely
    mentions the same topic (pure decay would weigh it 1/32). Age still orders near-ties.
    """
    age_days = max((reference - _moment(recorded_at)).total_seconds() / 86400.0, 0.0)
    decay = math.exp(-math.log(2) * age_days / RECENCY_HALF_LIFE_DAYS)
    return RECENCY_FLOOR + (1.0 - RECENCY_FLOOR) * decay


# A stored time, parsed: the same candidates come back recall after recall, and their
# recorded_at does not depend on the query (a parse is ~40 % of a recency).
_moment = functools.lru_cache(maxsize=8192)(to_datetime)


def frequency(access_count: int) -> float:
    return 1.0 + 0.1 * math.log1p(max(access_count, 0))


def connectivity(degree: int) -> float:
    return 1.0 + 0.1 * math.log1p(max(degree, 0))


def above_floor(ranked: list[Scored], floor: float) -> list[Scored]:
    """The ranked candidates (best first) whose score is at least ``floor`` times the
    best one's."""
    if not ranked or floor <= 0.0:
        return ranked
    least = floor * ranked[0][0]
    return [scored for scored in ranked if scored[0] >= least]


def top_k(
    conn: Connection,
    found: dict[str, Candidate],
    *,
    reference: datetime,
    k: int,
    facts: NodeFacts | None = None,
    pending: dict[str, int] | None = None,
) -> list[Scored]:
    """The ``k`` best candidates by score, best first (ties: by ID), each with its factors.

    Degrees (a hub entity has thousands of edges to count) are looked up only for the
    best 2 x k by the other three factors; connectivity (at most ~1.7x) then orders them.
    """
    # Recency (a date parse) only where it can matter: it is at most 1, so a candidate
    # whose relevance x frequency is below the 2 x k-th score computed so far cannot
    # enter the 2 x k best. Visited by that bound, best first; the rest are skipped.
    # Each factor is computed once per distinct input (an access count, a recorded_at,
    # a degree): a recall's candidates share them, an import's memories their time.
    width = 2 * k
    frequencies: dict[int, float] = {}
    bounded = []
    # ``pending``: accesses of earlier recalls not written yet (access_counts.py).
    pending_of = (pending or {}).get
    for candidate in found.values():
        accesses = candidate.access_count
        if pending:
            accesses += pending_of(candidate.id, 0)
        f = frequencies.get(accesses)
        if f is None:
            f = frequencies[accesses] = frequency(accesses)
        bounded.append((candidate.relevance * f, f, candidate))
    bounded.sort(key=itemgetter(0), reverse=True)  # stable: ties keep their order
    recencies: dict[str, float] = {}
    partial = []
    best: list[float] = []  # min-heap of the 2 x k best scores so far
    for upper, f, candidate in bounded:
        if len(best) == width and upper < best[0]:
            break
        r = recencies.get(candidate.recorded_at)
        if r is None:
            r = recencies[candidate.recorded_at] = recency(candidate.recorded_at, reference)
        score = candidate.relevance * r * f
        partial.append((score, candidate.id, r, f, candidate))
        if len(best) < width:
            heapq.heappush(best, score)
        elif score > best[0]:
            heapq.heapreplace(best, score)
    _best_first(partial)
    del partial[width:]
    degree = degrees(conn, [p[1] for p in partial], facts)
    connectivities: dict[int, float] = {}
    scored = []
    for score, node_id, r, f, candidate in partial:
        count = degree.get(node_id, 0)
        c = connectivities.get(count)
        if c is None:
            c = connectivities[count] = connectivity(count)
        scored.append((score * c, node_id, r, f, c, candidate))
    _best_first(scored)
    return [(score, r, f, c, candidate) for score, _, r, f, c, candidate in scored[:k]]


def _best_first(ranked: list[Any]) -> None:
    """Sort tuples of (score, node ID, ...) by score, highest first, ties by ID: two
    stable sorts on a tuple's fields instead of a key tuple made per item."""
    ranked.sort(key=itemgetter(1))
    ranked.sort(key=itemgetter(0), reverse=True)
