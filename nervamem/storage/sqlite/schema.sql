-- nervamem schema, migration m001_initial.
-- Times are fixed-width UTC text (YYYY-MM-DDTHH:MM:SS.mmmZ) so they compare as strings.
-- Nodes are never deleted except by an explicit purge; superseding closes valid_until.

CREATE TABLE mem_nodes (
    seq           INTEGER PRIMARY KEY,          -- stable rowid for the FTS5 external content
    id            TEXT    NOT NULL UNIQUE,      -- {prefix}_{13 hex ms}{16 hex random}
    kind          TEXT    NOT NULL CHECK (kind IN ('session','fact','decision','action',
                                                    'outcome','entity','procedure','preference')),
    content       TEXT    NOT NULL,
    namespace     TEXT    NOT NULL DEFAULT 'default',
    valid_from    TEXT    NOT NULL,             -- world time: became true
    valid_until   TEXT,                         -- world time: stopped being true (NULL = current)
    recorded_at   TEXT    NOT NULL,             -- learn time: when it was stored; never rewritten
    confidence    REAL    NOT NULL DEFAULT 1.0 CHECK (confidence >= 0.0 AND confidence <= 1.0),
    tombstoned    INTEGER NOT NULL DEFAULT 0 CHECK (tombstoned IN (0, 1)),
    access_count  INTEGER NOT NULL DEFAULT 0,
    last_accessed TEXT,
    data          TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(data))
);

-- Current-truth scans per namespace and kind (stats, consolidation, entity lookups).
CREATE INDEX mem_nodes_ns_kind ON mem_nodes (namespace, kind, valid_until);

CREATE TABLE mem_edges (
    src        TEXT NOT NULL REFERENCES mem_nodes (id) ON DELETE CASCADE,
    dst        TEXT NOT NULL REFERENCES mem_nodes (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('ABOUT','OCCURRED_IN','SUPERSEDES','CONTRADICTS',
                                             'CAUSED','DERIVED_FROM','TOUCHES')),
    created_at TEXT NOT NULL,
    data       TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(data)),
    PRIMARY KEY (src, kind, dst)
) WITHOUT ROWID;

-- Incoming edges: "is this node superseded?", expansion towards sources, session members.
CREATE INDEX mem_edges_dst ON mem_edges (dst, kind);

CREATE TABLE mem_aliases (
    namespace TEXT NOT NULL,
    alias     TEXT NOT NULL COLLATE NOCASE,
    entity_id TEXT NOT NULL REFERENCES mem_nodes (id) ON DELETE CASCADE,
    PRIMARY KEY (namespace, alias)
) WITHOUT ROWID;

CREATE INDEX mem_aliases_entity ON mem_aliases (entity_id);

CREATE TABLE mem_review_queue (
    job_id       INTEGER PRIMARY KEY,
    kind         TEXT NOT NULL DEFAULT 'consolidate',
    session_id   TEXT NOT NULL,
    namespace    TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done')),
    created_at   TEXT NOT NULL,
    processed_at TEXT
);

CREATE INDEX mem_review_queue_status ON mem_review_queue (status, job_id);

CREATE VIRTUAL TABLE mem_fts USING fts5 (
    content,
    content = 'mem_nodes',
    content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER mem_nodes_fts_insert AFTER INSERT ON mem_nodes BEGIN
    INSERT INTO mem_fts (rowid, content) VALUES (new.seq, new.content);
END;

CREATE TRIGGER mem_nodes_fts_delete AFTER DELETE ON mem_nodes BEGIN
    INSERT INTO mem_fts (mem_fts, rowid, content) VALUES ('delete', old.seq, old.content);
END;

CREATE TRIGGER mem_nodes_fts_update AFTER UPDATE OF content ON mem_nodes BEGIN
    INSERT INTO mem_fts (mem_fts, rowid, content) VALUES ('delete', old.seq, old.content);
    INSERT INTO mem_fts (rowid, content) VALUES (new.seq, new.content);
END;
