"""storage/tokenizer.py cuts text into exactly the terms FTS5's ``porter unicode61
remove_diacritics 2`` indexes: read back from FTS5 itself (``fts5vocab``) and compared
term by term, position by position, on real memories and on random text."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.agentset import agent_corpora
from nervamem.storage import unicode61
from nervamem.storage.tokenizer import stem, tokens

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

LOCOMO = Path("/work/shared/data/locomo/locomo-dev.json")


def fts5_tokens(texts: Sequence[str], tokenize: str = "porter unicode61 remove_diacritics 2"):
    """Each text's terms as FTS5 indexes them, in order (invalid UTF-8 that the stemmer
    can leave, as the port decodes it)."""
    conn = sqlite3.connect(":memory:")
    conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5 (x, tokenize = '{tokenize}')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, 'instance')")
    conn.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", enumerate(texts, 1))
    found: list[list[tuple[int, str]]] = [[] for _ in texts]
    for term, doc, offset in conn.execute("SELECT term, doc, offset FROM v"):
        found[doc - 1].append((offset, term))
    conn.close()
    return [[term for _, term in sorted(row)] for row in found]


def agent_texts() -> list[str]:
    texts: list[str] = []
    for corpus in agent_corpora():
        for session in corpus.sessions:
            texts += [memory.content for memory in session.memories]
        texts += [question.text for question in corpus.questions]
    return texts


def locomo_texts() -> Iterator[str]:
    for conversation in json.loads(LOCOMO.read_text(encoding="utf-8")):
        for key, turns in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                for turn in turns:
                    yield f"{turn['speaker']}: {turn['text']} {turn.get('blip_caption', '')}"
        yield from (qa["question"] for qa in conversation["qa"])


def test_agent_set_terms_equal_fts5() -> None:
    texts = agent_texts()
    assert len(texts) > 500
    assert [tokens(text) for text in texts] == fts5_tokens(texts)


@pytest.mark.skipif(not LOCOMO.exists(), reason="the LoCoMo data set is not on this machine")
def test_locomo_terms_equal_fts5() -> None:
    texts = list(locomo_texts())
    assert [tokens(text) for text in texts] == fts5_tokens(texts)


# Words built to reach every rule of the Porter stemmer, short and long, with non-ASCII
# letters whose UTF-8 bytes the stemmer sees as consonants.
SUFFIXES = (
    "ational tional enci anci izer logi bli alli entli eli ousli ization ation ator alism "
    "iveness fulness ousness aliti iviti biliti ical ness icate iciti ful ative alize al ance "
    "ence er ic able ible ant ement ment ent ion sion tion ou ism ate iti ous ive ize eed ed "
    "ing s es ies sses ss y e le ll at bl iz"
).split()
PIECES = ["a", "e", "i", "o", "u", "y", "b", "c", "l", "ll", "s", "ss", "t", "z", "ng", "w"]
PIECES += ["x", "é", "ñ", "₂"]
word = st.builds(
    lambda stem_part, suffix, ending: "".join(stem_part) + suffix + ending,
    st.lists(st.sampled_from(PIECES), max_size=6),
    st.sampled_from(["", *SUFFIXES]),
    st.sampled_from(["", "s", "ed", "ing", "ly"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(word, min_size=1, max_size=30))
def test_stemmer_equals_fts5(words: list[str]) -> None:
    text = " ".join(words)
    assert tokens(text) == fts5_tokens([text])[0]


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=0, max_size=80))
def test_any_text_equals_fts5(text: str) -> None:
    text = text.encode("utf-8", "replace").decode("utf-8", "replace")  # no lone surrogates
    if "\x00" in text:
        text = text.replace("\x00", " ")
    assert tokens(text) == fts5_tokens([text])[0]


def test_long_and_short_tokens_are_not_stemmed() -> None:
    texts = ["x" * n + "ing" for n in range(58, 66)] + ["ing", "ed", "is", "sses"]
    assert [tokens(text) for text in texts] == fts5_tokens(texts)
    assert stem("running") == "run"


def test_character_tables_equal_fts5_on_the_basic_plane() -> None:
    """Every character of the Basic Multilingual Plane is a separator or folds as the
    generated tables say (tools/generate_unicode61.py wrote them from FTS5)."""
    points = [cp for cp in range(1, 0x10000) if not 0xD800 <= cp <= 0xDFFF]
    found = fts5_tokens([f"a{chr(cp)}a" for cp in points], "unicode61 remove_diacritics 2")
    separators = {cp for a, b in unicode61.SEPARATORS for cp in range(a, b + 1) if cp < 0x10000}
    for cp, terms in zip(points, found, strict=True):
        if cp in separators:
            assert terms == ["a", "a"], hex(cp)
        else:
            assert terms == ["a" + unicode61.FOLD.get(cp, chr(cp)) + "a"], hex(cp)
