"""``store`` and ``recall`` without Typer (cli/direct.py) behave as through Typer.

Three things hold it: the parser's tables are the Click commands' (names, types, repeats,
defaults); whatever parse() accepts, Click parses into the same call (hypothesis over
argument lists); and each command, run both ways on a real store, writes the same
stdout, stderr and exit code, failures included.
"""

from __future__ import annotations

import errno
import importlib
import inspect
import io
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from nervamem import MemoryStore
from nervamem.cli import app as whole_app
from nervamem.cli import context, direct, main, root, startup
from nervamem.errors import NotFoundError
from tests.conftest import CountingRandom, FakeClock

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL


def click_command(name: str) -> Any:
    group = typer.main.get_command(root.command_tree([name, "x"]))
    return group.commands[name]  # type: ignore[attr-defined]


# Click's parameter types, by what they convert a value with.
CONVERTERS = {"int": int, "float": float, "str": direct.as_given}


@pytest.mark.parametrize("name", sorted(direct.COMMANDS))
def test_the_tables_are_the_click_commands(name: str) -> None:
    command = direct.COMMANDS[name]
    click = click_command(name)
    defaults = {
        p.name: p.default
        for p in inspect.signature(command.body).parameters.values()
        if p.default is not inspect.Parameter.empty
    }
    options: dict[str, tuple[str, object]] = {}
    multiple = set()
    for param in click.params:
        if param.param_type_name == "argument":
            continue
        assert not param.is_flag and param.nargs == 1 and param.envvar is None, param.name
        for opt in [*param.opts, *param.secondary_opts]:
            options[opt] = (param.name, CONVERTERS[param.type.name])
        if param.multiple:
            multiple.add(param.name)
        assert param.default == defaults[param.name], param.name
    assert {opt: (p, c) for opt, (p, c) in command.options.items()} == options
    assert command.multiple == multiple
    arguments = [p for p in click.params if p.param_type_name == "argument"]
    assert command.arguments == tuple(p.name for p in arguments)
    assert all(p.required and p.nargs == 1 for p in arguments)


def test_main_offers_direct_the_commands_it_knows() -> None:
    assert set(direct.COMMANDS) == startup.DIRECT_COMMANDS


def test_the_root_options_are_the_root_commands() -> None:
    group = typer.main.get_command(root.build_app(()))
    taking_values = {
        opt: param.name
        for param in group.params
        if not getattr(param, "is_flag", False)
        for opt in param.opts
    }
    fields = {"db": "db", "namespace": "namespace", "fmt": "fmt", "tokenizer": "tokenizer"}
    assert {opt: fields[name] for opt, name in taking_values.items()} == direct.ROOT_OPTIONS


# ------------------------------------------------------------------ parse() is Click's parse
ROOTS = direct.ROOT_OPTIONS
WORDS = [
    "recall", "store", "fact", "auth tokens", "-", "", "x", "--", "-h", "--help", "-V",
    "--budget", "-b", "--budget=3", "-b5", "-b=5", "5", "+7", "1_0", " 8 ", "nope", "-3",
    "--hops", "--min-score", "--min-score=0.5", "0.3", "nan", "1e3", "--as-of", "2026-03-15",
    "--known-at", "--kind", "-k", "decision", "--tokenizer", "char", "--db", "--db=f.db",
    "f.db", "--ns", "--ns=team", "team", "--format", "-f", "json", "--format=json", "-fjson",
    "--entity", "-e", "AuthService", "--confidence", "0.5", "--valid-from", "--valid-until",
    "--supersedes", "--contradicts", "--caused-by", "--derived-from", "--rationale",
    "--rejected", "--session", "--bogus", "--Budget",
]  # fmt: skip


def normalised(body: Callable[..., None], settings: context.Settings, values: dict[str, Any]):  # type: ignore[no-untyped-def]
    """Every parameter of ``body`` with its value (a default where not given), a repeated
    option's values as a tuple (Typer gives None when none is given, parse() leaves it
    out: the body reads both as nothing), and the root settings."""
    multiple = {c.body.__name__: c.multiple for c in direct.COMMANDS.values()}[body.__name__]
    complete = {}
    for name, param in inspect.signature(body).parameters.items():
        if name != "settings":
            value = values.get(name, param.default)
            complete[name] = tuple(value or ()) if name in multiple else value
    return (
        body.__name__,
        (settings.db, settings.namespace, settings.fmt, settings.tokenizer),
        complete,
    )


def through_click(args: list[str], monkeypatch: pytest.MonkeyPatch) -> object:
    """What Click makes of ``args``: the body called with its values, or the exit code."""
    seen: list[object] = []
    for name in ("store_memory", "recall_memories"):
        body = getattr(direct, name)

        def record(settings: context.Settings, *values: Any, _body: Any = body, **named: Any):  # type: ignore[no-untyped-def]
            arguments = [p for p in inspect.signature(_body).parameters if p != "settings"]
            given = {**dict(zip(arguments, values, strict=False)), **named}
            seen.append(normalised(_body, settings, given))

        monkeypatch.setattr(direct, name, record)
    try:
        root.command_tree(args)(args=args, prog_name="nervamem", standalone_mode=False)
    except SystemExit as exit:
        return ("exit", exit.code)
    finally:
        monkeypatch.undo()
    return seen[0] if len(seen) == 1 else seen


