"""The sidecar index, ``graph-index.sqlite`` beside the graph: its symbols and their
lookup keys, so that ``store`` finds a name in milliseconds without NetworkX.

It is keyed by the graph file's mtime, size and inode, and rebuilt from the GraphML when
the graph changes. It is a cache: deleting it loses nothing.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

from .files import default_root
from .graph_file import GENERATOR, read_graphml
from .names import keys_for, lookup_keys
from .symbols import HASH_SCHEME
from .values import CodeSymbol

SIDECAR_FILE = "graph-index.sqlite"
SIDECAR_VERSION = "3"
_TYPE_KINDS = ("class", "struct", "interface", "trait", "enum", "type", "namespace", "impl")
_KIND_ORDER = {**dict.fromkeys(_TYPE_KINDS, 0), "function": 1, "method": 2, "module": 3}

_SIDECAR_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE symbols (ord INTEGER PRIMARY KEY, node_id TEXT NOT NULL UNIQUE, "
    "file_path TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, qualname TEXT NOT NULL, "
    "module TEXT NOT NULL, start_line INTEGER, end_line INTEGER, source_hash TEXT, "
    "parent TEXT, file_mtime_ns INTEGER, file_size INTEGER, file_hash TEXT, parse_error TEXT)",
    "CREATE INDEX symbols_file ON symbols (file_path, ord)",
    "CREATE TABLE keys (key TEXT NOT NULL, ord INTEGER NOT NULL, PRIMARY KEY (key, ord))"
    " WITHOUT ROWID",
)
_SYMBOL_COLUMNS = (
    "node_id, file_path, kind, name, qualname, module, start_line, end_line, source_hash, "
    "parent, file_mtime_ns, file_size, file_hash, parse_error"
)


def _graph_stamp(graph_path: Path) -> str:
    stat = graph_path.stat()
    return f"{stat.st_mtime_ns}:{stat.st_size}:{stat.st_ino}"


def _sidecar_path(graph_path: Path) -> Path:
    return graph_path.with_name(SIDECAR_FILE)


def sidecar_is_fresh(graph_path: Path) -> bool:
    conn = open_sidecar(graph_path)
    if conn is None:
        return False
    conn.close()
    return True


def open_sidecar(graph_path: Path) -> sqlite3.Connection | None:
    sidecar = _sidecar_path(graph_path)
    if not sidecar.is_file():
        return None
    try:
        stamp = _graph_stamp(graph_path)
        conn = sqlite3.connect(sidecar.resolve().as_uri() + "?mode=ro&immutable=1", uri=True)
    except (OSError, sqlite3.Error):
        return None
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.Error:
        conn.close()
        return None
    if meta.get("graph_stamp") != stamp or meta.get("version") != SIDECAR_VERSION:
        conn.close()
        return None
    return conn


def _fill_sidecar(
    conn: sqlite3.Connection, stamp: str, attrs: dict[str, str], symbols: Sequence[CodeSymbol]
) -> None:
    for statement in _SIDECAR_SCHEMA:
        conn.execute(statement)
    meta = {**attrs, "graph_stamp": stamp, "version": SIDECAR_VERSION}
    conn.execute("DELETE FROM meta")
    conn.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
    conn.executemany(
        f"INSERT OR IGNORE INTO symbols (ord, {_SYMBOL_COLUMNS}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                order,
                symbol.node_id,
                symbol.file_path,
                symbol.kind,
                symbol.name,
                symbol.qualname,
                symbol.module,
                symbol.start_line,
                symbol.end_line,
                symbol.source_hash,
                symbol.parent,
                symbol.file_mtime_ns,
                symbol.file_size,
                symbol.file_hash,
                symbol.parse_error,
            )
            for order, symbol in enumerate(symbols)
        ],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO keys VALUES (?, ?)",
        [(key, order) for order, symbol in enumerate(symbols) for key in keys_for(symbol)],
    )


def write_sidecar(
    graph_path: Path, attrs: dict[str, str], symbols: Iterable[CodeSymbol]
) -> sqlite3.Connection:
    """Build the sidecar for the graph as it is on disk now and return it opened;
    in memory when the folder cannot take the file."""
    stamp = _graph_stamp(graph_path)
    sidecar = _sidecar_path(graph_path)
    tmp = sidecar.with_name(f".{sidecar.name}.{uuid.uuid4().hex}.tmp")
    symbols = list(symbols)
    try:
        conn = sqlite3.connect(str(tmp))
        try:
            with conn:
                _fill_sidecar(conn, stamp, attrs, symbols)
        finally:
            conn.close()
        os.replace(tmp, sidecar)
    except (OSError, sqlite3.Error):
        memory = sqlite3.connect(":memory:")
        with memory:
            _fill_sidecar(memory, stamp, attrs, symbols)
        return memory
    finally:
        if tmp.exists():
            tmp.unlink()
    opened = open_sidecar(graph_path)
    if opened is None:  # the graph changed meanwhile; serve what was read
        opened = sqlite3.connect(":memory:")
        with opened:
            _fill_sidecar(opened, stamp, attrs, symbols)
    return opened


class CodeIndex:
    """Read-only lookups in a code graph, through its sidecar."""

    def __init__(self, conn: sqlite3.Connection, graph_path: Path) -> None:
        self._conn = conn
        self.graph_path = graph_path
        self.attrs: dict[str, str] = dict(conn.execute("SELECT key, value FROM meta").fetchall())

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> CodeIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def root(self) -> Path:
        recorded = self.attrs.get("root")
        return Path(recorded) if recorded else default_root(self.graph_path)

    @property
    def trusted_hashes(self) -> bool:
        """Hashes are ours and stat stamps are meaningful (a graph nervamem wrote)."""
        return (
            self.attrs.get("generator") == GENERATOR
            and self.attrs.get("hash_scheme") == HASH_SCHEME
        )

    def _symbols(self, where: str, params: Sequence[object]) -> list[CodeSymbol]:
        rows = self._conn.execute(
            f"SELECT {_SYMBOL_COLUMNS} FROM symbols WHERE {where}", params
        ).fetchall()
        return [CodeSymbol(*row) for row in rows]

    def lookup(self, name: str) -> list[CodeSymbol]:
        """Symbols an entity name denotes, most specific kinds first."""
        keys, path_suffix = lookup_keys(name)
        found: list[CodeSymbol] = []
        for key in keys:
            if key.startswith("n:"):
                found = self._symbols("node_id = ?", (key[2:],))
            else:
                found = self._symbols("ord IN (SELECT ord FROM keys WHERE key = ?)", (key,))
            if found:
                break
        if not found and path_suffix:
            found = self._symbols(
                "kind = 'module' AND substr(file_path, -?) = ?",
                (len(path_suffix) + 1, "/" + path_suffix),
            )
        return sorted(
            found,
            key=lambda s: (_KIND_ORDER.get(s.kind, 4), s.file_path, s.start_line or 0, s.node_id),
        )

    def all_symbols(self) -> list[CodeSymbol]:
        return self._symbols("1 ORDER BY ord", ())

    def file_symbols(self, file_path: str) -> list[CodeSymbol]:
        """A file's symbols in the order the index found them: the module first."""
        return self._symbols("file_path = ? ORDER BY ord", (file_path,))

    def file_symbol(self, file_path: str) -> CodeSymbol | None:
        rows = self._symbols("file_path = ? AND kind = 'module' ORDER BY ord LIMIT 1", (file_path,))
        return rows[0] if rows else None


def open_code_index(graph_path: Path) -> CodeIndex:
    """The lookup index of ``graph_path``; (re)built from the GraphML when the sidecar is
    missing or older than the graph. Raises OSError or SyntaxError (bad XML)."""
    conn = open_sidecar(graph_path)
    if conn is None:
        attrs, symbols = read_graphml(graph_path)
        conn = write_sidecar(graph_path, attrs, symbols)
    return CodeIndex(conn, graph_path)
