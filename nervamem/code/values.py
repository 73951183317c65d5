"""The values of the code bridge: frozen dataclasses that know nothing of SQLite, files
or text output (nervamem/render/ turns the results into text)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# The hash scheme of anchors recorded before token hashes: the symbol's lines
# (symbols.HASH_SCHEME is the one used now).
LINES_SCHEME = "sha256-lines-16"

# Why a memory is stale (StaleItem.reason); LiveSource reports the first two when it
# reads a file.
REASON_FILE_MISSING = "file missing"
REASON_UNPARSABLE = "file does not parse"
REASON_SYMBOL_REMOVED = "symbol removed"
REASON_SOURCE_CHANGED = "source changed"
# The live state of an anchor wherever one is shown (CodeAnchor.state), computed by the
# same check verify-staleness makes: the code under it is unchanged at the recorded lines
# (fresh), unchanged at other lines (moved), changed, gone, or cannot be compared.
STATE_FRESH = "fresh"
STATE_MOVED = "moved"
STATE_CHANGED = "changed"
STATE_REMOVED = "removed"
STATE_FILE_MISSING = REASON_FILE_MISSING
STATE_UNPARSABLE = REASON_UNPARSABLE
STATE_UNVERIFIABLE = "unverifiable"
# Not a staleness reason: LiveSource's word for a file no installed grammar reads, whose
# anchors verification counts as unverifiable.
PROBLEM_NO_GRAMMAR = "no grammar"


@dataclass(frozen=True)
class CodeSymbol:
    """One node of a code graph (ours or another tool's, normalised)."""

    node_id: str
    file_path: str
    kind: str
    name: str
    qualname: str
    module: str = ""
    start_line: int | None = None
    end_line: int | None = None
    source_hash: str | None = None
    parent: str | None = None
    file_mtime_ns: int | None = None
    file_size: int | None = None
    file_hash: str | None = None
    parse_error: str | None = None
    # The hash of the symbol's lines (symbols.LINES_SCHEME), which anchors recorded
    # before token hashes compare with; only symbols read from source carry it.
    lines_hash: str | None = None

    def hash_in(self, scheme: str | None) -> str | None:
        """This symbol's hash in an anchor's scheme (None when it has none in that)."""
        return self.lines_hash if scheme == LINES_SCHEME else self.source_hash

    def contains(self, line: int) -> bool:
        return (
            self.start_line is not None
            and self.end_line is not None
            and self.start_line <= line <= self.end_line
        )


@dataclass(frozen=True)
class CodeAnchor:
    """Where a memory is anchored, as recorded when it was anchored."""

    file_path: str
    start_line: int | None
    end_line: int | None
    graph_node_id: str
    qualname: str = ""
    kind: str = ""
    source_hash: str | None = None
    hash_scheme: str | None = None
    entity_id: str = ""
    entity: str = ""
    # Filled in where an anchor is shown (code-for, code-to, show), never stored: its
    # live state (STATE_*), and the lines as recorded at anchoring and as they are now
    # (None when the symbol is gone or cannot be read).
    state: str | None = None
    lines_recorded: tuple[int, int] | None = None
    lines_now: tuple[int, int] | None = None

    @property
    def location(self) -> str:
        if self.start_line is None:
            return self.file_path
        if self.end_line is None or self.end_line == self.start_line:
            return f"{self.file_path}:{self.start_line}"
        return f"{self.file_path}:{self.start_line}-{self.end_line}"

    def record(self) -> dict[str, Any]:
        """The JSON form kept in edge and entity data (without the entity fields)."""
        data = asdict(self)
        for shown_only in ("entity_id", "entity", "state", "lines_recorded", "lines_now"):
            del data[shown_only]
        return data


@dataclass(frozen=True)
class AnchorReport:
    node_id: str
    anchors: tuple[CodeAnchor, ...]
    ambiguous: tuple[str, ...]
    warnings: tuple[str, ...]
    # The entity names that matched no symbol (the memory is stored all the same), and
    # what was done first to find them (a re-index of the files changed since the last).
    unresolved: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class SkippedFile:
    """A source file the index could not read: its language's grammar is not installed."""

    file_path: str
    language: str
    reason: str


@dataclass(frozen=True)
class IndexResult:
    graph_path: str
    root: str
    files: int
    parsed: int
    reused: int
    nodes: int
    edges: int
    errors: tuple[str, ...]
    written: bool
    # Files indexed per language, and the files left out because no grammar reads them.
    languages: dict[str, int] = field(default_factory=dict)
    skipped: tuple[SkippedFile, ...] = ()
    # Memories anchored by this index because an entity they name now resolves.
    anchored: int = 0


@dataclass(frozen=True)
class CodeMemory:
    id: str
    short_id: str
    kind: str
    content: str
    valid_from: str
    recorded_at: str
    anchors: tuple[CodeAnchor, ...]


@dataclass(frozen=True)
class CodeForResult:
    file_path: str
    line: int | None
    items: tuple[CodeMemory, ...]


@dataclass(frozen=True)
class CodeToResult:
    id: str
    short_id: str
    kind: str
    content: str
    anchors: tuple[CodeAnchor, ...]


@dataclass(frozen=True)
class StaleItem:
    id: str
    short_id: str
    kind: str
    content: str
    file_path: str
    reason: str
    detail: str
    graph_node_id: str
    qualname: str
    entity: str


@dataclass(frozen=True)
class StalenessReport:
    checked: int
    anchors_checked: int
    unverifiable: int
    stale: tuple[StaleItem, ...]
