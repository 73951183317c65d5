"""``store`` and ``recall`` run without Typer: the two commands agents and hooks call on
every step, in a fresh process each time.

Importing Typer (and the Click it vendors) and turning a command's signature into Click
objects is ~2/3 of what a fresh ``nervamem recall`` executes on a 1k store (callgrind:
~108M of ~354M instructions; bench/results.md, "Fresh process (issue 21, round 4)").
So main() first offers the arguments to parse() here, which understands a plain subset
of what Click would accept for these two commands and declines everything else (None):
help, completion, ``--``, a short option with its value attached (``-b5``), a repeated
option, a value that starts with "-", anything it does not know, a number Click would
refuse. Declined arguments go through
Typer as before, so help, usage errors and completion are Typer's own, unchanged.

The invariant: whatever parse() accepts, Click parses into the same values, and run()
ends the process as NervamemGroup.main() and Typer's main would (exit code, stderr).
tests/cli/test_direct.py holds both, by hypothesis over argument lists and by running
each command both ways; it also checks the tables below against the Click commands
that memory_commands.py declares, so an option added there and not here fails a test
(until then it is only slower: parse() declines an option it does not know).

The bodies of ``store`` and ``recall`` live here, shared by both ways in.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO, cast

from ..errors import NervamemError
from .context import ENV_DEBUG, Settings, open_store, output_format, report

# The root's options that take a value, and the Settings field of each.
ROOT_OPTIONS = {
    "--db": "db",
    "--ns": "namespace",
    "--format": "fmt",
    "-f": "fmt",
    "--tokenizer": "tokenizer",
}


def read_stdin(what: str) -> str:
    from ..errors import BadInputError

    if sys.stdin is None:
        raise BadInputError(f"{what} '-' needs standard input")
    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInputError(
            f"{what} on standard input is not valid UTF-8 (byte {exc.start})"
        ) from None


def store_memory(
    settings: Settings,
    kind: str,
    content: str,
    entity: list[str] | None = None,
    confidence: float = 1.0,
    valid_from: str | None = None,
    valid_until: str | None = None,
    supersedes: list[str] | None = None,
    contradicts: list[str] | None = None,
    caused_by: list[str] | None = None,
    derived_from: list[str] | None = None,
    rationale: str | None = None,
    rejected: list[str] | None = None,
    session: str | None = None,
    namespace: str | None = None,
    fmt: str | None = None,
) -> None:
    """The ``store`` command: store a memory, print its ID."""
    from ..render import emit
    from ..visible import visible

    output = output_format(settings, fmt)
    text = read_stdin("content") if content == "-" else content

    def check() -> None:
        check_new_memory(
            kind, text, confidence, valid_from, valid_until, rationale, rejected, entity
        )

    with open_store(settings, namespace, create=True, before_create=check) as memory:
        node_id, anchoring = memory.store_anchored(
            kind,
            text,
            entities=entity or (),
            confidence=confidence,
            valid_from=valid_from,
            valid_until=valid_until,
            supersedes=supersedes or None,
            contradicts=contradicts or (),
            caused_by=caused_by or (),
            derived_from=derived_from or (),
            rationale=rationale,
            rejected=rejected or (),
            session=session,
        )
    for note in anchoring.notes if anchoring else ():
        sys.stderr.write(f"nervamem: note: {visible(note)}\n")
    for warning in anchoring.warnings if anchoring else ():
        # Warnings name entities (user text) and go to a person's terminal.
        sys.stderr.write(f"nervamem: warning: {visible(warning)}\n")
    if output == "json" and anchoring and anchoring.unresolved:
        # Additive: an agent reading JSON learns which names anchored nothing.
        emit("stored", {"id": node_id, "unresolved": list(anchoring.unresolved)}, output)
        return
    emit("id", node_id, output)


def check_new_memory(
    kind: str,
    text: str,
    confidence: float,
    valid_from: str | None,
    valid_until: str | None,
    rationale: str | None,
    rejected: list[str] | None,
    entity: list[str] | None,
) -> None:
    """The checks of a new memory that need no store, made before ``store`` creates a
    missing one (context.open_store's ``before_create``): a command that fails must
    leave nothing behind. The store makes them again when it writes."""
    from ..timeparse import parse_time
    from ..writing import checked_memory

    checked_memory(kind, text, confidence, rationale, rejected or (), entity or ())
    for value, option in ((valid_from, "--valid-from"), (valid_until, "--valid-until")):
        if value is not None:
            parse_time(value, option=option)


def recall_memories(
    settings: Settings,
    query: str,
    budget: int = 500,
    as_of: str | None = None,
    known_at: str | None = None,
    kind: list[str] | None = None,
    hops: int = 2,
    namespace: str | None = None,
    fmt: str | None = None,
    tokenizer: str | None = None,
    min_score: float = 0.0,
) -> None:
    """The ``recall`` command: what is relevant to ``query``, within the budget."""
    from ..render import emit

    output = output_format(settings, fmt)
    text = read_stdin("query") if query == "-" else query
    with open_store(settings, namespace) as memory:
        result = memory.recall(
            text,
            budget_tokens=budget,
            as_of=as_of,
            kinds=kind or None,
            hops=hops,
            tokenizer=tokenizer or settings.tokenizer,
            min_score=min_score,
            known_at=known_at,
        )
    emit("recall", result, output)


class Command:
    """What parse() knows of one command: its arguments in order, and each option's
    parameter, how Click converts its value (int(), float(), the string itself: Click's
    INT, FLOAT and STRING types do exactly that) and whether it may be repeated."""

    __slots__ = ("body", "arguments", "options", "multiple", "imports")

    def __init__(
        self,
        body: Callable[..., None],
        arguments: tuple[str, ...],
        options: dict[str, tuple[str, Callable[[str], Any]]],
        multiple: frozenset[str],
        imports: tuple[str, ...],
    ) -> None:
        self.body = body
        self.arguments = arguments
        self.options = options
        self.multiple = multiple
        self.imports = imports  # what it will import anyway: loaded before the GC freeze


def as_given(value: str) -> str:
    return value


_SHARED_OPTIONS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "--ns": ("namespace", as_given),
    "--format": ("fmt", as_given),
    "-f": ("fmt", as_given),
}

COMMANDS = {
    "store": Command(
        store_memory,
        ("kind", "content"),
        {
            "--entity": ("entity", as_given),
            "-e": ("entity", as_given),
            "--confidence": ("confidence", float),
            "--valid-from": ("valid_from", as_given),
            "--valid-until": ("valid_until", as_given),
            "--supersedes": ("supersedes", as_given),
            "--contradicts": ("contradicts", as_given),
            "--caused-by": ("caused_by", as_given),
            "--derived-from": ("derived_from", as_given),
            "--rationale": ("rationale", as_given),
            "--rejected": ("rejected", as_given),
            "--session": ("session", as_given),
            **_SHARED_OPTIONS,
        },
        frozenset({"entity", "supersedes", "contradicts", "caused_by", "derived_from", "rejected"}),
        ("nervamem.store", "nervamem.writing"),
    ),
    "recall": Command(
        recall_memories,
        ("query",),
        {
            "--budget": ("budget", int),
            "-b": ("budget", int),
            "--as-of": ("as_of", as_given),
            "--known-at": ("known_at", as_given),
            "--kind": ("kind", as_given),
            "-k": ("kind", as_given),
            "--hops": ("hops", int),
            "--tokenizer": ("tokenizer", as_given),
            "--min-score": ("min_score", float),
            **_SHARED_OPTIONS,
        },
        frozenset({"kind"}),
        ("nervamem.store", "nervamem.recall.api"),
    ),
}


class Call:
    """A command parse() understood: run() runs it."""

    __slots__ = ("command", "settings", "values")

    def __init__(self, command: Command, settings: Settings, values: dict[str, Any]) -> None:
        self.command = command
        self.settings = settings
        self.values = values


def parse(args: Sequence[str]) -> Call | None:
    """The call ``args`` make, when it is ``store`` or ``recall`` written plainly; None
    for anything Typer must see (module docstring)."""
    if os.environ.get("_NERVAMEM_COMPLETE") or os.environ.get(ENV_DEBUG) == "1":
        return None  # completion is Click's; debug mode shows Typer's tracebacks
    root: dict[str, str] = {}
    index = 0
    # Root options, then the command's name.
    while index < len(args) and _option_like(args[index]):
        option = _option_at(args, index)
        if option is None or option[0] not in ROOT_OPTIONS or ROOT_OPTIONS[option[0]] in root:
            return None
        name, value, index = option
        root[ROOT_OPTIONS[name]] = value
    command = COMMANDS.get(args[index]) if index < len(args) else None
    if command is None:
        return None
    values: dict[str, Any] = {}
    positional: list[str] = []
    index += 1
    while index < len(args):
        if not _option_like(args[index]):
            positional.append(args[index])
            index += 1
            continue
        option = _option_at(args, index)
        if option is None:
            return None
        name, value, index = option
        if name in command.options:
            param, convert = command.options[name]
            try:
                converted = convert(value)
            except ValueError:
                return None  # Click's own message says what is wrong
            if param in command.multiple:
                values.setdefault(param, []).append(converted)
            elif param in values:
                return None  # repeated: Click keeps the last, with the root's hoisting
            else:
                values[param] = converted
        elif name in ROOT_OPTIONS and ROOT_OPTIONS[name] not in root:
            root[ROOT_OPTIONS[name]] = value  # edge.hoist_root_options moves it there
        else:
            return None
    if len(positional) != len(command.arguments):
        return None
    values.update(zip(command.arguments, positional, strict=True))
    return Call(command, Settings(**root), values)


def _option_at(args: Sequence[str], index: int) -> tuple[str, str, int] | None:
    """The option at ``args[index]``, its value and the index after them; None when
    Click could read them otherwise: ``-b=5`` (the value "=5"), ``-b5``, no value, or
    a value that looks like an option (declined rather than reasoned about)."""
    name, equals, attached = args[index].partition("=")
    if equals:
        return (name, attached, index + 1) if name.startswith("--") else None
    if index + 1 >= len(args) or _option_like(args[index + 1]):
        return None
    return name, args[index + 1], index + 2


def _option_like(arg: str) -> bool:
    """Whether Click would take ``arg`` for an option (or ``--``), not a value."""
    return arg.startswith("-") and arg != "-"


def prepare(call: Call) -> None:
    """Import now what the command will import anyway (for main(), before the GC freeze
    of startup.freeze_start_up_objects: then its collections do not traverse them)."""
    import importlib

    for module in call.command.imports:
        try:
            importlib.import_module(module)
        except ImportError:
            return  # the command meets it again, in run(), and reports it in one line


def run(call: Call, argv: Sequence[str]) -> int:
    """Run the command; its exit code, every failure reported as the Typer path would:
    NervamemGroup.main() around Typer's main (typer/core.py ``_main``, standalone off)."""
    try:
        call.command.body(call.settings, **call.values)
    except EOFError:
        sys.stderr.write("\n")  # Typer: echo() to stderr, then Abort
        sys.stderr.flush()
        report("aborted", 1, "aborted", argv)
        return 1
    except KeyboardInterrupt:
        return 130  # Typer: Exit(130)
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            # Typer: nothing more is written to the closed pipe, and a flush at exit is
            # quiet.
            from .typer_compat import PacifyFlushWrapper

            sys.stdout = cast(TextIO, PacifyFlushWrapper(sys.stdout))
            sys.stderr = cast(TextIO, PacifyFlushWrapper(sys.stderr))
            return 1
        if isinstance(exc, BrokenPipeError):  # ESHUTDOWN: NervamemGroup's quiet exit
            return 1
        return _failed(exc, argv)
    except NervamemError as exc:
        report(exc.code, int(exc.exit_code), exc.message, argv)
        return int(exc.exit_code)
    except Exception as exc:
        return _failed(exc, argv)
    return 0


def _failed(exc: Exception, argv: Sequence[str]) -> int:
    from ..failures import describe

    failure = describe(exc)
    report(failure.code, failure.exit_code, failure.message, argv)
    return failure.exit_code
