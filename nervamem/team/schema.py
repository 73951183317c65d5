"""The one schema of a shared store's events (format 1, docs/team-memory.md), and the
validator every reader of events runs before it applies anything of one.

An event comes from a file anyone may have committed, or a line of an export: it is
hostile input. :func:`parse_event` checks all of it, field by field, against
:data:`CHANGE_FIELDS` (the fields of each change type, described once as data) and
returns it, or raises :class:`EventError` naming the first problem. What it accepts,
every command can apply, export and show again: no internal error can come from an
event later (review of issue 35: a time of the right shape but no real date, or a
confidence of 10**400, was accepted and broke ``export``, ``init --shared``, ``list``
or the whole import for good).

Invariants a change here must keep:

* nothing of an event is applied before all of it is checked (sharing.import_events);
* a time is a real instant in the stored form (timeparse), and a time that becomes an
  event ID when the store is exported (an event's, a node's ``recorded_at``, an edge's
  ``created_at``) lies in the range event IDs hold (from 1970 on);
* every number is finite and every text is Unicode without NUL, as ``store`` requires;
* a month folder is named for a real month, or it is skipped, never read
  (:func:`is_month_folder`).

Fields that the schema does not name are ignored (a later minor version may add
some); a ``format`` other than :data:`FORMAT` is refused whole.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..ids import ID_PATTERN, KIND_PREFIX
from ..kinds import EDGE_KINDS, NODE_KINDS
from ..storage.event_log import CHANGE_TYPES, EVENT_ID, FORMAT

if TYPE_CHECKING:
    from pathlib import Path


class EventError(ValueError):
    """An event file or line that is not a valid event of a known format."""


# The first instant an event ID can spell (13 hex digits of milliseconds since the
# epoch: a time before 1970 gave "ev_-..." to its exported event, refused by import).
FIRST_EVENT_TIME = "1970-01-01T00:00:00.000Z"
# Deeper JSON than nervamem ever writes (~4 levels) is refused: a reader that walks it
# (the text checks here, SQLite's json functions limited to 1000 levels) must not fail.
MAX_DEPTH = 64
# A month folder's years: event IDs start in 1970; datetime ends with 9999.
FIRST_YEAR, LAST_YEAR = 1970, 9999


# ------------------------------------------------------------------------ values


def is_time(value: Any) -> bool:
    """A real instant in the stored form ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (timeparse), not
    only its shape: ``2026-13-45T00:44:19.748Z`` is not one."""
    if not (isinstance(value, str) and len(value) == 24 and value[19] == "." and value[-1] == "Z"):
        return False
    from datetime import datetime

    from ..timeparse import format_time

    try:
        moment = datetime.fromisoformat(value[:-1])
    except ValueError:
        return False
    return format_time(moment) == value  # the one spelling: no other form passes


def is_event_time(value: Any) -> bool:
    """A time that can become an event ID (:data:`FIRST_EVENT_TIME` or later)."""
    return is_time(value) and value >= FIRST_EVENT_TIME


# fullmatch, not the patterns' own ^...$: "$" also matches before a final newline, and
# "f_...\n" became a node (or an event file) whose name has a line break in it.
def is_node_id(value: Any) -> bool:
    return isinstance(value, str) and bool(ID_PATTERN.fullmatch(value))


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _is_namespace(value: Any) -> bool:
    from ..state import namespace_pattern

    return isinstance(value, str) and bool(namespace_pattern().fullmatch(value))


def _is_confidence(value: Any) -> bool:
    # Compared as it is: float() of an integer of 400 digits raised OverflowError and
    # stopped the whole import.
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0 <= value <= 1


def _is_object(value: Any) -> bool:
    return isinstance(value, dict)


def _is_entity_id(value: Any) -> bool:
    return is_node_id(value) and value.startswith(KIND_PREFIX["entity"] + "_")


# ------------------------------------------------------------------------ the schema


class Field:
    """One field of a change: its name, whether it must be there, and what it holds
    (``check``, described by ``what`` in the message that refuses it)."""

    __slots__ = ("name", "required", "check", "what")

    def __init__(
        self, name: str, check: Callable[[Any], bool], what: str, *, required: bool = True
    ) -> None:
        self.name = name
        self.check = check
        self.what = what
        self.required = required


_TIME = "a time (YYYY-MM-DDTHH:MM:SS.mmmZ, a real date)"
_EVENT_TIME = f"a time from 1970 on ({_TIME[8:-1]})"

CHANGE_FIELDS: dict[str, tuple[Field, ...]] = {
    "node": (
        Field("id", is_node_id, "a node ID"),
        Field("kind", lambda v: v in NODE_KINDS, f"one of {', '.join(NODE_KINDS)}"),
        Field("content", _is_text, "text"),
        Field("namespace", _is_namespace, "a namespace (1-64 letters, digits, '.', '_', '-')"),
        Field("valid_from", is_time, _TIME),
        Field("recorded_at", is_event_time, _EVENT_TIME),
        Field("valid_until", is_time, _TIME, required=False),
        Field("confidence", _is_confidence, "a number from 0 to 1"),
        Field("data", _is_object, "an object"),
    ),
    "edge": (
        Field("src", is_node_id, "a node ID"),
        Field("dst", is_node_id, "a node ID"),
        Field("kind", lambda v: v in EDGE_KINDS, f"one of {', '.join(EDGE_KINDS)}"),
        Field("created_at", is_event_time, _EVENT_TIME),
        Field("data", _is_object, "an object", required=False),
    ),
    "alias": (
        Field("namespace", _is_namespace, "a namespace (1-64 letters, digits, '.', '_', '-')"),
        Field("alias", _is_text, "text"),
        Field("entity_id", _is_entity_id, "an entity's ID"),
    ),
    "tombstone": (Field("id", is_node_id, "a node ID"),),
    "purge": (Field("id", is_node_id, "a node ID"),),
    "data": (
        Field("id", is_node_id, "a node ID"),
        Field("set", _is_object, "an object"),
    ),
}
assert sorted(CHANGE_FIELDS) == sorted(CHANGE_TYPES)


# ------------------------------------------------------------------------ validating


def parse_event(text: str, *, file: str | None = None) -> dict[str, Any]:
    """An event from its JSON text, checked whole; EventError says what is wrong.
    ``file``: the place (``YYYY/MM/<name>.json``) of the event file it was read from."""
    try:
        event = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except (ValueError, RecursionError) as exc:
        raise EventError(f"not JSON ({str(exc)[:80]})") from None
    problem = event_problem(event)
    if problem is None and file is not None:
        problem = _place_problem(event, file)
    if problem:
        raise EventError(problem)
    return event  # type: ignore[no-any-return]


def _place_problem(event: dict[str, Any], file: str) -> str | None:
    """An event file is named for its event and filed under its month (event_log's
    event_path): sync knows which events it holds by the names in each month's
    folder, so a copy under another name, or in another month, looked like an event
    gone from its place, and the cache was made again at every change to that month."""
    at = event["recorded_at"]
    expected = f"{at[:4]}/{at[5:7]}/{event['id']}.json"
    if file != expected:
        return f"not where its event belongs ({expected})"
    return None


def event_problem(event: Any) -> str | None:
    """The first thing wrong with a decoded event, or None."""
    if not isinstance(event, dict):
        return "not a JSON object"
    version = event.get("format")
    if type(version) is not int or version != FORMAT:  # not 1.0, not true
        shown = json.dumps(version)[:20]
        return f"unknown format {shown} (this nervamem reads format {FORMAT})"
    event_id = event.get("id")
    if not isinstance(event_id, str) or not EVENT_ID.fullmatch(event_id):
        return "no valid event 'id'"
    if not is_event_time(event.get("recorded_at")):
        return f"no valid 'recorded_at' ({_EVENT_TIME})"
    if "author" in event and not isinstance(event["author"], str):
        return "'author' is not text"
    changes = event.get("changes")
    if not isinstance(changes, list) or not changes:
        return "no 'changes'"
    if _too_deep(event):
        return f"nested more than {MAX_DEPTH} levels deep"
    for index, change in enumerate(changes):
        problem = change_problem(change)
        if problem:
            return f"change {index}: {problem}"
    # The whole event, unknown fields too: an import into a shared store writes it all.
    return _text_problem(event)


def change_problem(change: Any) -> str | None:
    """What is wrong with one change, by :data:`CHANGE_FIELDS`, or None."""
    if not isinstance(change, dict):
        return "not an object"
    kind = change.get("type")
    fields = CHANGE_FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        return f"unknown type {str(kind)[:20]!r}"
    for field in fields:
        if field.name not in change:
            if field.required:
                return f"{kind} without '{field.name}'"
            continue
        value = change[field.name]
        if not field.check(value):
            if kind == "edge" and field.name == "kind" and isinstance(value, str):
                # Checked here: the store's own refusal names an internal table.
                return f"unknown edge kind {value[:20]!r} (valid: {', '.join(EDGE_KINDS)})"
            return f"{kind} without a valid '{field.name}' ({field.what})"
    if kind == "node" and not change["id"].startswith(KIND_PREFIX[change["kind"]] + "_"):
        # A short ID is looked up by the kind its prefix names: such a node could
        # never be found by one.
        prefix = KIND_PREFIX[change["kind"]]
        return f"node whose id does not begin with its kind's prefix ({prefix}_)"
    if kind == "node":
        return _data_problem(change["data"])
    if kind == "data":
        return _data_problem(change["set"])
    return None


# The key of a node's data holding the end its memory was stored with
# (writing_validity.STATED_END, not imported from there: writing is a layer above this one).
STATED_END = "stated_valid_until"


def _data_problem(data: dict[str, Any]) -> str | None:
    """The keys of a node's data that nervamem reads back, in the shape ``store`` writes
    them: a decision's rationale and rejected alternatives (a text, a list of texts),
    which recall and show read as such (another shape, hand-edited or from another
    program, made every recall that met the node an internal error), and the stated end
    its ``valid_until`` is derived from (a time)."""
    if STATED_END in data and not is_time(data[STATED_END]):
        return f"'{STATED_END}' is not {_TIME}"
    if not isinstance(data.get("rationale", ""), (str, type(None))):
        return "'rationale' is not text"
    rejected = data.get("rejected", [])
    if not isinstance(rejected, list) or not all(isinstance(item, str) for item in rejected):
        return "'rejected' is not a list of texts"
    return None


def _no_constant(name: str) -> Any:
    # NaN and Infinity are not JSON (Python's parser accepts them): a store's json
    # functions and PostgreSQL refuse them later, in the middle of another command.
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400
        raise ValueError(f"{text[:20]} is out of range")
    return value


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests more than MAX_DEPTH levels (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return False


def _text_problem(value: Any) -> str | None:
    """What is wrong with the texts of an event, if anything, as ``store`` would refuse
    them too: a NUL character (a PostgreSQL text or jsonb value cannot hold one, so the
    same event would import into an SQLite store and fail the whole import on a server),
    or a lone surrogate (JSON may spell one, ``"\\ud800"``, but it is not Unicode text:
    no store can encode it, and the whole import failed as an internal error)."""
    texts = list(_texts(value))
    if any("\x00" in text for text in texts):
        return "text with a NUL character, which store refuses too"
    for text in texts:
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                return "text with a lone surrogate (not Unicode), which store refuses too"
    return None


def _texts(value: Any) -> Iterator[str]:
    """Every text in a JSON value, keys included (no deeper than :func:`_too_deep`
    let through, so the recursion is bounded)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


