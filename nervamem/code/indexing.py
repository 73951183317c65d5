"""``nervamem code index``: write the graph file and its sidecar, re-parsing only the
files that changed since the previous index (module nodes carry each file's mtime, size
and hash). Files of every language go into the one graph in one pass; a file whose
grammar is not installed is reported as skipped, never dropped in silence."""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BadInputError, NotFoundError, StoreError
from ..locate import graph_path_beside, home_store, shown_path, working_folder
from .files import (
    default_root,
    default_scan_root,
    expanded_path,
    list_source_files,
    read_source,
    relative_to,
)
from .graph_file import (
    GENERATOR,
    INDEX_VERSION,
    NOT_IN_GRAPHML,
    RACY_WINDOW_NS,
    as_int,
    read_graphml,
    write_graph,
)
from .parsing import GrammarMissing, language_name, source_symbols
from .sidecar import CodeIndex, open_code_index, open_sidecar, sidecar_is_fresh, write_sidecar
from .symbols import HASH_SCHEME, file_hash
from .values import CodeSymbol, IndexResult, SkippedFile

if TYPE_CHECKING:
    from ..storage.engine import Storage


def index_code(storage: Storage, root: str | os.PathLike[str] | None = None) -> IndexResult:
    """Write the code graph of ``root`` beside the store, reusing the nodes of files
    unchanged since the last index. ``root`` defaults to the project: the folder
    holding the store's folder, else the git work tree, else the working folder
    (files.default_scan_root). Then anchors the memories whose entity names resolve in
    the new graph and did not before (:func:`anchor_resolved`)."""
    graph_path = graph_path_beside(storage.path)
    result = build_index(graph_path, root)
    return replace(result, anchored=anchor_resolved(storage, graph_path))


def anchor_resolved(storage: Storage, graph_path: Path) -> int:
    """Anchor each current memory to the entities it is about that it has no TOUCHES
    to yet, where the entity's name now matches the graph (a symbol written after the
    memory named it, a memory stored before there was a graph). How many memories."""
    from ..recall.mask import mask_sql
    from .anchors import anchor_entities

    mask, params = mask_sql(None, "n")
    pairs = storage.connection.execute(
        "SELECT n.id, ent.id, ent.content FROM mem_edges a JOIN mem_nodes n ON n.id = a.src "
        "JOIN mem_nodes ent ON ent.id = a.dst "
        f"WHERE a.kind = 'ABOUT' AND ent.kind = 'entity' AND {mask} AND NOT EXISTS "
        "(SELECT 1 FROM mem_edges t WHERE t.src = n.id AND t.dst = ent.id AND t.kind = 'TOUCHES') "
        "ORDER BY n.recorded_at, n.id, ent.id",
        params,
    ).fetchall()
    if not pairs:
        return 0
    with open_code_index(graph_path) as index:
        names = {str(name) for _, _, name in pairs}
        resolving = {name for name in names if index.lookup(name)}
    anchored: set[str] = set()
    with storage.transaction():
        for memory_id, entity_id, name in pairs:
            if name in resolving:
                report = anchor_entities(storage, memory_id, [(name, entity_id)], graph_path)
                if report.anchors:
                    anchored.add(memory_id)
    return len(anchored)


def refresh_before_anchoring(graph_path: Path, names: list[str]) -> str | None:
    """Before ``store`` anchors: when a name written as code matches nothing in the
    graph, re-index (incrementally: only files changed since the last index are parsed)
    so that a symbol just written is found. A note saying so when it re-indexed, None
    when there was no need."""
    from .anchors import reads_as_code

    try:
        with open_code_index(graph_path) as index:
            missing = [name for name in names if reads_as_code(name) and not index.lookup(name)]
            recorded_root = index.attrs.get("root")
    except (OSError, SyntaxError, ValueError, sqlite3.Error):
        return None  # anchoring reports an unreadable graph itself
    if not missing:
        return None
    started = time.monotonic()
    try:
        result = build_index(graph_path, recorded_root or None)
    except (StoreError, BadInputError, NotFoundError, OSError) as exc:
        return f"could not re-index the code before anchoring ({exc})"
    if not result.written:
        return None
    took = time.monotonic() - started
    files = f"{result.parsed} changed file{'' if result.parsed == 1 else 's'}"
    return f"re-indexed {files} of the code graph before anchoring ({took:.2f} s)"


def _home_store_folder() -> Path | None:
    """The folder holding the home store's folder, or None where there is no home."""
    try:
        return home_store().parent.parent
    except StoreError:
        return None


