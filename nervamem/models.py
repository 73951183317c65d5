"""Plain, frozen value objects returned by the core. They know nothing of storage."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The kinds live in kinds.py (cheap to import); they are re-exported here. Every class
# has a docstring: without one, @dataclass builds one from inspect.signature (~0.2 ms).
from .kinds import EDGE_KINDS as EDGE_KINDS
from .kinds import NODE_KINDS as NODE_KINDS
from .kinds import STORABLE_KINDS as STORABLE_KINDS


@dataclass(frozen=True)
class Node:
    """A stored node, every column (``get``)."""

    id: str
    kind: str
    content: str
    namespace: str
    valid_from: str
    valid_until: str | None
    recorded_at: str
    confidence: float
    tombstoned: bool
    access_count: int
    last_accessed: str | None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RecallItem:
    """One recalled node with its score and the four factors of it."""

    id: str
    short_id: str
    kind: str
    content: str
    score: float
    relevance: float
    recency: float
    frequency: float
    connectivity: float
    confidence: float
    valid_from: str
    valid_until: str | None
    recorded_at: str
    session_id: str | None
    session_short_id: str | None
    via: str  # "search" or "expansion"


@dataclass(frozen=True)
class RecallResult:
    """What ``recall`` returns: the chosen items and their Markdown rendering."""

    query: str
    as_of: str | None
    budget_tokens: int
    used_tokens: int
    items: tuple[RecallItem, ...]
    markdown: str
    tokenizer: str


@dataclass(frozen=True)
class TimelineItem:
    """One version in a ``timeline``, with what superseded it."""

    id: str
    short_id: str
    kind: str
    content: str
    valid_from: str
    valid_until: str | None
    recorded_at: str
    superseded_by: str | None
    superseded_by_short: str | None


@dataclass(frozen=True)
class ForgetResult:
    """What ``forget`` did."""

    id: str
    purged: bool


@dataclass(frozen=True)
class NamespaceInfo:
    """A namespace and how many live nodes it holds."""

    name: str
    nodes: int


@dataclass(frozen=True)
class CurrentContext:
    """The namespace and session in use."""

    namespace: str
    session: str | None


@dataclass(frozen=True)
class Stats:
    """Counts of a namespace and the size of the store file."""

    namespace: str
    nodes: dict[str, int]
    edges: dict[str, int]
    tombstoned: int
    superseded: int
    pending_consolidation: int
    db_path: str
    db_bytes: int


@dataclass(frozen=True)
class InitResult:
    """Where ``init`` put the store, and whether it created it."""

    db_path: str
    created: bool
