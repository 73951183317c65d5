"""Search on the PostgreSQL engine: recall/search.py's rules over the term tables of
storage/postgres_search.py instead of FTS5.

The same data ranks the same on both engines, because everything FTS5 gives search.py
is rebuilt here from the same terms (storage/tokenizer.py, FTS5's tokenizer in Python):

* a key term's posting list (read up to COMMON_DF + 1 rows: rare or common),
* the newest rows holding all (else any) of the common terms, filtered inside the scan,
* the prefix stage's BM25, computed in SQL as FTS5's bm25() computes it: per prefix
  phrase, IDF = ln((N - hits + 0.5) / (hits + 0.5)) (1e-6 when not positive), times
  f (k1 + 1) / (f + k1 (1 - b + b D / avgdl)), f the phrase's occurrences in the row,
  D the row's length in terms, N and avgdl over every indexed row, summed over the
  phrases in their order, negated (lower is better, as bm25() returns).

Everything after that (relevance, BM25 length normalisation of the exact stage, phrase
boost, specificity, proximity, dates) is recall/relevance.py, shared by both engines.

Rules a reader must not break: those of search.py (user text is data: terms are bound
parameters here; every node row read passes the namespace filter and the temporal mask,
inside any scan that stops at a LIMIT; cost bounded by the rare terms).

Known difference: a key term that FTS5 cuts into several tokens (it holds one of 21 code
points of New Tai Lue or Vedic Extensions that Python counts as letters and FTS5 does
not) is a phrase on SQLite and all of its tokens, anywhere in the row, here.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ..storage.engine import Connection
from ..storage.postgres import translate
from ..storage.postgres.search import totals
from ..storage.tokenizer import tokens
from .candidates import NODE_COLUMNS, Candidate, NodeRow
from .irregular import past_forms
from .mask import KnownAt, mask_sql
from .relevance import date_spans, ranked_by_keys, score_rows
from .search import COMMON_DF, PRE_LIMIT, PREFIX_LIMIT, PREFIX_SCAN, PREFIX_WEIGHT, weigh_keys
from .terms import content_terms, query_terms

# FTS5's bm25() constants (fts5_aux.c).
FTS5_K1 = 1.2
FTS5_B = 0.75


def search(
    conn: Connection,
    namespace: str,
    query: str,
    *,
    as_of: str | KnownAt | None,
    kinds: Sequence[str] | None,
    want: int,
    apply_mask: bool = True,
) -> dict[str, Candidate]:
    """search.search on PostgreSQL: the same candidates, the same relevance."""
    terms = query_terms(query)
    keys = content_terms(terms)
    if not keys:
        return {}
    filters = _filters(as_of, kinds, apply_mask)
    total, found_rows = _postings(conn, keys, COMMON_DF + 1)
    postings, common, idf = weigh_keys(keys, found_rows, total)
    if postings:
        members = postings
    elif common:
        members = {"": _newest_common(conn, common, namespace, filters)}
    else:
        members = {}
    found = _score(conn, namespace, members, common, idf, len(keys), terms, filters, query)
    if len(found) < want:
        rare = [key for key in keys if key not in common]
        _prefix_stage(conn, namespace, rare, found, filters)
    return found


def _postings(conn: Connection, keys: list[str], limit: int) -> tuple[int, list[set[int] | None]]:
    """The largest seq (search.py's corpus size for IDF), and for each key the rows that
    hold it, or one of its past forms when it is an irregular verb (search.py's
    term_expression, one key as on SQLite), None when ``limit`` or more do. One round
    trip: a LIMIT scan of the primary key per form, their union counted (when no form
    reaches the limit, the union is complete; when one does, the key is common)."""
    forms = [[tokens(form) for form in (key, *past_forms(key))] for key in keys]
    owners: list[int] = []
    terms: list[str] = []
    for index, key_forms in enumerate(forms, 1):
        for phrase in key_forms:
            if len(phrase) == 1:
                owners.append(index)
                terms.append(phrase[0])
    rows = conn.execute(
        "SELECT (SELECT max(seq) FROM mem_nodes), k.i, s.n, s.seqs "
        "FROM generate_series(1, ?) AS k (i) CROSS JOIN LATERAL "
        "(SELECT count(*) AS n, CASE WHEN count(*) < ? THEN array_agg(seq) END AS seqs "
        "FROM (SELECT DISTINCT p.seq FROM unnest(?::integer[], ?::text[]) AS f (i, term) "
        "CROSS JOIN LATERAL (SELECT t.seq FROM mem_search_terms t WHERE t.term = f.term "
        "LIMIT ?) AS p WHERE f.i = k.i) AS u) AS s ORDER BY k.i",
        (len(keys), limit, owners, terms, limit),
    ).fetchall()
    total = max(int(rows[0][0] or 0), 1)
    found: list[set[int] | None] = []
    for key_forms, (_, _, count, seqs) in zip(forms, rows, strict=True):
        if any(len(phrase) > 1 for phrase in key_forms):  # see the module's known difference
            found.append(_all_terms(conn, key_forms[0], limit))
        else:
            found.append(set(seqs or ()) if count < limit else None)
    return total, found


def _all_terms(conn: Connection, phrase: list[str], limit: int) -> set[int] | None:
    """Rows holding every term of a key that FTS5 cuts in several (see the module)."""
    distinct = list(dict.fromkeys(phrase))
    rows = conn.execute(
        "SELECT seq FROM mem_search_terms WHERE term = ANY (?::text[]) GROUP BY seq "
        "HAVING count(*) = ? LIMIT ?",
        (distinct, len(distinct), limit),
    ).fetchall()
    return {row[0] for row in rows} if len(rows) < limit else None


def _filters(
    as_of: str | KnownAt | None, kinds: Sequence[str] | None, apply_mask: bool
) -> tuple[str, list[Any]]:
    mask, mask_params = mask_sql(as_of) if apply_mask else ("n.tombstoned = 0", [])
    params: list[Any] = list(mask_params)
    if kinds:
        mask += " AND n.kind = ANY (?::text[])"
        params.append(list(kinds))
    return mask, params


def _holds(term_count: int, alias: str = "t") -> str:
    """SQL: row ``alias``.seq holds each of ``term_count`` terms (one ``?`` each), probed
    in order, the first failure ending the row's test. ``OFFSET 0`` keeps each EXISTS a
    probe: turned into joins, six of them cost ~20 ms of planning alone."""
    return " AND ".join(
        "EXISTS (SELECT 1 FROM mem_search_terms h WHERE h.term = ? "
        f"AND h.seq = {alias}.seq OFFSET 0)"
        for _ in range(term_count)
    )


def _newest_common(
    conn: Connection, common: list[str], namespace: str, filters: tuple[str, list[Any]]
) -> set[int]:
    """Every key term is common: the newest rows that hold all of them (else any), among
    the rows the namespace, mask and kinds admit (filtered in the scan, before the LIMIT).
    All of them: the GIN index of each row's terms intersects their posting lists (a
    walk down one list probing the others read thousands of rows when few hold all).
    Any of them: each term's posting list newest first (the primary key backwards)."""
    mask, mask_params = filters
    phrases = [list(dict.fromkeys(tokens(key))) for key in common]
    phrases = [phrase for phrase in phrases if phrase]
    if not phrases:
        return set()
    scan = (
        "SELECT t.seq FROM mem_search_terms t JOIN mem_nodes n ON n.seq = t.seq "
        f"WHERE t.term = ? AND {{holds}} AND n.namespace = ? AND {mask} "
        "ORDER BY t.seq DESC LIMIT ?"
    )
    rows = _planned_each_time(
        conn,
        "SELECT d.seq FROM mem_search_docs d JOIN mem_nodes n ON n.seq = d.seq "
        f"WHERE d.terms @> ?::text[] AND n.namespace = ? AND {mask} "
        "ORDER BY d.seq DESC LIMIT ?",
        [list(dict.fromkeys(term for phrase in phrases for term in phrase)), namespace]
        + [*mask_params, PRE_LIMIT],
    )
    if rows or len(common) == 1:
        return {row[0] for row in rows}
    if all(len(phrase) == 1 for phrase in phrases):
        newest = _newest_any(conn, [phrase[0] for phrase in phrases], namespace, filters)
        if newest is not None:
            return newest
    # Any of them, exactly: the newest of each, filtered in the scan, then the newest.
    parts = ["(" + scan.format(holds=_holds(len(phrase) - 1) or "TRUE") + ")" for phrase in phrases]
    params: list[Any] = []
    for phrase in phrases:
        params += [phrase[0], *phrase[1:], namespace, *mask_params, PRE_LIMIT]
    rows = conn.execute(
        f"SELECT seq FROM ({' UNION '.join(parts)}) AS u ORDER BY seq DESC LIMIT ?",
        [*params, PRE_LIMIT],
    ).fetchall()
    return {row[0] for row in rows}


