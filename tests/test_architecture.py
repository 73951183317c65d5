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
    from nervamem.storage.migrations import EDGE_KIND_CODES

    schema = (PACKAGE / "storage" / "schema.sql").read_text(encoding="utf-8")
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
