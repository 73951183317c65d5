"""Text shown to a person can never drive their terminal.

A memory written by one agent is read by a person at a terminal: an escape sequence in
it (clear screen, window title, OSC 8 hyperlink, blink) or a bidi override that reorders
what is shown would act on the reader's terminal instead of being read. Every human-facing
rendering (Markdown, table, error and warning lines) passes its text through
:func:`visible`, which shows each such character as a backslash escape of its code point:
``\\x1b``, ``\\x7f``, ``\\x9b``, ``\\u202e``. ASCII, so every terminal and font shows it;
it covers C1 and bidi characters, which have no control pictures (␛); it is what agents
and people recognise, and what error messages built with ``!r`` already show. The stored
text is never changed; JSON is not passed through here (json.dumps escapes C0 controls
itself and its bytes are a contract, docs/json.md).

Tab and newline are kept: the formats use them, a Rich table keeps a newline inside its
cell, and Markdown content has already been collapsed to one line by :func:`one_line`.
"""

from __future__ import annotations

import re

# C0 controls except tab and newline, DEL, and C1 controls (U+009B is CSI on terminals
# that honour C1).
_CONTROLS = r"[\x00-\x08\x0b-\x1f\x7f-\x9f]"
# The bidi embeddings, overrides and isolates of "Trojan Source" (CVE-2021-42574). The
# marks LRM/RLM are left alone: ordinary right-to-left text uses them. A pattern of its
# own: one class spanning U+0000-U+2069 takes ~10x longer to compile.
_BIDI = r"[\u202a-\u202e\u2066-\u2069]"


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control and bidi override shown as its escape (``\\x1b``)."""
    # Controls and bidi overrides are all unprintable, so printable text (almost all
    # text) is returned at C speed, and the patterns are compiled (then cached by re)
    # only in a process that meets something else: no start-up cost for every command.
    if text.isprintable() or text.replace("\n", " ").replace("\t", " ").isprintable():
        return text
    return re.sub(_BIDI, _escape, re.sub(_CONTROLS, _escape, text))


def one_line(text: str) -> str:
    """Collapse all whitespace so content can never break the Markdown structure, and
    show control characters escaped so it can never drive the reader's terminal. Recall
    measures this text against its budget, so the budget counts the escapes too. Here,
    beside :func:`visible`, because the recall packer and the timeline renderer both
    build Markdown lines with it: neither has to import the other.

    Text that is one line already (printable, so no control and no whitespace but the
    ASCII space; no two spaces in a row, none at either end) comes back as it is,
    without a split and a join: nearly every stored memory is, and recall's packing
    flattens ~90 drafts a recall."""
    if text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " ":
        return text
    return visible(" ".join(text.split()))
