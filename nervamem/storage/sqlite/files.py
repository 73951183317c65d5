"""The store file's checks and its switch to WAL: whether a path can be a store (a
regular file, short enough for SQLite), whether a -wal file holds a frame, and the
journal-mode switch of a new store (whether to switch is decided in __init__.py, by
the schema version). Kept apart from the Storage class because they read the file
system and SQLite's file formats, not the store's rows."""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
import time
from pathlib import Path

from ...errors import BadInputError, NervamemError, StoreError
from ...locate import shown_path

_NOT_REGULAR = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
)
WAL_HEADER_BYTES = 32
WAL_FRAME_HEADER_BYTES = 24
MIN_PAGE_BYTES = 512


def switch_to_wal(conn: sqlite3.Connection, busy_timeout_ms: int) -> None:
    """PRAGMA journal_mode = WAL needs an exclusive lock, and when several processes
    open a new store at once SQLite answers 'locked' at once instead of calling the busy
    handler: retry until the busy timeout, as the handler would have waited."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    while True:
        try:
            # A file system without WAL support answers with the old mode, no error:
            # that is accepted at once, as before.
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(0.01)


def check_store_file(path: Path) -> None:
    """Refuse a path that exists but is not a regular file before SQLite touches it: it
    would open /dev/null and leave /dev/null-journal behind, or wait on a named pipe."""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return  # created on first use; a parent that is a file fails at mkdir
    except OSError as exc:
        raise path_error(exc, f"cannot use {shown_path(path)}") from None
    if not stat.S_ISREG(mode):
        what = next((name for test, name in _NOT_REGULAR if test(mode)), "not a regular file")
        raise StoreError(f"{shown_path(path)} is {what}, not a nervamem store")


# The longest full path, in bytes, of a file SQLite opens: its unix VFS's MAX_PATHNAME
# (512), less the 8 the pager keeps for the "-journal" it may add (pager.c). SQLite
# refuses a longer one ("unable to open database file") only after nervamem has made
# the folders it names.
SQLITE_MAX_PATH_BYTES = 512 - 8


def check_path_length(path: Path) -> None:
    """BadInputError for a store path no SQLite file can have, before anything is made."""
    length = len(os.fsencode(os.path.abspath(path)))
    if length > SQLITE_MAX_PATH_BYTES:
        raise BadInputError(
            f"cannot use {shown_path(path)}: the path is too long for SQLite (at most "
            f"{SQLITE_MAX_PATH_BYTES} bytes as a full path, {length} here)"
        )


def path_error(exc: OSError, doing: str) -> NervamemError:
    if exc.errno == errno.ENAMETOOLONG:  # the path the user gave, not the store, is wrong
        return BadInputError(f"{doing}: the path is too long for this system")
    return StoreError(f"{doing}: {exc.strerror or exc}")


def wal_has_frames(wal: str) -> bool:
    """Whether a -wal file holds at least one whole frame. SQLite ignores a shorter one
    (nothing in it was ever committed); one that cannot be read is assumed to matter."""
    try:
        with open(wal, "rb") as handle:
            header = handle.read(WAL_HEADER_BYTES)
            size = os.fstat(handle.fileno()).st_size
    except FileNotFoundError:
        return False
    except OSError:
        return True
    if len(header) < WAL_HEADER_BYTES:
        return False
    page = max(int.from_bytes(header[8:12], "big"), MIN_PAGE_BYTES)
    return size >= WAL_HEADER_BYTES + WAL_FRAME_HEADER_BYTES + page
