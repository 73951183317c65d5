"""The source files as they are now: what anchoring and verification trust over the
graph, which may be older than the code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..entities import stripped
from .files import read_source, source_path
from .names import full_segments, segments
from .parsing import GrammarMissing, source_symbols
from .values import PROBLEM_NO_GRAMMAR, REASON_FILE_MISSING, REASON_UNPARSABLE, CodeSymbol

if TYPE_CHECKING:
    from .sidecar import CodeIndex


class LiveSource:
    """The source files as they are now, parsed once per file per operation."""

    def __init__(self, root: Path, index: CodeIndex | None = None) -> None:
        self.root = root
        self._cache: dict[str, tuple[str | None, list[CodeSymbol]]] = {}
        # Where the views read from (code-for, code-to, show): the graph's own symbols
        # of a file nervamem indexed and that has not changed since, instead of a parse.
        self._index = index if index is not None and index.trusted_hashes else None

    def symbols(
        self, file_path: str, *, reread: bool = False
    ) -> tuple[str | None, list[CodeSymbol]]:
        """``(problem, symbols)``: problem is a staleness reason when the file is missing
        or does not parse, :data:`PROBLEM_NO_GRAMMAR` (and no symbols) when no installed
        grammar reads its language. ``reread``: from the file itself, never the graph
        (the graph's symbols carry no lines hash)."""
        if reread:
            cached = self._cache.get(file_path)
            if cached and cached[1] and cached[1][0].lines_hash is None:  # the graph's
                del self._cache[file_path]
        if file_path not in self._cache and not reread and self._index is not None:
            indexed = self._indexed(file_path)
            if indexed is not None:
                problem = REASON_UNPARSABLE if indexed[0].parse_error else None
                self._cache[file_path] = (problem, indexed)
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

    def _indexed(self, file_path: str) -> list[CodeSymbol] | None:
        """The graph's symbols of a file unchanged since it was indexed (same size and
        mtime, outside the racy window), as ``code index`` would parse them; else None."""
        from .graph_file import RACY_WINDOW_NS, as_int

        assert self._index is not None
        module = self._index.file_symbol(file_path)
        if module is None:
            return None
        try:
            stat = source_path(self.root, file_path).stat()
        except OSError:
            return None
        indexed_at = as_int(self._index.attrs.get("indexed_at_ns")) or 0
        if (
            module.file_mtime_ns != stat.st_mtime_ns
            or module.file_size != stat.st_size
            or stat.st_mtime_ns + RACY_WINDOW_NS >= indexed_at
        ):
            return None
        return self._index.file_symbols(file_path)

    def locate(
        self, file_path: str, qualname: str, kind: str, name: str = "", *, reread: bool = False
    ) -> list[CodeSymbol]:
        """The live symbols that an anchor (or graph node) with this qualname denotes."""
        problem, symbols = self.symbols(file_path, reread=reread)
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
