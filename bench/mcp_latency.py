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
  Over the wire with the SDK's client (its own validation included) and with a bare
  JSON-RPC client (one line out, one line in, ``json`` only), which leaves the server's
  and the pipes' share; each to two servers: ``nervamem mcp`` (its own stdio transport,
  nervamem/mcp_server/stdio.py) and the same server on the SDK's stdio transport
  (``mcp.server.stdio.stdio_server``), the before and after of that transport in one run.
  CPU time per call beside the wall-clock: the calling process's, and the bare servers';
* the protocol alone: ``ping`` round trips from the bare client to both servers.

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
import latency  # noqa: E402  (builds the workload's store)
import workload  # noqa: E402
from common import OUT, label, load_average, machine, parse_size, percentile, write_section  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from nervamem import MemoryStore, __version__  # noqa: E402
from nervamem.mcp_server.tools import MemoryServer  # noqa: E402

BEGIN, END = "<!-- mcp:begin -->", "<!-- mcp:end -->"
BUDGET = 500
TARGET_OVERHEAD_MS = 2.0
WIRE_PATHS = ("sdk", "sdk_sdk_transport", "bare", "bare_sdk_transport")
PATHS = (*WIRE_PATHS, "tool", "core")
# The same server over the SDK's own stdio transport (mcp.server.stdio.stdio_server, a
# worker thread per line), for the before/after of nervamem's transport in one run.
SDK_TRANSPORT_SERVER = (
    "import sys; from mcp.server.stdio import stdio_server; "
    "from nervamem.mcp_server.server import serve; "
    "from nervamem.mcp_server.tools import MemoryServer; "
    "serve(MemoryServer(sys.argv[1]), transport=stdio_server)"
)


def server_parameters(db: Path, *, sdk_transport: bool = False) -> StdioServerParameters:
    args = ["-m", "nervamem", "--db", str(db), "mcp"]
    if sdk_transport:
        args = ["-c", SDK_TRANSPORT_SERVER, str(db)]
    return StdioServerParameters(
        command=sys.executable,
        args=args,
        env={"PYTHONPATH": str(ROOT)},
        cwd=str(db.parent),
    )


