"""Search: the nodes whose text matches the query's key terms, each with its relevance.

Rules a reader must not break:
* User text is data, never FTS5 syntax: every term is quoted (:func:`quote`) before MATCH.
* Every node row read here passes the namespace filter and the temporal mask
  (recall/mask.py; the timeline asks for none, ``apply_mask=False``, and still never
  sees a tombstoned node). Where an FTS5 scan picks the newest rows up to a LIMIT,
  the filters are inside the scan, so that another namespace's or a masked node's
  rows never crowd out the ones recall may show; the newest rows the node cache keeps
  unfiltered (:func:`_newest_held`) decide only when PRE_LIMIT of them pass the
  filters or none older exists, else that scan runs.
* Cost is bounded by the rare terms, never by the corpus (see :func:`search`).

How a hit's text is scored is recall/relevance.py; this module finds the hits and reads
their rows.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from ..storage.engine import Connection
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


def quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def term_expression(key: str) -> str:
    """The MATCH expression of one key term: the term, or with the past forms of an
    irregular verb (recall/irregular.py), any of them."""
    return " OR ".join(quote(form) for form in (key, *past_forms(key)))


def fts_stages(text: str) -> list[str]:
    """The MATCH expressions of the stages, in order: exact phrase, every key term as a
    prefix, any key term. :func:`search` runs them as term lookups (see there)."""
    terms = query_terms(text)
    if not terms:
        return []
    keys = content_terms(terms)
    stages = [quote(" ".join(terms))]
    stages.append(" ".join(quote(t) + "*" for t in keys))
    if len(keys) > 1:
        stages.append(" OR ".join(quote(t) for t in keys))
    return list(dict.fromkeys(stages))


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
    ``AND`` restricted to them), so a question full of frequent words never makes FTS5
    score every row. When no key term is rare, the newest rows holding all (else any) of
    them are the candidates. The prefix stage (``term*``) still runs when the exact terms
    found fewer than ``want`` nodes; its hits score at PREFIX_WEIGHT.
    """
    terms = query_terms(query)
    keys = content_terms(terms)
    if not keys:
        return {}
    total = max(int(conn.execute("SELECT max(seq) FROM mem_nodes").fetchone()[0] or 0), 1)
    found_rows = _postings(conn, keys, facts.search if facts is not None else None)
    postings, common, idf = weigh_keys(keys, found_rows, total)
    if postings:
        members = postings
    elif common:
        newest = None
        if facts is not None and apply_mask and not isinstance(as_of, KnownAt):
            newest = _newest_held(conn, facts, common, namespace, as_of, kinds)
        if newest is None:
            newest = _newest_common(conn, common, namespace, _filters(as_of, kinds, apply_mask))
        members = {"": newest}
    else:
        members = {}
    found = _read_and_score(
        conn,
        namespace,
        members,
        common,
        idf,
        len(keys),
        terms,
        as_of=as_of,
        kinds=kinds,
        apply_mask=apply_mask,
        spans=date_spans(query),
        facts=facts,
    )
    if len(found) < want:
        # Not for common terms: FTS5 merges the posting lists of every word a prefix
        # matches before it returns a row, so "log"* costs ~0.5 s at 1M nodes, and the
        # exact word already brought plenty of rows.
        rare = [key for key in keys if key not in common]
        _prefix_stage(
            conn,
            namespace,
            rare,
            found,
            as_of=as_of,
            kinds=kinds,
            apply_mask=apply_mask,
            facts=facts,
        )
    return found


def _postings(
    conn: Connection, keys: Sequence[str], held: SearchFacts | None
) -> list[tuple[int, ...] | None]:
    """Each key term's rows, up to COMMON_DF (None: more, a common term); with ``held``
    (the node cache's), read from it where it holds the term. Terms recur between
    queries (~60 % of the peers workload's key terms at 100k), and a common term's
    COMMON_DF + 1 rows cost ~0.2 ms to read there."""
    found_rows: list[tuple[int, ...] | None] = []
    for key in keys:
        if held is not None and key in held.postings:
            found_rows.append(held.postings[key])
            continue
        rows = conn.execute(
            "SELECT rowid FROM mem_fts WHERE mem_fts MATCH ? LIMIT ?",
            (term_expression(key), COMMON_DF + 1),
        ).fetchall()
        # A tuple (FTS5 returns a row once), not a set: the cyclic GC stops tracking
        # a tuple of ints, and walks every set at each full collection.
        found = None if len(rows) > COMMON_DF else tuple([row[0] for row in rows])
        if held is not None:
            held.keep_postings(key, found)
        found_rows.append(found)
    return found_rows


