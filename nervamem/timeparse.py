"""Times are stored as fixed-width UTC strings so that SQL compares them as text.

Format: ``YYYY-MM-DDTHH:MM:SS.mmmZ``. Input is ISO-8601 date or date-time; a value
without a zone is UTC. A date alone is its first instant (midnight UTC), except where a
moment stands for "as of that day" (``recall --as-of``, ``list --until``): there it is
the last millisecond of the day, so "as of today" includes what was stored today.
"""

from __future__ import annotations

from datetime import datetime, timezone

from .errors import BadInputError

STORED_FORMAT = "%Y-%m-%dT%H:%M:%S.%f"


def format_time(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    moment = moment.astimezone(timezone.utc)
    # isoformat, not strftime: glibc's %Y drops the zero padding before year 1000, and
    # "999-..." would then sort after "2026-..." and break every text comparison.
    return moment.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


def parse_time(text: str, *, option: str = "time", end_of_day: bool = False) -> str:
    """Parse user input into the stored form, or raise BadInputError. With
    ``end_of_day``, a date alone (``2026-12-03``) means 23:59:59.999 UTC of that day."""
    raw = text.strip()
    if not raw or len(raw) > 64:
        raise BadInputError(f"{option}: {text[:40]!r} is not an ISO-8601 date or date-time")
    candidate = raw[:-1] + "+00:00" if raw.endswith(("Z", "z")) else raw
    try:
        moment = datetime.fromisoformat(candidate)
    except ValueError:
        raise BadInputError(
            f"{option}: {text[:40]!r} is not an ISO-8601 date or date-time "
            "(e.g. 2026-03-15 or 2026-03-15T09:30:00Z)"
        ) from None
    if end_of_day and not set(raw) & set("Tt :"):  # a date alone: no time part
        moment = moment.replace(hour=23, minute=59, second=59, microsecond=999_000)
    try:
        # A zone offset can push 0001-01-01 or 9999-12-31 outside datetime's range.
        return format_time(moment)
    except OverflowError:
        raise BadInputError(f"{option}: {text[:40]!r} is out of range") from None


def to_datetime(stored: str) -> datetime:
    # fromisoformat reads the stored form ~20x faster than strptime (recall parses one
    # time per candidate) and does not import _strptime, calendar and locale.
    return datetime.fromisoformat(stored[:-1]).replace(tzinfo=timezone.utc)


def date_part(stored: str | None) -> str:
    return stored[:10] if stored else ""
