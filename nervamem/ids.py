"""Node IDs: ``{prefix}_{13 hex digits of ms since the epoch}{16 hex random}``.

IDs sort by creation time and are globally unique; storage never shortens them
(renderers may show an unambiguous prefix).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

KIND_PREFIX: dict[str, str] = {
    "session": "s",
    "fact": "f",
    "decision": "d",
    "action": "a",
    "outcome": "o",
    "entity": "e",
    "procedure": "p",
    "preference": "pr",
}

ID_PATTERN = re.compile(r"^(?:s|f|d|a|o|e|p|pr)_[0-9a-f]{29}$")

RandomSource = Callable[[], int]


def random_bits() -> int:
    # os.urandom is what secrets.randbits reads too; importing secrets would cost the
    # CLI ~5 ms of start-up (hmac, hashlib, random) on every call.
    return int.from_bytes(os.urandom(8), "big")


def make_id(kind: str, epoch_ms: int, random_value: int) -> str:
    return f"{KIND_PREFIX[kind]}_{epoch_ms:013x}{random_value & (2**64 - 1):016x}"
