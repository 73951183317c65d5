"""The slowest recalls of a peers-like run, and what made each slow.

    python bench/recall_tail.py CHECKOUT --peers 100k

As bench/peers.py measures nervamem (the workload frozen out of the cyclic GC, 20
warm-up queries, then PASSES passes over the 220 queries, wall time of each recall at
budget 500), on a copy of ``bench/out/peers-SIZE/memory.db``, with CHECKOUT's package.
Prints the wall p50 / p95 / slowest, then the slowest 5 %: the pass (0: the query's
first recall in the process), the stages that took longest (wall, ms), whether the
recall asked for a WAL checkpoint (storage/checkpoint.py) and the collections of the
cyclic GC inside it (generation: ms).
"""

from __future__ import annotations

import argparse
import functools
import gc
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

STAGES = ("search", "session_context", "expand", "top_k", "pack", "count_accesses")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--peers", default="100k", help="store size: bench/out/peers-SIZE")
    parser.add_argument("--passes", type=int, default=2)
    args = parser.parse_args()
    bench = Path(__file__).resolve().parent
    sys.path[:0] = [str(args.checkout.resolve()), str(bench)]
    # CHECKOUT's package first: latency.py puts its own checkout on sys.path.
    import nervamem
    import nervamem.recall.api as api
    import nervamem.storage.sqlite.checkpoint as checkpoint

    if not Path(str(nervamem.__file__)).resolve().is_relative_to(args.checkout.resolve()):
        raise SystemExit(f"nervamem was imported from {nervamem.__file__}")
    import latency
    import peers

    spent: dict[str, float] = {}

    def timed(name: str, function: Any) -> Any:
        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - began

        return run

    for stage in STAGES:
        setattr(api, stage, timed(stage, getattr(api, stage)))
    asked: list[bool] = []
    request = checkpoint.Checkpointer.request

    def checkpoint_asked(self: Any) -> None:
        asked.append(True)
        request(self)

    checkpoint.Checkpointer.request = checkpoint_asked  # type: ignore[method-assign]
    collections: list[tuple[int, float]] = []
    started: list[float] = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            collections.append((info["generation"], (time.perf_counter() - started[0]) * 1000))

    scratch = Path(tempfile.mkdtemp(prefix="nervamem-tail-"))
    try:
        shutil.copy(bench / "out" / f"peers-{args.peers}" / "memory.db", scratch / "memory.db")
        queries = peers.Workload(latency.parse_size(args.peers)).queries
        gc.collect()
        gc.freeze()
        gc.callbacks.append(on_gc)
        store = nervamem.MemoryStore(scratch / "memory.db")
        for query in queries[:20]:
            store.recall(query, budget_tokens=peers.BUDGET)
        recalls = []
        for pass_ in range(args.passes):
            for query in queries:
                spent.clear()
                asked.clear()
                collections.clear()
                began = time.perf_counter()
                store.recall(query, budget_tokens=peers.BUDGET)
                wall = (time.perf_counter() - began) * 1000
                recalls.append((wall, pass_, query, dict(spent), bool(asked), list(collections)))
        store.close()
    finally:
        gc.callbacks.remove(on_gc)
        shutil.rmtree(scratch)
    walls = sorted(r[0] for r in recalls)
    print(
        f"{nervamem.__file__}: wall p50 {statistics.median(walls):.2f} / "
        f"p95 {walls[int(0.95 * (len(walls) - 1))]:.2f} / slowest {walls[-1]:.2f} ms"
    )
    slowest = sorted(recalls, key=lambda r: -r[0])[: max(1, len(recalls) // 20)]
    print(
        f"slowest 5 % ({len(slowest)}): {sum(r[1] == 0 for r in slowest)} first recalls, "
        f"{sum(r[4] for r in slowest)} asked for a checkpoint, "
        f"{sum(any(ms > 1 for _, ms in r[5]) for r in slowest)} with a GC over 1 ms"
    )
    for wall, pass_, query, stages, checkpointed, gcs in slowest:
        top = sorted(stages.items(), key=lambda kv: -kv[1])[:3]
        print(
            f"  {wall:6.2f} ms  pass {pass_}  {query[:40]!r:44}"
            + " ".join(f"{name} {seconds * 1000:.2f}" for name, seconds in top)
            + ("  checkpoint" if checkpointed else "")
            + "".join(f"  gc{generation} {ms:.1f}" for generation, ms in gcs if ms > 0.5)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
