"""Where exceptions become exit codes: one line on stderr (or one JSON line), never a
traceback unless NERVAMEM_DEBUG=1."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import typer

from ..errors import ExitCode, NervamemError
from .context import ENV_DEBUG, report
from .startup import ROOT_VALUE_OPTIONS
from .typer_compat import CompletingGroup, Context, NoArgsIsHelpError, UsageError


def hoist_root_options(group: Any, ctx: Context, args: list[str]) -> list[str]:
    """``args`` with the root options given after the command (``recall x --db f.db``)
    moved before it, where the root parses them: every command takes ``--db``, ``--ns``,
    ``--format`` and ``--tokenizer`` wherever they are written. An option the command
    declares itself (``recall --ns``) stays where it is; so does everything after ``--``
    and the value of any option the command declares.
    """
    index = 0
    while index < len(args) and args[index].startswith("-"):
        if args[index] == "--":
            return args
        index += 2 if args[index] in ROOT_VALUE_OPTIONS else 1
    command = group.get_command(ctx, args[index]) if index < len(args) else None
    index += 1
    # Down nested groups (`ns list`) to the command that will run.
    while command is not None and hasattr(command, "get_command"):
        if index >= len(args) or args[index].startswith("-"):
            return args
        command = command.get_command(ctx, args[index])
        index += 1
    if command is None:
        return args
    declared: set[str] = set()
    takes_value: set[str] = set()
    for param in command.params:
        names = [*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ())]
        declared.update(names)
        if (
            not getattr(param, "is_flag", True)
            and getattr(param, "param_type_name", "") == "option"
        ):
            takes_value.update(names)
    front: list[str] = []
    rest = args[:index]
    while index < len(args):
        arg = args[index]
        name = arg.split("=", 1)[0] if arg.startswith("--") else arg
        if arg == "--":
            rest += args[index:]
            break
        if name in ROOT_VALUE_OPTIONS and name not in declared:
            width = 1 if "=" in arg else 2
            if index + width > len(args):
                # Moved to the front without its value, it would take the command's
                # name for one ("No such command 'fact'").
                raise UsageError(f"Option {arg!r} requires an argument.", ctx)
            front += args[index : index + width]
            index += width
            continue
        width = 2 if arg in takes_value else 1
        rest += args[index : index + width]
        index += width
    return front + rest if front else args


def command_group(help: str, context_settings: dict[str, Any]) -> typer.Typer:
    """A sub-app (``nervamem session``, ``ns``, ``hooks``) with the root's error edge and
    ``context_settings`` (options.CONTEXT_SETTINGS); bare, it shows its help."""
    return typer.Typer(
        cls=NervamemGroup, help=help, no_args_is_help=True, context_settings=context_settings
    )


class NervamemGroup(CompletingGroup):
    """Runs the command tree with our own error edge instead of Click's multi-line one."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        if ctx.parent is None:
            args = hoist_root_options(self, ctx, args)
        return list(super().parse_args(ctx, args))

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        try:
            result = super().main(
                argv,
                prog_name=prog_name or "nervamem",
                complete_var=complete_var,
                standalone_mode=False,
                windows_expand_args=windows_expand_args,
                **extra,
            )
        except NervamemError as exc:
            if os.environ.get(ENV_DEBUG) == "1":
                raise
            report(exc.code, int(exc.exit_code), exc.message, argv)
            sys.exit(int(exc.exit_code))
        except NoArgsIsHelpError as exc:
            # A bare group (`nervamem`, `nervamem ns`) shows its help, on stderr since
            # it is not the command's result, with the usage-error exit code.
            sys.stderr.write(exc.format_message() + "\n")
            sys.exit(int(ExitCode.BAD_INPUT))
        except UsageError as exc:
            if os.environ.get(ENV_DEBUG) == "1":
                raise
            hint = ""
            if exc.ctx is not None:
                hint = f" (see '{exc.ctx.command_path} --help')"
            report("usage", int(ExitCode.BAD_INPUT), exc.format_message() + hint, argv)
            sys.exit(int(ExitCode.BAD_INPUT))
        except typer.Abort:
            report("aborted", 1, "aborted", argv)
            sys.exit(1)
        except typer.Exit as exc:
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            sys.exit(130)
        except BrokenPipeError:
            sys.exit(1)
        except Exception as exc:
            if os.environ.get(ENV_DEBUG) == "1":
                raise
            from ..failures import describe  # here: it imports sqlite3, which --version need not

            failure = describe(exc)
            report(failure.code, failure.exit_code, failure.message, argv)
            sys.exit(failure.exit_code)
        if standalone_mode:
            sys.exit(result if isinstance(result, int) else 0)
        return result
