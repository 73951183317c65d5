"""Purges in a row: does the store stay usable, and what does one purge cost?

    python bench/purges.py                       # 600 facts, then 3,000 x (store, purge)
    python bench/purges.py --nodes 600 --purges 1000 --every 100

Through the Python API on a new store in a temporary folder: N small facts, then P times
``store`` a fact and ``forget(..., purge=True)`` it, printing every ``--every`` rounds the
level count of the FTS5 index structure (``mem_fts_data`` row 10), the median purge time
of the last stretch and the file size; then a ``store`` and a ``recall``. Before issue 19
was fixed each purge added up to two levels, and after ~1,000 purges every store and
recall failed with "vtable constructor failed: mem_fts". The level count is read from
the shadow table itself, so the script works against any version of nervamem.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from nervamem import MemoryStore


def structure_levels(db: Path) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        block = conn.execute("SELECT block FROM mem_fts_data WHERE id = 10").fetchone()[0]
    finally:
        conn.close()
    value, index = 0, 4  # a 4-byte cookie, then the level count as a varint
    while True:
        byte = block[index]
        value = (value << 7) | (byte & 0x7F)
        index += 1
        if not byte & 0x80:
            return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=600)
    parser.add_argument("--purges", type=int, default=3000)
    parser.add_argument("--every", type=int, default=250)
    args = parser.parse_args()
    db = Path(tempfile.mkdtemp(prefix="nervamem-purges-")) / "memory.db"
    memory = MemoryStore(db)
    with memory.batch():
        for i in range(args.nodes):
            memory.store("fact", f"small fact {i} about widget{i % 37}")
    print("| purges | index levels | purge ms (median of the stretch) | file bytes |")
    print("|---:|---:|---:|---:|")
    times: list[float] = []
    failed = None
    for done in range(1, args.purges + 1):
        try:
            node = memory.store("fact", f"fact to purge {done}")
            started = time.perf_counter()
            memory.forget(node, purge=True)
            times.append((time.perf_counter() - started) * 1000)
        except Exception as exc:  # the failure is the measurement
            failed = f"purge {done} failed: {exc}"
            break
        if done % args.every == 0:
            size = db.stat().st_size
            print(f"| {done} | {structure_levels(db)} | {statistics.median(times):.1f} | {size} |")
            times = []
    try:
        memory.store("fact", "after the purges widget7")
        found = len(memory.recall("widget7").items)
        after = f"store and recall after: ok ({found} items)"
    except Exception as exc:
        after = f"store and recall after: {exc}"
    print()
    print(failed or f"{args.purges} purges: ok")
    print(after)
    return 0 if failed is None and after.endswith("items)") else 1


if __name__ == "__main__":
    sys.exit(main())
