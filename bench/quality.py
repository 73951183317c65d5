"""Recall quality: how much of what a question needs lands in the recalled tokens.

One command, a path to the data:

    python bench/quality.py ../shared/data/locomo/locomo-dev.json      # LoCoMo (default set)
    python bench/quality.py --set agent                               # generated agent memory
    python bench/quality.py --set beam /tmp/beam/chats/500K          # BEAM, one tier's folder

For every question and every budget (200 / 500 / 1000 tokens, the default char counter)
it calls ``MemoryStore.recall(question, budget_tokens=B)`` -- the code path of the CLI --
and scores the Markdown it returns: the fraction of the question's expected memories
whose text appears in it (lower-cased, whitespace collapsed, curly quotes straightened).
The mean per budget is printed overall and per category, next to a plain FTS5 BM25
reference that packs ``[YYYY-MM-DD] content`` lines in bm25() order into the same budget.

LoCoMo (data path required; the data is never copied into the project): each LoCoMo
session is one nervamem session, started before its turns and ended after them; each
turn is one ``fact``, content ``"<speaker>: <text>"`` plus ``" [shares image: <caption>]"``
when it has one, valid from its session's date-time; one store per conversation.

Agent set (``--set agent``, see bench/agentset.py): seeded, generated coding-agent
memories with questions whose answers are known by construction. It also reports how
often a superseded memory showed up (``stale``): the reference has no temporal mask.

BEAM (``--set beam``, see bench/beam.py; the folder of one tier of a copy of the public
repository mohammadtavakoli78/BEAM, never copied into the project): long developer /
coding-assistant conversations, one ``fact`` per message, one session per batch, budgets
200 / 500 / 1000 / 2000. An evidence message counts as found when the output holds it
whole or a contiguous excerpt of at least 300 characters of it (shorter ones: whole).
The BM25 reference passes over a line that does not fit and tries the next (a message is
~2,300 characters: stopping at the first would leave 200 tokens empty), and a third
system, ``best``, packs the evidence alone, cheapest first (an excerpt of 300 characters
where that is cheaper): the best possible under the rule. Knowledge-update questions add
two rows: how often the updated message and the original one were shown.

Access counting: recall increments ``access_count`` of what it returns, and the
frequency factor then favours those nodes in later recalls, so the score of a question
would depend on which questions were asked before it. The benchmark measures every
question on the store exactly as ingested: after ingest the store object is marked
read-only, which makes recall skip that bookkeeping (``--keep-access`` measures with it).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.corpus import Corpus, Memory, Question, Session
from nervamem import MemoryStore
from nervamem.models import RecallResult

BUDGETS = (200, 500, 1000)
BEAM_BUDGETS = (200, 500, 1000, 2000)
DEFAULT_LOCOMO = Path(__file__).resolve().parent.parent / "../shared/data/locomo/locomo-dev.json"
LOCOMO_CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
INGEST_START = datetime(2026, 1, 5, 9, 0, 0, tzinfo=timezone.utc)


# ---------------------------------------------------------------------------- scoring
_QUOTES = str.maketrans(
    {
        "‘": "'",
        "’": "'",
        "‚": "'",
        "‛": "'",
        "“": '"',
        "”": '"',
        "„": '"',
        "‟": '"',
        "′": "'",
        "″": '"',
    }
)


def normalise(text: str) -> str:
    return " ".join(text.translate(_QUOTES).lower().split())


def holds(flat: str, text: str, min_excerpt: int = 0) -> bool:
    """Whether ``flat`` (normalised) holds ``text`` (normalised) whole, or, with
    ``min_excerpt`` and a longer text, a contiguous excerpt of that many characters."""
    if text in flat:
        return True
    if not min_excerpt or len(text) <= min_excerpt:
        return False
    # A common run of min_excerpt characters or more covers at least one whole block of
    # half that length at a multiple of it: look those blocks up, extend each occurrence.
    half = min_excerpt // 2
    for start in range(0, len(text) - half + 1, half):
        pos = flat.find(text[start : start + half])
        while pos != -1:
            left = 0
            while left < min(start, pos) and text[start - left - 1] == flat[pos - left - 1]:
                left += 1
            right = half
            while (
                start + right < len(text)
                and pos + right < len(flat)
                and text[start + right] == flat[pos + right]
            ):
                right += 1
            if left + right >= min_excerpt:
                return True
            pos = flat.find(text[start : start + half], pos + 1)
    return False


def found_share(output: str, texts: Sequence[str], min_excerpt: int = 0) -> float:
    flat = normalise(output)
    return statistics.fmean(holds(flat, normalise(t), min_excerpt) for t in texts)


def score_text(output: str, question: Question) -> tuple[float, int]:
    """(fraction of expected texts present, number of forbidden texts present)."""
    flat = normalise(output)
    found = sum(
        1 for text in question.expected if holds(flat, normalise(text), question.min_excerpt)
    )
    stale = sum(
        1 for text in question.forbidden if holds(flat, normalise(text), question.min_excerpt)
    )
    if question.any_of:
        return float(found > 0), stale
    return found / len(question.expected), stale


def relevant_share(result: RecallResult, question: Question) -> float:
    """The share of the recall's characters spent on the items that answer the question
    (their content, plus what the line shows of their rationale): what the budget bought."""
    wanted = [normalise(text) for text in question.expected]
    spent = 0
    for item in result.items:
        content = normalise(item.content)
        if any(text in content or content in text for text in wanted):
            line = next((ln for ln in result.markdown.splitlines() if item.short_id in ln), "")
            spent += len(line)
    return spent / max(len(result.markdown), 1)


# ---------------------------------------------------------------------------- LoCoMo
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+(\w+),?\s+(\d{4})", re.I)
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
_MONTHS = {
    month: number
    for number, month in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ),
        start=1,
    )
}


def locomo_time(text: str) -> str:
    match = _DATE.search(text)
    if not match:
        raise ValueError(f"unreadable session date {text!r}")
    hour, minute, half, day, month, year = match.groups()
    hour_24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    moment = datetime(int(year), _MONTHS[month.lower()], int(day), hour_24, int(minute))
    return moment.strftime("%Y-%m-%dT%H:%M:00Z")


def locomo_corpora(path: Path) -> list[Corpus]:
    corpora = []
    for conversation in json.loads(path.read_text(encoding="utf-8")):
        talk = conversation["conversation"]
        numbers = sorted(
            int(key.split("_")[1])
            for key in talk
            if re.fullmatch(r"session_\d+", key) and talk[key]
        )
        sessions: list[Session] = []
        turn_text: dict[tuple[int, int], str] = {}
        for number in numbers:
            when = locomo_time(talk[f"session_{number}_date_time"])
            memories = []
            for turn in talk[f"session_{number}"]:
                content = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    content += f" [shares image: {turn['blip_caption']}]"
                match = _EVIDENCE.fullmatch(turn["dia_id"].strip())
                if match:
                    turn_text[(int(match[1]), int(match[2]))] = turn["text"]
                memories.append(Memory(turn["dia_id"], "fact", content, when))
            sessions.append(Session(f"{conversation['sample_id']} session {number}", memories))
        questions = []
        for qa in conversation["qa"]:
            refs = [r for raw in qa.get("evidence", []) for r in re.split(r"[;,\s]+", raw) if r]
            wanted = []
            for ref in refs:
                match = _EVIDENCE.search(ref)
                key = (int(match[1]), int(match[2])) if match else None
                if key in turn_text and turn_text[key] not in wanted:
                    wanted.append(turn_text[key])
            if wanted:
                category = LOCOMO_CATEGORIES.get(qa["category"], str(qa["category"]))
                questions.append(Question(qa["question"], category, tuple(wanted)))
        corpora.append(Corpus(conversation["sample_id"], sessions, questions))
    return corpora


# ---------------------------------------------------------------------------- ingest
class StepClock:
    """Deterministic clock: every reading is one second after the previous one, as if an
    agent stored one memory after another (IDs and short IDs are then reproducible)."""

    def __init__(self, start: datetime = INGEST_START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        current = self.now
        self.now += timedelta(seconds=1)
        return current


class SeededRandom:
    def __init__(self, seed: int) -> None:
        import random

        self._random = random.Random(seed)

    def __call__(self) -> int:
        return self._random.getrandbits(64)


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def ingest(store: MemoryStore, corpus: Corpus, *, bulk: bool = False) -> dict[str, str]:
    """Store the corpus; return memory key -> node ID.

    By default each memory is its own write, as an agent stores them (one call each, the
    clock moving on), so IDs, and the short IDs that recall prints, look like real ones.
    ``bulk`` wraps everything in one ``store.batch()``: one transaction, one clock
    reading, so every ID shares its 13-digit time part and short IDs grow to ~18 chars.
    """
    ids: dict[str, str] = {}

    def put(memory: Memory) -> None:
        ids[memory.key] = store.store(
            memory.kind,
            memory.content,
            valid_from=memory.valid_from,
            entities=memory.entities,
            supersedes=ids[memory.supersedes] if memory.supersedes else None,
            caused_by=[ids[k] for k in memory.caused_by],
            confidence=memory.confidence,
            rationale=memory.rationale,
            rejected=memory.rejected,
        )

    with store.batch() if bulk else contextlib.nullcontext():
        for memory in corpus.loose:
            put(memory)
        for session in corpus.sessions:
            if session.recorded_from and isinstance(store.storage.clock, StepClock):
                store.storage.clock.now = max(
                    store.storage.clock.now, _moment(session.recorded_from)
                )
            store.start_session(session.title)
            for memory in session.memories:
                put(memory)
            store.end_session()
    return ids


# ---------------------------------------------------------------------------- BM25 reference
REFERENCE_STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves""".split()
)


