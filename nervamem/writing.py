"""Writing memories: the one write path of ``store`` and ``store_many``.

``MemoryStore.store(...)`` is :func:`store_memories` of one memory, and
``store_many(memories)`` is the same function over many, in one transaction: the checks
and error messages, entity resolution, supersession rules, edges, IDs, clock readings
and row order exist once, here (the checks of a memory's input in writing_checks.py, the
supersession and validity rules in writing_validity.py). A call is all or nothing. Node
and edge rows are buffered and written by multi-row INSERTs, several times faster for
imports: every INSERT into mem_nodes fires the FTS trigger inside a statement
transaction, and FTS5 flushes its pending index at each one, so one statement per row
costs about three times what one statement per hundred rows costs.

A buffered row is invisible to SQL until it is flushed. So the buffer is flushed before
anything that could read it: resolving a reference by short ID or ID prefix (a full ID
of a buffered node is answered from the buffer) and the code bridge. Checks against the
database (is this node already superseded?) also look at the buffer. A new entity is
written at once (later names are resolved against it), without flushing the buffer:
every node gets its ``seq`` from this call, one more than the largest, so the row order
is the order of the memories though an entity row is written before the buffered rows
that precede it.
(Entity lookups, as before, run while buffered rows are not yet in the FTS index: its
bm25 statistics lack those rows, which can only matter when several entities match a
name by phrase, as the ranking then picks one.)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from . import nodes
from .errors import BadInputError
from .ids import ID_PATTERN, KIND_PREFIX, random_bits
from .locate import graph_path_beside
from .memory_fields import NewMemory as NewMemory
from .memory_fields import Ref
from .writing_checks import check_text, checked_memory, valid_from_text
from .writing_validity import STATED_END, check_supersedable, supersedable

if TYPE_CHECKING:
    from .code.values import AnchorReport
    from .storage.engine import Connection, Storage

_NODE_COLUMNS = 9
_EDGE_COLUMNS = 5
# The superseding checks of supersedable() in one statement, for a full ID (the
# namespace compared in Python, as for _BY_ID).
_SUPERSEDABLE = (
    "SELECT n.kind, n.valid_from, n.tombstoned, (SELECT e.src FROM mem_edges e "
    "JOIN mem_nodes s ON s.id = e.src WHERE e.dst = n.id AND e.kind = 'SUPERSEDES' "
    "AND s.tombstoned = 0 LIMIT 1), n.namespace FROM mem_nodes n WHERE n.id = ?"
)
# A node's kind and namespace by its full ID. The namespace is compared in Python, not
# in SQL: PostgreSQL plans a prepared "id = $1 AND namespace = $2" once, generically,
# and on a table that was nearly empty then (a fresh store's bulk load) it picks the
# namespace index, ties being equal, and filters every node of the namespace (2-5 ms a
# lookup at 5k nodes instead of 0.1). Without the namespace only the id index applies.
_BY_ID = "SELECT kind, namespace FROM mem_nodes WHERE id = ?"


class _Pending:
    """Rows written by this call and not yet flushed, and what checks need of them."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.nodes: list[tuple[Any, ...]] = []
        self.valid_until: list[tuple[str, str]] = []
        self.edges: list[tuple[str, str, str, str, str]] = []
        # Buffered nodes: id -> (kind, namespace, valid_from).
        self.known: dict[str, tuple[str, str, str]] = {}
        # Supersessions written by this call: old id -> new id.
        self.superseded_by: dict[str, str] = {}
        # The seq of the next node; read from the table while nothing is buffered.
        self.next_seq: int | None = None

    def seq(self) -> int:
        """The seq SQLite would give the next node: one more than the largest (INTEGER
        PRIMARY KEY without AUTOINCREMENT). Buffered nodes count as written."""
        if self.next_seq is None:
            last = self.storage.connection.execute("SELECT max(seq) FROM mem_nodes").fetchone()[0]
            self.next_seq = int(last or 0) + 1
        seq = self.next_seq
        self.next_seq = seq + 1
        return seq

    def link(self, src: str, dst: str, kind: str, now: str) -> None:
        # Inserted or ignored when flushed: an edge is stated once.
        self.edges.append((src, dst, kind, now, "{}"))

    def flush(self) -> None:
        conn = self.storage.connection
        nodes, self.nodes = self.nodes, []
        self.insert(
            "INSERT INTO mem_nodes (seq, id, kind, content, namespace, valid_from, "
            "recorded_at, confidence, data) VALUES ",
            nodes,
            _NODE_COLUMNS,
        )
        if self.valid_until:
            # The earliest of what is there (a stated end, or the start of a forgotten
            # successor) and the new end: as recompute_valid_until and an import of a
            # shared store's events derive it.
            conn.executemany(
                "UPDATE mem_nodes SET valid_until = CASE WHEN valid_until IS NOT NULL "
                "AND valid_until < ?1 THEN valid_until ELSE ?1 END WHERE id = ?2",
                self.valid_until,
            )
            self.valid_until = []
        # In primary-key order: each row lands next to the one before it in the edge
        # table's B-tree instead of on a random page (~35 % less time in edge inserts).
        # The table has no rowid and its rows are unique, so the order changes nothing
        # of what is stored (a duplicate is the same row whichever comes first).
        edges, self.edges = sorted(self.edges, key=_EDGE_KEY), []
        self.insert(
            "INSERT INTO mem_edges (src, dst, kind, created_at, data) VALUES ",
            edges,
            _EDGE_COLUMNS,
            self.storage.sql.ignore_existing_edge,
        )
        self.known.clear()

    def insert(
        self, head: str, rows: Sequence[tuple[Any, ...]], columns: int, tail: str = ""
    ) -> None:
        self.storage.insert_rows(head, rows, columns, tail)


