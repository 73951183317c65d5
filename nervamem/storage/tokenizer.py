"""SQLite FTS5's ``porter unicode61 remove_diacritics 2`` tokenizer, in Python.

The SQLite engine indexes node text with FTS5 (``mem_fts``); the PostgreSQL engine has
no FTS5, and PostgreSQL's own parser and Snowball stemmer cut words differently, so it
indexes with this port instead (storage/postgres/search.py) and recall tokenises its
queries with it (storage/postgres/text_index.py). One tokenisation for both engines is what
makes the same data rank the same on both.

Rules a reader must not break:
* The character tables (storage/unicode61.py) are generated from FTS5 itself
  (tools/generate_unicode61.py): never edit them by hand.
* The stemmer follows FTS5's own Porter implementation (fts5_tokenize.c), quirks
  included: it works on the token's UTF-8 bytes, leaves tokens shorter than 3 or longer
  than 64 bytes alone, and treats every byte that is not a, e, i, o, u (or y after a
  consonant) as a consonant. tests/storage/test_tokenizer.py compares both on real text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

MAX_STEM_BYTES = 64
_VOWELS = frozenset("aeiou")
_ASCII_TOKEN = re.compile(r"[0-9a-z]+")


def tokens(text: str) -> list[str]:
    """The terms FTS5 indexes for ``text``, in order (positions are list indexes)."""
    if text.isascii():
        return [stem(t) for t in _ASCII_TOKEN.findall(text.lower())]
    table, pattern = _unicode_tables()
    return [stem(t) for t in pattern.findall(text.translate(table))]


@functools.cache
def _unicode_tables() -> tuple[dict[int, str], re.Pattern[str]]:
    """The fold table and the token pattern, built on first non-ASCII text. Folding the
    whole text first is the same as folding each token: a token character folds to token
    characters or to nothing, never to a separator."""
    from .unicode61 import FOLD, SEPARATORS

    ranges = "".join(f"{_escape(a)}-{_escape(b)}" for a, b in SEPARATORS)
    return FOLD, re.compile(f"[^{ranges}]+")


def _escape(code_point: int) -> str:
    return f"\\U{code_point:08x}"


@functools.lru_cache(maxsize=65536)
def stem(token: str) -> str:
    """FTS5's Porter stemmer on one folded token (see the module's rules)."""
    if token.isascii():
        if not 3 <= len(token) <= MAX_STEM_BYTES:
            return token
        return _porter(token)
    raw = token.encode("utf-8")
    if not 3 <= len(raw) <= MAX_STEM_BYTES:
        return token
    # One str character per byte, so that suffixes and lengths count bytes as FTS5's do.
    return _porter(raw.decode("latin-1")).encode("latin-1").decode("utf-8", "replace")


def _is_vowel(c: str, y_is_vowel: bool) -> bool:
    return c in _VOWELS or (y_is_vowel and c == "y")


def _vc_end(word: str, start: int, end: int, previous_consonant: bool) -> int:
    """The end (exclusive) of the first vowel-then-consonant sequence in word[start:end],
    0 if there is none: the measure m of Porter's paper counts these."""
    consonant = previous_consonant
    i = start
    while i < end:
        consonant = not _is_vowel(word[i], consonant)
        if not consonant:
            break
        i += 1
    i += 1
    while i < end:
        consonant = not _is_vowel(word[i], consonant)
        if consonant:
            return i + 1
        i += 1
    return 0


def _m_gt0(word: str, n: int) -> bool:
    return _vc_end(word, 0, n, False) != 0


def _m_gt1(word: str, n: int) -> bool:
    first = _vc_end(word, 0, n, False)
    return first != 0 and _vc_end(word, first, n, True) != 0


def _m_eq1(word: str, n: int) -> bool:
    first = _vc_end(word, 0, n, False)
    return first != 0 and _vc_end(word, first, n, True) == 0


def _ends_cvc(word: str, n: int) -> bool:
    """*o: the stem ends consonant-vowel-consonant, the last not w, x or y."""
    if word[n - 1] in "wxy":
        return False
    consonant = False
    mask = 0
    for c in word[:n]:
        consonant = not _is_vowel(c, consonant)
        mask = (mask << 1) | consonant
    return mask & 0b111 == 0b101


def _has_vowel(word: str, n: int) -> bool:
    """*v*: a vowel in the stem; y counts as one anywhere but first."""
    return any(_is_vowel(word[i], i > 0) for i in range(n))


