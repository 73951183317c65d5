"""In-process recall of two checkouts in one process, query by query, on the peers workload.

    python bench/recall_pair.py /path/to/main . --peers 1k --rounds 5

On a shared machine the load moves between two runs more than a change moves the
figures, even alternated (recall_ab.py). Here both checkouts run in the same process:
checkout A's package is imported under another name (a symlink ``nervamem_a``: every
import inside the package is relative), each on its own copy of
``bench/out/peers-SIZE/memory.db`` (``python bench/peers.py --sizes SIZE --peers ''
--rounds 0`` builds it), and each query is recalled by A then B (B then A on odd rounds)
at budget 500. Each recall's figure is the CPU time of the recalling thread
(time.thread_time: the load hardly moves it, and a thread of the store's own, such as the
WAL checkpoint, is not counted); per query the least of ROUNDS rounds is kept, and the
p50 / p95 / slowest over queries are printed for each, with the wall p50 / p95 /
slowest of every recall beside them.

    python bench/recall_pair.py /path/to/main . --workload --rounds 3

``--workload`` recalls latency.py's 10k store instead (``bench/out/store-10k``, ``python
bench/latency.py --sizes 10k --skip-cli --no-write`` builds it), with its queries: a
store with sessions (the peers stores have none).
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    return f"p50 {statistics.median(ordered):.2f} / p95 {p95:.2f} / slowest {ordered[-1]:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a", type=Path, help="checkout A (imported as nervamem_a)")
    parser.add_argument("b", type=Path, help="checkout B (imported as nervamem)")
    parser.add_argument("--peers", default="1k", help="store size: bench/out/peers-SIZE")
    parser.add_argument("--workload", action="store_true", help="latency.py's 10k store")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=500)
    args = parser.parse_args()
    bench = Path(__file__).resolve().parent
    scratch = Path(tempfile.mkdtemp(prefix="nervamem-pair-"))
    (scratch / "nervamem_a").symlink_to(args.a.resolve() / "nervamem")
    sys.path[:0] = [str(scratch), str(args.b.resolve()), str(bench)]
    import latency
    import peers

    stores: dict[str, Any] = {}
    try:
        for name, package in (("A", "nervamem_a"), ("B", "nervamem")):
            module = importlib.import_module(package)
            root = (args.a if name == "A" else args.b).resolve()
            if not Path(str(module.__file__)).resolve().is_relative_to(root):
                raise SystemExit(f"{package} was imported from {module.__file__}, not {root}")
            path = scratch / f"{name}.db"
            source = "store-10k" if args.workload else f"peers-{args.peers}"
            shutil.copy(bench / "out" / source / "memory.db", path)
            stores[name] = module.MemoryStore(path)
        if args.workload:
            import workload

            queries = [q for batch in workload.queries().values() for q in batch]
        else:
            queries = peers.Workload(latency.parse_size(args.peers)).queries
        for store in stores.values():  # warm-up: statements prepared, pages read
            for query in queries:
                store.recall(query, budget_tokens=args.budget)
        cpu: dict[str, dict[str, float]] = {name: {} for name in stores}
        walls: dict[str, list[float]] = {name: [] for name in stores}
        for round_ in range(args.rounds):
            order = ("A", "B") if round_ % 2 == 0 else ("B", "A")
            for query in queries:
                for name in order:
                    began, wall = time.thread_time(), time.perf_counter()
                    stores[name].recall(query, budget_tokens=args.budget)
                    spent = (time.thread_time() - began) * 1000
                    walls[name].append((time.perf_counter() - wall) * 1000)
                    cpu[name][query] = min(cpu[name].get(query, spent), spent)
    finally:
        for store in stores.values():
            store.close()
        shutil.rmtree(scratch)
    for name, root in (("A", args.a), ("B", args.b)):
        print(
            f"{name} {root}: thread CPU, least of {args.rounds} per query, "
            f"{_percentiles(list(cpu[name].values()))} ms; wall {_percentiles(walls[name])} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
