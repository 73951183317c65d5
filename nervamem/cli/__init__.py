"""The nervamem command line: parse, call the core, render. Nothing else lives here."""

from __future__ import annotations

from .commands import app, main

__all__ = ["app", "main"]