VALUES = [
    "auth tokens", "-", "", "x", "5", "+7", "1_0", " 8 ", "nope", "-3", "0.3", "nan", "1e3",
    "2026-03-15", "decision", "char", "json", "f.db", "team", "store", "recall",
]  # fmt: skip


@st.composite
def argument_lists(draw: st.DrawFn) -> list[str]:
    """Mostly what parse() accepts: root options, a command, then its arguments and
    options (``--opt value`` or ``--opt=value``) in any order; now and then any word."""
    name = draw(st.sampled_from(sorted(direct.COMMANDS)))
    command = direct.COMMANDS[name]

    def option() -> list[str]:
        opt = draw(st.sampled_from(sorted({*command.options, *ROOTS})))
        value = draw(st.sampled_from(VALUES))
        if opt.startswith("--") and draw(st.booleans()):
            return [f"{opt}={value}"]
        return [opt, value]

    args: list[str] = []
    for _ in range(draw(st.integers(0, 2))):
        opt, value = draw(st.sampled_from(sorted(ROOTS))), draw(st.sampled_from(VALUES))
        args += [f"{opt}={value}"] if opt.startswith("--") and draw(st.booleans()) else [opt, value]
    args.append(name)
    arguments = len(command.arguments) + draw(st.sampled_from([0, 0, 0, 0, -1, 1]))
    pieces = [[draw(st.sampled_from(VALUES))] for _ in range(arguments)]
    pieces += [option() for _ in range(draw(st.integers(0, 4)))]
    pieces += [[draw(st.sampled_from(WORDS))] for _ in range(draw(st.sampled_from([0, 0, 1])))]
    for piece in draw(st.permutations(pieces)):
        args += piece
    return args


@settings(max_examples=500, deadline=None)
@given(argument_lists() | st.lists(st.sampled_from(WORDS), max_size=9))
def test_what_parse_accepts_click_parses_alike(args: list[str]) -> None:
    call = direct.parse(args)
    if call is None:
        return  # Typer's own path
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.delenv("_NERVAMEM_COMPLETE", raising=False)
        expected = through_click(args, monkeypatch)
    assert comparable(normalised(call.command.body, call.settings, call.values)) == comparable(
        expected
    ), args


def comparable(value: Any) -> Any:
    """NaN (``--min-score nan``) as a string, in dicts, lists and tuples: NaN equals
    nothing, not even another NaN, so two equal parses compared unequal."""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return {key: comparable(item) for key, item in value.items()}
    if type(value) in (list, tuple):
        return type(value)(comparable(item) for item in value)
    return value


def test_parse_declines_what_only_typer_knows(monkeypatch: pytest.MonkeyPatch) -> None:
    accepted = ["recall", "auth", "--budget", "300", "--db", "f.db", "-k", "fact", "-k", "x"]
    assert direct.parse(accepted) is not None
    assert direct.parse(["--db=f.db", "store", "fact", "x", "--entity=A"]) is not None
    for args in (
        ["recall", "auth", "--help"],
        ["recall", "auth", "--", "x"],
        ["recall", "auth", "-b300"],
        ["recall", "auth", "--budget", "3", "--budget", "4"],
        ["--db", "a", "recall", "auth", "--db", "b"],
        ["recall", "auth", "--budget", "lots"],
        ["recall", "auth", "--as-of", "-1"],
        ["recall"],
        ["recall", "a", "b"],
        ["-fjson", "recall", "auth"],
        ["--version"],
        ["stats"],
        [],
    ):
        assert direct.parse(args) is None, args
    monkeypatch.setenv("_NERVAMEM_COMPLETE", "complete_bash")
    assert direct.parse(accepted) is None
    monkeypatch.delenv("_NERVAMEM_COMPLETE")
    monkeypatch.setenv("NERVAMEM_DEBUG", "1")
    assert direct.parse(accepted) is None


