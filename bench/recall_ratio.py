"""What moves warm recall's p95 / p50: the peers mix under experimental variants.

    python bench/recall_ratio.py CHECKOUT --peers 100k              # every variant, 2 runs
    python bench/recall_ratio.py CHECKOUT --peers 100k --variants shipped,pool-100 --runs 3

As bench/peers.py measures nervamem's warm recall, alone in its process: the workload
frozen out of the cyclic GC, 20 warm-up queries, then two passes over the 220 queries
(budget 500) on a copy of ``bench/out/peers-SIZE/memory.db``, with CHECKOUT's package.
Each recall is timed in thread CPU; each variant runs in a fresh process, the variants
alternated RUNS times. A variant changes one thing, here only, never in the product:

* ``shipped``: nervamem as it is;
* ``pool-100``: search reads and scores 100 candidates instead of PRE_LIMIT (150), with
  NEWEST_DEPTH 200: a smaller pool (it costs agent-set quality, results.md);
* ``mmap``: ``PRAGMA mmap_size`` = 1 GiB (rejected: an I/O error becomes a SIGBUS crash);
* ``gc-off``: the cyclic GC disabled for the run;
* ``no-counts``: recall writes no access counts (the batched flush never runs);
* ``no-cache``: no node cache (recall/node_cache.py): every recall reads its rows, texts,
  degrees and neighbours as a query's first recall does (a text's words still come from
  relevance's small cache of the texts seen last, as on PostgreSQL).

Prints, per variant, the median over runs of: p50 and p95 over all 440 recalls and
their ratio (the issue's target is <= 2x), each query's first recall (pass 0) p50 and
p90, the later recalls' p50, and how many of the slowest 5 % are first recalls.
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

VARIANTS = ("shipped", "pool-100", "mmap", "gc-off", "no-counts", "no-cache")
WARM_UP = 20
PASSES = 2
BUDGET = 500


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def one_run(root: Path, size: str, variant: str) -> dict[str, Any]:
    """One variant in this process: the figures of its 440 recalls."""
    sys.path[:0] = [str(root), str(root / "bench")]
    import latency
    import peers

    import nervamem
    from nervamem.recall import api, search

    if not str(nervamem.__file__).startswith(str(root)):
        raise SystemExit(f"nervamem was imported from {nervamem.__file__}, not {root}")
    if variant == "pool-100":
        search.PRE_LIMIT, search.NEWEST_DEPTH = 100, 200
    elif variant == "no-counts":
        api.count_accesses = lambda storage, ids: None
    elif variant == "no-cache":
        api.for_recall = lambda storage: None
    queries = peers.Workload(latency.parse_size(size)).queries
    scratch = Path(tempfile.mkdtemp(prefix="nervamem-ratio-"))
    samples: list[tuple[float, bool]] = []  # (ms, first recall of its query)
    try:
        path = scratch / "memory.db"
        shutil.copy(root / "bench" / "out" / f"peers-{size}" / "memory.db", path)
        gc.collect()
        gc.freeze()
        if variant == "gc-off":
            gc.disable()
        with nervamem.MemoryStore(path) as store:
            if variant == "mmap":
                store.storage.connection.execute("PRAGMA mmap_size = 1073741824")
            for query in queries[:WARM_UP]:
                store.recall(query, budget_tokens=BUDGET)
            seen = set(queries[:WARM_UP])
            for _ in range(PASSES):
                for query in queries:
                    began = time.thread_time()
                    store.recall(query, budget_tokens=BUDGET)
                    samples.append(((time.thread_time() - began) * 1000, query not in seen))
                    seen.add(query)
    finally:
        shutil.rmtree(scratch)
    every = [ms for ms, _ in samples]
    first = [ms for ms, is_first in samples if is_first]
    later = [ms for ms, is_first in samples if not is_first]
    slowest = sorted(samples, reverse=True)[: max(1, len(samples) // 20)]
    p50, p95 = statistics.median(every), percentile(every, 0.95)
    return {
        "p50": p50,
        "p95": p95,
        "ratio": p95 / p50,
        "first p50": statistics.median(first),
        "first p90": percentile(first, 0.9),
        "later p50": statistics.median(later),
        "first in slowest 5 %": sum(is_first for _, is_first in slowest) / len(slowest),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--peers", default="100k", help="the store: bench/out/peers-SIZE")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a single run, in a child process
    args = parser.parse_args()
    root = args.checkout.resolve()
    if args.one:
        print(json.dumps(one_run(root, args.peers, args.one)))
        return 0
    variants = args.variants.split(",")
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    results: dict[str, list[dict[str, Any]]] = {variant: [] for variant in variants}
    for _ in range(args.runs):
        for variant in variants:
            command = [sys.executable, __file__, str(root), "--peers", args.peers]
            done = subprocess.run(
                [*command, "--one", variant], capture_output=True, text=True, check=True
            )
            results[variant].append(json.loads(done.stdout))
    names = list(results[variants[0]][0])
    print(f"| variant | {' | '.join(names)} |")
    print(f"|---|{'---|' * len(names)}")
    for variant, runs in results.items():
        cells = []
        for name in names:
            value = statistics.median(run[name] for run in runs)
            cells.append(f"{value:.0%}" if name.startswith("first in") else f"{value:.2f}")
        print(f"| {variant} | {' | '.join(cells)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
