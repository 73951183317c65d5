"""Python source to code symbols: the module and every class, function and method in a
file, each with the hash of its lines. :mod:`ast` is imported only when a file is parsed.

The hash of a symbol (:func:`hash_lines`) is the same for every language: the other
languages (:mod:`treesitter`) produce their symbols with it, so staleness means the same
thing everywhere."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import PurePosixPath

from .tokens import TOKENS_SCHEME, python_tree_hashes
from .values import LINES_SCHEME, CodeSymbol

# The scheme of every source_hash computed now: the code's tokens, not its layout
# (nervamem/code/tokens.py). A hash of another scheme (another tool's graph) is never
# compared with ours.
HASH_SCHEME = TOKENS_SCHEME
# Anchors recorded before token hashes carry LINES_SCHEME: every symbol read from source
# still carries that hash too (CodeSymbol.lines_hash), so those anchors are verified as
# they always were.
HASH_SCHEMES = (HASH_SCHEME, LINES_SCHEME)


def module_name(file_path: str) -> str:
    parts = list(PurePosixPath(file_path).with_suffix("").parts)
    if len(parts) > 1 and parts[-1] == "__init__":
        parts.pop()
    return ".".join(p for p in parts if p not in ("", ".", "/"))


def hash_lines(lines: Sequence[bytes], start: int, end: int) -> str:
    return hashlib.sha256(b"\n".join(lines[start - 1 : end])).hexdigest()[:16]


def python_symbols(file_path: str, data: bytes) -> list[CodeSymbol]:
    """The module and every class, function and method defined in ``data``.

    Hashes cover the symbol's syntax tree (decorators included; :mod:`tokens`), so
    moving or reformatting a symbol does not change its hash. A file that does not parse yields
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
        # A file that does not parse has no tokens to hash: its lines stand in.
        source_hash=hash_lines(lines, 1, total),
        lines_hash=hash_lines(lines, 1, total),
    )
    try:
        tree = ast.parse(data, filename=file_path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        line = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
        return [replace(module_symbol, parse_error=f"{type(exc).__name__}: {message}{line}")]
    definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    try:
        tree_hashes = python_tree_hashes(
            tree, [node for node in ast.walk(tree) if isinstance(node, definitions)]
        )
    except RecursionError:
        return [replace(module_symbol, parse_error="RecursionError: nested too deeply")]
    module_symbol = replace(module_symbol, source_hash=tree_hashes[id(tree)])
    symbols = [module_symbol]
    seen: dict[str, int] = {}
    containers = (ast.stmt, ast.excepthandler, ast.match_case)

    def visit(node: ast.AST, parent: str, prefix: str, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, definitions):
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
                        source_hash=tree_hashes[id(child)],
                        lines_hash=hash_lines(lines, start, end),
                        parent=parent,
                    )
                )
                visit(child, node_id, qualname, is_class)
            elif isinstance(child, containers):
                visit(child, parent, prefix, in_class)

    visit(tree, file_path, "", False)
    return symbols


def file_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]
