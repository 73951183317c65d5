"""The MCP tools' calls: the arguments checked, the store resolved, each tool's handler.
What each tool is called, what a model reads about it and what it accepts are in
definitions.py; no protocol here (server.py wires both to the SDK).

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
from ..locate import resolve_store
from ..memory_fields import NewMemory
from ..render import json as json_renderer
from ..render import markdown
from ..state import validate_namespace
from ..visible import visible
from .definitions import GUIDE as GUIDE
from .definitions import TOOLS as TOOLS
from .definitions import TOOLS_BY_NAME as TOOLS_BY_NAME
from .definitions import Tool

if TYPE_CHECKING:
    from ..store import MemoryStore

ENV_DEBUG = "NERVAMEM_DEBUG"


class Answer(NamedTuple):
    """What a tool call gives back: the text a model reads, the structured document (the
    CLI's JSON), and whether it is an error."""

    text: str
    document: dict[str, Any]
    is_error: bool = False


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
