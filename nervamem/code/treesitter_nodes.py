"""The shared node helpers of the tree-sitter walkers (:mod:`treesitter`): the symbol
list a walker fills (:class:`Symbols`), a node's text and name, the bare type a type
expression names, and the attributes or decorators leading a definition.

Separate from :mod:`treesitter` so that module holds the per-language walkers and the
parse itself, and each stays under 600 lines; like it, this imports no ``tree_sitter``
at run time (the node type is for the type checker only).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .graph_file import NOT_IN_GRAPHML
from .symbols import hash_lines
from .tokens import TokenStream
from .values import CodeSymbol

if TYPE_CHECKING:
    from tree_sitter import Node


class Symbols:
    """The symbols of one file as a walker finds them."""

    def __init__(
        self, file_path: str, module: str, lines: list[bytes], separator: str, dialect: str
    ) -> None:
        self.file_path = file_path
        self.tokens = TokenStream(lines, dialect)
        self.module = module
        self.lines = lines
        self.separator = separator
        self.symbols: list[CodeSymbol] = []
        self._seen: dict[str, int] = {}

    def add(
        self,
        kind: str,
        parts: list[str],
        span: Node,
        parent: str | None,
        first_row: int | None = None,
    ) -> str:
        qualname = self.separator.join(parts)
        count = self._seen.get(qualname, 0) + 1
        self._seen[qualname] = count
        node_id = f"{self.file_path}::{qualname}" + (f"#{count}" if count > 1 else "")
        start_row = span.start_point.row if first_row is None else first_row
        end_point = span.end_point
        # A node that takes its closing newline ends at column 0 of the next line.
        end_row = (
            end_point.row - 1
            if end_point.column == 0 and end_point.row > start_row
            else end_point.row
        )
        self.symbols.append(
            CodeSymbol(
                node_id=node_id,
                file_path=self.file_path,
                kind=kind,
                name=parts[-1],
                qualname=qualname,
                module=self.module,
                start_line=start_row + 1,
                end_line=end_row + 1,
                source_hash=self.tokens.hash(start_row + 1, end_row + 1),
                lines_hash=hash_lines(self.lines, start_row + 1, end_row + 1),
                parent=parent or self.file_path,
            )
        )
        return node_id


def node_text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    # A quoted name (`declare module "..."`, a "..."() method) may hold raw control
    # characters, which no GraphML can hold: each becomes U+FFFD, as bad UTF-8 does.
    return NOT_IN_GRAPHML.sub("\ufffd", node.text.decode("utf-8", "replace"))


def node_name(node: Node, field: str = "name") -> str:
    text = node_text(node.child_by_field_name(field))
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`":
        text = text[1:-1]
    return " ".join(text.split())


def type_name(node: Node | None) -> str:
    """The bare type a type expression names: ``*Store[T]`` and ``Vec<T>`` give
    ``Store`` and ``Vec``, ``fmt::Display`` gives ``Display``."""
    if node is None:
        return ""
    if node.type in ("type_identifier", "identifier", "primitive_type"):
        return node_text(node)
    for field in ("name", "type"):
        inner = node.child_by_field_name(field)
        if inner is not None:
            return type_name(inner)
    for child in node.named_children:
        found = type_name(child)
        if found:
            return found
    return ""


def leading(
    children: Iterable[Node], prefix_types: frozenset[str]
) -> Iterable[tuple[Node, int | None]]:
    """Each child with the row of the attributes or decorators just before it (which
    belong to its span, as Python's decorators do)."""
    first: int | None = None
    for child in children:
        if child.type in prefix_types:
            if first is None:
                first = child.start_point.row
            continue
        if child.type in COMMENTS:
            yield child, None
            continue
        yield child, first
        first = None


COMMENTS = frozenset({"comment", "line_comment", "block_comment"})
