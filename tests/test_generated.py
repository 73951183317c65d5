"""Generated files stay generated: the committed completions, man page and CLI reference
are exactly what `python tools/generate.py` makes from the command tree now, and the
hand-written docs name every error code, exit code and environment variable there is."""

from __future__ import annotations

import ast
import importlib
import json
import os
import pkgutil
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import nervamem
from nervamem.errors import ExitCode, NervamemError
from tools import clitree, gen_man, generate

pytestmark = pytest.mark.sqlite_only  # not yet run against PostgreSQL

ROOT = Path(__file__).resolve().parent.parent
REGENERATE = "out of date: run python tools/generate.py and commit the result"


@pytest.fixture(scope="module")
def expected() -> Iterator[dict[str, str]]:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("SOURCE_DATE_EPOCH", raising=False)
        yield generate.expected()


@pytest.mark.parametrize("path", sorted(generate.targets()))
def test_committed_file_is_what_the_generator_makes(expected: dict[str, str], path: str) -> None:
    committed = ROOT / path
    assert committed.is_file(), f"{path} is missing: run python tools/generate.py"
    assert committed.read_text(encoding="utf-8") == expected[path], f"{path} is {REGENERATE}"


def test_no_leftover_files_in_generated_directories(expected: dict[str, str]) -> None:
    leftovers = generate.leftovers(expected)
    assert not leftovers, f"no longer generated: {leftovers}; run python tools/generate.py"


def test_check_mode_agrees(expected: dict[str, str]) -> None:
    assert generate.stale(expected) == []


def test_generation_ignores_terminal_width_and_clock(
    expected: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "37")
    monkeypatch.setenv("LINES", "5")
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    commands = list(clitree.walk())
    from tools import gen_docs

    assert gen_docs.render(commands, nervamem.__version__) == expected["docs/cli.md"]
    assert gen_man.render(commands, nervamem.__version__) == expected["man/nervamem.1"]


def test_man_page_date_comes_from_source_date_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    page = gen_man.render(list(clitree.walk()), "9.9")
    assert '.TH NERVAMEM 1 "1970-01-01" "nervamem 9.9"' in page
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert clitree.source_date() == "2026-01-01"


