"""What a query's first recall in a warm process costs besides its Python: the kernel's
share, page faults, the memory the caches keep, garbage collections.

    python bench/first_recall_costs.py CHECKOUT --peers 100k

Imports nervamem from CHECKOUT and, on a copy of ``bench/out/peers-SIZE/memory.db``,
recalls the first WARM_UP queries of the peers workload (budget 500) and then every other
query once: each query's first recall after a warm-up, as in bench/peers.py's first pass.
For those it prints the recalling thread's CPU split into user and system time, the minor
page faults and resident pages gained per recall (memory touched for the first time: the
node cache's rows and texts, SQLite's page cache), the time in each generation of the
cyclic GC, then the same for a second pass over the same queries (later recalls), and the
slowest first recalls with their collections. ``--fault-cost`` first times the kernel's
minor fault on this machine (pages of a fresh anonymous mapping, touched one by one).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import mmap
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

WARM_UP = 20
PAGE = mmap.PAGESIZE


def _resident_pages() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1])


def fault_cost(pages: int = 20_000) -> float:
    """Thread CPU per minor fault (us), over ``pages`` pages of a fresh mapping."""
    region = mmap.mmap(-1, pages * PAGE)
    try:
        before, began = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt, time.thread_time()
        for offset in range(0, pages * PAGE, PAGE):
            region[offset] = 1
        spent = time.thread_time() - began
        faults = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before
    finally:
        region.close()
    return spent / max(faults, 1) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--peers", default="100k", help="store size: bench/out/peers-SIZE")
    parser.add_argument("--fault-cost", action="store_true")
    args = parser.parse_args()
    root = args.checkout.resolve()
    sys.path[:0] = [str(root), str(Path(__file__).resolve().parent)]
    import latency
    import peers

    nervamem = importlib.import_module("nervamem")
    if not str(nervamem.__file__).startswith(str(root)):
        raise SystemExit(f"nervamem was imported from {nervamem.__file__}, not {root}")
    if args.fault_cost:
        print(f"a minor page fault: {fault_cost():.1f} us of thread CPU")
    collecting: dict[str, float] = {}
    spent_in: dict[int, float] = {}

    def on_collection(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collecting["began"] = time.thread_time()
        else:
            generation = info["generation"]
            elapsed = (time.thread_time() - collecting["began"]) * 1000
            spent_in[generation] = spent_in.get(generation, 0.0) + elapsed

    queries = peers.Workload(latency.parse_size(args.peers)).queries
    scratch = Path(tempfile.mkdtemp(prefix="nervamem-first-"))
    try:
        path = scratch / "memory.db"
        shutil.copy(root / "bench" / "out" / f"peers-{args.peers}" / "memory.db", path)
        with nervamem.MemoryStore(path) as store:
            for query in queries[:WARM_UP]:
                store.recall(query, budget_tokens=500)
            gc.callbacks.append(on_collection)
            try:
                for label in ("first recalls", "later recalls"):
                    _pass(store, queries[WARM_UP:], label, spent_in)
            finally:
                gc.callbacks.remove(on_collection)
    finally:
        shutil.rmtree(scratch)
    return 0


def _pass(store: Any, queries: list[str], label: str, spent_in: dict[int, float]) -> None:
    figures = []
    before = resource.getrusage(resource.RUSAGE_THREAD)
    resident = _resident_pages()
    spent_in.clear()
    for query in queries:
        collected = dict(spent_in)
        began = time.thread_time()
        store.recall(query, budget_tokens=500)
        took = (time.thread_time() - began) * 1000
        in_gc = {g: spent_in.get(g, 0.0) - collected.get(g, 0.0) for g in spent_in}
        figures.append((took, query, {g: t for g, t in in_gc.items() if t > 0}))
    after = resource.getrusage(resource.RUSAGE_THREAD)
    n = len(queries)
    totals = sorted(figure[0] for figure in figures)
    print(
        f"{label} ({n}): thread CPU p50 {statistics.median(totals):.2f} / p95 "
        f"{totals[int(0.95 * (n - 1))]:.2f} / slowest {totals[-1]:.2f} ms; a recall: user "
        f"{(after.ru_utime - before.ru_utime) / n * 1000:.2f} + system "
        f"{(after.ru_stime - before.ru_stime) / n * 1000:.2f} ms, "
        f"{(after.ru_minflt - before.ru_minflt) / n:.1f} minor faults, "
        f"{(_resident_pages() - resident) / n:.1f} resident pages gained; GC "
        + ", ".join(f"gen{g} {t / n:.3f} ms" for g, t in sorted(spent_in.items()))
    )
    for took, query, in_gc in sorted(figures)[-5:]:
        collections = " ".join(f"gen{g} {t:.1f} ms" for g, t in sorted(in_gc.items()))
        print(f"  {took:6.2f} ms  {query[:40]:40s} {collections}")


if __name__ == "__main__":
    raise SystemExit(main())
