"""Issue 38: a long memory is found and shown by the passage that matches the query, an
excerpt marked ``…`` with the memory's ID (``show`` gives the whole), charged to the
budget like any line; JSON says which characters were shown and how long the whole is."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from nervamem.recall.candidates import Candidate
from nervamem.recall.passages import LONG_CHARS, best_passage, query_stems, weigh_passages

pytestmark = pytest.mark.both_engines  # the same assertions on SQLite and PostgreSQL

Run = Callable[..., Any]

FILLER = " ".join(
    f"step {n}: the deploy script copies artefact {n} to the mirror." for n in range(60)
)
ANSWER = (
    "The webhook retries back off exponentially, five attempts, then park in a dead letter queue."
)
LONG = FILLER[: len(FILLER) // 2] + " " + ANSWER + " " + FILLER[len(FILLER) // 2 :]


def test_the_passage_is_the_window_with_the_query_words() -> None:
    start, end = best_passage(LONG, query_stems("how do webhook retries work"), 400) or (0, 0)
    assert ANSWER in LONG[start:end]
    assert start > 0 and end < len(LONG) and end - start < len(LONG) // 3
    # Short content is shown whole; content that matches nowhere by its opening.
    assert best_passage("the retry loop " * 10, query_stems("retry"), 400) is None
    assert best_passage(LONG, query_stems("kubernetes"), 400)[0] == 0  # type: ignore[index]
    assert len(LONG) > 3 * LONG_CHARS


def test_a_long_memory_is_shown_by_its_passage(cli: Run) -> None:
    node_id = cli("store", "fact", LONG).stdout.strip()
    cli("store", "fact", "the payments webhook is owned by the billing team")
    markdown = cli("recall", "webhook retries dead letter", "--budget", "1000").stdout
    line = next(ln for ln in markdown.splitlines() if "dead letter" in ln)
    assert line.startswith("- f-") and "…" in line and ANSWER in line
    assert len(line) < len(LONG) // 2
    used = int(markdown.splitlines()[0].split(" · ")[-1].split("/")[0])
    assert used <= 1000
    document = json.loads(
        cli("recall", "webhook retries dead letter", "--budget", "1000", "-f", "json").stdout
    )
    item = next(i for i in document["items"] if i["id"] == node_id)
    passage = item["passage"]
    assert passage["length"] == len(LONG) and item["content"] == LONG
    assert ANSWER in LONG[passage["start"] : passage["end"]]
    assert line.split(" ", 3)[3].strip("…") == " ".join(
        LONG[passage["start"] : passage["end"]].split()
    )
    short = next(i for i in document["items"] if i["id"] != node_id)
    assert short["passage"] is None
    # show gives the whole memory by the ID the recall line printed.
    shown = json.loads(cli("show", line.split()[1], "-f", "json").stdout)["nodes"][0]
    assert shown["content"] == LONG


def _candidate(content: str) -> Candidate:
    when = "2026-07-03T12:00:00.000Z"
    return Candidate(
        "f_1", "fact", content, when, None, when, 1.0, 0, 1, relevance=1.0, via="search"
    )


def test_a_long_memory_is_worth_what_its_passage_matches() -> None:
    # The answer in one paragraph: the passage holds every query word the memory holds.
    focused = _candidate(LONG)
    # The same words once each, thousands of characters apart: no window holds them all.
    scattered = _candidate(
        "webhook " + FILLER[:1500] + " retries " + FILLER[1500:3000] + " dead letter"
    )
    short = _candidate("webhook retries end in the dead letter queue")
    weigh_passages([focused, scattered, short], "webhook retries dead letter", 1000)
    assert focused.relevance == 1.0 == short.relevance
    assert scattered.relevance <= 0.5


def test_below_1000_tokens_a_long_memory_is_shown_whole_or_not_at_all(cli: Run) -> None:
    cli("store", "fact", LONG)
    cli("store", "fact", "the webhook retries are documented in the runbook")
    markdown = cli("recall", "webhook retries dead letter", "--budget", "500").stdout
    body = markdown.splitlines()[1:]  # the header may cut the query with …
    assert "runbook" in markdown and not any("…" in line for line in body)
