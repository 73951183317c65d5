"""Start-up stays cheap: the commands agents and hooks call on every step import none of
the heavy optional libraries, and the trimmed command tree that main() builds behaves
exactly like the whole one.

Timings are never asserted here (they belong to bench/latency.py); what is asserted is
what makes them: which modules a fresh ``nervamem`` process loads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from nervamem import MemoryStore
from nervamem.cli import app as whole_app
from nervamem.cli import context, root, startup
from nervamem.code.languages import GRAMMAR_MODULES
from tests.conftest import CountingRandom, FakeClock

# Never on the path of store / recall / --version: each costs 10-100 ms to import.
HEAVY = (
    "networkx",
    "rich",
    "tiktoken",
    "yaml",
    "pydantic",
    "typer.testing",
    "typer.rich_utils",
    *GRAMMAR_MODULES,  # tree-sitter: only `code index` and the code queries read other languages
    # The MCP SDK and what it runs on: only `nervamem mcp` serving loads them.
    "mcp",
    "mcp_types",
    "psycopg",
    "anyio",
)

# Runs the real entry point in a fresh interpreter and records every module it loaded.
PROBE = """
import json, sys
from nervamem.cli import main
try:
    main(sys.argv[2:])
except SystemExit as exit:
    code = exit.code
else:
    code = 0
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "modules": sorted(sys.modules)}, out)
"""


def run_fresh(tmp_path: Path, *args: str) -> tuple[int, list[str], str]:
    record = tmp_path / "modules.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NERVAMEM_", "_NERVAMEM"))}
    env["NERVAPACK_MEMORY_DB"] = str(tmp_path / "store" / "memory.db")
    env["HOME"] = str(tmp_path / "home")
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(record), *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(record.read_text())
    return int(data["code"] or 0), list(data["modules"]), result.stdout


def heavy_in(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


@pytest.fixture
def seeded_store(tmp_path: Path) -> Path:
    path = tmp_path / "store" / "memory.db"
    with MemoryStore(path) as store:
        store.start_session("auth rework")
        store.store("decision", "Chose JWT for auth", entities=["AuthService"])
        store.store("fact", "auth tokens last 15 minutes", entities=["auth_service"])
    return path


@pytest.mark.parametrize(
    "args",
    [
        ("store", "fact", "the deploy script needs bash 5", "-e", "DeployScript"),
        ("store", "decision", "Chose JWT", "--format", "json"),
        ("recall", "auth tokens", "--budget", "500"),
        ("recall", "why JWT", "--format", "json"),
        ("timeline", "auth"),
        ("--version",),
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_hot_commands_import_no_heavy_library(
    tmp_path: Path, seeded_store: Path, args: tuple[str, ...]
) -> None:
    code, modules, stdout = run_fresh(tmp_path, *args)
    assert code == 0
    assert stdout.strip()
    assert heavy_in(modules) == []


# What each hot command needs of nervamem itself; everything else stays unloaded.
# A command imports only the command-group module that registers it (cli/root.py).
OTHER_GROUPS = tuple(f"nervamem.cli.{group}" for group in root.GROUPS if group != "memory_commands")
NOT_LOADED = {
    "--version": (
        "sqlite3",
        "dataclasses",
        "nervamem.store",
        "nervamem.models",
        "nervamem.cli.memory_commands",
        *OTHER_GROUPS,
    ),
    # Written plainly, store and recall run without Typer (cli/direct.py).
    "store": ("dataclasses", "nervamem.models", "nervamem.recall", "typer", *OTHER_GROUPS),
    "recall": ("nervamem.writing", "typer", "dataclasses", "inspect", *OTHER_GROUPS),
}


@pytest.mark.parametrize(
    "args",
    [
        ("--version",),
        ("store", "fact", "deploys need bash 5", "-e", "DeployScript"),
        ("recall", "auth tokens", "--budget", "500"),
    ],
    ids=lambda args: args[0],
)
def test_hot_commands_load_only_what_they_use(
    tmp_path: Path, seeded_store: Path, args: tuple[str, ...]
) -> None:
    _, modules, _ = run_fresh(tmp_path, *args)
    assert [m for m in NOT_LOADED[args[0]] if m in modules] == []


def test_recall_builds_only_the_result_classes(tmp_path: Path, seeded_store: Path) -> None:
    # The models are made dataclasses on first use: recall needs two of nine.
    probe = PROBE.replace(
        '"modules": sorted(sys.modules)',
        '"modules": sorted(sys.modules["nervamem.models"].__dict__)',
    )
    record = tmp_path / "names.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NERVAMEM_", "_NERVAMEM"))}
    env["NERVAPACK_MEMORY_DB"] = str(seeded_store)
    subprocess.run(
        [sys.executable, "-c", probe, str(record), "recall", "auth tokens"],
        env=env,
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=60,
    )
    models = {"Node", "RecallItem", "RecallResult", "TimelineItem", "ForgetResult", "Stats"}
    models |= {"NamespaceInfo", "CurrentContext", "InitResult"}
    built = models & set(json.loads(record.read_text())["modules"])
    assert built == {"RecallItem", "RecallResult"}


def test_lazy_models_are_ordinary_frozen_dataclasses() -> None:
    import dataclasses
    import pickle

    from nervamem import models

    assert {"Node", "Stats", "InitResult"} <= set(dir(models))
    node = models.Node("n_1", "fact", "x", "default", "2026", None, "2026", 1.0, False, 0, None)
    assert dataclasses.is_dataclass(node) and node.data == {}
    assert (
        models.Node("n_1", "fact", "x", "default", "2026", None, "2026", 1.0, False, 0, None).data
        is not node.data
    )
    assert pickle.loads(pickle.dumps(node)) == node
    assert (
        repr(models.ForgetResult("f_1", True))
        == "ForgetResult(id='f_1', purged=True, removed=(), already=False, "
        "files_not_scrubbed=None)"
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.content = "y"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        models.NoSuchModel  # noqa: B018
    namespace: dict[str, object] = {}
    exec("from nervamem.models import *", namespace)
    assert namespace["Stats"] is models.Stats


FROZEN_MODELS = [
    "Node",
    "RecallItem",
    "RecallResult",
    "TimelineItem",
    "ForgetResult",
    "NamespaceInfo",
    "CurrentContext",
    "Stats",
    "InitResult",
    "SyncReport",
]
VALUES = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.text(max_size=3),
    st.tuples(st.text(max_size=2)),
    st.dictionaries(st.text(max_size=2), st.integers(0, 2), max_size=2),
)


@pytest.mark.parametrize("name", FROZEN_MODELS)
@given(data=st.data())
def test_frozen_models_behave_as_dataclasses_builds_them(name: str, data: st.DataObject) -> None:
    # models.py builds them without compiling methods; dataclasses' own twin is the oracle.
    import dataclasses

    from nervamem import models

    cls = getattr(models, name)
    fields = dataclasses.fields(cls)
    twin = dataclasses.make_dataclass(
        name,
        [
            (
                f.name,
                f.type,
                dataclasses.field(default=f.default, default_factory=f.default_factory),
            )
            for f in fields
        ],
        frozen=True,
    )
    required = [f for f in fields if f.default is f.default_factory is dataclasses.MISSING]
    given_count = data.draw(st.integers(len(required), len(fields)))
    values = [data.draw(VALUES) for _ in range(given_count)]
    keywords = data.draw(st.integers(0, given_count))
    args = values[: given_count - keywords]
    kwargs = {
        f.name: v for f, v in zip(fields[len(args) : given_count], values[len(args) :], strict=True)
    }
    ours, theirs = cls(*args, **kwargs), twin(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert dataclasses.asdict(ours) == dataclasses.asdict(theirs)
    assert dataclasses.replace(ours) == ours
    other = [data.draw(VALUES) for _ in fields]
    assert (cls(*other) == ours) == (twin(*other) == theirs)
    assert (ours == theirs) is False and ours.__eq__(theirs) is NotImplemented
    hashable = all(isinstance(v, (str, int, tuple, type(None))) for v in dataclasses.astuple(ours))
    if hashable:
        assert hash(ours) == hash(theirs)
    for attempt in (lambda: setattr(ours, fields[0].name, 1), lambda: delattr(ours, "x")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            attempt()
    with pytest.raises(TypeError):
        cls(*values, *other)
    if required:
        with pytest.raises(TypeError):
            cls()
    with pytest.raises(TypeError):
        cls(*args, no_such_field=1, **kwargs)
    assert ours.__match_args__ == theirs.__match_args__  # type: ignore[attr-defined]


def test_state_is_an_immutable_value() -> None:
    from nervamem.state import State

    assert State() == State("default", None) and hash(State()) == hash(State("default"))
    assert State("a", "s_1") != State("a", None)
    assert repr(State("a", "s_1")) == "State(namespace='a', session='s_1')"
    with pytest.raises(AttributeError):
        State().namespace = "b"  # type: ignore[misc]


def test_the_entry_point_freezes_start_up_objects_before_the_command(
    tmp_path: Path, seeded_store: Path
) -> None:
    """The process entry point (argv None) freezes what start-up made out of the cyclic
    GC before the command runs; main(argv), an embedder's call, leaves the GC alone."""
    code = (
        "import gc, sys\n"
        "import nervamem.store as s\n"
        "seen = []\n"
        "recall = s.MemoryStore.recall\n"
        "def probe(self, *a, **k):\n"
        "    seen.append(gc.get_freeze_count())\n"
        "    return recall(self, *a, **k)\n"
        "s.MemoryStore.recall = probe\n"
        "from nervamem.cli import main\n"
        "args = ['recall', 'auth tokens']\n"
        "try:\n"
        "    main(args) if sys.argv[1] == 'embedded' else (sys.argv.__setitem__(\n"
        "        slice(1, None), args), main())\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(seen, file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NERVAMEM_", "_NERVAMEM"))}
    env["NERVAPACK_MEMORY_DB"] = str(seeded_store)
    frozen = {}
    for how in ("entry", "embedded"):
        result = subprocess.run(
            [sys.executable, "-c", code, how], env=env, capture_output=True, text=True, check=True
        )
        frozen[how] = json.loads(result.stderr.strip().splitlines()[-1])
    assert frozen["entry"][0] > 1000  # the store and recall modules (cli/direct.py)
    assert frozen["embedded"] == [0]


