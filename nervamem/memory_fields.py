"""A new memory's fields, declared once: ``NewMemory`` is what the core writes, and
``FIELDS`` says how each field appears at each edge. The command line's ``store`` options
(cli/memory_commands.py, and cli/direct.py's parser table) and the MCP ``memory_store``
schema (mcp_server/definitions.py) are built from ``FIELDS``; ``MemoryStore.store`` and
``store_anchored`` keep their keyword signatures written out (the public API, read by
type checkers and editors), and tests/test_memory_fields.py checks those signatures, the
two edges and ``NewMemory`` against this table.

Adding a field: a line in ``NewMemory``, an entry in ``FIELDS`` (its CLI option and help,
its MCP schema, or a reason an edge does not show it), a keyword of ``MemoryStore.store``
and ``store_anchored``, and the code that gives it a meaning (writing.py).

This module is a leaf, cheap to import: the CLI's ``store`` parser reads it in every
fresh process that stores.
"""

# No "from __future__ import annotations": typing.NamedTuple turns each string annotation
# into a ForwardRef, which compiles it: ~11M of a fresh `store`'s ~141M instructions
# (callgrind), against ~2M for the whole module with its annotations as objects.
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from .kinds import STORABLE_KINDS

Ref = str | int


class NewMemory(NamedTuple):
    """One memory for ``store_many``: the arguments of ``MemoryStore.store``. A reference
    is a node ID (or short ID, or unique prefix), or the index of an earlier memory of the
    same call. The order of the fields is kept for callers that give them by position."""

    kind: str
    content: str
    entities: Sequence[str] = ()
    confidence: float = 1.0
    valid_from: str | datetime | None = None
    # One node, or several: a memory that supersedes the rival successors of one node
    # (two branches of a shared store superseded it both) resolves that conflict.
    supersedes: Ref | Sequence[Ref] | None = None
    contradicts: Sequence[Ref] = ()
    caused_by: Sequence[Ref] = ()
    derived_from: Sequence[Ref] = ()
    rationale: str | None = None
    rejected: Sequence[str] = ()
    session: str | None = None
    namespace: str | None = None
    # When it stops being true, if that is known now (a freeze until Friday); None:
    # open until something supersedes it.
    valid_until: str | datetime | None = None


# Each field's default; the fields without one (kind, content) are required everywhere.
DEFAULTS: dict[str, Any] = NewMemory._field_defaults


class Cli:
    """A field on the command line: a positional argument (no ``names``) or an option.
    ``repeatable``: the option may be given several times, each value one item; ``value``
    is how its text is read (str or float, as Click's STRING and FLOAT read it)."""

    __slots__ = ("names", "help", "repeatable", "value")

    def __init__(
        self,
        *names: str,
        help: str,  # Typer's and Click's name for it
        repeatable: bool = False,
        value: type = str,
    ) -> None:
        self.names = names
        self.help = help
        self.repeatable = repeatable
        self.value = value


class NotShown:
    """An edge that deliberately does not take a field, and why."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class MemoryField:
    """One field of ``NewMemory`` (``name``) as the command line and the MCP tool show it,
    in the order both list them."""

    __slots__ = ("name", "cli", "mcp")

    def __init__(self, name: str, cli: Cli | NotShown, mcp: dict[str, Any] | NotShown) -> None:
        self.name = name
        self.cli = cli
        self.mcp = mcp  # the JSON Schema of the tool's argument, as clients read it


def string_schema(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def strings_schema(description: str, **items: Any) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string", **items}, "description": description}


# Shared with the MCP tools that take the same arguments (mcp_server/definitions.py).
NAMESPACE_SCHEMA = string_schema(
    "Namespace to use for this call only, without switching the active one (default: the "
    "active namespace, shared with the command line)."
)
TIME = "ISO-8601 date or date-time (a value without a zone is UTC)."

FIELDS: tuple[MemoryField, ...] = (
    MemoryField(
        "kind",
        Cli(help="fact, decision, action, outcome, entity, procedure or preference."),
        string_schema("What sort of memory this is.", enum=list(STORABLE_KINDS)),
    ),
    MemoryField(
        "content",
        Cli(help="The memory text, or '-' to read it from standard input."),
        string_schema("The memory: one self-contained sentence or short paragraph."),
    ),
    MemoryField(
        "entities",
        Cli("--entity", "-e", help="Entity the memory is about (repeatable).", repeatable=True),
        strings_schema(
            "Names of what the memory is about (components, files, functions, people); "
            "AuthService, auth_service and auth-service are the same entity. Names that "
            "match the code graph anchor the memory to the code."
        ),
    ),
    MemoryField(
        "confidence",
        Cli("--confidence", help="Confidence between 0 and 1.", value=float),
        {
            "type": "number",
            "description": "How sure you are, between 0 and 1.",
            "default": 1.0,
            "minimum": 0,
            "maximum": 1,
        },
    ),
    MemoryField(
        "valid_from",
        Cli("--valid-from", help="When it became true (ISO-8601; default now, UTC)."),
        string_schema(f"When it became true (default: now). {TIME}"),
    ),
    MemoryField(
        "valid_until",
        Cli(
            "--valid-until",
            help="When it stops being true, if known now (ISO-8601; default: until superseded).",
        ),
        string_schema(
            f"When it stops being true, if that is known now (a freeze until Friday). {TIME}"
        ),
    ),
    MemoryField(
        "supersedes",
        Cli(
            "--supersedes",
            help="ID of the node this one replaces (repeatable: replace rival versions).",
            repeatable=True,
        ),
        # One ID only: an MCP client cannot yet resolve rival versions in one call.
        string_schema(
            "ID of the memory this one replaces (it stops being current from 'valid_from')."
        ),
    ),
    MemoryField(
        "contradicts",
        Cli("--contradicts", help="ID this conflicts with.", repeatable=True),
        strings_schema("IDs of memories this one conflicts with."),
    ),
    MemoryField(
        "caused_by",
        Cli(
            "--caused-by",
            help="ID of the decision or action that produced this.",
            repeatable=True,
        ),
        strings_schema("IDs of the decisions or actions that produced this."),
    ),
    MemoryField(
        "derived_from",
        Cli("--derived-from", help="ID this is inferred from.", repeatable=True),
        strings_schema("IDs of the memories this one is inferred from."),
    ),
    MemoryField(
        "rationale",
        Cli("--rationale", help="Why (decisions only)."),
        string_schema("Why it was decided (decisions only)."),
    ),
    MemoryField(
        "rejected",
        Cli(
            "--rejected",
            help="An alternative that was rejected (decisions only).",
            repeatable=True,
        ),
        strings_schema("Alternatives that were rejected (decisions only)."),
    ),
    MemoryField(
        "session",
        Cli("--session", help="Session ID (default: the active one)."),
        string_schema("Session ID to record it in (default: the active session)."),
    ),
    MemoryField(
        "namespace",
        Cli("--ns", help="Namespace to use instead of the active one."),
        NAMESPACE_SCHEMA,
    ),
)
