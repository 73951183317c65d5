"""The CLI package is laid out as its concepts, with imports flowing one way:
root -> command-group modules -> options -> edge -> typer_compat, and direct.py (store
and recall without Typer) -> context.py (what commands need that is not Typer's). A
command-group module never imports another one; nothing imports root but the package itself; only
typer_compat touches Typer's private modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import typer

from nervamem.cli import app, startup

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "nervamem" / "cli"
TOOLS = ROOT / "tools"
GROUP_MODULES = {
    "memory_commands",
    "session_commands",
    "code_commands",
    "hook_commands",
    "mcp_commands",
    "team_commands",
}
# What each module may import from inside nervamem/cli (the package itself is "__init__").
ALLOWED = {
    "__init__": {"startup", "root", "direct"},
    "root": GROUP_MODULES | {"context", "edge", "options", "startup"},
    "memory_commands": {"context", "direct", "options"},
    "session_commands": {"edge", "options"},
    "code_commands": {"edge", "options"},
    "hook_commands": {"edge", "options"},
    "mcp_commands": {"context", "options"},
    "team_commands": {"options"},
    "options": {"context"},
    "edge": {"context", "startup", "typer_compat"},
    # store and recall without Typer: Typer's stream wrapper only after a broken pipe.
    "direct": {"context", "typer_compat"},
    "context": set(),
    "startup": set(),
    "typer_compat": set(),
}


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """The sibling modules the file at ``path`` imports relatively, and the absolute ones."""
    siblings: set[str] = set()
    absolute: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                siblings.add(node.module.split(".")[0])
            else:
                siblings.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            absolute.add(node.module)
        elif isinstance(node, ast.Import):
            absolute.update(alias.name for alias in node.names)
    return siblings, absolute


def test_every_module_is_placed() -> None:
    assert {path.stem for path in CLI.glob("*.py")} == set(ALLOWED)


def test_imports_flow_one_way() -> None:
    for module, allowed in ALLOWED.items():
        siblings, _ = _imports(CLI / f"{module}.py")
        assert siblings <= allowed, f"{module} imports {sorted(siblings - allowed)}"


def test_only_typer_compat_imports_typer_private_modules() -> None:
    for path in [*CLI.glob("*.py"), *TOOLS.glob("*.py")]:
        if path == CLI / "typer_compat.py":
            continue
        _, absolute = _imports(path)
        private = sorted(name for name in absolute if name.startswith("typer._"))
        assert private == [], f"{path.name} imports {private}: go through typer_compat"


def test_the_trimmer_knows_every_root_option_that_takes_a_value() -> None:
    # app_for() skips the word after these when it looks for the command's name.
    root = typer.main.get_command(app)
    takes_value = {
        opt
        for param in root.params
        if param.param_type_name == "option" and not getattr(param, "is_flag", False)
        for opt in param.opts
    }
    assert takes_value == startup.ROOT_VALUE_OPTIONS


def _registered(app: typer.Typer) -> list[str]:
    return [startup.command_name(info) for info in app.registered_commands] + [
        str(info.name) for info in app.registered_groups
    ]


def test_groups_name_what_each_module_registers() -> None:
    # main() imports only the module that GROUPS names for the invoked command.
    from nervamem.cli import root

    assert set(root.GROUPS) == GROUP_MODULES
    for group, names in root.GROUPS.items():
        assert sorted(_registered(root.build_app((group,)))) == sorted(names), group
    assert sorted(_registered(app)) == sorted(n for names in root.GROUPS.values() for n in names)
    assert _registered(root.build_app(())) == []
