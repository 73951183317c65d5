"""Every use of Typer's private modules and hooks, in one place.

Typer vendors Click as ``typer._click`` (plain ``click`` is not installed) and exports
only part of it. What nervamem needs beyond that public API is listed here, each with
the public API that is missing; tests/cli/test_typer_compat.py fails when a new Typer
moves or changes any of it, so an upgrade breaks a test, not the command line.

Importing this module costs nothing at start-up: ``typer._click`` is loaded by Typer
itself, and the completion classes are imported only when a shell asks for completion.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from typing import Any

# Missing public API: Typer exports BadParameter but not its base UsageError, nor the
# NoArgsIsHelpError a bare group raises, nor the Command and Context classes that
# typer.main.get_command() and make_context() return (typer.Context is a subclass).
from typer._click.core import Command, Context
from typer._click.exceptions import NoArgsIsHelpError, UsageError

# Missing public API: the stream wrapper Typer's main puts on stdout and stderr after a
# broken pipe (cli/direct.py does as it does).
from typer._click.utils import PacifyFlushWrapper
from typer.core import TyperGroup

__all__ = [
    "Command",
    "CompletingGroup",
    "Context",
    "NoArgsIsHelpError",
    "PacifyFlushWrapper",
    "UsageError",
]


class CompletingGroup(TyperGroup):
    """A TyperGroup that answers ``_NERVAMEM_COMPLETE=source_bash`` and the like although
    the app is made with ``add_completion=False``.

    add_completion=False keeps --install-completion out of the options, but it also
    skips registering Typer's shell classes, so completion would answer "Shell bash not
    supported". Missing public API: a way to register them without the options. So this
    overrides Click's private ``_main_shell_completion`` hook, which runs before any
    command, to register them only when completion is asked for: ordinary start-up does
    not pay for the import.
    """

    def _main_shell_completion(
        self,
        ctx_args: MutableMapping[str, Any],
        prog_name: str,
        complete_var: str | None = None,
    ) -> None:
        var = complete_var or f"_{prog_name}_COMPLETE".replace("-", "_").upper()
        if os.environ.get(var):
            from typer._completion_classes import completion_init

            completion_init()
        super()._main_shell_completion(ctx_args, prog_name, complete_var)
