"""The MCP tools: what each is called, what a model reads about it, what it accepts, and
what a call does. No protocol here (server.py wires it to the SDK).

A call does what the CLI command of the same name does, through the same MemoryStore
methods and the same renderers: the text of a result is the command's Markdown (so a
recall is held to the same hard token budget), its structured content is the command's
``--format json`` document, and a failure is the CLI's JSON error (docs/json.md), with the
same stable code and message.

The store is resolved as the CLI resolves it (``--db``, the environment, ``.nervapack/``
upwards from the working folder, the home store), again at every call, so a store created
while the server runs is picked up as the next CLI command would. The active namespace and
session are read from state.yaml at every call: a person switching namespace at the
terminal switches it for the agent too, and the other way round.

Arguments are checked against each tool's JSON Schema for their types only (a wrong type
or an unknown name is a ``usage`` error, as the CLI's parser reports it); the values are
checked by the core, which refuses them with the CLI's own code and sentence.
"""

from __future__ import annotations

import math
import os
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import ConnectionLostError, UsageError
from ..failures import Failure, describe
from ..kinds import NODE_KINDS
from ..locate import resolve_store
from ..memory_fields import DEFAULTS, FIELDS, NAMESPACE_SCHEMA, TIME, NewMemory
from ..memory_fields import string_schema as _string
from ..memory_fields import strings_schema as _strings
from ..render import json as json_renderer
from ..render import markdown
from ..state import validate_namespace
from ..visible import visible

if TYPE_CHECKING:
    from ..store import MemoryStore

ENV_DEBUG = "NERVAMEM_DEBUG"

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


class Answer(NamedTuple):
    """What a tool call gives back: the text a model reads, the structured document (the
    CLI's JSON), and whether it is an error."""

    text: str
    document: dict[str, Any]
    is_error: bool = False


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

# What each JSON Schema type accepts, and how a message names it.
_JSON_TYPES: dict[str, tuple[Callable[[object], bool], str]] = {
    "string": (lambda value: isinstance(value, str), "a string"),
    "integer": (lambda value: isinstance(value, int) and not isinstance(value, bool), "an integer"),
    "number": (
        lambda value: isinstance(value, (int, float)) and not isinstance(value, bool),
        "a number",
    ),
    "boolean": (lambda value: isinstance(value, bool), "true or false"),
    "array": (
        lambda value: isinstance(value, list) and all(isinstance(item, str) for item in value),
        "a list of strings",
    ),
}


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"


def check_arguments(tool: Tool, arguments: Mapping[str, object]) -> None:
    """Refuse what the CLI's parser would refuse: an unknown or missing argument, or a
    value of the wrong type. Values themselves are the core's to check."""
    for name in arguments:
        if name not in tool.properties:
            known = ", ".join(tool.properties) or "none"
            raise UsageError(f"{tool.name}: unknown argument {_shown(name)} (known: {known})")
    for name in tool.required:
        if arguments.get(name) is None:
            raise UsageError(f"{tool.name}: missing argument {name!r}")
    for name, value in arguments.items():
        if value is None:  # JSON null: the same as leaving the argument out
            continue
        accepts, expected = _JSON_TYPES[tool.properties[name]["type"]]
        if not accepts(value):
            raise UsageError(f"{tool.name}: {name} must be {expected}, not {_shown(value)}")


def integers(tool: Tool, arguments: dict[str, object]) -> dict[str, object]:
    """``arguments`` with each integral number given to an integer argument as an int:
    JSON Schema's "integer" is any number without a fraction, so 500.0 is one (a client
    that validates against the schema sends it), as 500 is."""
    return {
        name: int(value)
        if isinstance(value, float)
        and value.is_integer()
        and tool.properties.get(name, {}).get("type") == "integer"
        else value
        for name, value in arguments.items()
    }


# ----------------------------------------------------------------------------- calls
StoreFactory = Callable[[str, "str | None"], "MemoryStore"]


def _open_store(db: str, namespace: str | None) -> MemoryStore:
    from ..store import MemoryStore

    return MemoryStore(db, namespace=namespace)


