"""What a purge costs on PostgreSQL, before and after issue 21 round 5's scrub.

    python bench/pg_purges.py                    # 1k and 10k memories, 8 rounds each
    python bench/pg_purges.py --sizes 1k --rounds 4

A throwaway server with a real server's durability (bench/postgres.py's BenchServer).
For each size: the seeded workload (bench/workload.py) through the bulk path, then
``VACUUM ANALYZE`` (what autovacuum does soon after: the tables have statistics, so the
new scrub re-analyses them and rewrites pg_statistic). Then rounds of: store a fact,
purge it with the scrub as it was (``VACUUM FULL`` of the five tables, nothing else),
store another, purge it with the current one (re-ANALYZE, wait for older transactions,
the five rewrites, ``VACUUM FULL pg_statistic``); the two alternate, so both see the
same load. Times are of ``MemoryStore.forget(id, purge=True)`` as a whole, in ms.
The load average is printed beside the figures: the machine is shared.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for folder in (ROOT, HERE):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import workload  # noqa: E402
from latency import label, load_average, parse_size  # noqa: E402
from postgres import BenchServer, vacuum  # noqa: E402

from nervamem import MemoryStore  # noqa: E402
from nervamem.storage.postgres import scrub as postgres_scrub  # noqa: E402


def scrub_before(raw: Any, busy_timeout_ms: int) -> str | None:
    """The scrub of round 4: the tables rewritten, nothing else."""
    for table in postgres_scrub.SCRUBBED_TABLES:
        raw.execute(f"VACUUM FULL {table}")
    return None


def timed_purge(memory: MemoryStore, scrub: Any, number: int) -> float:
    node = memory.store("fact", f"purge me {number} PURGEDWORD{number}", entities=[f"Ent{number}"])
    current = postgres_scrub.scrub
    postgres_scrub.scrub = scrub
    try:
        started = time.perf_counter()
        result = memory.forget(node, purge=True)
        elapsed = (time.perf_counter() - started) * 1000
    finally:
        postgres_scrub.scrub = current
    assert result.files_not_scrubbed is None, result.files_not_scrubbed
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1k,10k")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args(argv)
    server = BenchServer().start()
    try:
        print(f"load before: {load_average()}")
        print("| memories | pg_statistic kB | purge before p50 / max ms | after p50 / max ms |")
        print("|---:|---:|---:|---:|")
        for size in sorted({parse_size(s) for s in args.sizes.split(",") if s.strip()}):
            url = server.fresh_url()
            clock = workload.SteppedClock()
            with MemoryStore(url, clock=clock) as memory:
                workload.ingest_bulk(memory, list(workload.generate(size)), clock)
            vacuum(url)
            times: dict[str, list[float]] = {"before": [], "after": []}
            with MemoryStore(url) as memory:
                for number in range(args.rounds):
                    times["before"].append(timed_purge(memory, scrub_before, 2 * number))
                    times["after"].append(timed_purge(memory, postgres_scrub.scrub, 2 * number + 1))
                row = memory.connection.execute(
                    "SELECT pg_total_relation_size('pg_statistic') / 1024"
                ).fetchone()
            cells = [
                f"{statistics.median(t):,.0f} / {max(t):,.0f}"
                for t in (times["before"], times["after"])
            ]
            print(f"| {label(size)} | {row[0]} | {cells[0]} | {cells[1]} |", flush=True)
        print(f"load after: {load_average()}")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
