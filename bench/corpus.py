"""What a recall-quality data set is made of: memories grouped in sessions, and the
questions asked of them with the texts their answers must contain. Shared by the
quality entry point (quality.py) and the data sets it builds (LoCoMo there, the
generated agent set in agentset.py), which each import it and never each other."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Memory:
    """One node to store. ``key`` names it for supersedes / caused_by references."""

    key: str
    kind: str
    content: str
    valid_from: str
    entities: tuple[str, ...] = ()
    supersedes: str | None = None
    caused_by: tuple[str, ...] = ()
    confidence: float = 1.0
    rationale: str | None = None  # decisions only
    rejected: tuple[str, ...] = ()  # decisions only


@dataclass
class Session:
    title: str
    memories: list[Memory]
    # When the agent recorded it (moves the store's clock); None: at ingest time.
    recorded_from: str | None = None


@dataclass
class Question:
    text: str
    category: str
    expected: tuple[str, ...]  # texts that should appear in the recall
    forbidden: tuple[str, ...] = ()  # texts that must not (superseded versions)
    any_of: bool = False  # one expected text is the whole answer (near-duplicates)
    # 0: an expected text counts only whole. N: one longer than N characters also counts
    # when a contiguous excerpt of N characters or more of it is present (BEAM's long
    # messages, which recall may show by a passage).
    min_excerpt: int = 0


@dataclass
class Corpus:
    """What one store holds, and the questions asked of it."""

    name: str
    sessions: list[Session]
    questions: list[Question]
    loose: list[Memory] = field(default_factory=list)  # stored outside any session
