"""What nervamem.cli.typer_compat takes from Typer's private modules still means what it
did. A Typer release that moves or changes any of it fails here, by name, instead of
somewhere in the error edge or the completion scripts."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
import typer
from typer.core import TyperGroup

from nervamem.cli import app, typer_compat

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL


def test_the_exceptions_are_the_ones_typer_raises() -> None:
    assert issubclass(typer.BadParameter, typer_compat.UsageError)
    assert issubclass(typer_compat.NoArgsIsHelpError, typer_compat.UsageError)


def test_the_click_classes_are_the_ones_typer_builds() -> None:
    root = typer.main.get_command(app)
    assert isinstance(root, typer_compat.Command)
    assert isinstance(root.make_context("nervamem", ["stats"]), typer_compat.Context)
    assert issubclass(typer.Context, typer_compat.Context)


def test_the_completion_hook_is_still_there_with_the_same_signature() -> None:
    hook = TyperGroup._main_shell_completion
    ours = typer_compat.CompletingGroup._main_shell_completion
    assert hook is not ours
    assert inspect.signature(hook, eval_str=True) == inspect.signature(ours, eval_str=True)


def test_a_bare_group_still_raises_no_args_is_help(cli: Callable[..., Any]) -> None:
    done = cli("ns")
    assert done.exit_code == 2
    assert done.stdout == ""
    assert done.stderr.startswith("Usage: nervamem ns [OPTIONS] COMMAND [ARGS]...")


def test_completion_scripts_come_from_the_app_itself(cli: Callable[..., Any]) -> None:
    # Not through main(): embedders and CliRunner call the app, and it must answer too.
    for shell in ("bash", "zsh", "fish"):
        done = cli(env={"_NERVAMEM_COMPLETE": f"source_{shell}"})
        assert done.exit_code == 0, done.stderr
        assert f"_NERVAMEM_COMPLETE=complete_{shell}" in done.stdout
