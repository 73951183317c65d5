"""Bytes per memory of an SQLite store, table by table and index by index (dbstat).

    python bench/bytes.py bench/out/peers-100k/memory.db [MEMORIES]

For each B-tree: the bytes of its pages per memory, and how much of them is unused
(page slack). MEMORIES defaults to the number of non-entity, non-session nodes. Reads
the file as it is (a copy is checkpointed first if a -wal lies beside it).
"""

from __future__ import annotations

import sqlite3
import sys


def main() -> int:
    path = sys.argv[1]
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    if len(sys.argv) > 2:
        memories = int(sys.argv[2])
    else:
        memories = conn.execute(
            "SELECT count(*) FROM mem_nodes WHERE kind NOT IN ('entity', 'session')"
        ).fetchone()[0]
    rows = conn.execute(
        "SELECT name, sum(pgsize), sum(unused) FROM dbstat GROUP BY name ORDER BY 2 DESC"
    ).fetchall()
    total = sum(r[1] for r in rows)
    print(f"{memories:,} memories, {total:,} bytes in pages: {total / memories:,.1f} per memory")
    print(f"{'b-tree':32} {'bytes/memory':>12} {'unused':>7}")
    for name, size, unused in rows:
        if size / memories >= 0.5:
            print(f"{name:32} {size / memories:12.1f} {unused / size:7.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