class Bm25Reference:
    """Plain FTS5: porter unicode61, non-stopword terms OR'd, ranked by bm25(), lines
    ``[YYYY-MM-DD] content`` packed in rank order until the next one would not fit.
    No temporal mask, no graph: superseded memories stay in."""

    def __init__(self, corpus: Corpus, *, first_fit: bool = False) -> None:
        self._first_fit = first_fit
        self._db = sqlite3.connect(":memory:")
        self._db.execute(
            "CREATE VIRTUAL TABLE docs USING fts5(content, line UNINDEXED, "
            "tokenize = 'porter unicode61 remove_diacritics 2')"
        )
        rows = [
            (m.content, f"[{m.valid_from[:10]}] {' '.join(m.content.split())}")
            for m in [*corpus.loose, *(m for s in corpus.sessions for m in s.memories)]
        ]
        self._db.executemany("INSERT INTO docs (content, line) VALUES (?, ?)", rows)

    def recall(self, query: str, budget: int) -> str:
        terms = [
            t
            for t in dict.fromkeys(re.findall(r"[^\W_]+", query.lower()))
            if t not in REFERENCE_STOPWORDS
        ]
        if not terms:
            return ""
        expression = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        rows = self._db.execute(
            "SELECT line FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT 400",
            (expression,),
        )
        return pack_lines((line for (line,) in rows), budget, first_fit=self._first_fit)