def _float(value: float) -> float:
    """A JSON number as the CLI parses the option: 7 -> 7.0, and an integer too large for
    a float is infinite (as 1e400 is), which the core refuses by name, not an overflow."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _rendered(view: str, payload: Any) -> Answer:
    return Answer(markdown.render(view, payload), json_renderer.to_document(view, payload))


def _file_identity(path: Path | str) -> tuple[int, int] | None:
    """Which file a store path names now (device and inode); None for a server's URL or
    a path with no file."""
    if isinstance(path, str):
        return None
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return None
    return (status.st_dev, status.st_ino)


class MemoryServer:
    """The tools over one store, resolved as the CLI resolves it. Not thread-safe: the
    server calls it from one thread, one call at a time."""

    def __init__(
        self,
        db: str | None = None,
        *,
        namespace: str | None = None,
        tokenizer: str | None = None,
        store_factory: StoreFactory = _open_store,
    ) -> None:
        self.db = db
        # `nervamem --ns NAME mcp`: every call uses NAME unless it names another.
        self.namespace = validate_namespace(namespace) if namespace is not None else None
        self.tokenizer = tokenizer
        self.store_factory = store_factory
        self._store: MemoryStore | None = None
        self._opened: object = None  # the path or URL _store was opened for, its file

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def flush_access_counts(self) -> None:
        """Write the access counts that recalls left in memory (server.py, each second).
        Bookkeeping: it never fails the server, which keeps serving calls."""
        import sqlite3

        if self._store is not None:
            try:
                self._store.flush_access_counts()
            except sqlite3.Error:
                pass  # as a recall's own count write: the next flush tries again

    def store(self) -> MemoryStore:
        """The store the CLI would use now, open; the active namespace and session read
        again from state.yaml."""
        path = resolve_store(self.db)
        # The file itself, not only its name: a store deleted (or deleted and made
        # again by `nervamem init`) while the server runs would otherwise take the
        # server's writes into the unlinked file, answered as stored and lost at exit.
        opened = (path, _file_identity(path))
        if self._store is not None and self._opened != opened:
            self.close()
        if self._store is None:
            self._store = self.store_factory(os.fspath(path), None)
            self._opened = (path, _file_identity(path))
        storage = self._store.storage
        storage.namespace_override = self.namespace
        storage.reload_state()
        return self._store

    def check(self) -> None:
        """Open the store and read its state, raising what the first call would: a
        server that cannot serve fails at start-up, where its client shows why."""
        self.store().current()

    def call(self, name: str, arguments: Mapping[str, object] | None) -> Answer:
        """Run one tool. Never raises for what a caller can send: every failure is an
        error answer."""
        try:
            tool = TOOLS_BY_NAME.get(name)
            if tool is None:
                raise UsageError(
                    f"unknown tool {_shown(name)}: use one of {', '.join(TOOLS_BY_NAME)}"
                )
            args = integers(tool, dict(arguments or {}))
            check_arguments(tool, args)
            args = {key: value for key, value in args.items() if value is not None}
            try:
                return self._run(name, args)
            except ConnectionLostError as exc:
                # A server restarted since the last call: reconnect and run it once more,
                # unless a COMMIT went out (its outcome is unknown).
                if not exc.committed_nothing:
                    raise
                return self._run(name, args)
        except Exception as exc:
            if os.environ.get(ENV_DEBUG) == "1":
                traceback.print_exc(file=sys.stderr)
            return error_answer(describe(exc))

    def _run(self, name: str, args: dict[str, Any]) -> Answer:
        memory = self.store()  # a connection lost here: nothing of the call ran yet
        before = getattr(memory.storage, "commits_sent", 0)
        args = dict(args)
        namespace = args.pop("namespace", None)
        if isinstance(namespace, str):
            memory.storage.namespace_override = validate_namespace(namespace)
        try:
            return _HANDLERS[name](self, memory, args)
        except ConnectionLostError as exc:
            exc.committed_nothing = getattr(memory.storage, "commits_sent", 0) == before
            raise

    # ------------------------------------------------------------------ the tools
    def _store_memory(self, memory: MemoryStore, args: dict[str, Any]) -> Answer:
        # The arguments are the fields the schema declares (memory_fields.FIELDS), the
        # namespace already taken by _run(); JSON numbers read as the CLI reads them.
        if "confidence" in args:
            args["confidence"] = _float(args["confidence"])
        if not args.get("session"):
            args.pop("session", None)  # a client's "" for "not given"
        node_id, anchoring = memory.store_memory(NewMemory(**args))
        answer = _rendered("id", node_id)
        warnings = list(anchoring.warnings) if anchoring else []
        if not warnings:
            return answer
        # The CLI prints these on stderr; here they are part of the answer.
        text = answer.text + "".join(f"warning: {visible(warning)}\n" for warning in warnings)
        return Answer(text, {**answer.document, "warnings": warnings})

    def _recall(self, memory: MemoryStore, args: dict[str, Any]) -> Answer:
        result = memory.recall(
            args["query"],
            budget_tokens=args.get("budget_tokens", 500),
            as_of=args.get("as_of"),
            kinds=args.get("kinds") or None,
            hops=args.get("hops", 2),
            tokenizer=args.get("tokenizer") or self.tokenizer,
            min_score=_float(args.get("min_score", 0.0)),
            known_at=args.get("known_at"),
        )
        return _rendered("recall", result)

    def _timeline(self, memory: MemoryStore, args: dict[str, Any]) -> Answer:
        items = memory.timeline(
            args["query"], limit=args.get("limit", 100), known_at=args.get("known_at")
        )
        return _rendered("timeline", items)

    def _forget(self, memory: MemoryStore, args: dict[str, Any]) -> Answer:
        target = memory.resolve_id(args["memory_id"])
        return _rendered("forget", memory.forget(target, purge=args.get("purge", False)))

    def _start_session(self, memory: MemoryStore, args: dict[str, Any]) -> Answer:
        return _rendered("id", memory.start_session(args.get("title")))

    def _end_session(self, memory: MemoryStore, args: dict[str, Any]) -> Answer:
        session = memory.end_session(args.get("session") or None, summary=args.get("summary"))
        return _rendered("id", session)

    def _switch_namespace(self, memory: MemoryStore, args: dict[str, Any]) -> Answer:
        is_new = not memory.has_memories(args["name"])
        answer = _rendered("ns_switch", memory.switch_namespace(args["name"]))
        if self.namespace is not None:
            # `nervamem --ns NAME mcp` pins the agent's namespace: the agent switching
            # moves that pin too, or its next calls would stay in NAME while the switch
            # said otherwise.
            self.namespace = answer.document["namespace"]
        if not is_new:
            return answer
        # The CLI's note on stderr, in the answer: a mistyped name starts an empty namespace.
        note = f"namespace '{visible(args['name'])}' is new (no memories yet)\n"
        return Answer(answer.text + note, {**answer.document, "new": True})

    def _stats(self, memory: MemoryStore, args: dict[str, Any]) -> Answer:
        return _rendered("stats", memory.stats())

    def _for_code(self, memory: MemoryStore, args: dict[str, Any]) -> Answer:
        return _rendered("code_for", memory.code_for(args["file_path"]))

    def _to_code(self, memory: MemoryStore, args: dict[str, Any]) -> Answer:
        return _rendered("code_to", memory.code_to(args["memory_id"]))

    def _verify_staleness(self, memory: MemoryStore, args: dict[str, Any]) -> Answer:
        return _rendered("verify_staleness", memory.verify_staleness())

    def _consolidate(self, memory: MemoryStore, args: dict[str, Any]) -> Answer:
        result = memory.consolidate(
            strategy=args.get("strategy", "rule-based"),
            dry_run=args.get("dry_run", False),
            all_namespaces=args.get("all_namespaces", False),
        )
        return _rendered("consolidate", result)


_HANDLERS: dict[str, Callable[[MemoryServer, MemoryStore, dict[str, Any]], Answer]] = {
    "memory_store": MemoryServer._store_memory,
    "memory_recall": MemoryServer._recall,
    "memory_timeline": MemoryServer._timeline,
    "memory_forget": MemoryServer._forget,
    "memory_start_session": MemoryServer._start_session,
    "memory_end_session": MemoryServer._end_session,
    "memory_switch_namespace": MemoryServer._switch_namespace,
    "memory_stats": MemoryServer._stats,
    "memory_for_code": MemoryServer._for_code,
    "memory_to_code": MemoryServer._to_code,
    "memory_verify_staleness": MemoryServer._verify_staleness,
    "memory_consolidate": MemoryServer._consolidate,
}


def error_answer(failure: Failure) -> Answer:
    """A failure as the CLI's JSON error: the same document as text and as structure."""
    line = json_renderer.error_line(failure.code, failure.exit_code, failure.message)
    return Answer(line.strip(), failure.document(), is_error=True)


def recall_guide(server: MemoryServer, topic: str | None) -> str:
    """The prompt that tells an agent how to use its memory, with what it already
    remembers about ``topic`` when one is given."""
    if not topic:
        return GUIDE
    answer = server.call("memory_recall", {"query": topic})
    heading = "Error recalling" if answer.is_error else "What the memory holds about"
    return f"{GUIDE}\n{heading} {topic!r}:\n\n{answer.text}"
