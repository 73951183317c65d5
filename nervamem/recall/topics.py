"""A query that asks nothing names a topic, and the decision about it answers it.

"retries on the API client", "netrc", "JWT auth": an agent that recalls a topic before
it works on it needs what was settled about it. The decision and the notes around it
often hold the same words; a short note holds them closer together and, by BM25's
length norm and term proximity, outranks the decision that spells out a configuration
("Use a urllib3 Retry(total=5, backoff_factor=0.5, ...) as max_retries of the
HTTPAdapter mounted on the API client's Session" against "Added a test that the API
client retries a 503 response": 0.43 against 1.0). So when the query is a topic
(:func:`names_a_topic`), every decision that search found (it holds the query's words)
weighs TOPIC_DECISION_WEIGHT (:func:`favour_decisions`, after expansion, with or without
hops, like the time rule of recall/when.py), but no more than TOPIC_DECISION_CEILING
times the best relevance before it: the decision is raised to the top, not far above
it, so a note that matched as well as the best stays close to it. Unbounded, a decision
that holds the topic's words loosely ("Cache API client responses for 60 seconds", 0.61
for "API client") pushed the notes that matched at 1.0 under half of its score, and
``--min-score 0.5`` left only the decisions. A decision that only session context or
graph expansion reached is about a neighbouring topic and keeps its weight. A question
("where does the API client get its base URL?") asks for something in particular, and
the decision gets no such weight.

English question words only; no kind of memory other than ``decision`` is weighed, and
the query's form, not its words, decides.
"""

from __future__ import annotations

from collections.abc import Iterable

from .candidates import Candidate
from .terms import query_terms

TOPIC_DECISION_WEIGHT = 2.5
# At most this share of the best relevance before the rule (the agent set gives the same
# figures at 1.0, 1.1, 1.25 and 1.5 on seeds 7 and 1; above 1 a raised decision wins its
# tie with the best note).
TOPIC_DECISION_CEILING = 1.1

_INTERROGATIVES = frozenset(
    ("what", "when", "where", "who", "whom", "whose", "why", "how", "which", "whether")
)
# A first word that opens a yes/no question ("is the cache warm", "did we pin it").
_AUXILIARIES = frozenset(
    (
        "is are was were am do does did can could should would will shall may might must "
        "has have had"
    ).split()
)


def names_a_topic(query: str) -> bool:
    """Whether the query names a topic rather than asks a question: no question mark at
    its end, no question word, and no auxiliary verb first."""
    if query.rstrip().endswith(("?", "？")):
        return False
    words = query_terms(query)
    if not words or words[0] in _AUXILIARIES:
        return False
    return not any(word in _INTERROGATIVES for word in words)


def favour_decisions(candidates: Iterable[Candidate], query: str) -> None:
    """Weigh the decisions that search found TOPIC_DECISION_WEIGHT, up to
    TOPIC_DECISION_CEILING times the best relevance, if the query names a topic."""
    if not names_a_topic(query):
        return
    found = list(candidates)
    ceiling = TOPIC_DECISION_CEILING * max((c.relevance for c in found), default=0.0)
    for candidate in found:
        if candidate.kind == "decision" and candidate.via == "search":
            candidate.relevance = min(candidate.relevance * TOPIC_DECISION_WEIGHT, ceiling)
