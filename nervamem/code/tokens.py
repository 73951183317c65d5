"""The hash of what code says, not of how it is laid out (``sha256-tokens-16``).

A formatter run (``gofmt``, ``black``, ``prettier``, ``rustfmt``) rewrites whitespace,
comments' places, quotes and trailing commas across a whole repository; hashing a
symbol's lines would call every symbol in it changed. These hashes cover the token
stream instead: comments and whitespace out, the contents of strings in.

* Python: the symbol's syntax tree (:func:`python_tree_hashes`), which is what the
  interpreter runs: layout, comments, quote style, redundant parentheses and trailing
  commas are not in it. Docstrings are compared as :func:`inspect.cleandoc` reads them,
  so re-indenting a docstring with its function is no change either.
* Go, Rust, Java, JavaScript, TypeScript: the tokens of the symbol's lines
  (:func:`hash_tokens`), with the few rewrites their formatters make undone: a trailing
  comma before a closing bracket (but not Rust's one-element tuple ``(x,)``), and in
  JavaScript and TypeScript the quote style of a string, semicolons and the parentheses
  ``prettier`` puts around a lone arrow-function parameter.

``docs/code-bridge.md`` says exactly what counts as a change, per language.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ast

TOKENS_SCHEME = "sha256-tokens-16"

_COMMON = [rb"(?P<comment>//[^\n]*|/\*.*?\*/)"]
_TAIL = [rb"(?P<word>\w+)", rb"(?P<punct>\S)"]
# Per dialect, the literals whose insides are kept verbatim (whitespace and all).
_STRINGS = {
    # Go: "..." strings, '...' runes, `...` raw strings (no escapes in them).
    "go": rb'(?P<str>"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|`[^`]*`)',
    # Rust: raw strings r#"..."#, byte strings, char literals ('a', '\n', '\u{1F600}');
    # a lifetime ('a) is no literal and falls through to punctuation and word.
    "rust": rb'(?P<str>b?r(?P<hashes>\#*)"(?:.*?)"(?P=hashes)|b?"(?:\\.|[^"\\])*"'
    rb"|b?'(?:\\[^']{1,10}|[^'\\])')",
    "java": rb'(?P<str>"""(?:.*?)"""|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\')',
    "script": rb'(?P<str>"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|`(?:\\.|[^`\\])*`)',
}
# Each match takes the whitespace before a token with it: no match is spent on layout.
_LEXERS = {
    dialect: re.compile(rb"\s*(?:" + b"|".join([*_COMMON, strings, *_TAIL]) + b")", re.DOTALL)
    for dialect, strings in _STRINGS.items()
}
_CLOSERS = {b")": b"(", b"]": b"[", b"}": b"{"}


def hash_tokens(lines: Sequence[bytes], start: int, end: int, dialect: str) -> str:
    """The token hash of lines ``start``..``end`` (1-based, inclusive) in ``dialect``
    (``go``, ``rust``, ``java`` or ``script``)."""
    return TokenStream(lines[start - 1 : end], dialect).hash(1, end - start + 1)


class TokenStream:
    """A file's tokens, read once, each with its line: every symbol's hash is the hash
    of the tokens on its lines, so nested symbols cost no second read."""

    def __init__(self, lines: Sequence[bytes], dialect: str) -> None:
        self.tokens, self.offsets = _tokens(lines, dialect)
        # Where each line starts in the joined text (one entry past the last line).
        self.line_starts = [0]
        for line in lines:
            self.line_starts.append(self.line_starts[-1] + len(line) + 1)

    def hash(self, start: int, end: int) -> str:
        lo = self.line_starts[min(start - 1, len(self.line_starts) - 1)]
        hi = self.line_starts[min(end, len(self.line_starts) - 1)]
        first = bisect.bisect_left(self.offsets, lo)
        last = bisect.bisect_left(self.offsets, hi)
        return hashlib.sha256(b"\x00".join(self.tokens[first:last])).hexdigest()[:16]


def _tokens(lines: Sequence[bytes], dialect: str) -> tuple[list[bytes], list[int]]:
    text = b"\n".join(lines)
    tokens: list[bytes] = []
    rows: list[int] = []  # where each token starts in ``text``
    # For each open bracket: where it sits in ``tokens``, how many commas and semicolons
    # it holds, and whether it opens a Rust match arm's block (``=> {``).
    groups: list[list[int]] = []
    script = dialect == "script"
    rust = dialect == "rust"
    for match in _LEXERS[dialect].finditer(text):
        kind = match.lastgroup
        if kind == "comment" or kind is None:
            continue
        token = match.group(kind)
        row = match.start(kind)
        if kind == "str" and script:
            token = _script_string(token)
        elif kind == "punct":
            if script and token == b";":
                continue
            if token in (b"(", b"[", b"{"):
                # 1: a match arm's block (`=> {`), 2: a closure's (`|x| {`).
                arm = 0
                if rust and token == b"{":
                    arm = 1 if tokens[-2:] == [b"=", b">"] else 2 if tokens[-1:] == [b"|"] else 0
                call = bool(tokens) and (
                    tokens[-1] in (b")", b"]", b">")  # f(..)(x,), a[0](x,), f::<T>(x,)
                    or (_is_word(tokens[-1]) and tokens[-1] not in _RUST_KEYWORDS)
                )
                groups.append([len(tokens), 0, 0, arm, int(call)])
            elif token == b",":
                if rust and tokens[-1:] in ([b","], [b"}"]):
                    # `=> { x },` became `=> x,` below: one comma; and after a block
                    # (`=> { ...; x },`, `=> match y { ... },`) the comma is optional.
                    continue
                if groups:
                    groups[-1][1] += 1
            elif token == b";":
                if groups:
                    groups[-1][2] += 1
            elif token == b">" and tokens[-1:] == [b","]:
                tokens.pop()  # a trailing comma in generics: `Emitter<'a, W,>`
                rows.pop()
            elif token in _CLOSERS:
                opened = groups.pop() if groups else None
                if (
                    tokens
                    and tokens[-1] == b","
                    and not (
                        # (x,) is a one-element tuple in Rust: the comma is the meaning
                        # (in a call, f(x,), it is not).
                        rust
                        and token == b")"
                        and opened is not None
                        and opened[1] < 2
                        and not opened[4]
                    )
                ):
                    tokens.pop()
                    rows.pop()
                if (
                    opened is not None
                    and opened[3]
                    and not opened[2]
                    and len(tokens) > opened[0] + 1
                ):
                    # `X => { expr }` and `X => expr,` are one arm, `|x| { expr }` and
                    # `|x| expr` one closure: rustfmt adds and removes the braces of a
                    # lone expression as the width demands.
                    del tokens[opened[0]], rows[opened[0]]
                    if opened[3] == 2:
                        continue
                    token = b","
            elif (
                script
                and token == b">"
                and tokens[-1:] == [b"="]
                and len(tokens) >= 4
                and tokens[-2] == b")"
                and tokens[-4] == b"("
                and _is_word(tokens[-3])
                and (len(tokens) < 5 or tokens[-5] == b"async" or not _is_word(tokens[-5]))
            ):
                # `(x) => ...` and `x => ...` are one function: prettier adds the parens.
                del tokens[-4], rows[-4]
                del tokens[-2], rows[-2]
        tokens.append(token)
        rows.append(row)
    return tokens, rows


# Words after which a Rust `(` opens a tuple or a parenthesised expression, not a call.
_RUST_KEYWORDS = frozenset(
    {b"return", b"in", b"match", b"if", b"while", b"else", b"break", b"yield", b"move",
     b"mut", b"ref", b"let", b"for", b"loop", b"as", b"box"}
)  # fmt: skip


def _is_word(token: bytes) -> bool:
    return token[:1].isalnum() or token[:1] == b"_" or token[:1] == b"$"


def _script_string(token: bytes) -> bytes:
    """A JavaScript string whatever its quotes: 'it\\'s' and "it's" are one string."""
    quote = token[:1]
    if quote == b"`":
        return token
    inner = token[1:-1].replace(b"\\'", b"'").replace(b'\\"', b'"')
    return b'"' + inner.replace(b'"', b'\\"') + b'"'


