"""The questions asked of the bridge: :func:`code_for` (memories about a file or a
line), :func:`code_to` (where a memory is anchored) and :func:`verify_staleness`.

Verification re-reads the source files as they are now and never trusts the graph, so
it is right even when nobody ran ``code index`` since the code changed.
"""

from __future__ import annotations

import errno
import json
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .. import nodes
from ..errors import BadInputError, NotFoundError
from ..locate import graph_path_beside, shown_path
from .anchors import anchor_from_record, anchor_records
from .files import default_root, expanded_path, normalise_path, relative_to
from .live import LiveSource, nearest
from .sidecar import open_code_index
from .symbols import HASH_SCHEMES
from .values import (
    LINES_SCHEME,
    PROBLEM_NO_GRAMMAR,
    REASON_FILE_MISSING,
    REASON_SOURCE_CHANGED,
    REASON_SYMBOL_REMOVED,
    REASON_UNPARSABLE,
    STATE_CHANGED,
    STATE_FILE_MISSING,
    STATE_FRESH,
    STATE_MOVED,
    STATE_REMOVED,
    STATE_UNPARSABLE,
    STATE_UNVERIFIABLE,
    CodeAnchor,
    CodeForResult,
    CodeMemory,
    CodeSymbol,
    CodeToResult,
    StaleItem,
    StalenessReport,
)

if TYPE_CHECKING:
    from ..storage.engine import Storage


@dataclass(frozen=True)
class _Touch:
    memory_id: str
    kind: str
    content: str
    valid_from: str
    recorded_at: str
    anchors: tuple[CodeAnchor, ...]


def _touches(
    storage: Storage, namespace: str, *, memory_id: str | None = None, needle: str | None = None
) -> list[_Touch]:
    """TOUCHES edges of current memories in the namespace, with their anchors (the edge's
    own record, else the entity's)."""
    from ..recall.mask import mask_sql

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
    for row in storage.connection.execute(sql, args).fetchall():
        records = anchor_records(json.loads(row[5])) or anchor_records(json.loads(row[8]))
        anchors = tuple(anchor_from_record(r, str(row[6]), str(row[7])) for r in records)
        touches.append(_Touch(row[0], row[1], row[2], row[3], row[4], anchors))
    return touches


@contextmanager
def shown_source(storage: Storage) -> Iterator[LiveSource]:
    """The source as the views (code-for, code-to, show) read it: from the graph for a
    file unchanged since it was indexed, else from the file. Costs one open of the
    lookup index, which also gives the root."""
    graph_path = graph_path_beside(storage.path)
    index = None
    if graph_path.is_file():
        try:
            index = open_code_index(graph_path)
        except (OSError, SyntaxError, ValueError, sqlite3.Error):
            index = None
    try:
        yield LiveSource(index.root if index else default_root(graph_path), index)
    finally:
        if index is not None:
            index.close()


def code_root(storage: Storage) -> Path:
    """Where anchored file paths are resolved: the graph's recorded root, else the
    folder that holds the store's folder."""
    graph_path = graph_path_beside(storage.path)
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
    # isdecimal, not isdigit: int() takes every decimal digit but no superscript ('¹').
    if sep and tail.strip().isdecimal() and head:
        if len(tail.strip()) > 18:  # no file has that many lines; int() refuses 4,300 digits
            raise BadInputError(f"line {tail.strip()[:20]}... is beyond any file's end")
        line = int(tail)
        if line < 1:
            raise BadInputError(f"line numbers start at 1, not {line}")
        return head, line
    if sep and head and tail and tail.lstrip("-").isdecimal():
        raise BadInputError(f"line numbers start at 1, not {tail}")
    return text, None


