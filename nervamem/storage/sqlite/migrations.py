"""SQLite's schema migrations: an ordered registry of functions named for what they do.

A migration's version is its place in :data:`MIGRATIONS` (1 for the first). The runner
(``StorageBase.migrate_schema`` in common.py, shared with PostgreSQL) applies those past
the store's version in one transaction, each with its record in ``mem_migrations``;
``PRAGMA user_version`` holds the number applied, so an older nervamem can refuse a store
written by a newer one instead of damaging it. Append only: never edit, reorder or
rename a recorded name (``m001_initial``...), which existing stores hold as history; the
functions' names are free to say what each one does.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

Migration = Callable[[sqlite3.Connection], None]


def create_tables(conn: sqlite3.Connection) -> None:
    from importlib import resources  # only when a store is created: start-up time

    script = (
        resources.files("nervamem.storage.sqlite")
        .joinpath("schema.sql")
        .read_text(encoding="utf-8")
    )
    for statement in _split_sql(script):
        conn.execute(statement)


def _split_sql(script: str) -> list[str]:
    """Split on ';' at statement ends, keeping trigger bodies (BEGIN ... END;) whole."""
    statements: list[str] = []
    current: list[str] = []
    in_trigger = False
    for line in script.splitlines():
        stripped = line.split("--", 1)[0].strip()
        if not stripped and not current:
            continue
        current.append(line)
        upper = stripped.upper()
        if upper.startswith("CREATE TRIGGER"):
            in_trigger = True
        if in_trigger:
            if upper == "END;":
                statements.append("\n".join(current))
                current, in_trigger = [], False
        elif stripped.endswith(";"):
            statements.append("\n".join(current))
            current = []
    if "".join(current).strip():
        statements.append("\n".join(current))
    return statements


def count_node_degrees(conn: sqlite3.Connection) -> None:
    """mem_degree: each node's number of edges (both directions, every kind), kept by
    triggers. Recall's connectivity factor needs the degree of its candidates, and
    counting the edges of a hub entity (tens of thousands of ABOUT edges at 1M nodes) on
    every recall costs milliseconds; a lookup here costs microseconds. A node without a
    row has degree 0."""
    conn.execute(
        "CREATE TABLE mem_degree (node_id TEXT PRIMARY KEY, degree INTEGER NOT NULL) WITHOUT ROWID"
    )
    conn.execute(
        "INSERT INTO mem_degree (node_id, degree) SELECT node_id, count(*) FROM "
        "(SELECT src AS node_id FROM mem_edges UNION ALL SELECT dst FROM mem_edges) "
        "GROUP BY node_id"
    )
    # INSERT OR IGNORE of an existing edge inserts no row and fires nothing; a purge's
    # cascade deletes do fire the delete trigger.
    conn.execute(
        """CREATE TRIGGER mem_edges_degree_insert AFTER INSERT ON mem_edges BEGIN
    INSERT INTO mem_degree (node_id, degree) VALUES (new.src, 1)
        ON CONFLICT (node_id) DO UPDATE SET degree = degree + 1;
    INSERT INTO mem_degree (node_id, degree) VALUES (new.dst, 1)
        ON CONFLICT (node_id) DO UPDATE SET degree = degree + 1;
END"""
    )
    conn.execute(
        """CREATE TRIGGER mem_edges_degree_delete AFTER DELETE ON mem_edges BEGIN
    UPDATE mem_degree SET degree = degree - 1 WHERE node_id = old.src;
    UPDATE mem_degree SET degree = degree - 1 WHERE node_id = old.dst;
END"""
    )
    conn.execute(
        """CREATE TRIGGER mem_nodes_degree_delete AFTER DELETE ON mem_nodes BEGIN
    DELETE FROM mem_degree WHERE node_id = old.id;
