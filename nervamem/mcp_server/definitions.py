"""The MCP tools as a model sees them: their names, titles, descriptions, the JSON Schema
of their arguments and their hints, and the guide the server gives as its instructions.
What a call does is in tools.py; server.py hands both to the SDK."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..kinds import NODE_KINDS
from ..memory_fields import DEFAULTS, FIELDS, NAMESPACE_SCHEMA, TIME
from ..memory_fields import string_schema as _string
from ..memory_fields import strings_schema as _strings

GUIDE = """\
nervamem is your long-term memory: a bi-temporal graph of decisions, facts, actions and \
outcomes in one SQLite file, shared with the people and agents who use the same store \
(they reach it with the `nervamem` command line).

How to use it well:
- Before you start a task, call memory_recall with what the task is about, and \
memory_start_session with a short title for the task.
- Store what a later session would need and could not easily find in the code or the \
history: a decision (with its rationale and the alternatives rejected), a fact learnt, an \
action taken and its outcome, a procedure that worked, a preference of the user. One \
memory per idea, a sentence that makes sense on its own; name the entities it is about \
(components, files, functions, people) so that it is found by them and anchored to the \
code.
- When something stored is no longer true, store the new truth with supersedes=<old ID>: \
recall then shows the new one, and memory_timeline keeps the history. Superseding beats \
forgetting; forget only what should never have been stored, and purge only secrets or \
personal data.
- Before you rely on a memory about code, memory_for_code and memory_verify_staleness say \
whether the code under it changed.
- When the task is done, call memory_end_session with a summary.
"""


class Hints(NamedTuple):
    """What a client may show or ask before a call (MCP tool annotations)."""

    read_only: bool
    destructive: bool
    idempotent: bool


READS = Hints(read_only=True, destructive=False, idempotent=True)
ADDS = Hints(read_only=False, destructive=False, idempotent=False)
SWITCHES = Hints(read_only=False, destructive=False, idempotent=True)
DESTROYS = Hints(read_only=False, destructive=True, idempotent=True)


class Tool(NamedTuple):
    name: str
    title: str
    description: str
    properties: dict[str, dict[str, Any]]
    required: tuple[str, ...]
    hints: Hints

    @property
    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": self.properties,
            "required": list(self.required),
            "additionalProperties": False,
        }


# ----------------------------------------------------------------------------- parameters
def _integer(description: str, default: int, minimum: int, maximum: int) -> dict[str, Any]:
    return {
        "type": "integer",
        "description": description,
        "default": default,
        "minimum": minimum,
        "maximum": maximum,
    }


def _boolean(description: str) -> dict[str, Any]:
    return {"type": "boolean", "description": description, "default": False}


NAMESPACE = NAMESPACE_SCHEMA
MEMORY_ID = _string(
    "The memory's ID: the full ID, a unique prefix of it, or its short ID as recall shows "
    "it (e.g. d-3a9c)."
)


TOOLS: tuple[Tool, ...] = (
    Tool(
        "memory_store",
        "Store a memory",
        "Store one memory and return its ID. Kinds: 'decision' (a choice made, with "
        "'rationale' and 'rejected' alternatives), 'fact' (something true about the world "
        "or the code), 'action' (something done), 'outcome' (what came of an action; link "
        "it with 'caused_by'), 'procedure' (how to do something), 'preference' (what the "
        "user wants), 'entity' (a thing worth naming). When this replaces an earlier "
        "memory that is no longer true, pass its ID as 'supersedes': the old one stays in "
        "the history with its validity closed, which beats forgetting it. The memory joins "
        "the active session unless 'session' says otherwise. Returns the new ID.",
        {field.name: field.mcp for field in FIELDS if isinstance(field.mcp, dict)},
        tuple(
            field.name
            for field in FIELDS
            if isinstance(field.mcp, dict) and field.name not in DEFAULTS
        ),
        ADDS,
    ),
    Tool(
        "memory_recall",
        "Recall memories",
        "Recall what is relevant to a query, ranked by relevance, recency, use and "
        "connections, as Markdown that never exceeds 'budget_tokens'. Only what is true "
        "now is shown (superseded and forgotten memories are not), unless 'as_of' asks "
        "what was true then. Call it before starting work on anything the memory may "
        "know about. Each item shows its short ID, usable wherever an ID is asked for. The "
        "structured result has every item with its score, validity and IDs.",
        {
            "query": _string("What to remember: words, names, a question."),
            "budget_tokens": _integer("Hard limit on the tokens of the answer.", 500, 1, 1_000_000),
            "as_of": _string(f"Show what was true at this moment instead of now. {TIME}"),
            "known_at": _string(
                "Answer from what had been recorded by this moment: memories, supersessions "
                f"and forgetting recorded later are ignored (what was known then). {TIME}"
            ),
            "kinds": _strings("Only memories of these kinds.", enum=list(NODE_KINDS)),
            "hops": _integer(
                "How far to follow the graph from the memories found (0: not at all).", 2, 0, 5
            ),
            "tokenizer": _string(
                "How tokens are counted: 'char' (4 characters a token) or 'tiktoken'.",
                enum=["char", "tiktoken"],
            ),
            "min_score": {
                "type": "number",
                "description": "Leave out memories scoring below this share of the best one, "
                "even when the budget has room (0: fill the budget).",
                "default": 0.0,
                "minimum": 0,
                "maximum": 1,
            },
            "namespace": NAMESPACE,
        },
        ("query",),
        READS,
    ),
    Tool(
        "memory_timeline",
        "Timeline of a topic",
        "Every version of what matches a query, oldest first, superseded ones marked with "
        "what replaced them: how a decision or fact changed over time. Use it when recall "
        "shows the current truth and you need its history.",
        {
            "query": _string("What to trace."),
            "limit": _integer("At most this many versions (the newest).", 100, 1, 100_000),
            "known_at": _string(
                f"Only what had been recorded by this moment, as it stood then. {TIME}"
            ),
            "namespace": NAMESPACE,
        },
        ("query",),
        READS,
    ),
    Tool(
        "memory_forget",
        "Forget a memory",
        "Forget a memory: it is tombstoned, no longer recalled, but kept on disk. Prefer "
        "storing a replacement with 'supersedes' when something merely stopped being true; "
        "forget what should never have been stored. With purge=true the memory is deleted "
        "for good, leaving no trace in the file: only for secrets or personal data, and "
        "only when the user asked for it; it cannot be undone.",
        {
            "memory_id": MEMORY_ID,
            "purge": _boolean("Delete it for good instead of tombstoning it (irreversible)."),
            "namespace": NAMESPACE,
        },
        ("memory_id",),
        DESTROYS,
    ),
    Tool(
        "memory_start_session",
        "Start a session",
        "Start a session for the task at hand and make it the active one: the memories "
        "stored until it ends are recorded in it, and ending it queues them for "
        "consolidation. Returns the session ID.",
        {
            "title": _string("What the session is about."),
            "namespace": NAMESPACE,
        },
        (),
        ADDS,
    ),
    Tool(
        "memory_end_session",
        "End a session",
        "End the active session (or the one given) when the task is done, with a summary "
        "of what was done, and queue it for consolidation. Returns the session ID.",
        {
            "summary": _string("What was done in the session."),
            "session": _string("Session ID (default: the active one)."),
        },
        (),
        ADDS,
    ),
    Tool(
        "memory_switch_namespace",
        "Switch namespace",
        "Make a namespace the active one, for this agent and for the command line alike "
        "(namespaces separate the memories of different projects in one store). Ends the "
        "active session's scope. A namespace needs no creating; the result says when it "
        "holds no memories yet, in case the name was mistyped.",
        {"name": _string("The namespace: 1-64 letters, digits, '.', '_' or '-'.")},
        ("name",),
        SWITCHES,
    ),
    Tool(
        "memory_stats",
        "Memory stats",
        "Counts of memories and links by kind in a namespace, how many are superseded, "
        "forgotten or waiting for consolidation, and where the store file is.",
        {"namespace": NAMESPACE},
        (),
        READS,
    ),
    Tool(
        "memory_for_code",
        "Memories about code",
        "The current memories about a file or folder, or about the code that contains a "
        "given line: what was decided or learnt about it. Call it before changing code "
        "that past decisions may constrain.",
        {
            "file_path": _string(
                "A file or folder, relative to the working folder or absolute, optionally "
                "with ':LINE' for the function or class around that line."
            ),
            "namespace": NAMESPACE,
        },
        ("file_path",),
        READS,
    ),
    Tool(
        "memory_to_code",
        "Code of a memory",
        "Where in the code a memory is anchored: the files, symbols and lines it is about, "
        "and whether that code changed since.",
        {"memory_id": MEMORY_ID, "namespace": NAMESPACE},
        ("memory_id",),
        READS,
    ),
    Tool(
        "memory_verify_staleness",
        "Verify staleness",
        "Check every memory anchored to code against the source as it is now: lists the "
        "memories whose code was removed or changed since they were stored, so that you "
        "can supersede the ones that are no longer true.",
        {"namespace": NAMESPACE},
        (),
        READS,
    ),
    Tool(
        "memory_consolidate",
        "Consolidate",
        "Deduplicate the sessions that ended since the last run: within a session, of two "
        "near-identical memories of the same kind the older is forgotten. With "
        "dry_run=true, report what would be forgotten and change nothing.",
        {
            "dry_run": _boolean("Report what would be forgotten; change nothing."),
            "strategy": _string(
                "Consolidator to use (entry-point group nervamem.consolidators).",
                default="rule-based",
            ),
            "all_namespaces": _boolean("Process the pending sessions of every namespace."),
            "namespace": NAMESPACE,
        },
        (),
        DESTROYS,
    ),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}
