"""The graph file, ``graph.graphml``: written with NetworkX (imported only here, only
when writing), read with :mod:`xml.etree`.

The reader is tolerant: any GraphML whose nodes carry ``file_path`` works; missing
optional attributes are derived or left empty, line numbers may be strings.
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path
from typing import Any

from .files import normalise_path
from .languages import SOURCE_SUFFIXES
from .names import QUALIFIERS
from .symbols import module_name
from .values import CodeSymbol

# What nervamem records in the graphs it writes: a graph with other values (or another
# tool's) is read, never reused by an incremental index.
GENERATOR = "nervamem"
INDEX_VERSION = 1

# A file modified this close to the previous index may have changed within the same
# mtime tick; its hash is compared instead of trusting its stat (git's "racy clean").
RACY_WINDOW_NS = 2_000_000_000
_EDGE_KIND_ATTRS = ("kind", "type", "label", "relation")
_RAW_FILE_PATH = "\0file_path"  # a node's file_path as written, before stripping

# What XML 1.0 cannot hold (control characters, lone surrogates: a file name whose bytes
# are not UTF-8 arrives holding them), and \r, which every XML reader turns into \n. A
# graph that holds one is XML no reader accepts.
NOT_IN_GRAPHML = re.compile("[\x00-\x08\x0b-\x1f\ud800-\udfff\ufffe\uffff]")


def write_graph(graph_path: Path, attrs: dict[str, str], symbols: list[CodeSymbol]) -> None:
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


def as_int(value: object) -> int | None:
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
            raw_path = _raw_text(elem, keys, "file_path")
            if raw_path is not None:
                values[_RAW_FILE_PATH] = raw_path
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


def _raw_text(elem: Any, keys: dict[str, tuple[str, str]], name: str) -> str | None:
    """The unstripped text of ``elem``'s data named ``name``, if it has one."""
    for child in elem:
        if child.tag.rsplit("}", 1)[-1] != "data":
            continue
        key = child.get("key") or ""
        if keys.get(key, ("all", key))[1] == name:
            return str(child.text or "")
    return None


def _symbol_from(node_id: str, values: dict[str, str], parent: str | None) -> CodeSymbol | None:
    raw = values.get(_RAW_FILE_PATH)
    if raw and (node_id == raw or node_id.startswith(raw + "::")):
        # The node ID confirms it (as in the graphs nervamem writes): a name such as
        # ' lead.py' keeps its space, which stripping the text would lose.
        file_path = normalise_path(raw, strip=False)
    else:
        file_path = normalise_path(values.get("file_path") or "")
    if not file_path or not node_id:
        return None
    name = values.get("name") or ""
    qualname = values.get("qualname") or name
    if not name:
        name = QUALIFIERS.split(qualname or node_id)[-1]
    if not qualname:
        qualname = node_id.split("::", 1)[-1] if "::" in node_id else name
    kind = (values.get("kind") or values.get("type") or "").strip().lower()
    if not kind:
        kind = "module" if node_id == file_path else "symbol"
    start = as_int(values.get("start_line"))
    end = as_int(values.get("end_line"))
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
        file_mtime_ns=as_int(values.get("file_mtime_ns")),
        file_size=as_int(values.get("file_size")),
        file_hash=values.get("file_hash") or None,
        parse_error=values.get("parse_error") or None,
    )