def _planned_each_time(conn: Connection, sql: str, parameters: list[Any]) -> list[Any]:
    """``sql``'s rows, planned for these parameters every time. A statement run often is
    prepared by the driver, and PostgreSQL soon plans it once for any parameters: for
    ``terms @> ?`` that generic plan walks every row newest first (30-50 ms at 100k
    when few rows hold all the terms) where the GIN index answers in 1-2 ms."""
    raw = getattr(conn, "raw", None)
    if raw is None:  # not psycopg: nothing is prepared behind our back
        return conn.execute(sql, parameters).fetchall()
    translated, _ = translate(sql)
    try:
        return list(raw.execute(translated, parameters, prepare=False).fetchall())
    except Exception as exc:
        raise conn.storage.error_from(exc) from None  # type: ignore[attr-defined]


def _newest_any(
    conn: Connection, terms: list[str], namespace: str, filters: tuple[str, list[Any]]
) -> set[int] | None:
    """The newest PRE_LIMIT rows holding any of ``terms`` that the filters admit, from
    each term's newest PRE_LIMIT postings (index only) and one filter of their rows;
    None when that cannot tell (then the exact scan runs). Exact when it answers: every
    row holding a term at or above ``floor`` (the highest last seq among the lists cut at
    PRE_LIMIT) was read, so the newest admitted rows at or above it are the answer when
    there are PRE_LIMIT of them, or when no list was cut."""
    mask, mask_params = filters
    lists = conn.execute(
        "SELECT ARRAY (SELECT seq FROM mem_search_terms t WHERE t.term = k.term "
        "ORDER BY seq DESC LIMIT ?) FROM unnest(?::text[]) AS k (term)",
        (PRE_LIMIT, terms),
    ).fetchall()
    seqs = {seq for (found,) in lists for seq in found}
    cut = [found[-1] for (found,) in lists if len(found) == PRE_LIMIT]
    floor = max(cut, default=0)
    admitted = conn.execute(
        "SELECT n.seq FROM mem_nodes n WHERE n.seq = ANY (?::bigint[]) AND n.seq >= ? "
        f"AND n.namespace = ? AND {mask} ORDER BY n.seq DESC LIMIT ?",
        [sorted(seqs), floor, namespace, *mask_params, PRE_LIMIT],
    ).fetchall()
    if len(admitted) < PRE_LIMIT and cut:
        return None
    return {row[0] for row in admitted}


