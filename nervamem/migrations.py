"""Ordered registry of named schema migrations.

Each migration runs in one transaction together with its record in ``mem_migrations``;
``PRAGMA user_version`` holds the number applied, so an older nervamem can refuse a store
written by a newer one instead of damaging it. Append only: never edit or reorder.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

Migration = Callable[[sqlite3.Connection], None]


def m001_initial(conn: sqlite3.Connection) -> None:
    from importlib import resources  # only when a store is created: start-up time

    script = resources.files("nervamem").joinpath("schema.sql").read_text(encoding="utf-8")
    for statement in _split_sql(script):
        conn.execute(statement)


def _split_sql(script: str) -> list[str]:
    """Split on ';' at statement ends, keeping trigger bodies (BEGIN ... END;) whole."""
    statements: list[str] = []
    current: list[str] = []
    in_trigger = False
    for line in script.splitlines():
        stripped = line.split("--", 1)[0].strip()
        if not stripped and not current:
            continue
        current.append(line)
        upper = stripped.upper()
        if upper.startswith("CREATE TRIGGER"):
            in_trigger = True
        if in_trigger:
            if upper == "END;":
                statements.append("\n".join(current))
                current, in_trigger = [], False
        elif stripped.endswith(";"):
            statements.append("\n".join(current))
            current = []
    if "".join(current).strip():
        statements.append("\n".join(current))
    return statements


MIGRATIONS: list[tuple[str, Migration]] = [
    ("m001_initial", m001_initial),
]

SCHEMA_VERSION = len(MIGRATIONS)