# ------------------------------------------------------------- both ways on a real store
def runners(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> tuple[Callable[..., tuple[int, str, str]], Callable[..., tuple[int, str, str]]]:
    """Two runners, each on its own store with its own fixed clock and IDs: through
    Typer (the whole app, CliRunner) and through main(), which takes the direct way."""
    made: dict[str, tuple[FakeClock, CountingRandom]] = {}

    def factory_for(which: str) -> Callable[..., MemoryStore]:
        clock, random = made.setdefault(which, (FakeClock(), CountingRandom()))

        def factory(db: str | None, namespace: str | None, migrate: bool = True) -> MemoryStore:
            return MemoryStore(
                db, namespace=namespace, clock=clock, random_source=random, migrate=migrate
            )

        return factory

    def typer_way(*args: str, input: str = "") -> tuple[int, str, str]:
        monkeypatch.setattr(context, "store_factory", factory_for("typer"))
        monkeypatch.setenv("NERVAPACK_MEMORY_DB", str(tmp_path / "typer" / "memory.db"))
        result = CliRunner().invoke(whole_app, list(args), input=input)
        return result.exit_code, result.stdout, result.stderr

    def direct_way(*args: str, input: str = "") -> tuple[int, str, str]:
        assert direct.parse(list(args)) is not None, args
        monkeypatch.setattr(context, "store_factory", factory_for("direct"))
        monkeypatch.setenv("NERVAPACK_MEMORY_DB", str(tmp_path / "direct" / "memory.db"))
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(input.encode())))
        monkeypatch.setattr(sys, "stdout", sys.stdout)  # restored after a broken pipe
        monkeypatch.setattr(sys, "stderr", sys.stderr)
        capsysbinary.readouterr()
        try:
            main(list(args))
        except SystemExit as exit:
            code = exit.code
        else:
            code = 0
        out, err = capsysbinary.readouterr()
        return int(code or 0), out.decode(), err.decode()

    return typer_way, direct_way


COMMANDS: list[tuple[tuple[str, ...], str]] = [
    (("store", "decision", "Chose JWT for auth", "-e", "AuthService", "--rationale", "x"), ""),
    (("store", "fact", "tokens last 15 minutes", "-e", "auth_service", "-f", "json"), ""),
    (("store", "action", "-", "--confidence", "0.5", "--format=json"), "ran the migration\n"),
    (("store", "fact", "ttl is 900 s", "--supersedes", "f-"), ""),
    (("store", "opinion", "x"), ""),
    (("store", "fact", "x", "--valid-from", "yesterday-ish"), ""),
    (("recall", "auth"), ""),
    (("recall", "auth", "--format", "json", "--budget", "120"), ""),
    (("--format", "json", "recall", "JWT", "-k", "decision", "--hops", "0"), ""),
    (("recall", "-", "--min-score", "0.5"), "auth tokens"),
    (("recall", "auth", "-f", "table"), ""),
    (("recall", "auth", "-f", "xml"), ""),
    (("recall", "auth", "--tokenizer", "bytes"), ""),
    (("recall", "auth", "--as-of", "not a date"), ""),
    (("recall", ""), ""),
    (("recall", "auth", "--db", "missing/memory.db"), ""),
    (("--db", "missing/memory.db", "recall", "auth", "-f", "json"), ""),
    (("recall", "auth", "--ns", "elsewhere"), ""),
]


def test_each_command_runs_alike_both_ways(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    monkeypatch.delenv("NERVAMEM_FORMAT", raising=False)
    monkeypatch.chdir(tmp_path)
    typer_way, direct_way = runners(monkeypatch, tmp_path, capsysbinary)
    for args, stdin in COMMANDS:
        expected = typer_way(*args, input=stdin)
        got = direct_way(*args, input=stdin)
        assert got == tuple(
            x.replace("typer", "direct") if isinstance(x, str) else x for x in expected
        ), args


@pytest.mark.parametrize(
    "failure",
    [
        NotFoundError("nothing like that"),
        KeyboardInterrupt(),
        EOFError(),
        BrokenPipeError(errno.EPIPE, "Broken pipe"),
        BrokenPipeError(errno.ESHUTDOWN, "shut down"),
        PermissionError(errno.EACCES, "Permission denied", "/somewhere/memory.db"),
        RuntimeError("a bug"),
    ],
    ids=lambda exc: type(exc).__name__ + str(getattr(exc, "errno", "") or ""),
)
@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_failures_end_alike_both_ways(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
    failure: BaseException,
    fmt: str,
) -> None:
    def fail(*args: Any, **kwargs: Any) -> None:
        raise failure

    typer_way, direct_way = runners(monkeypatch, tmp_path, capsysbinary)
    for way in (typer_way, direct_way):
        assert way("store", "fact", "auth tokens last 15 minutes")[0] == 0
    monkeypatch.setattr(MemoryStore, "recall", fail)
    expected = typer_way("recall", "auth", "-f", fmt)
    assert direct_way("recall", "auth", "-f", fmt) == expected


def test_an_import_that_fails_early_fails_in_the_command(
    monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """prepare() imports ahead of the command; an import that fails there is met again
    inside run() and reported in one line, as Typer's way reports it."""
    missing = "nervamem.no_such_module"

    def body(settings: context.Settings, **values: Any) -> None:
        importlib.import_module(missing)

    call = direct.parse(["recall", "auth"])
    assert call is not None
    monkeypatch.setattr(call.command, "imports", (missing,))
    monkeypatch.setattr(call.command, "body", body)
    direct.prepare(call)  # no exception here
    assert direct.run(call, ["recall", "auth"]) == 1
    message = f"internal error: ModuleNotFoundError: No module named '{missing}'"
    assert capsysbinary.readouterr().err.decode() == f"nervamem: error: {message}\n"