def _read_rows(
    conn: Connection, seqs: Sequence[int], namespace: str, filters: tuple[str, list[Any]]
) -> list[Any]:
    """The rows of ``seqs`` that the namespace, mask and kinds admit, by seq (as SQLite
    returns an ``IN`` list, so that ties keep the same order on both engines)."""
    mask, mask_params = filters
    return conn.execute(
        f"SELECT {NODE_COLUMNS} FROM mem_nodes n WHERE n.seq = ANY (?::bigint[]) "
        f"AND n.namespace = ? AND {mask} ORDER BY n.seq",
        [list(seqs), namespace, *mask_params],
    ).fetchall()


def _score(
    conn: Connection,
    namespace: str,
    members: Mapping[str, Collection[int]],
    common: list[str],
    idf: dict[str, float],
    key_count: int,
    terms: list[str],
    filters: tuple[str, list[Any]],
    query: str,
) -> dict[str, Candidate]:
    """search._read_and_score: the PRE_LIMIT best candidates by their rare terms, read
    (masked, in the namespace) and scored by their text."""
    ordered, scores, keys_of = ranked_by_keys(members, idf, key_count)
    if not ordered:
        return {}
    first: dict[int, float] = {}
    matched: dict[int, list[str]] = {}
    rows: list[NodeRow] = []
    for start in range(0, len(ordered), PRE_LIMIT):
        if len(rows) >= PRE_LIMIT:
            break
        chunk = ordered[start : start + PRE_LIMIT]
        first.update(zip(chunk, scores[start : start + PRE_LIMIT], strict=True))
        matched.update(zip(chunk, keys_of[start : start + PRE_LIMIT], strict=True))
        rows += _read_rows(conn, chunk, namespace, filters)
    if not rows:
        return {}
    rows.sort(key=lambda row: -first[row[8]])
    return score_rows(rows[:PRE_LIMIT], matched, common, idf, key_count, terms, date_spans(query))


