"""Recall's ranking steps of two checkouts on the same inputs, interleaved call by call.

    python bench/score_pair.py /path/to/main . --peers 1k --rounds 9

recall_pair.py times whole recalls, of which SQL is about half; this times the Python
that ranks: checkout B recalls every query of the peers workload once (budget 500) on a
copy of ``bench/out/peers-SIZE/memory.db`` while the inputs of its ``score_rows``
(recall/relevance.py) and ``top_k`` (recall/scoring.py, with the degrees it read) are
recorded; then each recorded call is run by A's and by B's function, A then B (B then A
on odd rounds), and the thread CPU time of each is summed. Interleaving evicts one
checkout's data from the CPU caches for the other's; ``--blocks`` runs every call of
one checkout, then every call of the other, as a process running one of them would.
The results must be equal (every candidate's relevance; every ranked score, factor and
ID): the script stops if they are not. Checkout A is imported as ``nervamem_a`` (a
symlink), as in recall_pair.py.
"""

from __future__ import annotations

import importlib
import shutil
import time
from pathlib import Path
from typing import Any


def main() -> int:
    from recall_pair import pair_parser, side_by_side

    parser = pair_parser(__doc__.split("\n")[0], rounds=9)
    parser.add_argument(
        "--blocks", action="store_true", help="all calls of one checkout, then the other's"
    )
    args = parser.parse_args()
    bench = Path(__file__).resolve().parent
    scratch = side_by_side(args.a, args.b)
    import latency
    import peers

    try:
        steps = {
            name: (
                importlib.import_module(f"{package}.recall.relevance"),
                importlib.import_module(f"{package}.recall.scoring"),
                importlib.import_module(f"{package}.recall.candidates"),
            )
            for name, package in (("A", "nervamem_a"), ("B", "nervamem"))
        }
        scores, ranks = _record(steps["B"], bench, args.peers, scratch, latency, peers)
        spent = {name: {"score_rows": 0.0, "top_k": 0.0} for name in steps}
        # A checkout whose score_rows reads words kept in the node cache gets its own,
        # kept across rounds as a long-lived process's would be.
        kept: dict[str, dict[str, Any]] = {}
        for name, package in (("A", "nervamem_a"), ("B", "nervamem")):
            cache = importlib.import_module(f"{package}.recall.node_cache")
            kept[name] = {"texts": cache.SearchFacts()} if hasattr(cache, "SearchFacts") else {}
        for round_ in range(args.rounds):
            order = ("A", "B") if round_ % 2 == 0 else ("B", "A")
            # Call by call (A's and B's run of a call one after the other), or with
            # --blocks every call of one checkout, then every call of the other.
            blocks = [order] if not args.blocks else [(name,) for name in order]
            ranked: dict[str, list[Any]] = {name: [] for name in steps}
            for names in blocks:
                for call in scores:
                    for name in names:
                        relevance = steps[name][0]
                        began = time.thread_time()
                        found = relevance.score_rows(*call, **kept[name])
                        spent[name]["score_rows"] += time.thread_time() - began
                        ranked[name].append([(i, c.relevance) for i, c in found.items()])
                for candidates, reference, k, degree in ranks:
                    for name in names:
                        _, scoring, module = steps[name]
                        found = {
                            row[0]: module.Candidate(*row, relevance=r, via=via)
                            for row, r, via in candidates
                        }
                        scoring.degrees = lambda conn, ids, facts=None, degree=degree: {
                            i: degree[i] for i in ids if i in degree
                        }
                        began = time.thread_time()
                        top = scoring.top_k(None, found, reference=reference, k=k)
                        spent[name]["top_k"] += time.thread_time() - began
                        ranked[name].append([(s[:4], s[4].id) for s in top])
            if ranked["A"] != ranked["B"]:
                raise SystemExit("the checkouts rank differently")
    finally:
        shutil.rmtree(scratch)
    for name, checkout in (("A", args.a), ("B", args.b)):
        figures = ", ".join(
            f"{step} {total / args.rounds / len(scores) * 1000:.3f} ms"
            for step, total in spent[name].items()
        )
        print(f"{name} {checkout}: a recall's thread CPU, mean of {args.rounds} rounds: {figures}")
    return 0


def _record(
    step: tuple[Any, Any, Any], bench: Path, size: str, scratch: Path, latency: Any, peers: Any
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The inputs of every score_rows and top_k call of one recall per query (B's)."""
    scoring = step[1]
    recall_api = importlib.import_module("nervamem.recall.api")
    search = importlib.import_module("nervamem.recall.search")
    scores: list[tuple[Any, ...]] = []
    ranks: list[tuple[Any, ...]] = []
    score_rows, top_k = search.score_rows, recall_api.top_k

    def recording_score_rows(*call: Any, **named: Any) -> Any:
        # The node cache's kept words (``texts``, since issue 21 round 5) are not
        # recorded: each checkout scores with its own (see main).
        scores.append(tuple(_copy(value) for value in call))
        return score_rows(*call, **named)

    def recording_top_k(conn: Any, found: Any, *, reference: Any, k: int, **named: Any) -> Any:
        rows = [
            (
                (c.id, c.kind, c.content, c.valid_from, c.valid_until, c.recorded_at)
                + (c.confidence, c.access_count, c.seq),
                c.relevance,
                c.via,
            )
            for c in found.values()
        ]
        ranks.append((rows, reference, k, scoring.degrees(conn, list(found))))
        return top_k(conn, found, reference=reference, k=k, **named)

    search.score_rows, recall_api.top_k = recording_score_rows, recording_top_k
    store_module = importlib.import_module("nervamem")
    path = scratch / "record.db"
    shutil.copy(bench / "out" / f"peers-{size}" / "memory.db", path)
    try:
        with store_module.MemoryStore(path) as store:
            for query in peers.Workload(latency.parse_size(size)).queries:
                store.recall(query, budget_tokens=500)
    finally:
        search.score_rows, recall_api.top_k = score_rows, top_k
    return scores, ranks


def _copy(value: Any) -> Any:
    """Lists and dicts copied (score_rows may be handed them again); the rest as is."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


if __name__ == "__main__":
    raise SystemExit(main())