END"""
    )


def index_id_random_part(conn: sqlite3.Connection) -> None:
    """An index on each ID's random part (its last 16 hex digits): short IDs (ids.py)
    are a prefix of it, and both finding the shortest unambiguous one and resolving one
    are range reads of this index."""
    conn.execute("CREATE INDEX mem_nodes_id_random ON mem_nodes (substr(id, -16))")


def repair_search_index(conn: sqlite3.Connection) -> None:
    """Stores written by nervamem before this migration ran FTS5's 'optimize' after every
    purge, which added index levels without bound; past ~1,000 purges FTS5 refuses to load
    the index and every store and recall fails. Rebuild the index from mem_nodes where
    its structure has grown (search_index.py); a healthy index is left as it is, so the
    upgrade costs nothing for stores that never purged much."""
    from . import search_index

    if not search_index.is_healthy(conn):
        search_index.rebuild(conn)


# What index_decision_rationale (m005) indexes beside a node's content: a decision's
# rationale and the alternatives it rejected (``data``'s ``rationale`` and ``rejected``,
# the latter as its JSON text, whose brackets and quotes the tokenizer drops). A virtual
# generated column: computed where read (the triggers and a rebuild), stored nowhere.
WHY_EXPRESSION = (
    "CASE WHEN kind = 'decision' THEN nullif(trim("
    "coalesce(json_extract(data, '$.rationale'), '') || ' ' || "
    "coalesce(json_extract(data, '$.rejected'), '')), '') END"
)
WHY_COLUMN = f"why TEXT GENERATED ALWAYS AS ({WHY_EXPRESSION}) VIRTUAL"


def index_decision_rationale(conn: sqlite3.Connection) -> None:
    """A decision's rationale and rejected alternatives are searchable: the full-text
    index gets a second column, ``why`` (WHY_COLUMN), filled from mem_nodes like
    ``content``. The index is made again with both columns, so a store written before
    finds its decisions by their reasons too. Triggers follow ``data`` as well as
    ``content``, each removing exactly the values it indexed. A store that has the
    column already (its version number was set back by hand) is left as it is."""
    if any(row[1] == "why" for row in conn.execute("PRAGMA table_xinfo(mem_nodes)")):
        return
    conn.execute(f"ALTER TABLE mem_nodes ADD COLUMN {WHY_COLUMN}")
    for trigger in ("insert", "delete", "update"):
        conn.execute(f"DROP TRIGGER mem_nodes_fts_{trigger}")
    conn.execute("DROP TABLE mem_fts")
    conn.execute(
        "CREATE VIRTUAL TABLE mem_fts USING fts5 (content, why, content = 'mem_nodes', "
        "content_rowid = 'seq', tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    conn.execute(
        """CREATE TRIGGER mem_nodes_fts_insert AFTER INSERT ON mem_nodes BEGIN
    INSERT INTO mem_fts (rowid, content, why) VALUES (new.seq, new.content, new.why);
END"""
    )
    conn.execute(
        """CREATE TRIGGER mem_nodes_fts_delete AFTER DELETE ON mem_nodes BEGIN
    INSERT INTO mem_fts (mem_fts, rowid, content, why)
        VALUES ('delete', old.seq, old.content, old.why);
END"""
    )
    # Sessions rewrite data when they end; their why stays NULL, so only a changed
    # content or why touches the index.
    conn.execute(
        """CREATE TRIGGER mem_nodes_fts_update AFTER UPDATE OF content, data ON mem_nodes
    WHEN old.content IS NOT new.content OR old.why IS NOT new.why BEGIN
    INSERT INTO mem_fts (mem_fts, rowid, content, why)
        VALUES ('delete', old.seq, old.content, old.why);
    INSERT INTO mem_fts (rowid, content, why) VALUES (new.seq, new.content, new.why);