def pack_lines(lines: Iterable[str], budget: int, *, first_fit: bool = False) -> str:
    """The reference packing: lines in rank order until the next would not fit (with
    ``first_fit``, a line that does not fit is passed over and the next ones tried: with
    messages of thousands of characters, stopping at the first would leave a small
    budget empty)."""
    kept: list[str] = []
    chars = 0
    for line in lines:
        added = len(line) + (1 if kept else 0)
        if math.ceil((chars + added) / 4) > budget:
            if first_fit:
                continue
            break
        kept.append(line)
        chars += added
    return "\n".join(kept)


def best_possible(question: Question, budget: int) -> str:
    """The question's evidence alone, cheapest first, first fit: each text whole, or, when
    an excerpt counts and is shorter, its first ``min_excerpt`` characters."""
    pieces = []
    for text in question.expected:
        flat = " ".join(text.split())
        if question.min_excerpt and len(flat) > question.min_excerpt:
            flat = flat[: question.min_excerpt] + "…"
        pieces.append(flat)
    return pack_lines(sorted(pieces, key=len), budget, first_fit=True)


# ---------------------------------------------------------------------------- runner
@dataclass
class Tally:
    scores: dict[tuple[str, int, str], list[float]] = field(
        default_factory=lambda: defaultdict(list)
    )
    stale: dict[tuple[str, int], int] = field(default_factory=lambda: defaultdict(int))
    used: dict[tuple[str, int], list[int]] = field(default_factory=lambda: defaultdict(list))
    share: dict[tuple[str, int], list[float]] = field(default_factory=lambda: defaultdict(list))
    seconds: list[float] = field(default_factory=list)
    versions: dict[tuple[str, int, str], list[float]] = field(
        default_factory=lambda: defaultdict(list)
    )

    def add(self, system: str, budget: int, category: str, score: float, stale: int) -> None:
        self.scores[(system, budget, category)].append(score)
        self.scores[(system, budget, "all")].append(score)
        self.stale[(system, budget)] += stale

    def add_versions(self, system: str, budget: int, output: str, question: Question) -> None:
        """For a question whose evidence has an original and an updated version: how
        often each is shown (rows outside the categories and "all")."""
        updated = [t for t in question.expected if t not in question.forbidden]
        if not question.forbidden or not updated:
            return
        excerpt = question.min_excerpt
        self.versions[(system, budget, "updated")].append(found_share(output, updated, excerpt))
        self.versions[(system, budget, "original")].append(
            found_share(output, question.forbidden, excerpt)
        )

    def merge(self, other: Tally) -> None:
        for key, values in other.scores.items():
            self.scores[key].extend(values)
        for key, count in other.stale.items():
            self.stale[key] += count
        for key, used in other.used.items():
            self.used[key].extend(used)
        for key, share in other.share.items():
            self.share[key].extend(share)
        for key, values in other.versions.items():
            self.versions[key].extend(values)
        self.seconds.extend(other.seconds)

    def mean(self, system: str, budget: int, category: str) -> float:
        values = self.scores.get((system, budget, category), [])
        return statistics.fmean(values) if values else float("nan")

    def count(self, category: str) -> int:
        for (_, _, cat), values in self.scores.items():
            if cat == category:
                return len(values)
        return 0