def _m_gt1_s_or_t(word: str, n: int) -> bool:
    return word[n - 1] in "st" and _m_gt1(word, n)


Rule = tuple[str, Callable[[str, int], bool], str]

# Each step: (suffix, condition on the stem, replacement). The first suffix that ends the
# word (leaving a stem of one byte or more) decides; if its condition fails, the step
# leaves the word alone. Suffixes that share their last two letters keep FTS5's order.
_STEP2: tuple[Rule, ...] = tuple(
    (suffix, _m_gt0, out)
    for suffix, out in (
        ("ational", "ate"),
        ("tional", "tion"),
        ("enci", "ence"),
        ("anci", "ance"),
        ("izer", "ize"),
        ("logi", "log"),
        ("bli", "ble"),
        ("alli", "al"),
        ("entli", "ent"),
        ("eli", "e"),
        ("ousli", "ous"),
        ("ization", "ize"),
        ("ation", "ate"),
        ("ator", "ate"),
        ("alism", "al"),
        ("iveness", "ive"),
        ("fulness", "ful"),
        ("ousness", "ous"),
        ("aliti", "al"),
        ("iviti", "ive"),
        ("biliti", "ble"),
    )
)
_STEP3: tuple[Rule, ...] = tuple(
    (suffix, _m_gt0, out)
    for suffix, out in (
        ("ical", "ic"),
        ("ness", ""),
        ("icate", "ic"),
        ("iciti", "ic"),
        ("ful", ""),
        ("ative", ""),
        ("alize", "al"),
    )
)
_STEP4: tuple[Rule, ...] = tuple(
    (suffix, _m_gt1_s_or_t if suffix == "ion" else _m_gt1, "")
    for suffix in (
        "al",
        "ance",
        "ence",
        "er",
        "ic",
        "able",
        "ible",
        "ant",
        "ement",
        "ment",
        "ent",
        "ion",
        "ou",
        "ism",
        "ate",
        "iti",
        "ous",
        "ive",
        "ize",
    )
)


def _apply(word: str, rules: tuple[Rule, ...]) -> str:
    for suffix, condition, out in rules:
        if len(word) > len(suffix) and word.endswith(suffix):
            stem_length = len(word) - len(suffix)
            if condition(word, stem_length):
                return word[:stem_length] + out
            return word
    return word


def _step1b(word: str) -> tuple[str, bool]:
    """(word, whether "ed" or "ing" was removed)."""
    if len(word) > 3 and word.endswith("eed"):
        return (word[:-1], False) if _m_gt0(word, len(word) - 3) else (word, False)
    for suffix in ("ed", "ing"):
        if len(word) > len(suffix) and word.endswith(suffix):
            stem_length = len(word) - len(suffix)
            if _has_vowel(word, stem_length):
                return word[:stem_length], True
            return word, False
    return word, False


def _porter(word: str) -> str:
    # Step 1a.
    if word[-1] == "s":
        if word[-2] == "e":
            if (len(word) > 4 and word[-4:-2] == "ss") or (len(word) > 3 and word[-3] == "i"):
                word = word[:-2]
            else:
                word = word[:-1]
        elif word[-2] != "s":
            word = word[:-1]
    # Step 1b.
    word, cut = _step1b(word)
    if cut:
        if len(word) > 2 and word[-2:] in ("at", "bl", "iz"):
            word += "e"
        else:
            last = word[-1]
            if (
                not _is_vowel(last, False)
                and last not in "lsz"
                and len(word) > 1
                and last == word[-2]
            ):
                word = word[:-1]
            elif _m_eq1(word, len(word)) and _ends_cvc(word, len(word)):
                word += "e"
    # Step 1c.
    if word[-1] == "y" and _has_vowel(word, len(word) - 1):
        word = word[:-1] + "i"
    # Steps 2 to 4.
    word = _apply(_apply(_apply(word, _STEP2), _STEP3), _STEP4)
    # Step 5a.
    n = len(word)
    if word[-1] == "e" and (
        _m_gt1(word, n - 1) or (_m_eq1(word, n - 1) and not _ends_cvc(word, n - 1))
    ):
        word = word[:-1]
    # Step 5b.
    n = len(word)
    if n > 1 and word[-1] == "l" and word[-2] == "l" and _m_gt1(word, n - 1):
        word = word[:-1]
    return word
