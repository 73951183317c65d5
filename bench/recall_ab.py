"""In-process recall CPU time of one checkout on the 100k store its latency.py built.

    python bench/latency.py --sizes 100k --skip-cli --no-write     # in each checkout
    python bench/recall_ab.py /path/to/checkout-a 10                # then alternate
    python bench/recall_ab.py /path/to/checkout-b 10

Each call imports nervamem from the checkout given (never the installed one), warms up
on the workload's 27 questions, recalls each of them REPEATS times at budget 500 and
prints the median CPU time (time.process_time) of one recall. CPU time moves much less
than wall time on a shared machine; alternate the two checkouts a few times and compare
medians.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path


def main() -> int:
    root = Path(sys.argv[1]).resolve()
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    sys.path[:0] = [str(root), str(root / "bench")]
    import workload

    import nervamem
    from nervamem import MemoryStore

    if not nervamem.__file__ or not nervamem.__file__.startswith(str(root)):
        raise SystemExit(f"nervamem was imported from {nervamem.__file__}, not {root}")
    questions = [q for batch in workload.queries().values() for q in batch]
    with MemoryStore(root / "bench" / "out" / "store-100k" / "memory.db") as store:
        for question in questions:
            store.recall(question, budget_tokens=500)
        times = []
        for _ in range(repeats):
            for question in questions:
                began = time.process_time()
                store.recall(question, budget_tokens=500)
                times.append((time.process_time() - began) * 1000)
    print(f"{root}: recall CPU p50 {statistics.median(times):.2f} ms ({len(times)} recalls)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
