"""The command line: parse, call the core, render. Nothing else lives here.

root.py makes the app and composes the command groups (memory_commands.py,
session_commands.py, code_commands.py), which share options.py and edge.py; startup.py
holds the start-up tricks and typer_compat.py every use of Typer's private modules.
"""

from __future__ import annotations

from .startup import cyclic_gc_paused

with cyclic_gc_paused():
    from .root import app, main

__all__ = ["app", "main"]
