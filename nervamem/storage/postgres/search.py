"""The full-text index of the PostgreSQL engine: what FTS5's ``mem_fts`` is on SQLite.

Recall ranks with BM25 over the terms of each node's ``content`` and ``why``, as
FTS5's tokenizer cuts them (storage/tokenizer.py, the same terms on both engines). Here
they live in plain tables, read by text_index.py:

* ``mem_search_terms (term, seq, tf)``: the posting lists, one row per term of a node
  and how often it occurs; the primary key (term, seq) is the lookup of a term and the
  range scan of a prefix (``"C"`` collation: byte order, as FTS5's).
* ``mem_search_docs (seq, length, terms)``: each indexed node's length in terms (BM25's
  length normalisation) and its distinct terms, under a GIN index: the rows holding all
  of several common terms in one bitmap intersection, and the postings to remove when
  the node changes.
* ``mem_search_totals``: one row, the number of nodes indexed and their summed length
  (FTS5's row count and average length, for BM25's IDF and average).
* ``mem_search_pending``: nodes whose text is not indexed yet.

Rules a reader must not break:
* The index is derived from ``mem_nodes`` and always agrees with it when a transaction
  commits. Triggers keep it so whatever the write path: an insert, or an update that
  changes ``content`` or ``why``, removes what the node had indexed (postings, length,
  its share of the totals) and queues it in ``mem_search_pending``; a delete (purge)
  removes what it had indexed. SQL cannot run the tokenizer, so the engine's
  ``transaction()`` calls :func:`index_pending` before its COMMIT: a write made outside
  ``transaction()`` would stay unindexed.
* ``why`` is indexed as SQLite computes it (migrations.WHY_COLUMN, with SQLite's own
  ``json_extract``, whose JSON text keeps the escapes PostgreSQL's would resolve), so
  that a decision's reasons give the same terms on both engines.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..tokenizer import tokens

if TYPE_CHECKING:
    import sqlite3

    from ..engine import Connection

SCHEMA = [
    'CREATE TABLE mem_search_terms (term text COLLATE "C" NOT NULL, seq bigint NOT NULL, '
    "tf integer NOT NULL, PRIMARY KEY (term, seq))",
    "CREATE TABLE mem_search_docs (seq bigint PRIMARY KEY, length integer NOT NULL, "
    'terms text[] COLLATE "C" NOT NULL)',
    "CREATE INDEX mem_search_docs_terms ON mem_search_docs USING gin (terms)",
    "CREATE TABLE mem_search_totals (id integer PRIMARY KEY CHECK (id = 1), "
    "rows bigint NOT NULL, tokens bigint NOT NULL)",
    "INSERT INTO mem_search_totals (id, rows, tokens) VALUES (1, 0, 0)",
    "CREATE TABLE mem_search_pending (seq bigint PRIMARY KEY)",
    """CREATE FUNCTION mem_search_nodes_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO mem_search_pending (seq) SELECT seq FROM inserted ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$""",
    "CREATE TRIGGER mem_search_insert AFTER INSERT ON mem_nodes "
    "REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT "
    "EXECUTE FUNCTION mem_search_nodes_inserted()",
    """CREATE FUNCTION mem_search_node_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_length integer;
    old_terms text[];
BEGIN
    DELETE FROM mem_search_docs WHERE seq = OLD.seq RETURNING length, terms
        INTO old_length, old_terms;
    IF FOUND THEN
        DELETE FROM mem_search_terms WHERE term = ANY (old_terms) AND seq = OLD.seq;
        UPDATE mem_search_totals SET rows = rows - 1, tokens = tokens - old_length;
    END IF;
    IF TG_OP = 'DELETE' THEN
        DELETE FROM mem_search_pending WHERE seq = OLD.seq;
        RETURN OLD;
    END IF;
    INSERT INTO mem_search_pending (seq) VALUES (NEW.seq) ON CONFLICT DO NOTHING;
    RETURN NEW;
