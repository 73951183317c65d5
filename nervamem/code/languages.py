"""The languages the code bridge reads, by file suffix: Python through :mod:`ast`, the
others through a tree-sitter grammar package (the ``code`` extra). Only names live here;
nothing is imported until a file of that language is parsed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath


@dataclass(frozen=True)
class SourceLanguage:
    """A language: its name, the module and function that give its tree-sitter grammar
    (empty for Python), and the separator its users write between qualified parts."""

    name: str
    grammar_module: str
    grammar_function: str
    separator: str


PYTHON = SourceLanguage("Python", "", "", ".")
GO = SourceLanguage("Go", "tree_sitter_go", "language", ".")
RUST = SourceLanguage("Rust", "tree_sitter_rust", "language", "::")
JAVA = SourceLanguage("Java", "tree_sitter_java", "language", ".")
JAVASCRIPT = SourceLanguage("JavaScript", "tree_sitter_javascript", "language", ".")
TYPESCRIPT = SourceLanguage("TypeScript", "tree_sitter_typescript", "language_typescript", ".")
TSX = SourceLanguage("TSX", "tree_sitter_typescript", "language_tsx", ".")

LANGUAGE_BY_SUFFIX: dict[str, SourceLanguage] = {
    ".py": PYTHON,
    ".go": GO,
    ".rs": RUST,
    ".java": JAVA,
    ".js": JAVASCRIPT,
    ".mjs": JAVASCRIPT,
    ".cjs": JAVASCRIPT,
    ".jsx": JAVASCRIPT,
    ".ts": TYPESCRIPT,
    ".mts": TYPESCRIPT,
    ".cts": TYPESCRIPT,
    ".tsx": TSX,
}
SOURCE_SUFFIXES = tuple(LANGUAGE_BY_SUFFIX)
# The grammar packages of the ``code`` extra, which the lazy-import checks keep off the
# paths of ``store`` and ``recall``.
GRAMMAR_MODULES = (
    "tree_sitter",
    *sorted({lang.grammar_module for lang in LANGUAGE_BY_SUFFIX.values() if lang.grammar_module}),
)


def language_of(file_path: str) -> SourceLanguage | None:
    return LANGUAGE_BY_SUFFIX.get(PurePosixPath(file_path).suffix)