def python_tree_hashes(tree: ast.Module, wanted: Sequence[ast.AST]) -> dict[int, str]:
    """The token hash of the module and of each node in ``wanted`` (by ``id``): one
    pass over the tree writes its canonical form, each node's hash covers its slice."""
    import ast

    pieces: list[str] = []
    append = pieces.append
    spans: dict[int, tuple[int, int]] = {}
    marked = {id(node) for node in wanted}
    docstring_holders = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    skipped_fields = frozenset({"ctx", "type_comment", "type_ignores"})
    # Per node class: its name and the fields written (hot: once per node of the file).
    shapes: dict[type, tuple[str, tuple[str, ...]]] = {}
    node_type = ast.AST

    def write(node: ast.AST) -> None:
        begin = len(pieces)
        cls = type(node)
        shape = shapes.get(cls)
        if shape is None:
            fields = tuple(f for f in cls._fields if f not in skipped_fields)
            shape = shapes[cls] = (cls.__name__ + "(", fields)
        append(shape[0])
        docstring = _docstring_node(node) if isinstance(node, docstring_holders) else None
        for name in shape[1]:
            value = getattr(node, name, None)
            if value.__class__ is list:
                append("[")
                for item in value:
                    if isinstance(item, node_type):
                        if docstring is not None and item is docstring:
                            append(f"Doc({_clean_doc(docstring)!r})")
                        else:
                            write(item)
                    else:
                        append(repr(item))
                    append(",")
                append("]")
            elif isinstance(value, node_type):
                write(value)
            else:
                append(repr(value))
            append(",")
        append(")")
        if id(node) in marked:
            spans[id(node)] = (begin, len(pieces))

    write(tree)
    hashes = {id(tree): _digest(pieces)}
    for key, (begin, end) in spans.items():
        hashes[key] = _digest(pieces[begin:end])
    return hashes


def _docstring_node(node: ast.AST) -> ast.Expr | None:
    import ast

    body = getattr(node, "body", None)
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        return body[0]
    return None


def _clean_doc(docstring: ast.Expr) -> str:
    """A docstring as :func:`inspect.cleandoc` reads it (without importing inspect)."""
    text = str(getattr(docstring.value, "value", ""))
    lines = text.expandtabs().split("\n")
    indents = [len(line) - len(line.lstrip()) for line in lines[1:] if line.strip()]
    margin = min(indents, default=0)
    cleaned = [lines[0].strip(), *(line[margin:].rstrip() for line in lines[1:])]
    while cleaned and not cleaned[-1]:
        cleaned.pop()
    while cleaned and not cleaned[0]:
        cleaned.pop(0)
    return "\n".join(cleaned)


def _digest(pieces: list[str]) -> str:
    return hashlib.sha256("".join(pieces).encode("utf-8", "surrogatepass")).hexdigest()[:16]