_EDGE_KEY = itemgetter(0, 2, 1)  # (src, dst, kind, ...) -> mem_edges PRIMARY KEY (src, kind, dst)


class WriteResult:
    """What one write did: the IDs of the memories, in order, and the code bridge's
    report for each memory it anchored (ambiguous names, graph problems: reported, not
    raised)."""

    __slots__ = ("ids", "anchoring")

    def __init__(self, ids: list[str], anchoring: dict[str, AnchorReport]) -> None:
        self.ids = ids
        self.anchoring = anchoring


def store_memories(
    storage: Storage, memories: Iterable[NewMemory], *, bulk: bool = True
) -> WriteResult:
    """Store memories in one transaction (inside the caller's, if one is open)."""
    ids: list[str] = []
    conn = storage.connection
    if bulk:
        storage.prepare_bulk_write()
    with storage.transaction():
        # Inside the caller's batch too, a failure undoes this call and nothing else.
        conn.execute("SAVEPOINT nervamem_store_many")
        try:
            pending = _Pending(storage)
            writer = _Writer(storage, pending, ids, storage.now())
            for memory in memories:
                ids.append(writer.add(memory))
            pending.flush()
        except BaseException:
            _undo_savepoint(conn, "nervamem_store_many")
            raise
        conn.execute("RELEASE nervamem_store_many")
    return WriteResult(ids, writer.anchoring)


def _undo_savepoint(conn: Connection, name: str) -> None:
    """Undo a failed write back to its savepoint, without hiding why it failed.

    When the failure was the connection itself (a PostgreSQL server restarted mid-write),
    the savepoint went with it and ROLLBACK TO fails too; its error would replace the
    ConnectionLostError (exit 1, "lost the connection") with an internal one. The
    transaction is undone either way: the caller's transaction() rolls back or drops the
    connection on the error being raised."""
    try:
        conn.execute(f"ROLLBACK TO {name}")
        conn.execute(f"RELEASE {name}")
    except Exception:
        pass


