"""A source file to code symbols in whichever language it is written: Python through
:mod:`ast` (:mod:`symbols`), the others through tree-sitter (:mod:`treesitter`).

:func:`source_symbols` raises :class:`treesitter.GrammarMissing` for a file whose
grammar is not installed: the index lists it as skipped, verification as unverifiable.
"""

from __future__ import annotations

from .languages import PYTHON, language_of
from .symbols import python_symbols
from .treesitter import GrammarMissing, tree_symbols
from .values import CodeSymbol

__all__ = ["GrammarMissing", "language_name", "source_symbols"]


def source_symbols(file_path: str, data: bytes) -> list[CodeSymbol]:
    language = language_of(file_path)
    if language is None or language is PYTHON:
        return python_symbols(file_path, data)
    return tree_symbols(file_path, data, language)


def language_name(file_path: str) -> str:
    language = language_of(file_path)
    return language.name if language is not None else PYTHON.name
