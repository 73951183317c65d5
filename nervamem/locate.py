"""Where the store lives.

Order (cli.md): an explicit path (``--db`` / ``MemoryStore(db_path)``), then
``NERVAPACK_MEMORY_DB``, then ``.nervapack/memory.db`` found walking up from the working
directory, then ``~/.nervapack/memory.db``.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_DB = "NERVAPACK_MEMORY_DB"
STORE_DIR = ".nervapack"
STORE_FILE = "memory.db"


def home_store() -> Path:
    return Path.home() / STORE_DIR / STORE_FILE


def find_project_store(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / STORE_DIR / STORE_FILE
        if candidate.is_file():
            return candidate
    return None


def resolve_db_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    if explicit:
        return Path(explicit).expanduser()
    from_env = os.environ.get(ENV_DB)
    if from_env:
        return Path(from_env).expanduser()
    return find_project_store() or home_store()