def test_importing_the_cli_leaves_the_garbage_collector_as_it_was(tmp_path: Path) -> None:
    code = (
        "import gc, sys; gc.disable() if sys.argv[1] == 'off' else None; "
        "import nervamem.cli; print(gc.isenabled(), gc.get_freeze_count() == 0)"
    )
    for state, expected in (("on", "True True"), ("off", "False True")):
        result = subprocess.run(
            [sys.executable, "-c", code, state], capture_output=True, text=True, check=True
        )
        assert result.stdout.strip() == expected


def test_the_probe_would_see_a_heavy_import(tmp_path: Path, seeded_store: Path) -> None:
    # The table renderer is the one place Rich is allowed: the probe must notice it.
    _, modules, _ = run_fresh(tmp_path, "stats", "--format", "table")
    assert "rich" in heavy_in(modules)


@pytest.fixture
def mixed_code_store(tmp_path: Path) -> Path:
    """The store beside a graph of a Python file and a TypeScript file, both indexed a
    minute after their last change (so anchoring trusts the graph)."""
    path = tmp_path / "store" / "memory.db"
    sources = {
        "auth.py": "class AuthService:\n    def login(self):\n        return 1\n",
        "web/session.ts": "export class SessionStore {\n  refresh(): void {}\n}\n",
    }
    past = time.time() - 60
    for name, text in sources.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
        os.utime(tmp_path / name, (past, past))
    with MemoryStore(path) as store:
        assert store.index_code(tmp_path).languages == {"Python": 1, "TypeScript": 1}
    return path


