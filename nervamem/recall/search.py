"""Recall: FTS5 stages -> graph expansion -> temporal mask -> scoring.

Rules a reader must not break:
* User text is data, never FTS5 syntax: every term is quoted before MATCH.
* The temporal mask applies to search hits and expanded neighbours alike. With
  ``as_of = T``: ``valid_from <= T < valid_until`` (or open), not tombstoned. Recall
  without ``--as-of`` passes now as T (recall_api.py): a memory valid from a later date
  is not true yet. ``as_of = None`` (open validity, not tombstoned, whatever the dates)
  is code-for's "current memories".
* Nothing crosses a namespace: every query filters by it.
"""

from __future__ import annotations

import functools
import math
import re
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import chain
from typing import Any

from ..timeparse import to_datetime

_TERM = re.compile(r"[^\W_]+", re.UNICODE)
MAX_QUERY_TERMS = 32
STAGE_LIMIT = 200
# A key term found in more rows than this is common: it only scores candidates that the
# rare terms found (see search); PRE_LIMIT candidates are read and scored in full.
COMMON_DF = 500
PRE_LIMIT = 150
PREFIX_LIMIT = 50
PREFIX_SCAN = 2000
PREFIX_WEIGHT = 0.3
PHRASE_BOOST = 1.5
# Two adjacent key terms of the query at most PROXIMITY_WINDOW words apart in a memory
# raise it by up to PROXIMITY_WEIGHT (see _proximity); a memory whose other words are
# rare among the candidates by up to SPECIFICITY_WEIGHT (see specificity).
PROXIMITY_WEIGHT = 1.0
PROXIMITY_WINDOW = 2
SPECIFICITY_WEIGHT = 2.0
BM25_K1 = 1.2
BM25_B = 0.75
# Session context (see session_context).
CONTEXT_SEEDS = 20
CONTEXT_WINDOW = 2
CONTEXT_SPAN = 4
CONTEXT_WEIGHT = 0.5
CONTEXT_DECAY = 0.5
CONTEXT_BEFORE = 0.7
# A memory that asks a question (its text ends with "?") is answered by what was recorded
# right after it: it passes QUESTION_FORWARD times the usual share to that memory (see
# session_context), and is itself weighed QUESTION_DAMP, as a question only restates
# what is asked (recall_api.run_recall, after expansion).
QUESTION_FORWARD = 2.0
QUESTION_DAMP = 0.6
SESSION_WEIGHT = 0.5
EXPANSION_DECAY = 0.6
EXPANSION_FANOUT = 8
EXPANSION_SEEDS = 30
# A date in the query ("on 13 October 2023", "in March 2026", "2026-03-15") raises the
# memories valid from within it by DATE_WEIGHT (see date_spans); a day reaches
# DATE_SLACK_DAYS either side, as what happened on a day is often written down later.
DATE_WEIGHT = 1.0
DATE_SLACK_DAYS = 7
RECENCY_HALF_LIFE_DAYS = 30.0
RECENCY_FLOOR = 0.5

