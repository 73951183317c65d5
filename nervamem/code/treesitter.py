"""Go, Rust, Java, JavaScript and TypeScript source to code symbols, through the
tree-sitter grammars of the ``code`` extra (compiled into their wheels: nothing is
downloaded at run time).

Invariants a reader must not break:

* ``tree_sitter`` and the grammar packages are imported here only, and only when a file
  of that language is parsed: ``store`` and ``recall`` never load them.
* The symbols have the shape Python's have (:func:`symbols.python_symbols`): the module
  node first, then every definition in source order; lines 1-based and inclusive,
  attributes and decorators included; hashes by :func:`tokens.hash_tokens` over those
  lines (comments and layout out), so moving or reformatting a symbol changes nothing.
  Node IDs are ``path::qualname`` (``#2`` for a second definition).
* Qualified names are written as the language's users write them: ``Type.Method``
  within Go package ``pkg``, ``Type::method`` within Rust module ``crate::a::b``,
  ``Service.method`` within Java package ``com.example``, ``SessionStore.refresh``
  within a TypeScript or JavaScript file.
* A tree with an error in it is a file that does not parse: its module node alone, with
  ``parse_error`` set, as for a Python ``SyntaxError``.
* A language whose grammar package is missing raises :class:`GrammarMissing`; the
  caller lists the file as skipped, never as parsed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from .languages import GO, JAVA, RUST, SourceLanguage
from .symbols import hash_lines, module_name
from .treesitter_nodes import COMMENTS, Symbols, leading, node_name, node_text, type_name
from .values import CodeSymbol

if TYPE_CHECKING:
    from tree_sitter import Language, Node


class GrammarMissing(Exception):
    """The tree-sitter grammar of a language is not installed."""


_GRAMMARS: dict[str, Language] = {}


def load_grammar(language: SourceLanguage) -> Language:
    """The compiled grammar of ``language``, loaded once per process."""
    key = f"{language.grammar_module}.{language.grammar_function}"
    if key not in _GRAMMARS:
        try:
            import tree_sitter

            module = importlib.import_module(language.grammar_module)
            _GRAMMARS[key] = tree_sitter.Language(getattr(module, language.grammar_function)())
        except (ImportError, AttributeError, TypeError, ValueError) as exc:
            raise GrammarMissing(
                f"no tree-sitter grammar for {language.name} is installed "
                f"({type(exc).__name__}: {exc}); pip install 'nervamem[code]'"
            ) from None
    return _GRAMMARS[key]


def tree_symbols(file_path: str, data: bytes, language: SourceLanguage) -> list[CodeSymbol]:
    """The module and every definition in ``data``; raises :class:`GrammarMissing`."""
    from tree_sitter import Parser

    parser = Parser(load_grammar(language))
    tree = parser.parse(data)
    root = tree.root_node
    lines = _rows(data)
    total = max(len(lines), 1)
    if language is GO:
        module = _go_package(root) or module_name(file_path)
    elif language is RUST:
        module = rust_module(file_path)
    elif language is JAVA:
        module = _java_package(root)
    else:
        module = module_name(file_path)
    out = Symbols(file_path, module, lines, language.separator, _DIALECTS.get(language, "script"))
    module_symbol = CodeSymbol(
        node_id=file_path,
        file_path=file_path,
        kind="module",
        name=PurePosixPath(file_path).name,
        qualname=module,
        module=module,
        start_line=1,
        end_line=total,
        source_hash=out.tokens.hash(1, total),
        lines_hash=hash_lines(lines, 1, total),
    )
    if root.has_error:
        line = _first_error_line(root)
        problem = f"SyntaxError: {language.name} does not parse (line {line})"
        return [replace(module_symbol, parse_error=problem)]
    out.symbols.append(module_symbol)
    walker = _WALKERS.get(language.name, _script)
    try:
        walker(root, out)
    except RecursionError:
        return [replace(module_symbol, parse_error="RecursionError: nested too deeply")]
    return out.symbols


def _rows(data: bytes) -> list[bytes]:
    """The lines of ``data`` as tree-sitter numbers its rows: split at ``\\n`` only (a
    lone ``\\r`` is no row break to it, where ``bytes.splitlines`` breaks there and
    would shift every later symbol's hash onto the wrong lines). A ``\\r`` ending a row is
    dropped, so a CRLF file hashes as ``splitlines`` made it."""
    rows = data.split(b"\n")
    if not rows[-1]:
        rows.pop()  # the empty piece after a final newline is no row
    return [row[:-1] if row.endswith(b"\r") else row for row in rows]


def _first_error_line(root: Node) -> int:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            return node.start_point.row + 1
        stack.extend(reversed([c for c in node.children if c.has_error or c.is_missing]))
    return root.start_point.row + 1


# --- Go -----------------------------------------------------------------------------


def _go_package(root: Node) -> str:
    for child in root.named_children:
        if child.type == "package_clause":
            for part in child.named_children:
                if part.type == "package_identifier":
                    return node_text(part)
    return ""


def _go(root: Node, out: Symbols) -> None:
    types: dict[str, str] = {}  # a type's name -> its node ID, for its methods' parent
    methods: dict[str, str] = {}  # a method's node ID -> its receiver type's name
    for child in root.named_children:
        kind = child.type
        if kind in ("const_declaration", "var_declaration"):
            what = "constant" if kind == "const_declaration" else "variable"
            specs = [
                spec
                for c in child.named_children
                for spec in (c.named_children if c.type == "var_spec_list" else [c])
                if spec.type in ("const_spec", "var_spec")
            ]
            for spec in specs:
                idents = [n for n in spec.children_by_field_name("name") if n.is_named]
                for ident in idents:
                    whole = child if len(specs) == 1 and len(idents) == 1 else spec
                    out.add(what, [node_text(ident)], whole, None)
        elif kind == "function_declaration":
            out.add("function", [node_name(child)], child, None)
        elif kind == "method_declaration":
            receiver = child.child_by_field_name("receiver")
            owner = ""
            if receiver is not None:
                for param in receiver.named_children:
                    owner = type_name(param.child_by_field_name("type"))
                    break
            node_id = out.add(
                "method", [owner, node_name(child)] if owner else [node_name(child)], child, None
            )
            if owner:
                methods[node_id] = owner
        elif kind == "type_declaration":
            specs = [c for c in child.named_children if c.type in ("type_spec", "type_alias")]
            for spec in specs:
                name = node_name(spec)
                body = spec.child_by_field_name("type")
                body_type = body.type if body is not None else ""
                what = {"struct_type": "struct", "interface_type": "interface"}.get(
                    body_type, "type"
                )
                node_id = out.add(what, [name], child if len(specs) == 1 else spec, None)
                types.setdefault(name, node_id)
                if body is not None and what == "interface":
                    for elem in body.named_children:
                        if elem.type in ("method_elem", "method_spec"):
                            out.add("method", [name, node_name(elem)], elem, node_id)
    # A method hangs off its receiver type, as Go's users see it, when the type is
    # declared in the same file (else off the file, as a CONTAINS edge stays in a file).
    out.symbols = [
        replace(symbol, parent=types[methods[symbol.node_id]])
        if symbol.node_id in methods and methods[symbol.node_id] in types
        else symbol
        for symbol in out.symbols
    ]


# --- Rust ---------------------------------------------------------------------------


def rust_module(file_path: str) -> str:
    """``crate::a::b`` for ``src/a/b.rs`` (or ``src/a/b/mod.rs``); ``crate`` for
    ``src/lib.rs`` and ``src/main.rs``. A file outside any ``src/`` (tests, examples) is
    named by its path."""
    parts = list(PurePosixPath(file_path).with_suffix("").parts)
    if "src" in parts[:-1]:
        at = len(parts) - 1 - parts[::-1].index("src")
        rel = parts[at + 1 :]
        if rel in (["lib"], ["main"]):
            rel = []
        head = ["crate"]
    else:
        rel, head = parts, []
    if rel and rel[-1] == "mod":
        rel.pop()
    return "::".join(head + rel) or "crate"


_RUST_VALUES = {
    "const_item": "constant",
    "static_item": "static",
    "macro_definition": "macro",
}
_RUST_ITEMS = {
    "struct_item": "struct",
    "union_item": "struct",
    "enum_item": "enum",
    "trait_item": "trait",
    "type_item": "type",
}


def _rust(root: Node, out: Symbols) -> None:
    _rust_items(root, out, None, [], None)


def _rust_items(
    node: Node, out: Symbols, parent: str | None, prefix: list[str], owner: str | None
) -> None:
    for child, first in leading(node.named_children, _RUST_ATTRIBUTES):
        kind = child.type
        if kind in ("function_item", "function_signature_item"):
            name = node_name(child)
            if owner:
                out.add("method", [*prefix, owner, name], child, parent, first)
            else:
                out.add("function", [*prefix, name], child, parent, first)
        elif kind in _RUST_VALUES:
            name = node_name(child)
            if name:
                parts = [*prefix, owner, name] if owner else [*prefix, name]
                out.add(_RUST_VALUES[kind], parts, child, parent, first)
        elif kind in _RUST_ITEMS:
            name = node_name(child)
            node_id = out.add(_RUST_ITEMS[kind], [*prefix, name], child, parent, first)
            body = child.child_by_field_name("body")
            if kind == "trait_item" and body is not None:
                _rust_items(body, out, node_id, prefix, name)
        elif kind == "impl_item":
            owner_name = type_name(child.child_by_field_name("type"))
            trait = type_name(child.child_by_field_name("trait"))
            label = f"impl {trait} for {owner_name}" if trait else f"impl {owner_name}"
            node_id = out.add("impl", [*prefix, label], child, parent, first)
            body = child.child_by_field_name("body")
            if body is not None:
                _rust_items(body, out, node_id, prefix, owner_name)
        elif kind == "mod_item":
            body = child.child_by_field_name("body")
            if body is not None:
                name = node_name(child)
                node_id = out.add("namespace", [*prefix, name], child, parent, first)
                _rust_items(body, out, node_id, [*prefix, name], None)


_RUST_ATTRIBUTES = frozenset({"attribute_item"})


# --- Java ---------------------------------------------------------------------------


def _java_package(root: Node) -> str:
    for child in root.named_children:
        if child.type == "package_declaration":
            for part in child.named_children:
                if part.type in ("scoped_identifier", "identifier"):
                    return "".join(node_text(part).split())
    return ""


_JAVA_TYPES = {
    "class_declaration": "class",
    "record_declaration": "class",
    "interface_declaration": "interface",
    "annotation_type_declaration": "interface",
    "enum_declaration": "enum",
}
_JAVA_BODIES = frozenset({"enum_body_declarations"})


def _java(root: Node, out: Symbols) -> None:
    _java_members(root, out, None, [])


def _java_members(node: Node, out: Symbols, parent: str | None, prefix: list[str]) -> None:
    for child in node.named_children:
        kind = child.type
        if kind in _JAVA_TYPES:
            name = node_name(child)
            node_id = out.add(_JAVA_TYPES[kind], [*prefix, name], child, parent)
            body = child.child_by_field_name("body")
            if body is not None:
                _java_members(body, out, node_id, [*prefix, name])
        elif kind in ("method_declaration", "constructor_declaration"):
            out.add("method", [*prefix, node_name(child)], child, parent)
        elif kind in ("field_declaration", "constant_declaration"):
            declarators = child.children_by_field_name("declarator")
            for declarator in declarators:
                whole = child if len(declarators) == 1 else declarator
                out.add("field", [*prefix, node_name(declarator)], whole, parent)
        elif kind in _JAVA_BODIES:
            _java_members(child, out, parent, prefix)


# --- JavaScript and TypeScript ------------------------------------------------------

_SCRIPT_TYPES = {
    "class_declaration": "class",
    "abstract_class_declaration": "class",
    "class": "class",
    "interface_declaration": "interface",
    "enum_declaration": "enum",
    "type_alias_declaration": "type",
    "internal_module": "namespace",
    "module": "namespace",
}
_SCRIPT_FUNCTIONS = frozenset(
    {"function_declaration", "generator_function_declaration", "function_signature"}
)
_SCRIPT_METHODS = frozenset({"method_definition", "method_signature", "abstract_method_signature"})
_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
_SCRIPT_WRAPPERS = frozenset(
    {"export_statement", "ambient_declaration", "expression_statement", "parenthesized_expression"}
)
_SCRIPT_DECORATORS = frozenset({"decorator"})


def _script(root: Node, out: Symbols) -> None:
    _script_items(root, out, None, [], False)


def _script_items(
    node: Node, out: Symbols, parent: str | None, prefix: list[str], in_class: bool
) -> None:
    entries: list[tuple[Node, Node, int | None]] = []  # (span, declaration, first row)
    for child, first in leading(node.named_children, _SCRIPT_DECORATORS):
        if child.type in COMMENTS:
            continue
        span = child
        while child.type in _SCRIPT_WRAPPERS:  # export, declare, `namespace X {}`, `(...)`
            inner = child.child_by_field_name("declaration")
            if inner is None:
                named = [c for c in child.named_children if c.type not in _SCRIPT_DECORATORS]
                inner = named[0] if len(named) == 1 else None
            if inner is None:
                break
            child = inner
        entries.append((span, child, first))
    overloads: int | None = None  # first row of the overload signatures before a body
    for at, (span, child, first) in enumerate(entries):
        start = span.start_point.row if first is None else first
        if child.type in _OVERLOADS and at + 1 < len(entries):
            following = entries[at + 1][1]
            if following.type in _OVERLOADED and node_name(following) == node_name(child):
                overloads = start if overloads is None else overloads
                continue
        if overloads is not None:  # `f(a: string): T; f(a: number): T; f(a) {...}`
            first, overloads = overloads, None
        _script_item(child, span, first, out, parent, prefix, in_class)


# TypeScript overload signatures belong to the implementation that follows them, as a
# decorator belongs to what it decorates; alone (a .d.ts file) each is a symbol.
_OVERLOADS = frozenset({"function_signature", "method_signature"})
_OVERLOADED = _OVERLOADS | {"function_declaration", "method_definition"}


def _script_item(
    child: Node,
    span: Node,
    first: int | None,
    out: Symbols,
    parent: str | None,
    prefix: list[str],
    in_class: bool,
) -> None:
    kind = child.type
    default = span.type == "export_statement" and any(c.type == "default" for c in span.children)
    if default and kind in _FUNCTION_VALUES:  # export default function () {...}, () => ...
        node_id = out.add("function", [*prefix, "default"], span, parent, first)
        _script_body(child, out, node_id, [*prefix, "default"])
    elif default and kind == "object":  # export default { data() {...} }
        _script_object(child, out, parent, [*prefix, "default"])
    elif kind in _SCRIPT_TYPES:
        name = node_name(child) or ("default" if default else "")
        if not name:
            return
        node_id = out.add(_SCRIPT_TYPES[kind], [*prefix, name], span, parent, first)
        body = child.child_by_field_name("body")
        if body is not None and kind not in ("type_alias_declaration", "enum_declaration"):
            _script_items(body, out, node_id, [*prefix, name], kind in _MEMBER_HOLDERS)
    elif kind in _SCRIPT_FUNCTIONS or (in_class and kind in _SCRIPT_METHODS):
        name = node_name(child)
        if not name:
            return
        what = "method" if in_class else "function"
        node_id = out.add(what, [*prefix, name], span, parent, first)
        _script_body(child, out, node_id, [*prefix, name])
    elif kind in ("public_field_definition", "field_definition"):
        value = child.child_by_field_name("value")
        name = node_name(child) or node_name(child, "property")
        if value is not None and value.type in _FUNCTION_VALUES and name:
            node_id = out.add("method", [*prefix, name], span, parent, first)
            _script_body(value, out, node_id, [*prefix, name])
    elif kind == "call_expression":  # `(function () { ... })()`: a module's whole body
        function = _immediately_invoked(child)
        if function is not None:
            _script_body(function, out, parent or out.file_path, prefix)
    elif kind in ("lexical_declaration", "variable_declaration"):
        declarators = [c for c in child.named_children if c.type == "variable_declarator"]
        for declarator in declarators:
            value = _unparenthesized(declarator.child_by_field_name("value"))
            name = node_name(declarator)
            if value is None or not name:
                continue
            whole = span if len(declarators) == 1 else declarator
            if value.type in _FUNCTION_VALUES:
                node_id = out.add("function", [*prefix, name], whole, parent, first)
                _script_body(value, out, node_id, [*prefix, name])
            elif value.type == "object":  # const api = { get() {...}, post: () => ... }
                _script_object(value, out, parent, [*prefix, name])
            elif value.type in ("class", "class_expression"):
                node_id = out.add("class", [*prefix, name], whole, parent, first)
                body = value.child_by_field_name("body")
                if body is not None:
                    _script_items(body, out, node_id, [*prefix, name], True)


_MEMBER_HOLDERS = frozenset(
    {"class_declaration", "abstract_class_declaration", "class", "interface_declaration"}
)


def _script_object(literal: Node, out: Symbols, parent: str | None, prefix: list[str]) -> None:
    """The methods of an object literal (``api.get``): its ``get() {...}`` members and its
    ``post: () => ...`` or ``post: function () {...}`` properties."""
    for member in literal.named_children:
        if member.type == "method_definition":
            name, function = node_name(member), member
        elif member.type == "pair":
            value = _unparenthesized(member.child_by_field_name("value"))
            if value is None or value.type not in _FUNCTION_VALUES:
                continue
            name, function = node_name(member, "key"), value
        else:
            continue
        if name:
            node_id = out.add("method", [*prefix, name], member, parent)
            _script_body(function, out, node_id, [*prefix, name])


def _immediately_invoked(call: Node) -> Node | None:
    """The function an immediately invoked function expression calls (also through
    ``.call(this)``), whose definitions count as the file's own (UMD bundles, lodash)."""
    callee = _unparenthesized(call.child_by_field_name("function"))
    if callee is not None and callee.type == "member_expression":
        callee = _unparenthesized(callee.child_by_field_name("object"))
    return callee if callee is not None and callee.type in _FUNCTION_VALUES else None


def _unparenthesized(node: Node | None) -> Node | None:
    while node is not None and node.type == "parenthesized_expression":
        named = node.named_children
        node = named[0] if len(named) == 1 else None
    return node


def _script_body(function: Node, out: Symbols, parent: str, prefix: list[str]) -> None:
    """Functions and classes defined in a function's body (``outer.inner``, as Python)."""
    body = function.child_by_field_name("body")
    if body is not None and body.type == "statement_block":
        _script_items(body, out, parent, prefix, False)


# How each language's tokens are read (tokens.hash_tokens); TypeScript is JavaScript's.
_DIALECTS = {GO: "go", RUST: "rust", JAVA: "java"}

_WALKERS: dict[str, Callable[[Node, Symbols], None]] = {
    GO.name: _go,
    RUST.name: _rust,
    JAVA.name: _java,
}
