"""Search: the nodes whose text matches the query's key terms, each with its relevance.

One pipeline for every engine: the engine's text index (storage/text_index.py, FTS5 on
SQLite, term tables on PostgreSQL) finds rows; which terms, what limits, which rows are
read and how they score is decided here, so that the same memories rank the same on
both engines (tests/recall/test_search_postgres.py).

Rules a reader must not break:
* User text is data, never query syntax: it reaches the index as terms, which each
  engine quotes or binds.
* Every node row read here passes the namespace filter and the temporal mask
  (recall/mask.py; the timeline asks for none, ``apply_mask=False``, and still never
  sees a tombstoned node). Where a scan picks the newest rows up to a LIMIT, the filters
  are inside the scan, so that another namespace's or a masked node's rows never crowd
  out the ones recall may show; the newest rows the node cache keeps unfiltered
  (:func:`_newest_held`) decide only when PRE_LIMIT of them pass the filters or none
  older exists, else that scan runs.
* Cost is bounded by the rare terms, never by the corpus (see :func:`search`).

How a hit's text is scored is recall/relevance.py; this module finds the hits and reads
their rows.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from ..storage.dbapi import Connection
from ..storage.text_index import Filters, TextIndex, text_index_of
from .candidates import NODE_COLUMNS, Candidate, NodeRow, cached_rows
from .irregular import past_forms
from .mask import KnownAt, mask_sql
from .node_cache import NodeFacts, SearchFacts
from .relevance import date_spans, inverse_document_frequency, ranked_by_keys, score_rows
from .terms import content_terms, query_terms

# A key term found in more rows than this is common: it only scores candidates that the
# rare terms found (see search); PRE_LIMIT candidates are read and scored in full.
COMMON_DF = 500
PRE_LIMIT = 150
# How many of the newest rows a common terms' expression matches the node cache keeps
# (see _newest_held): room for a mask that drops some of the PRE_LIMIT newest.
NEWEST_DEPTH = 2 * PRE_LIMIT
PREFIX_LIMIT = 50
PREFIX_SCAN = 2000
PREFIX_WEIGHT = 0.3


def search(
    conn: Connection,
    namespace: str,
    query: str,
    *,
    as_of: str | KnownAt | None,
    kinds: Sequence[str] | None,
    want: int,
    apply_mask: bool = True,
    facts: NodeFacts | None = None,
) -> dict[str, Candidate]:
    """Find and score the nodes that match the query's key terms. With ``facts``
    (recall/node_cache.py), the key terms' postings, an all-common query's newest rows,
    the candidates' rows and their texts' words are read from it where it holds them.

    The three stages of concepts.md (phrase, all terms, any term) are folded into one
    score instead of being tried as tiers: a node's relevance is the summed IDF of the
    key terms it contains, times the share of key terms it contains (so a node with all
    of them outranks one with a single rare word, as the all-terms stage intended),
    times BM25's length normalisation, times PHRASE_BOOST when it holds the query as a
    phrase. Relevance is normalised so the best hit has 1.0.

    Cost is bounded by the rare terms, never by the corpus: each key term's posting list
    is read up to COMMON_DF rows. Rare terms (at most COMMON_DF rows) propose the
    candidates; a common term only adds to the score of candidates that contain it (an
    ``AND`` restricted to them), so a question full of frequent words never makes the
    index score every row. When no key term is rare, the newest rows holding all (else
    any) of them are the candidates. The prefix stage (``term*``) still runs when the
    exact terms found fewer than ``want`` nodes; its hits score at PREFIX_WEIGHT.
    """
    terms = query_terms(query)
    keys = content_terms(terms)
    if not keys:
        return {}
    index = text_index_of(conn)
    filters = _filters(index, as_of, kinds, apply_mask)
    # The node cache's rows and newest matches stand for a mask of one moment only.
    held = facts if facts is not None and apply_mask and not isinstance(as_of, KnownAt) else None
    total, found_rows = _postings(index, keys, facts.search if facts is not None else None)
    postings, common, idf = weigh_keys(keys, found_rows, total)
    if postings:
        members = postings
    elif common:
        newest = None
        if held is not None and not isinstance(as_of, KnownAt):
            newest = _newest_held(conn, index, held, common, namespace, as_of, kinds)
        if newest is None:
            newest = index.newest_matching(common, namespace, filters, PRE_LIMIT)
        members = {"": newest}
    else:
        members = {}
    found = _read_and_score(
        conn,
        index,
        namespace,
        members,
        common,
        idf,
        len(keys),
        terms,
        filters,
        as_of=as_of,
        kinds=kinds,
        spans=date_spans(query),
        facts=facts,
        held=held,
    )
    if len(found) < want:
        # Not for common terms: FTS5 merges the posting lists of every word a prefix
        # matches before it returns a row, so "log"* costs ~0.5 s at 1M nodes, and the
        # exact word already brought plenty of rows.
        rare = [key for key in keys if key not in common]
        _prefix_stage(
            conn, index, namespace, rare, found, filters, as_of=as_of, kinds=kinds, held=held
        )
    return found


def _postings(
    index: TextIndex, keys: Sequence[str], held: SearchFacts | None
) -> tuple[int, list[Collection[int] | None]]:
    """The corpus size, and each key term's rows up to COMMON_DF (None: more, a common
    term), the term looked up with the past forms of an irregular verb (recall/
    irregular.py) as one key; with ``held`` (the node cache's), read from it where it
    holds the term. Terms recur between queries (~60 % of the peers workload's key
    terms at 100k), and a common term's COMMON_DF + 1 rows cost ~0.2 ms to read there."""
    forms = [(key, *past_forms(key)) for key in keys]
    if held is None:
        return index.postings(forms, COMMON_DF + 1)
    known: dict[str, Collection[int] | None] = {
        key: held.postings[key] for key in keys if key in held.postings
    }
    missing = [key_forms for key_forms in forms if key_forms[0] not in known]
    total, read = index.postings(missing, COMMON_DF + 1)
    for (key, *_), rows in zip(missing, read, strict=True):
        kept = rows if rows is None or isinstance(rows, tuple) else tuple(rows)
        held.keep_postings(key, kept)
        known[key] = kept
    return total, [known[key] for key in keys]


def weigh_keys(
    keys: Sequence[str], found_rows: Sequence[Collection[int] | None], total: int
) -> tuple[dict[str, Collection[int]], list[str], dict[str, float]]:
    """Each key term's posting rows (None: more than COMMON_DF, so common) sorted into
    the rare terms' postings, the common terms, and every term's IDF; a common term's
    IDF is that of a term in a tenth of the store (its list was not read to the end)."""
    postings: dict[str, Collection[int]] = {}
    common: list[str] = []
    for key, rows in zip(keys, found_rows, strict=True):
        if rows is None:
            common.append(key)
        elif rows:
            postings[key] = rows
    idf = {key: inverse_document_frequency(total, len(rows)) for key, rows in postings.items()}
    idf.update(
        {key: inverse_document_frequency(total, max(COMMON_DF + 1, total // 10)) for key in common}
    )
    return postings, common, idf


def _newest_held(
    conn: Connection,
    index: TextIndex,
    facts: NodeFacts,
    common: list[str],
    namespace: str,
    as_of: str | None,
    kinds: Sequence[str] | None,
) -> set[int] | None:
    """What the index's newest_matching returns, with the newest rows each expression
    (all of the terms, any of them) matches kept in ``facts`` for the generation
    (SearchFacts.newest: FTS5 found them in 0.2-1.5 ms at 100k nodes, every recall) and
    filtered here (node_cache.admits, the mask's twin: the mask's time moves from one
    recall to the next). None when the rows kept cannot tell: fewer than PRE_LIMIT of
    them pass the filters and older rows (not kept) may; the SQL then decides."""
    held = facts.search
    for every in (True, False):
        expression = (" AND " if every else " OR ").join(common)
        newest = held.newest.get(expression)
        if newest is None:
            newest = index.newest_unfiltered(common, every, NEWEST_DEPTH)
            held.keep_newest(expression, newest)
        chosen: list[int] = []
        for start in range(0, len(newest), PRE_LIMIT):
            chunk = newest[start : start + PRE_LIMIT]
            admitted = cached_rows(conn, facts, "seq", chunk, namespace, as_of, kinds)
            chosen += sorted([row[8] for row in admitted], reverse=True)
            if len(chosen) >= PRE_LIMIT:
                break
        if len(chosen) < PRE_LIMIT and len(newest) >= NEWEST_DEPTH:
            return None
        if chosen or len(common) == 1:
            return set(chosen[:PRE_LIMIT])
    return set()


def _filters(
    index: TextIndex, as_of: str | KnownAt | None, kinds: Sequence[str] | None, apply_mask: bool
) -> Filters:
    mask, params = mask_sql(as_of) if apply_mask else ("n.tombstoned = 0", [])
    return index.filters(mask, params, kinds)


def _read_rows(
    conn: Connection,
    index: TextIndex,
    seqs: Sequence[int],
    namespace: str,
    filters: Filters,
    as_of: str | KnownAt | None,
    kinds: Sequence[str] | None,
    held: NodeFacts | None,
) -> Iterable[NodeRow]:
    """The rows of ``seqs`` that the namespace, mask and kinds admit, in seq order; from
    the node cache where it holds them."""
    if held is not None and not isinstance(as_of, KnownAt):
        return cached_rows(conn, held, "seq", seqs, namespace, as_of, kinds)
    return index.read_rows(NODE_COLUMNS, seqs, namespace, filters)


def _read_and_score(
    conn: Connection,
    index: TextIndex,
    namespace: str,
    members: Mapping[str, Collection[int]],
    common: list[str],
    idf: dict[str, float],
    key_count: int,
    terms: list[str],
    filters: Filters,
    *,
    as_of: str | KnownAt | None,
    kinds: Sequence[str] | None,
    spans: Sequence[tuple[str, str]] = (),
    facts: NodeFacts | None = None,
    held: NodeFacts | None = None,
) -> dict[str, Candidate]:
    """Read and score the candidates. ``members`` maps each rare key term to the rows
    holding it (key "" for candidates that hold no rare term); only the PRE_LIMIT best
    by their rare terms are read (masked, in the namespace, of the kinds asked for) and
    scored by their text (recall/relevance.py), which is where common terms are looked
    for."""
    ordered, scores, keys_of = ranked_by_keys(members, idf, key_count)
    if not ordered:
        return {}
    # The first score and the rare keys of each row read (term_weights).
    first: dict[int, float] = {}
    matched: dict[int, list[str]] = {}
    rows: list[NodeRow] = []
    for start in range(0, len(ordered), PRE_LIMIT):
        if len(rows) >= PRE_LIMIT:
            break
        chunk = ordered[start : start + PRE_LIMIT]
        first.update(zip(chunk, scores[start : start + PRE_LIMIT], strict=True))
        matched.update(zip(chunk, keys_of[start : start + PRE_LIMIT], strict=True))
        rows += _read_rows(conn, index, chunk, namespace, filters, as_of, kinds, held)
    if not rows:
        return {}
    rows.sort(key=lambda row: -first[row[8]])
    rows = rows[:PRE_LIMIT]
    texts = facts.search if facts is not None else None
    return score_rows(rows, matched, common, idf, key_count, terms, spans, texts=texts)


def _prefix_stage(
    conn: Connection,
    index: TextIndex,
    namespace: str,
    keys: list[str],
    found: dict[str, Candidate],
    filters: Filters,
    *,
    as_of: str | KnownAt | None,
    kinds: Sequence[str] | None,
    held: NodeFacts | None = None,
) -> None:
    """``term*`` for every key term of three letters or more, ranked by FTS5's bm25()
    among the newest PREFIX_SCAN rows the prefixes match (all of them, below that)."""
    prefixes = [key for key in keys if len(key) >= 3]
    if not prefixes:
        return
    # Bounded: only the best are read from mem_nodes and masked (more when the mask drops
    # too many), not every match. Ties: newest first.
    ranked = index.prefix_ranked(prefixes, namespace, filters, PREFIX_SCAN)
    ranked.sort(key=lambda hit: (hit[1], -hit[0]))
    rank_of = dict(ranked)
    rows: list[Any] = []
    start, step = 0, 2 * PREFIX_LIMIT
    while start < len(ranked) and len(rows) < PREFIX_LIMIT:
        chunk = [seq for seq, _ in ranked[start : start + step]]
        start, step = start + step, step * 4
        read = _read_rows(conn, index, chunk, namespace, filters, as_of, kinds, held)
        rows += [(*row, rank_of[row[8]]) for row in read]
    rows.sort(key=lambda row: (row[9], -row[8]))
    new_rows = [row for row in rows[:PREFIX_LIMIT] if row[0] not in found]
    if not new_rows:
        return
    best = max(-row[9] for row in new_rows) or 1.0
    for row in new_rows:
        relevance = PREFIX_WEIGHT * max(-row[9], 0.0) / best if best > 0 else PREFIX_WEIGHT
        node: NodeRow = tuple(row[:9])
        found[row[0]] = Candidate(*node, relevance=max(relevance, 1e-6), via="search")
