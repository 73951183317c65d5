"""The words of a query: its terms, and the key terms that carry its topic.

User text is data, never FTS5 syntax: a term is a run of letters and digits, so quotes,
operators and parentheses only separate terms (recall/search.py quotes every term
before MATCH).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_TERM = re.compile(r"[^\W_]+", re.UNICODE)
MAX_QUERY_TERMS = 32

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


def query_terms(text: str) -> list[str]:
    return [t.lower() for t in _TERM.findall(text)][:MAX_QUERY_TERMS]


def content_terms(terms: Sequence[str]) -> list[str]:
    """The words of a query that carry its topic: no stop words, and no one-letter
    fragments (the "s" of "Gina's") unless they are digits. A query made only of such
    words keeps them, so that it still finds something."""
    unique = list(dict.fromkeys(terms))
    kept = [t for t in unique if t not in STOPWORDS and (len(t) > 1 or t.isdigit())]
    return kept or [t for t in unique if len(t) > 1 or t.isdigit()] or unique
