"""recall/packing.py's single_line: visible.one_line's answer, taken as is for text that
is one line already; the budget measures exactly what is printed, so the two must never
differ."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nervamem.recall.packing import single_line
from nervamem.visible import one_line

# Every kind of whitespace str.split() knows, controls, bidi overrides, plain letters.
AWKWARD = list(" \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2000\u2028\u2029\u202f\u3000\x1b\u202eab")


@settings(max_examples=500)
@given(st.text(alphabet=st.sampled_from(AWKWARD)) | st.text())
def test_single_line_is_one_line(text: str) -> None:
    assert single_line(text) == one_line(text)


def test_a_stored_sentence_comes_back_as_it_is() -> None:
    sentence = "Chose redis for the session cache"
    assert single_line(sentence) is sentence
