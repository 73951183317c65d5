"""A text's words, the roots of terms and where they start in it: what recall/relevance.py
reads of a candidate's text (the phrase, the common terms, the places proximity compares),
and what the node cache keeps of it (recall/node_cache.py). Separate from the scores
built on them, which are formulas over these facts; the facts are the fast paths (ASCII,
cached codes) that must find exactly what the slower patterns would.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from itertools import compress, count, repeat
from typing import cast

from .candidates import NodeRow
from .irregular import past_forms
from .node_cache import SearchFacts, TextAnalysis, Words
from .terms import STOPWORDS


def phrase_pattern(terms: Sequence[str]) -> re.Pattern[str]:
    """The query's terms as a phrase: whole words in order, anything but letters and
    digits between them, case aside."""
    return re.compile(r"(?<![^\W_])" + r"[\W_]+".join(map(re.escape, terms)) + r"(?![^\W_])", re.I)


def holds_run(words: Words, terms: Words) -> bool:
    """Whether ``terms`` are consecutive ``words``: what score_rows' phrase pattern finds
    in a printable ASCII text (its words are then its runs of letters and digits, and
    the pattern matches whole runs, case aside, with only other characters between
    them) from ASCII terms (letters and digits: terms.query_terms). ~0.5 us a row
    against ~5 us for the pattern, on the ~30 rows a query that hold every term.
    score_rows looks for the first term in the lowered text before (~0.15 us), not for
    every term (~1.3 us for four): every row of an all-common query holds them all."""
    first, size = terms[0], len(terms)
    at = -1
    while True:
        try:
            at = words.index(first, at + 1)
        except ValueError:
            return False
        if words[at : at + size] == terms:
            return True


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


def root_of(term: str) -> str:
    for suffix in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= 3:
            return term[: -len(suffix)]
    return term


def common_term_roots(common: list[str]) -> list[list[str]]:
    """Per common term, the roots looked for in a candidate's text: the term's own and
    those of its past forms (search looks them up together: recall/irregular.py)."""
    return [[root_of(form) for form in (term, *past_forms(term))] for term in common]


def _common_matcher(common: list[str]) -> re.Pattern[str] | None:
    """One pattern that finds any common term (or a past form of it) at a word start;
    group i is term i."""
    return common_pattern(common) if common else None


def common_pattern(common: list[str]) -> re.Pattern[str]:
    groups = "|".join(
        "(" + "|".join(re.escape(root) for root in roots) + ")"
        for roots in common_term_roots(common)
    )
    return re.compile(rf"(?<![^\W_])(?:{groups})", re.IGNORECASE)


def _common_in_ascii(lowered: str, roots: Sequence[Sequence[str]]) -> set[int]:
    """What ``_common_matcher(common).finditer`` finds in an ASCII text (group numbers,
    from 1), from the text lowered and each term's roots (:func:`common_term_roots`): a root
    counts where it starts a word (no letter or digit before it) and no earlier match
    covers it; where several roots start at the same place, the one the pattern tries
    first (groups in order, and a group's roots in order) decides the match's length."""
    return common_in_ascii_flat(lowered, listed_roots(roots))


def listed_roots(roots: Sequence[Sequence[str]]) -> list[tuple[str, int, int, int]]:
    """(root, group number from 1, order among its group's roots, the length its match
    covers) of every root, in the order :func:`_common_matcher`'s pattern tries them."""
    return [
        (root, number, order, max(len(root), 1))
        for number, forms in enumerate(roots, start=1)
        for order, root in enumerate(forms)
    ]


def common_in_ascii_flat(lowered: str, flat: Sequence[tuple[str, int, int, int]]) -> set[int]:
    """:func:`_common_in_ascii` with the roots listed (:func:`listed_roots`) once a query."""
    starts: list[tuple[int, int, int, int]] = []
    find = lowered.find
    for root, number, order, length in flat:
        at = find(root)
        while at != -1:
            if at == 0 or not lowered[at - 1].isalnum():
                starts.append((at, number, order, length))
            at = find(root, at + 1)
    if len(starts) < 2:
        return {starts[0][1]} if starts else set()
    starts.sort()  # by place, then as the pattern tries them; (number, order) is unique
    found: set[int] = set()
    end = 0
    for at, number, _, length in starts:
        if at >= end:
            found.add(number)
            end = at + length
    return found


def roots_apart(flat: Sequence[tuple[str, int, int, int]]) -> bool:
    """Whether roots (:func:`listed_roots`) of letters and digits only, no root of one
    term starting another term's: then two matches never start at the same place, nor
    one inside another (no word starts inside a run of letters and digits), and a term
    is found where any of its roots starts a word (:func:`common_in_ascii_apart`)."""
    return all(root.isalnum() for root, _, _, _ in flat) and not any(
        one.startswith(other)
        for one, number, _, _ in flat
        for other, other_number, _, _ in flat
        if number != other_number
    )


def common_in_ascii_apart(lowered: str, flat: Sequence[tuple[str, int, int, int]]) -> set[int]:
    """:func:`common_in_ascii_flat` for roots that are :func:`roots_apart`: each term's
    first place where one of its roots starts a word is enough, no places are listed
    and sorted. An all-common query's ~150 rows each hold every term."""
    found: set[int] = set()
    find = lowered.find
    for root, number, _, _ in flat:
        if number in found:
            continue
        at = find(root)
        while at != -1:
            if at == 0 or not lowered[at - 1].isalnum():
                found.add(number)
                break
            at = find(root, at + 1)
    return found


def _split_text(text: str) -> TextAnalysis:
    """:func:`words_of` the text, its distinct words that are not stop words, and whether
    it is printable ASCII (then its words decide the phrase: :func:`holds_run`)."""
    return _analysis(tuple(words_of(text)), text)


def _analysis(words: tuple[str, ...], text: str) -> TextAnalysis:
    # Printable once a text, not once a recall: ~0.8 us a row of 190 characters.
    plain = text.isascii() and text.isprintable()
    return words, tuple(frozenset(words).difference(STOPWORDS)), plain


# Where there is no node cache (PostgreSQL, a transaction): the texts seen last.
TEXT_CACHE_SIZE = 4096
text_words = functools.lru_cache(maxsize=TEXT_CACHE_SIZE)(_split_text)


def analysed(rows: Sequence[NodeRow], texts: SearchFacts) -> list[TextAnalysis]:
    """:func:`_split_text` of each row's text, from ``texts`` where it holds the row's
    seq; the others are split with their words interned, and kept."""
    settled, fresh = texts.texts.entries.get, texts.texts.fresh.get
    analyses = []
    for row in rows:
        analysis = settled(row[8]) or fresh(row[8])
        if analysis is None:
            analysis = _analysis(texts.interned(words_of(row[2])), row[2])
            texts.keep_text(row[8], analysis)
        analyses.append(analysis)
    return analyses


def words_of(text: str) -> list[str]:
    """Lower-cased words, punctuation dropped: a cheap split (str.translate), not FTS5's.
    An ASCII text is lowered and translated as bytes: the same characters, ~5x sooner
    than the str methods."""
    if text.isascii():
        return text.encode().lower().translate(_ASCII_PUNCTUATION).decode().split()
    return text.lower().translate(_PUNCTUATION).split()


# string.punctuation, spelled out: importing the string module costs ~1.3 ms of start-up.
_PUNCTUATION_MARKS = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_PUNCTUATION = str.maketrans(dict.fromkeys(_PUNCTUATION_MARKS, " "))
_ASCII_PUNCTUATION = bytes.maketrans(_PUNCTUATION_MARKS.encode(), b" " * len(_PUNCTUATION_MARKS))


def root_places(words: Sequence[str]) -> tuple[dict[str, int], list[tuple[str, ...]]]:
    """Each distinct root (:func:`root_of`) of ``words`` with its place among a row's codes,
    and at each place the forms :func:`_starting` tries: the root, then the word it was
    first cut from if that is longer."""
    places: dict[str, int] = {}
    forms: list[tuple[str, ...]] = []
    for word in words:
        root = root_of(word)
        if root not in places:
            places[root] = len(forms)
            forms.append((root,) if root == word else (root, word))
    return places, forms


def _starting(words: Sequence[str], forms: Sequence[str], lowered: str | None) -> Sequence[int]:
    """The positions of the ``words`` that start with a root, ``forms[0]``; ``forms`` is
    the root, then the key it was cut from if that is longer. With ``lowered``, the
    ASCII text the words were split from (words_of), lowered: each such word is a place
    where the root occurs in it, and those places do not overlap (a word holds its root,
    words do not overlap), so there are at most ``lowered.count(root)`` of them; when as
    many words are the root or the key, they are all. Nearly every row of an all-common
    query holds each root once: ~0.6 us a root against ~4.5 us for a startswith pass
    over its words."""
    root = forms[0]
    if lowered is not None:
        places = lowered.count(root)
        if not places:
            return ()
        if places == 1:
            for form in forms:
                try:
                    return (words.index(form),)
                except ValueError:
                    continue
        else:
            held = [(form, words.count(form)) for form in forms]
            if sum(times for _, times in held) == places:
                positions = []
                for form, times in held:
                    at = -1
                    for _ in range(times):
                        at = words.index(form, at + 1)
                        positions.append(at)
                return positions
    return list(compress(count(), map(str.startswith, words, repeat(root))))


def _starts_code(words: Sequence[str], forms: Sequence[str], lowered: str | None) -> int:
    """Where the ``words`` that start with a root (``forms``, see :func:`_starting`) are,
    as an int (kept in SearchFacts.starts: an int is never tracked by the cyclic GC):
    0 none, p + 1 the one at p, else minus the mask of their positions (bit p: word p)."""
    positions = _starting(words, forms, lowered)
    if len(positions) < 2:
        return positions[0] + 1 if positions else 0
    bits = bytearray((max(positions) >> 3) + 1)  # linear, whatever the positions
    for at in positions:
        bits[at >> 3] |= 1 << (at & 7)
    return -int.from_bytes(bits, "little")


# A row's code in a root's table (dict.get, typed for map).
code_in = cast("Callable[[dict[int, int], int], int | None]", dict.get)


def as_mask(code: int) -> int:
    return 1 << (code - 1) if code > 0 else -code


# What finds and keeps a row's codes: the tables by place, the forms by place, its seq,
# words and lowered text (see score_rows).
Row = tuple[Sequence[dict[int, int]], Sequence[Sequence[str]], int, Sequence[str], str | None]


def fill(codes: list[int | None], row: Row, wanted: Iterable[int]) -> int:
    """The codes at the ``wanted`` places that a row's lookup did not find (None), found
    and kept (a row's other roots are not looked for: a first recall would pay for
    them); the last one's."""
    tables, forms, seq, words, lowered = row
    last = 0
    for place in wanted:
        code = codes[place]
        if code is None:
            code = codes[place] = tables[place][seq] = _starts_code(words, forms[place], lowered)
        last = code
    return last


def within(first: int, second: int, window: int) -> bool:
    """Whether a position of mask ``first`` (bit p: word p) lies within ``window`` of one of
    mask ``second``: linear in the words, as a memory of a megabyte holds a common word
    thousands of times and comparing every pair took recall minutes."""
    spread = second
    for step in range(1, window + 1):
        spread |= second << step | second >> step
    return bool(first & spread)
