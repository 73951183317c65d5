"""The FTS5 index over node content (``mem_fts``): its health and its rebuild.

The index is derived data. ``mem_nodes`` is the truth; every row of the index can be
made again from it, so repairing the index never loses a memory.

Why this exists: FTS5's ``'optimize'`` command places its merged segment one level above
the highest level in use, so a store that ran it after every purge grew its structure
record (``mem_fts_data`` row 10) by a level or two per purge until, past 2,000 levels,
FTS5 refuses to load it ("vtable constructor failed: mem_fts") and every store and recall
fails. ``'rebuild'`` starts from an empty structure instead, and purge uses it. A store
already broken that way cannot run ``'rebuild'`` either (the table will not load), so
:func:`rebuild` first resets the index's shadow tables by hand to an empty, valid index.
"""

from __future__ import annotations

import sqlite3

# Row IDs of FTS5's own records in mem_fts_data (fts5_index.c).
_AVERAGES_ROWID = 1
_STRUCTURE_ROWID = 10
# An empty structure record: a 4-byte cookie, then nLevel = 0, nSegment = 0, nWrite = 0.
_EMPTY_STRUCTURE = bytes(7)
# A healthy index has a handful of levels (automerge keeps it near log16 of its
# segments); more than this means the structure grew as described above.
MAX_HEALTHY_LEVELS = 32


def structure_levels(conn: sqlite3.Connection) -> int | None:
    """The number of levels in the index's structure record, read from the shadow table
    without loading FTS5 (which fails on the broken structure); None if unreadable."""
    row = conn.execute(
        "SELECT block FROM mem_fts_data WHERE id = ?", (_STRUCTURE_ROWID,)
    ).fetchone()
    if row is None or not isinstance(row[0], bytes) or len(row[0]) < 5:
        return None
    levels, _ = _varint(row[0], 4)
    return levels


def is_healthy(conn: sqlite3.Connection) -> bool:
    levels = structure_levels(conn)
    return levels is not None and levels <= MAX_HEALTHY_LEVELS


def rebuild(conn: sqlite3.Connection) -> None:
    """Make the index again from ``mem_nodes``, inside the caller's write transaction.

    The shadow tables are emptied directly and given an empty structure, so this works
    even when FTS5 cannot load the index any more; ``'rebuild'`` then indexes every row.
    """
    conn.execute("DELETE FROM mem_fts_idx")
    conn.execute("DELETE FROM mem_fts_data")
    conn.execute(
        "INSERT INTO mem_fts_data (id, block) VALUES (?, x''), (?, ?)",
        (_AVERAGES_ROWID, _STRUCTURE_ROWID, _EMPTY_STRUCTURE),
    )
    conn.execute("INSERT INTO mem_fts (mem_fts) VALUES ('rebuild')")


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    """SQLite's big-endian base-128 varint (at most 9 bytes) at ``offset``."""
    value = 0
    for index in range(offset, min(offset + 9, len(data))):
        byte = data[index]
        if index == offset + 8:
            return (value << 8) | byte, index + 1
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, index + 1
    return value, len(data)
