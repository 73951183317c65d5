"""Every recall of a workload, written to a file: two checkouts that rank the same way
write the same bytes. For changes meant to make recall faster without changing it.

    python bench/recall_dump.py CHECKOUT OUT.json --peers 1k     # bench/out/peers-1k's store
    python bench/recall_dump.py CHECKOUT OUT.json --workload     # latency.py's 10k store
    cmp a.json b.json

It imports nervamem from CHECKOUT, recalls each query of the workload at budgets 200,
500 and 1000 (the latency workload also with ``--as-of`` a date in its span) twice over
on a copy of the store (so access counts build up as they would), at a fixed clock, and
writes the Markdown and every item's ID, score and factors. The stores: ``python
bench/peers.py --sizes 1k --peers '' --rounds 0`` and ``python bench/latency.py --sizes
10k --skip-cli --no-write``.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path


def main() -> int:
    root, out, mode = Path(sys.argv[1]).resolve(), Path(sys.argv[2]), sys.argv[3]
    bench = Path(__file__).resolve().parent
    sys.path[:0] = [str(root), str(bench)]
    import nervamem
    from nervamem import MemoryStore

    if not nervamem.__file__ or not nervamem.__file__.startswith(str(root)):
        raise SystemExit(f"nervamem was imported from {nervamem.__file__}, not {root}")
    as_of: str | None = None
    if mode == "--peers":
        import peers
        from common import parse_size

        size = sys.argv[4]
        queries = peers.Workload(parse_size(size)).queries
        source = bench / "out" / f"peers-{size}" / "memory.db"
    else:
        import workload

        queries = [q for batch in workload.queries().values() for q in batch]
        source = bench / "out" / "store-10k" / "memory.db"
        as_of = "2025-06-01"
    scratch = Path(tempfile.mkdtemp(prefix="nervamem-dump-"))
    shutil.copy(source, scratch / "memory.db")
    fixed = datetime(2027, 1, 1, tzinfo=timezone.utc)
    results = []
    try:
        with MemoryStore(scratch / "memory.db", clock=lambda: fixed) as store:
            for _ in range(2):
                for query in queries:
                    for budget in (200, 500, 1000):
                        for moment in (None, as_of) if as_of else (None,):
                            result = store.recall(query, budget_tokens=budget, as_of=moment)
                            items = [
                                [i.id, i.score, i.relevance, i.recency, i.frequency, i.via]
                                for i in result.items
                            ]
                            results.append([query, budget, moment, result.markdown, items])
    finally:
        shutil.rmtree(scratch)
    out.write_text(json.dumps(results), encoding="utf-8")
    print(f"{len(results)} recalls written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