END"""
    )
    conn.execute("INSERT INTO mem_fts (mem_fts) VALUES ('rebuild')")


def add_event_log(conn: sqlite3.Connection) -> None:
    """What a shared store (docs/team-memory.md) and transaction-time queries need.

    ``tombstoned_at``: when a node was forgotten, so that ``--known-at`` can tell what was
    known before (NULL on nodes forgotten before this migration: treated as always
    forgotten). The other tables are the local bookkeeping of a store whose truth is its
    event files: which events it holds (import is idempotent), the folders it has read
    (sync with nothing new reads no file), the events written here whose files may not
    be on disk yet (written without fsync: event_log.py), nodes purged (an old copy of
    their event never brings them back), and which event last set each key of a node's data (a
    key set on two branches converges to the later event's value, in any import order).
    """
    columns = {row[1] for row in conn.execute("PRAGMA table_info(mem_nodes)")}
    if "tombstoned_at" not in columns:  # IF NOT EXISTS, which ALTER TABLE lacks
        conn.execute("ALTER TABLE mem_nodes ADD COLUMN tombstoned_at TEXT")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS mem_events (id TEXT PRIMARY KEY, recorded_at TEXT NOT NULL) "
        "WITHOUT ROWID"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS mem_event_folders (folder TEXT PRIMARY KEY, "
        "stamp TEXT NOT NULL) WITHOUT ROWID"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS mem_event_journal (id TEXT PRIMARY KEY, boot TEXT NOT NULL, "
        "body TEXT NOT NULL) WITHOUT ROWID"
    )
    conn.execute("CREATE TABLE IF NOT EXISTS mem_purged (node_id TEXT PRIMARY KEY) WITHOUT ROWID")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS mem_data_origin (node_id TEXT NOT NULL, key TEXT NOT NULL, "
        "event_id TEXT NOT NULL, PRIMARY KEY (node_id, key)) WITHOUT ROWID"
    )


# key_edges_by_seq's (m007) objects. The edge kinds are written out (not taken from
# kinds.py) because a migration must create what it created when it was written. Their
# codes: the commonest first, as SQLite stores 0 and 1 in no bytes at all.
EDGE_KIND_CODES = (
    "ABOUT",
    "OCCURRED_IN",
    "SUPERSEDES",
    "CONTRADICTS",
    "CAUSED",
    "DERIVED_FROM",
    "TOUCHES",
)
_LINKS_TABLE = """CREATE TABLE mem_links (
    src        INTEGER NOT NULL REFERENCES mem_nodes (seq) ON DELETE CASCADE,
    kind       INTEGER NOT NULL CHECK (kind BETWEEN 0 AND 6),  -- mem_edge_kinds.code
    dst        INTEGER NOT NULL REFERENCES mem_nodes (seq) ON DELETE CASCADE,
    created_at TEXT,                            -- NULL: the src node's recorded_at
    data       TEXT CHECK (data IS NULL OR json_valid(data)),  -- NULL: '{}'
    PRIMARY KEY (src, kind, dst)
) WITHOUT ROWID"""
# The edge table as every feature reads it, the same columns and values as before m007
# (and as PostgreSQL's table).
_EDGES_VIEW = """CREATE VIEW mem_edges (src, dst, kind, created_at, data) AS
SELECT s.id, d.id, k.kind, coalesce(l.created_at, s.recorded_at), coalesce(l.data, '{}')
FROM mem_edge_kinds k CROSS JOIN mem_links l ON l.kind = k.code
JOIN mem_nodes s ON s.seq = l.src JOIN mem_nodes d ON d.seq = l.dst"""
_SEQ_OF = "(SELECT seq FROM mem_nodes WHERE id = {})"
_CODE_OF = "(SELECT code FROM mem_edge_kinds WHERE kind = {})"
_STORED_CREATED_AT = (
    "nullif({0}.created_at, (SELECT recorded_at FROM mem_nodes WHERE id = {0}.src))"
)
_LINK_OF_OLD = (
    f"src = {_SEQ_OF.format('old.src')} AND kind = {_CODE_OF.format('old.kind')} "
    f"AND dst = {_SEQ_OF.format('old.dst')}"
)
# Nodes with at most this many edges have no row in mem_node_degree: mem_degree counts
# their edges where it is read (two index seeks), as it does for every memory of a
# typical store; hubs and sessions keep theirs.
DEGREE_KEPT_ABOVE = 32
_EDGE_COUNT = (
    "(SELECT count(*) FROM mem_links WHERE src = {0}) + "
    "(SELECT count(*) FROM mem_links WHERE dst = {0})"
)
_KEEP_DEGREE = (
    "INSERT INTO mem_node_degree (seq, degree) SELECT {0}, "
    + _EDGE_COUNT
    + " WHERE NOT EXISTS (SELECT 1 FROM mem_node_degree WHERE seq = {0}) "
    "AND (SELECT count(*) FROM (SELECT 1 FROM mem_links WHERE src = {0} UNION ALL "
    f"SELECT 1 FROM mem_links WHERE dst = {{0}} LIMIT {DEGREE_KEPT_ABOVE + 1})) "
    f"> {DEGREE_KEPT_ABOVE}"
)
_DEGREE_VIEW = (
    "CREATE VIEW mem_degree (node_id, degree) AS SELECT n.id, coalesce((SELECT g.degree "
    "FROM mem_node_degree g WHERE g.seq = n.seq), " + _EDGE_COUNT.format("n.seq") + ") "
    "FROM mem_nodes n"
)
_EDGES_TRIGGERS = (
    # An unknown ID makes a NULL seq and fails NOT NULL, as the foreign key failed before.
    # A duplicate is left as it is, as the features' ON CONFLICT DO NOTHING did (SQLite
    # refuses an upsert on a view, so the features leave it out here: see
    # sql.py, SQLiteFragments.ignore_existing_edge).
    f"""CREATE TRIGGER mem_edges_insert INSTEAD OF INSERT ON mem_edges BEGIN
    SELECT RAISE(ABORT, 'NOT NULL constraint failed: mem_edges.created_at')
        WHERE new.created_at IS NULL;
    INSERT INTO mem_links (src, kind, dst, created_at, data)
        SELECT {_SEQ_OF.format("new.src")}, {_CODE_OF.format("new.kind")},
            {_SEQ_OF.format("new.dst")},
            {_STORED_CREATED_AT.format("new")}, nullif(new.data, '{{}}')
        WHERE true ON CONFLICT DO NOTHING;
