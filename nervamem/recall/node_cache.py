"""Facts about single nodes that recall reads again and again: node rows, degrees,
neighbours. A process that recalls many times (the MCP server, a library, a benchmark)
keeps them between recalls on SQLite, for one write generation of the store.

Rules a reader must not break:
* A fact is served only in the generation it was read in. The generation is the
  Storage's ``commits_by_others()`` (SQLite's ``PRAGMA data_version``: another
  connection committed) and ``own_writes()`` (its ``write_generation``, this store's own
  transactions, committed or rolled back, and the connection's ``total_changes``, any
  other write of this connection): when any of them moved since the last recall,
  :func:`for_recall` empties the cache first.
* The one write of recalls, their access counts (access_counts.py, written for several
  recalls at once), is this connection's and moves only ``total_changes``:
  :func:`counted` adds the same counts to the cached rows' ``access_count`` and takes
  the new ``total_changes`` as the generation's, so the cache holds exactly what SQLite
  holds (the counts still pending, recall adds itself).
* No cache inside a transaction (its reads see writes that may still roll back) nor on
  PostgreSQL (``commits_by_others()`` is None: a server's other clients write unseen):
  the same code
  then reads SQL every time.
* A cached row is shown only through the namespace filter and the temporal mask that
  the SQL would apply: :func:`admits` is mask.mask_sql's twin for a plain ``as_of``
  (tests/recall/test_node_cache.py checks the two against each other on arbitrary rows);
  a KnownAt mask (``--known-at``) reads its rows with SQL.
* Bounded: at most MAX_ROWS rows and MAX_NODES degrees, neighbour and causal lists,
  those not used for longest dropped first (:class:`Recent`): ~800 B a row with its
  facts, ~25 MB after the peers workload at 100k nodes (32k distinct rows), ~45 MB at
  the caps (bench/results.md, "Node cache"); what search reads again (SearchFacts: the
  scored texts' words, the key terms' postings) ~13 MB more there, ~35 MB at its caps;
  all-common queries' newest rows ~0.4 MB more, ~1.3 MB at their cap; where key roots
  start words (SearchFacts.starts) ~1.8 MB more, ~2.7 MB at their cap.
* Who reads it must not change what it returns (lists and rows are the cache's own).
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from gc import get_count, is_tracked
from itertools import chain, islice
from sys import intern
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .. import conflicts, nodes
from ..storage.graph_reads import graph_reads_of

if TYPE_CHECKING:
    from ..storage.engine import Connection, Storage

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

MAX_ROWS = 32_768
MAX_NODES = 32_768

# A cached node row: recall's NodeRow (candidates.NODE_COLUMNS), then namespace and
# tombstoned, which the filters need.
CachedRow = tuple[str, str, str, str, str | None, str, float, int, int, str, int]
CACHED_COLUMNS_TAIL = ", n.namespace, n.tombstoned"


class Recent(Generic[K, V]):
    """A table that drops what was not used for longest (the CLOCK approximation of
    LRU): :meth:`move_to_end` only marks a key as used; :meth:`evict` walks the oldest
    entries, moves the used ones to the end (unmarked) and drops the others, in a batch.

    Not an OrderedDict: when one grows past a size (5,461, 10,922, 21,845 entries ...)
    or has churned through its free slots, it rebuilds its linked list by looking up
    every key: 13-28 ms in the middle of one recall at 100k nodes (bench/results.md,
    "First recall"). A plain dict's resize copies its entries and their stored hashes.

    Out of the cyclic GC's way: a full collection walks every entry of a tracked dict,
    ~5-8 ms over the tables at 100k nodes, inside whichever recall it lands in. A plain
    dict whose keys and values the GC does not track stays untracked (a dict subclass
    or a set never is), and a new tuple is tracked until a collection has seen that it
    holds only strings and numbers. So a value that is still tracked waits in
    ``fresh`` (a few hundred entries) and :meth:`settle`, at the start of each recall,
    moves those the GC has let go of into ``entries``, which then never gets tracked
    (bench/results.md, "The GC and the caches, round 6"). Readers on a hot path look a
    key up in ``entries``, then in ``fresh`` (as :meth:`get` does).

    After young collections only, :meth:`settle` looks only at the values put since it
    last ran (``added``): one it found still tracked then has survived a young
    collection or was put after it, and in either case waits for a middle one (a text's
    words, a tuple of tuples, always do). A first recall at 100k nodes checked ~1,100
    fresh values, ~840 of them texts still waiting, to move ~250 (bench/results.md,
    "A query's first recall at 100k, round 7").
    """

    __slots__ = ("added", "entries", "fresh", "used")

    def __init__(self) -> None:
        self.entries: dict[K, V] = {}
        self.fresh: dict[K, V] = {}
        self.used: dict[K, None] = {}  # the keys marked used (a dict: a set is tracked)
        self.added: list[K] = []  # keys put into ``fresh`` since the last settle

    def get(self, key: K) -> V | None:
        value = self.entries.get(key)
        return self.fresh.get(key) if value is None else value

    def __getitem__(self, key: K) -> V:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: K, value: V) -> None:
        self.keep(key, value, 0)

    def keep(self, key: K, value: V, limit: int) -> list[V]:
        """``self[key] = value``, and past ``limit`` entries (0: none) :meth:`evict`;
        the values dropped. One call where a recall keeps ~300 new facts and rows
        (``len(self)`` was a call of its own, ~0.1 us)."""
        if is_tracked(value):
            self.entries.pop(key, None)
            self.fresh[key] = value
            if len(self.added) <= len(self.fresh):  # past it, settle looks at them all
                self.added.append(key)
        else:
            self.fresh.pop(key, None)
            self.entries[key] = value
        if limit and len(self.entries) + len(self.fresh) > limit:
            return self.evict(limit)
        return _NOTHING

    def __delitem__(self, key: K) -> None:
        if self.entries.pop(key, _MISSING) is _MISSING:
            del self.fresh[key]

    def __contains__(self, key: object) -> bool:
        return key in self.entries or key in self.fresh

    def __len__(self) -> int:
        return len(self.entries) + len(self.fresh)

    def __iter__(self) -> Iterator[K]:
        return chain(self.entries, self.fresh)

    def items(self) -> list[tuple[K, V]]:
        return [*self.entries.items(), *self.fresh.items()]

    def values(self) -> list[V]:
        return [*self.entries.values(), *self.fresh.values()]

    def keys(self) -> list[K]:
        return [*self.entries, *self.fresh]

    def move_to_end(self, key: K) -> None:
        """Mark ``key`` as used (the name of OrderedDict's, which callers use)."""
        self.used[key] = None

    def clear(self) -> None:
        self.entries.clear()
        self.fresh.clear()
        self.used.clear()
        self.added.clear()

    def settle(self, every: bool = True) -> None:
        """Move the fresh values that the GC no longer tracks into ``entries``: all of
        them, or (``every`` False: only young collections since the last settle) those
        put since then."""
        fresh, added = self.fresh, self.added
        if fresh:
            entries = self.entries
            if every or len(added) >= len(fresh):
                for key, value in list(fresh.items()):
                    if not is_tracked(value):
                        entries[key] = value
                        del fresh[key]
            else:
                for key in added:
                    put = fresh.get(key)  # None: dropped or settled since (a
                    # value in fresh is tracked, so never None)
                    if put is not None and not is_tracked(put):
                        entries[key] = put
                        del fresh[key]
        added.clear()

    def evict(self, limit: int) -> list[V]:
        """Above ``limit`` entries: drop down to 7/8 of it (room for the next recalls'
        entries without a batch each), the entries not used since the last eviction
        first, the fresh ones last; the values dropped."""
        dropped: list[V] = []
        keep = limit - limit // 8
        used = self.used
        for table in (self.entries, self.fresh):
            while table and len(self) > keep:
                for key in list(islice(table, len(self) - keep)):
                    if key in used:
                        del used[key]
                        table[key] = table.pop(key)  # a second chance: to the end
                    else:
                        dropped.append(table.pop(key))
        return dropped


_MISSING = object()
_NOTHING: list[Any] = []  # never appended to


class NodeFacts:
    """The cache of one Storage (see the module's rules)."""

    __slots__ = (
        "causal",
        "collections",
        "degree",
        "generation",
        "ids",
        "neighbours",
        "rows",
        "search",
        "short",
        "supersedes",
    )

    def __init__(self) -> None:
        self.generation: tuple[int, int, int] | None = None
        # The GC's collection counters when the tables last settled (see settle).
        self.collections: tuple[int, ...] | None = None
        self.rows: Recent[int, CachedRow] = Recent()  # by seq
        self.ids: dict[str, int] = {}  # seq of each cached row's ID
        self.degree: Recent[str, int] = Recent()
        self.neighbours: Recent[str, tuple[str, ...]] = Recent()
        self.causal: Recent[str, tuple[str, ...]] = Recent()
        self.short: Recent[str, str] = Recent()  # short ID by ID: see short_ids()
        self.supersedes: Recent[str, bool] = Recent()  # see rivals()
        self.search = SearchFacts()  # scored rows' words, term postings (see there)

    def clear(self) -> None:
        self.rows.clear()
        self.ids.clear()
        self.degree.clear()
        self.neighbours.clear()
        self.causal.clear()
        self.search.clear()
        self.short.clear()
        self.supersedes.clear()

    def settle(self) -> None:
        """Each table's :meth:`Recent.settle` (~0.1 us a fresh value), when the GC
        collected since the tables last settled: only a collection lets go of a value.
        A repeat recall at 100k nodes allocates too little to start one (~10 young
        collections over 220 of them), and a text's analysis (a tuple of tuples)
        waits for a middle collection: ``fresh`` held 1-2k values that every recall
        checked again in vain, ~0.4 ms a recall (bench/results.md, "Settling only after
        a collection"). The counters (young collections since the last middle one,
        middle ones since the last full one) come back to the same pair only after a
        full collection, and then at worst values wait in ``fresh`` for the next."""
        collections = get_count()[1:]
        before = self.collections
        if collections == before:
            return
        self.collections = collections
        # A middle or full collection since: the young count went back, or the middle
        # one moved. (A full one can look like young ones only: values then wait.)
        every = before is None or collections[1] != before[1] or collections[0] < before[0]
        for table in (self.rows, self.neighbours, self.causal, self.search.texts):
            table.settle(every)

    def keep_row(self, row: CachedRow) -> None:
        node_id, kind, content, valid_from, valid_until, recorded_at = row[:6]
        # ~20 % of a row's bytes: one string for a kind and a namespace, and one for the
        # two times when a memory became true when it was recorded (the default).
        row = (
            node_id,
            intern(kind),
            content,
            valid_from,
            valid_until,
            valid_from if recorded_at == valid_from else recorded_at,
            *row[6:9],
            intern(row[9]),
            row[10],
        )
        ids = self.ids
        ids[node_id] = row[8]
        for dropped in self.rows.keep(row[8], row, MAX_ROWS):
            del ids[dropped[0]]


def held(table: Recent[str, V], ids: Iterable[str]) -> tuple[dict[str, V], list[str]]:
    """The degrees, neighbour lists or causal lists that ``table`` holds for ``ids``
    (marked as used), and the IDs it holds none for, in their order."""
    known: dict[str, V] = {}
    unknown: list[str] = []
    settled, fresh, used = table.entries.get, table.fresh.get, table.used
    for node_id in ids:
        value = settled(node_id)
        if value is None:
            value = fresh(node_id)
            if value is None:
                unknown.append(node_id)
                continue
        used[node_id] = None
        known[node_id] = value
    return known, unknown


def keep_fact(table: Recent[str, V], node_id: str, value: V) -> None:
    table.keep(node_id, value, MAX_NODES)


_caches: weakref.WeakKeyDictionary[object, NodeFacts] = weakref.WeakKeyDictionary()


def for_recall(storage: Storage) -> NodeFacts | None:
    """The store's cache, emptied if the store changed since it was filled; None where
    there is none (PostgreSQL, inside a transaction)."""
    if storage.in_transaction:
        return None
    others = storage.commits_by_others()
    if others is None:
        return None
    facts = _caches.get(storage)
    if facts is None:
        facts = _caches[storage] = NodeFacts()
    generation = (others, *storage.own_writes())
    if facts.generation != generation:
        facts.clear()
        facts.generation = generation
    else:
        facts.settle()
    return facts


def counted(storage: Storage, accesses: Mapping[str, int]) -> None:
    """After the access counts ``accesses`` (how many by ID) were committed
    (access_counts.py): as many more in their cached rows, and the connection's new
    total_changes taken as this generation's. data_version is left as it was read: if
    another connection committed meanwhile, the next recall still sees it move."""
    facts = _caches.get(storage)
    if facts is None or facts.generation is None:
        return
    version, writes, _ = facts.generation
    transactions, changes = storage.own_writes()
    if writes != transactions:
        facts.clear()
        facts.generation = None
        return
    for node_id, count in accesses.items():
        seq = facts.ids.get(node_id)
        if seq is None:
            continue
        row = facts.rows[seq]
        facts.rows[seq] = (*row[:7], row[7] + count, *row[8:])
    facts.generation = (version, writes, changes)


def admits(row: CachedRow, namespace: str, as_of: str | None, kinds: Sequence[str] | None) -> bool:
    """Whether the SQL filter ``+n.namespace = ? AND {mask_sql(as_of)} [AND n.kind IN
    kinds]`` keeps ``row``: its twin in Python, for a plain ``as_of`` or None."""
    if row[9] != namespace or row[10] != 0:
        return False
    if kinds and row[1] not in kinds:
        return False
    valid_until = row[4]
    if as_of is None:
        return valid_until is None
    return row[3] <= as_of and (valid_until is None or valid_until > as_of)


# ---- What search reads again: texts' words, term postings (issue 21, round 5) ----

# At most MAX_TEXTS analyses and MAX_POSTING_ROWS rows in posting lists (the first kept
# dropped first), and MAX_VOCABULARY distinct words (emptied past it; the analyses
# kept hold their words on): 10.7 MB of words and 2.6 MB of postings after the peers
# workload at 100k nodes (bench/results.md, "Search's text and postings kept").
MAX_TEXTS = MAX_ROWS
MAX_VOCABULARY = 4 * MAX_ROWS
MAX_POSTING_ROWS = 2 * MAX_ROWS
# Rows in the newest lists of common terms' expressions (SearchFacts.newest): ~1.3 MB.
MAX_NEWEST_ROWS = MAX_POSTING_ROWS // 2
# Codes of where a root starts a word in a text (SearchFacts.starts).
MAX_START_CODES = 2 * MAX_ROWS

Words = tuple[str, ...]
# A text's words in order, its distinct words less the stop words, and whether it is
# printable ASCII (text_analysis.py).
TextAnalysis = tuple[Words, Words, bool]


class SearchFacts:
    """What recall/search.py reads again and again, kept for a generation:

    * ``texts``: what relevance.score_rows reads from a row's text, by seq (a seq holds
      one text for a generation), analysed once instead of on every recall. Each word
      is the vocabulary's one copy of it: an analysis holds references (~8 B a word)
      and the candidates' words compare by identity when specificity counts them.
    * ``postings``: a key term's rows (at most search.COMMON_DF), or None where it has
      more (a common term). They depend on the store's text only, not on the
      namespace, mask or kinds of a search.
    * ``newest``: by MATCH expression of common terms, the newest rows it matches
      (search.NEWEST_DEPTH at most, newest first; fewer: all of them), before the
      namespace, mask and kinds, which search applies to them (issue 21, round 6).
    * ``starts``: by root of a key term, by seq, where the root starts a word of the
      text (text_analysis._starts_code: an int), for common terms and proximity (issue 21,
      round 7). Ints in dicts of ints: the GC never tracks the tables by seq.
    """

    __slots__ = (
        "newest",
        "newest_rows",
        "posting_rows",
        "postings",
        "start_codes",
        "starts",
        "texts",
        "vocabulary",
    )

    def __init__(self) -> None:
        self.texts: Recent[int, TextAnalysis] = Recent()  # never marked: first in, first out
        self.vocabulary: dict[str, str] = {}
        self.postings: dict[str, tuple[int, ...] | None] = {}
        self.posting_rows = 0
        self.newest: dict[str, tuple[int, ...]] = {}
        self.newest_rows = 0
        self.starts: dict[str, dict[int, int]] = {}
        self.start_codes = 0

    def clear(self) -> None:
        self.texts.clear()
        self.vocabulary.clear()
        self.postings.clear()
        self.posting_rows = 0
        self.newest.clear()
        self.newest_rows = 0
        self.starts.clear()
        self.start_codes = 0

    def starts_of(self, root: str) -> dict[int, int]:
        """The codes kept for ``root``, by seq (the caller keeps new ones in it)."""
        table = self.starts.get(root)
        if table is None:
            table = self.starts[root] = {}
        return table

    def kept_starts(self, added: int) -> None:
        """After ``added`` codes were kept: past MAX_START_CODES, the roots first kept are
        dropped with their codes, down to 7/8 of it."""
        self.start_codes += added
        if self.start_codes > MAX_START_CODES:
            starts, left = self.starts, _below(MAX_START_CODES)
            for root in list(starts):
                if self.start_codes <= left:
                    break
                self.start_codes -= len(starts.pop(root))

    def interned(self, words: list[str]) -> Words:
        vocabulary = self.vocabulary
        if len(vocabulary) > MAX_VOCABULARY:
            vocabulary.clear()
        return tuple(map(vocabulary.setdefault, words, words))

    # Past a cap the first kept are dropped in a batch, down to 7/8 of it: dropped one
    # at a time, each ``next(iter(dict))`` steps over every slot freed before it until
    # the dict is resized (~15 us an insert at 32k entries, ~2 ms a recall).

    def keep_text(self, seq: int, analysis: TextAnalysis) -> None:
        self.texts.keep(seq, analysis, MAX_TEXTS)

    def keep_postings(self, term: str, rows: tuple[int, ...] | None) -> None:
        self.posting_rows = _keep_rows(
            self.postings, term, rows, self.posting_rows, MAX_POSTING_ROWS
        )

    def keep_newest(self, expression: str, rows: tuple[int, ...]) -> None:
        self.newest_rows = _keep_rows(
            self.newest, expression, rows, self.newest_rows, MAX_NEWEST_ROWS
        )


def _below(cap: int) -> int:
    return cap - cap // 8


Rows = TypeVar("Rows", bound=tuple[int, ...] | None)


def _keep_rows(table: dict[str, Rows], key: str, rows: Rows, held: int, max_rows: int) -> int:
    """Keep ``rows`` under ``key`` in ``table`` that held ``held`` rows; past ``max_rows``
    rows or MAX_NODES keys, the first kept are dropped down to 7/8 of both. The rows
    held after."""
    held += _count(rows)
    table[key] = rows
    if held > max_rows or len(table) > MAX_NODES:
        rows_left, keys_left = _below(max_rows), _below(MAX_NODES)
        for old in list(table):
            if held <= rows_left and len(table) <= keys_left:
                break
            held -= _count(table.pop(old))
    return held


def _count(rows: tuple[int, ...] | None) -> int:
    return 0 if rows is None else len(rows)


# ------------------------------------- short IDs and rivals of a recall's items (issue 21)


def short_ids(storage: Storage, facts: NodeFacts | None, ids: Sequence[str]) -> dict[str, str]:
    """nodes.short_ids of ``ids``, those ``facts`` holds not read again. A short ID
    depends only on which nodes the store holds (the random parts next to its own, in
    every namespace): only an insert or a purge changes one, and either starts a new
    generation. A recall shows ~20 of them, ~0.1-0.3 ms of index seeks."""
    if facts is None:
        return nodes.short_ids(storage, ids)
    known, unknown = held(facts.short, ids)
    if unknown:
        found = nodes.short_ids(storage, unknown)
        for node_id, short in found.items():
            keep_fact(facts.short, node_id, short)
        known.update(found)
    return known


def rivals_of(
    conn: Connection, facts: NodeFacts | None, ids: Sequence[str], mask: tuple[str, list[str]]
) -> dict[str, tuple[str, ...]]:
    """conflicts.rivals of ``ids`` (rivals that ``mask`` admits), asked only for the
    nodes that supersede any node: a rival supersedes what the node supersedes. Whether
    a node supersedes any depends on its edges alone, so ``facts`` keeps it for the
    generation; which rivals the mask admits changes with the time, so those few nodes'
    rivals are read on every recall. Nearly every node supersedes nothing: a warm recall
    reads no rival at all (two statements a recall, ~0.1-0.25 ms at 100k nodes)."""
    if facts is None:
        return conflicts.rivals(conn, ids, mask)
    known, unknown = held(facts.supersedes, ids)
    if unknown:
        seq_of = facts.ids.get
        id_of = {seq: node_id for node_id in unknown if (seq := seq_of(node_id))}
        if id_of:
            successors = {id_of[seq] for seq in graph_reads_of(conn).superseding(list(id_of))}
            for node_id in id_of.values():
                known[node_id] = node_id in successors
                keep_fact(facts.supersedes, node_id, known[node_id])
    # Unknown (no cached row, so no seq): asked as before.
    maybe = [node_id for node_id in ids if known.get(node_id, True)]
    return conflicts.rivals(conn, maybe, mask) if maybe else {}
