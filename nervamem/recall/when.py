"""A question that asks for a time is answered by a memory that says when.

"When did she go to the support group?" holds the words of the memory that answers it
("I went to a support group yesterday") and of every other memory about the group; what
tells the answer apart is that it places the event in time: "yesterday", "last week",
"two years ago", "next month", a weekday, a month, a year. The memory's own date
(valid_from, shown on its group line) then turns that into a date. So when the query
asks for a time (:func:`asks_for_time`), every candidate whose text holds a time
expression (:func:`says_when`) is weighed 1 + TIME_WEIGHT (:func:`favour_times`, after
expansion, with or without hops, like the question damping of recall/questions.py).

English time words only, no speaker, dialogue or dataset knowledge. "when" counts only
as a question word, followed by an auxiliary ("when did", "when was", "since when has"):
"what happened when we rotated the key" asks what, not when. A date the query names
("on 13 October 2023") is another rule (recall/relevance.py, date_spans): it raises the
memories valid then, whatever they say.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from .candidates import Candidate

TIME_WEIGHT = 1.0

_AUXILIARIES = "did|do|does|was|were|is|are|will|would|has|have|had|can|could|should"
_UNITS = "minute|hour|day|night|week|weekend|month|year|summer|winter|spring|fall|autumn"
_COUNTS = (
    r"last|next|this|past|coming|previous|few|couple of|several|\d+|a|one|two|three|four"
    r"|five|six|seven|eight|nine|ten"
)
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"


@functools.cache
def _asking() -> re.Pattern[str]:
    """The pattern of a query that asks for a time, compiled on first use."""
    return re.compile(
        rf"\b(?:when (?:{_AUXILIARIES})|how long|what (?:date|day|year|month|time|week)"
        r"|which (?:date|day|year|month|week)|how many (?:days|weeks|months|years))\b",
        re.IGNORECASE,
    )


@functools.cache
def _saying() -> re.Pattern[str]:
    """The pattern of a text that says when, compiled on first use: only a query that asks
    for a time needs it (~6M instructions to compile, ~2 ms of a fresh recall)."""
    return re.compile(
        r"\b(?:yesterday|today|tonight|tomorrow|recently|ago|since"
        rf"|(?:{_COUNTS}) (?:{_UNITS})s?|(?:{_WEEKDAYS})s?|{_MONTHS}|(?:19|20)\d\d)\b",
        re.IGNORECASE,
    )


def asks_for_time(query: str) -> bool:
    """Whether the query asks when something happened or how long it took."""
    # Every phrase of _asking() starts with "wh" or "ho", and no character but W, H and O
    # of either case matches those letters case-insensitively: a query without either
    # pair (most) cannot match, and is answered without compiling the pattern.
    lowered = query.lower()
    if "wh" not in lowered and "ho" not in lowered:
        return False
    return _asking().search(query) is not None


def says_when(text: str) -> bool:
    """Whether a memory's text places something in time (a relative time, a weekday, a
    month or a year)."""
    return _saying().search(text) is not None


def favour_times(candidates: Iterable[Candidate], query: str) -> None:
    """Weigh the candidates that say when 1 + TIME_WEIGHT, if the query asks when."""
    if not asks_for_time(query):
        return
    for candidate in candidates:
        if says_when(candidate.content):
            candidate.relevance *= 1.0 + TIME_WEIGHT
