"""Passages: a long memory is shown by the part of it that matches the query.

A tool's output, an assistant's explanation or a design note runs to thousands of
characters; shown whole it costs a small budget all of its room, or is never shown at
all, and the one paragraph that answers the question pays for the rest. A memory whose
content is longer than LONG_CHARS is shown by one window of about PASSAGE_CHARS,
cut at white space: the window that holds the most distinct words of the query (then
the most occurrences of them; the earliest on a tie), its opening when none matches.
Packing marks the cut ends with ``…`` and keeps the memory's ID, so ``show`` gives the
whole; the offsets are into the stored content (RecallItem.passage, JSON ``passage``).

Sizes (bench/quality.py --set beam, BEAM's 500K tier, bench/results.md "Recall quality
on BEAM"): a window of PASSAGE_CHARS fits a 200-token budget beside the header and
a short memory; anything up to LONG_CHARS is shown whole, as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .terms import content_terms, query_terms

LONG_CHARS = 1200
PASSAGE_CHARS = 600
# Words are compared on their first characters: "retries" finds "retry", "caching"
# "cached", without a stemmer (recall's index stems; this only picks a window).
STEM_CHARS = 5
_WORD = re.compile(r"\S+")
_TERM = re.compile(r"[^\W_]+", re.UNICODE)


def _stem(word: str) -> str:
    return word[:STEM_CHARS]


def query_stems(query: str) -> frozenset[str]:
    return frozenset(_stem(t) for t in content_terms(query_terms(query)))


def best_passage(content: str, stems: frozenset[str]) -> tuple[int, int] | None:
    """(start, end) offsets into ``content`` of the window to show, or None when the
    content is short enough to show whole."""
    size = PASSAGE_CHARS  # read at the call: bench scripts try other sizes
    if len(content) <= max(LONG_CHARS, size):
        return None
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