END""",
    f"""CREATE TRIGGER mem_edges_delete INSTEAD OF DELETE ON mem_edges BEGIN
    DELETE FROM mem_links WHERE {_LINK_OF_OLD};
END""",
    f"""CREATE TRIGGER mem_edges_update INSTEAD OF UPDATE ON mem_edges BEGIN
    UPDATE mem_links SET src = {_SEQ_OF.format("new.src")},
        kind = {_CODE_OF.format("new.kind")},
        dst = {_SEQ_OF.format("new.dst")}, created_at = {_STORED_CREATED_AT.format("new")},
        data = nullif(new.data, '{{}}')
        WHERE {_LINK_OF_OLD};
END""",
    # Degrees, as m002's triggers kept them, by seq and only above DEGREE_KEPT_ABOVE: a
    # node with a row gets +1 per end; one without gets a row, with its count, when it
    # passes the threshold (the count stops there, so a hub is never counted). Both
    # UPDATEs go first: a row made by the second part already counts this edge.
    f"""CREATE TRIGGER mem_links_degree_insert AFTER INSERT ON mem_links BEGIN
    UPDATE mem_node_degree SET degree = degree + 1 WHERE seq = new.src;
    UPDATE mem_node_degree SET degree = degree + 1 WHERE seq = new.dst;
    {_KEEP_DEGREE.format("new.src")};
    {_KEEP_DEGREE.format("new.dst")};
END""",
    """CREATE TRIGGER mem_links_degree_delete AFTER DELETE ON mem_links BEGIN
    UPDATE mem_node_degree SET degree = degree - 1 WHERE seq = old.src;
    UPDATE mem_node_degree SET degree = degree - 1 WHERE seq = old.dst;
END""",
    """CREATE TRIGGER mem_nodes_degree_delete AFTER DELETE ON mem_nodes BEGIN
    DELETE FROM mem_node_degree WHERE seq = old.seq;
