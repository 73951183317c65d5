"""The PostgreSQL schema and its ordered registry of named migrations.

The tables, columns and constraints are those of the SQLite schema (schema.sql and
migrations.py, as of m006), so that the feature modules' SQL reads and writes both
alike. Where PostgreSQL differs, the schema bridges it instead of the features:

* every text column uses the "C" collation, so that IDs, times and names compare and
  sort byte by byte as in SQLite (a database's default collation may be a locale's);
* ``mem_aliases.alias`` uses a case-insensitive collation (``nervamem_nocase``, ICU,
  not deterministic), SQLite's ``COLLATE NOCASE``: the primary key and ``ON CONFLICT
  (namespace, alias)`` fold case as there;
* ``seq`` is given by a trigger as SQLite gives an INTEGER PRIMARY KEY: one more than the
  largest (writers take turns, postgres.py), when an INSERT gives none;
* ``json_extract(text, '$.key')`` and ``instr`` exist as SQL functions with SQLite's
  meaning for the JSON objects nervamem stores (a string comes back as its text, any
  other value as its JSON text);
* ``mem_degree`` is kept by triggers, as in SQLite, and so is ``why`` (SQLite computes it
  as a virtual generated column);

Applied migrations are rows of ``mem_migrations`` (version, name), written by the runner
both engines share (``StorageBase.migrate_schema``, common.py); a database whose highest
version is above :data:`SCHEMA_VERSION` was written by a newer nervamem and is refused
untouched. Append only: never edit, reorder or rename a recorded name (``m001_initial``,
history in every database); the functions are named for what they do.

The full-text search tables of recall on PostgreSQL are added by their own migration
(the search stage's module). The event-log tables exist so that ``import`` works here
too; the event files themselves are for SQLite stores.
"""

from __future__ import annotations

from collections.abc import Callable

from ..engine import Connection

Migration = Callable[[Connection], None]

NODE_KINDS_CHECK = (
    "('session','fact','decision','action','outcome','entity','procedure','preference')"
)
EDGE_KINDS_CHECK = (
    "('ABOUT','OCCURRED_IN','SUPERSEDES','CONTRADICTS','CAUSED','DERIVED_FROM','TOUCHES')"
)