def weigh_keys(
    keys: Sequence[str], found_rows: Sequence[Collection[int] | None], total: int
) -> tuple[dict[str, Collection[int]], list[str], dict[str, float]]:
    """Each key term's posting rows (None: more than COMMON_DF, so common) sorted into
    the rare terms' postings, the common terms, and every term's IDF; a common term's
    IDF is that of a term in a tenth of the store (its list was not read to the end).
    Both engines' searches share it."""
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


def _newest_common(
    conn: Connection,
    common: list[str],
    namespace: str,
    filters: tuple[str, list[str]],
) -> set[int]:
    """Every key term is common: the newest rows that hold all of them (else any), among
    the rows the namespace, mask and kinds admit (filtered here, not after the LIMIT, so
    another namespace's newer rows cannot crowd this one's out)."""
    mask, mask_params = filters
    rows: list[tuple[int]] = []
    for joiner in (" AND ", " OR "):
        rows = conn.execute(
            "SELECT mem_fts.rowid FROM mem_fts JOIN mem_nodes n ON n.seq = mem_fts.rowid "
            f"WHERE mem_fts MATCH ? AND n.namespace = ? AND {mask} "
            "ORDER BY mem_fts.rowid DESC LIMIT ?",
            [joiner.join(quote(key) for key in common), namespace, *mask_params, PRE_LIMIT],
        ).fetchall()
        if rows or len(common) == 1:
            break
    return {row[0] for row in rows}


def _newest_held(
    conn: Connection,
    facts: NodeFacts,
    common: list[str],
    namespace: str,
    as_of: str | None,
    kinds: Sequence[str] | None,
) -> set[int] | None:
    """What :func:`_newest_common` returns, with the newest rows each expression
    matches kept in ``facts`` for the generation (SearchFacts.newest: FTS5 found them
    in 0.2-1.5 ms at 100k nodes, every recall) and filtered here (node_cache.admits,
    the mask's twin: the mask's time moves from one recall to the next). None when the
    rows kept cannot tell: fewer than PRE_LIMIT of them pass the filters and older rows
    (not kept) may; the SQL then decides."""
    held = facts.search
    for joiner in (" AND ", " OR "):
        expression = joiner.join(quote(key) for key in common)
        newest = held.newest.get(expression)
        if newest is None:
            newest = tuple(
                [
                    row[0]
                    for row in conn.execute(
                        "SELECT rowid FROM mem_fts WHERE mem_fts MATCH ? "
                        "ORDER BY rowid DESC LIMIT ?",
                        (expression, NEWEST_DEPTH),
                    )
                ]
            )
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
    as_of: str | KnownAt | None, kinds: Sequence[str] | None, apply_mask: bool
) -> tuple[str, list[str]]:
    mask, params = mask_sql(as_of) if apply_mask else ("n.tombstoned = 0", [])
    if kinds:
        mask += f" AND n.kind IN ({','.join('?' * len(kinds))})"
        params = [*params, *kinds]
    return mask, params