def _root_relative(root: Path, text: str, cwd: Path | None) -> tuple[str, bool]:
    """A user's path as stored in anchors (relative to root), and whether it is a folder.
    A path that exists relative to the working directory is taken as such; otherwise it
    is read as relative to the root already (so is any relative path when the working
    directory was deleted: ``cwd`` None)."""
    given = expanded_path(text)
    on_disk = given if given.is_absolute() else cwd / given if cwd is not None else None
    try:
        exists = on_disk is not None and on_disk.exists()
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG:
            raise
        raise BadInputError(f"{shown_path(text)}: {exc.strerror}") from None
    if exists:
        assert on_disk is not None
        resolved = on_disk.resolve()
        rel = relative_to(resolved, root.resolve())
        if rel is not None:
            return rel, resolved.is_dir()
        return resolved.as_posix(), resolved.is_dir()
    norm = normalise_path(text).rstrip("/")
    return norm, text.endswith(("/", "\\")) or (root / norm).is_dir()


def _working_folder() -> Path | None:
    try:
        return Path.cwd()
    except OSError:  # deleted under us
        return None


def code_for(
    storage: Storage, target: str, *, namespace: str | None = None, cwd: Path | None = None
) -> CodeForResult:
    """Current memories anchored to a file (or folder), or to the code around a line."""
    file_text, line = _split_target(target)
    ns = storage.namespace_for(namespace)
    with shown_source(storage) as live:
        return _code_for(storage, ns, live, file_text, line, cwd)


def _code_for(
    storage: Storage, ns: str, live: LiveSource, file_text: str, line: int | None, cwd: Path | None
) -> CodeForResult:
    root = live.root
    file_path, is_dir = _root_relative(root, file_text, cwd or _working_folder())
    if is_dir and line is not None:
        raise BadInputError(f"{file_text} is a folder: a line needs a file")

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
    for touch in _touches(storage, ns, needle=file_path or None):
        hits = [a for a in touch.anchors if wanted(a)]
        if not hits:
            continue
        if touch.memory_id in merged:
            merged[touch.memory_id][1].extend(hits)
        else:
            merged[touch.memory_id] = (touch, hits)
            items.append(merged[touch.memory_id])
    items = [(touch, [_lines_today(anchor, live) for anchor in hits]) for touch, hits in items]
    items.sort(key=lambda pair: (pair[0].recorded_at, pair[0].memory_id), reverse=True)
    short = nodes.short_ids(storage, [touch.memory_id for touch, _ in items])
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


def _lines_today(anchor: CodeAnchor, live: LiveSource) -> CodeAnchor:
    """The anchor with its live state, and in ``start_line``/``end_line`` the lines its
    symbol spans in the file as it reads now (code-for asks about today's file); as
    recorded when the symbol cannot be found any more (its state says so)."""
    shown = with_state(anchor, live)
    if anchor.kind == "module" or shown.lines_now is None:
        return shown
    return replace(shown, start_line=shown.lines_now[0], end_line=shown.lines_now[1])


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


def code_to(storage: Storage, ref: str, *, namespace: str | None = None) -> CodeToResult:
    """Where in the code a memory is anchored: its TOUCHES edges' anchors (an entity's
    own anchors when the node is an entity)."""
    ns = storage.namespace_for(namespace)
    node = nodes.get(storage, ref, namespace=ns)
    if node.tombstoned:  # forgotten is forgotten everywhere, its anchors included
        raise NotFoundError(f"{node.id} is forgotten")
    if node.kind == "entity":
        anchors = [anchor_from_record(r, node.id, node.content) for r in anchor_records(node.data)]
    else:
        rows = storage.connection.execute(
            "SELECT e.data, ent.id, ent.content, ent.data FROM mem_edges e "
            "JOIN mem_nodes ent ON ent.id = e.dst WHERE e.src = ? AND e.kind = 'TOUCHES' "
            "ORDER BY ent.content, ent.id",
            (node.id,),
        ).fetchall()
        anchors = []
        for edge_data, entity_id, entity, entity_data in rows:
            records = anchor_records(json.loads(edge_data)) or anchor_records(
                json.loads(entity_data)
            )
            anchors += [anchor_from_record(r, str(entity_id), str(entity)) for r in records]
    with shown_source(storage) as live:
        shown = tuple(with_state(anchor, live) for anchor in _unique(anchors))
    return CodeToResult(
        id=node.id,
        short_id=nodes.short_ids(storage, [node.id])[node.id],
        kind=node.kind,
        content=node.content,
        anchors=shown,
    )


