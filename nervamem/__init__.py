"""nervamem: bi-temporal graph memory for AI agents in one SQLite file."""

from __future__ import annotations

from .errors import (
    AmbiguousIdError,
    BadInputError,
    NervamemError,
    NotFoundError,
    StoreError,
)
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
