"""Recall's scoring computes each factor the fast way (issue 21); these properties hold
it to the plain definitions, to the last bit of every float, as recall's output must not
change: specificity, term proximity, the top k, and the words of a text however they
are split and kept."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nervamem.recall import relevance, scoring, text_analysis
from nervamem.recall.candidates import Candidate, NodeRow
from nervamem.recall.node_cache import SearchFacts
from nervamem.recall.scoring import Scored

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

WORDS = ["auth", "token", "cache", "redis", "deploy", "deployed", "jwt", "key"]
WORD = st.sampled_from(WORDS)
BAG = st.lists(WORD, unique=True, max_size=6).map(tuple)


def plain_specificity(bags: Sequence[Sequence[str]], query: Sequence[str]) -> list[float]:
    """concepts: each bag less the query's words; rarity log((n + 1) / df) over the
    bags; a bag's mean rarity, divided by the highest."""
    kept = [set(bag).difference(query) for bag in bags]
    n = len(kept)
    df = Counter(word for bag in kept for word in bag)
    raw = [
        math.fsum(math.log((n + 1) / df[word]) for word in bag) / len(bag) if bag else 0.0
        for bag in kept
    ]
    top = max(raw, default=0.0) or 1.0
    return [value / top for value in raw]


@given(bags=st.lists(BAG, max_size=12), query=st.lists(WORD, max_size=4))
@settings(max_examples=300, deadline=None)
def test_specificity_is_the_plain_definition_bit_for_bit(
    bags: list[tuple[str, ...]], query: list[str]
) -> None:
    assert relevance._specificity_of_bags(bags, query) == plain_specificity(bags, query)


def plain_proximity(
    keys: list[str], idf: dict[str, float], words: Sequence[str], matched: Sequence[str]
) -> float:
    """Every adjacent pair of key terms that the memory holds earns its weight when a
    word starting with one root is within the window of a word starting with the other."""
    roots = [text_analysis.root_of(key) for key in keys]
    pairs = [
        (i, i + 1, idf.get(keys[i], 0.0) + idf.get(keys[i + 1], 0.0)) for i in range(len(keys) - 1)
    ]
    if not pairs:
        return 0.0
    total = sum(weight for _, _, weight in pairs)
    where = [[i for i, word in enumerate(words) if word.startswith(root)] for root in roots]
    earned = sum(
        weight
        for a, b, weight in pairs
        if keys[a] in matched
        and keys[b] in matched
        and any(abs(x - y) <= relevance.PROXIMITY_WINDOW for x in where[a] for y in where[b])
    )
    return relevance.PROXIMITY_WEIGHT * earned / total


@given(
    keys=st.lists(WORD, unique=True, min_size=1, max_size=4),
    words=st.lists(WORD, max_size=30),
    held=st.lists(WORD, max_size=4),
    weights=st.lists(st.floats(0.01, 9.0), min_size=8, max_size=8),
)
@settings(max_examples=300, deadline=None)
def test_proximity_is_the_plain_definition_bit_for_bit(
    keys: list[str], words: list[str], held: list[str], weights: list[float]
) -> None:
    idf = dict(zip(WORDS, weights, strict=True))
    near = relevance._proximity(keys, idf)
    expected = plain_proximity(keys, idf, words, held)
    if near is None:
        assert len(keys) == 1 and expected == 0.0
    else:
        assert near(codes_of(keys, tuple(words), None), held, None) == expected


def codes_of(keys: list[str], words: tuple[str, ...], lowered: str | None) -> list[int]:
    """A row's codes (text_analysis._starts_code) at the places _proximity reads by default."""
    _, forms = text_analysis.root_places(keys)
    return [text_analysis._starts_code(words, root_forms, lowered) for root_forms in forms]


# Words around the roots of WORDS: the root itself, longer words starting with it, words
# holding it inside, and what splits words (punctuation, a tab) or does not (\x07).
TEXT_PIECES = st.sampled_from(
    [*WORDS, "Deploy", "deployment", "redeploy", "tokens", "jwts", "keys", "monkey", "a"]
)
SEPARATORS = st.sampled_from([" ", "  ", ", ", "-", "'", "\t", "\x07", "."])


