"""The node and edge kinds. Kept apart from models.py so that code needing only the
names (argument checks, the CLI's completions) does not build the dataclasses of
models.py, which costs several milliseconds of every command's start-up."""

from __future__ import annotations

STORABLE_KINDS = ("fact", "decision", "action", "outcome", "entity", "procedure", "preference")
NODE_KINDS = ("session", *STORABLE_KINDS)
EDGE_KINDS = (
    "ABOUT",
    "OCCURRED_IN",
    "SUPERSEDES",
    "CONTRADICTS",
    "CAUSED",
    "DERIVED_FROM",
    "TOUCHES",
)