class _Writer:
    def __init__(self, storage: Storage, pending: _Pending, ids: list[str], now: str) -> None:
        self.storage = storage
        self.pending = pending
        self.ids = ids
        # One transaction, one clock reading: this time is written everywhere, and every
        # ID made starts with the same milliseconds (storage.new_id's format).
        self.now = now
        self.id_heads: dict[str, str] = {}
        self.epoch_ms = int(storage.moment().timestamp() * 1000)
        # The default random source reads 8 bytes of os.urandom per ID; reading them for
        # many IDs at once gives the same kind of IDs for a fraction of the system calls.
        # Any other source (tests inject one) is called once per ID, in order.
        self.buffered_random = storage.random is random_bits
        self.random_hex = ""
        self.random_at = 0
        self.default_namespace: str | None = None
        self.sessions: dict[tuple[str | None, str], str | None] = {}
        self.entities: dict[tuple[str, str], str] = {}
        # For forget_entities (PostgreSQL): each resolved name's lookup forms, and the
        # names by the rough key of a form (None: forms that may equal anything).
        self.entity_forms: dict[tuple[str, str], list[str]] = {}
        self.names_by_rough: dict[str | None, set[tuple[str, str]]] = {}
        self.bridge = graph_path_beside(storage.path).is_file()
        self.anchoring: dict[str, AnchorReport] = {}

    def new_id(self, kind: str) -> str:
        """What storage.new_id(kind) returns in this transaction (ids.make_id's format)."""
        head = self.id_heads.get(kind)
        if head is None:
            head = self.id_heads[kind] = f"{KIND_PREFIX[kind]}_{self.epoch_ms:013x}"
        if not self.buffered_random:
            return f"{head}{self.storage.random() & (2**64 - 1):016x}"
        if self.random_at >= len(self.random_hex):
            # 8 big-endian random bytes in hex are random_bits() formatted as make_id does.
            self.random_hex = os.urandom(8 * 1024).hex()
            self.random_at = 0
        at = self.random_at
        self.random_at = at + 16
        return head + self.random_hex[at : at + 16]

    def namespace(self, explicit: str | None) -> str:
        if explicit is not None:
            return self.storage.namespace_for(explicit)
        # The store's namespace cannot change during the call (no session or namespace
        # switch happens in it); read it once, at the first memory that needs it.
        if self.default_namespace is None:
            self.default_namespace = self.storage.namespace_for(None)
        return self.default_namespace

    def index(self, ref: Ref) -> str:
        if isinstance(ref, int) and not isinstance(ref, bool):
            if not 0 <= ref < len(self.ids):
                raise BadInputError(
                    f"reference {ref} is not the index of an earlier memory of this call"
                )
            return self.ids[ref]
        if not isinstance(ref, str):
            raise BadInputError(f"{ref!r} is not a node ID or an index")
        return ref

    def resolve(self, ref: Ref, namespace: str) -> str:
        """The node a reference names at this point of the call."""
        ref = self.index(ref)
        buffered = self.pending.known.get(ref)
        if buffered is not None and buffered[1] == namespace:
            return ref
        if buffered is not None or not ID_PATTERN.match(ref):
            self.pending.flush()  # let the database answer: a prefix may match buffered rows
        return nodes.resolve_id(self.storage, ref, namespace=namespace)

    def supersedable(self, ref: Ref, namespace: str, start: str) -> str:
        ref = self.index(ref)
        if ref not in self.pending.known and ID_PATTERN.match(ref):
            # A full ID of a written node: resolve_id, get and the superseder lookup of
            # supersedable() in one statement. No row: the usual path raises.
            row = self.storage.connection.execute(_SUPERSEDABLE, (ref,)).fetchone()
            if row is not None and row[4] == namespace:
                check_supersedable(ref, row[0], row[1], bool(row[2]), row[3], start)
                if ref in self.pending.superseded_by:
                    check_supersedable(ref, "", "", False, self.pending.superseded_by[ref], start)
                return ref
        node_id = self.resolve(ref, namespace)
        buffered = self.pending.known.get(node_id)
        if buffered is None:
            old = supersedable(self.storage, node_id, namespace, start)
            if old in self.pending.superseded_by:
                check_supersedable(old, "", "", False, self.pending.superseded_by[old], start)
            return old
        kind, _, valid_from = buffered
        check_supersedable(
            node_id, kind, valid_from, False, self.pending.superseded_by.get(node_id), start
        )
        return node_id

    def session(self, explicit: str | None, namespace: str) -> str | None:
        key = (explicit, namespace)
        if key not in self.sessions:
            if explicit and ID_PATTERN.match(explicit) and explicit not in self.pending.known:
                # A full ID: session_for_write's lookups in one statement.
                row = self.storage.connection.execute(_BY_ID, (explicit,)).fetchone()
                if row is not None and row[1] == namespace:
                    if row[0] != "session":
                        raise BadInputError(f"{explicit} is a {row[0]}, not a session")
                    self.sessions[key] = explicit
                    return explicit
            if explicit and not ID_PATTERN.match(explicit):
                self.pending.flush()  # a prefix may match buffered rows
            self.sessions[key] = session_for_write(self.storage, explicit, namespace)
        return self.sessions[key]

    def entity(self, name: str, namespace: str, start: str) -> str:
        key = (name, namespace)
        found = self.entities.get(key)
        if found is not None:
            return found
        storage = self.storage
        clean = " ".join(name.split())
        from . import entities as entity_rules

        if clean:
            existing = entity_rules.find_entity(storage.connection, namespace, clean)
            if existing:
                self.remember(key, existing)
                return existing
        # A new entity, written at once, with
        # the seq it would get after the buffered nodes; its aliases may take over
        # others' aliases, so forget what was resolved.
        if not clean:
            raise BadInputError("an entity name cannot be empty")
        check_text(clean, "entity name")
        entity_id = self.new_id("entity")
        conn = storage.connection
        conn.execute(
            "INSERT INTO mem_nodes (seq, id, kind, content, namespace, valid_from, recorded_at, "
            "confidence, data) VALUES (?, ?, 'entity', ?, ?, ?, ?, 1.0, '{}')",
            (self.pending.seq(), entity_id, clean, namespace, start, self.now),
        )
        # In process, lookups cost little: forget them all and ask again. Over a network,
        # forget only those the new aliases may change (forget_entities).
        in_process = storage.in_process
        aliases = entity_rules.alias_forms(clean)
        robbed: set[str] = set()
        for alias in aliases:
            # A tombstoned entity may still own the alias: the live one takes it over.
            # Deleted and inserted, as SQLite's INSERT OR REPLACE did: a shared store's
            # event log captures inserted aliases (event_log.py), not updated ones.
            deleted = conn.execute(
                "DELETE FROM mem_aliases WHERE namespace = ? AND alias = ?"
                + ("" if in_process else " RETURNING entity_id"),
                (namespace, alias),
            )
            if not in_process:
                robbed.update(str(row[0]) for row in deleted.fetchall())
            conn.execute(
                "INSERT INTO mem_aliases (namespace, alias, entity_id) VALUES (?,?,?)",
                (namespace, alias, entity_id),
            )
        if in_process:
            self.entities.clear()
        else:
            self.forget_entities(namespace, aliases, robbed)
        self.remember(key, entity_id)
        return entity_id

    def remember(self, key: tuple[str, str], entity_id: str) -> None:
        self.entities[key] = entity_id
        if key in self.entity_forms or self.storage.in_process:
            return
        from . import entities as entity_rules

        forms = self.entity_forms[key] = entity_rules.lookup_forms(" ".join(key[0].split()))
        for form in forms:
            self.names_by_rough.setdefault(_rough_key(form), set()).add(key)

    def forget_entities(self, namespace: str, aliases: list[str], robbed: set[str]) -> None:
        """After a new entity took ``aliases`` (from the entities in ``robbed``): forget
        the names resolved earlier that may now resolve otherwise; on PostgreSQL, where
        asking again for every name costs a round trip each (~2,700 at a 10k import).
        Those are the names that resolved to a robbed entity, and those one of whose
        lookup forms equals a new alias under the alias column's collation (then an
        earlier lookup step may now find the new entity). Names in other namespaces keep
        their entity, and so does a name found by phrase: the new entity comes after it
        in seq order. Python cannot apply ICU's rules, so it only picks the names that
        may be equal (_rough_key) and the server compares those."""
        wanted = {_rough_key(alias) for alias in aliases}
        if None in wanted:
            near = set(self.entities)
        else:
            near = set(self.names_by_rough.get(None, ()))
            for rough in wanted:
                near.update(self.names_by_rough.get(rough, ()))
        keys = [key for key in near if key[1] == namespace and key in self.entities]
        stale = (
            {key for key, found in self.entities.items() if found in robbed} if robbed else set()
        )
        forms = [
            (form, index)
            for index, key in enumerate(keys)
            if key not in stale
            for form in self.entity_forms[key]
        ]
        if forms:
            rows = self.storage.connection.execute(
                "SELECT DISTINCT c.k FROM unnest(?::text[], ?::bigint[]) AS c(form, k) "
                "WHERE c.form COLLATE nervamem_nocase = ANY (?::text[])",
                ([form for form, _ in forms], [index for _, index in forms], aliases),
            ).fetchall()
            stale.update(keys[int(row[0])] for row in rows)
        for key in stale:
            del self.entities[key]

    def add(self, memory: NewMemory) -> str:
        pending = self.pending
        data = checked_memory(
            memory.kind,
            memory.content,
            memory.confidence,
            memory.rationale,
            memory.rejected,
            memory.entities,
        )
        ns = self.namespace(memory.namespace)
        valid_from = memory.valid_from
        now = self.now
        if valid_from is None:
            start = now
        elif isinstance(valid_from, datetime) and valid_from.tzinfo is timezone.utc:
            # timeparse.format_time's result without its conversions, which change
            # nothing here: "...T08:00:00.000+00:00" -> "...T08:00:00.000Z".
            start = valid_from.isoformat(timespec="milliseconds")[:-6] + "Z"
        else:
            start = valid_from_text(self.storage, valid_from)
        if memory.valid_until is not None:
            if memory.kind == "entity":
                raise BadInputError("--valid-until applies to memories, not to entities")
            until = valid_from_text(self.storage, memory.valid_until, option="--valid-until")
            if until <= start:
                raise BadInputError(
                    f"--valid-until {until} is not after the memory's start ({start})"
                )
            data[STATED_END] = until
        session_id = self.session(memory.session, ns)
        supersedes = memory.supersedes
        # Index 0 is a reference too: test for None, not for truth.
        refs: Sequence[Ref] = (
            ()
            if supersedes is None or supersedes == ""
            else (supersedes,)
            if isinstance(supersedes, (str, int))
            else supersedes
        )
        olds = list(dict.fromkeys(self.supersedable(ref, ns, start) for ref in refs))
        links = [
            (self.resolve(ref, ns), edge)
            for refs, edge in (
                (memory.contradicts, "CONTRADICTS"),
                (memory.caused_by, "CAUSED"),
                (memory.derived_from, "DERIVED_FROM"),
            )
            for ref in refs
        ]
        if memory.kind == "entity":
            # An existing entity is returned as is; it must not end up linked to itself.
            node_id = self.entity(memory.content, ns, start)
            if node_id in olds or any(target == node_id for target, _ in links):
                raise BadInputError(f"{node_id} cannot supersede or link to itself")
        else:
            node_id = self.new_id(memory.kind)
            pending.nodes.append(
                (
                    pending.seq(),
                    node_id,
                    memory.kind,
                    memory.content,
                    ns,
                    start,
                    now,
                    float(memory.confidence),
                    json.dumps(data, ensure_ascii=False, sort_keys=True) if data else "{}",
                )
            )
            pending.known[node_id] = (memory.kind, ns, start)
            if STATED_END in data:
                pending.valid_until.append((data[STATED_END], node_id))
        for old in olds:
            pending.valid_until.append((start, old))
            pending.link(node_id, old, "SUPERSEDES", now)
            pending.superseded_by[old] = node_id
        for target, edge in links:
            if edge == "CAUSED":
                pending.link(target, node_id, "CAUSED", now)  # the cause produced this node
            else:
                pending.link(node_id, target, edge, now)
        entity_ids: list[tuple[str, str]] = []
        for name in memory.entities:
            entity_id = self.entity(name, ns, start)
            if entity_id != node_id:
                pending.link(node_id, entity_id, "ABOUT", now)
                entity_ids.append((name, entity_id))
        if session_id and memory.kind != "entity":
            pending.link(node_id, session_id, "OCCURRED_IN", now)
        if entity_ids and self.bridge:
            pending.flush()
            report = anchor_code(self.storage, node_id, entity_ids)
            if report is not None:
                self.anchoring[node_id] = report
            pending.next_seq = None  # it writes edges only, but ask the table again
        return node_id


