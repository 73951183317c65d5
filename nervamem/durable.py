"""Files written whole or not at all: a leaf, so that the CLI, team memory and the
storage layer share one way to do it without importing each other."""

from __future__ import annotations

import os
from pathlib import Path


def write_file_durably(path: Path, text: str, *, sync: bool = True) -> None:
    """Temporary name, fsync, rename, fsync of the folder: the file is whole or absent.
    ``sync=False`` leaves out the two fsyncs (whole or absent still holds after a crash
    of the process, not after a power loss): for event files, whose durability is the
    database's (EventLog.write_event)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    if not sync:
        return
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
