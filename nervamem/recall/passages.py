"""Passages: a long memory is shown by the part of it that matches the query.

A tool's output, an assistant's explanation or a design note runs to thousands of
characters; shown whole it costs a small budget all of its room, or is never shown at
all, and the one paragraph that answers the question pays for the rest. A memory whose
content is longer than LONG_CHARS is shown, from a budget of PASSAGE_MIN_BUDGET
tokens, by one window of about PASSAGE_CHARS cut at white space: the window that holds
the most distinct words of the query (then the most occurrences of them; the earliest
on a tie), its opening when none matches. It is scored as that window (weigh_passages).
Packing marks the cut ends with ``…`` and keeps the memory's ID, so ``show`` gives the
whole; the offsets are into the stored content (RecallItem.passage, JSON ``passage``).

Sizes, measured on BEAM's 500K tier (the development set; bench/quality.py --set beam,
bench/results.md "Recall quality on BEAM"): windows of 400 and 600 characters score
alike, 400 a little better; below PASSAGE_MIN_BUDGET passages lose (see there). Anything
up to LONG_CHARS is shown whole, as before (LoCoMo's and the agent set's longest
memories are 444 and 512 characters: their recalls are unchanged).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from .terms import content_terms, query_terms

if TYPE_CHECKING:  # annotations only
    from .candidates import Candidate

LONG_CHARS = 1200
PASSAGE_CHARS = 400
# Below this budget a long memory is shown whole or not at all, as before: on BEAM's dev
# tier a passage of ~100 tokens took the place of short memories that held the answer
# more often (200 tokens: 0.307 without passages, 0.257 with; 500: 0.422, 0.353), while
# from 1000 tokens up passages win (0.352 to 0.432; 2000: 0.416 to 0.509).
PASSAGE_MIN_BUDGET = 1000
# Words are compared on their first characters: "retries" finds "retry", "caching"
# "cached", without a stemmer (recall's index stems; this only picks a window).
STEM_CHARS = 5
_WORD = re.compile(r"\S+")
_TERM = re.compile(r"[^\W_]+", re.UNICODE)


def _stem(word: str) -> str:
    return word[:STEM_CHARS]


def query_stems(query: str) -> frozenset[str]:
    return frozenset(_stem(t) for t in content_terms(query_terms(query)))


def passage_chars(budget: int) -> int | None:
    """The window's size at a budget of ``budget`` tokens; None: no passages."""
    return PASSAGE_CHARS if budget >= PASSAGE_MIN_BUDGET else None


def weigh_passages(candidates: Iterable[Candidate], query: str, budget: int) -> None:
    """Scoring at passage level: a long memory is shown by one passage, so it is worth
    what that passage matches. Its relevance is scaled by the share of the query words it
    matches that its passage holds: one relevant paragraph keeps it whole, a long reply
    that mentions every word once somewhere drops below the short memories it would
    otherwise crowd out (BEAM: bench/results.md "Recall quality on BEAM")."""
    stems: frozenset[str] | None = None
    size = passage_chars(budget)
    if size is None:
        return
    for candidate in candidates:
        if len(candidate.content) <= LONG_CHARS:
            continue
        if stems is None:
            stems = query_stems(query)
        passage = best_passage(candidate.content, stems, size)
        if passage is None:
            continue
        whole = _distinct(candidate.content, stems)
        if whole:
            shown = _distinct(candidate.content[passage[0] : passage[1]], stems)
            candidate.relevance *= shown / whole


def _distinct(text: str, stems: frozenset[str]) -> int:
    return len({s for s in (_stem(t.lower()) for t in _TERM.findall(text)) if s in stems})


def best_passage(content: str, stems: frozenset[str], size: int) -> tuple[int, int] | None:
    """(start, end) offsets into ``content`` of the window of about ``size`` characters
    to show, or None when the content is short enough to show whole."""
    if len(content) <= max(LONG_CHARS, size):
        return None  # most memories: no lookup, no hashing of the content
    return _window(content, stems, size)


@lru_cache(maxsize=512)  # weigh_passages and packing ask for the same windows
def _window(content: str, stems: frozenset[str], size: int) -> tuple[int, int] | None:
    spans = [(m.start(), m.end()) for m in _WORD.finditer(content)]
    if not spans:
        return None
    hits = [_hits(content[s:e], stems) for s, e in spans]
    # A window starts every half window: any run of matching words no longer than half
    # a window lies whole in one of them.
    stride = max(size // 2, 1)
    best: tuple[int, int, int, int] | None = None  # (distinct, count, -start, end index)
    first = 0
    next_start = 0
    while first < len(spans):
        if spans[first][0] >= next_start or first == 0:
            last = _window_end(spans, first, size)
            found = [h for h in hits[first : last + 1] if h]
            distinct = len({s for h in found for s in h})
            count = sum(len(h) for h in found)
            key = (distinct, count, -spans[first][0], last)
            if best is None or key[:3] > best[:3]:
                best = key
            if spans[last][1] >= len(content.rstrip()):
                break
            next_start = spans[first][0] + stride
        first += 1
    assert best is not None
    start = -best[2]
    return start, spans[best[3]][1]


def _window_end(spans: Sequence[tuple[int, int]], first: int, size: int) -> int:
    """The index of the last word of the window that begins at word ``first`` (at least
    that word)."""
    limit = spans[first][0] + size
    last = first
    while last + 1 < len(spans) and spans[last + 1][1] <= limit:
        last += 1
    return last


def _hits(word: str, stems: frozenset[str]) -> list[str]:
    return [s for s in (_stem(t.lower()) for t in _TERM.findall(word)) if s in stems]
