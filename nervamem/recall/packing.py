"""Budget packing and the Markdown layout of a recall.

Invariant (never break it): the text returned by :func:`pack` measures at most
``budget`` tokens under the given counter. Items are chosen greedily by score; each one
is charged what it adds to the text: its line, its section heading if it opens one, and
its session's provenance line if it is the first item of that session. concepts.md keeps
a fixed 10 % of the budget for the footer; charging the footer item by item keeps that
room exactly as large as the footer needs, so no budget is left empty and no item is
dropped after the fact. An item that does not fit is skipped and smaller ones after it
may still fit. A memory whose content repeats, word for word, one already chosen is
shown once (the best-scoring copy). The final text is then measured exactly and the
lowest-scoring items are dropped until it fits. A budget that cannot hold even the empty
header is refused, never exceeded.

Layout of an item line (docs/recall.md): ``- [<short id>] <valid_from date> c<confidence>
^<n> — <content>``, confidence with as few decimals as it needs (``c0.9``, ``c0.85``)
and left out when it is full (1.0, the default: most memories), ``^<n>`` the footnote of
the item's session (none without a session); the content on one line, its control
characters escaped (``\\x1b``, nervamem/visible.py) before it is measured. Every
character here is paid for by every item: at a 200-token budget these labels and the
header decide whether a third or fourth memory fits (bench/quality.py measures it).
Provenance: one line per session, ``^<n>: <session short id>``, numbered in the order
the items (best first) cite them.

Why recall's Markdown is built here and not in render/markdown.py: the budget is a
property of the exact text, so what chooses the items must measure the very characters
that are printed, piece by piece while it packs and whole at the end. The layout
functions below (header, section heading, item line, provenance line) are the only
place that text is spelled, and :func:`pack` charges each item the pieces they return.
The Markdown renderer prints ``RecallResult.markdown`` as built (its escaping finds
nothing left to escape; the table renderer shows it through Rich); spelling the lines in
render/ would make recall import a renderer, or let two copies of the layout drift
apart while the budget measured only one of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, cast

from ..errors import BadInputError
from ..visible import one_line
from .tokens import CharTokenCounter, TokenCounter

if TYPE_CHECKING:  # annotations only
    from ..models import RecallItem

SECTIONS: tuple[tuple[str, str], ...] = (
    ("decision", "Decisions"),
    ("fact", "Facts"),
    ("action", "Actions"),
    ("outcome", "Outcomes"),
    ("procedure", "Procedures"),
    ("preference", "Preferences"),
    ("session", "Sessions"),
    ("entity", "Entities"),
)
SECTION_TITLE = dict(SECTIONS)
PROVENANCE_TITLE = "Provenance"
# The header echoes the query's first characters only: the caller knows its query, and at
# a 200-token budget each 16 characters of echo are 2 % of the room for memories. On the
# LoCoMo split at 200 tokens: 24 characters 0.630, 16 and 12 both 0.634 (bench/quality.py).
HEADER_QUERY_CHARS = 16
# The fewest characters an item's piece adds besides its content: "- [" + a short ID (at
# least "f-" and 4 hex digits; "pr-" is longer) + "] " + the 10-character date + " — " + "\n" (no
# confidence label when it is 1.0, no footnote without a session).
MIN_PIECE_CHARS = 3 + 6 + 2 + 10 + 3 + 1


class Draft(Protocol):
    """What packing reads of a ranked memory before it needs the whole item."""

    @property
    def content(self) -> str: ...


# ---------------------------------------------------------------------------- layout
def header_line(query: str, as_of_label: str, count: int, used: int, budget: int) -> str:
    return (
        f'## Memory recall: "{header_query(query)}" (as of {as_of_label} · '
        f"{count} item{'' if count == 1 else 's'} · {used}/{budget} tokens)"
    )


def section_heading(title: str) -> str:
    return f"### {title}"


def header_query(query: str) -> str:
    flat = one_line(query)
    return flat if len(flat) <= HEADER_QUERY_CHARS else flat[: HEADER_QUERY_CHARS - 1] + "…"


def confidence_label(confidence: float) -> str:
    """``c1.0``, ``c0.9``, ``c0.85``: the confidence with the decimals it needs."""
    text = f"{confidence:.2f}".rstrip("0")
    return "c" + (text + "0" if text.endswith(".") else text)


def session_labels(items: Sequence[RecallItem]) -> dict[str, int]:
    """Footnote number of each session: 1, 2, ... in the order items first cite it."""
    labels: dict[str, int] = {}
    for item in items:
        if item.session_short_id and item.session_short_id not in labels:
            labels[item.session_short_id] = len(labels) + 1
    return labels


def item_line(item: RecallItem, label: int | None = None) -> str:
    note = f" ^{label}" if label else ""
    # Full confidence (the default) goes without a label: it says nothing that the
    # absence of a label does not, and would cost every item of a recall ~1.5 tokens.
    conf = "" if item.confidence >= 1.0 else " " + confidence_label(item.confidence)
    # A conflict (two current successors of one node, merged from two branches) is
    # said on the line: an agent must not take either version as settled.
    rivals = (
        " (conflicts with " + ", ".join(f"[{r}]" for r in item.conflicts_with_short) + ")"
        if item.conflicts_with_short
        else ""
    )
    return (
        f"- [{item.short_id}] {item.valid_from[:10]}{conf}{note} — {one_line(item.content)}{rivals}"
    )


def provenance_line(session_short_id: str, label: int) -> str:
    return f"^{label}: {session_short_id}"


def provenance_lines(items: Sequence[RecallItem]) -> list[str]:
    return [provenance_line(session, n) for session, n in session_labels(items).items()]


def render(
    query: str, as_of_label: str, items: Sequence[RecallItem], used: int, budget: int
) -> str:
    lines = [header_line(query, as_of_label, len(items), used, budget)]
    labels = session_labels(items)
    for kind, title in SECTIONS:
        section = [
            item_line(item, labels.get(item.session_short_id or ""))
            for item in items
            if item.kind == kind
        ]
        if section:
            lines += ["", section_heading(title), *section]
    provenance = provenance_lines(items)
    if provenance:
        lines += ["", section_heading(PROVENANCE_TITLE), *provenance]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- packing
def _finalize(
    query: str,
    as_of_label: str,
    items: Sequence[RecallItem],
    budget: int,
    counter: TokenCounter,
) -> tuple[str, int]:
    """Render with a header whose used/budget figure matches the text it heads."""
    used = 0
    text = render(query, as_of_label, items, used, budget)
    for _ in range(5):
        measured = counter.count(text)
        if measured == used:
            break
        used = measured
        text = render(query, as_of_label, items, used, budget)
    return text, counter.count(text)


class _Meter:
    """Running token estimate of the body while items are added."""

    def __init__(self, counter: TokenCounter, start: str) -> None:
        self._counter = counter
        self._exact_chars = isinstance(counter, CharTokenCounter)
        self._chars = len(start)
        self._tokens = counter.count(start)

    def least_cost(self, chars: int) -> int | None:
        """A lower bound of the cost of any piece of ``chars`` characters or more (None:
        this counter gives no such bound)."""
        if self._exact_chars:
            return math.ceil((self._chars + chars) / 4) - self._tokens
        return None

    def cost(self, piece: str) -> int:
        if self._exact_chars:
            return math.ceil((self._chars + len(piece)) / 4) - self._tokens
        return self._counter.count(piece)

    def add(self, piece: str, cost: int) -> None:
        self._chars += len(piece)
        self._tokens += cost

    @property
    def tokens(self) -> int:
        return self._tokens


def pack(
    query: str,
    as_of_label: str,
    ranked: Sequence[Draft],
    budget: int,
    counter: TokenCounter,
    complete: Callable[[int], RecallItem] | None = None,
) -> tuple[list[RecallItem], str, int]:
    """Choose items (highest score first) and render them within ``budget`` tokens.

    ``ranked`` holds RecallItems, or, with ``complete``, drafts: ``complete(i)`` returns
    the whole item of ``ranked[i]``. It is called only for a draft whose content is new
    and could still fit, so short IDs and sessions are looked up only for those; the
    choice is the same as with every item complete."""
    empty_text, empty_used = _finalize(query, as_of_label, [], budget, counter)
    if empty_used > budget:
        raise BadInputError(
            f"--budget {budget} is too small: the recall header alone needs {empty_used} tokens"
        )
    # The header grows once items are in: a longer item count, a longer used figure and
    # "items" for "item". Charge that up front.
    header_growth = " " * (len(str(len(ranked))) + len(str(budget)) + 1)
    meter = _Meter(counter, empty_text + header_growth)
    chosen: list[RecallItem] = []
    kinds_present: set[str] = set()
    labels: dict[str, int] = {}
    shown: set[str] = set()
    for index, draft in enumerate(ranked):
        flat = one_line(draft.content)
        text = flat.lower()
        if text in shown:
            continue  # the same words again (a note repeated across sessions): shown once
        least = meter.least_cost(len(flat) + MIN_PIECE_CHARS)
        if least is not None and meter.tokens + least > budget:
            continue  # cannot fit, whatever its ID, date and footnote
        item = complete(index) if complete else cast("RecallItem", draft)
        session = item.session_short_id
        label = (labels.get(session) or len(labels) + 1) if session else None
        piece = item_line(item, label) + "\n"
        if item.kind not in kinds_present:
            piece += "\n" + section_heading(SECTION_TITLE[item.kind]) + "\n"
        if session and session not in labels:
            piece += provenance_line(session, len(labels) + 1) + "\n"
            if not labels:
                piece += "\n" + section_heading(PROVENANCE_TITLE) + "\n"
        cost = meter.cost(piece)
        if meter.tokens + cost > budget:
            continue
        meter.add(piece, cost)
        shown.add(text)
        chosen.append(item)
        kinds_present.add(item.kind)
        if session and session not in labels:
            labels[session] = len(labels) + 1
    while True:
        text, used = _finalize(query, as_of_label, chosen, budget, counter)
        if used <= budget:
            return chosen, text, used
        chosen.pop()  # chosen is in score order: drop the weakest
