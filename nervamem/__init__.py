"""nervamem: bi-temporal graph memory for AI agents in one SQLite file or a PostgreSQL
database."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    AmbiguousIdError,
    BadInputError,
    NervamemError,
    NotFoundError,
    StoreError,
)

if TYPE_CHECKING:
    from .store import MemoryStore

__version__ = "0.1.0"

__all__ = [
    "AmbiguousIdError",
    "BadInputError",
    "MemoryStore",
    "NervamemError",
    "NotFoundError",
    "StoreError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    # MemoryStore is imported on first use (PEP 562): `nervamem --version` and the CLI's
    # start-up then do not load SQLite, the state file parser and the store module.
    if name == "MemoryStore":
        from .store import MemoryStore

        globals()["MemoryStore"] = MemoryStore
        return MemoryStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
