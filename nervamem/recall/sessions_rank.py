"""Sessions are context, not answers: a session node ranks below the best memory the
recall found (see :func:`rank_sessions`)."""

from __future__ import annotations

from .candidates import Candidate

# A session node keeps at most this share of the relevance of the best memory found.
SESSION_SHARE = 0.5


def rank_sessions(found: dict[str, Candidate]) -> None:
    """Cap each session node's relevance at SESSION_SHARE x that of the best memory
    (neither a session nor an entity) among the candidates.

    A session's text is its title, and agents name sessions after their task
    (docs/guide-agents.md): a short title holding every word of the query outscored the
    decision the task led to, and three sessions of the same task filled a small budget
    with titles. The memories are the answer; the session is their provenance, which
    the item line names anyway. A session is still recalled, after the best memory,
    and when no memory matches the query (it is about the session itself: only titles
    hold its words) the sessions keep their relevance. Capping by the session's own
    memories instead was tried and dropped: a session whose memories do not use the
    query's words (review fixes of the same task) kept the first place."""
    best = max(
        (c.relevance for c in found.values() if c.kind not in ("session", "entity")),
        default=0.0,
    )
    if best <= 0.0:
        return
    cap = SESSION_SHARE * best
    for candidate in found.values():
        if candidate.kind == "session" and candidate.relevance > cap:
            candidate.relevance = cap