# Words that carry no topic: in the prefix and OR stages they only make FTS5 score most
# of the corpus (slow) and drown the words that matter. The exact-phrase stage keeps them.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    yourself yourselves ever also many much get got
    """.split()
)

# Edges that expansion follows, in both directions. OCCURRED_IN is left out on purpose:
# a session links to everything that happened in it, so following it would pull a whole
# session into every recall. ABOUT and TOUCHES reach an entity and what else is about it
# (bounded by EXPANSION_FANOUT, newest first, so a hub entity cannot flood the result).
# SUPERSEDES is left out: a superseded version is masked out anyway.
EXPANSION_EDGES = ("ABOUT", "TOUCHES", "CAUSED", "DERIVED_FROM", "CONTRADICTS")

# Newest neighbours first, one branch per edge kind and direction: each branch reads at
# most EXPANSION_FANOUT index entries, so a hub entity with 50 000 ABOUT edges costs what a
# leaf costs. (One "kind IN (...) ORDER BY ... LIMIT" would read and sort all of them.)
# The union of the per-branch top rows holds the overall top rows, so the result is the same.
NEIGHBOURS_SQL = (
    " UNION ".join(
        f"SELECT * FROM (SELECT {far} FROM mem_edges WHERE {near} = :id AND kind = '{kind}' "
        f"ORDER BY {far} DESC LIMIT :fanout)"
        for kind in EXPANSION_EDGES
        for near, far in (("src", "dst"), ("dst", "src"))
    )
    + " ORDER BY 1 DESC LIMIT :fanout"
)

NODE_COLUMNS = (
    "n.id, n.kind, n.content, n.valid_from, n.valid_until, n.recorded_at, "
    "n.confidence, n.access_count, n.seq"
)
NodeRow = tuple[str, str, str, str, str | None, str, float, int, int]


@dataclass
class Candidate:
    """A node on its way through recall, with its relevance so far."""

    id: str
    kind: str
    content: str
    valid_from: str
    valid_until: str | None
    recorded_at: str
    confidence: float
    access_count: int
    seq: int
    relevance: float
    via: str  # "search", "context" or "expansion"


def query_terms(text: str) -> list[str]:
    return [t.lower() for t in _TERM.findall(text)][:MAX_QUERY_TERMS]


def content_terms(terms: Sequence[str]) -> list[str]:
    """The words of a query that carry its topic: no stop words, and no one-letter
    fragments (the "s" of "Gina's") unless they are digits. A query made only of such
    words keeps them, so that it still finds something."""
    unique = list(dict.fromkeys(terms))
    kept = [t for t in unique if t not in STOPWORDS and (len(t) > 1 or t.isdigit())]
    return kept or [t for t in unique if len(t) > 1 or t.isdigit()] or unique


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def fts_stages(text: str) -> list[str]:
    """The MATCH expressions of the stages, in order: exact phrase, every key term as a
    prefix, any key term. :func:`search` runs them as term lookups (see there)."""
    terms = query_terms(text)
    if not terms:
        return []
    keys = content_terms(terms)
    stages = [_quote(" ".join(terms))]
    stages.append(" ".join(_quote(t) + "*" for t in keys))
    if len(keys) > 1:
        stages.append(" OR ".join(_quote(t) for t in keys))
    return list(dict.fromkeys(stages))


def mask_sql(as_of: str | None, alias: str = "n") -> tuple[str, list[str]]:
    if as_of is None:
        # "Not superseded" needs no edge lookup: valid_until is derived from the
        # SUPERSEDES edges in the same transaction that writes them (the earliest
        # valid_from of the superseders; store.py, bulk.py, purge's relink), so a node
        # with an incoming SUPERSEDES edge never has an open validity. The lookup it
        # replaces cost ~40 % of every candidate fetch.
        return f"{alias}.tombstoned = 0 AND {alias}.valid_until IS NULL", []
    return (
        f"{alias}.tombstoned = 0 AND {alias}.valid_from <= ? "
        f"AND ({alias}.valid_until IS NULL OR {alias}.valid_until > ?)",
        [as_of, as_of],
    )


_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


@functools.cache
def _date_forms() -> tuple[tuple[re.Pattern[str], tuple[int, int, int]], ...]:
    """The date forms a query may use, longest first, each with the group numbers of its
    (year, month, day); 0: the form has no such part. Compiled on first use: most
    queries hold no digit and never need them."""
    month = (
        r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
        r"|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
    )
    day = r"(\d{1,2})(?:st|nd|rd|th)?"
    year = r"((?:19|20)\d\d)"
    forms = (
        (r"(?<!\d)" + year + r"-(\d\d)-(\d\d)(?!\d)", (1, 2, 3)),  # 2026-03-15
        (r"(?<![\w-])" + month + r"\s+" + day + r",?\s+" + year + r"(?!\d)", (3, 1, 2)),
        (r"(?<!\d)" + day + r"\s+(?:of\s+)?" + month + r",?\s+" + year + r"(?!\d)", (3, 2, 1)),
        (r"(?<!\d)" + year + r"-(\d\d)(?![\d-])", (1, 2, 0)),  # 2026-03
        (r"(?<![\w-])" + month + r",?\s+" + year + r"(?!\d)", (2, 1, 0)),  # March 2026
        (r"(?<![\w.:/-])" + year + r"(?![\w.:/-])", (1, 0, 0)),  # in 2026
    )
    return tuple((re.compile(pattern, re.IGNORECASE), groups) for pattern, groups in forms)


def date_spans(query: str) -> list[tuple[str, str]]:
    """The periods a query names, as (first, last) days ("YYYY-MM-DD"): a day, widened
    by DATE_SLACK_DAYS either side (what happened on a day is often written down a few
    days later, or was planned before), a month or a year. English month names; no
    relative dates ("last week" depends on when the memory was written, not asked).
    Text read as a longer date is not read again as a shorter one: "13 October 2023" is
    one day, not also the year 2023."""
    if not any(character.isdigit() for character in query):
        return []
    from datetime import date, timedelta

    spans: list[tuple[str, str]] = []
    taken: list[tuple[int, int]] = []
    for pattern, (y, m, d) in _date_forms():
        for match in pattern.finditer(query):
            if any(a < match.end() and match.start() < b for a, b in taken):
                continue
            year = int(match[y])
            month = 1
            if m:
                name = match[m].lower()
                month = int(name) if name.isdigit() else _MONTH_NAMES.index(name[:3]) + 1
            try:
                if d:
                    slack = timedelta(days=DATE_SLACK_DAYS)
                    named = date(year, month, int(match[d]))
                    first, last = named - slack, named + slack
                elif m:
                    first = date(year, month, 1)
                    last = date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)
                else:
                    first, last = date(year, 1, 1), date(year, 12, 31)
            except ValueError:  # 2026-13-45, 31 February
                continue
            taken.append(match.span())
            spans.append((first.isoformat(), last.isoformat()))
    return spans


def _idf(total: int, df: int) -> float:
    return math.log((total - df + 0.5) / (df + 0.5) + 1.0)


def search(
    conn: sqlite3.Connection,
    namespace: str,
    query: str,
    *,
    as_of: str | None,
    kinds: Sequence[str] | None,
    want: int,
    apply_mask: bool = True,
) -> dict[str, Candidate]:
    """Find and score the nodes that match the query's key terms.

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
    postings: dict[str, set[int]] = {}
    common: list[str] = []
    for key in keys:
        rows = conn.execute(
            "SELECT rowid FROM mem_fts WHERE mem_fts MATCH ? LIMIT ?",
            (_quote(key), COMMON_DF + 1),
        ).fetchall()
        if len(rows) > COMMON_DF:
            common.append(key)
        elif rows:
            postings[key] = {row[0] for row in rows}
    idf = {key: _idf(total, len(rows)) for key, rows in postings.items()}
    idf.update({key: _idf(total, max(COMMON_DF + 1, total // 10)) for key in common})
    if postings:
        members = postings
    elif common:
        members = {"": _newest_common(conn, common, namespace, _filters(as_of, kinds, apply_mask))}
    else:
        members = {}
    found = _score(
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
    )
    if len(found) < want:
        # Not for common terms: FTS5 merges the posting lists of every word a prefix
        # matches before it returns a row, so "log"* costs ~0.5 s at 1M nodes, and the
        # exact word already brought plenty of rows.
        rare = [key for key in keys if key not in common]
        _prefix_stage(conn, namespace, rare, found, as_of=as_of, kinds=kinds, apply_mask=apply_mask)
    return found


def _newest_common(
    conn: sqlite3.Connection,
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
            [joiner.join(_quote(key) for key in common), namespace, *mask_params, PRE_LIMIT],
        ).fetchall()
        if rows or len(common) == 1:
            break
    return {row[0] for row in rows}


# Suffixes cut before a common term is looked for in a candidate's text, roughly as the
# porter stemmer of the FTS table would ("deployed" finds "deploys", "deployment").
_SUFFIXES = (
    "ations",
    "ation",
    "ments",
    "ment",
    "ings",
    "ing",
    "edly",
    "ed",
    "ers",
    "er",
    "ies",
    "es",
    "ly",
    "s",
)


def _root(term: str) -> str:
    for suffix in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= 3:
            return term[: -len(suffix)]
    return term


def _common_matcher(common: list[str]) -> re.Pattern[str] | None:
    """One pattern that finds any common term at a word start; group i is term i."""
    if not common:
        return None
    groups = "|".join(f"({re.escape(_root(term))})" for term in common)
    return re.compile(rf"(?<![^\W_])(?:{groups})", re.IGNORECASE)


def words_of(text: str) -> list[str]:
    """Lower-cased words, punctuation dropped: a cheap split (str.translate), not FTS5's."""
    return text.lower().translate(_PUNCTUATION).split()


# string.punctuation, spelled out: importing the string module costs ~1.3 ms of start-up.
_PUNCTUATION = str.maketrans(dict.fromkeys("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", " "))


def specificity(words: Sequence[Sequence[str]], query: Sequence[str]) -> list[float]:
    """How specific each candidate is, 0..1: the mean rarity, among the candidates, of
    its words that are neither stop words nor query words (log((n + 1) / df), df counted
    in the candidate set), divided by the highest. Routine notes built from the words
    that every note shares ("ran the X test suite", "thanks, that's great") score low; a
    memory that says something particular about the query's topic scores high. Only the
    candidates' own text is read: no corpus statistics, no extra query."""
    ignored = STOPWORDS | set(query)
    bags = [set(row).difference(ignored) for row in words]
    n = len(bags)
    rarity = {
        word: math.log((n + 1) / df) for word, df in Counter(chain.from_iterable(bags)).items()
    }
    # fsum is exact, so the result does not depend on the set's (hash-seeded) order.
    raw = [math.fsum(map(rarity.__getitem__, bag)) / len(bag) if bag else 0.0 for bag in bags]
    top = max(raw, default=0.0) or 1.0
    return [value / top for value in raw]


def _proximity(
    keys: Sequence[str], idf: dict[str, float]
) -> Callable[[Sequence[str], Sequence[str]], float]:
    """Term proximity: for each pair of key terms adjacent in the query ("favorite book",
    "support group"), a memory holding both within PROXIMITY_WINDOW words of each other
    earns the pair's IDF weight; the boost is PROXIMITY_WEIGHT x earned / all pairs."""
    roots = [_root(key) for key in keys]
    pairs = [
        (i, i + 1, idf.get(keys[i], 0.0) + idf.get(keys[i + 1], 0.0)) for i in range(len(keys) - 1)
    ]
    total = sum(weight for _, _, weight in pairs)
    prefixes = tuple(roots)

    def boost(words: Sequence[str], matched: Sequence[str]) -> float:
        held = set(matched)
        wanted = [p for p in pairs if keys[p[0]] in held and keys[p[1]] in held]
        if not wanted:
            return 0.0
        hits = [(i, word) for i, word in enumerate(words) if word.startswith(prefixes)]
        where = [[i for i, word in hits if word.startswith(root)] for root in roots]
        earned = sum(
            weight
            for a, b, weight in wanted
            if where[a]
            and where[b]
            and min(abs(x - y) for x in where[a] for y in where[b]) <= PROXIMITY_WINDOW
        )
        return PROXIMITY_WEIGHT * earned / total

    return boost


def _filters(
    as_of: str | None, kinds: Sequence[str] | None, apply_mask: bool
) -> tuple[str, list[str]]:
    mask, params = mask_sql(as_of) if apply_mask else ("n.tombstoned = 0", [])
    if kinds:
        mask += f" AND n.kind IN ({','.join('?' * len(kinds))})"
        params = [*params, *kinds]
    return mask, params


def _score(
    conn: sqlite3.Connection,
    namespace: str,
    members: dict[str, set[int]],
    common: list[str],
    idf: dict[str, float],
    key_count: int,
    terms: list[str],
    *,
    as_of: str | None,
    kinds: Sequence[str] | None,
    apply_mask: bool,
    spans: Sequence[tuple[str, str]] = (),
) -> dict[str, Candidate]:
    """Score the candidates. ``members`` maps each rare key term to the rows holding it
    (key "" for candidates that hold no rare term); common terms are looked for in the
    text of the PRE_LIMIT best candidates only."""
    matched: dict[int, list[str]] = {}
    for key, rowids in members.items():
        for rowid in rowids:
            keys = matched.setdefault(rowid, [])
            if key:
                keys.append(key)
    if not matched:
        return {}

    first = {
        rowid: sum(idf[k] for k in keys) * len(keys) / key_count for rowid, keys in matched.items()
    }
    # Best first, ties newest first: plain tuples sort without a Python key function.
    ordered = [-r for _, r in sorted([(-score, -r) for r, score in first.items()])]
    mask, mask_params = _filters(as_of, kinds, apply_mask)
    rows: list[NodeRow] = []
    for start in range(0, len(ordered), PRE_LIMIT):
        if len(rows) >= PRE_LIMIT:
            break
        chunk = ordered[start : start + PRE_LIMIT]
        rows += conn.execute(
            f"SELECT {NODE_COLUMNS} FROM mem_nodes n WHERE n.seq IN "
            f"({','.join('?' * len(chunk))}) AND +n.namespace = ? AND {mask}",
            [*chunk, namespace, *mask_params],
        ).fetchall()
    if not rows:
        return {}
    rows.sort(key=lambda row: -first[row[8]])
    rows = rows[:PRE_LIMIT]
    average = sum(len(row[2]) for row in rows) / len(rows) or 1.0
    phrase = (
        re.compile(r"(?<![^\W_])" + r"[\W_]+".join(map(re.escape, terms)) + r"(?![^\W_])", re.I)
        if len(terms) > 1
        else None
    )
    finder = _common_matcher(common)
    words = [words_of(row[2]) for row in rows]
    specific = specificity(words, terms)
    near = _proximity(content_terms(terms), idf)
    scored: list[tuple[float, NodeRow]] = []
    for row, row_words, row_specific in zip(rows, words, specific, strict=True):
        keys = matched[row[8]]
        if finder:
            found_common = {m.lastindex for m in finder.finditer(row[2]) if m.lastindex}
            keys = keys + [common[i - 1] for i in sorted(found_common)]
        norm = (BM25_K1 + 1) / (1 + BM25_K1 * (1 - BM25_B + BM25_B * len(row[2]) / average))
        score = sum(idf[k] for k in keys) * len(keys) / key_count * norm
        if not keys:
            score = 1e-3  # newest rows of an all-common query that the loose match missed
        if phrase and phrase.search(row[2]):
            score *= PHRASE_BOOST
        score *= (1 + SPECIFICITY_WEIGHT * row_specific) * (1 + near(row_words, keys))
        if spans and any(first <= row[3][:10] <= last for first, last in spans):
            score *= 1 + DATE_WEIGHT
        scored.append((score, row))
    best = max(score for score, _ in scored) or 1.0
    return {
        row[0]: Candidate(*row, relevance=max(score / best, 1e-6), via="search")
        for score, row in scored
    }


def _prefix_stage(
    conn: sqlite3.Connection,
    namespace: str,
    keys: list[str],
    found: dict[str, Candidate],
    *,
    as_of: str | None,
    kinds: Sequence[str] | None,
    apply_mask: bool,
) -> None:
    """``term*`` for every key term of three letters or more, ranked by bm25() among the
    newest PREFIX_SCAN rows the prefixes match (all of them, below that)."""
    prefixes = [key for key in keys if len(key) >= 3]
    if not prefixes:
        return
    mask, mask_params = _filters(as_of, kinds, apply_mask)
    expression = " OR ".join(_quote(key) + "*" for key in prefixes)
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
        rows += [
            (*row, rank_of[row[8]])
            for row in conn.execute(
                f"SELECT {NODE_COLUMNS} FROM mem_nodes n WHERE n.seq IN "
                f"({','.join('?' * len(chunk))}) AND +n.namespace = ? AND {mask}",
                [*chunk, namespace, *mask_params],
            )
        ]
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


def expand(
    conn: sqlite3.Connection,
    namespace: str,
    seeds: dict[str, Candidate],
    *,
    hops: int,
    as_of: str | None,
    kinds: Sequence[str] | None,
    width: int = EXPANSION_SEEDS,
) -> dict[str, Candidate]:
    """Neighbours of the ``width`` best seeds (at most EXPANSION_SEEDS), each with 0.6x
    its parent's relevance per hop; the ``width`` best neighbours seed the next hop."""
    width = max(1, min(width, EXPANSION_SEEDS))
    result = dict(seeds)
    frontier = sorted(seeds.values(), key=lambda c: -c.relevance)[:width]
    mask, mask_params = mask_sql(as_of)
    for _ in range(hops):
        inherited: dict[str, float] = {}
        around = neighbours(conn, [parent.id for parent in frontier])
        for parent in frontier:
            for neighbour in around[parent.id]:
                if neighbour in result:
                    continue
                score = parent.relevance * EXPANSION_DECAY
                if score > inherited.get(neighbour, 0.0):
                    inherited[neighbour] = score
        if not inherited:
            break
        frontier = []
        for row in _fetch_masked(conn, namespace, list(inherited), mask, mask_params):
            candidate = Candidate(*row, relevance=inherited[row[0]], via="expansion")
            frontier.append(candidate)
            if not kinds or candidate.kind in kinds:
                result[candidate.id] = candidate
        frontier.sort(key=lambda c: -c.relevance)
        frontier = frontier[:width]
    return result


# A node with at most this many edges (every kind) has its neighbours read in one batch
# with the other small nodes of a hop; a bigger one (entity hubs, sessions) through
# NEIGHBOURS_SQL, which reads only its newest rows per edge kind.
BATCH_DEGREE = 64


def neighbours(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, list[str]]:
    """The EXPANSION_FANOUT newest neighbours of each node over EXPANSION_EDGES, both
    directions (what NEIGHBOURS_SQL returns for it), for a whole frontier at once: one
    statement for the small nodes instead of one per node."""
    degree = degrees(conn, ids)
    small = [node_id for node_id in dict.fromkeys(ids) if degree.get(node_id, 0) <= BATCH_DEGREE]
    found: dict[str, set[str]] = {node_id: set() for node_id in small}
    if small:
        marks = ",".join("?" * len(small))
        kinds = ",".join(f"'{kind}'" for kind in EXPANSION_EDGES)
        for node_id, neighbour in conn.execute(
            f"SELECT src, dst FROM mem_edges WHERE src IN ({marks}) AND kind IN ({kinds}) "
            "UNION ALL "
            f"SELECT dst, src FROM mem_edges WHERE dst IN ({marks}) AND kind IN ({kinds})",
            [*small, *small],
        ):
            found[node_id].add(neighbour)
    result = {
        node_id: sorted(near, reverse=True)[:EXPANSION_FANOUT] for node_id, near in found.items()
    }
    for node_id in ids:
        if node_id not in result:
            result[node_id] = [
                row[0]
                for row in conn.execute(NEIGHBOURS_SQL, {"id": node_id, "fanout": EXPANSION_FANOUT})
            ]
    return result


def session_context(
    conn: sqlite3.Connection,
    namespace: str,
    found: dict[str, Candidate],
    *,
    as_of: str | None,
    kinds: Sequence[str] | None,
) -> dict[str, Candidate]:
    """Context from the same session: what was recorded just before and after a hit.

    A session is one task, and what is stored next to a memory in it is usually its
    context: the question a reply answers, the action that followed a decision. Each of
    the CONTEXT_SEEDS best hits passes ``CONTEXT_WEIGHT x decay^(d-1)`` of its relevance
    to the memories up to CONTEXT_WINDOW places after it in its session (d = distance),
    and CONTEXT_BEFORE times that to those before it; hits receive it too, so a hit with
    relevant neighbours outranks a lone one. Then each candidate's score is raised by
    SESSION_WEIGHT x (its session's summed hit relevance / the best session's), so the
    task that matches the query most is preferred. Reads only a few rows per seed by
    primary key; never a whole session, so a long session cannot flood the result.

    A question is answered by what follows it: a hit that asks one (:func:`asks`) passes
    QUESTION_FORWARD times the usual share to the memory right after it (and the
    pipeline weighs every candidate that asks one QUESTION_DAMP, after expansion, with or
    without hops: recall_api.run_recall). "When are you opening the studio?"
    holds the query's words; the reply after it ("The opening night is tomorrow") holds
    the answer and often none of them. No speaker, dialogue or dataset knowledge: only
    the question mark and the order in which a session recorded its memories.
    """
    seeds = sorted(found.values(), key=lambda c: -c.relevance)[:CONTEXT_SEEDS]
    if not seeds:
        return found
    wanted = sorted({c.seq + d for c in seeds for d in range(-CONTEXT_SPAN, CONTEXT_SPAN + 1)})
    mask, mask_params = mask_sql(as_of)
    rows = conn.execute(
        f"SELECT {NODE_COLUMNS}, e.dst FROM mem_nodes n JOIN mem_edges e "
        "ON e.src = n.id AND e.kind = 'OCCURRED_IN' "
        f"WHERE n.seq IN ({','.join('?' * len(wanted))}) AND +n.namespace = ? AND {mask}",
        [*wanted, namespace, *mask_params],
    ).fetchall()
    by_session: dict[str, list[NodeRow]] = {}
    session_of: dict[str, str] = {}
    for row in rows:
        by_session.setdefault(row[-1], []).append(row[:-1])
        session_of[row[0]] = row[-1]
    for members in by_session.values():
        members.sort(key=lambda r: r[8])
    gained: dict[str, float] = {}
    rows_by_id: dict[str, NodeRow] = {}
    for seed in seeds:
        session = session_of.get(seed.id)
        if session is None:
            continue
        members = by_session[session]
        place = next(i for i, r in enumerate(members) if r[0] == seed.id)
        for index, row in enumerate(members):
            distance = index - place
            if distance == 0 or abs(distance) > CONTEXT_WINDOW:
                continue
            if abs(row[8] - seed.seq) > CONTEXT_SPAN:
                continue
            share = CONTEXT_WEIGHT * CONTEXT_DECAY ** (abs(distance) - 1) * seed.relevance
            if distance < 0:
                share *= CONTEXT_BEFORE
            elif distance == 1 and asks(seed.content):
                share *= QUESTION_FORWARD
            gained[row[0]] = gained.get(row[0], 0.0) + share
            rows_by_id[row[0]] = row
    result = dict(found)
    base = {node_id: c.relevance for node_id, c in found.items()}
    for node_id, extra in gained.items():
        if node_id in result:
            result[node_id].relevance += extra
        elif not kinds or rows_by_id[node_id][1] in kinds:
            result[node_id] = Candidate(*rows_by_id[node_id], relevance=extra, via="context")
    # Sessions of every candidate (hits outside the fetched windows included).
    missing = [node_id for node_id in result if node_id not in session_of]
    session_of.update(sessions_of(conn, missing))
    weight: dict[str, float] = {}
    for node_id, relevance in base.items():
        session = session_of.get(node_id)
        if session:
            weight[session] = weight.get(session, 0.0) + relevance
    top = max(weight.values(), default=0.0)
    for node_id, candidate in result.items():
        session = session_of.get(node_id)
        if session and top > 0:
            candidate.relevance *= 1.0 + SESSION_WEIGHT * weight.get(session, 0.0) / top
    best = max(c.relevance for c in result.values())
    for candidate in result.values():
        candidate.relevance = max(candidate.relevance / best, 1e-6)
    return result


def asks(text: str) -> bool:
    """Whether a memory asks a question: its text ends with a question mark (ASCII or
    full-width), closing quotes and brackets after it aside (``He asked "why?"``)."""
    return text.rstrip().rstrip(_CLOSERS).rstrip().endswith(("?", "？"))


_CLOSERS = "\"')]}»”’」』"


def _fetch_masked(
    conn: sqlite3.Connection, namespace: str, ids: list[str], mask: str, mask_params: list[str]
) -> list[NodeRow]:
    rows: list[NodeRow] = []
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        # '+n.namespace': look the IDs up by the id index. Without the '+', SQLite picks
        # mem_nodes_ns_kind for a long IN list and scans the whole namespace.
        rows += conn.execute(
            f"SELECT {NODE_COLUMNS} FROM mem_nodes n WHERE n.id IN "
            f"({','.join('?' * len(chunk))}) AND +n.namespace = ? AND {mask}",
            [*chunk, namespace, *mask_params],
        ).fetchall()
    return rows


def degrees(conn: sqlite3.Connection, ids: Iterable[str]) -> dict[str, int]:
    """Number of edges of each node, both directions, every kind (missing: none). Read
    from mem_degree, which triggers keep equal to the count of mem_edges rows: counting
    them here would read every edge of a hub entity on every recall."""
    counts: dict[str, int] = {}
    id_list = list(ids)
    for start in range(0, len(id_list), 500):
        chunk = id_list[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for node_id, count in conn.execute(
            f"SELECT node_id, degree FROM mem_degree WHERE node_id IN ({marks})", chunk
        ):
            counts[node_id] = count
    return counts


def recency(recorded_at: str, reference: datetime) -> float:
    """RECENCY_FLOOR + (1 - RECENCY_FLOOR) x exp(-ln2 x age_days / 30).

    The half-life is concepts.md's; the floor is ours. The temporal mask already keeps
    out what stopped being true, so what is left is still valid however old it is: a
    decision taken five months ago must not lose to last week's note that merely
    mentions the same topic (pure decay would weigh it 1/32). Age still orders near-ties.
    """
    age_days = max((reference - to_datetime(recorded_at)).total_seconds() / 86400.0, 0.0)
    decay = math.exp(-math.log(2) * age_days / RECENCY_HALF_LIFE_DAYS)
    return RECENCY_FLOOR + (1.0 - RECENCY_FLOOR) * decay


def frequency(access_count: int) -> float:
    return 1.0 + 0.1 * math.log1p(max(access_count, 0))


def connectivity(degree: int) -> float:
    return 1.0 + 0.1 * math.log1p(max(degree, 0))


def sessions_of(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        for src, dst in conn.execute(
            f"SELECT src, dst FROM mem_edges WHERE kind = 'OCCURRED_IN' AND src IN "
            f"({','.join('?' * len(chunk))})",
            chunk,
        ):
            found[src] = dst
    return found
