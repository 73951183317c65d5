"""The part of a DB-API connection that nervamem's SQL is written against:
``execute`` and ``executemany`` with ``?`` placeholders, and cursors of plain tuples.
``sqlite3.Connection`` is one; postgres/'s ``PgConnection`` is another."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    def execute(
        self, sql: str, parameters: Sequence[Any] | Mapping[str, Any] = ..., /
    ) -> Cursor: ...

    def executemany(self, sql: str, seq_of_parameters: Iterable[Sequence[Any]], /) -> Cursor: ...

    def close(self) -> None: ...