# ------------------------------------------------------------------------ folders


def is_month_folder(year: str, month: str) -> bool:
    """Whether ``events/<year>/<month>`` names a real month an event can be of: two
    digits 01-12, a year from 1970 to 9999. Any other (``2026/13``, ``0000/00``) is
    skipped: building its range of event IDs raised ValueError on every clone."""
    return (
        len(year) == 4
        and year.isascii()
        and year.isdigit()
        and FIRST_YEAR <= int(year) <= LAST_YEAR
        and len(month) == 2
        and month.isascii()
        and month.isdigit()
        and 1 <= int(month) <= 12
    )


def scan_months(folder: Path) -> tuple[list[str], list[str]]:
    """The month folders (``YYYY/MM``) under an events folder, sorted, and the stray
    ones: named with digits as a month is, but no real month (:func:`is_month_folder`),
    which a reader reports and skips. Other names (README.md) are not events' places."""
    months: list[str] = []
    strays: list[str] = []
    if not folder.is_dir():
        return months, strays
    for year in os.scandir(folder):
        if not (year.is_dir() and len(year.name) == 4 and year.name.isdigit()):
            continue
        for month in os.scandir(year.path):
            if month.is_dir() and len(month.name) == 2 and month.name.isdigit():
                name = f"{year.name}/{month.name}"
                (months if is_month_folder(year.name, month.name) else strays).append(name)
    return sorted(months), sorted(strays)


STRAY_FOLDER = (
    f"not a month's folder (YYYY/MM: a year {FIRST_YEAR}-{LAST_YEAR}, a month 01-12): "
    "its files are skipped"
)


# Days of each month of a common year; February of a leap year has 29.
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def month_id_range(month: str) -> tuple[str, str]:
    """The event IDs of a month folder (``YYYY/MM``, :func:`is_month_folder`): from
    its first millisecond to the next month's, which event IDs begin with. Counted in
    days, so that December 9999 has an end (datetime has no year 10000)."""
    from datetime import datetime, timezone

    year, number = int(month[:4]), int(month[5:7])
    start = datetime(year, number, 1, tzinfo=timezone.utc)
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = _MONTH_DAYS[number - 1] + (1 if number == 2 and leap else 0)
    low = int(start.timestamp()) * 1000
    high = low + days * 86_400_000
    return f"ev_{low:013x}", f"ev_{high:013x}"
