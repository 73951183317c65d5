"""The code graph and the TOUCHES bridge from memories to the code they are about.

Three parts:

* **Index** (:func:`index_code`, ``nervamem code index``): parse the repository's Python
  files with :mod:`ast` and write ``graph.graphml`` beside the store with NetworkX — one
  node per module, class, function and method (``file_path`` relative to the folder that
  holds ``.nervapack/``, ``start_line``, ``end_line``, ``qualname``, ``kind``, ``name``,
  ``module`` and ``source_hash``), ``CONTAINS`` edges. Module nodes also carry the file's
  mtime, size and hash, so a re-index re-parses only the files that changed.
* **Anchor** (:func:`anchor_entities`, called by ``MemoryStore.store`` inside its write
  transaction): entity names are matched against the graph — bare names (``load``) or
  qualified ones (``Loader.load``, ``pkg.util.load``, ``pkg/util.py``) — after the same
  separator-and-case normalisation as entity aliases (``AuthService`` = ``auth_service``),
  applied to each dotted segment. Each match adds a ``TOUCHES`` edge from the memory to
  the entity; the edge's data records the anchors as they were at that moment, the
  entity's data records the latest ones (``file_path``, ``start_line``, ``end_line``,
  ``graph_node_id``, ``source_hash``, ``anchors``). A bare name that matches several
  symbols is anchored to each and reported as ambiguous.
* **Query**: :func:`code_for` (memories about a file or a line), :func:`code_to` (where a
  memory is anchored) and :func:`verify_staleness`.

Staleness strategy: verification re-reads the source files as they are now and parses
them with :mod:`ast`; it never trusts the graph, so it is right even when nobody ran
``code index`` since the code changed. An anchor's ``source_hash`` is computed by
nervamem itself from the live file at anchoring time (the graph's hash is used only when
the file is provably unchanged since indexing), so graphs made by other tools work too.
A memory is stale when an anchor's file is gone (``file missing``), no longer parses
(``file does not parse``), no longer defines the symbol (``symbol removed``) or defines
it with different source text (``source changed``; moving it to other lines is not a
change).

Invariants a reader must not break:

* ``store`` and ``recall`` never import NetworkX: lookups go through a small SQLite
  sidecar (``graph-index.sqlite``) keyed by the graph file's mtime, size and inode,
  rebuilt from the GraphML with :mod:`xml.etree` when the graph changes. Only writing the
  graph imports NetworkX.
* A missing graph means no TOUCHES, silently; an unreadable graph means no TOUCHES and a
  warning, never a failed ``store``.
* The graph reader is tolerant: any GraphML whose nodes carry ``file_path`` works;
  missing optional attributes are derived or left empty, line numbers may be strings.
* The core never prints: warnings travel in :class:`AnchorReport`.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from .entities import stripped
from .errors import BadInputError, NotFoundError
from .locate import shown_path
from .visible import visible

if TYPE_CHECKING:
    from .store import MemoryStore

GRAPH_FILE = "graph.graphml"
SIDECAR_FILE = "graph-index.sqlite"
HASH_SCHEME = "sha256-lines-16"
GENERATOR = "nervamem"
INDEX_VERSION = 1
SIDECAR_VERSION = "3"
MAX_ANCHORS_PER_NAME = 20
# A file modified this close to the previous index may have changed within the same
# mtime tick; its hash is compared instead of trusting its stat (git's "racy clean").
RACY_WINDOW_NS = 2_000_000_000
SOURCE_SUFFIXES = (".py",)
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".nervapack",
        "__pycache__",
        "node_modules",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "site-packages",
    }
)
_KIND_ORDER = {"class": 0, "function": 1, "method": 2, "module": 3}
_QUALIFIERS = re.compile(r"\.|::")
_EDGE_KIND_ATTRS = ("kind", "type", "label", "relation")

REASON_FILE_MISSING = "file missing"
REASON_UNPARSABLE = "file does not parse"
REASON_SYMBOL_REMOVED = "symbol removed"
REASON_SOURCE_CHANGED = "source changed"


# --------------------------------------------------------------------------- values
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
        del data["entity_id"], data["entity"]
        return data


@dataclass(frozen=True)
class AnchorReport:
    node_id: str
    anchors: tuple[CodeAnchor, ...]
    ambiguous: tuple[str, ...]
    warnings: tuple[str, ...]


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

    @property
    def markdown(self) -> str:
        errors = f", {len(self.errors)} with syntax errors" if self.errors else ""
        state = "written to" if self.written else "unchanged:"
        lines = [
            f"Indexed {self.files} Python file{'' if self.files == 1 else 's'} under "
            f"{self.root} ({self.parsed} parsed, {self.reused} reused{errors}): "
            f"{self.nodes} nodes, {self.edges} CONTAINS edges; {state} {self.graph_path}"
        ]
        lines.extend(f"- {error}" for error in self.errors)
        return visible("\n".join(lines) + "\n")


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

    @property
    def markdown(self) -> str:
        target = self.file_path if self.line is None else f"{self.file_path}:{self.line}"
        count = len(self.items)
        lines = [f"## Memories about {target} ({count} item{'' if count == 1 else 's'})"]
        if self.items:
            lines.append("")
        for item in self.items:
            where = ", ".join(
                f"{a.qualname or a.graph_node_id} {_lines(a)}".strip() for a in item.anchors
            )
            lines.append(
                f"- [{item.short_id}] {item.valid_from[:10]} · {item.kind} — "
                f"{_one_line(item.content)} ({where})"
            )
        return visible("\n".join(lines) + "\n")


@dataclass(frozen=True)
class CodeToResult:
    id: str
    short_id: str
    kind: str
    content: str
    anchors: tuple[CodeAnchor, ...]

    @property
    def markdown(self) -> str:
        count = len(self.anchors)
        lines = [
            f"## Code anchors of [{self.short_id}] ({count} anchor{'' if count == 1 else 's'})",
            "",
            f"{self.kind} — {_one_line(self.content)}",
        ]
        if self.anchors:
            lines.append("")
        for anchor in self.anchors:
            via = f" via entity {anchor.entity}" if anchor.entity else ""
            lines.append(
                f"- {anchor.location} · {anchor.kind or 'symbol'} "
                f"{anchor.qualname or anchor.graph_node_id}{via}"
            )
        return visible("\n".join(lines) + "\n")


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

    @property
    def markdown(self) -> str:
        memories = len({item.id for item in self.stale})
        head = (
            f"## Staleness: {self.checked} anchored "
            f"memor{'y' if self.checked == 1 else 'ies'} checked, "
            + (f"{memories} stale" if memories else "none stale")
        )
        lines = [head]
        if self.stale:
            lines.append("")
        for item in self.stale:
            lines.append(
                f"- [{item.short_id}] {item.file_path} · {item.qualname or item.graph_node_id}"
                f" — {item.reason}: {item.detail} — {_one_line(item.content)}"
            )
        if self.unverifiable:
            lines += ["", f"{self.unverifiable} anchor(s) carry no comparable source hash."]
        return visible("\n".join(lines) + "\n")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _lines(anchor: CodeAnchor) -> str:
    if anchor.start_line is None:
        return ""
    return f"L{anchor.start_line}-{anchor.end_line or anchor.start_line}"


# --------------------------------------------------------------------------- python source
def module_name(file_path: str) -> str:
    parts = list(PurePosixPath(file_path).with_suffix("").parts)
    if len(parts) > 1 and parts[-1] == "__init__":
        parts.pop()
    return ".".join(p for p in parts if p not in ("", ".", "/"))


def _hash_lines(lines: Sequence[bytes], start: int, end: int) -> str:
    return hashlib.sha256(b"\n".join(lines[start - 1 : end])).hexdigest()[:16]


def python_symbols(file_path: str, data: bytes) -> list[CodeSymbol]:
    """The module and every class, function and method defined in ``data``.

    Hashes cover the symbol's lines (decorators included) as bytes, so moving a symbol
    does not change its hash and no decoding can fail. A file that does not parse yields
    its module node alone, with ``parse_error`` set.
    """
    import ast

    lines = data.splitlines()
    module = module_name(file_path)
    total = max(len(lines), 1)
    module_symbol = CodeSymbol(
        node_id=file_path,
        file_path=file_path,
        kind="module",
        name=module.rsplit(".", 1)[-1] or file_path,
        qualname=module,
        module=module,
        start_line=1,
        end_line=total,
        source_hash=_hash_lines(lines, 1, total),
    )
    try:
        tree = ast.parse(data, filename=file_path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        line = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
        return [replace(module_symbol, parse_error=f"{type(exc).__name__}: {message}{line}")]
    symbols = [module_symbol]
    seen: dict[str, int] = {}
    containers = (ast.stmt, ast.excepthandler, ast.match_case)

    def visit(node: ast.AST, parent: str, prefix: str, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qualname = f"{prefix}.{child.name}" if prefix else child.name
                is_class = isinstance(child, ast.ClassDef)
                kind = "class" if is_class else ("method" if in_class else "function")
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                end = child.end_lineno or child.lineno
                count = seen.get(qualname, 0) + 1
                seen[qualname] = count
                node_id = f"{file_path}::{qualname}" + (f"#{count}" if count > 1 else "")
                symbols.append(
                    CodeSymbol(
                        node_id=node_id,
                        file_path=file_path,
                        kind=kind,
                        name=child.name,
                        qualname=qualname,
                        module=module,
                        start_line=start,
                        end_line=end,
                        source_hash=_hash_lines(lines, start, end),
                        parent=parent,
                    )
                )
                visit(child, node_id, qualname, is_class)
            elif isinstance(child, containers):
                visit(child, parent, prefix, in_class)

    visit(tree, file_path, "", False)
    return symbols


def _file_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


# --------------------------------------------------------------------------- file listing
def _in_skipped_dir(rel_parts: Sequence[str]) -> bool:
    return any(part in SKIP_DIRS for part in rel_parts[:-1])


def list_source_files(root: Path) -> list[str]:
    """Source files under ``root`` (relative POSIX paths, sorted): what git tracks or
    would track when ``root`` is in a git work tree, else a walk that skips VCS folders,
    ``.nervapack``, caches and virtual environments."""
    listed = _git_files(root)
    if listed is None:
        listed = _walk_files(root)
    venv_dirs: dict[Path, bool] = {}
    result: list[str] = []
    for rel in listed:
        parts = PurePosixPath(rel).parts
        if not rel.endswith(SOURCE_SUFFIXES) or _in_skipped_dir(parts):
            continue
        if _inside_venv(root, parts, venv_dirs):
            continue
        if (root / rel).is_file():
            result.append(rel)
    return sorted(set(result))


def _git_files(root: Path) -> list[str] | None:
    try:
        completed = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ],
            capture_output=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if completed.returncode != 0:
        return None
    names = completed.stdout.decode("utf-8", "surrogateescape").split("\0")
    return [name for name in names if name]


def _walk_files(root: Path) -> list[str]:
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in SKIP_DIRS
            and not d.startswith(".")
            and not (here / d / "pyvenv.cfg").exists()
        )
        rel_folder = here.relative_to(root)
        found.extend((rel_folder / name).as_posix() for name in files)
    return found


def _inside_venv(root: Path, parts: Sequence[str], cache: dict[Path, bool]) -> bool:
    folder = root
    for part in parts[:-1]:
        folder = folder / part
        if folder not in cache:
            cache[folder] = (folder / "pyvenv.cfg").exists()
        if cache[folder]:
            return True
    return False


# --------------------------------------------------------------------------- paths
def graph_path_for(store: MemoryStore) -> Path:
    return store.path.parent / GRAPH_FILE


def default_root(graph_path: Path) -> Path:
    """The folder that holds ``.nervapack/``: graph file paths are relative to it."""
    return graph_path.parent.parent.resolve()


def _relative_to(path: Path, base: Path) -> str | None:
    try:
        rel = path.relative_to(base).as_posix()
    except ValueError:
        return None
    return "" if rel == "." else rel


def _normalise_path(text: str) -> str:
    posix = text.strip().replace("\\", "/")
    while posix.startswith("./"):
        posix = posix[2:]
    return posix


def _source_path(root: Path, file_path: str) -> Path:
    path = Path(file_path)
    return path if path.is_absolute() else root / file_path


# --------------------------------------------------------------------------- indexing
def index_code(store: MemoryStore, root: str | os.PathLike[str] | None = None) -> IndexResult:
    """Write the code graph of ``root`` (default: the folder holding the store's folder)
    beside the store, reusing the nodes of files unchanged since the last index."""
    return build_index(graph_path_for(store), root)


def build_index(graph_path: Path, root: str | os.PathLike[str] | None = None) -> IndexResult:
    base = default_root(graph_path)
    scan_root = _expanded(root).resolve() if root else base
    if not scan_root.exists():
        raise NotFoundError(f"{root} does not exist")
    if not scan_root.is_dir():
        raise BadInputError(f"{root} is not a folder")
    # Paths are relative to the folder holding .nervapack/; a ROOT outside it keeps
    # paths relative to ROOT and records ROOT in the graph.
    prefix = _relative_to(scan_root, base)
    rel_base = base if prefix is not None else scan_root
    recorded_root = None if prefix is not None else str(scan_root)

    previous_attrs, previous = _previous_index(graph_path, recorded_root)
    indexed_before = _as_int(previous_attrs.get("indexed_at_ns")) or 0
    started = time.time_ns()
    symbols: list[CodeSymbol] = []
    errors: list[str] = []
    parsed = reused = 0
    changed = False
    files = list_source_files(scan_root)
    for rel_in_root in files:
        rel = f"{prefix}/{rel_in_root}" if prefix else rel_in_root
        path = rel_base / rel
        try:
            stat = path.stat()
        except OSError:
            continue
        old = previous.get(rel)
        old_module = old[0] if old else None
        if (
            old
            and old_module is not None
            and old_module.file_mtime_ns == stat.st_mtime_ns
            and old_module.file_size == stat.st_size
            and stat.st_mtime_ns + RACY_WINDOW_NS < indexed_before
        ):
            file_symbols = old
            reused += 1
        else:
            try:
                data = path.read_bytes()
            except OSError as exc:
                errors.append(f"{rel}: cannot read ({exc.strerror or exc})")
                continue
            digest = _file_hash(data)
            if old and old_module is not None and old_module.file_hash == digest:
                file_symbols = old
                reused += 1
            else:
                file_symbols = python_symbols(rel, data)
                parsed += 1
                changed = True
            if file_symbols[0].file_mtime_ns != stat.st_mtime_ns:
                changed = True
            stamped = replace(
                file_symbols[0],
                file_hash=digest,
                file_mtime_ns=stat.st_mtime_ns,
                file_size=stat.st_size,
            )
            file_symbols = [stamped, *file_symbols[1:]]
        if file_symbols[0].parse_error:
            errors.append(f"{rel}: {file_symbols[0].parse_error}")
        symbols.extend(file_symbols)

    edges = sum(1 for symbol in symbols if symbol.parent)
    unchanged = (
        not changed
        and graph_path.is_file()
        and set(previous) == {s.file_path for s in symbols if s.kind == "module"}
        and _sidecar_is_fresh(graph_path)
    )
    if not unchanged:
        attrs = {
            "generator": GENERATOR,
            "index_version": str(INDEX_VERSION),
            "hash_scheme": HASH_SCHEME,
            "indexed_at_ns": str(started),
        }
        if recorded_root:
            attrs["root"] = recorded_root
        _write_graph(graph_path, attrs, symbols)
        _write_sidecar(graph_path, attrs, symbols)
    return IndexResult(
        graph_path=str(graph_path),
        root=str(scan_root),
        files=len({s.file_path for s in symbols}),
        parsed=parsed,
        reused=reused,
        nodes=len(symbols),
        edges=edges,
        errors=tuple(errors),
        written=not unchanged,
    )


def _previous_index(
    graph_path: Path, recorded_root: str | None
) -> tuple[dict[str, str], dict[str, list[CodeSymbol]]]:
    """The previous graph's symbols by file, when it is ours and comparable."""
    if not graph_path.is_file():
        return {}, {}
    sidecar = _open_sidecar(graph_path)
    try:
        if sidecar is not None:  # milliseconds, where re-reading the GraphML takes seconds
            with CodeIndex(sidecar, graph_path) as index:
                attrs, symbols = index.attrs, index.all_symbols()
        else:
            attrs, symbols = read_graphml(graph_path)
    except (OSError, SyntaxError, ValueError, sqlite3.Error):
        return {}, {}
    if (
        attrs.get("generator") != GENERATOR
        or attrs.get("hash_scheme") != HASH_SCHEME
        or attrs.get("index_version") != str(INDEX_VERSION)
        or attrs.get("root") != recorded_root
    ):
        return {}, {}
    by_file: dict[str, list[CodeSymbol]] = {}
    for symbol in symbols:
        by_file.setdefault(symbol.file_path, []).append(symbol)
    # The module node leads each file's list (the writer emits it first).
    return attrs, {
        path: sorted(group, key=lambda s: s.kind != "module")
        for path, group in by_file.items()
        if any(s.kind == "module" for s in group)
    }


def _write_graph(graph_path: Path, attrs: dict[str, str], symbols: list[CodeSymbol]) -> None:
    import networkx as nx

    graph = nx.DiGraph()
    graph.graph.update(attrs)
    for symbol in symbols:
        values: dict[str, Any] = {
            "file_path": symbol.file_path,
            "kind": symbol.kind,
            "name": symbol.name,
            "qualname": symbol.qualname,
            "module": symbol.module,
            "start_line": symbol.start_line,
            "end_line": symbol.end_line,
            "source_hash": symbol.source_hash,
            "file_size": symbol.file_size,
            "file_hash": symbol.file_hash,
            "parse_error": symbol.parse_error,
            # Nanosecond mtimes overflow a GraphML 'int' in other tools: keep as text.
            "file_mtime_ns": None if symbol.file_mtime_ns is None else str(symbol.file_mtime_ns),
        }
        graph.add_node(symbol.node_id, **{k: v for k, v in values.items() if v is not None})
    for symbol in symbols:
        if symbol.parent:
            graph.add_edge(symbol.parent, symbol.node_id, kind="CONTAINS")
    graph_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = graph_path.with_name(f".{graph_path.name}.{uuid.uuid4().hex}.tmp")
    try:
        nx.write_graphml(graph, str(tmp), encoding="utf-8")
        os.replace(tmp, graph_path)
    finally:
        if tmp.exists():
            tmp.unlink()


# --------------------------------------------------------------------------- GraphML reader
def _as_int(value: object) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return None
    return int(number) if number.is_integer() else None


def read_graphml(path: Path) -> tuple[dict[str, str], list[CodeSymbol]]:
    """Graph attributes and code symbols of any GraphML file, without NetworkX.

    Nodes without ``file_path`` are not code and are skipped. Everything else is
    optional: ``name`` and ``qualname`` fall back on each other and on the node ID,
    ``kind`` on ``type``, line numbers may be text, a missing ``module`` is derived from
    the path. ``CONTAINS`` (or ``DEFINES``) edges give each symbol its parent.
    """
    import xml.etree.ElementTree as ET

    keys: dict[str, tuple[str, str]] = {}
    defaults: dict[str, dict[str, str]] = {"node": {}, "edge": {}, "graph": {}}
    graph_attrs: dict[str, str] = {}
    raw_nodes: list[tuple[str, dict[str, str]]] = []
    parents: dict[str, str] = {}
    depth = 0
    for event, elem in ET.iterparse(str(path), events=("start", "end")):
        tag = elem.tag.rsplit("}", 1)[-1]
        if event == "start":
            if tag == "graph":
                depth += 1
            continue
        if tag == "key":
            key_id = elem.get("id") or ""
            domain = elem.get("for") or "all"
            name = elem.get("attr.name") or key_id
            keys[key_id] = (domain, name)
            for child in elem:
                if child.tag.rsplit("}", 1)[-1] == "default" and child.text is not None:
                    for target in ("node", "edge", "graph") if domain == "all" else (domain,):
                        defaults.setdefault(target, {})[name] = child.text
        elif tag == "node" and depth == 1:
            values = dict(defaults["node"])
            values.update(_data_of(elem, keys))
            raw_nodes.append((elem.get("id") or "", values))
            elem.clear()
        elif tag == "edge" and depth == 1:
            values = dict(defaults["edge"])
            values.update(_data_of(elem, keys))
            kinds = {values.get(k, "").strip().upper() for k in _EDGE_KIND_ATTRS}
            source, target = elem.get("source"), elem.get("target")
            if source and target and kinds & {"CONTAINS", "DEFINES"}:
                parents.setdefault(target, source)
            elem.clear()
        elif tag == "graph":
            if depth == 1:
                graph_attrs = dict(defaults["graph"])
                graph_attrs.update(_data_of(elem, keys))
            depth -= 1
    symbols = []
    for node_id, values in raw_nodes:
        symbol = _symbol_from(node_id, values, parents.get(node_id))
        if symbol is not None:
            symbols.append(symbol)
    return graph_attrs, symbols


def _data_of(elem: Any, keys: dict[str, tuple[str, str]]) -> dict[str, str]:
    values: dict[str, str] = {}
    for child in elem:
        if child.tag.rsplit("}", 1)[-1] != "data":
            continue
        key = child.get("key") or ""
        name = keys.get(key, ("all", key))[1]
        values[name] = (child.text or "").strip()
    return values


def _symbol_from(node_id: str, values: dict[str, str], parent: str | None) -> CodeSymbol | None:
    file_path = _normalise_path(values.get("file_path") or "")
    if not file_path or not node_id:
        return None
    name = values.get("name") or ""
    qualname = values.get("qualname") or name
    if not name:
        name = _QUALIFIERS.split(qualname or node_id)[-1]
    if not qualname:
        qualname = node_id.split("::", 1)[-1] if "::" in node_id else name
    kind = (values.get("kind") or values.get("type") or "").strip().lower()
    if not kind:
        kind = "module" if node_id == file_path else "symbol"
    start = _as_int(values.get("start_line"))
    end = _as_int(values.get("end_line"))
    if start is not None and start < 1:
        start = None
    if end is not None and (end < 1 or (start is not None and end < start)):
        end = start
    module = values.get("module") or (
        module_name(file_path) if file_path.endswith(SOURCE_SUFFIXES) else ""
    )
    return CodeSymbol(
        node_id=node_id,
        file_path=file_path,
        kind=kind,
        name=name,
        qualname=qualname,
        module=module,
        start_line=start,
        end_line=end,
        source_hash=values.get("source_hash") or None,
        parent=parent,
        file_mtime_ns=_as_int(values.get("file_mtime_ns")),
        file_size=_as_int(values.get("file_size")),
        file_hash=values.get("file_hash") or None,
        parse_error=values.get("parse_error") or None,
    )


# --------------------------------------------------------------------------- lookup keys
def _segments(text: str) -> list[str]:
    """Dotted (or ``::``) segments, each normalised like an entity alias."""
    return [seg for seg in (stripped(part) for part in _QUALIFIERS.split(text)) if seg]


def _full_segments(symbol: CodeSymbol) -> list[str]:
    qual = _segments(symbol.qualname)
    module = _segments(symbol.module)
    if symbol.kind == "module" or not module:
        return qual or module
    if qual[: len(module)] == module:  # another tool's qualname may already be full
        return qual
    return module + qual


def _keys_for(symbol: CodeSymbol) -> set[str]:
    keys = set()
    bare = stripped(symbol.name)
    if bare:
        keys.add(f"b:{bare}")
    full = _full_segments(symbol)
    for start in range(len(full) - 1):
        keys.add("q:" + ".".join(full[start:]))
    if symbol.kind == "module":
        keys.add(f"p:{symbol.file_path}")
    return keys


def _lookup_keys(name: str) -> tuple[list[str], str | None]:
    """Keys to try for an entity name, and a path suffix for ``LIKE`` when it is a path."""
    text = name.strip()
    path, _, inner = text.partition("::")
    if inner and path.endswith(SOURCE_SUFFIXES):
        norm = _normalise_path(path)
        return [f"n:{norm}::{inner.strip()}"], None
    if text.endswith(SOURCE_SUFFIXES) or "/" in text or "\\" in text:
        norm = _normalise_path(text)
        return [f"p:{norm}"], norm
    segments = _segments(text)
    if not segments:
        return [], None
    if len(segments) == 1:
        return [f"b:{segments[0]}"], None
    return ["q:" + ".".join(segments)], None


# --------------------------------------------------------------------------- sidecar index
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


def _sidecar_is_fresh(graph_path: Path) -> bool:
    conn = _open_sidecar(graph_path)
    if conn is None:
        return False
    conn.close()
    return True


def _open_sidecar(graph_path: Path) -> sqlite3.Connection | None:
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
        [(key, order) for order, symbol in enumerate(symbols) for key in _keys_for(symbol)],
    )


