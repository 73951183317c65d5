"""One renderer module per output format; :func:`emit` dispatches to it.

Views are named after the command that produced them. markdown and json return text;
table (the only module that imports Rich, lazily) prints to the terminal itself.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ..errors import BadInputError

FORMATS = ("markdown", "json", "table")
ENV_FORMAT = "NERVAMEM_FORMAT"


def resolve_format(*choices: str | None) -> str:
    """First explicit choice, else NERVAMEM_FORMAT, else table on a terminal, markdown
    when piped."""
    for choice in (*choices, os.environ.get(ENV_FORMAT)):
        if choice:
            chosen = choice.strip().lower()
            if chosen not in FORMATS:
                raise BadInputError(
                    f"unknown format {choice[:40]!r}: use one of {', '.join(FORMATS)}"
                )
            return chosen
    return "table" if sys.stdout.isatty() else "markdown"


def emit(view: str, payload: Any, fmt: str) -> None:
    if fmt == "json":
        from . import json as renderer

        sys.stdout.write(renderer.render(view, payload))
    elif fmt == "table":
        from . import table

        table.render(view, payload)
    else:
        from . import markdown

        sys.stdout.write(markdown.render(view, payload))
    sys.stdout.flush()
