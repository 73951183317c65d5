"""Where each recall's time goes, stage by stage, and what the slowest queries share.

    python bench/recall_stages.py . --peers 100k          # or /path/to/main, --peers 1k

Imports nervamem from CHECKOUT, wraps recall's stages (search and, inside it, the posting
reads, ``_newest_common``, ``cached_rows`` and ``score_rows``; session context,
expansion, top_k, packing, the access counts) with thread-CPU timers, and recalls every
query of the peers workload (budget 500) in four passes on a copy of
``bench/out/peers-SIZE/memory.db``: pass 0 is each query's first recall in the process,
passes 1-3 the later ones (least of the three kept per query). Prints the mean per stage
of each kind of pass, then the slowest 5 % of queries by their later recall with their
stages, and how many of them are all-common (every key term in more than COMMON_DF rows).
"""

from __future__ import annotations

import functools
import importlib
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

Stages = dict[str, float]


def main() -> int:
    root, size = Path(sys.argv[1]).resolve(), sys.argv[sys.argv.index("--peers") + 1]
    sys.path[:0] = [str(root), str(root / "bench")]
    import latency
    import peers

    nervamem = importlib.import_module("nervamem")
    if not str(nervamem.__file__).startswith(str(root)):
        raise SystemExit(f"nervamem was imported from {nervamem.__file__}, not {root}")
    api = importlib.import_module("nervamem.recall.api")
    search = importlib.import_module("nervamem.recall.search")
    spent: Stages = {}
    seen: dict[str, int] = {}

    def timed(module: Any, name: str, note: Any = None) -> None:
        if not hasattr(module, name):
            return
        function = getattr(module, name)

        @functools.wraps(function)
        def wrapper(*args: Any, **named: Any) -> Any:
            began = time.thread_time()
            try:
                result = function(*args, **named)
            finally:
                spent[name] = spent.get(name, 0.0) + (time.thread_time() - began) * 1000
            if note is not None:
                note(args)
            return result

        setattr(module, name, wrapper)

    def keys(args: Any) -> None:
        seen["common"], seen["keys"] = len(args[2]), args[4]

    for name in ("_postings", "_newest_common", "cached_rows"):
        timed(search, name)
    timed(search, "score_rows", keys)
    for name in ("search", "session_context", "expand", "top_k", "pack", "count_accesses"):
        timed(api, name)
    scratch = Path(tempfile.mkdtemp(prefix="nervamem-stages-"))
    queries = peers.Workload(latency.parse_size(size)).queries
    first: dict[str, tuple[float, Stages, dict[str, int]]] = {}
    later: dict[str, tuple[float, Stages, dict[str, int]]] = {}
    try:
        path = scratch / "memory.db"
        shutil.copy(root / "bench" / "out" / f"peers-{size}" / "memory.db", path)
        with nervamem.MemoryStore(path) as store:
            for pass_ in range(4):
                for query in queries:
                    spent.clear()
                    seen.clear()
                    began = time.thread_time()
                    store.recall(query, budget_tokens=500)
                    figure = ((time.thread_time() - began) * 1000, dict(spent), dict(seen))
                    if pass_ == 0:
                        first[query] = figure
                    elif query not in later or figure[0] < later[query][0]:
                        later[query] = figure
    finally:
        shutil.rmtree(scratch)
    for label, figures in (("first recall", first), ("later (least of 3)", later)):
        stages = sorted({stage for _, each, _ in figures.values() for stage in each})
        means = ", ".join(f"{stage.strip('_')} {_mean_of(figures, stage):.2f}" for stage in stages)
        totals = [f[0] for f in figures.values()]
        print(f"{label}: recall p50 {statistics.median(totals):.2f} ms; stage means (ms): {means}")
    ranked = sorted(later.items(), key=lambda item: item[1][0])
    slowest = ranked[-max(1, len(ranked) // 20) :]

    def all_common(info: dict[str, int]) -> bool:
        return bool(info) and info.get("common") == info.get("keys")

    print(f"slowest 5 % by later recall ({len(slowest)} queries):")
    for query, (total, stages, info) in slowest:
        parts = " ".join(f"{stage.strip('_')}={value:.1f}" for stage, value in stages.items())
        print(f"  {total:5.1f} ms  {query[:40]:40s} {parts} {info}")
    common = [figure for _, figure in ranked if all_common(figure[2])]
    others = [figure for _, figure in ranked if not all_common(figure[2])]
    print(
        f"all-common: {sum(all_common(f[2]) for _, f in slowest)} of the slowest "
        f"{len(slowest)}; {len(common)} of {len(ranked)} queries; later p50 "
        f"{statistics.median(f[0] for f in common) if common else 0:.2f} ms against "
        f"{statistics.median(f[0] for f in others) if others else 0:.2f} ms for the others"
    )
    return 0


def _mean_of(figures: dict[str, tuple[float, Stages, dict[str, int]]], stage: str) -> float:
    return statistics.mean(figure[1].get(stage, 0.0) for figure in figures.values())


if __name__ == "__main__":
    raise SystemExit(main())
