"""Node IDs: ``{prefix}_{13 hex digits of ms since the epoch}{16 hex random}``.

IDs sort by creation time and are globally unique; storage never shortens them.
Renderers show a *short ID*: the kind prefix, a hyphen and the first hex digits of the
random part (``f-3a9c``), as many as no other node shares (at least four). A prefix of
the whole ID would have to spell out the timestamp up to where neighbours differ:
~11 digits (``f_0019b8d628a``) for memories stored seconds apart, in every line of
every recall. Both forms resolve: a prefix of the ID (``f_0019b8d6``), or the short
form (``f-3a9c``), looked up through an index on the random part (m003).
"""

from __future__ import annotations

import functools
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
RANDOM_DIGITS = 16
# The fewest hex digits of the random part a short ID shows and a short reference must
# give: fewer would make a lookup read a large share of the store's index.
MIN_SHORT_DIGITS = 4


@functools.cache
def _short_ref() -> re.Pattern[str]:
    """The pattern of a short reference, compiled on first use: only resolving what a
    person typed needs it, not a command's start-up."""
    return re.compile(
        r"^(s|f|d|a|o|e|p|pr)-([0-9a-f]{" + f"{MIN_SHORT_DIGITS},{RANDOM_DIGITS}" + "})$"
    )


PREFIX_KIND = {prefix: kind for kind, prefix in KIND_PREFIX.items()}  # "f" -> "fact"

RandomSource = Callable[[], int]


def random_bits() -> int:
    # os.urandom is what secrets.randbits reads too; importing secrets would cost the
    # CLI ~5 ms of start-up (hmac, hashlib, random) on every call.
    return int.from_bytes(os.urandom(8), "big")


def make_id(kind: str, epoch_ms: int, random_value: int) -> str:
    return f"{KIND_PREFIX[kind]}_{epoch_ms:013x}{random_value & (2**64 - 1):016x}"


def short_form(node_id: str, digits: int) -> str:
    """``f_0019b8d628a03a9c...`` with 4 digits -> ``f-3a9c``."""
    prefix = node_id[: node_id.index("_")]
    return f"{prefix}-{node_id[-RANDOM_DIGITS:][:digits]}"


def parse_short(ref: str) -> tuple[str, str] | None:
    """``f-3a9c`` -> (kind, random-part prefix); None when ``ref`` is not that form."""
    match = _short_ref().match(ref)
    return (PREFIX_KIND[match[1]], match[2]) if match else None