END""",
)


def key_edges_by_seq(conn: sqlite3.Connection) -> None:
    """Edges and degrees keyed by the nodes' integer ``seq`` instead of their text IDs
    (issue 21: bytes per memory). A 31-character ID was stored about seven times per
    memory: both ends of each edge, again in the index on ``dst``, and as ``mem_degree``'s
    key. ``mem_links (src, kind, dst, created_at, data)`` holds the seqs (1-3 bytes
    each), the kind as a code of ``mem_edge_kinds`` (0 bytes for ABOUT and OCCURRED_IN,
    1 for the others, where its name took 5-12), ``created_at`` only where it differs
    from the src node's ``recorded_at`` (an edge written with its memory, nearly all of
    them, stores NULL), ``data`` only when it is not ``{}``. ``mem_node_degree (seq,
    degree)`` keeps the degree of a node with more than DEGREE_KEPT_ABOVE edges only;
    ``mem_degree`` counts the others' (a node with none has degree 0 there, where m002's
    table had no row: the same to a reader).

    Design: ``mem_edges`` and ``mem_degree`` stay, as VIEWs with the same columns and
    values, joining mem_nodes for the IDs; INSTEAD OF triggers turn an INSERT, DELETE or
    UPDATE of an edge into one of mem_links. So every feature's SQL stays the text that
    PostgreSQL (whose mem_edges keeps its text keys) runs too, and the event log, export,
    sync, purge and the code bridge see the edges they saw before. The alternative,
    explicit joins in every edge query chosen by ``storage.engine``, would fork ~40
    statements across ten modules for bytes the views save as well. What a view costs:
    an upsert on a view is refused, so on SQLite the features insert edges without
    ``ON CONFLICT DO NOTHING`` and the trigger ignores the duplicate
    (``storage.sql.ignore_existing_edge``); ``changes()`` and ``cursor.rowcount`` do not count
    rows a trigger writes (no feature reads them for edges); triggers ``AFTER INSERT ON
    mem_edges`` must be on mem_links (the event log's). The planner flattens the views:
    ``WHERE src = ? AND kind = ?`` reads mem_edge_kinds' index and the ID index, then
    mem_links' primary key, then the dst node by seq; ``WHERE dst = ? AND kind = ?`` the
    same, then mem_links_dst. The CROSS JOIN keeps the seven kinds in the outer loop:
    otherwise, not knowing that table is tiny, SQLite reads all of a hub's edges for
    ``dst IN (...) AND kind IN (...)`` and drops the other kinds after. The price: a
    query that names no kind runs once per kind (seven seeks instead of one; an export
    scans mem_links seven times).

    Purge: mem_links' foreign keys cascade as mem_edges' did, and each delete fires the
    degree trigger. The links are copied in primary-key order and the dst index made
    after them, so both are written densely. A store that has mem_links already (its
    version number was set back by hand) is left as it is."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'mem_links'").fetchone():
        return
    conn.execute(
        "CREATE TABLE mem_edge_kinds (code INTEGER PRIMARY KEY, kind TEXT NOT NULL UNIQUE)"
    )
    conn.executemany(
        "INSERT INTO mem_edge_kinds (code, kind) VALUES (?, ?)", enumerate(EDGE_KIND_CODES)
    )
    conn.execute(_LINKS_TABLE)
    conn.execute(
        "INSERT INTO mem_links (src, kind, dst, created_at, data) "
        "SELECT s.seq, k.code, d.seq, nullif(e.created_at, s.recorded_at), "
        "nullif(e.data, '{}') FROM mem_edges e JOIN mem_edge_kinds k ON k.kind = e.kind "
        "JOIN mem_nodes s ON s.id = e.src JOIN mem_nodes d ON d.id = e.dst ORDER BY 1, 2, 3"
    )
    conn.execute("CREATE INDEX mem_links_dst ON mem_links (dst, kind)")
    conn.execute("DROP TRIGGER mem_nodes_degree_delete")
    conn.execute("DROP TABLE mem_degree")
    conn.execute("DROP TABLE mem_edges")  # its index and degree triggers with it
    conn.execute("CREATE TABLE mem_node_degree (seq INTEGER PRIMARY KEY, degree INTEGER NOT NULL)")
    conn.execute(
        "INSERT INTO mem_node_degree (seq, degree) SELECT seq, count(*) FROM "
        "(SELECT src AS seq FROM mem_links UNION ALL SELECT dst FROM mem_links) "
        f"GROUP BY seq HAVING count(*) > {DEGREE_KEPT_ABOVE} ORDER BY seq"
    )
    conn.execute(_EDGES_VIEW)
    conn.execute(_DEGREE_VIEW)
    for statement in _EDGES_TRIGGERS:
        conn.execute(statement)


# (the name mem_migrations records, never changed; the function that applies it)
MIGRATIONS: list[tuple[str, Migration]] = [
    ("m001_initial", create_tables),
    ("m002_node_degree", count_node_degrees),
    ("m003_id_random_part", index_id_random_part),
    ("m004_search_index_repair", repair_search_index),
    ("m005_search_rationale", index_decision_rationale),
    ("m006_event_log", add_event_log),
    ("m007_edges_by_seq", key_edges_by_seq),
]

SCHEMA_VERSION = len(MIGRATIONS)
