"""After a purge has committed on PostgreSQL: the relation files of the database must
keep no byte of what it deleted (docs/postgres.md, "Purge"). Three places hold them:

1. **The pages of the tables and indexes** that held the rows: a DELETE only marks
   them dead, and plain VACUUM only marks the space free (index pages keep the old
   keys). VACUUM FULL writes new files for the table, its TOAST table and its indexes,
   and deletes the old ones.
2. **Rows that the rewrite must copy.** VACUUM FULL keeps a deleted row, "recently
   dead", in the new file while any transaction that began before the delete
   committed might still see it: any session of the same database (another schema's
   client, an autovacuum ANALYZE of any table), a prepared transaction, a replication
   slot, a standby's feedback. So the rewrite waits, at most the busy timeout, until no
   such transaction is left (:func:`older_transaction`); past it, the files are not
   scrubbed and the one line names the transaction.
3. **pg_statistic.** ANALYZE (autovacuum's, or refresh_statistics after a bulk write)
   copies column values into the most common values and histograms of every column,
   content, aliases and search terms included. The tables that have statistics are
   analysed again, which replaces those rows with ones drawn from the rows left, and
   then pg_statistic is rewritten too (its old row versions stay in its file until
   then), and pg_statistic_ext_data if a statistics object covers one of the tables.
   Only a superuser or the database's owner may (PostgreSQL 17: or a role with
   MAINTAIN on it); for any other role the purge says so. A store that nothing has
   analysed (autovacuum waits for 50 changed rows) has no statistics to scrub.

Nothing here undoes the purge: it committed before. The callers turn a failure into a
warning (postgres.py, ``PostgresStorage.scrub_files``).
"""

from __future__ import annotations

import time
from typing import Any

# The tables whose rows hold a memory's text or terms: rewritten after a purge.
SCRUBBED_TABLES = ("mem_nodes", "mem_edges", "mem_aliases", "mem_search_terms", "mem_search_docs")
# What the owner of the tables can run by hand when a scrub did not happen.
REWRITE_TABLES = "VACUUM FULL " + ", ".join(SCRUBBED_TABLES)

# A transaction whose snapshot or ID is older than the xid given (the first one not yet
# assigned when the wait began): in this database, or in none (a walsender's feedback).
# A lazy VACUUM (pg_stat_progress_vacuum) holds back no rewrite. The comment names the
# wait in pg_stat_activity.
_OLDER_SQL = """/* nervamem purge: waiting for transactions older than the purge */
SELECT 'process ' || pid FROM pg_stat_activity
 WHERE pid <> pg_backend_pid() AND (datname = current_database() OR datid IS NULL)
   AND pid NOT IN (SELECT pid FROM pg_stat_progress_vacuum)
   AND (age(backend_xmin) > age(%(xid)s::xid) OR age(backend_xid) > age(%(xid)s::xid))
UNION ALL
SELECT 'prepared transaction ' || quote_literal(gid) FROM pg_prepared_xacts
 WHERE database = current_database() AND age(transaction) > age(%(xid)s::xid)
UNION ALL
SELECT 'replication slot ' || quote_literal(slot_name) FROM pg_replication_slots
 WHERE (database = current_database() OR database IS NULL)
   AND (age(xmin) > age(%(xid)s::xid) OR age(catalog_xmin) > age(%(xid)s::xid))
LIMIT 1"""
_POLL_S = 0.02


def not_owned(raw: Any) -> list[str]:
    """The scrubbed tables this role does not own (and so may not rewrite)."""
    return _scrubbed(
        raw,
        "SELECT c.relname FROM pg_class c "
        "WHERE c.relnamespace = current_schema()::regnamespace "
        "AND c.relname = ANY(%s) AND NOT pg_has_role(c.relowner, 'USAGE') ORDER BY 1",
    )


def scrub(raw: Any, busy_timeout_ms: int) -> str | None:
    """Rewrite every file that may hold the purged bytes, as the tables' owner. None
    when done; else why not and what to run. Database errors propagate."""
    analysed = tables_with_statistics(raw)
    if analysed:
        raw.execute("ANALYZE " + ", ".join(analysed))
    holder = older_transaction(raw, busy_timeout_ms)
    if holder is not None:
        statistics = ""
        if analysed:
            statistics = " and, as a superuser or the database's owner, VACUUM FULL pg_statistic"
        return (
            f"a transaction older than the purge ({holder}) may still see the deleted "
            "rows, so the server's table files still hold the purged bytes; run as the "
            f"tables' owner once it has ended: {REWRITE_TABLES}{statistics}"
        )
    for table in SCRUBBED_TABLES:
        raw.execute(f"VACUUM FULL {table}")
    catalogs = statistics_catalogs(raw) if analysed else []
    if catalogs and not rewrote(raw, catalogs):
        return (
            f"this role may not rewrite {catalogs[0]} (a superuser or the database's owner "
            "may), so the server's statistics file may still hold purged values; run as "
            f"one of them: VACUUM FULL {', '.join(catalogs)}"
        )
    return None


def tables_with_statistics(raw: Any) -> list[str]:
    """The scrubbed tables of which ANALYZE copied values into pg_statistic."""
    return _scrubbed(
        raw,
        "SELECT DISTINCT tablename FROM pg_stats "
        "WHERE schemaname = current_schema() AND tablename = ANY(%s) ORDER BY 1",
    )


def _scrubbed(raw: Any, query: str) -> list[str]:
    """The names a query returns given the scrubbed tables' names (its %s)."""
    return [str(r[0]) for r in raw.execute(query, (list(SCRUBBED_TABLES),)).fetchall()]


def older_transaction(raw: Any, busy_timeout_ms: int) -> str | None:
    """Wait until no transaction older than now can hold back the rewrite; None once
    none is left, else (after the busy timeout) the one still there."""
    # As a 32-bit xid (the cast drops the epoch): PostgreSQL 16 and later refuse an
    # xid8's text of 2^32 or more as an xid ("out of range"), and every server passes
    # it after its first 4.3 billion transactions.
    row = raw.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::xid::text").fetchone()
    now = {"xid": row[0]}
    deadline = time.monotonic() + busy_timeout_ms / 1000
    while True:
        holder = raw.execute(_OLDER_SQL, now).fetchone()
        if holder is None:
            return None
        if time.monotonic() >= deadline:
            return str(holder[0])
        time.sleep(_POLL_S)


def statistics_catalogs(raw: Any) -> list[str]:
    """The catalogs that hold the scrubbed tables' statistics: pg_statistic, and
    pg_statistic_ext_data (MCV lists) if someone made a statistics object on them
    (CREATE STATISTICS; nervamem makes none)."""
    row = raw.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_statistic_ext s JOIN pg_class c ON c.oid = s.stxrelid "
        "WHERE c.relnamespace = current_schema()::regnamespace AND c.relname = ANY(%s))",
        (list(SCRUBBED_TABLES),),
    ).fetchone()
    return ["pg_statistic", "pg_statistic_ext_data"] if row[0] else ["pg_statistic"]


def rewrote(raw: Any, catalogs: list[str]) -> bool:
    """VACUUM FULL of the catalogs; False when the server skipped one, which it does
    with a WARNING (not an error) for a role that may not."""
    warnings: list[str] = []

    def note(diagnostic: Any) -> None:
        if diagnostic.severity_nonlocalized == "WARNING":
            warnings.append(str(diagnostic.message_primary))

    raw.add_notice_handler(note)
    try:
        for catalog in catalogs:
            raw.execute(f"VACUUM FULL {catalog}")
    finally:
        raw.remove_notice_handler(note)
    return not warnings