def verify_staleness(storage: Storage, *, namespace: str | None = None) -> StalenessReport:
    """Check every anchored current memory against the source files as they are now."""
    ns = storage.namespace_for(namespace)
    live = LiveSource(code_root(storage))
    memories: set[str] = set()
    anchors_checked = unverifiable = 0
    stale: list[tuple[_Touch, CodeAnchor, str, str]] = []
    seen: set[tuple[str, str]] = set()
    for touch in _touches(storage, ns):
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
    short = nodes.short_ids(storage, [touch.memory_id for touch, *_ in stale])
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


def _judge(anchor: CodeAnchor, live: LiveSource) -> tuple[str, CodeSymbol | None, str]:
    """``(state, symbol now, detail)``: the one check behind both verify-staleness and
    the state every shown anchor carries, so the two can never disagree."""
    problem, symbols = live.symbols(anchor.file_path)
    if problem == REASON_FILE_MISSING:
        return STATE_FILE_MISSING, None, f"{anchor.file_path} no longer exists"
    if problem == REASON_UNPARSABLE:
        return STATE_UNPARSABLE, None, str(symbols[0].parse_error)
    if problem == PROBLEM_NO_GRAMMAR:
        return STATE_UNVERIFIABLE, None, f"no grammar installed reads {anchor.file_path}"
    what = anchor.qualname or anchor.graph_node_id
    # An anchor made before token hashes compares the lines hash, which only a read of
    # the file gives (the graph holds token hashes).
    reread = anchor.hash_scheme == LINES_SCHEME
    located = live.locate(anchor.file_path, anchor.qualname, anchor.kind, reread=reread)
    if not located:
        return STATE_REMOVED, None, f"{what} is no longer defined in {anchor.file_path}"
    recorded = _recorded_lines(anchor)
    if not anchor.source_hash or anchor.hash_scheme not in HASH_SCHEMES:
        return STATE_UNVERIFIABLE, nearest(located, anchor.start_line), "no comparable source hash"
    same = [s for s in located if s.hash_in(anchor.hash_scheme) == anchor.source_hash]
    if same:
        now = nearest(same, anchor.start_line)
        lines = (now.start_line, now.end_line)
        return (STATE_FRESH if recorded is None or lines == recorded else STATE_MOVED), now, ""
    now = nearest(located, anchor.start_line)
    return (
        STATE_CHANGED,
        now,
        f"{what} changed since it was anchored (now lines {now.start_line}-{now.end_line})",
    )


def _recorded_lines(anchor: CodeAnchor) -> tuple[int, int] | None:
    if anchor.start_line is None:
        return None
    return (anchor.start_line, anchor.end_line or anchor.start_line)


def with_state(anchor: CodeAnchor, live: LiveSource) -> CodeAnchor:
    """The anchor as recorded, with its live state and today's lines."""
    state, now, _ = _judge(anchor, live)
    lines_now = None
    if now is not None and now.start_line is not None:
        lines_now = (now.start_line, now.end_line or now.start_line)
    return replace(anchor, state=state, lines_recorded=_recorded_lines(anchor), lines_now=lines_now)


# The states verify-staleness reports, with the reason it gives each.
_STALE_REASONS = {
    STATE_FILE_MISSING: REASON_FILE_MISSING,
    STATE_UNPARSABLE: REASON_UNPARSABLE,
    STATE_REMOVED: REASON_SYMBOL_REMOVED,
    STATE_CHANGED: REASON_SOURCE_CHANGED,
}


def _check_anchor(anchor: CodeAnchor, live: LiveSource) -> tuple[str, str] | None:
    """None when the anchor still holds; ``("", why)`` when it cannot be verified;
    otherwise ``(reason, detail)``."""
    state, _, detail = _judge(anchor, live)
    if state == STATE_UNVERIFIABLE:
        return "", detail
    if state in _STALE_REASONS:
        return _STALE_REASONS[state], detail
    return None
