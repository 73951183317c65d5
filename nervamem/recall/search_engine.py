"""Which search a connection's engine runs: recall/search.py (FTS5) on SQLite,
recall/search_postgres.py (term tables) on PostgreSQL, the same candidates either way.
The PostgreSQL module is imported only for a PostgreSQL connection: SQLite's start-up
never pays for it."""

from __future__ import annotations

from collections.abc import Callable

from ..storage.engine import POSTGRESQL, Connection, dialect_of
from .candidates import Candidate
from .search import search


def search_for(conn: Connection) -> Callable[..., dict[str, Candidate]]:
    if dialect_of(conn) == POSTGRESQL:
        from .search_postgres import search as search_postgres

        return search_postgres
    return search
