"""The package's import rules that import-linter cannot state (pyproject.toml holds the
layer contracts, which `lint-imports` checks in .ci/run): no module of nervamem uses an
underscore name of another module, so a module's private helpers can change without
breaking anyone, and every module's public names are its interface."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "nervamem"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(module: str, level: int, current: str, is_package: bool) -> str:
    if level == 0:
        return module
    base = current.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def foreign_private_uses(source: str, current: str, is_package: bool) -> list[str]:
    """``from other import _name`` and ``other_module._name`` in one module's source."""
    tree = ast.parse(source)
    found: list[str] = []
    imported_modules: dict[str, str] = {}  # local name -> nervamem module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _resolve(node.module or "", node.level, current, is_package)
            if not target.startswith("nervamem"):
                continue
            for alias in node.names:
                if _private(alias.name) and target != current:
                    found.append(f"from {target} import {alias.name}")
                imported_modules[alias.asname or alias.name] = f"{target}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("nervamem"):
                    imported_modules[alias.asname or alias.name] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in imported_modules
            and _private(node.attr)
        ):
            found.append(f"{imported_modules[node.value.id]}.{node.attr}")
    return found


def test_no_module_uses_another_modules_underscore_names() -> None:
    problems = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        uses = foreign_private_uses(
            path.read_text(encoding="utf-8"), _module_name(path), path.name == "__init__.py"
        )
        if uses:
            problems[str(path.relative_to(PACKAGE.parent))] = uses
    assert problems == {}


def test_the_check_sees_both_forms_of_use() -> None:
    source = (
        "from .store import _check_text\n"
        "from . import writing\n"
        "from .ids import make_id\n"
        "writing._Pending()\n"
        "make_id._private_attr\n"
    )
    assert sorted(foreign_private_uses(source, "nervamem.bulk", False)) == [
        "from nervamem.store import _check_text",
        "nervamem.ids.make_id._private_attr",
        "nervamem.writing._Pending",
    ]


def _check_values(schema: str, column: str) -> list[str]:
    import re

    match = re.search(rf"{column}\s+TEXT\s+NOT NULL CHECK \({column} IN \(([^)]*)\)\)", schema)
    assert match, f"no CHECK on {column}"
    return re.findall(r"'([A-Za-z_]+)'", match.group(1))


def test_node_and_edge_kinds_are_declared_once_and_the_schema_agrees() -> None:
    """kinds.py declares the kinds; the schema's CHECKs, the ID prefixes and recall's
    sections must name exactly those (a kind added in one place only fails here)."""
    from nervamem.ids import KIND_PREFIX
    from nervamem.kinds import EDGE_KINDS, NODE_KINDS
    from nervamem.recall.packing import SECTIONS
    from nervamem.storage.sqlite.migrations import EDGE_KIND_CODES

    schema = (PACKAGE / "storage" / "sqlite" / "schema.sql").read_text(encoding="utf-8")
    nodes_table = schema[schema.index("CREATE TABLE mem_nodes") :]
    edges_table = schema[schema.index("CREATE TABLE mem_edges") :]
    assert sorted(_check_values(nodes_table, "kind")) == sorted(NODE_KINDS)
    assert sorted(_check_values(edges_table, "kind")) == sorted(EDGE_KINDS)
    # m007's codes (a frozen copy: a migration creates what it created when written).
    assert EDGE_KIND_CODES == EDGE_KINDS
    assert sorted(KIND_PREFIX) == sorted(NODE_KINDS)
    assert sorted(kind for kind, _ in SECTIONS) == sorted(NODE_KINDS)


def test_recall_module_map_names_every_module_in_import_order() -> None:
    """recall/__init__.py lists each module of the package once, and a module imports
    only those above it in the list."""
    recall = PACKAGE / "recall"
    doc = ast.get_docstring(ast.parse((recall / "__init__.py").read_text(encoding="utf-8")))
    assert doc is not None
    listed = [
        line.split()[0].removesuffix(".py")
        for line in doc.splitlines()
        if line.startswith("    ") and line.split()[0].endswith(".py")
    ]
    modules = sorted(p.stem for p in recall.glob("*.py") if p.stem != "__init__")
    assert sorted(listed) == modules
    for position, name in enumerate(listed):
        tree = ast.parse((recall / f"{name}.py").read_text(encoding="utf-8"))
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    imported.add(node.module.split(".")[0])
                else:
                    imported.update(alias.name for alias in node.names)
        assert imported <= set(listed[:position]), (name, imported - set(listed[:position]))


