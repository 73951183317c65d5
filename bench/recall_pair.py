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


def pair_parser(description: str, rounds: int) -> argparse.ArgumentParser:
    """The arguments of a script that runs two checkouts side by side on a peers store."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("a", type=Path, help="checkout A (imported as nervamem_a)")
    parser.add_argument("b", type=Path, help="checkout B (imported as nervamem)")
    parser.add_argument("--peers", default="1k", help="store size: bench/out/peers-SIZE")
    parser.add_argument("--rounds", type=int, default=rounds)
    return parser


def side_by_side(a: Path, b: Path) -> Path:
    """A scratch folder from which checkout A imports as ``nervamem_a`` (a symlink) and B
    as ``nervamem``, both and bench/ first on sys.path."""
    scratch = Path(tempfile.mkdtemp(prefix="nervamem-pair-"))
    (scratch / "nervamem_a").symlink_to(a.resolve() / "nervamem")
    sys.path[:0] = [str(scratch), str(b.resolve()), str(Path(__file__).resolve().parent)]
    return scratch


def main() -> int:
    parser = pair_parser(__doc__.split("\n")[0], rounds=5)
    parser.add_argument("--budget", type=int, default=500)
    args = parser.parse_args()
    bench = Path(__file__).resolve().parent
    scratch = side_by_side(args.a, args.b)
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
            shutil.copy(bench / "out" / f"peers-{args.peers}" / "memory.db", path)
            stores[name] = module.MemoryStore(path)
        queries = peers.Workload(latency.parse_size(args.peers)).queries
        # Warm-up: statements prepared, pages read. Its thread CPU is each query's first
        # recall in the process (what an in-process cache of earlier recalls cannot have
        # read for that very query), printed as "first".
        first: dict[str, list[float]] = {name: [] for name in stores}
        for query in queries:
            for name, store in stores.items():
                began = time.thread_time()
                store.recall(query, budget_tokens=args.budget)
                first[name].append((time.thread_time() - began) * 1000)
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
            f"{_percentiles(list(cpu[name].values()))} ms; wall {_percentiles(walls[name])} ms; "
            f"first recall of each query (thread CPU) "
            f"{_percentiles(first[name])} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
