"""What recall and timeline refuse before they read anything: each check raises
BadInputError with the sentence the CLI prints, in the order the checks were always
made (the first problem found is the one reported)."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import BadInputError
from ..kinds import NODE_KINDS

MAX_BUDGET = 1_000_000
MAX_HOPS = 5
MAX_TIMELINE_LIMIT = 100_000


def check_recall_request(
    query: str,
    *,
    budget_tokens: int,
    hops: int,
    kinds: Sequence[str] | None,
    min_score: float = 0.0,
) -> None:
    if isinstance(budget_tokens, bool) or not 1 <= budget_tokens <= MAX_BUDGET:
        raise BadInputError(f"--budget must be between 1 and {MAX_BUDGET}, not {budget_tokens}")
    if not 0 <= hops <= MAX_HOPS:
        raise BadInputError(f"--hops must be between 0 and {MAX_HOPS}, not {hops}")
    if not 0.0 <= min_score <= 1.0:  # NaN fails too
        raise BadInputError(f"--min-score must be between 0 and 1, not {min_score}")
    for kind in kinds or ():
        if kind not in NODE_KINDS:
            raise BadInputError(f"unknown kind {kind[:40]!r}: use one of {', '.join(NODE_KINDS)}")
    _check_query(query)


def check_timeline_request(query: str, *, limit: int) -> None:
    if not 1 <= limit <= MAX_TIMELINE_LIMIT:
        raise BadInputError(f"--limit must be between 1 and {MAX_TIMELINE_LIMIT}, not {limit}")
    _check_query(query)


def _check_query(query: str) -> None:
    if "\x00" in query:
        raise BadInputError("the query contains a NUL byte")
    try:
        # Undecodable argv bytes arrive as lone surrogates, which no output can encode.
        query.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInputError("the query is not valid UTF-8 text") from None
