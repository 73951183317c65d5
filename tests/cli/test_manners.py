"""Command-line manners (clig.dev): --version, help with a summary and an example for
every command (including ones added later), plain text when not on a terminal, NO_COLOR,
and never waiting for an answer no one can give: prompts need a TTY, and the git hook
never holds up or fails a commit."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer

from nervamem import __version__
from nervamem.cli import app

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "nervamem" / "git_hooks" / "post-commit"
ANSI = re.compile(r"\x1b\[([0-9;]*)m")
BOX = re.compile("[\u2500-\u257f]")
RUN_THIS_CHECKOUT = 'exec "' + sys.executable + '" -m nervamem "$@"'


def _command_paths() -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []

    def walk(command: object, path: tuple[str, ...]) -> None:
        paths.append(path)
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            if not getattr(sub, "hidden", False):
                walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return paths


COMMAND_PATHS = _command_paths()


def _all_params() -> list[tuple[str, object]]:
    found: list[tuple[str, object]] = []

    def walk(command: object, path: str) -> None:
        for param in getattr(command, "params", []):
            found.append((f"{path} {param.name}", param))
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(typer.main.get_command(app), "nervamem")
    return found


def _colours(text: str) -> list[str]:
    """SGR codes that set a colour (bold, italic and underline are not colours)."""
    found = []
    for params in ANSI.findall(text):
        for code in params.split(";"):
            if code and (30 <= int(code) <= 49 or 90 <= int(code) <= 107):
                found.append(code)
    return found


def test_version(cli) -> None:  # type: ignore[no-untyped-def]
    for flag in ("--version", "-V"):
        result = cli(flag)
        assert result.exit_code == 0
        assert result.stdout == f"nervamem {__version__}\n"
        assert result.stderr == ""


@pytest.mark.parametrize("path", COMMAND_PATHS, ids=lambda p: " ".join(("nervamem", *p)))
def test_help_has_a_one_line_summary_and_an_example(cli, path: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    result = cli(*path, "--help", env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].startswith(" ".join(("Usage: nervamem", *path)))
    assert lines[1] == "" and lines[2].startswith("  ") and lines[2].strip(), lines[:4]
    assert lines[3] == "", (
        f"the summary of {' '.join(path) or 'nervamem'} takes more than one line at 80 "
        "columns: keep the first paragraph of its help to one short sentence"
    )
    starts = [i for i, line in enumerate(lines) if line.strip() in ("Example:", "Examples:")]
    assert starts, f"add an 'Example:' block (after a \\b line) to the help of {path}"
    example = lines[starts[0] + 1]
    assert example.startswith("    ") and "nervamem" in example, example


@pytest.mark.parametrize("path", [(), ("recall",), ("session", "start")])
def test_help_is_plain_text_even_when_colour_is_forced(cli, path: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    env = {"FORCE_COLOR": "1", "TERM": "xterm-256color", "COLUMNS": "80"}
    result = cli(*path, "--help", env=env)
    assert result.exit_code == 0
    assert "\x1b" not in result.stdout
    assert not BOX.search(result.stdout)


def test_every_command_uses_plain_help() -> None:
    def walk(command: object) -> None:
        assert getattr(command, "rich_markup_mode", None) is None, command
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    walk(typer.main.get_command(app))


@pytest.mark.parametrize(
    ("args", "exit_code"),
    [
        (("forget", "zzzz"), 3),
        (("recall",), 2),
        (("store", "opinion", "x"), 2),
        (("--no-such-option",), 2),
    ],
)
def test_errors_are_one_plain_line(cli, args: tuple[str, ...], exit_code: int) -> None:  # type: ignore[no-untyped-def]
    result = cli(*args, env={"FORCE_COLOR": "1", "TERM": "xterm-256color"})
    assert result.exit_code == exit_code
    assert result.stdout == ""
    assert result.stderr.startswith("nervamem: error: ")
    assert result.stderr.count("\n") == 1
    assert "\x1b" not in result.stderr
    assert "Traceback" not in result.stderr


def test_errors_in_json_mode_are_one_json_line(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("--format", "json", "forget", "zzzz")
    assert result.exit_code == 3
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "not_found" and error["exit_code"] == 3 and error["message"]


def test_no_color_is_honoured_by_the_table_renderer(cli) -> None:  # type: ignore[no-untyped-def]
    assert cli("store", "fact", "the sky is blue", "-e", "sky").exit_code == 0
    args = ("recall", "sky", "--format", "table")
    forced = cli(*args, env={"FORCE_COLOR": "1", "TERM": "xterm-256color"})
    assert forced.exit_code == 0
    assert _colours(forced.stdout), "precondition: forced colour shows colour"
    no_color = cli(*args, env={"FORCE_COLOR": "1", "TERM": "xterm-256color", "NO_COLOR": "1"})
    assert no_color.exit_code == 0
    assert "the sky is blue" in no_color.stdout
    assert _colours(no_color.stdout) == []


def test_piped_output_has_no_escape_codes(cli) -> None:  # type: ignore[no-untyped-def]
    assert cli("store", "fact", "the sky is blue").exit_code == 0
    for args in (("recall", "sky"), ("recall", "sky", "--format", "table"), ("stats",)):
        result = cli(*args)
        assert result.exit_code == 0
        assert "\x1b" not in result.stdout, args


# Nothing waits for an answer when no one can give one.


def test_no_parameter_prompts() -> None:
    prompting = [name for name, param in _all_params() if getattr(param, "prompt", None)]
    assert not prompting, f"options that prompt would hang agents and hooks: {prompting}"


def test_every_confirmation_first_checks_for_a_terminal() -> None:
    for source in sorted((ROOT / "nervamem").rglob("*.py")):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            asks = any(
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute | ast.Name)
                and getattr(node.func, "attr", getattr(node.func, "id", ""))
                in ("confirm", "prompt")
                for node in ast.walk(function)
            )
            if asks:
                assert "isatty" in ast.unparse(function), (
                    f"{source.name}:{function.name} may ask a question: check "
                    "sys.stdin.isatty() first and fail with exit code 2 otherwise"
                )


def test_forget_purge_without_yes_refuses_when_stdin_is_not_a_terminal(cli) -> None:  # type: ignore[no-untyped-def]
    node_id = cli("store", "fact", "keep me").stdout.strip()
    result = cli("forget", node_id, "--purge", input="y\n")
    assert result.exit_code == 2
    assert "--yes" in result.stderr
    assert node_id in cli("timeline", "keep", "--format", "json").stdout


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def test_forget_purge_in_a_real_process_exits_2_at_once(tmp_path: Path) -> None:
    env = _env(NERVAPACK_MEMORY_DB=str(tmp_path / "memory.db"))
    run = [sys.executable, "-m", "nervamem"]
    stored = subprocess.run(
        [*run, "store", "fact", "keep me"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert stored.returncode == 0, stored.stderr
    # stdin is a pipe that stays open and never receives a byte: reading it would hang.
    out_file, err_file = tmp_path / "out", tmp_path / "err"
    with (
        out_file.open("w") as out,
        err_file.open("w") as err,
        subprocess.Popen(
            [*run, "forget", stored.stdout.strip(), "--purge"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=err,
        ) as process,
    ):
        try:
            returncode = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            pytest.fail("forget --purge waited for input with stdin not a terminal")
    assert returncode == 2, err_file.read_text()
    assert out_file.read_text() == ""
    message = err_file.read_text()
    assert message.startswith("nervamem: error:") and "--yes" in message


def _run_with_closed(streams: str, *args: str, env: dict[str, str]) -> tuple[int, str, str]:
    """Run nervamem with some standard streams closed (``<&-``, ``>&-``, ``2>&-``), as a
    launcher or a script may; the others are captured."""
    closing = " ".join({"0": "<&-", "1": ">&-", "2": "2>&-"}[fd] for fd in streams)
    done = subprocess.run(
        ["sh", "-c", f'exec "$@" {closing}', "sh", sys.executable, "-m", "nervamem", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def test_closed_standard_streams_keep_the_exit_code_and_the_contract(tmp_path: Path) -> None:
    env = _env(NERVAPACK_MEMORY_DB=str(tmp_path / "memory.db"))
    run = [sys.executable, "-m", "nervamem"]
    stored = subprocess.run(
        [*run, "store", "fact", "keep me"], env=env, capture_output=True, text=True, timeout=60
    )
    node_id = stored.stdout.strip()
    # stdin closed: no one can be asked, as with any stdin that is not a terminal.
    code, out, err = _run_with_closed("0", "forget", node_id, "--purge", env=env)
    assert (code, out) == (2, "") and "--yes" in err and "internal" not in err
    code, out, err = _run_with_closed("0", "import", "-", env=env)
    assert code == 0 and "internal" not in err, err
    # stderr closed: the message is lost, the exit code is still the documented one.
    assert _run_with_closed("2", "store", "bogus", "text", env=env)[0] == 2
    # stdout closed: the command runs and succeeds; its output goes nowhere.
    code, _, err = _run_with_closed("1", "--format", "json", "store", "fact", "also kept", env=env)
    assert (code, err) == (0, "")
    assert _run_with_closed("1", "stats", env=env)[0] == 0
    listed = subprocess.run(
        [*run, "--format", "json", "list"], env=env, capture_output=True, text=True, timeout=60
    )
    contents = [item["content"] for item in json.loads(listed.stdout)["items"]]
    assert contents == ["also kept", "keep me"]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
@pytest.mark.parametrize("args", [("export",), ("--format", "json", "list"), ("list",)])
def test_output_to_a_full_disk_is_not_an_internal_error(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """``nervamem export > backup.jsonl`` on a full disk said "internal error" (a bug to
    report): it is the system's failure, exit 1 with its reason."""
    env = _env(NERVAPACK_MEMORY_DB=str(tmp_path / "memory.db"))
    run = [sys.executable, "-m", "nervamem"]
    subprocess.run([*run, "store", "fact", "kept"], env=env, check=True, timeout=60)
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [*run, *args], env=env, stdout=full, stderr=subprocess.PIPE, text=True, timeout=60
        )
    assert done.returncode == 1
    assert "internal" not in done.stderr and "No space left on device" in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr


