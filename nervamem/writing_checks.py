"""The checks of a memory's input that need no write in progress: its kind, texts and
confidence (checked_memory, check_text) and the times given for its validity
(valid_from_text).

Separate from writing.py's bulk writer, which makes them for every memory it stores,
because other code makes them without writing: ``store``'s plain CLI path checks a new
memory before creating a missing store (cli/direct.py), and sessions check a title.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .errors import BadInputError
from .kinds import STORABLE_KINDS
from .timeparse import format_time, parse_time

if TYPE_CHECKING:
    from .storage.engine import Storage


def valid_from_text(
    storage: Storage, value: str | datetime | None, *, option: str = "--valid-from"
) -> str:
    if value is None:
        return storage.now()
    if isinstance(value, datetime):
        return format_time(value)
    return parse_time(value, option=option)


def checked_memory(
    kind: str,
    content: str,
    confidence: float,
    rationale: str | None,
    rejected: Sequence[str],
    entities: Sequence[str],
) -> dict[str, Any]:
    """The checks every stored memory passes (store and store_many); returns its data."""
    if kind not in STORABLE_KINDS:
        raise BadInputError(f"unknown kind {kind[:40]!r}: use one of {', '.join(STORABLE_KINDS)}")
    check_text(content, "content")
    if not content.strip():
        raise BadInputError("content cannot be empty")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        raise BadInputError("confidence must be a number between 0 and 1")
    if math.isnan(confidence) or not 0.0 <= confidence <= 1.0:
        raise BadInputError(f"confidence {confidence} is outside [0, 1]")
    if (rationale or rejected) and kind != "decision":
        raise BadInputError("--rationale and --rejected apply to decisions only")
    for text in (rationale or "", *rejected, *entities):
        check_text(text, "option value")
    data: dict[str, Any] = {}
    if rationale:
        data["rationale"] = rationale
    if rejected:
        data["rejected"] = list(rejected)
    return data


def check_text(text: str, what: str) -> None:
    if "\x00" in text:
        raise BadInputError(f"{what} contains a NUL byte")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInputError(f"{what} is not valid UTF-8 text") from None