def _scratch_dir() -> str | None:
    # A RAM disk when there is one: ingest is fsync-bound on a real disk.
    return "/dev/shm" if Path("/dev/shm").is_dir() else None


def evaluate_corpus(
    corpus: Corpus,
    budgets: Sequence[int],
    *,
    index: int = 0,
    baseline: bool = True,
    keep_access: bool = False,
    bulk: bool = False,
    layout_cost: bool = False,
    min_score: float = 0.0,
    first_fit: bool = False,
) -> Tally:
    """Ingest one corpus into a fresh store and ask all its questions at every budget."""
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="nervamem-quality-", dir=_scratch_dir()) as tmp:
        store = MemoryStore(
            Path(tmp) / "memory.db", clock=StepClock(), random_source=SeededRandom(index)
        )
        try:
            ingest(store, corpus, bulk=bulk)
            # Read-only: recall skips the access bookkeeping (see the module docstring).
            store.storage.read_only = not keep_access
            reference = Bm25Reference(corpus, first_fit=first_fit) if baseline else None
            for question in corpus.questions:
                if layout_cost:
                    wide = store.recall(question.text, budget_tokens=8 * max(budgets))
                    ranked = list(wide.items)
                for budget in budgets:
                    started = time.perf_counter()
                    result = store.recall(question.text, budget_tokens=budget, min_score=min_score)
                    tally.seconds.append(time.perf_counter() - started)
                    score, stale = score_text(result.markdown, question)
                    tally.add("nervamem", budget, question.category, score, stale)
                    tally.add_versions("nervamem", budget, result.markdown, question)
                    tally.used[("nervamem", budget)].append(result.used_tokens)
                    tally.share[("nervamem", budget)].append(relevant_share(result, question))
                    if layout_cost:
                        # nervamem's ranking in the reference's lines and packing: what
                        # the ranking alone is worth, apart from the layout's cost.
                        lines = (
                            f"[{i.valid_from[:10]}] {' '.join(i.content.split())}" for i in ranked
                        )
                        score, stale = score_text(pack_lines(lines, budget), question)
                        tally.add("ranking-only", budget, question.category, score, stale)
                    if reference:
                        text = reference.recall(question.text, budget)
                        score, stale = score_text(text, question)
                        tally.add("bm25", budget, question.category, score, stale)
                        tally.add_versions("bm25", budget, text, question)
                    if question.min_excerpt:
                        score, _ = score_text(best_possible(question, budget), question)
                        tally.add("best", budget, question.category, score, 0)
        finally:
            store.close()
    return tally


def evaluate(
    corpora: Sequence[Corpus],
    budgets: Sequence[int],
    *,
    baseline: bool = True,
    keep_access: bool = False,
    bulk: bool = False,
    jobs: int = 1,
    layout_cost: bool = False,
    min_score: float = 0.0,
    first_fit: bool = False,
) -> Tally:
    work = [
        functools.partial(
            evaluate_corpus,
            corpus,
            budgets,
            index=index,
            baseline=baseline,
            keep_access=keep_access,
            bulk=bulk,
            layout_cost=layout_cost,
            min_score=min_score,
            first_fit=first_fit,
        )
        for index, corpus in enumerate(corpora)
    ]
    if jobs > 1 and len(work) > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs) as pool:
            parts = list(pool.map(_call, work))
    else:
        parts = [task() for task in work]
    total = Tally()
    for part in parts:
        total.merge(part)
    return total


def _call(task: Callable[[], Tally]) -> Tally:
    return task()