@given(
    keys=st.lists(WORD, unique=True, min_size=2, max_size=4),
    pieces=st.lists(st.tuples(TEXT_PIECES, SEPARATORS), max_size=24),
    held=st.lists(WORD, max_size=4),
    weights=st.lists(st.floats(0.01, 9.0), min_size=8, max_size=8),
)
@settings(max_examples=500, deadline=None)
def test_proximity_from_the_lowered_text_is_the_plain_definition(
    keys: list[str],
    pieces: list[tuple[str, str]],
    held: list[str],
    weights: list[float],
) -> None:
    """With the lowered ASCII text beside its words, each root's positions are found by
    counting its places in the text (issue 21, round 7): the same boost, to the bit."""
    text = "".join(piece + separator for piece, separator in pieces)
    words = tuple(text_analysis.words_of(text))
    idf = dict(zip(WORDS, weights, strict=True))
    near = relevance._proximity(keys, idf)
    assert near is not None
    expected = plain_proximity(keys, idf, words, held)
    assert near(codes_of(keys, words, text.lower()), held, None) == expected
    # Codes not kept yet (None) are found when a pair held asks, and kept.
    _, forms = text_analysis.root_places(keys)
    codes: list[int | None] = [None] * len(forms)
    tables: list[dict[int, int]] = [{} for _ in forms]
    assert near(codes, held, (tables, forms, 7, words, text.lower())) == expected
    for place, code in enumerate(codes):
        assert tables[place] == ({} if code is None else {7: code})


@given(
    key=WORD,
    pieces=st.lists(st.tuples(TEXT_PIECES, SEPARATORS), max_size=24),
)
@settings(max_examples=500, deadline=None)
def test_a_roots_positions_from_the_lowered_text_are_the_words_starting_with_it(
    key: str, pieces: list[tuple[str, str]]
) -> None:
    text = "".join(piece + separator for piece, separator in pieces)
    words = tuple(text_analysis.words_of(text))
    root = text_analysis.root_of(key)
    forms = (root,) if root == key else (root, key)
    expected = [at for at, word in enumerate(words) if word.startswith(root)]
    assert sorted(text_analysis._starting(words, forms, text.lower())) == expected
    assert sorted(text_analysis._starting(words, forms, None)) == expected
    code = text_analysis._starts_code(words, forms, text.lower())
    mask = text_analysis.as_mask(code) if code else 0
    assert [at for at in range(len(words)) if mask >> at & 1] == expected


@pytest.mark.parametrize(
    "text",
    [
        "deployed " + "a " * 9 + "deploy",  # the key's word first, the root's 10 words on
        "deploy deployed, redeploy; deployment " * 40,  # positions past a machine word
        "deploy",
        "redeploy",
    ],
)
def test_a_code_holds_every_position_of_a_root(text: str) -> None:
    """A row's code (kept in SearchFacts.starts) decodes to the positions of the words
    starting with the root, in whatever order _starting lists them."""
    words = tuple(text_analysis.words_of(text))
    expected = [at for at, word in enumerate(words) if word.startswith("deploy")]
    for lowered in (text.lower(), None):
        code = text_analysis._starts_code(words, ("deploy", "deployed"), lowered)
        mask = text_analysis.as_mask(code) if code else 0
        assert [at for at in range(len(words)) if mask >> at & 1] == expected


REFERENCE = datetime(2026, 6, 1, tzinfo=timezone.utc)
CANDIDATE = st.tuples(
    st.floats(1e-6, 1.0),  # relevance
    st.integers(0, 40),  # days before REFERENCE it was recorded
    st.integers(0, 5),  # access count
    st.integers(0, 70),  # degree
)


def plain_top_k(found: dict[str, Candidate], degree: dict[str, int], k: int) -> list[Scored]:
    """Every candidate's score, the 2 x k best by it (ties by ID) times connectivity,
    the k best of those."""
    scored = []
    for c in found.values():
        r = scoring.recency(c.recorded_at, REFERENCE)
        f = scoring.frequency(c.access_count)
        scored.append((c.relevance * r * f, r, f, c))
    scored.sort(key=lambda s: (-s[0], s[3].id))
    best = []
    for score, r, f, c in scored[: 2 * k]:
        connected = scoring.connectivity(degree.get(c.id, 0))
        best.append((score * connected, r, f, connected, c))
    best.sort(key=lambda s: (-s[0], s[4].id))
    return best[:k]


