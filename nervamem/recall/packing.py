"""Budget packing and the Markdown layout of a recall.

Invariant (never break it): the text returned by :func:`pack` measures at most
``budget`` tokens under the given counter. Items are chosen greedily by score; each one
is charged what it adds to the text: its line, the line of its group (session and date)
if it opens one, and the headings it brings (the first item of a second kind brings
both kinds' headings). concepts.md keeps a fixed 10 % of the budget for a footer; this
layout has none: provenance is in the group lines. An item that does not fit is skipped
and smaller ones after it may still fit. A memory whose content repeats, word for word,
one already chosen is shown once (the best-scoring copy). The final text is then
measured exactly and the lowest-scoring items are dropped until it fits. A budget that
cannot hold even the empty header is refused, never exceeded.

Layout (docs/recall.md)::

    ## Memory recall: "why JWT for auth" (as of 2026-07-03 · 3 items · 91/500 tokens)

    ### Decisions

    s-9e37 2026-06-01
    - d-78dd c0.9 Chose JWT over session cookies · why: mobile clients

    ### Facts

    s-9e37 2026-07-03
    - f-1715 auth_service issues 15-minute access tokens

The header is short below FULL_HEADER_BUDGET tokens (``## Recall as of 2026-07-03 ·
91/200 tokens``) and names the kind when only one kind is shown (``## Facts ...``), in
which case there are no section headings. Within a section, the items that share a
session and a ``valid_from`` date are listed under one group line naming both (date
alone without a session), groups in the order of their best item. Item line:
``- <short id>[ c<confidence>][ until <date>] <content>[ · why: ...][ · rejected: ...]``,
confidence with as few decimals as it needs and left out when it is full (1.0, the
default), ``until`` only for a memory whose validity has an end. The content is on one
line, its control characters escaped (``\\x1b``, nervamem/visible.py) before it is
measured. Every character here is paid for by every item: at a 200-token budget the
layout decides whether a third or fourth memory fits (bench/quality.py measures it).

Why recall's Markdown is built here and not in render/markdown.py: the budget is a
property of the exact text, so what chooses the items must measure the very characters
that are printed, piece by piece while it packs and whole at the end. The layout
functions below are the only place that text is spelled, and :func:`pack` charges each
item the pieces they return. The Markdown renderer prints ``RecallResult.markdown`` as
built (its escaping finds nothing left to escape; the table renderer shows it through
Rich); spelling the lines in render/ would make recall import a renderer, or let two
copies of the layout drift apart while the budget measured only one of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Protocol, cast

from ..errors import BadInputError
from ..visible import one_line
from .passages import best_passage, passage_chars, query_stems
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
# The header's title when the recall shows no kind or several (then sections name them).
MIXED_TITLE = "Memory recall"
SHORT_MIXED_TITLE = "Recall"
# From this budget on the header echoes the query and counts the items; below it the
# header is "## <title> as of <date> · <used>/<budget> tokens": at 200 tokens the full
# header cost ~19 tokens, a tenth of the budget.
FULL_HEADER_BUDGET = 500
# The header echoes the query's first characters only: the caller knows its query, and at
# a 200-token budget each 16 characters of echo are 2 % of the room for memories. On the
# LoCoMo split at 200 tokens: 24 characters 0.630, 16 and 12 both 0.634 (bench/quality.py).
HEADER_QUERY_CHARS = 16
# The fewest characters an item's piece adds besides its content: "- " + a short ID (at
# least "f-" and 4 hex digits) + " " + "\n" (no confidence label when it is 1.0, no
# group line when its group is listed already).
MIN_PIECE_CHARS = 2 + 6 + 1 + 1
# How much longer the header's title can grow than the empty recall's ("Recall" under
# FULL_HEADER_BUDGET, "Memory recall" from it, longer than any kind's title): charged up
# front, as the title changes with the kinds shown.
TITLE_SLACK = max(len(t) for _, t in SECTIONS) - len(SHORT_MIXED_TITLE)


class Draft(Protocol):
    """What packing reads of a ranked memory before it needs the whole item."""

    @property
    def content(self) -> str: ...


# ---------------------------------------------------------------------------- layout
def header_line(
    query: str, as_of_label: str, count: int, used: int, budget: int, kinds: Sequence[str]
) -> str:
    """The first line. ``kinds``: the kinds shown; one kind names the header."""
    full = budget >= FULL_HEADER_BUDGET
    if len(kinds) == 1:
        title = SECTION_TITLE[kinds[0]]
    else:
        title = MIXED_TITLE if full else SHORT_MIXED_TITLE
    if not full:
        return f"## {title} as of {as_of_label} · {used}/{budget} tokens"
    return (
        f'## {title}: "{header_query(query)}" (as of {as_of_label} · '
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


def group_key(item: RecallItem) -> str | None:
    """The group line of an item: its session's short ID and its valid_from date. None
    for what was stored outside a session (sessions and entities too): its line carries
    its date."""
    if not item.session_short_id:
        return None
    return f"{item.session_short_id} {item.valid_from[:10]}"


def item_line(item: RecallItem, *, why: bool = True) -> str:
    # Full confidence (the default) goes without a label: it says nothing that the
    # absence of a label does not, and would cost every item of a recall ~1.5 tokens.
    conf = "" if item.confidence >= 1.0 else " " + confidence_label(item.confidence)
    # A memory shown although its validity ends (--as-of before a later version, or a
    # version superseded from a later date) says until when: never taken for current.
    until = f" until {item.valid_until[:10]}" if item.valid_until else ""
    date = "" if item.session_short_id else " " + item.valid_from[:10]
    # A conflict (two current successors of one node, merged from two branches of a
    # shared store) is said on the line: an agent must not take either as settled.
    rivals = (
        " (conflicts with " + ", ".join(item.conflicts_with_short) + ")"
        if item.conflicts_with_short
        else ""
    )
    line = f"- {item.short_id}{date}{conf}{until} {shown_text(item)}{rivals}"
    return line + reasons(item) if why else line


def shown_text(item: RecallItem) -> str:
    """The content as the line shows it: whole, or its passage with ``…`` where it is cut."""
    if item.passage is None:
        return one_line(item.content)
    start, end = item.passage
    head = "…" if item.content[:start].strip() else ""
    tail = "…" if item.content[end:].strip() else ""
    return head + one_line(item.content[start:end]) + tail


def reasons(item: RecallItem) -> str:
    """A decision's rationale and rejected alternatives, as the end of its line:
    `` · why: <rationale> · rejected: <a>; <b>`` (each part only when stored)."""
    text = f" · why: {one_line(item.rationale)}" if item.rationale else ""
    if item.rejected:
        text += " · rejected: " + "; ".join(one_line(r) for r in item.rejected)
    return text


def kinds_of(items: Sequence[RecallItem]) -> list[str]:
    present = {item.kind for item in items}
    return [kind for kind, _ in SECTIONS if kind in present]


def render(
    query: str,
    as_of_label: str,
    items: Sequence[RecallItem],
    used: int,
    budget: int,
    terse: frozenset[str] | set[str] = frozenset(),
) -> str:
    """The recall's Markdown; items whose ID is in ``terse`` are shown without their
    reasons (the budget held the decision, not its rationale)."""
    kinds = kinds_of(items)
    header = header_line(query, as_of_label, len(items), used, budget, kinds)
    return header + _body(items, kinds, terse)


def _body(items: Sequence[RecallItem], kinds: Sequence[str], terse: Collection[str]) -> str:
    """The text under the header line, from the newline that ends it."""
    lines = [""]  # the header's end
    for kind in kinds:
        if len(kinds) > 1:
            lines += ["", section_heading(SECTION_TITLE[kind])]
        # Lines of memories without a session first, then each group under its line.
        groups: dict[str | None, list[str]] = {None: []}
        for item in items:
            if item.kind == kind:
                line = item_line(item, why=item.id not in terse)
                groups.setdefault(group_key(item), []).append(line)
        lines += groups.pop(None)
        for key, members in groups.items():
            if lines[-1].startswith("- "):
                lines.append("")  # else the group line would continue the list item
            lines += [key or "", *members]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- packing
def _finalize(
    query: str,
    as_of_label: str,
    items: Sequence[RecallItem],
    budget: int,
    counter: TokenCounter,
    terse: set[str] | None = None,
) -> tuple[str, int]:
    """Render with a header whose used/budget figure matches the text it heads: the
    body once, the header until its figure is the count of the whole."""
    kinds = kinds_of(items)
    body = _body(items, kinds, terse or set())
    used = 0
    text = header_line(query, as_of_label, len(items), used, budget, kinds) + body
    for _ in range(5):
        measured = counter.count(text)
        if measured == used:
            break
        used = measured
        text = header_line(query, as_of_label, len(items), used, budget, kinds) + body
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
    complete: Callable[[int, tuple[int, int] | None], RecallItem] | None = None,
) -> tuple[list[RecallItem], str, int]:
    """Choose items (highest score first) and render them within ``budget`` tokens.

    ``ranked`` holds RecallItems, or, with ``complete``, drafts: ``complete(i, passage)``
    returns the whole item of ``ranked[i]``, shown by ``passage`` of its content when
    that is long (recall/passages.py). It is called only for a draft whose content is
    new and could still fit, so short IDs and sessions are looked up only for those; the
    choice is the same as with every item complete."""
    empty_text, empty_used = _finalize(query, as_of_label, [], budget, counter)
    if empty_used > budget:
        raise BadInputError(
            f"--budget {budget} is too small: the recall header alone needs {empty_used} tokens"
        )
    # The header grows once items are in: a longer item count, a longer used figure,
    # "items" for "item", and a kind's title for the mixed one. Charge that up front.
    header_growth = " " * (len(str(len(ranked))) + len(str(budget)) + 1 + TITLE_SLACK)
    meter = _Meter(counter, empty_text + header_growth)
    chosen: list[RecallItem] = []
    kinds_present: list[str] = []
    groups: set[tuple[str, str | None]] = set()
    shown: set[str] = set()
    terse: set[str] = set()  # decisions shown without their reasons
    floor = meter.least_cost(MIN_PIECE_CHARS)
    stems = query_stems(query)
    size = passage_chars(budget)
    for index, draft in enumerate(ranked):
        if floor is not None and meter.tokens + floor > budget:
            break  # not even the shortest item fits: every one below would be skipped
        passage = None if size is None else best_passage(draft.content, stems, size)
        if passage is None:
            flat = one_line(draft.content)
        else:
            flat = one_line(draft.content[passage[0] : passage[1]]) + "……"
        least = meter.least_cost(len(flat) + MIN_PIECE_CHARS)
        if least is not None and meter.tokens + least > budget:
            continue  # cannot fit, whatever its ID, date and footnote
        text = flat.lower()
        if text in shown:
            continue  # the same words again (a note repeated across sessions): shown once
        if complete:
            item = complete(index, passage)
        else:
            item = cast("RecallItem", draft)
            if passage is not None:
                from dataclasses import replace  # only here: recall itself passes complete

                item = replace(item, passage=passage)
        key = group_key(item)
        extra = ""
        if item.kind not in kinds_present:
            # The second kind brings both headings; later ones their own.
            for kind in kinds_present[:1] if len(kinds_present) == 1 else []:
                extra += "\n" + section_heading(SECTION_TITLE[kind]) + "\n"
            if kinds_present:
                extra += "\n" + section_heading(SECTION_TITLE[item.kind]) + "\n"
        if key and (item.kind, key) not in groups:
            extra += "\n" + key + "\n"  # at most: no blank line right after a heading
        # A decision with its reasons if they fit, else without them.
        piece = item_line(item) + "\n" + extra
        cost = meter.cost(piece)
        if meter.tokens + cost > budget and reasons(item):
            piece = item_line(item, why=False) + "\n" + extra
            cost = meter.cost(piece)
            terse.add(item.id)
        if meter.tokens + cost > budget:
            terse.discard(item.id)
            continue
        meter.add(piece, cost)
        floor = meter.least_cost(MIN_PIECE_CHARS)
        shown.add(text)
        chosen.append(item)
        if item.kind not in kinds_present:
            kinds_present.append(item.kind)
        groups.add((item.kind, key))
    while True:
        text, used = _finalize(query, as_of_label, chosen, budget, counter, terse)
        if used <= budget:
            return chosen, text, used
        chosen.pop()  # chosen is in score order: drop the weakest