# Modules that ask the Storage, TextIndex and GraphReads protocols for what differs
# between engines, never which engine they are on (issue 32): all of recall, and entity
# resolution.
ENGINE_BLIND = (
    *sorted(p.relative_to(PACKAGE).as_posix() for p in (PACKAGE / "recall").glob("*.py")),
    "entities.py",
)
# An engine's name, the engine modules (the migrations' SQLite tables among them), or
# the SQLite driver whose errors only an engine may catch.
ENGINE_QUESTION = re.compile(
    r"\.engine\b(?! import)|dialect_of|\bSQLITE\b|\bPOSTGRESQL\b"
    r"|storage\.(sqlite|postgres|migrations)|\bimport sqlite3\b|\bsqlite3\."
)


def test_recall_and_entities_never_ask_which_engine() -> None:
    questions = {
        relative: ENGINE_QUESTION.findall((PACKAGE / relative).read_text(encoding="utf-8"))
        for relative in ENGINE_BLIND
    }
    assert questions == {relative: [] for relative in ENGINE_BLIND}


# Storage modules that every feature may import: the protocol and what both engines
# share. Every other module under nervamem/storage/ belongs to one engine.
ENGINE_NEUTRAL = frozenset(
    {
        "nervamem.storage",
        "nervamem.storage.choose",
        "nervamem.storage.common",
        "nervamem.storage.dbapi",
        "nervamem.storage.engine",
        "nervamem.storage.event_log",
        "nervamem.storage.graph_reads",
        "nervamem.storage.rows",
        "nervamem.storage.text_index",
        "nervamem.storage.tokenizer",
        "nervamem.storage.unicode61",
    }
)
# Names by which a feature would ask which database it is on.
ENGINE_NAMES = frozenset({"SQLITE", "POSTGRESQL", "dialect_of", "IGNORE_EXISTING_EDGE"})
# MemoryStore.engine: the public property that names the engine (API, `stats`), the
# one place outside storage/ that reads it without choosing anything by it.
PUBLIC_ENGINE_NAME = {"nervamem.store": 1}


