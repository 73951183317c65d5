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
  Over the wire twice: with the SDK's client (its own validation included), and with a
  bare JSON-RPC client (one line out, one line in, ``json`` only), which leaves the
  server's and the pipes' share.

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
PATHS = ("sdk", "bare", "bare_sdk_transport", "tool", "core")
# The same server over the SDK's own stdio transport (mcp.server.stdio.stdio_server, a
# worker thread per line), for the before/after of nervamem's transport in one run.
SDK_TRANSPORT_SERVER = (
    "import sys; from mcp.server.stdio import stdio_server; "
    "from nervamem.mcp_server.server import serve; "
    "from nervamem.mcp_server.tools import MemoryServer; "
    "serve(MemoryServer(sys.argv[1]), transport=stdio_server)"
)


def server_parameters(db: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "nervamem", "--db", str(db), "mcp"],
        env={"PYTHONPATH": str(ROOT)},
        cwd=str(db.parent),
    )


class BareClient:
    """A JSON-RPC client of a few lines over the server's pipes: the least a client can
    cost, to tell the server's and the transport's share from the SDK client's."""

    def __init__(self, db: Path, *, sdk_transport: bool = False) -> None:
        params = server_parameters(db)
        args = ["-c", SDK_TRANSPORT_SERVER, str(db)] if sdk_transport else params.args
        self.process = subprocess.Popen(
            [params.command, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, **(params.env or {})},
            cwd=params.cwd,
        )
        self.next_id = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.process.stdout is not None
        reply: dict[str, Any] = json.loads(self.process.stdout.readline())
        return reply["result"]

    def cpu_seconds(self) -> float:
        """CPU time (user + system) the server process has used so far (Linux)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


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
    bare_wire: list[float] = []
    sdk_transport_wire: list[float] = []
    tool: list[float] = []
    core: list[float] = []
    paired: list[float] = []
    bare_paired: list[float] = []
    sdk_transport_paired: list[float] = []
    server = MemoryServer(str(db))
    store = MemoryStore(db)
    bare = BareClient(db)
    bare_sdk = BareClient(db, sdk_transport=True)
    tool_cpu = 0.0
    async with Client(server_parameters(db)) as client:
        for question in questions:  # warm every side
            await client.call_tool("memory_recall", {"query": question})
            for each in (bare, bare_sdk):
                params = {"name": "memory_recall", "arguments": {"query": question}}
                each.request("tools/call", params)
            server.call("memory_recall", {"query": question})
        server_cpu = bare.cpu_seconds()
        sdk_server_cpu = bare_sdk.cpu_seconds()
        for repeat in range(repeats):
            for index, question in enumerate(questions):
                arguments = {"query": question, "budget_tokens": BUDGET}
                timings: dict[str, float] = {}
                # The four paths in turn, in a rotating order: whichever runs first for a
                # query pays for the cold pages, and that must not be always the same.
                shift = (repeat + index) % len(PATHS)
                for path in (PATHS * 2)[shift : shift + len(PATHS)]:
                    began = time.perf_counter()
                    if path == "sdk":
                        result = await client.call_tool("memory_recall", arguments)
                        assert not result.is_error, result.content
                    elif path in ("bare", "bare_sdk_transport"):
                        params = {"name": "memory_recall", "arguments": arguments}
                        each = bare if path == "bare" else bare_sdk
                        reply = each.request("tools/call", params)
                        assert not reply.get("isError"), reply
                    elif path == "tool":
                        cpu = time.process_time()
                        answer = server.call("memory_recall", arguments)
                        tool_cpu += time.process_time() - cpu
                        assert not answer.is_error, answer.text
                    else:
                        store.recall(question, budget_tokens=BUDGET)
                    timings[path] = milliseconds(began)
                wire.append(timings["sdk"])
                bare_wire.append(timings["bare"])
                sdk_transport_wire.append(timings["bare_sdk_transport"])
                tool.append(timings["tool"])
                core.append(timings["core"])
                paired.append(timings["sdk"] - timings["tool"])
                bare_paired.append(timings["bare"] - timings["tool"])
                sdk_transport_paired.append(timings["bare_sdk_transport"] - timings["tool"])
        server_cpu = bare.cpu_seconds() - server_cpu
        sdk_server_cpu = bare_sdk.cpu_seconds() - sdk_server_cpu
    bare.close()
    bare_sdk.close()
    server.close()
    store.close()
    figures = {
        "startup_ms": {"median": statistics.median(startup), "runs": startup},
        "cli_recall_fresh_ms": {"median": statistics.median(cli), "runs": cli},
        "recall": {
            "calls": len(wire),
            "queries": len(questions),
            "wire": summary(wire),
            "bare_wire": summary(bare_wire),
            "bare_wire_sdk_transport": summary(sdk_transport_wire),
            "tool_in_process": summary(tool),
            "core_in_process": summary(core),
            "overhead_p50_ms": statistics.median(wire) - statistics.median(tool),
            "paired_overhead_median_ms": statistics.median(paired),
            "bare_overhead_p50_ms": statistics.median(bare_wire) - statistics.median(tool),
            "bare_paired_overhead_median_ms": statistics.median(bare_paired),
            "sdk_transport_overhead_p50_ms": statistics.median(sdk_transport_wire)
            - statistics.median(tool),
            "sdk_transport_paired_overhead_median_ms": statistics.median(sdk_transport_paired),
            # Load-independent: CPU the server spends per call, beside the tool layer's.
            "server_cpu_per_call_ms": server_cpu * 1000 / len(bare_wire),
            "sdk_transport_server_cpu_per_call_ms": sdk_server_cpu * 1000 / len(bare_wire),
            "tool_cpu_per_call_ms": tool_cpu * 1000 / len(tool),
        },
    }
    recall = figures["recall"]
    log(
        f"memory_recall p50: wire {recall['wire']['p50']:.2f} ms, in-process tool "
        f"{recall['tool_in_process']['p50']:.2f} ms, core recall "
        f"{recall['core_in_process']['p50']:.2f} ms; protocol "
        f"{recall['overhead_p50_ms']:.2f} ms (paired median "
        f"{recall['paired_overhead_median_ms']:.2f} ms); bare client "
        f"{recall['bare_wire']['p50']:.2f} ms, protocol {recall['bare_overhead_p50_ms']:.2f} ms; "
        f"SDK's transport {recall['bare_wire_sdk_transport']['p50']:.2f} ms, protocol "
        f"{recall['sdk_transport_overhead_p50_ms']:.2f} ms; server CPU per call "
        f"{recall['server_cpu_per_call_ms']:.2f} ms (SDK's transport "
        f"{recall['sdk_transport_server_cpu_per_call_ms']:.2f} ms), in-process "
        f"{recall['tool_cpu_per_call_ms']:.2f} ms"
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
        f"{recall['queries']} queries of bench/workload.py, the five paths interleaved in a "
        "rotating order):",
        "",
        "| Path | p50 | p95 |",
        "| --- | --- | --- |",
        f"| Over the protocol (SDK client, stdio) | {recall['wire']['p50']:.2f} ms | "
        f"{recall['wire']['p95']:.2f} ms |",
        f"| Over the protocol (bare JSON-RPC client, stdio) | {recall['bare_wire']['p50']:.2f} ms "
        f"| {recall['bare_wire']['p95']:.2f} ms |",
        "| The same, server on the SDK's stdio transport (before nervamem's own) | "
        f"{recall['bare_wire_sdk_transport']['p50']:.2f} ms "
        f"| {recall['bare_wire_sdk_transport']['p95']:.2f} ms |",
        f"| In-process tool call (`MemoryServer.call`: recall, Markdown, JSON document) | "
        f"{recall['tool_in_process']['p50']:.2f} ms | "
        f"{recall['tool_in_process']['p95']:.2f} ms |",
        f"| In-process core (`MemoryStore.recall`) | {recall['core_in_process']['p50']:.2f} ms "
        f"| {recall['core_in_process']['p95']:.2f} ms |",
        "",
        f"The protocol adds {overhead:.2f} ms at the median with the SDK's client "
        f"(difference of the p50s; median of the paired per-call differences "
        f"{recall['paired_overhead_median_ms']:.2f} ms), {recall['bare_overhead_p50_ms']:.2f} ms "
        f"with the bare client (paired {recall['bare_paired_overhead_median_ms']:.2f} ms): "
        f"target (at most {TARGET_OVERHEAD_MS:g} ms a call) {verdict}. On the SDK's stdio "
        f"transport the same bare client's calls cost "
        f"{recall['sdk_transport_overhead_p50_ms']:.2f} ms more than in-process (paired "
        f"{recall['sdk_transport_paired_overhead_median_ms']:.2f} ms).",
        "",
        "CPU time, less swayed by the machine's load than wall-clock time: the server "
        f"process spends {recall['server_cpu_per_call_ms']:.2f} ms per `memory_recall` "
        "(mean, bare client), "
        f"the same call in-process {recall['tool_cpu_per_call_ms']:.2f} ms: the protocol's "
        f"own work is {recall['server_cpu_per_call_ms'] - recall['tool_cpu_per_call_ms']:.2f} "
        "ms of CPU a call on the server's side; on the SDK's stdio transport "
        f"{recall['sdk_transport_server_cpu_per_call_ms']:.2f} ms per call, "
        f"{recall['sdk_transport_server_cpu_per_call_ms'] - recall['tool_cpu_per_call_ms']:.2f}"
        " ms above the in-process call.",
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
