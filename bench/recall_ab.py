"""In-process recall CPU time of one checkout on a store the benchmarks built.

    python bench/latency.py --sizes 100k --skip-cli --no-write     # in each checkout
    python bench/recall_ab.py /path/to/checkout-a 10                # then alternate
    python bench/recall_ab.py /path/to/checkout-b 10

Each call imports nervamem from the checkout given (never the installed one), warms up
on the workload's 27 questions, recalls each of them REPEATS times at budget 500 and
prints the median CPU time (time.process_time) of one recall. CPU time moves much less
than wall time on a shared machine; alternate the two checkouts a few times and compare
medians.

``--peers SIZE`` (1k, 100k, ...) uses the hub-entity workload of bench/peers.py instead:
its 220 queries on a copy of ``bench/out/peers-SIZE/memory.db`` (``python bench/peers.py
--sizes SIZE --peers '' --rounds 0`` builds it; the copy keeps one run's access counts
from the next's), printing the wall p50 / p95 / slowest beside the CPU median.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    args = sys.argv[1:]
    peers_size = None
    if "--peers" in args:
        at = args.index("--peers")
        peers_size = args[at + 1]
        del args[at : at + 2]
    root = Path(args[0]).resolve()
    repeats = int(args[1]) if len(args) > 1 else 10
    bench = Path(__file__).resolve().parent
    sys.path[:0] = [str(root), str(bench)]
    import nervamem
    from nervamem import MemoryStore

    if not nervamem.__file__ or not nervamem.__file__.startswith(str(root)):
        raise SystemExit(f"nervamem was imported from {nervamem.__file__}, not {root}")
    scratch = Path(tempfile.mkdtemp(prefix="nervamem-ab-"))
    if peers_size is None:
        import workload

        questions = [q for batch in workload.queries().values() for q in batch]
        path = root / "bench" / "out" / "store-100k" / "memory.db"
    else:
        import latency
        import peers

        questions = peers.Workload(latency.parse_size(peers_size)).queries
        path = scratch / "memory.db"
        shutil.copy(bench / "out" / f"peers-{peers_size}" / "memory.db", path)
    try:
        with MemoryStore(path) as store:
            for question in questions:
                store.recall(question, budget_tokens=500)
            times = []
            walls = []
            for _ in range(repeats):
                for question in questions:
                    began, wall = time.process_time(), time.perf_counter()
                    store.recall(question, budget_tokens=500)
                    times.append((time.process_time() - began) * 1000)
                    walls.append((time.perf_counter() - wall) * 1000)
    finally:
        shutil.rmtree(scratch)
    walls.sort()
    print(
        f"{root}: recall CPU p50 {statistics.median(times):.2f} ms, wall p50 "
        f"{statistics.median(walls):.2f} / p95 {walls[int(0.95 * (len(walls) - 1))]:.2f} / "
        f"slowest {walls[-1]:.1f} ms ({len(times)} recalls)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
