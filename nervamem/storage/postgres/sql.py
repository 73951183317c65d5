"""What PostgreSQL says differently from SQLite, for the features that write the same
statement on both engines (engine.py's ``SqlFragments``), and PostgreSQL's way of
writing many rows at once. postgres/__init__.py's PostgresStorage offers them; no feature module
imports this one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...ids import RANDOM_DIGITS
from ..dbapi import Connection


class PostgresFragments:
    ignore_existing_edge = " ON CONFLICT DO NOTHING"
    id_rows = "json_array_elements_text(?::json) AS q(value)"
    # As SQLite's (sqlite/sql.py), the node itself left out by comparing IDs.
    neighbour_parts = (
        "SELECT q.value, (SELECT max({part}) FROM mem_nodes "
        "WHERE {part} <= {value} AND id <> q.value), "
        "(SELECT min({part}) FROM mem_nodes WHERE {part} > {value}) FROM {ids}"
    )

    def random_part(self, column: str) -> str:
        # PostgreSQL's substr counts a negative start from before the string.
        return f"right({column}, {RANDOM_DIGITS})"

    def lower_ascii(self, column: str) -> str:
        """As SQLite's NOCASE: ASCII letters folded, then byte order. The column's ICU
        collation would fold every letter and order '_' before '-' (api_gateway before
        api-gateway), so exports and canonical states would differ between engines;
        under "C", lower() folds ASCII only and compares bytes."""
        return f'lower({column} COLLATE "C")'


FRAGMENTS = PostgresFragments()


def insert_rows(
    conn: Connection, head: str, rows: Sequence[tuple[Any, ...]], columns: int, tail: str = ""
) -> None:
    """All rows in one statement of ``columns`` array parameters, one per column: a
    multi-row VALUES of 4,096 rows is 36,000 parameters that psycopg scans and the
    server parses and types one by one (~1 s a statement, most of a bulk load's time);
    arrays are a few parameters, whatever the number of rows, and one round trip. The
    rows land in the same order, with the same ON CONFLICT handling."""
    assert head.endswith("VALUES "), head
    arrays = [list(column) for column in zip(*rows, strict=True)]
    if len(arrays) != columns:
        raise ValueError(f"rows of {len(arrays)} values for {columns} columns")
    typed = [_typed_array(values) for values in arrays]
    casts = ", ".join(f"?::{cast}" for cast, _ in typed)
    conn.execute(
        f"{head[: -len('VALUES ')]}SELECT * FROM unnest({casts}){tail}",
        [values for _, values in typed],
    )


def _typed_array(values: list[Any]) -> tuple[str, list[Any]]:
    """A column of values as one PostgreSQL array: bigint[] of whole numbers, float8[]
    when a number is not whole (a confidence of 1 beside 0.5 in an import's events),
    else text[]; each value converted to the array's type (psycopg dumps a list by
    its elements' Python type)."""
    numbers = [value for value in values if isinstance(value, (int, float))]
    if not numbers or len(numbers) != sum(value is not None for value in values):
        return "text[]", values
    if all(isinstance(value, int) for value in numbers):
        return "bigint[]", [None if value is None else int(value) for value in values]
    return "float8[]", [None if value is None else float(value) for value in values]
