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

import hashlib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ast

TOKENS_SCHEME = "sha256-tokens-16"

_COMMON = [
    rb"(?P<ws>\s+)",
    rb"(?P<comment>//[^\n]*|/\*.*?\*/)",
]
_TAIL = [rb"(?P<word>\w+)", rb"(?P<punct>.)"]
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
_LEXERS = {
    dialect: re.compile(b"|".join([*_COMMON, strings, *_TAIL]), re.DOTALL)
    for dialect, strings in _STRINGS.items()
}
_CLOSERS = {b")": b"(", b"]": b"[", b"}": b"{"}


def hash_tokens(lines: Sequence[bytes], start: int, end: int, dialect: str) -> str:
    """The token hash of lines ``start``..``end`` (1-based, inclusive) in ``dialect``
    (``go``, ``rust``, ``java`` or ``script``)."""
    text = b"\n".join(lines[start - 1 : end])
    tokens: list[bytes] = []
    # For each open bracket: where it sits in ``tokens`` and how many commas it holds.
    groups: list[list[int]] = []
    script = dialect == "script"
    for match in _LEXERS[dialect].finditer(text):
        kind = match.lastgroup
        token = match.group()
        if kind in ("ws", "comment"):
            continue
        if kind == "str" and script:
            token = _script_string(token)
        elif kind == "punct":
            if script and token == b";":
                continue
            if token in (b"(", b"[", b"{"):
                groups.append([len(tokens), 0])
            elif token == b",":
                if groups:
                    groups[-1][1] += 1
            elif token in _CLOSERS:
                opened = groups.pop() if groups else None
                if (
                    tokens
                    and tokens[-1] == b","
                    and not (
                        # (x,) is a one-element tuple in Rust: the comma is the meaning.
                        dialect == "rust" and token == b")" and opened is not None and opened[1] < 2
                    )
                ):
                    tokens.pop()
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
                del tokens[-4]
                del tokens[-2]
        tokens.append(token)
    return hashlib.sha256(b"\x00".join(tokens)).hexdigest()[:16]


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
    spans: dict[int, tuple[int, int]] = {}
    marked = {id(node) for node in wanted}
    docstring_holders = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    skipped_fields = frozenset({"ctx", "type_comment", "type_ignores"})

    def write(node: ast.AST) -> None:
        begin = len(pieces)
        pieces.append(type(node).__name__)
        pieces.append("(")
        docstring = _docstring_node(node) if isinstance(node, docstring_holders) else None
        for name, value in ast.iter_fields(node):
            if name in skipped_fields:
                continue
            if isinstance(value, list):
                pieces.append("[")
                for item in value:
                    if docstring is not None and item is docstring:
                        pieces.append(f"Doc({_clean_doc(docstring)!r})")
                    elif isinstance(item, ast.AST):
                        write(item)
                    else:
                        pieces.append(repr(item))
                    pieces.append(",")
                pieces.append("]")
            elif isinstance(value, ast.AST):
                write(value)
            else:
                pieces.append(repr(value))
            pieces.append(",")
        pieces.append(")")
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
