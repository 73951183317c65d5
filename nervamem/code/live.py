"""The source files as they are now: what anchoring and verification trust over the
graph, which may be older than the code."""

from __future__ import annotations

from pathlib import Path

from ..entities import stripped
from .files import read_source, source_path
from .names import full_segments, segments
from .parsing import GrammarMissing, source_symbols
from .values import PROBLEM_NO_GRAMMAR, REASON_FILE_MISSING, REASON_UNPARSABLE, CodeSymbol


class LiveSource:
    """The source files as they are now, parsed once per file per operation."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[str, tuple[str | None, list[CodeSymbol]]] = {}

    def symbols(self, file_path: str) -> tuple[str | None, list[CodeSymbol]]:
        """``(problem, symbols)``: problem is a staleness reason when the file is missing
        or does not parse, :data:`PROBLEM_NO_GRAMMAR` (and no symbols) when no installed
        grammar reads its language."""
        if file_path not in self._cache:
            path = source_path(self.root, file_path)
            try:
                data = read_source(path)
            except OSError:
                self._cache[file_path] = (REASON_FILE_MISSING, [])
            else:
                try:
                    symbols = source_symbols(file_path, data)
                except GrammarMissing:
                    self._cache[file_path] = (PROBLEM_NO_GRAMMAR, [])
                else:
                    problem = REASON_UNPARSABLE if symbols[0].parse_error else None
                    self._cache[file_path] = (problem, symbols)
        return self._cache[file_path]

    def locate(self, file_path: str, qualname: str, kind: str, name: str = "") -> list[CodeSymbol]:
        """The live symbols that an anchor (or graph node) with this qualname denotes."""
        problem, symbols = self.symbols(file_path)
        if not symbols:
            return []
        if kind == "module":
            return [symbols[0]]
        exact = [s for s in symbols[1:] if s.qualname == qualname]
        if exact:
            return exact
        # Another tool's qualname may be module-qualified or otherwise spelt.
        wanted = segments(qualname)
        bare = stripped(name) if name else (wanted[-1] if wanted else "")
        found = []
        for symbol in symbols[1:]:
            own = segments(symbol.qualname)
            if stripped(symbol.name) != bare or not own:
                continue
            if full_segments(symbol) == wanted or wanted[-len(own) :] == own:
                found.append(symbol)
        return found


def nearest(candidates: list[CodeSymbol], line: int | None) -> CodeSymbol:
    return min(candidates, key=lambda s: abs((s.start_line or 0) - (line or 0)))
