"""Event files made by hand for the hostile-input tests: valid events of the documented
format (docs/team-memory.md) with consistent IDs and times, and a writer that puts any
text where a clone's events folder holds its files."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nervamem.timeparse import format_time

BASE = datetime(2026, 7, 3, 12, 0, tzinfo=timezone.utc)


def stamp(ms: int) -> str:
    """The stored time of ``ms`` milliseconds since the epoch."""
    return format_time(datetime.fromtimestamp(ms / 1000, tz=timezone.utc))


def base_ms(offset_ms: int = 0) -> int:
    return int(BASE.timestamp() * 1000) + offset_ms


def event_id(ms: int, serial: int) -> str:
    return f"ev_{ms:013x}{serial:016x}"


def node_id(kind_prefix: str, ms: int, serial: int) -> str:
    return f"{kind_prefix}_{ms:013x}{serial:016x}"


def node_change(node: str, at: str, content: str, **fields: Any) -> dict[str, Any]:
    change: dict[str, Any] = {
        "type": "node",
        "id": node,
        "kind": "fact",
        "content": content,
        "namespace": "default",
        "valid_from": at,
        "recorded_at": at,
        "confidence": 1.0,
        "data": {},
    }
    change.update(fields)
    return change


def event(ms: int, serial: int, changes: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "changes": changes,
        "format": 1,
        "id": event_id(ms, serial),
        "recorded_at": stamp(ms),
    }
    document.update(fields)
    return document


def fact_event(serial: int, content: str, **fields: Any) -> dict[str, Any]:
    """One valid event storing one fact, ``serial`` seconds after BASE."""
    ms = base_ms(serial * 1000)
    node = node_change(node_id("f", ms, serial), stamp(ms), content, **fields)
    return event(ms, serial, [node])


def write(events_folder: Path, document: dict[str, Any] | str, *, where: str | None = None) -> Path:
    """An event file where sync looks for it (``where``: another ``YYYY/MM/name``)."""
    text = document if isinstance(document, str) else json.dumps(document)
    if where is None:
        assert isinstance(document, dict)
        at = document["recorded_at"]
        where = f"{at[:4]}/{at[5:7]}/{document['id']}.json"
    path = events_folder / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