@pytest.mark.parametrize(
    "args",
    [
        ("store", "fact", "login is idempotent", "-e", "AuthService.login"),
        ("store", "fact", "refresh is idempotent", "-e", "SessionStore.refresh"),
        ("recall", "idempotent"),
    ],
    ids=["python symbol", "typescript symbol", "recall"],
)
def test_store_and_recall_beside_a_mixed_graph_import_no_parser(
    tmp_path: Path, mixed_code_store: Path, args: tuple[str, ...]
) -> None:
    """Anchoring reads the sidecar; only a file changed since the index is parsed."""
    code, modules, _ = run_fresh(tmp_path, *args)
    assert code == 0
    assert heavy_in(modules) == []
    with MemoryStore(mixed_code_store) as store:
        touches = store.connection.execute(
            "SELECT count(*) FROM mem_edges WHERE kind = 'TOUCHES'"
        ).fetchone()[0]
    assert touches == (1 if args[0] == "store" else 0)


# ---------------------------------------------------------------------------- trimmed tree
def invoker(
    monkeypatch: pytest.MonkeyPatch, db: Path, *, trimmed: str = ""
) -> Callable[..., tuple[int, str, str]]:
    """Runs commands on the whole tree, or on the tree ``trimmed`` makes of them:
    "app_for" (the whole app trimmed) or "command_tree" (what main() runs: the invoked
    command's module alone, trimmed)."""
    clock, random = FakeClock(), CountingRandom()

    def factory(path: str | None, namespace: str | None, migrate: bool = True) -> MemoryStore:
        return MemoryStore(
            path, namespace=namespace, clock=clock, random_source=random, migrate=migrate
        )

    runner = CliRunner()

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(context, "store_factory", factory)
        monkeypatch.setenv("NERVAPACK_MEMORY_DB", str(db))
        app = whole_app
        if trimmed == "app_for":
            app = startup.app_for(whole_app, list(args))
        elif trimmed == "command_tree":
            app = root.command_tree(list(args))
        result = runner.invoke(app, list(args))
        return result.exit_code, result.stdout, result.stderr

    return run