def _prefix_range(prefix: str) -> tuple[str, str]:
    """The terms that start with ``prefix``: lo <= term < hi, in code point order."""
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def _prefix_stage(
    conn: Connection,
    namespace: str,
    keys: list[str],
    found: dict[str, Candidate],
    filters: tuple[str, list[Any]],
) -> None:
    """search._prefix_stage: ``term*`` for every key term of three letters or more, the
    newest PREFIX_SCAN rows they match ranked by FTS5's BM25 (see the module)."""
    phrases = [tokens(key) for key in keys if len(key) >= 3]
    # A phrase of several terms: all but the last exact (see the module's known difference).
    prefixes = [phrase for phrase in phrases if phrase]
    if not prefixes:
        return
    rows_indexed, length_total = totals(conn)
    if rows_indexed == 0:
        return
    average = length_total / rows_indexed
    ranges = [_prefix_range(phrase[-1]) for phrase in prefixes]
    exact = [phrase[:-1] for phrase in prefixes]
    mask, mask_params = filters
    matches = " UNION ALL ".join(
        f"SELECT t.seq, {i}::integer AS i, sum(t.tf)::float8 AS f FROM mem_search_terms t "
        f"WHERE t.term >= ? AND t.term < ? AND {_holds(len(before)) or 'TRUE'} GROUP BY t.seq"
        for i, before in enumerate(exact, 1)
    )
    match_params: list[Any] = []
    for (low, high), before in zip(ranges, exact, strict=True):
        match_params += [low, high, *before]
    # One statement: each prefix's rows and occurrences (m), each prefix's IDF from its
    # row count over the whole index (FTS5's nHit), the newest PREFIX_SCAN rows that the
    # namespace, mask and kinds admit (filtered before the LIMIT, as on SQLite), and only
    # those scored. float8 throughout, summed in prefix order: FTS5's bm25() to the bit.
    ranked = conn.execute(
        f"WITH m AS MATERIALIZED ({matches}), "
        "idf AS (SELECT i, CASE WHEN v > 0.0::float8 THEN v ELSE 1e-6::float8 END AS w "
        "FROM (SELECT i, ln(((?::float8 - count(*)) + 0.5::float8) / "
        "(count(*) + 0.5::float8)) AS v FROM m GROUP BY i) AS x), "
        "newest AS (SELECT c.seq FROM (SELECT DISTINCT seq FROM m ORDER BY seq DESC) AS c "
        f"JOIN mem_nodes n ON n.seq = c.seq WHERE n.namespace = ? AND {mask} "
        "ORDER BY c.seq DESC LIMIT ?) "
        "SELECT m.seq, -sum(idf.w * ((m.f * (?::float8 + 1.0::float8)) / "
        "(m.f + ?::float8 * (1.0::float8 - ?::float8 + ?::float8 * d.length::float8 "
        "/ ?::float8))) ORDER BY m.i) "
        "FROM newest JOIN m ON m.seq = newest.seq JOIN idf ON idf.i = m.i "
        "JOIN mem_search_docs d ON d.seq = m.seq GROUP BY m.seq",
        [
            *match_params,
            float(rows_indexed),
            namespace,
            *mask_params,
            PREFIX_SCAN,
            FTS5_K1,
            FTS5_K1,
            FTS5_B,
            FTS5_B,
            average,
        ],
    ).fetchall()
    ranked.sort(key=lambda hit: (hit[1], -hit[0]))
    rank_of = dict(ranked)
    rows: list[Any] = []
    start, step = 0, 2 * PREFIX_LIMIT
    while start < len(ranked) and len(rows) < PREFIX_LIMIT:
        chunk = [seq for seq, _ in ranked[start : start + step]]
        start, step = start + step, step * 4
        rows += [(*row, rank_of[row[8]]) for row in _read_rows(conn, chunk, namespace, filters)]
    rows.sort(key=lambda row: (row[9], -row[8]))
    new_rows = [row for row in rows[:PREFIX_LIMIT] if row[0] not in found]
    if not new_rows:
        return
    best = max(-row[9] for row in new_rows) or 1.0
    for row in new_rows:
        relevance = PREFIX_WEIGHT * max(-row[9], 0.0) / best if best > 0 else PREFIX_WEIGHT
        node: NodeRow = tuple(row[:9])
        found[row[0]] = Candidate(*node, relevance=max(relevance, 1e-6), via="search")
