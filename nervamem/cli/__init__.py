"""The command line: parse, call the core, render. Nothing else lives here."""

from __future__ import annotations

import gc

# Importing Typer and the command tree creates ~20k objects and no garbage worth a
# collection, yet triggers dozens of them: the cyclic GC stays off meanwhile (a few ms
# of every call), and is turned back on for whatever imports this (tests, embedders)
# and for the command itself.
_gc_was_enabled = gc.isenabled()
gc.disable()
try:
    from .commands import app, main
finally:
    if _gc_was_enabled:
        gc.enable()

__all__ = ["app", "main"]
