"""The full-text index of the PostgreSQL engine: what FTS5's ``mem_fts`` is on SQLite.

Recall ranks with BM25 over the terms of each node's ``content`` and ``why``, as
FTS5's tokenizer cuts them (storage/tokenizer.py, the same terms on both engines). Here
they live in plain tables, read by recall/search_postgres.py:

* ``mem_search_terms (term, seq, tf)``: the posting lists, one row per term of a node
  and how often it occurs; the primary key (term, seq) is the lookup of a term and the
  range scan of a prefix (``"C"`` collation: byte order, as FTS5's).
* ``mem_search_docs (seq, length, terms)``: each indexed node's length in terms (BM25's
  length normalisation) and its distinct terms (to remove its postings).
* ``mem_search_totals``: one row, the number of nodes indexed and their summed length
  (FTS5's row count and average length, for BM25's IDF and average).
* ``mem_search_pending``: nodes whose text changed and are not indexed yet.

Rules a reader must not break:
* The index is derived from ``mem_nodes`` and always agrees with it when a transaction
  commits. Triggers keep it so whatever the write path: an insert, or an update that
  changes ``content`` or ``why``, removes what the node had indexed and queues it in
  ``mem_search_pending``; a delete (purge) removes its postings. SQL cannot run the
  tokenizer, so the engine's ``transaction()`` calls :func:`index_pending` before its
  COMMIT, and search calls it too should anything be left (a write made outside
  ``transaction()``).
* ``why`` is indexed as SQLite computes it (migrations.WHY_COLUMN, with SQLite's own
  ``json_extract``, whose JSON text keeps the escapes PostgreSQL's would resolve), so
  that a decision's reasons give the same terms on both engines.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .tokenizer import tokens

if TYPE_CHECKING:
    import sqlite3

    from .engine import Connection

SCHEMA = [
    'CREATE TABLE mem_search_terms (term text COLLATE "C" NOT NULL, seq bigint NOT NULL, '
    "tf integer NOT NULL, PRIMARY KEY (term, seq))",
    "CREATE TABLE mem_search_docs (seq bigint PRIMARY KEY, length integer NOT NULL, "
    'terms text[] COLLATE "C" NOT NULL)',
    "CREATE TABLE mem_search_totals (id integer PRIMARY KEY CHECK (id = 1), "
    "rows bigint NOT NULL, tokens bigint NOT NULL)",
    "INSERT INTO mem_search_totals (id, rows, tokens) VALUES (1, 0, 0)",
    "CREATE TABLE mem_search_pending (seq bigint PRIMARY KEY)",
    # Remove a node's postings and its share of the totals.
    """CREATE FUNCTION mem_search_forget(node bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    old_terms text[];
    old_length integer;
BEGIN
    DELETE FROM mem_search_docs WHERE seq = node RETURNING terms, length
        INTO old_terms, old_length;
    IF FOUND THEN
        DELETE FROM mem_search_terms WHERE term = ANY (old_terms) AND seq = node;
        UPDATE mem_search_totals SET rows = rows - 1, tokens = tokens - old_length;
    END IF;
END $$""",
    """CREATE FUNCTION mem_search_nodes_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO mem_search_pending (seq) SELECT seq FROM inserted ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$""",
    "CREATE TRIGGER mem_search_insert AFTER INSERT ON mem_nodes "
    "REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT "
    "EXECUTE FUNCTION mem_search_nodes_inserted()",
    """CREATE FUNCTION mem_search_node_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM mem_search_forget(OLD.seq);
        DELETE FROM mem_search_pending WHERE seq = OLD.seq;
        RETURN OLD;
    END IF;
    PERFORM mem_search_forget(OLD.seq);
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
    """The migration that adds the index (postgres_schema.MIGRATIONS); nodes already
    stored are queued and indexed before the migration's transaction commits."""
    for statement in SCHEMA:
        conn.execute(statement)
    conn.execute("INSERT INTO mem_search_pending (seq) SELECT seq FROM mem_nodes")
    index_pending(conn)


def index_pending(conn: Connection) -> int:
    """Index the queued nodes, inside the caller's transaction; the number indexed."""
    done = 0
    while True:
        rows = conn.execute(
            "DELETE FROM mem_search_pending WHERE seq IN (SELECT seq FROM mem_search_pending "
            "ORDER BY seq LIMIT ?) RETURNING seq",
            (INDEX_CHUNK,),
        ).fetchall()
        if not rows:
            return done
        seqs = [row[0] for row in rows]
        nodes = conn.execute(
            "SELECT seq, kind, content, data FROM mem_nodes WHERE seq = ANY (?::bigint[])",
            (seqs,),
        ).fetchall()
        _write(conn, nodes)
        done += len(nodes)


def _write(conn: Connection, nodes: Sequence[tuple[int, str, str, str]]) -> None:
    terms: list[str] = []
    term_seqs: list[int] = []
    counts: list[int] = []
    doc_seqs: list[int] = []
    lengths: list[int] = []
    doc_terms: list[str] = []  # each node's distinct terms as one PostgreSQL array literal
    for seq, kind, content, data in nodes:
        bag = Counter(tokens(content))
        length = sum(bag.values())
        why = why_text(kind, data)
        if why is not None:
            more = tokens(why)
            bag.update(more)
            length += len(more)
        for term, tf in bag.items():
            terms.append(term)
            term_seqs.append(seq)
            counts.append(tf)
        doc_seqs.append(seq)
        lengths.append(length)
        doc_terms.append(_array_literal(bag))
    if not doc_seqs:
        return
    conn.execute(
        "INSERT INTO mem_search_terms (term, seq, tf) "
        "SELECT * FROM unnest(?::text[], ?::bigint[], ?::integer[])",
        (terms, term_seqs, counts),
    )
    conn.execute(
        "INSERT INTO mem_search_docs (seq, length, terms) "
        "SELECT s, l, t::text[] FROM unnest(?::bigint[], ?::integer[], ?::text[]) AS x (s, l, t)",
        (doc_seqs, lengths, doc_terms),
    )
    conn.execute(
        "UPDATE mem_search_totals SET rows = rows + ?, tokens = tokens + ?",
        (len(doc_seqs), sum(lengths)),
    )


def _array_literal(values: Iterable[str]) -> str:
    quoted = ('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values)
    return "{" + ",".join(quoted) + "}"


def why_text(kind: str, data: str) -> str | None:
    """A node's ``why`` exactly as SQLite's generated column computes it (None for all
    but decisions with a rationale or rejected alternatives)."""
    if kind != "decision":
        return None
    from .migrations import WHY_EXPRESSION

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


def document_tokens(conn: Connection, seqs: Sequence[int]) -> dict[int, list[list[str]]]:
    """The terms of each node's ``content`` and ``why``, in order, one list per column:
    what a phrase of several terms is matched against (a phrase never spans columns)."""
    found: dict[int, list[list[str]]] = {}
    for seq, kind, content, data in conn.execute(
        "SELECT seq, kind, content, data FROM mem_nodes WHERE seq = ANY (?::bigint[])",
        (list(seqs),),
    ):
        why = why_text(kind, data)
        found[seq] = [tokens(content)] + ([tokens(why)] if why is not None else [])
    return found


def totals(conn: Connection) -> tuple[int, int]:
    """(nodes indexed, their summed length in terms)."""
    row: Any = conn.execute("SELECT rows, tokens FROM mem_search_totals").fetchone()
    return int(row[0]), int(row[1])
