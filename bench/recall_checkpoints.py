"""Which recalls of one checkout checkpoint the WAL inside their access-count write.

    python bench/recall_checkpoints.py /path/to/checkout --peers 100k --rounds 2

Imports nervamem from the checkout, recalls the peers workload's 220 queries on a copy of
``bench/out/peers-SIZE/memory.db`` (one warm-up pass, then ROUNDS passes, budget 500) and
times each recall's access-count write (recall/access_counts.py). Only a checkpoint
writes the database file itself (a commit writes the -wal), so a write during which the
file's mtime changed ran one, unless another thread's checkpoint overlapped it. Prints
the wall p50 / p95 / slowest of the recalls, of the count writes, and the durations of the
count writes that saw the file change.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _figures(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    return f"p50 {statistics.median(ordered):.2f} / p95 {p95:.2f} / slowest {ordered[-1]:.1f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--peers", default="100k")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    root = args.checkout.resolve()
    bench = Path(__file__).resolve().parent
    sys.path.insert(0, str(root))
    from nervamem import MemoryStore
    from nervamem.recall import api

    if not Path(str(api.__file__)).resolve().is_relative_to(root):
        raise SystemExit(f"nervamem was imported from {api.__file__}, not {root}")
    sys.path.append(str(bench))  # after nervamem: peers.py puts its own checkout first
    import latency
    import peers

    queries = peers.Workload(latency.parse_size(args.peers)).queries
    scratch = Path(tempfile.mkdtemp(prefix="nervamem-ckpt-"))
    path = scratch / "memory.db"
    shutil.copy(bench / "out" / f"peers-{args.peers}" / "memory.db", path)
    writes: list[float] = []
    inside: list[float] = []
    count_accesses = api.count_accesses

    def timed(*given: Any) -> None:
        before = os.stat(path).st_mtime_ns
        began = time.perf_counter()
        count_accesses(*given)
        writes.append((time.perf_counter() - began) * 1000)
        if os.stat(path).st_mtime_ns != before:
            inside.append(writes[-1])

    api.count_accesses = timed  # type: ignore[assignment]
    recalls: list[float] = []
    try:
        with MemoryStore(path) as store:
            for query in queries:
                store.recall(query, budget_tokens=500)
            writes.clear()
            inside.clear()
            for _ in range(args.rounds):
                for query in queries:
                    began = time.perf_counter()
                    store.recall(query, budget_tokens=500)
                    recalls.append((time.perf_counter() - began) * 1000)
    finally:
        shutil.rmtree(scratch)
    print(f"{root}: {len(recalls)} recalls, wall {_figures(recalls)}")
    print(f"  access-count writes: {_figures(writes)}")
    print(
        f"  writes during which the database file changed (a checkpoint): {len(inside)}, "
        f"{', '.join(f'{x:.1f}' for x in sorted(inside)) or '-'} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
