"""Forgetting: a tombstone hides a node from every command; a purge deletes it and
every trace of its content from the store's files (docs/reliability.md).

Invariants: nodes are never deleted except by a purge; a purge keeps supersession
chains closed (what superseded the purged node supersedes what it superseded) and
removes the duplicates of it that consolidation forgot (they hold its text) and the
entities that existed only because those memories named them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import nodes, writing_validity
from .errors import BadInputError
from .sessions import forget_active_session

if TYPE_CHECKING:
    from .models import ForgetResult
    from .storage.engine import Storage


def forget(storage: Storage, ref: str, *, purge: bool = False) -> ForgetResult:
    from .models import ForgetResult

    node_id = nodes.resolve_id(storage, ref)
    if not purge:
        with storage.transaction():
            already = is_tombstoned(storage, node_id)
            tombstone(storage, node_id)
            forget_active_session(storage, node_id)
        return ForgetResult(id=node_id, purged=False, already=already)
    removed, not_scrubbed = purge_node(storage, node_id)
    return ForgetResult(id=node_id, purged=True, removed=removed, files_not_scrubbed=not_scrubbed)


def is_tombstoned(storage: Storage, node_id: str) -> bool:
    row = storage.connection.execute(
        "SELECT tombstoned FROM mem_nodes WHERE id = ?", (node_id,)
    ).fetchone()
    return bool(row and row[0])


def tombstone(storage: Storage, node_id: str) -> None:
    """Soft delete inside an open write transaction (consolidation)."""
    storage.connection.execute(
        "UPDATE mem_nodes SET tombstoned = 1, tombstoned_at = ? WHERE id = ? AND tombstoned = 0",
        (storage.now(), node_id),
    )


def purge_node(storage: Storage, node_id: str) -> tuple[tuple[str, ...], str | None]:
    """Hard delete that leaves no trace of the content in any file of the store.

    secure_delete zeroes the cells and pages this delete frees; 'rebuild' makes the
    FTS5 index anew so no segment still holds the node's terms; a TRUNCATE
    checkpoint empties the WAL, whose older frames still hold the content; VACUUM
    rebuilds the file, which drops the copies that earlier writes left in free space
    where SQLite was built without SECURE_DELETE (an update that moves a row, an
    alias taken over; tests/reliability/test_purge.py shows it). On PostgreSQL the
    tables are rewritten (storage/postgres/, ``scrub_files``).

    Returns the entities removed with it, and why the files were not scrubbed (None
    when they were; the delete has committed either way). Refused inside a batch
    (BadInputError, nothing changed): the files can only be scrubbed after the purge's
    own commit, as neither VACUUM nor emptying the WAL runs inside a transaction.
    """
    if storage.in_transaction:
        raise BadInputError(
            "a purge cannot run inside a batch (store.batch()): its files are scrubbed "
            "after its own commit; purge after the batch"
        )
    with storage.secure_deletes():
        with storage.transaction():
            removed = delete_purged(storage, node_id, relink=True)
            if storage.events is not None:
                # A shared store: a purge event tells every clone to purge too, and the
                # event files that hold the content go once this commits (event_log.py).
                storage.events.record_purge(storage.connection, (node_id, *removed))
            # 'rebuild' rather than 'optimize': the optimized segment goes one level
            # above the highest in use, so repeated purges grew the index structure
            # until FTS5 refused to load it (storage/sqlite/search_index.py).
            storage.rebuild_search_index()
        not_scrubbed = storage.scrub_files()
    return removed, not_scrubbed


def delete_purged(storage: Storage, node_id: str, *, relink: bool) -> tuple[str, ...]:
    """Delete a node, the duplicates of it that consolidation forgot and the entities
    only they named, inside an open transaction; returns those duplicates and entities.
    ``relink``: what superseded a deleted memory now supersedes what it superseded, so
    the older version stays closed (a clone importing a purge gets those edges from the
    purge's event instead)."""
    conn = storage.connection
    duplicates = duplicates_folded_into(storage, node_id)
    memories = (node_id, *duplicates)
    superseded: list[str] = []
    for memory in memories:
        superseded += [
            r[0]
            for r in conn.execute(
                "SELECT dst FROM mem_edges WHERE src = ? AND kind = 'SUPERSEDES'", (memory,)
            )
        ]
        if relink:
            conn.execute(
                "INSERT INTO mem_edges (src, dst, kind, created_at) "
                "SELECT newer.src, older.dst, 'SUPERSEDES', ? FROM mem_edges newer "
                "JOIN mem_edges older ON older.src = newer.dst AND older.kind = 'SUPERSEDES' "
                "WHERE newer.dst = ? AND newer.kind = 'SUPERSEDES'"
                + storage.sql.ignore_existing_edge,
                (storage.now(), memory),
            )
        forget_active_session(storage, memory)
    entities = entities_only_named_by(storage, memories)
    gone = (*memories, *entities)
    marks = ",".join("?" * len(gone))
    owned = conn.execute(
        f"SELECT namespace, alias FROM mem_aliases WHERE entity_id IN ({marks})", gone
    ).fetchall()
    conn.executemany("DELETE FROM mem_nodes WHERE id = ?", [(i,) for i in gone])
    hand_over_aliases(storage, owned)
    for old in dict.fromkeys(superseded):
        if old not in gone:
            writing_validity.recompute_valid_until(storage, old)
    return (*duplicates, *entities)


def duplicates_folded_into(storage: Storage, node_id: str) -> tuple[str, ...]:
    """The memories consolidation tombstoned as duplicates of this one (``duplicate_of``
    in their data), and of those, transitively. They hold the same text (that is what
    made them duplicates), hidden: a purge of the memory that recall shows would
    otherwise leave its content on disk in them."""
    found: list[str] = []
    frontier = [node_id]
    while frontier:
        marks = ",".join("?" * len(frontier))
        frontier = [
            str(row[0])
            for row in storage.connection.execute(
                "SELECT id FROM mem_nodes WHERE tombstoned = 1 "
                f"AND json_extract(data, '$.duplicate_of') IN ({marks}) ORDER BY id",
                frontier,
            )
            if row[0] != node_id and row[0] not in found
        ]
        found += frontier
    return tuple(found)


def hand_over_aliases(storage: Storage, owned: list[tuple[str, str]]) -> None:
    """The aliases a purged entity owned go to the entity that claims them next: of
    the entities left whose names give that alias, the one with the largest ID (the
    rule of a shared store's import, team/apply.py). Without this, a clone that purged
    the owner kept no alias for the name while a clone that never held the owner kept
    the other entity's: two clones with the same events in different states."""
    from .entities import alias_forms

    conn = storage.connection
    for namespace, alias in owned:
        for entity_id, name in conn.execute(
            "SELECT id, content FROM mem_nodes WHERE kind = 'entity' AND namespace = ? "
            "ORDER BY id DESC",
            (namespace,),
        ).fetchall():
            if alias.lower() in (form.lower() for form in alias_forms(name)):
                conn.execute(
                    "INSERT INTO mem_aliases (namespace, alias, entity_id) VALUES (?, ?, ?) "
                    "ON CONFLICT (namespace, alias) DO NOTHING",
                    (namespace, alias, entity_id),
                )
                break


def entities_only_named_by(storage: Storage, memories: tuple[str, ...]) -> tuple[str, ...]:
    """Entities that exist only because these memories (a purged one and its folded
    duplicates) named them: linked to nothing else, and created by the write of a memory
    that named them, one of these (one clock reading per transaction, so the same
    recorded_at) or one purged before (one clock reading, so the same time in its ID).
    A purge removes them too, or the name of a person or a secret would stay
    recallable, whichever of the memories that named it was purged last. An entity
    stored on its own, or named by any other memory, stays."""
    marks = ",".join("?" * len(memories))
    rows = storage.connection.execute(
        "SELECT DISTINCT ent.id, ent.recorded_at = purged.recorded_at "
        "FROM mem_edges e JOIN mem_nodes ent ON ent.id = e.dst "
        "JOIN mem_nodes purged ON purged.id = e.src "
        f"WHERE e.src IN ({marks}) AND e.kind = 'ABOUT' AND ent.kind = 'entity' "
        f"AND NOT EXISTS (SELECT 1 FROM mem_edges o WHERE o.dst = ent.id "
        f"AND o.src NOT IN ({marks})) "
        "AND NOT EXISTS (SELECT 1 FROM mem_edges o WHERE o.src = ent.id) ORDER BY ent.id",
        (*memories, *memories),
    ).fetchall()
    same_write = {str(row[0]) for row in rows if row[1]}
    if len(same_write) < len({row[0] for row in rows}):
        # The memory whose write created the entity may be gone already, purged while
        # another memory still named the entity: its ID keeps the time of that write.
        purged_writes = {
            _id_time(str(row[0]))
            for row in storage.connection.execute("SELECT node_id FROM mem_purged")
            if not str(row[0]).startswith("e_")
        }
        same_write.update(str(row[0]) for row in rows if _id_time(str(row[0])) in purged_writes)
    return tuple(sorted(same_write))


def _id_time(node_id: str) -> str:
    """The 13 hex digits of milliseconds in a node ID (ids.py), the moment of its write."""
    return node_id.split("_", 1)[-1][:13]
