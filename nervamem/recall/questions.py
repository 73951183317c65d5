"""A memory that asks a question (its text ends with "?") is answered by what was
recorded right after it in its session: session context (recall/session_context.py)
passes QUESTION_SHARE of the question's relevance to that memory (twice the usual share
of a neighbour), and the pipeline weighs the question itself QUESTION_DAMP
(:func:`damp_questions`, after expansion, with or without hops), as a question only
restates what is asked. "When are you opening the
studio?" holds the query's words; the reply after it ("The opening night is tomorrow")
holds the answer and often none of them. No speaker, dialogue or dataset knowledge:
only the question mark and the order in which a session recorded its memories.
"""

from __future__ import annotations

from collections.abc import Iterable

from .candidates import Candidate

QUESTION_SHARE = 1.0
QUESTION_DAMP = 0.6


def asks(text: str) -> bool:
    """Whether a memory asks a question: its text ends with a question mark (ASCII or
    full-width), closing quotes and brackets after it aside (``He asked "why?"``)."""
    if "?" not in text and "？" not in text:  # most texts: one search in C, no strips
        return False
    return text.rstrip().rstrip(_CLOSERS).rstrip().endswith(("?", "？"))


_CLOSERS = "\"')]}»”’」』"


def damp_questions(candidates: Iterable[Candidate]) -> None:
    """A question restates what is asked; the memory after it, which session context has
    already raised, holds the answer."""
    for candidate in candidates:
        if asks(candidate.content):
            candidate.relevance *= QUESTION_DAMP
