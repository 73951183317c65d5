"""A new memory's fields are declared once (nervamem/memory_fields.py), and every way in
takes exactly those: ``MemoryStore.store`` and ``store_anchored`` (their keywords), the
command line's ``store`` (through Typer and through cli/direct.py's parser) and the MCP
``memory_store`` tool (its schema and its handler).

A field declared and missing from a way in fails here, as does a parameter a way in takes
that is not declared, unless it is listed below as belonging to that edge alone, with the
reason. And each way in hands every field's value to the one write, MemoryStore's
``store_memory(NewMemory)``: a field taken and then dropped fails too.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
import typer

from nervamem import MemoryStore
from nervamem.cli import direct, root
from nervamem.mcp_server.tools import TOOLS_BY_NAME, MemoryServer
from nervamem.memory_fields import DEFAULTS, FIELDS, Cli, MemoryField, NewMemory, NotShown

pytestmark = pytest.mark.sqlite_only  # about how each edge hands fields on, not the engine

# Parameters of one edge that are not fields of a memory.
CLI_ONLY = {"ctx": "Typer's context", "fmt": "the output format: how the ID is printed"}
MCP_ONLY: dict[str, str] = {}
API_ONLY: dict[str, str] = {}

# One value of each field, none of them its default: what each edge must hand on.
SAMPLE: dict[str, Any] = {
    "kind": "decision",
    "content": "Chose JWT for auth",
    "entities": ["AuthService", "auth.py"],
    "confidence": 0.5,
    "valid_from": "2026-03-01",
    "valid_until": "2026-09-01",
    "supersedes": "d_0001",
    "contradicts": ["f_0002", "f_0003"],
    "caused_by": ["a_0004"],
    "derived_from": ["f_0005"],
    "rationale": "stateless",
    "rejected": ["sessions", "opaque tokens"],
    "session": "s_0006",
    "namespace": "team",
}


def mismatches(declared: Iterable[str], taken: Iterable[str], only: dict[str, str]) -> list[str]:
    """What an edge takes that is not declared (nor its own), and what it misses."""
    declared, taken = list(declared), list(taken)
    extra = [f"takes {name!r}, not declared" for name in taken if name not in declared]
    missing = [f"misses {name!r}" for name in declared if name not in taken]
    return [problem for problem in extra + missing if problem.split("'")[1] not in only]


def shown_on(edge: str) -> list[str]:
    return [f.name for f in FIELDS if not isinstance(getattr(f, edge), NotShown)]


def test_the_declaration_is_new_memory() -> None:
    names = [field.name for field in FIELDS]
    assert len(set(names)) == len(names)
    assert sorted(names) == sorted(NewMemory._fields)
    for field in FIELDS:
        for edge in (field.cli, field.mcp):
            assert not isinstance(edge, NotShown) or edge.reason.strip(), field.name


@pytest.mark.parametrize("method", ["store", "store_anchored"])
def test_the_api_takes_every_field(method: str) -> None:
    parameters = list(inspect.signature(getattr(MemoryStore, method)).parameters.values())[1:]
    assert mismatches(NewMemory._fields, [p.name for p in parameters], API_ONLY) == []
    # In the order the command line and the MCP tool list them, each with its default.
    assert [p.name for p in parameters] == [field.name for field in FIELDS]
    for param in parameters:
        if param.name not in ("kind", "content"):
            assert param.kind is param.KEYWORD_ONLY, param.name
            assert param.default == DEFAULTS[param.name], param.name


def test_the_command_line_takes_every_field() -> None:
    group = typer.main.get_command(root.command_tree(["store", "x"]))
    command = group.commands["store"]  # type: ignore[attr-defined]
    params = {param.name: param for param in command.params}
    assert mismatches(shown_on("cli"), params, CLI_ONLY) == []
    assert list(params)[: len(shown_on("cli"))] == shown_on("cli")  # the declared order
    for field in FIELDS:
        if isinstance(field.cli, Cli):
            param = params[field.name]
            assert param.help == field.cli.help, field.name
            assert tuple(param.opts) == field.cli.names or not field.cli.names, field.name
            assert param.multiple == field.cli.repeatable, field.name
    # cli/direct.py's parser: the same names (test_direct.py checks it against Click).
    table = direct.COMMANDS["store"]
    taken = [*table.arguments, *dict.fromkeys(name for name, _ in table.options.values())]
    assert mismatches(shown_on("cli"), taken, CLI_ONLY) == []


def test_the_mcp_tool_takes_every_field() -> None:
    tool = TOOLS_BY_NAME["memory_store"]
    assert mismatches(shown_on("mcp"), tool.properties, MCP_ONLY) == []
    assert list(tool.properties) == shown_on("mcp")
    for field in FIELDS:
        if not isinstance(field.mcp, NotShown):
            assert tool.properties[field.name] is field.mcp
    required = [name for name in shown_on("mcp") if name not in DEFAULTS]
    assert list(tool.required) == required == ["kind", "content"]


def test_a_field_missing_from_an_edge_is_reported() -> None:
    """The checks above bite: a field declared and not taken, and one taken undeclared."""
    declared = [*NewMemory._fields, "author"]
    taken = [*NewMemory._fields, "secret_allowed"]
    assert mismatches(declared, taken, {}) == [
        "takes 'secret_allowed', not declared",
        "misses 'author'",
    ]
    assert mismatches(declared, taken, {"author": "why", "secret_allowed": "why"}) == []


# ------------------------------------------------------------------ the values reach the write
Recorded = list[tuple[NewMemory, str]]


@pytest.fixture
def written(monkeypatch: pytest.MonkeyPatch) -> Recorded:
    """Each NewMemory given to the one write, with the namespace of the store that got
    it; nothing is written (the sample's references name no node)."""
    seen: Recorded = []

    def record(self: MemoryStore, memory: NewMemory) -> tuple[str, None]:
        seen.append((memory, self.namespace))
        return "d_0000000000000000000000000000", None

    monkeypatch.setattr(MemoryStore, "store_memory", record)
    return seen


def as_stored(memory: NewMemory, store_namespace: str) -> dict[str, Any]:
    """The memory's fields, compared alike whichever edge gave them: a sequence as a
    list, one ID as a list of it, the namespace as the one written to."""
    values: dict[str, Any] = memory._asdict()
    values["namespace"] = memory.namespace or store_namespace
    if isinstance(values["supersedes"], str):
        values["supersedes"] = [values["supersedes"]]
    return {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in values.items()}


def expected() -> dict[str, Any]:
    memory = NewMemory(**SAMPLE)
    return as_stored(memory, "unused")


def cli_arguments(field_filter: Callable[[MemoryField], bool] = lambda field: True) -> list[str]:
    args: list[str] = ["store"]
    for field in FIELDS:
        if not isinstance(field.cli, Cli) or not field_filter(field):
            continue
        value = SAMPLE[field.name]
        if not field.cli.names:
            args.append(value)
            continue
        for item in value if isinstance(value, list) else [value]:
            args += [field.cli.names[0], str(item)]
    return args


def test_the_sample_names_every_field() -> None:
    assert list(SAMPLE) == [field.name for field in FIELDS]
    for name, value in SAMPLE.items():
        assert value != DEFAULTS.get(name), name


def test_the_api_hands_on_every_field(store: MemoryStore, written: Recorded) -> None:
    store.store(**SAMPLE)
    store.store_anchored(**SAMPLE)
    assert [as_stored(*call) for call in written] == [expected(), expected()]


def test_the_command_line_hands_on_every_field(cli: Callable[..., Any], written: Recorded) -> None:
    args = cli_arguments()
    result = cli(*args)
    assert result.exit_code == 0, result.stderr
    call = direct.parse(args)  # the same arguments, without Typer
    assert call is not None
    assert direct.run(call, args) == 0
    assert [as_stored(*call) for call in written] == [expected(), expected()]


def test_the_mcp_tool_hands_on_every_field(db_path: Path, written: Recorded) -> None:
    MemoryStore(db_path).close()
    server = MemoryServer(str(db_path))
    try:
        answer = server.call("memory_store", SAMPLE)
    finally:
        server.close()
    assert not answer.is_error, answer.text
    assert [as_stored(*call) for call in written] == [expected()]
