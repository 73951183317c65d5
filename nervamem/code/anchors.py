"""Anchoring: the TOUCHES edges from a memory to the entities whose names match the code
graph, and the anchor records kept in edge and entity data.

:func:`anchor_entities` runs inside ``MemoryStore.store``'s write transaction. An
unreadable graph means no TOUCHES and a warning, never a failed ``store``; the core never
prints, so warnings travel in :class:`AnchorReport`.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..storage import rows
from .files import normalise_path, source_path
from .graph_file import RACY_WINDOW_NS, as_int
from .languages import SOURCE_SUFFIXES
from .live import LiveSource, nearest
from .sidecar import CodeIndex, open_code_index
from .symbols import HASH_SCHEME
from .values import AnchorReport, CodeAnchor, CodeSymbol

if TYPE_CHECKING:
    from ..storage.engine import Storage

MAX_ANCHORS_PER_NAME = 20


def anchor_entities(
    storage: Storage,
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
        unresolved: list[str] = []
        conn = storage.connection
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
                unresolved.append(names[0])
                if reads_as_code(names[0]):
                    # Named like code yet nothing matches, even after the re-index of the
                    # files changed since the last one (store does that first): a typo or
                    # a symbol gone. As for an ambiguous name, the memory is stored; the
                    # writer is told, and a later 'code index' anchors it if it appears.
                    warnings.append(
                        f"entity {names[0]!r} matches nothing in the code graph; not anchored "
                        "yet ('nervamem code index' anchors it once the code defines it)"
                    )
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
            rows.link(storage, node_id, entity_id, "TOUCHES", {"anchors": records})
            first = records[0]
            rows.update_data(
                storage,
                entity_id,
                {
                    "file_path": first["file_path"],
                    "start_line": first["start_line"],
                    "end_line": first["end_line"],
                    "graph_node_id": first["graph_node_id"],
                    "source_hash": first["source_hash"],
                    "anchors": records,
                    "ambiguous": len(records) > 1,
                    "anchored_at": storage.now(),
                },
            )
            anchors_all += [replace(a, entity_id=entity_id, entity=entity_name) for a in anchors]
    return AnchorReport(
        node_id, tuple(anchors_all), tuple(ambiguous), tuple(warnings), tuple(unresolved)
    )


_DOTTED_NAME = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")


def looks_like_code(name: str) -> bool:
    """Whether an entity name is written as a code reference (a path, ``path::name``,
    ``Class.method``): only those are worth a warning when nothing matches. A plain word
    (``JWT``, ``AuthService``) may name something that is not code at all."""
    text = name.strip()
    return (
        "::" in text
        or "/" in text
        or "\\" in text
        or text.endswith(SOURCE_SUFFIXES)
        or bool(_DOTTED_NAME.match(text))
    )


_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*$")
_CASE_CHANGE = re.compile(r"[a-z0-9][A-Z]")


def reads_as_code(name: str) -> bool:
    """:func:`looks_like_code`, or an identifier written as code names are and words are
    not: ``defaultDirectory``, ``load_config``, ``AuthService`` (``JWT``, ``cache`` may
    be plain words)."""
    text = name.strip()
    if looks_like_code(text):
        return True
    return bool(_IDENTIFIER.match(text)) and (
        "_" in text.strip("_") or bool(_CASE_CHANGE.search(text))
    )


def _anchor_now(symbol: CodeSymbol, index: CodeIndex, live: LiveSource) -> CodeAnchor:
    """The anchor for a graph node as the code is *now*: straight from the graph when
    nervamem indexed the file and it has not changed since, else from the live source."""
    if index.trusted_hashes and symbol.source_hash:
        module = index.file_symbol(symbol.file_path)
        indexed_at = as_int(index.attrs.get("indexed_at_ns")) or 0
        try:
            stat = source_path(index.root, symbol.file_path).stat()
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
        return _anchor_from(symbol, nearest(located, symbol.start_line), HASH_SCHEME)
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


def anchor_records(data: dict[str, Any]) -> list[dict[str, Any]]:
    anchors = data.get("anchors")
    if isinstance(anchors, list) and anchors:
        return [a for a in anchors if isinstance(a, dict) and a.get("file_path")]
    if data.get("file_path"):
        return [data]
    return []


def anchor_from_record(record: dict[str, Any], entity_id: str = "", entity: str = "") -> CodeAnchor:
    return CodeAnchor(
        file_path=normalise_path(str(record.get("file_path") or ""), strip=False),
        start_line=as_int(record.get("start_line")),
        end_line=as_int(record.get("end_line")),
        graph_node_id=str(record.get("graph_node_id") or record.get("file_path") or ""),
        qualname=str(record.get("qualname") or ""),
        kind=str(record.get("kind") or ""),
        source_hash=record.get("source_hash") or None,
        hash_scheme=record.get("hash_scheme") or None,
        entity_id=entity_id,
        entity=entity,
    )