def _write_sidecar(
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
    opened = _open_sidecar(graph_path)
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
        keys, path_suffix = _lookup_keys(name)
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

    def file_symbol(self, file_path: str) -> CodeSymbol | None:
        rows = self._symbols("file_path = ? AND kind = 'module' ORDER BY ord LIMIT 1", (file_path,))
        return rows[0] if rows else None


def open_code_index(graph_path: Path) -> CodeIndex:
    """The lookup index of ``graph_path``; (re)built from the GraphML when the sidecar is
    missing or older than the graph. Raises OSError or SyntaxError (bad XML)."""
    conn = _open_sidecar(graph_path)
    if conn is None:
        attrs, symbols = read_graphml(graph_path)
        conn = _write_sidecar(graph_path, attrs, symbols)
    return CodeIndex(conn, graph_path)


# --------------------------------------------------------------------------- live source
class LiveSource:
    """The source files as they are now, parsed once per file per operation."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[str, tuple[str | None, list[CodeSymbol]]] = {}

    def symbols(self, file_path: str) -> tuple[str | None, list[CodeSymbol]]:
        """``(problem, symbols)``: problem is a staleness reason when the file is missing
        or does not parse."""
        if file_path not in self._cache:
            path = _source_path(self.root, file_path)
            try:
                data = path.read_bytes()
            except OSError:
                self._cache[file_path] = (REASON_FILE_MISSING, [])
            else:
                symbols = python_symbols(file_path, data)
                problem = REASON_UNPARSABLE if symbols[0].parse_error else None
                self._cache[file_path] = (problem, symbols)
        return self._cache[file_path]

    def locate(self, file_path: str, qualname: str, kind: str, name: str = "") -> list[CodeSymbol]:
        """The live symbols that an anchor (or graph node) with this qualname denotes."""
        problem, symbols = self.symbols(file_path)
        if problem == REASON_FILE_MISSING or not symbols:
            return []
        if kind == "module":
            return [symbols[0]]
        exact = [s for s in symbols[1:] if s.qualname == qualname]
        if exact:
            return exact
        # Another tool's qualname may be module-qualified or otherwise spelt.
        wanted = _segments(qualname)
        bare = stripped(name) if name else (wanted[-1] if wanted else "")
        found = []
        for symbol in symbols[1:]:
            own = _segments(symbol.qualname)
            if stripped(symbol.name) != bare or not own:
                continue
            if _full_segments(symbol) == wanted or wanted[-len(own) :] == own:
                found.append(symbol)
        return found


def _nearest(candidates: list[CodeSymbol], line: int | None) -> CodeSymbol:
    return min(candidates, key=lambda s: abs((s.start_line or 0) - (line or 0)))


# --------------------------------------------------------------------------- anchoring
def anchor_entities(
    store: MemoryStore,
    node_id: str,
    entity_ids: Sequence[tuple[str, str]],
    graph_path: Path,
) -> AnchorReport:
    """Add TOUCHES edges from ``node_id`` to the entities whose names match the code
    graph. Runs inside the store's open write transaction; never raises for a bad graph.
    """
    try:
        index = open_code_index(graph_path)
    except (OSError, SyntaxError, ValueError, sqlite3.Error) as exc:
        reason = " ".join(str(exc).split())[:200]
        return AnchorReport(
            node_id, (), (), (f"code graph {graph_path} is unreadable ({reason}); no TOUCHES",)
        )
    with index:
        live = LiveSource(index.root)
        names_by_entity: dict[str, list[str]] = {}
        for name, entity_id in entity_ids:
            names_by_entity.setdefault(entity_id, []).append(name)
        anchors_all: list[CodeAnchor] = []
        ambiguous: list[str] = []
        warnings: list[str] = []
        conn = store.connection
        for entity_id, names in names_by_entity.items():
            row = conn.execute(
                "SELECT content FROM mem_nodes WHERE id = ?", (entity_id,)
            ).fetchone()
            entity_name = str(row[0]) if row else names[0]
            candidates: dict[str, CodeSymbol] = {}
            for name in dict.fromkeys([*names, entity_name]):
                for symbol in index.lookup(name):
                    candidates.setdefault(symbol.node_id, symbol)
                if candidates:
                    break
            if not candidates:
                continue
            matched = list(candidates.values())
            if len(matched) > 1:
                ambiguous.append(names[0])
                shown = ", ".join(s.node_id for s in matched[:5])
                more = f" and {len(matched) - 5} more" if len(matched) > 5 else ""
                capped = (
                    f"; anchored to the first {MAX_ANCHORS_PER_NAME}"
                    if len(matched) > MAX_ANCHORS_PER_NAME
                    else "; anchored to each"
                )
                warnings.append(
                    f"entity {names[0]!r} is ambiguous in the code graph: {len(matched)} "
                    f"symbols ({shown}{more}){capped}"
                )
                matched = matched[:MAX_ANCHORS_PER_NAME]
            anchors = [_anchor_now(symbol, index, live) for symbol in matched]
            records = [anchor.record() for anchor in anchors]
            store._link(node_id, entity_id, "TOUCHES", {"anchors": records})
            first = records[0]
            store._update_data(
                entity_id,
                {
                    "file_path": first["file_path"],
                    "start_line": first["start_line"],
                    "end_line": first["end_line"],
                    "graph_node_id": first["graph_node_id"],
                    "source_hash": first["source_hash"],
                    "anchors": records,
                    "ambiguous": len(records) > 1,
                    "anchored_at": store._now(),
                },
            )
            anchors_all += [replace(a, entity_id=entity_id, entity=entity_name) for a in anchors]
    return AnchorReport(node_id, tuple(anchors_all), tuple(ambiguous), tuple(warnings))


def _anchor_now(symbol: CodeSymbol, index: CodeIndex, live: LiveSource) -> CodeAnchor:
    """The anchor for a graph node as the code is *now*: straight from the graph when
    nervamem indexed the file and it has not changed since, else from the live source."""
    if index.trusted_hashes and symbol.source_hash:
        module = index.file_symbol(symbol.file_path)
        indexed_at = _as_int(index.attrs.get("indexed_at_ns")) or 0
        try:
            stat = _source_path(index.root, symbol.file_path).stat()
        except OSError:
            stat = None
        if (
            module is not None
            and stat is not None
            and module.file_mtime_ns == stat.st_mtime_ns
            and module.file_size == stat.st_size
            and stat.st_mtime_ns + RACY_WINDOW_NS < indexed_at
        ):
            return _anchor_from(symbol, symbol, HASH_SCHEME)
    located = live.locate(symbol.file_path, symbol.qualname, symbol.kind, symbol.name)
    if located:
        return _anchor_from(symbol, _nearest(located, symbol.start_line), HASH_SCHEME)
    # The code no longer holds it: keep what the graph says (verification will flag it).
    scheme = index.attrs.get("hash_scheme") if symbol.source_hash else None
    return _anchor_from(symbol, symbol, scheme)


def _anchor_from(graph_node: CodeSymbol, current: CodeSymbol, scheme: str | None) -> CodeAnchor:
    return CodeAnchor(
        file_path=graph_node.file_path,
        start_line=current.start_line,
        end_line=current.end_line,
        graph_node_id=graph_node.node_id,
        qualname=current.qualname,
        kind=current.kind,
        source_hash=current.source_hash,
        hash_scheme=scheme,
    )


def _anchors_from_data(data: dict[str, Any]) -> list[dict[str, Any]]:
    anchors = data.get("anchors")
    if isinstance(anchors, list) and anchors:
        return [a for a in anchors if isinstance(a, dict) and a.get("file_path")]
    if data.get("file_path"):
        return [data]
    return []


def _anchor_of(record: dict[str, Any], entity_id: str = "", entity: str = "") -> CodeAnchor:
    return CodeAnchor(
        file_path=_normalise_path(str(record.get("file_path") or "")),
        start_line=_as_int(record.get("start_line")),
        end_line=_as_int(record.get("end_line")),
        graph_node_id=str(record.get("graph_node_id") or record.get("file_path") or ""),
        qualname=str(record.get("qualname") or ""),
        kind=str(record.get("kind") or ""),
        source_hash=record.get("source_hash") or None,
        hash_scheme=record.get("hash_scheme") or None,
        entity_id=entity_id,
        entity=entity,
    )


# --------------------------------------------------------------------------- queries
@dataclass(frozen=True)
class _Touch:
    memory_id: str
    kind: str
    content: str
    valid_from: str
    recorded_at: str
    anchors: tuple[CodeAnchor, ...]


def _touches(
    store: MemoryStore, namespace: str, *, memory_id: str | None = None, needle: str | None = None
) -> list[_Touch]:
    """TOUCHES edges of current memories in the namespace, with their anchors (the edge's
    own record, else the entity's)."""
    from .recall.mask import mask_sql

    mask, params = mask_sql(None, "n")
    sql = (
        "SELECT n.id, n.kind, n.content, n.valid_from, n.recorded_at, e.data, ent.id, "
        "ent.content, ent.data FROM mem_edges e JOIN mem_nodes n ON n.id = e.src "
        "JOIN mem_nodes ent ON ent.id = e.dst "
        f"WHERE e.kind = 'TOUCHES' AND n.namespace = ? AND {mask}"
    )
    args: list[object] = [namespace, *params]
    if memory_id is not None:
        sql += " AND n.id = ?"
        args.append(memory_id)
    if needle and needle.isascii() and needle.isprintable() and not set(needle) & {'"', "\\"}:
        # A cheap prefilter, used only where JSON holds the path verbatim.
        sql += " AND (instr(e.data, ?) > 0 OR instr(ent.data, ?) > 0)"
        args += [needle, needle]
    sql += " ORDER BY n.recorded_at, n.id, ent.id"
    touches: list[_Touch] = []
    for row in store.connection.execute(sql, args).fetchall():
        records = _anchors_from_data(json.loads(row[5])) or _anchors_from_data(json.loads(row[8]))
        anchors = tuple(_anchor_of(r, str(row[6]), str(row[7])) for r in records)
        touches.append(_Touch(row[0], row[1], row[2], row[3], row[4], anchors))
    return touches


def code_root(store: MemoryStore) -> Path:
    """Where anchored file paths are resolved: the graph's recorded root, else the
    folder that holds the store's folder."""
    graph_path = graph_path_for(store)
    if graph_path.is_file():
        try:
            with open_code_index(graph_path) as index:
                return index.root
        except (OSError, SyntaxError, ValueError, sqlite3.Error):
            pass
    return default_root(graph_path)


def _split_target(target: str) -> tuple[str, int | None]:
    text = target.strip()
    if not text:
        raise BadInputError("give a file path, optionally with :LINE")
    head, sep, tail = text.rpartition(":")
    if sep and tail.strip().isdigit() and head:
        line = int(tail)
        if line < 1:
            raise BadInputError(f"line numbers start at 1, not {line}")
        return head, line
    if sep and head and tail and tail.lstrip("-").isdigit():
        raise BadInputError(f"line numbers start at 1, not {tail}")
    return text, None


def _expanded(text: str | os.PathLike[str]) -> Path:
    """A path the user gave, ~ expanded: ~user of no such user (or ~ with no home
    folder) is bad input, not an internal error."""
    try:
        return Path(text).expanduser()
    except (RuntimeError, KeyError):
        raise BadInputError(
            f"{shown_path(text)} cannot be expanded: no such user or no home folder"
        ) from None


def _root_relative(root: Path, text: str, cwd: Path) -> tuple[str, bool]:
    """A user's path as stored in anchors (relative to root), and whether it is a folder.
    A path that exists relative to the working directory is taken as such; otherwise it
    is read as relative to the root already."""
    given = _expanded(text)
    on_disk = given if given.is_absolute() else cwd / given
    try:
        exists = on_disk.exists()
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG:
            raise
        raise BadInputError(f"{shown_path(text)}: {exc.strerror}") from None
    if exists:
        resolved = on_disk.resolve()
        rel = _relative_to(resolved, root.resolve())
        if rel is not None:
            return rel, resolved.is_dir()
        return resolved.as_posix(), resolved.is_dir()
    norm = _normalise_path(text).rstrip("/")
    return norm, text.endswith(("/", "\\")) or (root / norm).is_dir()


def code_for(
    store: MemoryStore, target: str, *, namespace: str | None = None, cwd: Path | None = None
) -> CodeForResult:
    """Current memories anchored to a file (or folder), or to the code around a line."""
    file_text, line = _split_target(target)
    ns = store._ns(namespace)
    root = code_root(store)
    file_path, is_dir = _root_relative(root, file_text, cwd or Path.cwd())
    if is_dir and line is not None:
        raise BadInputError(f"{file_text} is a folder: a line needs a file")
    live = LiveSource(root)

    def wanted(anchor: CodeAnchor) -> bool:
        if is_dir:
            return not file_path or anchor.file_path.startswith(file_path + "/")
        if anchor.file_path != file_path:
            return False
        if line is None:
            return True
        problem, _ = live.symbols(file_path)
        if problem is not None:  # cannot parse it now: trust the recorded lines
            return _recorded_contains(anchor, line)
        located = live.locate(file_path, anchor.qualname, anchor.kind)
        return any(symbol.contains(line) for symbol in located)

    items: list[tuple[_Touch, list[CodeAnchor]]] = []
    merged: dict[str, tuple[_Touch, list[CodeAnchor]]] = {}
    for touch in _touches(store, ns, needle=file_path or None):
        hits = [a for a in touch.anchors if wanted(a)]
        if not hits:
            continue
        if touch.memory_id in merged:
            merged[touch.memory_id][1].extend(hits)
        else:
            merged[touch.memory_id] = (touch, hits)
            items.append(merged[touch.memory_id])
    items.sort(key=lambda pair: (pair[0].recorded_at, pair[0].memory_id), reverse=True)
    short = store.short_ids([touch.memory_id for touch, _ in items])
    return CodeForResult(
        file_path=file_path + ("/" if is_dir and file_path else ""),
        line=line,
        items=tuple(
            CodeMemory(
                id=touch.memory_id,
                short_id=short[touch.memory_id],
                kind=touch.kind,
                content=touch.content,
                valid_from=touch.valid_from,
                recorded_at=touch.recorded_at,
                anchors=tuple(_unique(anchors)),
            )
            for touch, anchors in items
        ),
    )


def _recorded_contains(anchor: CodeAnchor, line: int) -> bool:
    if anchor.start_line is None:
        return anchor.kind == "module"
    return anchor.start_line <= line <= (anchor.end_line or anchor.start_line)


def _unique(anchors: Iterable[CodeAnchor]) -> list[CodeAnchor]:
    seen: set[tuple[str, str]] = set()
    result = []
    for anchor in anchors:
        key = (anchor.graph_node_id, anchor.entity_id)
        if key not in seen:
            seen.add(key)
            result.append(anchor)
    return result


def code_to(store: MemoryStore, ref: str, *, namespace: str | None = None) -> CodeToResult:
    """Where in the code a memory is anchored: its TOUCHES edges' anchors (an entity's
    own anchors when the node is an entity)."""
    ns = store._ns(namespace)
    node = store.get(ref, namespace=ns)
    if node.tombstoned:  # forgotten is forgotten everywhere, its anchors included
        raise NotFoundError(f"{node.id} is forgotten")
    if node.kind == "entity":
        anchors = [_anchor_of(r, node.id, node.content) for r in _anchors_from_data(node.data)]
    else:
        rows = store.connection.execute(
            "SELECT e.data, ent.id, ent.content, ent.data FROM mem_edges e "
            "JOIN mem_nodes ent ON ent.id = e.dst WHERE e.src = ? AND e.kind = 'TOUCHES' "
            "ORDER BY ent.content, ent.id",
            (node.id,),
        ).fetchall()
        anchors = []
        for edge_data, entity_id, entity, entity_data in rows:
            records = _anchors_from_data(json.loads(edge_data)) or _anchors_from_data(
                json.loads(entity_data)
            )
            anchors += [_anchor_of(r, str(entity_id), str(entity)) for r in records]
    return CodeToResult(
        id=node.id,
        short_id=store.short_ids([node.id])[node.id],
        kind=node.kind,
        content=node.content,
        anchors=tuple(_unique(anchors)),
    )


def verify_staleness(store: MemoryStore, *, namespace: str | None = None) -> StalenessReport:
    """Check every anchored current memory against the source files as they are now."""
    ns = store._ns(namespace)
    live = LiveSource(code_root(store))
    memories: set[str] = set()
    anchors_checked = unverifiable = 0
    stale: list[tuple[_Touch, CodeAnchor, str, str]] = []
    seen: set[tuple[str, str]] = set()
    for touch in _touches(store, ns):
        for anchor in touch.anchors:
            key = (touch.memory_id, anchor.graph_node_id)
            if key in seen:
                continue
            seen.add(key)
            memories.add(touch.memory_id)
            anchors_checked += 1
            verdict = _check_anchor(anchor, live)
            if verdict is None:
                continue
            if verdict[0] == "":
                unverifiable += 1
                continue
            stale.append((touch, anchor, verdict[0], verdict[1]))
    short = store.short_ids([touch.memory_id for touch, *_ in stale])
    return StalenessReport(
        checked=len(memories),
        anchors_checked=anchors_checked,
        unverifiable=unverifiable,
        stale=tuple(
            StaleItem(
                id=touch.memory_id,
                short_id=short[touch.memory_id],
                kind=touch.kind,
                content=touch.content,
                file_path=anchor.file_path,
                reason=reason,
                detail=detail,
                graph_node_id=anchor.graph_node_id,
                qualname=anchor.qualname,
                entity=anchor.entity,
            )
            for touch, anchor, reason, detail in stale
        ),
    )


def _check_anchor(anchor: CodeAnchor, live: LiveSource) -> tuple[str, str] | None:
    """None when the anchor still holds; ``("", why)`` when it cannot be verified;
    otherwise ``(reason, detail)``."""
    problem, symbols = live.symbols(anchor.file_path)
    if problem == REASON_FILE_MISSING:
        return problem, f"{anchor.file_path} no longer exists"
    if problem == REASON_UNPARSABLE:
        return problem, str(symbols[0].parse_error)
    what = anchor.qualname or anchor.graph_node_id
    located = live.locate(anchor.file_path, anchor.qualname, anchor.kind)
    if not located:
        return REASON_SYMBOL_REMOVED, f"{what} is no longer defined in {anchor.file_path}"
    if anchor.hash_scheme != HASH_SCHEME or not anchor.source_hash:
        return "", "no comparable source hash"
    if any(symbol.source_hash == anchor.source_hash for symbol in located):
        return None
    now = _nearest(located, anchor.start_line)
    return (
        REASON_SOURCE_CHANGED,
        f"{what} changed since it was anchored (now lines {now.start_line}-{now.end_line})",
    )
