"""Choosing the engine: a ``postgresql://`` or ``postgres://`` URL (``--db``,
``NERVAMEM_DB``, ``NERVAPACK_MEMORY_DB``, ``MemoryStore(url)``) opens a PostgreSQL
database (postgres/, psycopg imported only then); any other value, or none, an SQLite
file (sqlite/, located as locate.py says)."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from .engine import Storage, is_url

if TYPE_CHECKING:
    from ..ids import RandomSource


def store_name_in_environment() -> str | None:
    from ..locate import ENV_DB, ENV_DB_NERVAMEM

    for variable in (ENV_DB_NERVAMEM, ENV_DB):
        value = os.environ.get(variable)
        if value:
            return value
    return None


def open_storage(
    name: str | os.PathLike[str] | None = None,
    *,
    namespace: str | None = None,
    clock: Callable[[], datetime] | None = None,
    random_source: RandomSource | None = None,
    busy_timeout_ms: int | None = None,
    migrate: bool = True,
) -> Storage:
    """The engine for ``name`` (a path or URL; None: the environment, then the project
    or home store, as locate.py orders them). ``migrate=False``: a store with an older
    schema is refused (SchemaUpgradeNeededError) instead of upgraded."""
    chosen = name if name is not None else store_name_in_environment()
    if chosen is not None and is_url(os.fspath(chosen)):
        from .postgres import PostgresStorage

        return PostgresStorage(
            os.fspath(chosen),
            namespace=namespace,
            clock=clock,
            random_source=random_source,
            busy_timeout_ms=busy_timeout_ms,
            migrate=migrate,
        )
    from .sqlite import Storage as SqliteStorage

    return SqliteStorage(
        name,
        namespace=namespace,
        clock=clock,
        random_source=random_source,
        busy_timeout_ms=busy_timeout_ms,
        migrate=migrate,
    )