def engine_checks(source: str, current: str, is_package: bool) -> list[str]:
    """The places in one module's source that ask which database is in use: the engine
    names imported or used, ``x.engine`` read, an engine's own module imported."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            target = _resolve(node.module or "", node.level, current, is_package)
            for alias in node.names:
                module = f"{target}.{alias.name}"
                if alias.name in ENGINE_NAMES:
                    found.append(f"{node.lineno}: imports {alias.name}")
                elif _engine_module(target) or _engine_module(module):
                    found.append(f"{node.lineno}: imports {module}")
        elif isinstance(node, ast.Import):
            found.extend(
                f"{node.lineno}: imports {alias.name}"
                for alias in node.names
                if _engine_module(alias.name)
            )
        elif isinstance(node, ast.Name) and node.id in ENGINE_NAMES:
            found.append(f"{node.lineno}: {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr == "engine":
            found.append(f"{node.lineno}: .engine")
    return found


def _engine_module(module: str) -> bool:
    return module.startswith("nervamem.storage.") and not any(
        module == neutral or module.startswith(neutral + ".")
        for neutral in ENGINE_NEUTRAL - {"nervamem.storage"}
    )


def test_features_never_ask_which_database_they_are_on() -> None:
    """Engines own their differences (issue 32): outside nervamem/storage/ no module
    imports an engine's module or chooses by the engine's name; each asks the Storage
    for a capability instead (storage.sql, insert_rows, prepare_bulk_write, store_file,
    refusals). The public MemoryStore.engine property is the one name left."""
    counts: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        if module == "nervamem.storage" or module.startswith("nervamem.storage."):
            continue
        checks = engine_checks(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")
        if checks:
            counts[module] = len(checks)
    assert counts == PUBLIC_ENGINE_NAME


def test_the_count_sees_every_form_of_asking() -> None:
    source = (
        "from .storage.engine import SQLITE, Connection, dialect_of\n"
        "from .storage import sqlite\n"
        "from .storage.postgres import translate\n"
        "from .storage.rows import link\n"
        "import nervamem.storage.migrations\n"
        "if storage.engine == SQLITE: pass\n"
    )
    assert engine_checks(source, "nervamem.feature", False) == [
        "1: imports SQLITE",
        "1: imports dialect_of",
        "2: imports nervamem.storage.sqlite",
        "3: imports nervamem.storage.postgres.translate",
        "5: imports nervamem.storage.migrations",
        "6: .engine",
        "6: SQLITE",
    ]


# The modules allowed to use another library's private names, one per library; each
# has a test pinning the versions it was written for (tests/test_quarantine.py,
# tests/cli/test_typer_compat.py).
QUARANTINE = {
    "nervamem/cli/typer_compat.py": "typer",
    "nervamem/quarantine/cpython_sqlite.py": "CPython's _ctypes and _sqlite3",
    "nervamem/quarantine/mcp_sdk.py": "mcp",
}
# Underscore-named modules that their library documents as public: the standard
# library's low-level threading primitives (docs.python.org/3/library/_thread.html).
DOCUMENTED_UNDERSCORE_MODULES = {"_thread"}


def _foreign_private_module(module: str) -> bool:
    return module not in DOCUMENTED_UNDERSCORE_MODULES and any(
        _private(part) for part in module.split(".")
    )


def other_library_private_uses(source: str) -> list[str]:
    """Another library's private names in one module's source: an import of a private
    module (``_ctypes``, ``mcp.shared._context_streams``), ``from library import
    _name``, and ``library_module._name`` through a name an import bound."""
    tree = ast.parse(source)
    found: list[str] = []
    imported: dict[str, str] = {}  # local name -> the other library's module or name
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level or (node.module or "").startswith("nervamem"):
                continue
            module = node.module or ""
            if _foreign_private_module(module):
                found.append(f"import {module}")
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"from {module} import {alias.name}")
                imported[alias.asname or alias.name] = f"{module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("nervamem"):
                    continue
                if _foreign_private_module(alias.name):
                    found.append(f"import {alias.name}")
                local = alias.asname or alias.name.split(".")[0]
                imported[local] = alias.name if alias.asname else local
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            root: ast.expr = node.value
            path = [node.attr]
            while isinstance(root, ast.Attribute):
                path.append(root.attr)
                root = root.value
            if isinstance(root, ast.Name) and root.id in imported:
                found.append(".".join([imported[root.id], *reversed(path)]))
    return found


def test_only_the_quarantine_modules_use_another_librarys_private_names() -> None:
    problems = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = str(path.relative_to(PACKAGE.parent))
        uses = other_library_private_uses(path.read_text(encoding="utf-8"))
        if uses and name not in QUARANTINE:
            problems[name] = uses
    assert problems == {}


def test_each_quarantine_module_still_uses_private_names() -> None:
    """A quarantine module that no longer needs its library's private names leaves the
    list (and its version pin can be loosened)."""
    for name in QUARANTINE:
        source = (PACKAGE.parent / name).read_text(encoding="utf-8")
        assert other_library_private_uses(source), name


def test_the_library_check_sees_every_form_of_use() -> None:
    source = (
        "import _ctypes\n"
        "import _thread\n"
        "import json\n"
        "from mcp.server import stdio as sdk_stdio\n"
        "from mcp.shared._context_streams import create_context_streams\n"
        "from typer import _click\n"
        "import anyio.lowlevel\n"
        "from .nodes import row_to_node\n"
        "sdk_stdio._claim_fd(0)\n"
        "anyio.lowlevel._private_thing\n"
        "json.dumps([])\n"
        "row_to_node._cache\n"
        "value._asdict()\n"
    )
    assert sorted(other_library_private_uses(source)) == [
        "anyio.lowlevel._private_thing",
        "from typer import _click",
        "import _ctypes",
        "import mcp.shared._context_streams",
        "mcp.server.stdio._claim_fd",
    ]


def test_the_storage_layer_runs_no_git() -> None:
    """The storage layer captures a write's changes and writes its event file; what git
    makes of them (a purge's files out of the index, whether history holds a copy) is
    team memory's business (team/git.py). No module of storage/ starts a process."""
    starting = []
    for path in sorted((PACKAGE / "storage").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            starting += [f"{path.name}: {name}" for name in names if name == "subprocess"]
    assert starting == []


def test_team_memory_is_one_job_a_module_none_over_400_lines() -> None:
    """Team memory was one module of 1,057 lines doing five jobs (validating, applying,
    syncing, exporting, sharing); team/ keeps each job in a module a reader can hold."""
    long = {
        path.name: lines
        for path in sorted((PACKAGE / "team").glob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert long == {}
