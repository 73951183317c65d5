"""JSON renderings: the documented wire contract (docs/json.md).

Keys listed in cli.md are the stable minimum: add fields, never rename or remove.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: `store -f json` prints an ID without the models
    from ..models import RecallItem, RecallResult, Stats, TimelineItem


def _recall(result: RecallResult) -> dict[str, Any]:
    return {
        "query": result.query,
        "as_of": result.as_of,
        "known_at": result.known_at,
        "budget_tokens": result.budget_tokens,
        "used_tokens": result.used_tokens,
        "tokenizer": result.tokenizer,
        "items": [_recall_item(item) for item in result.items],
    }


def _recall_item(item: RecallItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "short_id": item.short_id,
        "kind": item.kind,
        "content": item.content,
        # A long memory shown by a passage: which characters of content the Markdown
        # showed, and how long the whole is (``show`` gives it). None: shown whole.
        "passage": (
            None
            if item.passage is None
            else {"start": item.passage[0], "end": item.passage[1], "length": len(item.content)}
        ),
        "score": item.score,
        "factors": {
            "relevance": item.relevance,
            "recency": item.recency,
            "frequency": item.frequency,
            "connectivity": item.connectivity,
        },
        "confidence": item.confidence,
        "valid_from": item.valid_from,
        "valid_until": item.valid_until,
        "recorded_at": item.recorded_at,
        "session": item.session_id,
        "via": item.via,
        "rationale": item.rationale,
        "rejected": list(item.rejected),
        "conflicts_with": list(item.conflicts_with),
    }


def _timeline(items: list[TimelineItem]) -> dict[str, Any]:
    return {
        "items": [
            {
                "id": i.id,
                "short_id": i.short_id,
                "kind": i.kind,
                "content": i.content,
                "valid_from": i.valid_from,
                "valid_until": i.valid_until,
                "recorded_at": i.recorded_at,
                "superseded_by": i.superseded_by,
                "conflicts_with": list(i.conflicts_with),
            }
            for i in items
        ]
    }


def _stats(stats: Stats) -> dict[str, Any]:
    from dataclasses import asdict  # here: `recall`/`store -f json` never need it

    return asdict(stats)


def to_document(view: str, payload: Any) -> Any:
    if view == "recall":
        return _recall(payload)
    if view == "timeline":
        return _timeline(payload)
    if view == "stats":
        return _stats(payload)
    if view == "id":
        return {"id": payload}
    if view == "hooks_install":
        return {"hooks": [change._asdict() for change in payload]}
    if view == "ns_list":
        return {"namespaces": [{"name": n.name, "nodes": n.nodes} for n in payload]}
    if view in ("show", "list"):
        from dataclasses import asdict

        return {"nodes" if view == "show" else "items": [asdict(item) for item in payload]}
    from dataclasses import asdict, is_dataclass

    if is_dataclass(payload) and not isinstance(payload, type):
        return asdict(payload)
    return payload


def render(view: str, payload: Any) -> str:
    return json.dumps(to_document(view, payload), ensure_ascii=False) + "\n"


def error_line(code: str, exit_code: int, message: str) -> str:
    return (
        json.dumps(
            {"error": {"code": code, "exit_code": exit_code, "message": message}},
            ensure_ascii=False,
        )
        + "\n"
    )
