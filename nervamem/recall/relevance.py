"""Relevance: how well one search hit's text answers the query, before recency,
frequency and connectivity (recall/scoring.py) weigh it.

The three stages of concepts.md (phrase, all terms, any term) are folded into one score
(docs/recall.md, "Search"): the summed IDF of the key terms a memory holds, times the
share of key terms it holds, times BM25's length normalisation; times PHRASE_BOOST when
it holds the query as a phrase, raised by term proximity, by specificity and by a date
the query names. Only the candidates' own text is read here: recall/search.py reads the
rows (masked, in the namespace) and the posting lists; recall/text_analysis.py the words,
roots and word places of a text that these formulas read.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from itertools import chain, compress, repeat
from operator import itemgetter

from .candidates import Candidate, NodeRow, candidate_of
from .irregular import past_forms
from .node_cache import SearchFacts
from .terms import STOPWORDS, content_terms
from .text_analysis import (
    Row,
    analysed,
    as_mask,
    code_in,
    common_in_ascii_apart,
    common_in_ascii_flat,
    common_pattern,
    common_term_roots,
    fill,
    holds_run,
    listed_roots,
    phrase_pattern,
    root_of,
    root_places,
    roots_apart,
    text_words,
    within,
)

PHRASE_BOOST = 1.5
# Two adjacent key terms of the query at most PROXIMITY_WINDOW words apart in a memory
# raise it by up to PROXIMITY_WEIGHT (see _proximity); a memory whose other words are
# rare among the candidates by up to SPECIFICITY_WEIGHT (see specificity).
PROXIMITY_WEIGHT = 1.0
PROXIMITY_WINDOW = 2
SPECIFICITY_WEIGHT = 2.0
BM25_K1 = 1.2
BM25_B = 0.75
# A date in the query ("on 13 October 2023", "in March 2026", "2026-03-15") raises the
# memories valid from within it by DATE_WEIGHT (see date_spans); a day reaches
# DATE_SLACK_DAYS either side, as what happened on a day is often written down later.
DATE_WEIGHT = 1.0
DATE_SLACK_DAYS = 7


def inverse_document_frequency(total: int, df: int) -> float:
    return math.log((total - df + 0.5) / (df + 0.5) + 1.0)


def term_weights(
    matched: Mapping[int, Sequence[str]], idf: Mapping[str, float], key_count: int
) -> dict[int, float]:
    """The text-free first score of each row the rare key terms found, by which search
    chooses the rows it reads: the summed IDF of the key terms it holds times the share
    of key terms it holds. :func:`score_rows` starts from the same product, with the
    common terms found in the text added."""
    weight_of = idf.__getitem__
    return {
        rowid: sum(map(weight_of, keys)) * len(keys) / key_count for rowid, keys in matched.items()
    }


def ranked_by_keys(
    members: Mapping[str, Collection[int]], idf: Mapping[str, float], key_count: int
) -> tuple[list[int], list[float], list[list[str]]]:
    """The rows the rare key terms found (``members``: each term's rows; key "" for rows
    found by no rare term), best first by :func:`term_weights`' score, ties newest
    first; with each row's score and its keys (in ``members``' order, as term_weights
    reads them). Rows that hold the same keys share a score and a list (never changed
    by its readers), so the score is computed once per set of keys (at most 15 of 4
    keys), the rows are sorted as ints within a score, and the sets of rows come from
    set operations, not a dict entry per row: ~0.04 against ~0.18 ms for ~160 rows a
    search (bench/results.md, "Search's first order by sets of keys")."""
    # The rows by the set of keys that found them (a bit per key): each key's rows
    # split the sets so far into those holding it and the others.
    regions: dict[int, set[int]] = {}
    for index, (key, rowids) in enumerate(members.items()):
        rest = set(rowids)
        if not key:  # rows found by no rare key: those not found by another key yet
            rest = rest.difference(*regions.values())
            if rest:
                regions[0] = regions[0] | rest if 0 in regions else rest
            continue
        bit = 1 << index
        split: dict[int, set[int]] = {}
        for held, rows in regions.items():
            both = rows & rest
            if both:
                rest -= both
                split[held | bit] = both
                if len(both) < len(rows):
                    split[held] = rows - both
            else:
                split[held] = rows
        if rest:  # with the rows of no rare key that also hold this one, if any
            split[bit] = split[bit] | rest if bit in split else rest
        regions = split
    names = list(members)
    keys_by_set = {
        held: [key for index, key in enumerate(names) if held >> index & 1] for held in regions
    }
    by_score: dict[float, list[tuple[list[str], set[int]]]] = {}
    for held, score in term_weights(keys_by_set, idf, key_count).items():
        by_score.setdefault(score, []).append((keys_by_set[held], regions[held]))
    ordered: list[int] = []
    scores: list[float] = []
    keys_of: list[list[str]] = []
    for score in sorted(by_score, reverse=True):
        groups = by_score[score]
        if len(groups) == 1:
            keys, rows = groups[0]
            ordered += sorted(rows, reverse=True)
            keys_of += [keys] * len(rows)
        else:  # different keys, the same score: newest first across them
            merged = sorted(
                [(rowid, keys) for keys, rows in groups for rowid in rows],
                key=itemgetter(0),
                reverse=True,
            )
            ordered += [rowid for rowid, _ in merged]
            keys_of += [keys for _, keys in merged]
        scores += [score] * (len(ordered) - len(scores))
    return ordered, scores, keys_of


def score_rows(
    rows: Sequence[NodeRow],
    matched: Mapping[int, list[str]],
    common: list[str],
    idf: Mapping[str, float],
    key_count: int,
    terms: list[str],
    spans: Sequence[tuple[str, str]] = (),
    texts: SearchFacts | None = None,
) -> dict[str, Candidate]:
    """The relevance of each row, normalised so the best has 1.0. ``matched`` holds the
    rare key terms that found each row (by seq); common terms are looked for in its text
    here, roughly stemmed (:func:`root_of`), as their posting lists were too long to read.
    With ``texts`` (the node cache's, recall/node_cache.py), each row's words are read
    from it where it holds them (else from a small cache of texts)."""
    average = sum(len(row[2]) for row in rows) / len(rows) or 1.0
    # The phrase pattern is compiled only for a text that needs it (not ASCII, or not
    # printable): a query's first recall compiled it for ~0.1 ms, and nearly every row
    # is checked by holds_run instead.
    phrased = len(terms) > 1
    run = tuple(terms)  # compared with a slice of a row's words (see holds_run)
    phrase: re.Pattern[str] | None = None
    # The query's common roots, listed once a call, not per row, and how to find them.
    common_roots = listed_roots(common_term_roots(common))
    apart = roots_apart(common_roots)
    common_in = common_in_ascii_apart if apart else common_in_ascii_flat
    finder: re.Pattern[str] | None = None  # only for a text that is not ASCII
    ascii_terms = all(term.isascii() for term in terms)
    analyses = [text_words(row[2]) for row in rows] if texts is None else analysed(rows, texts)
    specific = _specificity_of_bags([analysis[1] for analysis in analyses], terms)
    # Where each root starts a word in a row (a code, see _starts_code): the proximity
    # keys' roots, then the common terms', each once; kept per root and row in ``texts``
    # (a fact of the text, which any query with that root reads).
    keys_near = content_terms(terms)
    places, forms = root_places(
        [*keys_near, *(form for term in common for form in (term, *past_forms(term)))]
    )
    tables = [{} for _ in forms] if texts is None else list(map(texts.starts_of, places))
    near = _proximity(keys_near, idf, places)
    # With roots apart (roots_apart), a common term is found in a printable ASCII text where a word
    # starts with one of its roots (see roots_apart): read from the codes.
    groups = [
        [places[root] for root, n, _, _ in common_roots if n == number]
        for number in range(1, len(common) + 1)
    ]
    single_rooted = all(len(group) == 1 for group in groups)
    common_places = [group[0] for group in groups] if single_rooted else []
    common_wanted = sorted({place for group in groups for place in group})
    held_before = sum(map(len, tables))  # to count the codes this call keeps
    # The parts of BM25's norm that do not depend on the row, with the same rounding
    # steps as the whole expression: (k1 + 1) / (1 + k1 * ((1 - b) + b * length / average)).
    k1_plus_1, one_minus_b = BM25_K1 + 1, 1 - BM25_B
    weight_of = idf.__getitem__
    scored: list[tuple[float, NodeRow]] = []
    # The lowered text is read only for common terms, the phrase and proximity (which
    # needs two terms, so a phrase).
    lowers = ascii_terms and (bool(common_roots) or phrased)
    for row, (row_words, _, plain), row_specific in zip(rows, analyses, specific, strict=True):
        seq = row[8]
        keys = matched[seq]
        text = row[2]
        # ASCII text and terms (nearly every row): plain string searches in the lowered
        # text find what the case-insensitive patterns would, a few times faster.
        lowered = text.lower() if lowers and text.isascii() else None
        codes: list[int | None] | None = None
        if common_roots:
            if lowered is None:
                finder = finder or common_pattern(common)
                found_common = {m.lastindex for m in finder.finditer(text) if m.lastindex}
                if found_common:
                    keys = keys + [common[i - 1] for i in sorted(found_common)]
            elif plain and apart:
                codes = list(map(code_in, tables, repeat(seq)))
                if None in codes:
                    fill(codes, (tables, forms, seq, row_words, lowered), common_wanted)
                if single_rooted:
                    keys = keys + list(compress(common, map(codes.__getitem__, common_places)))
                else:
                    keys = keys + [
                        term
                        for term, group in zip(common, groups, strict=True)
                        if any(map(codes.__getitem__, group))
                    ]
            else:
                found_common = common_in(lowered, common_roots)
                if found_common:
                    keys = keys + [common[i - 1] for i in sorted(found_common)]
        norm = k1_plus_1 / (1 + BM25_K1 * (one_minus_b + BM25_B * len(text) / average))
        score = sum(map(weight_of, keys)) * len(keys) / key_count * norm if keys else 1e-3
        # (no keys: newest rows of an all-common query that the loose match missed)
        if phrased and (
            (run[0] in lowered and holds_run(row_words, run))
            if lowered is not None and plain
            else (lowered is None or all(map(lowered.__contains__, terms)))
            and (phrase := phrase or phrase_pattern(terms)).search(text)
        ):
            score *= PHRASE_BOOST
        factor = 1 + SPECIFICITY_WEIGHT * row_specific
        if near is not None and len(keys) > 1:  # a pair is two distinct key terms
            if codes is None:
                codes = list(map(code_in, tables, repeat(seq)))
            # A code missing is found when a pair held asks for it.
            missing = (tables, forms, seq, row_words, lowered) if None in codes else None
            factor *= 1 + near(codes, keys, missing)
        score *= factor
        if spans and any(first <= row[3][:10] <= last for first, last in spans):
            score *= 1 + DATE_WEIGHT
        scored.append((score, row))
    if texts is not None:
        texts.kept_starts(sum(map(len, tables)) - held_before)
    best = max(score for score, _ in scored) or 1.0
    found: dict[str, Candidate] = {}
    for score, row in scored:
        relevance = score / best
        found[row[0]] = candidate_of(row, relevance if relevance >= 1e-6 else 1e-6, "search")
    return found


def specificity(words: Sequence[Sequence[str]], query: Sequence[str]) -> list[float]:
    """How specific each candidate is, 0..1: the mean rarity, among the candidates, of
    its words that are neither stop words nor query words (log((n + 1) / df), df counted
    in the candidate set), divided by the highest. Routine notes built from the words
    that every note shares ("ran the X test suite", "thanks, that's great") score low; a
    memory that says something particular about the query's topic scores high. Only the
    candidates' own text is read: no corpus statistics, no extra query."""
    return _specificity_of_bags([frozenset(row).difference(STOPWORDS) for row in words], query)


def _specificity_of_bags(distinct: Sequence[Collection[str]], query: Sequence[str]) -> list[float]:
    """:func:`specificity` from each candidate's distinct words less the stop words."""
    asked = frozenset(query)
    n = len(distinct)
    # One logarithm per document frequency (1..n), not one per distinct word.
    logs = [0.0, *(math.log((n + 1) / df) for df in range(1, n + 1))]
    counts = Counter(chain.from_iterable(distinct))
    # A query word weighs nothing (logs[0]) and is not counted in its bag's length: the
    # same as leaving it out of every bag (its own count then does not matter), without
    # a set made per bag. fsum is exact, so neither the zeros nor the set's (hash-seeded)
    # order change a sum.
    for word in asked.intersection(counts):
        counts[word] = 0
    rarity, count_of = logs.__getitem__, counts.__getitem__
    raw = []
    for bag in distinct:
        found = list(map(count_of, bag))
        size = len(found) - found.count(0)  # its words less the query's
        raw.append(math.fsum(map(rarity, found)) / size if size else 0.0)
    top = max(raw, default=0.0) or 1.0
    return [value / top for value in raw]


def _proximity(
    keys: Sequence[str], idf: Mapping[str, float], places: Mapping[str, int] | None = None
) -> Callable[[list[int | None], Sequence[str], Row | None], float] | None:
    """Term proximity: for each pair of key terms adjacent in the query ("favorite book",
    "support group"), a memory holding both within PROXIMITY_WINDOW words of each other
    earns the pair's IDF weight; the boost is PROXIMITY_WEIGHT x earned / all pairs.
    None when the query has no such pair (every boost would be 0). The boost reads a
    row's codes (:func:`_starts_code`), each key's root's at its place in ``places``
    (by default, :func:`root_places` of the keys)."""
    roots = [root_of(key) for key in keys]
    pairs = [
        (i, i + 1, idf.get(keys[i], 0.0) + idf.get(keys[i + 1], 0.0)) for i in range(len(keys) - 1)
    ]
    if not pairs:
        return None
    total = sum(weight for _, _, weight in pairs)
    if places is None:
        places = root_places(keys)[0]
    # Each pair with its two keys and the places of their roots' codes.
    keyed = [
        (keys[a], keys[b], places[roots[a]], places[roots[b]], weight) for a, b, weight in pairs
    ]
    window = PROXIMITY_WINDOW

    def boost(codes: list[int | None], matched: Sequence[str], missing: Row | None) -> float:
        # ``matched``: a few keys; looked up as they are, no set made a row.
        earned: float = 0  # as sum() adds: 0, then each weight earned, in pair order
        for key_a, key_b, place_a, place_b, weight in keyed:
            if key_a not in matched or key_b not in matched:
                continue
            first, second = codes[place_a], codes[place_b]
            if missing is not None:
                if first is None:
                    first = fill(codes, missing, (place_a,))
                if second is None:
                    second = fill(codes, missing, (place_b,))
            if not first or not second:
                continue
            if first > 0 and second > 0:  # one word each (nearly every row)
                if -window <= first - second <= window:
                    earned += weight
            elif within(as_mask(first), as_mask(second), window):
                earned += weight
        return PROXIMITY_WEIGHT * earned / total

    return boost


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