def _read_and_score(
    conn: Connection,
    namespace: str,
    members: Mapping[str, Collection[int]],
    common: list[str],
    idf: dict[str, float],
    key_count: int,
    terms: list[str],
    *,
    as_of: str | KnownAt | None,
    kinds: Sequence[str] | None,
    apply_mask: bool,
    spans: Sequence[tuple[str, str]] = (),
    facts: NodeFacts | None = None,
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
    mask, mask_params = _filters(as_of, kinds, apply_mask)
    rows: list[NodeRow] = []
    for start in range(0, len(ordered), PRE_LIMIT):
        if len(rows) >= PRE_LIMIT:
            break
        chunk = ordered[start : start + PRE_LIMIT]
        first.update(zip(chunk, scores[start : start + PRE_LIMIT], strict=True))
        matched.update(zip(chunk, keys_of[start : start + PRE_LIMIT], strict=True))
        if facts is not None and apply_mask and not isinstance(as_of, KnownAt):
            rows += cached_rows(conn, facts, "seq", chunk, namespace, as_of, kinds)
            continue
        rows += conn.execute(
            f"SELECT {NODE_COLUMNS} FROM mem_nodes n WHERE n.seq IN "
            f"({','.join('?' * len(chunk))}) AND +n.namespace = ? AND {mask}",
            [*chunk, namespace, *mask_params],
        ).fetchall()
    if not rows:
        return {}
    rows.sort(key=lambda row: -first[row[8]])
    rows = rows[:PRE_LIMIT]
    texts = facts.search if facts is not None else None
    return score_rows(rows, matched, common, idf, key_count, terms, spans, texts=texts)


def _prefix_stage(
    conn: Connection,
    namespace: str,
    keys: list[str],
    found: dict[str, Candidate],
    *,
    as_of: str | KnownAt | None,
    kinds: Sequence[str] | None,
    apply_mask: bool,
    facts: NodeFacts | None = None,
) -> None:
    """``term*`` for every key term of three letters or more, ranked by bm25() among the
    newest PREFIX_SCAN rows the prefixes match (all of them, below that)."""
    prefixes = [key for key in keys if len(key) >= 3]
    if not prefixes:
        return
    mask, mask_params = _filters(as_of, kinds, apply_mask)
    expression = " OR ".join(quote(key) + "*" for key in prefixes)
    # Bounded: a prefix matches every word it starts ("own"* is "owner" in 9 000 rows at
    # 1M nodes) and bm25() over all of them cost ~50 ms; the newest PREFIX_SCAN are
    # scored instead. Then only the best are read from mem_nodes and masked (more when
    # the mask drops too many), not every match. Ties: newest first.
    # The namespace, mask and kinds filter inside the scan, so the newest PREFIX_SCAN
    # are this namespace's and not crowded out by another's.
    ranked = conn.execute(
        "SELECT mem_fts.rowid, bm25(mem_fts) FROM mem_fts "
        "JOIN mem_nodes n ON n.seq = mem_fts.rowid "
        f"WHERE mem_fts MATCH ? AND n.namespace = ? AND {mask} "
        "ORDER BY mem_fts.rowid DESC LIMIT ?",
        [expression, namespace, *mask_params, PREFIX_SCAN],
    ).fetchall()
    ranked.sort(key=lambda hit: (hit[1], -hit[0]))
    rank_of = dict(ranked)
    rows: list[Any] = []
    start, step = 0, 2 * PREFIX_LIMIT
    while start < len(ranked) and len(rows) < PREFIX_LIMIT:
        chunk = [seq for seq, _ in ranked[start : start + step]]
        start, step = start + step, step * 4
        if facts is not None and apply_mask and not isinstance(as_of, KnownAt):
            read: Iterable[NodeRow] = cached_rows(
                conn, facts, "seq", chunk, namespace, as_of, kinds
            )
        else:
            read = conn.execute(
                f"SELECT {NODE_COLUMNS} FROM mem_nodes n WHERE n.seq IN "
                f"({','.join('?' * len(chunk))}) AND +n.namespace = ? AND {mask}",
                [*chunk, namespace, *mask_params],
            )
        rows += [(*row, rank_of[row[8]]) for row in read]
    rows.sort(key=lambda row: (row[9], -row[8]))
    rows = rows[:PREFIX_LIMIT]
    new_rows = [row for row in rows if row[0] not in found]
    if not new_rows:
        return
    best = max(-row[9] for row in new_rows) or 1.0
    for row in new_rows:
        relevance = PREFIX_WEIGHT * max(-row[9], 0.0) / best if best > 0 else PREFIX_WEIGHT
        node: NodeRow = tuple(row[:9])
        found[row[0]] = Candidate(*node, relevance=max(relevance, 1e-6), via="search")