_INITIAL = [
    # SQLite's json_extract for the flat JSON objects nervamem stores.
    """CREATE OR REPLACE FUNCTION json_extract(doc text, path text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE jsonb_typeof(v) WHEN 'string' THEN v #>> '{}' WHEN 'null' THEN NULL
        ELSE v::text END
    FROM (SELECT (doc::jsonb) #> string_to_array(substr(path, 3), '.') AS v) AS x
$$""",
    """CREATE OR REPLACE FUNCTION instr(haystack text, needle text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT strpos(haystack, needle) $$""",
    """DO $$ BEGIN
    CREATE COLLATION nervamem_nocase (provider = icu, locale = 'und-u-ks-level2',
        deterministic = false);
EXCEPTION WHEN duplicate_object THEN NULL;
END $$""",
    # SQLite's unary '+' on a column (an index hint there): the value itself.
    """CREATE OR REPLACE FUNCTION nervamem_same(value text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT value $$""",
    """DO $$ BEGIN
    CREATE OPERATOR + (RIGHTARG = text, FUNCTION = nervamem_same);
EXCEPTION WHEN duplicate_function THEN NULL;
END $$""",
    f"""CREATE TABLE mem_nodes (
    seq           bigint  PRIMARY KEY,
    id            text    COLLATE "C" NOT NULL UNIQUE,
    kind          text    COLLATE "C" NOT NULL CHECK (kind IN {NODE_KINDS_CHECK}),
    content       text    COLLATE "C" NOT NULL,
    namespace     text    COLLATE "C" NOT NULL DEFAULT 'default',
    valid_from    text    COLLATE "C" NOT NULL,
    valid_until   text    COLLATE "C",
    recorded_at   text    COLLATE "C" NOT NULL,
    confidence    double precision NOT NULL DEFAULT 1.0
                  CHECK (confidence >= 0.0 AND confidence <= 1.0),
    tombstoned    integer NOT NULL DEFAULT 0 CHECK (tombstoned IN (0, 1)),
    access_count  integer NOT NULL DEFAULT 0,
    last_accessed text    COLLATE "C",
    data          text    COLLATE "C" NOT NULL DEFAULT '{{}}'
                  CHECK (json_typeof(data::json) IS NOT NULL),
    why           text    COLLATE "C",  -- kept by mem_nodes_derived, as SQLite's generated one
    tombstoned_at text    COLLATE "C"
)""",
    # What SQLite derives itself, in one trigger (one call per row of a bulk insert):
    # ``seq`` when an INSERT gives none, as an INTEGER PRIMARY KEY is given (one more than
    # the largest; writers take turns), and ``why``, SQLite's virtual generated column
    # (migrations.WHY_COLUMN), when kind or data change. Not a STORED generated column:
    # that is computed again by every UPDATE, and recall updates access counts.
    """CREATE FUNCTION mem_nodes_derived() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' AND NEW.seq IS NULL THEN
        SELECT coalesce(max(seq), 0) + 1 INTO NEW.seq FROM mem_nodes;
    END IF;
    NEW.why := CASE WHEN NEW.kind = 'decision' THEN
        nullif(trim(coalesce(json_extract(NEW.data, '$.rationale'), '') || ' ' ||
        coalesce(json_extract(NEW.data, '$.rejected'), '')), '') END;
    RETURN NEW;
END $$""",
    "CREATE TRIGGER mem_nodes_derived BEFORE INSERT OR UPDATE OF kind, data ON mem_nodes "
    "FOR EACH ROW EXECUTE FUNCTION mem_nodes_derived()",
    "CREATE INDEX mem_nodes_ns_kind ON mem_nodes (namespace, kind, valid_until)",
    "CREATE INDEX mem_nodes_id_random ON mem_nodes (right(id, 16))",
    f"""CREATE TABLE mem_edges (
    src        text COLLATE "C" NOT NULL REFERENCES mem_nodes (id) ON DELETE CASCADE,
    dst        text COLLATE "C" NOT NULL REFERENCES mem_nodes (id) ON DELETE CASCADE,
    kind       text COLLATE "C" NOT NULL CHECK (kind IN {EDGE_KINDS_CHECK}),
    created_at text COLLATE "C" NOT NULL,
    data       text COLLATE "C" NOT NULL DEFAULT '{{}}' CHECK (json_typeof(data::json) IS NOT NULL),
    PRIMARY KEY (src, kind, dst)
)""",
    # With src: SQLite's index carries the primary key, so "dst = ? AND kind = ? ORDER BY
    # src DESC LIMIT n" (recall's expansion) stops after n entries of a hub entity.
    "CREATE INDEX mem_edges_dst ON mem_edges (dst, kind, src)",
    """CREATE TABLE mem_aliases (
    namespace text COLLATE "C" NOT NULL,
    alias     text COLLATE nervamem_nocase NOT NULL,
    entity_id text COLLATE "C" NOT NULL REFERENCES mem_nodes (id) ON DELETE CASCADE,
    PRIMARY KEY (namespace, alias)
)""",
    "CREATE INDEX mem_aliases_entity ON mem_aliases (entity_id)",
    """CREATE TABLE mem_review_queue (
    job_id       bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    kind         text COLLATE "C" NOT NULL DEFAULT 'consolidate',
    session_id   text COLLATE "C" NOT NULL,
    namespace    text COLLATE "C" NOT NULL,
    status       text COLLATE "C" NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'done')),
    created_at   text COLLATE "C" NOT NULL,
    processed_at text COLLATE "C"
)""",
    "CREATE INDEX mem_review_queue_status ON mem_review_queue (status, job_id)",
    'CREATE TABLE mem_degree (node_id text COLLATE "C" PRIMARY KEY, degree integer NOT NULL)',
    # Per statement, over its transition table: a multi-row INSERT of edges (store_many,
    # an import) counts each node once, instead of two upserts per edge.
    """CREATE FUNCTION mem_edges_degree_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO mem_degree (node_id, degree)
        SELECT node_id, count(*) FROM (SELECT src AS node_id FROM inserted
            UNION ALL SELECT dst FROM inserted) AS ends GROUP BY node_id
        ON CONFLICT (node_id) DO UPDATE SET degree = mem_degree.degree + excluded.degree;
    RETURN NULL;
END $$""",
    "CREATE TRIGGER mem_edges_degree_insert AFTER INSERT ON mem_edges "
    "REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT "
    "EXECUTE FUNCTION mem_edges_degree_insert()",
    """CREATE FUNCTION mem_edges_degree_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE mem_degree d SET degree = d.degree - ends.n
        FROM (SELECT node_id, count(*) AS n FROM (SELECT src AS node_id FROM deleted
            UNION ALL SELECT dst FROM deleted) AS e GROUP BY node_id) AS ends
        WHERE d.node_id = ends.node_id;
    RETURN NULL;
END $$""",
    "CREATE TRIGGER mem_edges_degree_delete AFTER DELETE ON mem_edges "
    "REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT "
    "EXECUTE FUNCTION mem_edges_degree_delete()",
    """CREATE FUNCTION mem_nodes_degree_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM mem_degree d USING deleted n WHERE d.node_id = n.id;
    RETURN NULL;
END $$""",
    "CREATE TRIGGER mem_nodes_degree_delete AFTER DELETE ON mem_nodes "
    "REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT "
    "EXECUTE FUNCTION mem_nodes_degree_delete()",
    # The bookkeeping of an import of a shared store's events (team/exchange.py).
    'CREATE TABLE mem_events (id text COLLATE "C" PRIMARY KEY, recorded_at text NOT NULL)',
    'CREATE TABLE mem_event_folders (folder text COLLATE "C" PRIMARY KEY, stamp text NOT NULL)',
    'CREATE TABLE mem_event_journal (id text COLLATE "C" PRIMARY KEY, boot text NOT NULL, '
    "body text NOT NULL)",
    'CREATE TABLE mem_purged (node_id text COLLATE "C" PRIMARY KEY)',
    'CREATE TABLE mem_data_origin (node_id text COLLATE "C" NOT NULL, '
    'key text COLLATE "C" NOT NULL, event_id text COLLATE "C" NOT NULL, '
    "PRIMARY KEY (node_id, key))",
    # The active namespace and sessions: state.yaml's text, one row.
    "CREATE TABLE mem_state (id integer PRIMARY KEY CHECK (id = 1), body text NOT NULL)",
]


def create_tables(conn: Connection) -> None:
    for statement in _INITIAL:
        conn.execute(statement)


def applied_version(conn: Connection) -> int:
    """The highest migration applied here; 0 for a database without nervamem's tables
    (in the schema in use)."""
    if conn.execute("SELECT to_regclass('mem_migrations')").fetchone()[0] is None:
        return 0
    return int(conn.execute("SELECT coalesce(max(version), 0) FROM mem_migrations").fetchone()[0])


def create_migrations_table(conn: Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS mem_migrations (version integer PRIMARY KEY, "
        'name text COLLATE "C" NOT NULL, applied_at text NOT NULL)'
    )


def add_search_index(conn: Connection) -> None:
    """Recall's full-text index: term tables filled with FTS5's terms (postgres/search.py)."""
    from .search import create_search_index

    create_search_index(conn)


# (the name mem_migrations records, never changed; the function that applies it)
MIGRATIONS: list[tuple[str, Migration]] = [
    ("m001_initial", create_tables),
    ("m002_search_index", add_search_index),
]

SCHEMA_VERSION = len(MIGRATIONS)