def checked_root(root: str | os.PathLike[str]) -> Path:
    """The folder ``code index ROOT`` scans, resolved; BadInputError or NotFoundError
    when there is none. Needs no store: the CLI checks it before it opens one."""
    if not os.fspath(root).strip():
        # A blank ROOT (`code index "$DIR"` with DIR unset) names no folder: not the
        # project, which no ROOT at all means.
        raise BadInputError("the folder to index is blank: give a folder, or none for the project")
    try:
        scan_root = expanded_path(root).resolve()
    except (RuntimeError, OSError) as exc:  # a symbolic link loop (ELOOP on Python 3.13)
        raise BadInputError(f"{shown_path(root)} cannot be resolved: {exc}") from None
    if not scan_root.exists():
        raise NotFoundError(f"{root} does not exist")
    if not scan_root.is_dir():
        raise BadInputError(f"{root} is not a folder")
    return scan_root


def _default_scan_root(base: Path) -> Path:
    """The project (files.default_scan_root). With the working folder deleted under us it
    is the store's project, which needs no working folder, unless that is the home
    store's folder: then only a ROOT says what to index."""
    home = _home_store_folder()
    try:
        cwd = working_folder()
    except StoreError as exc:
        if home is not None and base == home.resolve():
            raise StoreError(
                f"{str(exc).split(';')[0]}; give the folder to index: nervamem code index ROOT"
            ) from None
        return base
    return default_scan_root(base, cwd, home)


def build_index(graph_path: Path, root: str | os.PathLike[str] | None = None) -> IndexResult:
    base = default_root(graph_path)
    scan_root = checked_root(root) if root is not None else _default_scan_root(base)
    # Paths are relative to the folder holding .nervapack/; a ROOT outside it keeps
    # paths relative to ROOT and records ROOT in the graph.
    prefix = relative_to(scan_root, base)
    rel_base = base if prefix is not None else scan_root
    recorded_root = None if prefix is not None else str(scan_root)
    why = _unwritable(prefix or "") or _unwritable(recorded_root or "")
    if why:  # every path the graph would record holds it
        raise BadInputError(f"{_shown(scan_root)}: the folder's path {why}")

    previous_attrs, previous = _previous_index(graph_path, recorded_root)
    indexed_before = as_int(previous_attrs.get("indexed_at_ns")) or 0
    started = time.time_ns()
    symbols: list[CodeSymbol] = []
    errors: list[str] = []
    skipped: list[SkippedFile] = []
    parsed = reused = 0
    changed = False
    files = list_source_files(scan_root)
    for rel_in_root in files:
        rel = f"{prefix}/{rel_in_root}" if prefix else rel_in_root
        path = rel_base / rel
        why = _unwritable(rel)
        if why:
            errors.append(f"{_shown(rel)}: the file name {why}; not indexed")
            continue
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
                data = read_source(path)
            except OSError as exc:
                errors.append(f"{rel}: cannot read ({exc.strerror or exc})")
                continue
            digest = file_hash(data)
            if old and old_module is not None and old_module.file_hash == digest:
                file_symbols = old
                reused += 1
            else:
                try:
                    file_symbols = source_symbols(rel, data)
                except GrammarMissing as exc:
                    skipped.append(SkippedFile(rel, language_name(rel), str(exc)))
                    continue
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
    languages: dict[str, int] = {}
    for symbol in symbols:
        if symbol.kind == "module":
            name = language_name(symbol.file_path)
            languages[name] = languages.get(name, 0) + 1
    unchanged = (
        not changed
        and graph_path.is_file()
        and set(previous) == {s.file_path for s in symbols if s.kind == "module"}
        and sidecar_is_fresh(graph_path)
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
        write_graph(graph_path, attrs, symbols)
        write_sidecar(graph_path, attrs, symbols)
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
        languages=dict(sorted(languages.items())),
        skipped=tuple(skipped),
    )


def _unwritable(path: str) -> str | None:
    """Why the graph cannot record ``path`` (GraphML could not be read back), or None."""
    match = NOT_IN_GRAPHML.search(path)
    if match is None:
        return None
    if "\ud800" <= match.group() <= "\udfff":
        return "is not valid UTF-8"
    return "holds a control character"


def _shown(path: str | os.PathLike[str]) -> str:
    """A path for a message, its undecodable bytes written as ``\\xff``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _previous_index(
    graph_path: Path, recorded_root: str | None
) -> tuple[dict[str, str], dict[str, list[CodeSymbol]]]:
    """The previous graph's symbols by file, when it is ours and comparable."""
    if not graph_path.is_file():
        return {}, {}
    sidecar = open_sidecar(graph_path)
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