def test_every_command_is_in_the_man_page_and_the_reference() -> None:
    page = (ROOT / "man/nervamem.1").read_text(encoding="utf-8")
    reference = (ROOT / "docs/cli.md").read_text(encoding="utf-8")
    for command in clitree.walk():
        assert f"## {command.name}\n" in reference, command.name
        if len(command.path) > 1:
            assert f".SS\n{gen_man.escape(command.name)}\n" in page, command.name


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_man_page_renders_without_warnings() -> None:
    done = subprocess.run(
        ["groff", "-man", "-Tutf8", "-ww", "-z", str(ROOT / "man/nervamem.1")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr


@pytest.mark.parametrize("shell", sorted(generate.SHELLS))
def test_completion_source_comes_from_the_cli(shell: str) -> None:
    script = generate.completion_script(shell)
    assert "_NERVAMEM_COMPLETE=complete_" + shell in script
    assert "nervamem" in script


def _shim(folder: Path) -> Path:
    """A `nervamem` on PATH that runs this checkout with this interpreter."""
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "nervamem"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m nervamem "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    return folder


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completion_script_completes_commands_and_kinds(tmp_path: Path) -> None:
    bin_dir = _shim(tmp_path / "bin")
    script = ROOT / "completions/nervamem.bash"
    probe = (
        f'source "{script}"\n'
        'complete_words() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1));'
        ' _nervamem_completion nervamem; echo "${COMPREPLY[*]}"; }\n'
        "complete_words nervamem rec\n"
        "complete_words nervamem store dec\n"
        "complete_words nervamem recall x --format js\n"
    )
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", probe],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["recall", "decision", "json"]


@pytest.mark.parametrize(
    ("shell", "extra", "expected"),
    [
        ("zsh", {}, '"recall":"Recall what is relevant'),
        ("fish", {"_TYPER_COMPLETE_FISH_ACTION": "get-args"}, "recall\tRecall what is relevant"),
    ],
)
def test_zsh_and_fish_completion_answer(
    cli: Callable[..., Any], shell: str, extra: dict[str, str], expected: str
) -> None:
    env = {"_NERVAMEM_COMPLETE": f"complete_{shell}", "_TYPER_COMPLETE_ARGS": "nervamem rec"}
    done = cli(env={**env, **extra})
    assert done.exit_code == 0
    assert expected in done.stdout


def test_completion_of_namespaces_reads_the_store_without_creating_one(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    assert cli("ns", "switch", "project_b").exit_code == 0
    env = {
        "COMP_WORDS": "nervamem ns switch proj",
        "COMP_CWORD": "3",
        "_NERVAMEM_COMPLETE": "complete_bash",
    }
    done = cli(env=env)
    assert done.stdout.split() == ["project_b"]
    missing = tmp_path / "nowhere" / "memory.db"
    done = cli(env={**env, "NERVAPACK_MEMORY_DB": str(missing)})
    assert done.stdout.split() == []
    assert not missing.exists()


# Hand-written documents must keep up with the code.


def _all_error_codes() -> set[str]:
    for module in pkgutil.walk_packages(nervamem.__path__, "nervamem."):
        if module.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(module.name)
        except Exception:  # e.g. an optional dependency is missing: its errors are too
            continue
    codes: set[str] = set()
    pending: list[type[NervamemError]] = [NervamemError]
    while pending:
        cls = pending.pop()
        codes.add(cls.code)
        pending.extend(cls.__subclasses__())
    for source in (ROOT / "nervamem/cli").glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "report"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                codes.add(node.args[0].value)
    return codes


def test_exit_codes_doc_names_every_error_code_and_exit_code() -> None:
    doc = (ROOT / "docs/exit-codes.md").read_text(encoding="utf-8")
    missing = sorted(code for code in _all_error_codes() if f"`{code}`" not in doc)
    assert not missing, f"document these error codes in docs/exit-codes.md: {missing}"
    described = {code for code, _ in clitree.EXIT_STATUS}
    assert described == {int(code) for code in ExitCode}, "update EXIT_STATUS in tools/clitree.py"


def _environment_variables_read_by_the_package() -> set[str]:
    names: set[str] = set()
    pattern = re.compile(r"[\"']((?:NERVAMEM|NERVAPACK)_[A-Z0-9_]+)[\"']")
    for source in (ROOT / "nervamem").rglob("*.py"):
        names.update(pattern.findall(source.read_text(encoding="utf-8")))
    return names | {"NO_COLOR"}


def test_every_environment_variable_is_documented() -> None:
    doc = (ROOT / "docs/exit-codes.md").read_text(encoding="utf-8")
    in_man = {name for name, _ in clitree.ENVIRONMENT}
    for name in sorted(_environment_variables_read_by_the_package()):
        assert f"`{name}`" in doc, f"document {name} in docs/exit-codes.md"
        assert name in in_man, f"add {name} to ENVIRONMENT in tools/clitree.py"


def test_json_doc_covers_every_command() -> None:
    doc = (ROOT / "docs/json.md").read_text(encoding="utf-8")
    for command in clitree.walk():
        if command.is_group:
            continue
        assert f"`{command.name}`" in doc, f"describe the JSON of {command.name} in docs/json.md"


def test_agent_tool_definitions_are_valid_json() -> None:
    doc = (ROOT / "docs/guide-agents.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```json\n(.*?)```", doc, flags=re.S)
    assert blocks
    tools = [json.loads(block) for block in blocks]
    names = {
        tool["name"] for group in tools for tool in (group if isinstance(group, list) else [group])
    }
    assert {"memory_store", "memory_recall", "memory_timeline", "memory_forget"} <= names


def test_pre_commit_runs_offline_with_local_hooks_only() -> None:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    assert [repo["repo"] for repo in config["repos"]] == ["local"]
    hooks = {hook["id"]: hook for hook in config["repos"][0]["hooks"]}
    assert {"ruff-check", "ruff-format", "mypy", "generated-files"} <= set(hooks)
    assert all(hook["language"] == "system" for hook in hooks.values())
    assert hooks["generated-files"]["entry"] == "python tools/generate.py --check"


def test_agent_dispatcher_in_the_guide_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = (ROOT / "docs/guide-agents.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"```python\n(.*?)```", doc, flags=re.S)
    namespace: dict[str, object] = {}
    exec(compile(code, "guide-agents.md", "exec"), namespace)
    run = namespace["run_memory_tool"]
    assert callable(run)
    bin_dir = _shim(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("NERVAPACK_MEMORY_DB", str(tmp_path / "memory.db"))
    tricky = "--rm -rf $HOME `whoami` \"quoted\" 'single' (AND) NEAR* ✓"
    node_id = run("memory_store", {"kind": "fact", "content": tricky, "entities": ["Shell"]})
    assert re.fullmatch(r"f_[0-9a-f]+", node_id), node_id
    recalled = run("memory_recall", {"query": "quoted single", "budget": 300})
    assert tricky in recalled, recalled
    shown = re.findall(r"^- f-([0-9a-f]{4,16}) ", recalled, re.M)
    assert any(node_id[-16:].startswith(digits) for digits in shown), recalled
    timeline = run("memory_timeline", {"query": "whoami"})
    assert tricky in timeline, timeline
    forgot = run("memory_forget", {"id": node_id})
    assert node_id in forgot, forgot
    missing = run("memory_forget", {"id": "zzzz"})
    assert missing.startswith("nervamem: error:"), missing


def test_the_readme_links_every_document_and_docs_stand_alone() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for doc in sorted((ROOT / "docs").glob("*.md")):
        assert f"(docs/{doc.name})" in readme, f"link docs/{doc.name} from the README"
        text = doc.read_text(encoding="utf-8")
        # The specification is not in the repository: a document may not lean on it.
        assert "concepts.md" not in text, f"{doc.name} cites concepts.md"


def test_the_wheel_installs_the_man_page() -> None:
    # A text check: tomllib is Python 3.11+, and 3.10 is supported.
    config = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "[tool.setuptools.data-files]\n" in config
    assert '"share/man/man1" = ["man/nervamem.1"]' in config