class BareClient:
    """A JSON-RPC client of a few lines over the server's pipes: the least a client can
    cost, to tell the server's and the transport's share from the SDK client's."""

    def __init__(self, db: Path, *, sdk_transport: bool = False) -> None:
        params = server_parameters(db, sdk_transport=sdk_transport)
        self.process = subprocess.Popen(
            [params.command, *params.args],
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


def measure_pings(db: Path, *, pings: int, log: Any) -> dict[str, Any]:
    """The protocol alone: ``ping`` round trips from a bare client, to nervamem's stdio
    transport and to the SDK's, interleaved; wall-clock and the server's CPU."""
    clients = {"nervamem": BareClient(db), "sdk": BareClient(db, sdk_transport=True)}
    wall: dict[str, list[float]] = {name: [] for name in clients}
    for client in clients.values():
        for _ in range(50):
            client.request("ping", {})
    cpu = {name: client.cpu_seconds() for name, client in clients.items()}
    for index in range(pings):
        for name in sorted(clients, reverse=bool(index % 2)):
            began = time.perf_counter()
            clients[name].request("ping", {})
            wall[name].append(milliseconds(began))
    figures = {
        name: {
            **summary(wall[name]),
            "server_cpu_ms": (client.cpu_seconds() - cpu[name]) * 1000 / pings,
        }
        for name, client in clients.items()
    }
    for client in clients.values():
        client.close()
    log(
        "ping round trip p50 (server CPU per ping): "
        + ", ".join(
            f"{name} transport {f['p50']:.3f} ms ({f['server_cpu_ms']:.3f} ms)"
            for name, f in figures.items()
        )
    )
    return {"pings": pings, "transports": figures}


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

    wall: dict[str, list[float]] = {path: [] for path in PATHS}
    paired: dict[str, list[float]] = {path: [] for path in WIRE_PATHS}
    # CPU of this process per path: the tool layer's in-process, the client's over the wire.
    cpu: dict[str, float] = dict.fromkeys(PATHS, 0.0)
    server = MemoryServer(str(db))
    store = MemoryStore(db)
    bare = {"bare": BareClient(db), "bare_sdk_transport": BareClient(db, sdk_transport=True)}
    async with (
        Client(server_parameters(db)) as sdk,
        Client(server_parameters(db, sdk_transport=True)) as sdk_old,
    ):
        clients = {"sdk": sdk, "sdk_sdk_transport": sdk_old}

        async def call(path: str, arguments: dict[str, Any]) -> None:
            if path in clients:
                result = await clients[path].call_tool("memory_recall", arguments)
                assert not result.is_error, result.content
            elif path in bare:
                params = {"name": "memory_recall", "arguments": arguments}
                reply = bare[path].request("tools/call", params)
                assert not reply.get("isError"), reply
            elif path == "tool":
                answer = server.call("memory_recall", arguments)
                assert not answer.is_error, answer.text
            else:
                store.recall(arguments["query"], budget_tokens=BUDGET)

        for question in questions:  # warm every side
            for path in PATHS:
                await call(path, {"query": question})
        server_cpu = {path: client.cpu_seconds() for path, client in bare.items()}
        for repeat in range(repeats):
            for index, question in enumerate(questions):
                arguments = {"query": question, "budget_tokens": BUDGET}
                timings: dict[str, float] = {}
                # The paths in turn, in a rotating order: whichever runs first for a
                # query pays for the cold pages, and that must not be always the same.
                shift = (repeat + index) % len(PATHS)
                for path in (PATHS * 2)[shift : shift + len(PATHS)]:
                    began, began_cpu = time.perf_counter(), time.process_time()
                    await call(path, arguments)
                    timings[path] = milliseconds(began)
                    cpu[path] += time.process_time() - began_cpu
                for path in PATHS:
                    wall[path].append(timings[path])
                for path in WIRE_PATHS:
                    paired[path].append(timings[path] - timings["tool"])
        server_cpu = {path: c.cpu_seconds() - server_cpu[path] for path, c in bare.items()}
    for client in bare.values():
        client.close()
    server.close()
    store.close()
    calls = len(wall["tool"])
    tool_p50 = statistics.median(wall["tool"])
    recall: dict[str, Any] = {
        "calls": calls,
        "queries": len(questions),
        "paths": {path: summary(wall[path]) for path in PATHS},
        # Difference of the medians, and median of the per-call differences.
        "overhead_p50_ms": {p: statistics.median(wall[p]) - tool_p50 for p in WIRE_PATHS},
        "paired_overhead_median_ms": {p: statistics.median(paired[p]) for p in WIRE_PATHS},
        # Load-independent: CPU per call (mean), this process's and the bare servers'.
        "cpu_per_call_ms": {path: cpu[path] * 1000 / calls for path in PATHS},
        "server_cpu_per_call_ms": {p: server_cpu[p] * 1000 / calls for p in bare},
    }
    figures = {
        "startup_ms": {"median": statistics.median(startup), "runs": startup},
        "cli_recall_fresh_ms": {"median": statistics.median(cli), "runs": cli},
        "recall": recall,
    }
    over, pair = recall["overhead_p50_ms"], recall["paired_overhead_median_ms"]
    log(
        f"memory_recall p50: in-process tool {tool_p50:.2f} ms, core "
        f"{recall['paths']['core']['p50']:.2f} ms; protocol added (p50 difference / paired): "
        + ", ".join(f"{p} {over[p]:.2f} / {pair[p]:.2f} ms" for p in WIRE_PATHS)
        + "; CPU per call: "
        + ", ".join(f"{p} {v:.2f} ms" for p, v in recall["cpu_per_call_ms"].items())
        + "; server CPU per call: "
        + ", ".join(f"{p} {v:.2f} ms" for p, v in recall["server_cpu_per_call_ms"].items())
    )
    return figures


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": percentile(values, 0.5),
        "p95": percentile(values, 0.95),
    }


LABELS = {
    "sdk": "Over the protocol: SDK client, nervamem's stdio transport",
    "sdk_sdk_transport": "Over the protocol: SDK client, the SDK's stdio transport (before)",
    "bare": "Over the protocol: bare JSON-RPC client, nervamem's stdio transport",
    "bare_sdk_transport": "Over the protocol: bare JSON-RPC client, the SDK's stdio transport",
    "tool": "In-process tool call (`MemoryServer.call`: recall, Markdown, JSON document)",
    "core": "In-process core (`MemoryStore.recall`)",
}


