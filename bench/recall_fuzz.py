"""Recall of two checkouts on the same crafted stores, compared: a change meant to make
recall faster without changing it must write the same bytes for every seed.

    python bench/recall_fuzz.py compare /tmp/base . --seeds 0:300
    python bench/recall_fuzz.py run CHECKOUT OUT.json --seeds 0:300   # one side
    python bench/recall_fuzz.py newest --seeds 0:300   # _newest_held against the index

Each seed builds a store op by op at a fixed, advancing clock and seeded IDs: a small
vocabulary (so that terms are common with search.COMMON_DF patched low, the same in
both checkouts, as are PRE_LIMIT, the node cache's MAX_ROWS and MAX_NODES and, where
a checkout has them, NEWEST_DEPTH and MAX_NEWEST_ROWS), several namespaces, kinds,
supersedes, forgets and purges (a purged newest node's seq is reused), validity
starting in the future or ended, non-ASCII, digits, tabs and control characters;
between the writes, recalls (repeated: the node cache serves the second), with
``--as-of``, ``--known-at``, kinds, hops, with and without the node cache, timelines,
a write from a second connection, a rolled-back batch and a namespace switch. Every
recall's Markdown and its items' IDs, scores and factors are written (issue 21, round
6's review).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

WORDS = [
    "run", "ran", "running", "go", "went", "gone", "build", "built", "builder", "deploy",
    "deployed", "deployment", "dep", "cat", "cats", "catalog", "key", "keys", "ox", "a1",
    "2024", "café", "naïve", "über", "straße", "ﬁle", "İstanbul", "kelvin", "K", "log",
    "logs", "logging", "the", "of", "and", "sing", "sang", "sung", "write", "wrote",
]  # fmt: skip
JOINERS = [" ", " ", " ", " ", ", ", ". ", "\t", "-", "_", " (", "\x07", "\n", "/"]
KINDS = ["fact", "decision", "action", "outcome", "preference"]
SPACES = ["default", "default", "other", "third"]
DATES = ["2020-01-01T00:00:00Z", "2025-06-01T00:00:00Z", "2026-01-01T00:00:30Z", "2031-01-01"]


class _RolledBack(Exception):
    """Raised inside a batch to roll it back."""


def _text(r: random.Random, low: int, high: int) -> str:
    words = [r.choice(WORDS) for _ in range(r.randint(low, high))]
    out = words[0]
    for word in words[1:]:
        out += r.choice(JOINERS) + word
    return out


def run_case(seed: int, checkout_has_newest: bool) -> list[Any]:
    from nervamem import MemoryStore
    from nervamem.recall import api, node_cache, search

    r = random.Random(seed)
    search.COMMON_DF = r.randint(1, 6)
    search.PRE_LIMIT = r.randint(2, 8)
    if checkout_has_newest:
        search.NEWEST_DEPTH = search.PRE_LIMIT * r.choice([1, 2, 3, 8])  # type: ignore[attr-defined]
        node_cache.MAX_NEWEST_ROWS = r.choice([3, 12, 10_000])  # type: ignore[attr-defined]
    else:  # draw the same numbers
        r.choice([1, 2, 3, 8])
        r.choice([3, 12, 10_000])
    # Small caps in both: rows dropped and read again, keys of every table evicted.
    node_cache.MAX_ROWS = r.choice([8, 40, 32_768, 32_768])
    node_cache.MAX_NODES = r.choice([4, 32_768, 32_768])
    cached = r.random() < 0.7
    original = api.for_recall
    api.for_recall = original if cached else (lambda storage: None)  # type: ignore[assignment]
    moment = [datetime(2026, 1, 1, tzinfo=timezone.utc)]

    def clock() -> datetime:
        moment[0] += timedelta(seconds=1)
        return moment[0]

    ids_random = random.Random(seed + 1_000_000)
    out: list[Any] = [["case", seed, search.COMMON_DF, search.PRE_LIMIT, cached]]
    ids: list[tuple[str, str]] = []  # (id, namespace)
    scratch = Path(tempfile.mkdtemp(prefix="nervamem-fuzz-"))
    path = scratch / "memory.db"
    store = MemoryStore(path, clock=clock, random_source=lambda: ids_random.getrandbits(64))

    def write(target: Any, namespace: str | None = None, plain: bool = False) -> None:
        namespace = namespace or r.choice(SPACES)
        valid_from = r.choice([None, None, None, DATES[0], DATES[1], DATES[3]])
        ends = {None: ["2027-01-01"], DATES[0]: ["2021-01-01", "2027-01-01"]}
        ends[DATES[1]] = ["2027-01-01"]
        valid_until = r.choice([None, None, None, "2032-01-01", *ends.get(valid_from, [])])
        mine = [node_id for node_id, space in ids if space == namespace]
        supersedes = r.choice(mine) if mine and r.random() < 0.15 and not plain else None
        entities = [r.choice(["Ann", "Bob", "café"])] if r.random() < 0.2 else []
        node_id = target.store(
            r.choice(KINDS),
            _text(r, 1, 9),
            namespace=namespace,
            valid_from=valid_from,
            valid_until=valid_until,
            supersedes=supersedes,
            entities=entities,
        )
        ids.append((node_id, namespace))

    def recall() -> None:
        query = _text(r, 1, 4)
        as_of = r.choice([None, None, DATES[0], DATES[1], DATES[2], "2030-01-01"])
        known_at = r.choice([None, None, None, "2026-01-01T00:00:20Z"]) if as_of else None
        kinds = r.choice([None, None, ["fact"], ["fact", "decision"], ["outcome"]])
        kwargs = {
            "budget_tokens": r.choice([80, 200, 500]),
            "as_of": as_of,
            "known_at": known_at,
            "kinds": kinds,
            "hops": r.choice([0, 1, 2]),
            "namespace": r.choice([None, None, "other", "third"]),
        }
        for _ in range(r.choice([1, 2, 3])):  # the node cache serves a repeat
            try:
                result = store.recall(query, **kwargs)
            except Exception as error:  # noqa: BLE001  (both checkouts must agree)
                out.append(["recall", query, repr(kwargs), type(error).__name__, str(error)])
                continue
            items = [
                [i.id, i.score, i.relevance, i.recency, i.frequency, i.via] for i in result.items
            ]
            out.append(["recall", query, repr(kwargs), result.markdown, items])

    current = ["default"]
    try:
        with store.batch():
            for _ in range(r.randint(0, 80)):
                write(store, plain=True)
        for _ in range(r.randint(5, 60)):
            try:
                write(store)
            except Exception as error:  # noqa: BLE001
                out.append(["error", type(error).__name__, str(error)])
        for _ in range(r.randint(20, 120)):
            op = r.random()
            try:
                if op < 0.45:
                    write(store)
                elif op < 0.75:
                    recall()
                elif op < 0.80 and ids:
                    mine = [node_id for node_id, space in ids if space == current[0]]
                    store.forget(r.choice(mine or [ids[0][0]]), purge=r.random() < 0.4)
                elif op < 0.83 and ids:  # the newest purged: its seq is given again
                    write(store, current[0])
                    store.forget(ids.pop()[0], purge=True)
                    write(store)
                elif op < 0.87:  # another connection writes between recalls
                    with MemoryStore(
                        path, clock=clock, random_source=lambda: ids_random.getrandbits(64)
                    ) as other:
                        write(other)
                elif op < 0.90:  # a batch rolled back changes nothing
                    try:
                        with store.batch():
                            write(store)
                            recall()
                            raise _RolledBack
                    except _RolledBack:
                        ids.pop()
                elif op < 0.93:
                    current[0] = r.choice(SPACES)
                    store.switch_namespace(current[0])
                elif op < 0.96:
                    query = _text(r, 1, 3)
                    found = store.timeline(query)
                    out.append(["timeline", query, repr(found)])
                else:
                    recall()
            except Exception as error:  # noqa: BLE001
                out.append(["error", type(error).__name__, str(error)])
    finally:
        store.close()
        api.for_recall = original  # type: ignore[assignment]
        for leftover in scratch.iterdir():
            leftover.unlink()
        scratch.rmdir()
    return out


def check_newest(seeds: range) -> int:
    """In this checkout, every search._newest_held answer of the cases against the text
    index's newest_matching on the same store at the same moment."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from nervamem.recall import search

    held = search._newest_held
    counts = {"fell back to the SQL": 0, "the same, empty": 0, "the same": 0, "differing": 0}

    def compared(
        conn: Any, index: Any, facts: Any, common: Any, namespace: Any, as_of: Any, kinds: Any
    ) -> Any:
        found = held(conn, index, facts, common, namespace, as_of, kinds)
        filters = search._filters(index, as_of, kinds, True)
        by_sql = index.newest_matching(common, namespace, filters, search.PRE_LIMIT)
        if found is None:
            counts["fell back to the SQL"] += 1
        elif found == by_sql:
            counts["the same" if found else "the same, empty"] += 1
        else:
            counts["differing"] += 1
            print("differing:", common, namespace, as_of, kinds, sorted(found), sorted(by_sql))
        return found

    search._newest_held = compared
    for seed in seeds:
        run_case(seed, checkout_has_newest=True)
    print(", ".join(f"{count} {what}" for what, count in counts.items()))
    return 1 if counts["differing"] else 0


