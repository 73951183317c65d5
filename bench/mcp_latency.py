"""nervamem MCP server benchmark: what the protocol costs (issue 16).

    python bench/mcp_latency.py                  # store of 100k nodes (built in ~1-2 minutes)
    python bench/mcp_latency.py --size 10k       # smaller, faster
    python bench/mcp_latency.py --no-write       # do not touch bench/results.md

It builds a store from the seeded workload (bench/workload.py, through bench/latency.py's
build), then measures, with the MCP SDK's own client over stdio, as a client runs it:

* start-up to first tool result: spawn ``python -m nervamem --db STORE mcp``, connect
  (handshake), call ``memory_recall`` and receive its result, in fresh rounds; beside it,
  a fresh ``python -m nervamem recall`` process on the same store, the CLI's equivalent;
* ``memory_recall`` (budget 500) over the protocol, beside the same call in-process,
  interleaved query by query on the same store: the tool layer alone
  (``MemoryServer.call``: recall, the Markdown and the JSON document) and the core alone
  (``MemoryStore.recall``). The protocol's cost is the difference of the medians of the
  wire and of the tool layer, and, per query, the median of the paired differences.

Every figure is a median (or a percentile) of interleaved rounds on a shared machine; the
load average is recorded beside them. Results go to stdout, to bench/out/mcp-<time>.json
and to the section of bench/results.md between ``<!-- mcp:begin -->`` and
``<!-- mcp:end -->``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for entry in (str(ROOT), str(HERE)):
    if entry not in sys.path:
        sys.path.insert(0, entry)

import anyio  # noqa: E402
import latency  # noqa: E402
import workload  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from nervamem import MemoryStore, __version__  # noqa: E402
from nervamem.mcp_server.tools import MemoryServer  # noqa: E402

RESULTS = HERE / "results.md"
BEGIN, END = "<!-- mcp:begin -->", "<!-- mcp:end -->"
BUDGET = 500
TARGET_OVERHEAD_MS = 2.0


def server_parameters(db: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "nervamem", "--db", str(db), "mcp"],
        env={"PYTHONPATH": str(ROOT)},
        cwd=str(db.parent),
    )


def milliseconds(began: float) -> float:
    return (time.perf_counter() - began) * 1000


async def startup_round(db: Path, query: str) -> float:
    began = time.perf_counter()
    async with Client(server_parameters(db)) as client:
        result = await client.call_tool("memory_recall", {"query": query})
        elapsed = milliseconds(began)
    assert not result.is_error, result.content
    return elapsed


def cli_round(db: Path, query: str) -> float:
    began = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "nervamem", "--db", str(db), "recall", query],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
        capture_output=True,
    )
    return milliseconds(began)


async def measure(db: Path, *, rounds: int, repeats: int, log: Any) -> dict[str, Any]:
    sets = workload.queries()
    questions = [q for batch in sets.values() for q in batch]
    first = questions[0]

    startup, cli = [], []
    await startup_round(db, first)  # warm the bytecode and page caches
    cli_round(db, first)
    for _ in range(rounds):
        startup.append(await startup_round(db, first))
        cli.append(cli_round(db, first))
    log(
        f"start-up to first result: {statistics.median(startup):.0f} ms "
        f"(fresh `nervamem recall`: {statistics.median(cli):.0f} ms)"
    )

    wire: list[float] = []
    tool: list[float] = []
    core: list[float] = []
    paired: list[float] = []
    server = MemoryServer(str(db))
    store = MemoryStore(db)
    async with Client(server_parameters(db)) as client:
        for question in questions:  # warm both sides
            await client.call_tool("memory_recall", {"query": question})
            server.call("memory_recall", {"query": question})
        for _ in range(repeats):
            for question in questions:
                arguments = {"query": question, "budget_tokens": BUDGET}
                began = time.perf_counter()
                result = await client.call_tool("memory_recall", arguments)
                over_wire = milliseconds(began)
                assert not result.is_error, result.content
                began = time.perf_counter()
                answer = server.call("memory_recall", arguments)
                in_tool = milliseconds(began)
                assert not answer.is_error, answer.text
                began = time.perf_counter()
                store.recall(question, budget_tokens=BUDGET)
                core.append(milliseconds(began))
                wire.append(over_wire)
                tool.append(in_tool)
                paired.append(over_wire - in_tool)
    server.close()
    store.close()
    figures = {
        "startup_ms": {"median": statistics.median(startup), "runs": startup},
        "cli_recall_fresh_ms": {"median": statistics.median(cli), "runs": cli},
        "recall": {
            "calls": len(wire),
            "queries": len(questions),
            "wire": summary(wire),
            "tool_in_process": summary(tool),
            "core_in_process": summary(core),
            "overhead_p50_ms": statistics.median(wire) - statistics.median(tool),
            "paired_overhead_median_ms": statistics.median(paired),
        },
    }
    recall = figures["recall"]
    log(
        f"memory_recall p50: wire {recall['wire']['p50']:.2f} ms, in-process tool "
        f"{recall['tool_in_process']['p50']:.2f} ms, core recall "
        f"{recall['core_in_process']['p50']:.2f} ms; protocol "
        f"{recall['overhead_p50_ms']:.2f} ms (paired median "
        f"{recall['paired_overhead_median_ms']:.2f} ms)"
    )
    return figures


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": latency.percentile(values, 0.5),
        "p95": latency.percentile(values, 0.95),
    }


def markdown(run: dict[str, Any]) -> str:
    figures = run["figures"]
    recall = figures["recall"]
    overhead = recall["overhead_p50_ms"]
    verdict = "met" if overhead <= TARGET_OVERHEAD_MS else "missed"
    size = latency.label(run["size"])
    lines = [
        BEGIN,
        "## The MCP server",
        "",
        f"Measured {run['when']} with `{run['command']}` on {run['machine']}; Python "
        f"{run['python']}, mcp {run['mcp']}, nervamem {run['nervamem']}. Load average "
        f"{run['load_before']} before, {run['load_after']} after (the machine is shared: "
        "medians of interleaved rounds). Store: "
        f"{run['nodes']:,} nodes of the seeded workload.",
        "",
        "| Figure | Median |",
        "| --- | --- |",
        f"| Start-up to first tool result (spawn `nervamem mcp`, handshake, `memory_recall`; "
        f"{len(figures['startup_ms']['runs'])} rounds) | "
        f"{figures['startup_ms']['median']:.0f} ms |",
        f"| For reference: a fresh `nervamem recall` process | "
        f"{figures['cli_recall_fresh_ms']['median']:.0f} ms |",
        "",
        f"`memory_recall`, budget 500, at {size} ({recall['calls']} calls, "
        f"{recall['queries']} queries of bench/workload.py, interleaved):",
        "",
        "| Path | p50 | p95 |",
        "| --- | --- | --- |",
        f"| Over the protocol (SDK client, stdio) | {recall['wire']['p50']:.2f} ms | "
        f"{recall['wire']['p95']:.2f} ms |",
        f"| In-process tool call (`MemoryServer.call`: recall, Markdown, JSON document) | "
        f"{recall['tool_in_process']['p50']:.2f} ms | "
        f"{recall['tool_in_process']['p95']:.2f} ms |",
        f"| In-process core (`MemoryStore.recall`) | {recall['core_in_process']['p50']:.2f} ms "
        f"| {recall['core_in_process']['p95']:.2f} ms |",
        "",
        f"The protocol adds {overhead:.2f} ms at the median (difference of the p50s; median "
        f"of the paired per-call differences {recall['paired_overhead_median_ms']:.2f} ms): "
        f"target (at most {TARGET_OVERHEAD_MS:g} ms a call) {verdict}.",
        END,
    ]
    return "\n".join(lines) + "\n"


def write_results(text: str) -> None:
    current = RESULTS.read_text(encoding="utf-8")
    if BEGIN in current and END in current:
        head, rest = current.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        RESULTS.write_text(head + text + ("\n" + tail if tail else ""), encoding="utf-8")
    else:
        RESULTS.write_text(current.rstrip("\n") + "\n\n" + text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="100k", help="nodes in the store (10k, 100k, ...)")
    parser.add_argument("--rounds", type=int, default=10, help="start-up rounds")
    parser.add_argument("--repeats", type=int, default=5, help="passes over the queries")
    parser.add_argument("--no-write", action="store_true", help="leave bench/results.md alone")
    args = parser.parse_args()
    size = latency.parse_size(args.size)

    def log(message: str) -> None:
        print(message, flush=True)

    load_before = latency.load_average()
    manifest = latency.build(size, rebuild=False, reference_nodes=1000, log=log)
    db = latency.OUT / f"store-{latency.label(size)}" / "memory.db"
    figures = anyio.run(lambda: measure(db, rounds=args.rounds, repeats=args.repeats, log=log))
    from importlib.metadata import version

    run = {
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "command": "python bench/mcp_latency.py " + " ".join(sys.argv[1:]),
        "machine": "{cpu}, {cores} cores, {memory}; {os}, SQLite {sqlite}".format(
            **latency.machine()
        ),
        "python": platform.python_version(),
        "mcp": version("mcp"),
        "nervamem": __version__,
        "load_before": load_before,
        "load_after": latency.load_average(),
        "size": size,
        "nodes": manifest["nodes"],
        "figures": figures,
    }
    run["command"] = run["command"].strip()
    latency.OUT.mkdir(parents=True, exist_ok=True)
    out = latency.OUT / f"mcp-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(run, indent=2))
    text = markdown(run)
    print(text)
    if not args.no_write:
        write_results(text)


if __name__ == "__main__":
    main()