def _rough_key(text: str) -> str | None:
    """A key equal for any two texts that PostgreSQL's case-insensitive alias collation
    (ICU, strength 2) may call equal: the letters and digits of the compatibility
    decomposition, lower-cased, for a text that decomposes to ASCII (where that
    collation tells nothing but case and ignorable control characters apart); None,
    "may equal anything", for any other text."""
    import unicodedata

    decomposed = unicodedata.normalize("NFKD", text)
    if not decomposed.isascii():
        return None
    return "".join(ch for ch in decomposed.lower() if ch.isalnum())


def session_for_write(storage: Storage, explicit: str | None, namespace: str) -> str | None:
    if explicit is not None:  # a blank one is refused, not read as "the active one"
        node = nodes.get(storage, explicit, namespace=namespace)
        if node.kind != "session":
            raise BadInputError(f"{node.id} is a {node.kind}, not a session")
        return node.id
    # The session active in the namespace written to (each namespace has its own).
    active = storage.state.session_of(namespace)
    if not active:
        return None
    row = storage.connection.execute(
        "SELECT 1 FROM mem_nodes WHERE id = ? AND namespace = ? AND kind = 'session' "
        "AND tombstoned = 0",
        (active, namespace),
    ).fetchone()
    return active if row else None


def anchor_code(
    storage: Storage, node_id: str, entity_ids: list[tuple[str, str]]
) -> AnchorReport | None:
    """TOUCHES bridge: only when a code graph exists beside the store (lazy import)."""
    graph_path = graph_path_beside(storage.path)
    if not graph_path.is_file():
        return None
    from .code.anchors import anchor_entities

    return anchor_entities(storage, node_id, entity_ids, graph_path)