def markdown(run: dict[str, Any]) -> str:
    figures = run["figures"]
    recall = figures["recall"]
    over, pair = recall["overhead_p50_ms"], recall["paired_overhead_median_ms"]
    cpu, server_cpu = recall["cpu_per_call_ms"], recall["server_cpu_per_call_ms"]
    verdict = "met" if over["sdk"] <= TARGET_OVERHEAD_MS else "missed"
    size = label(run["size"])
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
        f"`memory_recall`, budget 500, at {size} ({recall['calls']} calls per path, "
        f"{recall['queries']} queries of bench/workload.py, the {len(PATHS)} paths "
        'interleaved in a rotating order; "the SDK\'s stdio transport" is the same server '
        "on `mcp.server.stdio.stdio_server`, as before nervamem had its own):",
        "",
        "| Path | p50 | p95 | added to the tool call: p50 difference / paired median "
        "| CPU per call: client / server |",
        "| --- | --- | --- | --- | --- |",
    ]
    for path in PATHS:
        p50, p95 = recall["paths"][path]["p50"], recall["paths"][path]["p95"]
        added = f"{over[path]:.2f} / {pair[path]:.2f} ms" if path in over else ""
        if path in WIRE_PATHS:
            used = f"{cpu[path]:.2f} / " + (
                f"{server_cpu[path]:.2f} ms" if path in server_cpu else "(not measured)"
            )
        else:
            used = f"{cpu[path]:.2f} ms (in-process)"
        lines.append(f"| {LABELS[path]} | {p50:.2f} ms | {p95:.2f} ms | {added} | {used} |")
    lines += [
        "",
        f"The protocol adds {over['sdk']:.2f} ms at the median with the SDK's client "
        f"(paired {pair['sdk']:.2f} ms; on the SDK's transport {over['sdk_sdk_transport']:.2f} / "
        f"{pair['sdk_sdk_transport']:.2f} ms) and {over['bare']:.2f} ms with a bare client "
        f"(paired {pair['bare']:.2f} ms; on the SDK's transport "
        f"{over['bare_sdk_transport']:.2f} / {pair['bare_sdk_transport']:.2f} ms): target (at "
        f"most {TARGET_OVERHEAD_MS:g} ms a call, SDK client) {verdict}.",
        "",
        "CPU time, less swayed by the machine's load than wall-clock time (means): the server "
        f"spends {server_cpu['bare'] - cpu['tool']:.2f} ms a call on the protocol (its CPU per "
        "call less the in-process tool call's), "
        f"{server_cpu['bare_sdk_transport'] - cpu['tool']:.2f} ms on the SDK's transport; the "
        "SDK's client spends "
        f"{cpu['sdk']:.2f} ms of CPU a call in the calling process, a bare client "
        f"{cpu['bare']:.2f} ms.",
        "",
        f"The protocol alone: {figures['ping']['pings']} `ping` round trips per transport from "
        "the bare client, the two servers interleaved:",
        "",
        "| Server's stdio transport | p50 | p95 | server CPU per ping (mean) |",
        "| --- | --- | --- | --- |",
        *(
            f"| {'nervamem' if name == 'nervamem' else 'the SDK'}'s | {f['p50']:.3f} ms | "
            f"{f['p95']:.3f} ms | {f['server_cpu_ms']:.3f} ms |"
            for name, f in figures["ping"]["transports"].items()
        ),
        END,
    ]
    return "\n".join(lines) + "\n"


def write_results(text: str) -> None:
    write_section(text, BEGIN, END)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="100k", help="nodes in the store (10k, 100k, ...)")
    parser.add_argument("--rounds", type=int, default=10, help="start-up rounds")
    parser.add_argument("--repeats", type=int, default=5, help="passes over the queries")
    parser.add_argument("--pings", type=int, default=3000, help="ping round trips per transport")
    parser.add_argument("--no-write", action="store_true", help="leave bench/results.md alone")
    args = parser.parse_args()
    size = parse_size(args.size)

    def log(message: str) -> None:
        print(message, flush=True)

    load_before = load_average()
    manifest = latency.build(size, rebuild=False, reference_nodes=1000, log=log)
    db = OUT / f"store-{label(size)}" / "memory.db"
    figures = anyio.run(lambda: measure(db, rounds=args.rounds, repeats=args.repeats, log=log))
    figures["ping"] = measure_pings(db, pings=args.pings, log=log)
    from importlib.metadata import version

    run = {
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "command": "python bench/mcp_latency.py " + " ".join(sys.argv[1:]),
        "machine": "{cpu}, {cores} cores, {memory}; {os}, SQLite {sqlite}".format(**machine()),
        "python": platform.python_version(),
        "mcp": version("mcp"),
        "nervamem": __version__,
        "load_before": load_before,
        "load_after": load_average(),
        "size": size,
        "nodes": manifest["nodes"],
        "figures": figures,
    }
    run["command"] = run["command"].strip()
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / f"mcp-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(run, indent=2))
    text = markdown(run)
    print(text)
    if not args.no_write:
        write_results(text)


if __name__ == "__main__":
    main()
