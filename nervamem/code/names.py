"""How an entity name meets a code symbol: bare names (``load``), qualified ones
(``Loader.load``, ``pkg.util.load``, ``pkg/util.py``), each dotted segment normalised like
an entity alias (``AuthService`` = ``auth_service``). The sidecar stores every symbol
under :func:`keys_for` and looks a name up by :func:`lookup_keys`."""

from __future__ import annotations

import re

from ..entities import stripped
from .files import normalise_path
from .languages import SOURCE_SUFFIXES
from .values import CodeSymbol

QUALIFIERS = re.compile(r"\.|::")


def segments(text: str) -> list[str]:
    """Dotted (or ``::``) segments, each normalised like an entity alias."""
    return [seg for seg in (stripped(part) for part in QUALIFIERS.split(text)) if seg]


def full_segments(symbol: CodeSymbol) -> list[str]:
    qual = segments(symbol.qualname)
    module = segments(symbol.module)
    if symbol.kind == "module" or not module:
        return qual or module
    if qual[: len(module)] == module:  # another tool's qualname may already be full
        return qual
    return module + qual


def keys_for(symbol: CodeSymbol) -> set[str]:
    keys = set()
    bare = stripped(symbol.name)
    if bare:
        keys.add(f"b:{bare}")
    full = full_segments(symbol)
    for start in range(len(full) - 1):
        keys.add("q:" + ".".join(full[start:]))
    if symbol.kind == "module":
        keys.add(f"p:{symbol.file_path}")
    return keys


def lookup_keys(name: str) -> tuple[list[str], str | None]:
    """Keys to try for an entity name, and a path suffix for ``LIKE`` when it is a path."""
    text = name.strip()
    path, _, inner = text.partition("::")
    if inner and path.endswith(SOURCE_SUFFIXES):
        norm = normalise_path(path)
        return [f"n:{norm}::{inner.strip()}"], None
    parts = segments(text)
    if "/" in text or "\\" in text:
        norm = normalise_path(text)
        return [f"p:{norm}"], norm
    if text.endswith(SOURCE_SUFFIXES):  # `session.go`, or a function `go` of `session`
        norm = normalise_path(text)
        return [f"p:{norm}", "q:" + ".".join(parts)], norm
    if not parts:
        return [], None
    if len(parts) == 1:
        return [f"b:{parts[0]}"], None
    return ["q:" + ".".join(parts)], None
