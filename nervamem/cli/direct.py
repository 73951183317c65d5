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
from typing import TYPE_CHECKING, Any, TextIO, cast

from ..errors import NervamemError
from .context import ENV_DEBUG, Settings, open_store, output_format, report

if TYPE_CHECKING:
    from ..memory_fields import NewMemory

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
    namespace: str | None = None,
    fmt: str | None = None,
    **fields: Any,
) -> None:
    """The ``store`` command: store a memory, print its ID. ``fields``: the other fields
    of memory_fields.FIELDS that the command line takes, by name, as Click or parse()
    gives them (None: not given)."""
    from ..memory_fields import NewMemory
    from ..render import emit
    from ..visible import visible

    output = output_format(settings, fmt)
    text = read_stdin("content") if content == "-" else content
    given = {name: value for name, value in fields.items() if value is not None}
    # The namespace is the store's (open_store), as for every command, not the memory's.
    memory = NewMemory(kind, text, **given)

    with open_store(
        settings, namespace, create=True, before_create=lambda: check_new_memory(memory)
    ) as store:
        node_id, anchoring = store.store_memory(memory)
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


def check_new_memory(memory: NewMemory) -> None:
    """The checks of a new memory that need no store, made before ``store`` creates a
    missing one (context.open_store's ``before_create``): a command that fails must
    leave nothing behind. The store makes them again when it writes."""
    from ..timeparse import parse_time
    from ..writing_checks import checked_memory

    checked_memory(
        memory.kind,
        memory.content,
        memory.confidence,
        memory.rationale,
        memory.rejected,
        memory.entities,
    )
    for value, option in (
        (memory.valid_from, "--valid-from"),
        (memory.valid_until, "--valid-until"),
    ):
        if isinstance(value, str):  # the command line's are; an API caller's datetime is not
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


Options = dict[str, tuple[str, Callable[[str], Any]]]


class Command:
    """What parse() knows of one command: its arguments in order, and each option's
    parameter, how Click converts its value (int(), float(), the string itself: Click's
    INT, FLOAT and STRING types do exactly that) and whether it may be repeated. The
    options are made by ``table`` when first asked for: ``store``'s come from the
    declaration of a memory's fields, which ``recall`` need not import."""

    __slots__ = ("body", "_arguments", "table", "_options", "_multiple", "imports")

    def __init__(
        self,
        body: Callable[..., None],
        table: Callable[[], tuple[tuple[str, ...], Options, frozenset[str]]],
        imports: tuple[str, ...],
    ) -> None:
        self.body = body
        self.table = table
        self._arguments: tuple[str, ...] | None = None
        self._options: Options = {}
        self._multiple: frozenset[str] = frozenset()
        self.imports = imports  # what it will import anyway: loaded before the GC freeze

    def _made(self) -> None:
        if self._arguments is None:
            self._arguments, self._options, self._multiple = self.table()

    @property
    def arguments(self) -> tuple[str, ...]:
        self._made()
        return self._arguments or ()

    @property
    def options(self) -> Options:
        self._made()
        return self._options

    @property
    def multiple(self) -> frozenset[str]:
        self._made()
        return self._multiple


def as_given(value: str) -> str:
    return value


_SHARED_OPTIONS: Options = {
    "--ns": ("namespace", as_given),
    "--format": ("fmt", as_given),
    "-f": ("fmt", as_given),
}


def store_table() -> tuple[tuple[str, ...], Options, frozenset[str]]:
    """``store``'s arguments and options: those memory_fields.FIELDS gives the command
    line, in its order."""
    from ..memory_fields import FIELDS, Cli

    arguments: list[str] = []
    options: Options = {}
    multiple: set[str] = set()
    for field in FIELDS:
        if not isinstance(field.cli, Cli):
            continue
        if not field.cli.names:
            arguments.append(field.name)
        convert = as_given if field.cli.value is str else field.cli.value
        for name in field.cli.names:
            options[name] = (field.name, convert)
        if field.cli.repeatable:
            multiple.add(field.name)
    return tuple(arguments), {**options, **_SHARED_OPTIONS}, frozenset(multiple)


def recall_table() -> tuple[tuple[str, ...], Options, frozenset[str]]:
    options: Options = {
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
    }
    return ("query",), options, frozenset({"kind"})


COMMANDS = {
    "store": Command(store_memory, store_table, ("nervamem.store", "nervamem.writing")),
    "recall": Command(recall_memories, recall_table, ("nervamem.store", "nervamem.recall.api")),
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
