"""The SQL statements a warm recall runs, counted by their text, for one checkout.

    python bench/recall_statements.py CHECKOUT --peers 1k     # bench/out/peers-1k's store
    python bench/recall_statements.py CHECKOUT --workload     # latency.py's 10k store

It imports nervamem from CHECKOUT, recalls every query of the workload once at budget
500 on a copy of the store (statements prepared, pages read), then once more with
SQLite's trace callback on, and prints the statements per recall, grouped by their text
with literals and parameter lists folded (``?``, ``N``). Statements that SQLite runs
inside FTS5 (``-- ...``) are left out; the count is of what nervamem asks for.
"""

from __future__ import annotations

import collections
import re
import shutil
import sys
import tempfile
from pathlib import Path


def _folded(sql: str) -> str:
    sql = re.sub(r"'[^']*'", "?", sql)
    sql = re.sub(r"\b\d+\b", "N", sql)
    sql = re.sub(r"N(,\s*N)+", "N", sql)
    return re.sub(r"\?(,\s*\?)*", "?", sql)


def main() -> int:
    root, mode = Path(sys.argv[1]).resolve(), sys.argv[2]
    bench = Path(__file__).resolve().parent
    sys.path[:0] = [str(root), str(bench)]
    import nervamem
    from nervamem import MemoryStore

    if not nervamem.__file__ or not nervamem.__file__.startswith(str(root)):
        raise SystemExit(f"nervamem was imported from {nervamem.__file__}, not {root}")
    if mode == "--peers":
        import latency
        import peers

        queries = peers.Workload(latency.parse_size(sys.argv[3])).queries
        source = bench / "out" / f"peers-{sys.argv[3]}" / "memory.db"
    else:
        import workload

        queries = [q for batch in workload.queries().values() for q in batch]
        source = bench / "out" / "store-10k" / "memory.db"
    scratch = Path(tempfile.mkdtemp(prefix="nervamem-statements-"))
    shutil.copy(source, scratch / "memory.db")
    counts: collections.Counter[str] = collections.Counter()

    def seen(sql: str) -> None:
        if not sql.startswith("--"):
            counts[_folded(sql)] += 1

    try:
        with MemoryStore(scratch / "memory.db") as store:
            for query in queries:
                store.recall(query, budget_tokens=500)
            store.connection.set_trace_callback(seen)  # type: ignore[union-attr]
            for query in queries:
                store.recall(query, budget_tokens=500)
            store.connection.set_trace_callback(None)  # type: ignore[union-attr]
    finally:
        shutil.rmtree(scratch)
    total = sum(counts.values()) / len(queries)
    print(f"{total:.2f} statements per recall ({len(queries)} recalls, budget 500)")
    for sql, count in counts.most_common():
        print(f"{count / len(queries):7.2f}  {sql[:140]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