SEQUENCES = [
    [("--version",), ("-V",)],
    [
        ("session", "start", "auth rework"),
        ("store", "decision", "Chose JWT for auth", "-e", "AuthService", "--rationale", "x"),
        ("store", "fact", "tokens last 15 minutes", "-e", "auth_service", "-f", "json"),
        ("--format", "json", "recall", "auth"),
        ("-fjson", "recall", "JWT", "--budget", "300"),
        ("--ns", "default", "timeline", "auth"),
        ("stats", "--format", "json"),
        ("ns", "current"),
        ("session", "end", "--summary", "done"),
    ],
    [
        ("recall",),
        ("recall", "x", "--budget", "nope"),
        ("recall", "--help"),
        ("store", "--help"),
        ("session", "--help"),
        ("recal", "auth"),
        ("--bogus", "recall", "x"),
        ("--db",),
        ("store", "opinion", "x"),
        ("forget", "f_0"),
        (),
    ],
]


@pytest.mark.parametrize("how", ["app_for", "command_tree"])
@pytest.mark.parametrize("sequence", SEQUENCES, ids=["version", "workflow", "errors"])
def test_trimmed_command_tree_behaves_like_the_whole_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sequence: list[tuple[str, ...]], how: str
) -> None:
    whole = invoker(monkeypatch, tmp_path / "whole" / "memory.db")
    trimmed = invoker(monkeypatch, tmp_path / "trimmed" / "memory.db", trimmed=how)
    for args in sequence:
        expected = whole(*args)
        got = trimmed(*args)
        assert got == (
            expected[0],
            expected[1].replace("whole", "trimmed"),
            expected[2].replace("whole", "trimmed"),
        ), args


def test_main_trims_only_what_it_recognises() -> None:
    def names(args: list[str]) -> list[str]:
        app = startup.app_for(whole_app, args)
        return sorted(
            [c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands]
            + [g.name or "" for g in app.registered_groups]
        )

    everything = names([])
    assert len(everything) > 5
    assert names(["recall", "x"]) == ["recall"]
    assert names(["--db", "recall", "store", "fact", "x"]) == ["store"]
    assert names(["-f", "json", "session", "start"]) == ["session"]
    assert names(["--version"]) == []
    assert names(["--help"]) == everything
    assert names(["recall", "--help"]) == ["recall"]
    assert names(["--", "recall"]) == everything
    assert names(["nope"]) == everything


# ---------------------------------------------------------------------------- first-call work
def test_only_w_h_and_o_match_themselves_case_insensitively() -> None:
    # What lets recall/when.py answer most queries without compiling its pattern.
    import re

    letters = re.compile("[who]", re.IGNORECASE)
    odd = [c for c in map(chr, range(sys.maxunicode + 1)) if letters.fullmatch(c)]
    assert sorted(odd) == sorted("whoWHO")


@given(
    st.lists(
        st.sampled_from(["when did", "WHEN WAS", "how long", "How many days", "what year"])
        | st.sampled_from(["which week", "w", "h", "o", "W", "ı", "İ", "ſ", " ", "x", "?"])
        | st.text(max_size=3),
        max_size=6,
    )
)
def test_asks_for_time_compiles_nothing_it_would_need(parts: list[str]) -> None:
    from nervamem.recall import when

    query = "".join(parts)
    assert when.asks_for_time(query) is (when._asking().search(query) is not None)


@given(st.lists(st.text()))
def test_json_strings_is_json_dumps(values: list[str]) -> None:
    from nervamem.nodes import json_strings

    assert json_strings(values) == json.dumps(values)


@given(st.text(alphabet="ab:/\\C. -+x0", max_size=12))
def test_url_like_paths_are_refused_with_or_without_the_pattern(text: str) -> None:
    from nervamem import locate
    from nervamem.errors import BadInputError

    looks_like_url = locate._url_like().search(text.strip()) is not None
    try:
        locate.refuse_url_like(text, "the store path")
    except BadInputError:
        assert looks_like_url
    else:
        assert not looks_like_url