# The post-commit hook records commits and never holds up or fails one.

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    work = tmp_path / "project"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True, env=_env(), timeout=60)
    hook = work / ".git" / "hooks" / "post-commit"
    shutil.copyfile(HOOK, hook)
    hook.chmod(0o755)
    return work


def _shim(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "nervamem"
    shim.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    shim.chmod(0o755)
    return folder


def _commit(repo: Path, message: str, **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    (repo / "file.txt").write_text(message, encoding="utf-8")
    full_env = _env(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
        GIT_CONFIG_NOSYSTEM="1",
        **env,
    )
    subprocess.run(["git", "add", "file.txt"], cwd=repo, env=full_env, check=True, timeout=60)
    started = time.monotonic()
    done = subprocess.run(
        ["git", "-c", "core.hooksPath=.git/hooks", "commit", "-q", "-F", "-"],
        cwd=repo,
        env=full_env,
        input=message,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done, time.monotonic() - started


def _head_subject(repo: Path) -> str:
    return subprocess.run(
        ["git", "log", "-1", "--format=%s"],
        cwd=repo,
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()


@needs_git
def test_hook_records_the_commit_and_its_decision(repo: Path, tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    path = _shim(tmp_path / "bin", RUN_THIS_CHECKOUT)
    done, _ = _commit(
        repo,
        "Switch auth to JWT\n\nDecision: Use JWT for auth\n",
        PATH=f"{path}{os.pathsep}{os.environ['PATH']}",
        NERVAPACK_MEMORY_DB=str(db),
        NERVAMEM_HOOK_FOREGROUND="1",
    )
    assert done.returncode == 0, done.stderr
    from nervamem import MemoryStore

    with MemoryStore(db) as memory:
        items = memory.timeline("JWT")
    kinds = sorted(item.kind for item in items)
    assert kinds == ["action", "decision"], items
    action = next(item for item in items if item.kind == "action")
    assert action.content.startswith("Commit ") and "Switch auth to JWT" in action.content


@needs_git
@pytest.mark.parametrize("foreground", ["0", "1"])
def test_hook_never_fails_a_commit_when_the_store_is_unusable(
    repo: Path, tmp_path: Path, foreground: str
) -> None:
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not a database\n" * 100)
    path = _shim(tmp_path / "bin", RUN_THIS_CHECKOUT)
    done, _ = _commit(
        repo,
        "a commit that memory cannot record",
        PATH=f"{path}{os.pathsep}{os.environ['PATH']}",
        NERVAPACK_MEMORY_DB=str(broken),
        NERVAMEM_HOOK_FOREGROUND=foreground,
    )
    assert done.returncode == 0, done.stderr
    assert _head_subject(repo) == "a commit that memory cannot record"
    assert broken.read_bytes() == b"this is not a database\n" * 100


@needs_git
def test_hook_is_silent_when_nervamem_is_not_installed(repo: Path) -> None:
    done, _ = _commit(repo, "no memory here", NERVAMEM_BIN="/nonexistent/nervamem")
    assert done.returncode == 0
    assert done.stderr == ""
    assert _head_subject(repo) == "no memory here"


@needs_git
def test_hook_in_the_foreground_says_why_when_nervamem_is_not_installed(repo: Path) -> None:
    done, _ = _commit(
        repo, "no memory here", NERVAMEM_BIN="/nonexistent/nervamem", NERVAMEM_HOOK_FOREGROUND="1"
    )
    assert done.returncode == 0
    assert "'/nonexistent/nervamem' is not on PATH" in done.stderr
    assert _head_subject(repo) == "no memory here"


@needs_git
@pytest.mark.parametrize("foreground", ["0", "1"])
def test_hook_does_not_hold_up_a_commit_when_nervamem_hangs(
    repo: Path, tmp_path: Path, foreground: str
) -> None:
    if foreground == "1" and shutil.which("timeout") is None:
        pytest.skip("the foreground time limit needs timeout(1)")
    path = _shim(tmp_path / "bin", "exec sleep 30")
    done, seconds = _commit(
        repo,
        "memory is stuck",
        PATH=f"{path}{os.pathsep}{os.environ['PATH']}",
        NERVAMEM_HOOK_TIMEOUT="1",
        NERVAMEM_HOOK_FOREGROUND=foreground,
    )
    assert done.returncode == 0
    assert _head_subject(repo) == "memory is stuck"
    assert seconds < 15