@given(candidates=st.lists(CANDIDATE, max_size=40), k=st.integers(1, 12))
@settings(max_examples=300, deadline=None)
def test_top_k_is_the_plain_definition_bit_for_bit(
    candidates: list[tuple[float, int, int, int]], k: int
) -> None:
    found: dict[str, Candidate] = {}
    degree: dict[str, int] = {}
    for index, (relevance_, days, count, edges) in enumerate(candidates):
        node_id = f"f_{(index * 7919) % 997:04d}{index}"
        recorded = (REFERENCE - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        found[node_id] = Candidate(
            node_id, "fact", "x", recorded, None, recorded, 1.0, count, index,
            relevance=relevance_, via="search",
        )  # fmt: skip
        degree[node_id] = edges
    asked: list[list[str]] = []

    def degrees(conn: object, ids: list[str], facts: object = None) -> dict[str, int]:
        asked.append(ids)
        return {node_id: degree[node_id] for node_id in ids}

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scoring, "degrees", degrees)
        ranked = scoring.top_k(None, found, reference=REFERENCE, k=k)  # type: ignore[arg-type]
    assert ranked == plain_top_k(found, degree, k)
    assert len(asked) == 1 and len(asked[0]) <= 2 * k


@given(st.text(max_size=80))
@settings(max_examples=500, deadline=None)
def test_words_of_an_ascii_text_are_the_str_methods_words(text: str) -> None:
    """words_of lowers and translates an ASCII text as bytes: the same words as str's."""
    punctuation = text_analysis._PUNCTUATION
    assert text_analysis.words_of(text) == text.lower().translate(punctuation).split()


TEXT_WORDS = st.sampled_from([*WORDS, "the", "a", "Auth", "DEPLOYS", "jwt's", "café", "\t"])
TEXTS = st.lists(TEXT_WORDS, min_size=1, max_size=12).map(" ".join)


@given(
    texts=st.lists(TEXTS, min_size=1, max_size=8),
    query=st.lists(WORD, min_size=1, max_size=4, unique=True),
    common=st.lists(WORD, max_size=2, unique=True),
)
@settings(max_examples=200, deadline=None)
def test_score_rows_with_kept_words_is_score_rows_without(
    texts: list[str], query: list[str], common: list[str]
) -> None:
    """Each row's words read from the node cache's SearchFacts (interned, kept from an
    earlier call) score every row as the words split afresh do, to the last bit."""
    rows: list[NodeRow] = [
        (f"n{seq}", "fact", text, "2026-01-01", None, "2026-01-01", 1.0, 0, seq)
        for seq, text in enumerate(texts, start=1)
    ]
    keys = [term for term in query if term not in common]
    matched = {row[8]: [key for key in keys if key in row[2]] for row in rows}
    idf = {term: 1.0 + len(term) / 7 for term in WORDS}
    kept = SearchFacts()

    def relevances(found: dict[str, Candidate]) -> list[tuple[str, float]]:
        return [(node_id, c.relevance) for node_id, c in found.items()]

    text_analysis.text_words.cache_clear()
    plain = relevances(relevance.score_rows(rows, matched, common, idf, len(query), query))
    for _ in range(2):  # analysed and kept, then read back
        found = relevance.score_rows(rows, matched, common, idf, len(query), query, texts=kept)
        assert relevances(found) == plain


PRINTABLE_ASCII = st.characters(min_codepoint=32, max_codepoint=126)
PHRASE_TERMS = st.lists(st.sampled_from(["auth", "token", "a1", "x", "9"]), min_size=2, max_size=3)


@given(
    parts=st.lists(
        st.one_of(
            st.sampled_from(["auth", "Token", "A1", "x", "9", "authx"]),
            st.text(PRINTABLE_ASCII, max_size=4),
        ),
        max_size=10,
    ),
    terms=PHRASE_TERMS,
)
@settings(max_examples=500, deadline=None)
def test_phrase_as_a_run_of_words_is_the_phrase_pattern(parts: list[str], terms: list[str]) -> None:
    """In printable ASCII text, the query's terms as consecutive words is what
    score_rows' phrase pattern finds."""
    text = " ".join(parts)
    pattern = text_analysis.phrase_pattern(terms)  # compiled only where a text needs it
    words = tuple(text_analysis.words_of(text))
    assert text_analysis.holds_run(words, tuple(terms)) == (pattern.search(text) is not None)


