"""What SQLite says differently from PostgreSQL, for the features that write the same
statement on both engines (engine.py's ``SqlFragments``), and SQLite's way of writing
many rows at once. sqlite/__init__.py's Storage offers them; no feature module imports this one."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

from ...ids import RANDOM_DIGITS
from ..dbapi import Connection

# Rows per INSERT: as many as the connection's limit on parameters allows (999 before
# SQLite 3.32, 32766 since; Python before 3.11 cannot ask, so 999), up to a few thousand.
# FTS5 writes its pending index out as a new segment between statements, so fewer,
# larger statements mean fewer segments to write and merge.
MAX_ROWS = 4096
DEFAULT_VARIABLES = 999
BULK_CACHE_KIB = 262_144


class SQLiteFragments:
    # mem_edges is a view (migrations.m007_edges_by_seq) that refuses an upsert and whose
    # trigger leaves an edge already there alone itself.
    ignore_existing_edge = ""
    # The IDs of a JSON array as rows of a column ``value``.
    id_rows = "json_each(?) q"
    # The random parts just before and just after each node's own in the random-part
    # index (m003), for short IDs (nodes.short_ids). The node itself is left out by its
    # seq, which the index holds beside the random part (the node's own seq is read from
    # the ID index): no table row is read.
    neighbour_parts = (
        "SELECT q.value, (SELECT {part} FROM mem_nodes WHERE {part} <= {value} "
        "AND seq IS NOT own.seq ORDER BY {part} DESC LIMIT 1), "
        "(SELECT min({part}) FROM mem_nodes WHERE {part} > {value}) "
        "FROM {ids} LEFT JOIN mem_nodes own ON own.id = q.value"
    )

    def random_part(self, column: str) -> str:
        """The expression that mem_nodes_id_random (m003) indexes: an ID's random part."""
        return f"substr({column}, -{RANDOM_DIGITS})"

    def lower_ascii(self, column: str) -> str:
        """``column`` with its ASCII letters folded, ordered byte by byte (NOCASE)."""
        return f"lower({column})"


FRAGMENTS = SQLiteFragments()


def max_variables(conn: Connection) -> int:
    """How many ``?`` one statement may hold on this connection."""
    import sqlite3

    getlimit = getattr(conn, "getlimit", None)  # Python 3.11+
    limit = getattr(sqlite3, "SQLITE_LIMIT_VARIABLE_NUMBER", None)
    if getlimit is None or limit is None:
        return DEFAULT_VARIABLES
    return int(getlimit(limit))


def insert_rows(
    conn: Connection,
    head: str,
    rows: Sequence[tuple[Any, ...]],
    columns: int,
    variables: int,
    tail: str = "",
) -> None:
    """Multi-row INSERTs of as many rows as the connection's parameter limit allows
    (store_many and an import of events: the FTS trigger flushes once per statement)."""
    most = max(1, min(MAX_ROWS, variables // columns))
    marks = "(" + ",".join(["?"] * columns) + ")"
    for start in range(0, len(rows), most):
        chunk = rows[start : start + most]
        conn.execute(head + ",".join([marks] * len(chunk)) + tail, list(chain.from_iterable(chunk)))


def widen_cache(conn: Connection) -> None:
    """For an import (store_many, sync of many events): it writes all over the edge and
    FTS indexes of a large store, and a page cache of 256 MiB (instead of 64) keeps them
    in memory, ~25 % faster at 300k nodes. It stays for the rest of the connection,
    likely another import."""
    cache = int(conn.execute("PRAGMA cache_size").fetchone()[0])
    if cache > 0:  # a number of pages rather than KiB
        cache = -cache * int(conn.execute("PRAGMA page_size").fetchone()[0]) // 1024
    if -cache < BULK_CACHE_KIB:
        conn.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
