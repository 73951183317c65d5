"""Sharing an existing store (``init --shared``): its history becomes event files,
written whole into a folder of another name that becomes the events folder just before
the COMMIT, so that a share killed part-way leaves the store unshared."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import StoreError
from ..storage.event_log import (
    EventLog,
    canonical_json,
    event_path,
    events_folder_beside,
    folder_stamp,
)
from .exchange import history_events
from .sync import month_folders, require_file_store

if TYPE_CHECKING:
    from ..storage.engine import Storage


def share(storage: Storage) -> int:
    """Make an unshared store shared: its history becomes event files, with the original
    IDs and times; returns how many. Idempotent: a shared store is left as it is."""
    require_file_store(storage, "init --shared")
    folder = events_folder_beside(storage.path)
    if storage.events is not None:
        try:
            mark_shared(folder)
        except OSError:
            pass  # best effort: the folder holds events already, or is read-only
        return 0
    import shutil

    from ..durable import write_file_durably

    # The history goes into a folder of another name, which becomes the events folder
    # once whole, just before COMMIT: killed or interrupted part-way, the store is not
    # shared (a store with part of its history in events would lose the rest at the
    # next rebuild of its cache, and a second 'init --shared' would do nothing). All of
    # it under the write lock: a writer that began before commits first and its rows
    # are in the history; one that begins after the rename writes its own event
    # (Storage._notice_sharing).
    staging = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    renamed = False
    events: list[dict[str, Any]] = []
    try:
        with storage.transaction():
            if storage.events is not None:  # shared meanwhile by another process
                return 0
            for leftover in folder.parent.glob(f".{folder.name}.*.tmp"):
                shutil.rmtree(leftover, ignore_errors=True)  # of a share that was killed
            staging.mkdir()
            mark_shared(staging)
            events = history_events(storage)
            for event in events:
                path = event_path(staging, event["id"], event["recorded_at"])
                write_file_durably(path, canonical_json(event), sync=False)
                storage.connection.execute(
                    "INSERT INTO mem_events (id, recorded_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                    (event["id"], event["recorded_at"]),
                )
            for month in month_folders(staging):  # a month's stamp survives the rename
                storage.connection.execute(
                    "INSERT INTO mem_event_folders (folder, stamp) VALUES (?, ?) "
                    "ON CONFLICT (folder) DO UPDATE SET stamp = excluded.stamp",
                    (month, folder_stamp(staging / month)),
                )
            os.sync()  # one flush for every file written, before the store says so
            os.rename(staging, folder)
            renamed = True
            _sync_folder(folder.parent)
    except BaseException as exc:
        shutil.rmtree(folder if renamed else staging, ignore_errors=True)
        storage.events = None  # the store stays unshared
        if isinstance(exc, OSError):
            raise StoreError(f"cannot write events in {folder}: {exc.strerror or exc}") from None
        raise
    storage.events = EventLog(folder)
    return len(events)


EVENTS_README = """\
# nervamem's shared memory

Every file under this folder is one event of the project's memory: a change written by
`nervamem`, never edited. Commit it with the code; after a pull, `nervamem sync` (or the
hooks of `nervamem hooks install`) brings it into your local store. See nervamem's
docs/team-memory.md. This file keeps the folder in git before the first event exists.
"""


def _sync_folder(folder: Path) -> None:
    """fsync a folder, so that a rename in it survives a power loss."""
    handle = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def mark_shared(folder: Path) -> None:
    """Give the events folder a file, so that git keeps it (an empty folder is not
    committed, and a clone without it would not know the store is shared)."""
    readme = folder / "README.md"
    if not readme.exists():
        from ..durable import write_file_durably

        write_file_durably(readme, EVENTS_README)


def check_writable_events(storage: Storage) -> None:
    """Fail before anything changes when a shared store's folder cannot take files."""
    if storage.events is not None and not os.access(storage.events.folder, os.W_OK):
        raise StoreError(f"{storage.events.folder} is not writable; nothing was written")
