"""Nodes by reference: full IDs, unique prefixes and short IDs (ids.py), and the row
every feature reads a node as. The SQL of these lookups lives here and nowhere else."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .errors import AmbiguousIdError, BadInputError, NotFoundError
from .ids import MIN_SHORT_DIGITS, RANDOM_DIGITS, parse_short, short_form

if TYPE_CHECKING:
    from .models import Node
    from .storage.engine import Storage

ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")
NODE_SELECT = (
    "SELECT id, kind, content, namespace, valid_from, valid_until, recorded_at, confidence, "
    "tombstoned, access_count, last_accessed, data FROM mem_nodes"
)


def row_to_node(row: Sequence[Any]) -> Node:
    import json

    from .models import Node

    return Node(
        id=row[0],
        kind=row[1],
        content=row[2],
        namespace=row[3],
        valid_from=row[4],
        valid_until=row[5],
        recorded_at=row[6],
        confidence=float(row[7]),
        tombstoned=bool(row[8]),
        access_count=int(row[9]),
        last_accessed=row[10],
        data=json.loads(row[11]),
    )


def resolve_id(storage: Storage, ref: str, *, namespace: str | None = None) -> str:
    """A full ID, a unique prefix of one (as git resolves short hashes) or a short
    ID (``f-3a9c``: kind prefix, hyphen, a prefix of the random part; ids.py), within
    the namespace. Raises NotFoundError or AmbiguousIdError (exit 3)."""
    ns = storage.namespace_for(namespace)
    prefix = ref.strip().lower()
    if not prefix or len(prefix) > 64 or not set(prefix) <= ID_CHARS:
        raise BadInputError(f"{ref[:40]!r} is not a node ID, short ID or ID prefix")
    short = parse_short(prefix)
    if short is None and "-" in prefix:
        raise BadInputError(
            f"{ref[:40]!r} is not a node ID: a short ID is a kind prefix, '-' and "
            f"{MIN_SHORT_DIGITS} to {RANDOM_DIGITS} hex digits (f-3a9c)"
        )
    # The expression that mem_nodes_id_random (m003) indexes, in the engine's SQL.
    random_part = storage.sql.random_part("id")
    if short:
        kind, digits = short
        # A range of the random-part index (m003); '+namespace' and 'kind' filter
        # the few rows it holds.
        rows = storage.connection.execute(
            f"SELECT id FROM mem_nodes WHERE {random_part} >= ? "
            f"AND {random_part} < ? AND +kind = ? AND +namespace = ? "
            "ORDER BY id LIMIT 11",
            (digits, digits + "~", kind, ns),
        ).fetchall()
    else:
        # '+namespace' keeps the planner on the id index (a range of a few rows);
        # otherwise it picks mem_nodes_ns_kind and sorts the whole namespace per call.
        rows = storage.connection.execute(
            "SELECT id FROM mem_nodes WHERE id >= ? AND id < ? AND +namespace = ? "
            "ORDER BY id LIMIT 11",
            (prefix, prefix + "~", ns),
        ).fetchall()
    ids = [r[0] for r in rows]
    if prefix in ids:
        return prefix
    if not ids:
        raise NotFoundError(f"no node {ref[:40]!r} in namespace {ns!r}")
    if len(ids) > 1:
        raise AmbiguousIdError(prefix, ids)
    return str(ids[0])


def get(storage: Storage, ref: str, *, namespace: str | None = None) -> Node:
    node_id = resolve_id(storage, ref, namespace=namespace)
    storage.flush_access_counts()  # the row shows them (recall/access_counts.py)
    row = storage.connection.execute(NODE_SELECT + " WHERE id = ?", (node_id,)).fetchone()
    return row_to_node(row)


def json_strings(values: Sequence[str]) -> str:
    """``json.dumps(values)`` for a list of strings, without importing json: its decoder
    compiles five regular expressions (~4.5M instructions of every fresh ``recall``,
    which passes the IDs it shows as a JSON array). CPython's C encoder sits in the
    private ``_json``; the strings here are IDs, printable ASCII, which JSON quotes as
    they are."""
    return "[" + ", ".join(map(_json_string, values)) + "]"


def _json_string(value: str) -> str:
    """One string as ``json.dumps`` writes it (ensure_ascii): printable ASCII as it is,
    the rest escaped as json.encoder.py_encode_basestring_ascii escapes it."""
    if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
        return '"' + value + '"'
    return '"' + "".join(map(_json_char, value)) + '"'


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_JSON_ESCAPES.update({"\b": "\\b", "\f": "\\f"})


def _json_char(char: str) -> str:
    if " " <= char <= "~" and char not in '"\\':
        return char
    escape = _JSON_ESCAPES.get(char)
    if escape is not None:
        return escape
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a surrogate pair
    return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"


HEX_DIGITS = frozenset("0123456789abcdef")


def short_ids(
    storage: Storage, ids: Iterable[str], *, min_hex: int = MIN_SHORT_DIGITS
) -> dict[str, str]:
    """The short ID of each node (ids.py): kind prefix, '-' and the fewest digits of
    its random part (at least ``min_hex``) that no other node in the store shares,
    whatever its kind or namespace, so it resolves wherever the node does."""
    result: dict[str, str] = {}
    # The random parts just before and just after each node's own in the random-part
    # index (m003): two seeks of it a node. '<=' with the node itself left out: a twin
    # with the very same random part counts as a neighbour.
    fragments = storage.sql
    sql = fragments.neighbour_parts.format(
        part=fragments.random_part("id"),
        value=fragments.random_part("q.value"),
        ids=fragments.id_rows,
    )
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), 500):
        # One statement per 500 IDs (a recall shows hundreds).
        rows = storage.connection.execute(
            sql, (json_strings(unique[start : start + 500]),)
        ).fetchall()
        for node_id, before, after in rows:
            shared = shared_digits(node_id[-RANDOM_DIGITS:], before, after)
            # Two random parts alike in all 16 digits (one chance in 2^64 per pair):
            # only the whole ID tells them apart.
            result[node_id] = (
                node_id
                if shared >= RANDOM_DIGITS
                else short_form(node_id, max(shared + 1, min_hex))
            )
    return result


def shared_digits(own: str, before: str | None, after: str | None) -> int:
    """How many leading digits ``own`` shares with ``before`` or ``after``, whichever
    shares more (None: no such neighbour). Three random parts of 16 hex digits (every
    ID's): the XOR of two as integers has a leading zero digit for each digit they
    share, so the smaller XOR tells it, without comparing slices (recall shortens ~30
    IDs, ~5 us each that way). Anything else is compared as text."""
    if before and after:
        three = own + before + after
        if len(three) == 3 * RANDOM_DIGITS and HEX_DIGITS.issuperset(three):
            mine = int(own, 16)
            closest = min(mine ^ int(before, 16), mine ^ int(after, 16))
            return RANDOM_DIGITS - (closest.bit_length() + 3) // 4
    return max((common_prefix(own, other) for other in (before, after) if other), default=0)


def common_prefix(a: str, b: str) -> int:
    # Binary search on slice equality: a few C-level compares instead of a Python loop
    # over ~30 characters per ID.
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low