def report(tally: Tally, budgets: Sequence[int], *, title: str, show_stale: bool) -> str:
    systems = [
        s
        for s in ("nervamem", "bm25", "ranking-only", "best")
        if any(k[0] == s for k in tally.scores)
    ]
    categories = sorted({k[2] for k in tally.scores if k[2] != "all"})
    head = ["category", "n"] + [f"{s} @{b}" for b in budgets for s in systems]
    rows = []
    for category in ["all", *categories]:
        cells = [category, str(tally.count(category))]
        cells += [f"{tally.mean(s, b, category):.3f}" for b in budgets for s in systems]
        rows.append(cells)
    for version in ("updated", "original"):
        if any(k[2] == version for k in tally.versions):
            cells = [
                f"knowledge update: {version} shown",
                str(len(tally.versions[(systems[0], budgets[0], version)])),
            ]
            cells += [
                f"{statistics.fmean(tally.versions[(s, b, version)]):.3f}"
                if tally.versions.get((s, b, version))
                else ""
                for b in budgets
                for s in systems
            ]
            rows.append(cells)
    if show_stale:
        cells = ["stale (superseded shown)", ""]
        cells += [str(tally.stale[(s, b)]) for b in budgets for s in systems]
        rows.append(cells)
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = [f"### {title}", ""]
    for n, cells in enumerate([head, *rows]):
        lines.append(
            "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"
        )
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    if tally.seconds:
        ordered = sorted(tally.seconds)
        lines.append("")
        for budget in budgets:
            used = tally.used.get(("nervamem", budget))
            if used:
                share = statistics.fmean(tally.share[("nervamem", budget)])
                lines.append(
                    f"mean tokens used at {budget}: {statistics.fmean(used):.0f}, "
                    f"share of the text on relevant items {share:.2f}"
                )
        lines.append(
            f"{len(ordered)} recalls, p50 {ordered[len(ordered) // 2] * 1000:.2f} ms, "
            f"p95 {ordered[int(len(ordered) * 0.95)] * 1000:.2f} ms"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "data",
        nargs="?",
        type=Path,
        default=None,
        help=f"LoCoMo JSON (default {DEFAULT_LOCOMO}); with --set beam, a BEAM tier's folder",
    )
    parser.add_argument("--set", choices=("locomo", "agent", "beam"), default="locomo")
    parser.add_argument(
        "--budgets", default=None, help=f"default {BUDGETS}, with --set beam {BEAM_BUDGETS}"
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip the BM25 reference")
    parser.add_argument(
        "--keep-access",
        action="store_true",
        help="let recalls count accesses (questions then affect each other)",
    )
    parser.add_argument(
        "--bulk",
        action="store_true",
        help="ingest in one store.batch() (one clock reading: long short IDs)",
    )
    parser.add_argument(
        "--layout-cost",
        action="store_true",
        help="also score nervamem's ranking packed as the reference's plain lines",
    )
    parser.add_argument(
        "--min-score",
        type=float,
        default=0.0,
        help="recall's --min-score: leave out what scores below this share of the best",
    )
    parser.add_argument("--jobs", type=int, default=2, help="corpora evaluated in parallel")
    parser.add_argument("--limit", type=int, default=0, help="only the first N corpora")
    parser.add_argument("--seed", type=int, default=7, help="agent set seed")
    args = parser.parse_args(argv)
    default = BEAM_BUDGETS if args.set == "beam" else BUDGETS
    budgets = [int(b) for b in args.budgets.split(",")] if args.budgets else list(default)
    if args.set == "beam":
        from bench.beam import beam_corpora

        if args.data is None or not args.data.is_dir():
            parser.error("--set beam needs the folder of a BEAM tier, e.g. /tmp/beam/chats/500K")
        corpora = beam_corpora(args.data.resolve())
        title = f"BEAM {args.data.name}"
    elif args.set == "agent":
        from bench.agentset import agent_corpora

        corpora = agent_corpora(seed=args.seed)
        title = f"Agent set (seed {args.seed})"
    else:
        path = (args.data or DEFAULT_LOCOMO).resolve()
        if not path.is_file():
            parser.error(f"no LoCoMo data at {path}: pass its path")
        corpora = locomo_corpora(path)
        title = f"LoCoMo {path.name}"
    if args.limit:
        corpora = corpora[: args.limit]
    started = time.perf_counter()
    tally = evaluate(
        corpora,
        budgets,
        baseline=not args.no_baseline,
        keep_access=args.keep_access,
        bulk=args.bulk,
        jobs=args.jobs,
        layout_cost=args.layout_cost,
        min_score=args.min_score,
        first_fit=args.set == "beam",
    )
    print(report(tally, budgets, title=title, show_stale=args.set == "agent"))
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