@given(
    row=st.tuples(
        st.text(max_size=5),
        st.sampled_from(["fact", "decision"]),
        st.text(max_size=20),
        st.text(max_size=10),
        st.one_of(st.none(), st.text(max_size=10)),
        st.text(max_size=10),
        st.floats(allow_nan=False),
        st.integers(min_value=0),
        st.integers(min_value=1),
    ),
    score=st.floats(min_value=0, max_value=1),
)
@settings(max_examples=100, deadline=None)
def test_candidate_of_a_row_is_the_constructed_candidate(row: NodeRow, score: float) -> None:
    from nervamem.recall.candidates import candidate_of

    built = Candidate(*row, relevance=score, via="search")
    made = candidate_of(row, score, "search")
    assert type(made) is Candidate
    assert [getattr(made, name) for name in Candidate.__slots__] == [
        getattr(built, name) for name in Candidate.__slots__
    ]


@pytest.mark.parametrize(
    ("phrase", "apart"),
    [
        ("café auth token", "auth café token"),  # not ASCII: the pattern decides
        ("x\tauth token", "auth x\ttoken"),  # a tab is not printable
        ("auth\x07token", "token\x07auth"),  # nor a control character, one word here
        ("AUTH token", "token AUTH"),  # printable ASCII: the run of words decides
    ],
)
def test_the_phrase_boost_is_earned_in_any_text(phrase: str, apart: str) -> None:
    """The phrase pattern, compiled only for a text that needs it (issue 21, round 6),
    boosts a row holding the terms in order, not one holding them apart, whatever the
    text's characters: the two rows differ by PHRASE_BOOST alone."""
    rows: list[NodeRow] = [
        (f"n{seq}", "fact", text, "2026-01-01", None, "2026-01-01", 1.0, 0, seq)
        for seq, text in enumerate([apart, phrase], start=1)
    ]
    terms = ["auth", "token"]
    text_analysis.text_words.cache_clear()
    idf = dict.fromkeys(terms, 1.0)
    found = relevance.score_rows(rows, dict.fromkeys([1, 2], terms), [], idf, 2, terms)
    assert found["n2"].relevance == 1.0
    assert found["n1"].relevance == pytest.approx(1 / relevance.PHRASE_BOOST)


def plain_first_order(
    members: dict[str, Sequence[int]], idf: dict[str, float], key_count: int
) -> tuple[list[int], list[float], list[list[str]]]:
    """search's first order as it was: each row's keys in members' order, its
    term_weights score, best first, ties newest first."""
    matched: dict[int, list[str]] = {}
    for key, rowids in members.items():
        for rowid in rowids:
            keys = matched.setdefault(rowid, [])
            if key:
                keys.append(key)
    first = relevance.term_weights(matched, idf, key_count)
    ordered = [-r for _, r in sorted([(-score, -r) for r, score in first.items()])]
    return ordered, [first[r] for r in ordered], [matched[r] for r in ordered]


# Weights that tie: two keys of 1.0 weigh what one of 2.0 does with the same share.
WEIGHTS = st.sampled_from([0.5, 1.0, 1.5, 2.0, 0.1 + 0.2, 0.3])


@settings(max_examples=300)
@given(
    st.dictionaries(
        st.sampled_from(["auth", "token", "cache", "redis", ""]),
        st.lists(st.integers(min_value=1, max_value=40), unique=True, max_size=25),
        max_size=5,
    ),
    st.lists(WEIGHTS, min_size=5, max_size=5),
    st.integers(min_value=1, max_value=6),
)
def test_search_first_order_by_sets_of_keys_is_the_plain_one(
    members: dict[str, list[int]], weights: list[float], extra_keys: int
) -> None:
    idf = dict(zip(["auth", "token", "cache", "redis", ""], weights, strict=True))
    key_count = len(members) + extra_keys  # the common keys count too
    ordered, scores, keys_of = relevance.ranked_by_keys(members, idf, key_count)
    plain = plain_first_order(members, idf, key_count)
    assert (ordered, scores, keys_of) == plain
    assert [math.copysign(1, s) for s in scores] == [math.copysign(1, s) for s in plain[1]]