END $$""",
    # As on SQLite (migrations.m005): a session's data rewritten when it ends changes
    # neither content nor why, and is not indexed again.
    "CREATE TRIGGER mem_search_update AFTER UPDATE OF content, data, kind ON mem_nodes "
    "FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content "
    "OR OLD.why IS DISTINCT FROM NEW.why) "
    "EXECUTE FUNCTION mem_search_node_changed()",
    "CREATE TRIGGER mem_search_delete AFTER DELETE ON mem_nodes "
    "FOR EACH ROW EXECUTE FUNCTION mem_search_node_changed()",
]

# Nodes tokenised and written per round of index_pending (bounded memory on a bulk load).
INDEX_CHUNK = 5000


def create_search_index(conn: Connection) -> None:
    """The migration that adds the index (postgres/schema.py, MIGRATIONS); nodes already
    stored are queued and indexed before the migration's transaction commits."""
    for statement in SCHEMA:
        conn.execute(statement)
    conn.execute("INSERT INTO mem_search_pending (seq) SELECT seq FROM mem_nodes")
    index_pending(conn)


def index_pending(conn: Connection) -> int:
    """Index the queued nodes inside the caller's transaction; the number indexed."""
    # All at once: a DELETE of the first rows by an IN subquery can be planned as a
    # nested loop over an unanalysed queue (seconds for a bulk load's 5,000 nodes).
    queued = sorted(row[0] for row in conn.execute("DELETE FROM mem_search_pending RETURNING seq"))
    for start in range(0, len(queued), INDEX_CHUNK):
        nodes = conn.execute(
            "SELECT seq, kind, content, data FROM mem_nodes WHERE seq = ANY (?::bigint[])",
            (queued[start : start + INDEX_CHUNK],),
        ).fetchall()
        _write(conn, nodes)
    return len(queued)


def _terms_of(kind: str, content: str, data: str) -> list[str]:
    """The terms FTS5 indexes for a node: its content's, then its why's."""
    found = tokens(content)
    why = why_text(kind, data)
    return found + tokens(why) if why is not None else found


def _write(conn: Connection, nodes: Sequence[tuple[int, str, str, str]]) -> None:
    """Postings and lengths of ``nodes``, by COPY: several times faster than INSERT for
    the ~25 postings of every memory. The COPY text is made here, a line per row, and
    sent in one piece: psycopg's write_row, a Python call per row and per array element,
    took ~60 % of a bulk load's indexing (130k postings and 10k term arrays at 10k)."""
    postings: list[str] = []
    docs: list[str] = []
    total = 0
    for seq, kind, content, data in nodes:
        found = _terms_of(kind, content, data)
        counts = Counter(found)
        total += len(found)
        postings += [f"{_copy_field(term)}\t{seq}\t{tf}\n" for term, tf in counts.items()]
        array = ",".join(_array_element(term) for term in counts)
        docs.append(f"{seq}\t{len(found)}\t{_copy_field('{' + array + '}')}\n")
    if not docs:
        return
    _copy(conn, "COPY mem_search_terms (term, seq, tf) FROM STDIN", postings)
    _copy(conn, "COPY mem_search_docs (seq, length, terms) FROM STDIN", docs)
    conn.execute(
        "UPDATE mem_search_totals SET rows = rows + ?, tokens = tokens + ?", (len(docs), total)
    )


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _copy_field(text: str) -> str:
    """A text value as a field of COPY's text format."""
    return text.translate(_COPY_ESCAPES)


def _array_element(text: str) -> str:
    """A text value as a quoted element of an array literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _copy(conn: Connection, statement: str, lines: list[str]) -> None:
    raw = conn.raw  # type: ignore[attr-defined]  # the engine's psycopg connection
    try:
        with raw.cursor().copy(statement) as copy:
            copy.write("".join(lines).encode("utf-8"))
    except Exception as exc:
        raise conn.storage.error_from(exc) from None  # type: ignore[attr-defined]


def why_text(kind: str, data: str) -> str | None:
    """A node's ``why`` exactly as SQLite's generated column computes it (None for all
    but decisions with a rationale or rejected alternatives)."""
    if kind != "decision":
        return None
    from ..sqlite.migrations import WHY_EXPRESSION

    row = (
        _sqlite()
        .execute(f"SELECT {WHY_EXPRESSION} FROM (SELECT ? AS kind, ? AS data)", (kind, data))
        .fetchone()
    )
    return None if row[0] is None else str(row[0])


@functools.cache
def _sqlite() -> sqlite3.Connection:
    import sqlite3

    return sqlite3.connect(":memory:", check_same_thread=False)


def totals(conn: Connection) -> tuple[int, int]:
    """(nodes indexed, their summed length in terms)."""
    row: Any = conn.execute("SELECT rows, tokens FROM mem_search_totals").fetchone()
    return int(row[0]), int(row[1])
