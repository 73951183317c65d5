"""visible.one_line takes text that is one line already as it is, without its split and
join: the answer must be the long way's, as recall's budget measures exactly what is
printed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nervamem.visible import one_line, visible

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

# Every kind of whitespace str.split() knows, controls, bidi overrides, plain letters.
AWKWARD = list(" \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2000\u2028\u2029\u202f\u3000\x1b\u202eab")


def _the_long_way(text: str) -> str:
    return visible(" ".join(text.split()))


@settings(max_examples=500)
@given(st.text(alphabet=st.sampled_from(AWKWARD)) | st.text())
def test_one_line_is_the_long_way(text: str) -> None:
    assert one_line(text) == _the_long_way(text)


def test_a_stored_sentence_comes_back_as_it_is() -> None:
    sentence = "Chose redis for the session cache"
    assert one_line(sentence) is sentence