def _seeds(spec: str) -> range:
    first, last = spec.split(":")
    return range(int(first), int(last))


def run(checkout: Path, out_path: Path, seeds: range) -> int:
    sys.path.insert(0, str(checkout))
    import nervamem
    from nervamem.recall import search

    if not nervamem.__file__ or not nervamem.__file__.startswith(str(checkout)):
        raise SystemExit(f"nervamem was imported from {nervamem.__file__}, not {checkout}")
    has_newest = hasattr(search, "NEWEST_DEPTH")
    cases = {}
    for seed in seeds:
        cases[seed] = run_case(seed, has_newest)
    out_path.write_text(json.dumps(cases, ensure_ascii=False), encoding="utf-8")
    return 0


def compare(left: Path, right: Path, seeds: str) -> int:
    scratch = Path(tempfile.mkdtemp(prefix="nervamem-fuzz-out-"))
    dumps = []
    for n, checkout in enumerate((left, right)):
        target = scratch / f"{n}.json"
        subprocess.run(
            [sys.executable, __file__, "run", str(checkout), str(target), "--seeds", seeds],
            check=True,
            cwd=scratch,
        )
        dumps.append(json.loads(target.read_text(encoding="utf-8")))
    differing = 0
    recalls = 0
    for seed, cases in dumps[0].items():
        other = dumps[1][seed]
        recalls += sum(1 for entry in cases if entry[0] == "recall")
        if cases != other:
            differing += 1
            first = next(
                (n for n, (a, b) in enumerate(zip(cases, other, strict=False)) if a != b),
                min(len(cases), len(other)),
            )
            print(f"seed {seed} differs at entry {first}:")
            print("  ", json.dumps(cases[first : first + 1], ensure_ascii=False)[:2000])
            print("  ", json.dumps(other[first : first + 1], ensure_ascii=False)[:2000])
    print(f"{len(dumps[0])} cases, {recalls} recalls, {differing} differing")
    return 1 if differing else 0


def main() -> int:
    mode = sys.argv[1]
    seeds = sys.argv[sys.argv.index("--seeds") + 1] if "--seeds" in sys.argv else "0:100"
    if mode == "newest":
        return check_newest(_seeds(seeds))
    if mode == "run":
        return run(Path(sys.argv[2]).resolve(), Path(sys.argv[3]), _seeds(seeds))
    return compare(Path(sys.argv[2]).resolve(), Path(sys.argv[3]).resolve(), seeds)


if __name__ == "__main__":
    raise SystemExit(main())
