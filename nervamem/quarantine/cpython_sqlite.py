"""Skip SQLite's checkpoint on close on Python 3.10 and 3.11, through CPython internals.

Why: a store that wrote only access counts (a recall) should not checkpoint the WAL when
it closes: two fsyncs (2.2-11.8 ms) and the store file's bytes would change though no
row did (docs/reliability.md, "Logical and byte-level"). SQLite's switch for it is
``sqlite3_db_config(SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE)``. Python 3.12 has the public
``Connection.setconfig``; 3.10 and 3.11 have no public way to reach the ``sqlite3 *``.

Private names used: the ``sqlite3 *`` is the first field after the object header of
CPython's connection object (3.10 and 3.11), read through ``_ctypes``, the C half of
ctypes, and ``_sqlite3.__file__`` to find the library. The public ``ctypes`` package
would read the same field (the object layout is private either way) but builds its ~60
classes and loads libc first: 8.2M -> 1.5M instructions, ~2 ms of a fresh ``recall``
(bench/results.md; docs/architecture.md, "Private APIs").

Tested on: CPython 3.10 and 3.11 (TESTED_PYTHON). Fallback: on 3.12 and later the public
``setconfig``; on any other interpreter or version, nothing: the close checkpoints as
before.
"""

from __future__ import annotations

import sqlite3
import sys

# sqlite3.h: SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE (SQLite 3.16.2 and later).
NO_CKPT_ON_CLOSE = 1006

# The CPython versions whose connection object this module reads; outside them only the
# public API (setconfig, 3.12+) is used.
TESTED_PYTHON = ((3, 10), (3, 11))


def skip_checkpoint_on_close(conn: sqlite3.Connection) -> None:
    """Ask SQLite not to checkpoint the WAL when ``conn`` closes (the -wal and -shm stay;
    the next connection to close after a write checkpoints them). Best effort: where
    neither the public nor the private way works, the close checkpoints as before."""
    setconfig = getattr(conn, "setconfig", None)
    try:
        if setconfig is not None:
            setconfig(NO_CKPT_ON_CLOSE, True)
            return
        if sys.version_info[:2] not in TESTED_PYTHON:
            return  # a layout this module was not written for
        if sys.implementation.name != "cpython" or hasattr(sys, "gettotalrefcount"):
            return  # another layout (PyPy, a debug build's longer object header)
        import os

        if sys.platform == "darwin" and os.uname().machine == "arm64":
            return  # variadic arguments go elsewhere than ctypes puts them
        _db_config_through_ctypes(conn)
    except (AttributeError, OSError, sqlite3.Error, ImportError, TypeError, ValueError):
        return


def _db_config_through_ctypes(conn: sqlite3.Connection) -> None:
    import _ctypes
    import _sqlite3

    # ctypes' c_void_p and c_int (generic to typeshed only), and a C function that
    # returns an int.
    class Pointer(_ctypes._SimpleCData):  # type: ignore[type-arg]
        _type_ = "P"

    class Int(_ctypes._SimpleCData):  # type: ignore[type-arg]
        _type_ = "i"

    class IntFunction(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL
        _restype_ = Int

    conn.total_changes  # noqa: B018  (raises ProgrammingError once closed)
    # The object header: a reference count (Py_ssize_t) and a type, pointer-sized.
    handle = Pointer.from_address(id(conn) + _ctypes.sizeof(Pointer) * 2)
    if not handle.value:
        return
    library = _ctypes.dlopen(_sqlite3.__file__, _ctypes.RTLD_LOCAL)
    db_config = IntFunction(_ctypes.dlsym(library, "sqlite3_db_config"))
    done = Int(0)
    db_config(handle, Int(NO_CKPT_ON_CLOSE), Int(1), _ctypes.byref(done))
