"""nervamem beside two peers on one workload with hub entities, interleaved in one run.

    python bench/peers.py                          # 1k, 20k, 100k; ~15 minutes
    python bench/peers.py --sizes 1k --rounds 5    # a quick look
    python bench/peers.py --install-peers          # first: the peers, under bench/out/peers

The peers (issue 21), measured only when installed, never a dependency of nervamem:

* **agentrecall-db 0.2.0** (pip; a zero-dependency SQLite FTS5 agent memory), in its own
  venv ``bench/out/peers/venv-agentrecall``: ``Memory.search(q, k=10)``;
* **the MCP reference memory server** (``@modelcontextprotocol/server-memory``, npm), in
  ``bench/out/peers/node_modules``: ``search_nodes`` over stdio (JSON-RPC, one line per
  message), its replies read through a buffered pipe (``readline()`` on an unbuffered
  pipe reads byte by byte and inflates its figures). Its search is a substring match of
  the whole query, so it is given the query's rarest word (the word a person would type).

``--install-peers`` creates both (pip and npm need their registries once).

The workload (seeded): a 5,000-word vocabulary of made-up words with Zipf frequencies;
N memories of 12-30 words each about one of N/10 entities (its name in the text), 20 %
of them also about one of 5 hub entities; 200 queries of 2-4 words taken from a stored
memory (the entity's name in a third of them) and 20 of only common words (the 30 most
frequent). nervamem: ``recall(q, budget_tokens=500)``; each memory is a fact ABOUT its
entities. agentrecall-db: one memory each, its entities as tags. MCP memory: an entity
per entity, each memory an observation of its entity, a relation to its hub.

Per size, for each system: bulk load (items/s: nervamem ``store_many`` in batches of
5,000, agentrecall ``add_many`` likewise, MCP ``add_observations`` of 1,000 at a time),
bytes per memory on disk (after nervamem's and SQLite's checkpoint; the JSONL file),
warm recall p50 / p95 / slowest (in-process for the two Python libraries, one stdio
round trip for the MCP server; the three interleaved query by query), and cold one-shot
``recall`` and ``store`` in a fresh process (nervamem's CLI from a regular install, see
latency.py; ``agentrecall search`` / ``add``; MCP: start the server, initialize, one
tool call, exit) beside ``python -c "import typer"`` in the same rounds.

Raw figures go to ``bench/out/peers-<time>.json`` and the table to the ``## Peers``
section of ``bench/results.md`` (``--no-write`` leaves it alone).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
PEERS = OUT / "peers"
AGENTRECALL = PEERS / "venv-agentrecall" / "bin" / "python"
MCP_SERVER = (
    PEERS / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
)
BEGIN, END = "<!-- peers:begin -->", "<!-- peers:end -->"
BUDGET = 500
VOCABULARY = 5_000
HUBS = 5
HUB_SHARE = 0.2
COMMON = 30
LOAD_BATCH = 5_000
MCP_BATCH = 1_000

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


# ---------------------------------------------------------------------------- workload
def made_up_words(count: int, rng: random.Random) -> list[str]:
    onsets = "b c d f g h j k l m n p r s t v w z br dr gr kr pl st tr".split()
    vowels = "a e i o u ai ea ou".split()
    codas = ["", "", "n", "r", "s", "l", "m", "x"]
    words: dict[str, None] = {}
    while len(words) < count:
        syllables = rng.choice((2, 2, 3))
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(syllables))
        words[word + rng.choice(codas)] = None
    return list(words)


class Workload:
    def __init__(self, size: int, seed: int = 21) -> None:
        rng = random.Random(seed)
        self.words = made_up_words(VOCABULARY, rng)
        weights = [1.0 / rank for rank in range(1, VOCABULARY + 1)]
        cumulative: list[float] = []
        total = 0.0
        for weight in weights:
            total += weight
            cumulative.append(total)
        taken = set(self.words)
        names = [w for w in made_up_words(size // 10 + HUBS + VOCABULARY, rng) if w not in taken]
        self.entities = [name.capitalize() + "Service" for name in names[: max(size // 10, 1)]]
        self.hubs = [name.capitalize() + "Hub" for name in names[-HUBS:]]
        self.rank = {word: i for i, word in enumerate(self.words)}
        self.memories: list[tuple[str, list[str]]] = []
        for _ in range(size):
            body = rng.choices(self.words, cum_weights=cumulative, k=rng.randint(12, 30))
            about = [rng.choice(self.entities)]
            if rng.random() < HUB_SHARE:
                about.append(rng.choice(self.hubs))
            for name in about:
                body.insert(rng.randrange(len(body) + 1), name)
            self.memories.append((" ".join(body), about))
        self.queries: list[str] = []
        for _ in range(200):
            text, about = rng.choice(self.memories)
            words = sorted(set(text.split()) - set(about))  # sorted: no hash-seed order
            rng.shuffle(words)
            picked = words[: rng.randint(2, 4)]
            if rng.random() < 1 / 3:
                picked[0] = about[0]
            self.queries.append(" ".join(picked))
        for _ in range(20):
            self.queries.append(" ".join(rng.sample(self.words[:COMMON], rng.randint(2, 3))))

    def rarest(self, query: str) -> str:
        return max(query.split(), key=lambda w: self.rank.get(w, VOCABULARY))


# ---------------------------------------------------------------------------- systems
class Nervamem:
    name = "nervamem"

    def __init__(self, folder: Path) -> None:
        self.path = folder / "memory.db"

    def load(self, work: Workload) -> None:
        from nervamem import MemoryStore
        from nervamem.writing import NewMemory

        with MemoryStore(self.path) as store, store.batch():
            for start in range(0, len(work.memories), LOAD_BATCH):
                store.store_many(
                    NewMemory("fact", text, entities=about)
                    for text, about in work.memories[start : start + LOAD_BATCH]
                )

    def open(self) -> None:
        from nervamem import MemoryStore

        self.store = MemoryStore(self.path)

    def query(self, work: Workload, query: str) -> float:
        began = time.perf_counter()
        self.store.recall(query, budget_tokens=BUDGET)
        return (time.perf_counter() - began) * 1000

    def close(self) -> None:
        self.store.close()

    def files(self) -> list[Path]:
        return [self.path, Path(f"{self.path}-wal")]


# A worker in agentrecall's own venv: one JSON request a line, one reply a line.
AGENTRECALL_WORKER = r"""
import json, sys, time
from agentrecall import Memory
mem = Memory(sys.argv[1], embeddings=False)
for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "load":
        for start in range(0, len(req["items"]), BATCH):
            mem.add_many(req["items"][start:start + BATCH])
        reply = 0.0
    else:
        began = time.perf_counter()
        mem.search(req["q"], k=10)
        reply = (time.perf_counter() - began) * 1000
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
mem.close()
""".replace("BATCH", str(LOAD_BATCH))


class AgentRecall:
    name = "agentrecall-db"

    def __init__(self, folder: Path) -> None:
        self.path = folder / "agentrecall.db"

    def _start(self) -> None:
        self.proc = subprocess.Popen(
            [str(AGENTRECALL), "-c", AGENTRECALL_WORKER, str(self.path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def _ask(self, request: dict[str, Any]) -> float:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return float(json.loads(self.proc.stdout.readline()))

    def load(self, work: Workload) -> None:
        self._start()
        items = [{"content": text, "tags": about} for text, about in work.memories]
        self._ask({"op": "load", "items": items})
        self.close()

    def open(self) -> None:
        self._start()

    def query(self, work: Workload, query: str) -> float:
        return self._ask({"op": "search", "q": query})

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait()

    def files(self) -> list[Path]:
        return [self.path, Path(f"{self.path}-wal")]


class McpClient:
    """The server over stdio; replies read through a buffered pipe."""

    def __init__(self, path: Path) -> None:
        env = dict(os.environ, MEMORY_FILE_PATH=str(path))
        self.proc = subprocess.Popen(
            ["node", str(MCP_SERVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            bufsize=1 << 16,
        )
        self.next_id = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "nervamem-bench", "version": "1"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout
        while True:
            reply = json.loads(self.proc.stdout.readline())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(reply["error"])
                return reply["result"]

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait()


class McpMemory:
    name = "MCP memory"

    def __init__(self, folder: Path) -> None:
        self.path = folder / "memory.jsonl"

    def load(self, work: Workload) -> None:
        client = McpClient(self.path)
        client.call(
            "create_entities",
            {
                "entities": [
                    {"name": name, "entityType": "component", "observations": []}
                    for name in [*work.entities, *work.hubs]
                ]
            },
        )
        relations = {(about[0], about[1]) for _, about in work.memories if len(about) > 1}
        client.call(
            "create_relations",
            {
                "relations": [
                    {"from": a, "to": b, "relationType": "part_of"} for a, b in sorted(relations)
                ]
            },
        )
        for start in range(0, len(work.memories), MCP_BATCH):
            grouped: dict[str, list[str]] = {}
            for text, about in work.memories[start : start + MCP_BATCH]:
                grouped.setdefault(about[0], []).append(text)
            client.call(
                "add_observations",
                {
                    "observations": [
                        {"entityName": name, "contents": texts} for name, texts in grouped.items()
                    ]
                },
            )
        client.close()

    def open(self) -> None:
        self.client = McpClient(self.path)

    def query(self, work: Workload, query: str) -> float:
        began = time.perf_counter()
        self.client.call("search_nodes", {"query": work.rarest(query)})
        return (time.perf_counter() - began) * 1000

    def close(self) -> None:
        self.client.close()

    def files(self) -> list[Path]:
        return [self.path]


def available_systems(wanted: list[str]) -> list[type]:
    systems: list[type] = [Nervamem]
    if "agentrecall" in wanted and AGENTRECALL.exists():
        systems.append(AgentRecall)
    if "mcp" in wanted and MCP_SERVER.exists() and shutil.which("node"):
        systems.append(McpMemory)
    return systems


def install_peers() -> None:
    PEERS.mkdir(parents=True, exist_ok=True)
    if not AGENTRECALL.exists():
        subprocess.run([sys.executable, "-m", "venv", str(AGENTRECALL.parent.parent)], check=True)
        subprocess.run(
            [str(AGENTRECALL), "-m", "pip", "install", "agentrecall-db==0.2.0"], check=True
        )
    if not MCP_SERVER.exists():
        subprocess.run(
            ["npm", "install", "--prefix", str(PEERS), "@modelcontextprotocol/server-memory"],
            check=True,
        )


# ---------------------------------------------------------------------------- measuring
def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def disk_bytes(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths if p.exists())


def warm(
    systems: list[Any], work: Workload, repeats: int, mcp_queries: int
) -> dict[str, dict[str, float]]:
    """Every query on every system in turn (interleaved), after one warm-up pass.

    The workload's objects (a few hundred thousand at 100k) are frozen out of the cyclic
    GC first: nervamem runs in this process, and every full collection its allocations
    trigger would traverse them, a cost of the bench and not of nervamem (the peers run
    in processes of their own)."""
    import gc

    gc.collect()
    gc.freeze()
    samples: dict[str, list[float]] = {s.name: [] for s in systems}
    for system in systems:
        system.open()
    try:
        for system in systems:
            for query in work.queries[:20]:
                system.query(work, query)
        for _ in range(repeats):
            for index, query in enumerate(work.queries):
                for system in systems:
                    if system.name == McpMemory.name and index % max(
                        1, len(work.queries) // mcp_queries
                    ):
                        continue
                    samples[system.name].append(system.query(work, query))
    finally:
        for system in systems:
            system.close()
    return {
        name: {
            "p50": percentile(values, 0.5),
            "p95": percentile(values, 0.95),
            "max": max(values),
            "n": len(values),
        }
        for name, values in samples.items()
    }


def cold_commands(
    systems: list[Any], work: Workload, folder: Path, nervamem_python: Path
) -> dict[tuple[str, str], Callable[[], None]]:
    """What a fresh process of each system runs, on copies of the stores."""
    scratch = folder / "cold"
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir()
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPATH", None)
    env["PYTHONPYCACHEPREFIX"] = str(OUT / "pycache")
    query = work.queries[0]
    fact = "The bench stored this fact about " + work.entities[0]
    commands: dict[tuple[str, str], Callable[[], None]] = {}

    def run(argv: list[str], extra: dict[str, str] | None = None) -> Callable[[], None]:
        full = dict(env, **(extra or {}))
        return lambda: subprocess.run(argv, env=full, cwd=scratch, capture_output=True, check=True)

    commands[("python", "import typer")] = run([str(nervamem_python), "-c", "import typer"])
    for system in systems:
        for path in system.files():
            if path.exists():
                shutil.copy(path, scratch / path.name)
        if isinstance(system, Nervamem):
            cli = str(nervamem_python.with_name("nervamem"))
            db = {"NERVAPACK_MEMORY_DB": str(scratch / system.path.name)}
            commands[(system.name, "recall")] = run([cli, "recall", query, "--budget", "500"], db)
            commands[(system.name, "store")] = run([cli, "store", "fact", fact], db)
        elif isinstance(system, AgentRecall):
            cli = str(AGENTRECALL.with_name("agentrecall"))
            db_path = str(scratch / system.path.name)
            commands[(system.name, "recall")] = run(
                [cli, "--db", db_path, "search", query, "-k", "10"]
            )
            commands[(system.name, "store")] = run([cli, "--db", db_path, "add", fact])
        elif isinstance(system, McpMemory):
            path = scratch / system.path.name

            def one_call(
                tool: str, arguments: dict[str, Any], path: Path = path
            ) -> Callable[[], None]:
                def call() -> None:
                    client = McpClient(path)
                    client.call(tool, arguments)
                    client.close()

                return call

            commands[(system.name, "recall")] = one_call(
                "search_nodes", {"query": work.rarest(query)}
            )
            commands[(system.name, "store")] = one_call(
                "add_observations",
                {"observations": [{"entityName": work.entities[0], "contents": [fact]}]},
            )
    return commands


def cold(commands: dict[tuple[str, str], Callable[[], None]], rounds: int) -> dict[str, float]:
    for command in commands.values():  # bytecode and page caches
        command()
    times: dict[tuple[str, str], list[float]] = {key: [] for key in commands}
    for _ in range(rounds):
        for key, command in commands.items():
            began = time.perf_counter()
            command()
            times[key].append((time.perf_counter() - began) * 1000)
    return {
        f"{system}|{name}": statistics.median(values) for (system, name), values in times.items()
    }


def measure_size(size: int, args: argparse.Namespace, python: Path, log: Any) -> dict[str, Any]:
    from common import label, load_average

    folder = OUT / f"peers-{label(size)}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    work = Workload(size)
    systems = [cls(folder) for cls in available_systems(args.peers.split(","))]
    result: dict[str, Any] = {"size": size, "load_before": load_average(), "systems": {}}
    for system in systems:
        began = time.perf_counter()
        system.load(work)
        seconds = time.perf_counter() - began
        result["systems"][system.name] = {
            "load_per_s": size / seconds,
            "bytes_per_memory": disk_bytes(system.files()) / size,
        }
        log(
            f"[{label(size)}] {system.name}: load {size / seconds:,.0f}/s, "
            f"{disk_bytes(system.files()) / size:,.0f} bytes/memory"
        )
    for name, figures in warm(systems, work, args.repeats, args.mcp_queries).items():
        result["systems"][name]["warm"] = figures
        log(
            f"[{label(size)}] {name}: warm p50 {figures['p50']:.2f} p95 {figures['p95']:.2f} "
            f"max {figures['max']:.1f} ms"
        )
    if args.rounds:
        figures = cold(cold_commands(systems, work, folder, python), args.rounds)
        result["cold"] = figures
        log(f"[{label(size)}] cold: " + ", ".join(f"{k} {v:.1f}" for k, v in figures.items()))
    result["load_after"] = load_average()
    return result


# ---------------------------------------------------------------------------- results
def render(data: dict[str, Any]) -> str:
    from common import label

    names = [
        name
        for name in ("nervamem", "agentrecall-db", "MCP memory")
        if any(name in r["systems"] for r in data["sizes"])
    ]
    lines = [
        BEGIN,
        "## Peers",
        "",
        f"Measured {data['when']} with `{data['command']}` ({data['machine']}). Load average "
        + "; ".join(
            f"{label(r['size'])}: {r['load_before']} before, {r['load_after']} after"
            for r in data["sizes"]
        )
        + ". Workload and method: the docstring of bench/peers.py.",
        "",
        "| figure | N | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]

    def row(title: str, size: int, cell: Callable[[dict[str, Any], str], str]) -> None:
        results = next(r for r in data["sizes"] if r["size"] == size)
        lines.append(
            f"| {title} | {label(size)} | " + " | ".join(cell(results, n) for n in names) + " |"
        )

    def warm_cell(results: dict[str, Any], name: str) -> str:
        warm = results["systems"].get(name, {}).get("warm")
        if not warm:
            return "-"
        return f"{warm['p50']:.1f} / {warm['p95']:.1f} (worst {warm['max']:.0f})"

    def cold_cell(what: str) -> Callable[[dict[str, Any], str], str]:
        def cell(results: dict[str, Any], name: str) -> str:
            value = results.get("cold", {}).get(f"{name}|{what}")
            typer = results.get("cold", {}).get("python|import typer")
            if value is None:
                return "-"
            return (
                f"{value:.0f} ({value / typer:.2f}x)"
                if name == "nervamem" and typer
                else f"{value:.0f}"
            )

        return cell

    sizes = [r["size"] for r in data["sizes"]]
    for i, size in enumerate(sizes):
        row("warm recall p50 / p95 (slowest), ms" if i == 0 else "", size, warm_cell)
    for i, size in enumerate(sizes):
        row("cold one-shot recall, median ms" if i == 0 else "", size, cold_cell("recall"))
    for i, size in enumerate(sizes):
        row("cold one-shot store, median ms" if i == 0 else "", size, cold_cell("store"))
    for i, size in enumerate(sizes):
        row(
            "bulk load, items/s" if i == 0 else "",
            size,
            lambda r, n: f"{r['systems'][n]['load_per_s']:,.0f}" if n in r["systems"] else "-",
        )
    for i, size in enumerate(sizes):
        row(
            "bytes per memory on disk" if i == 0 else "",
            size,
            lambda r, n: (
                f"{r['systems'][n]['bytes_per_memory']:,.0f}" if n in r["systems"] else "-"
            ),
        )
    typers = ", ".join(
        f"{label(r['size'])}: {r['cold']['python|import typer']:.0f} ms"
        for r in data["sizes"]
        if "cold" in r
    )
    if typers:
        lines += [
            "",
            f'`python -c "import typer"` (the regular install\'s Python) in the same rounds: '
            f"{typers}; nervamem's ratios to it in brackets.",
        ]
    lines.append(END)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1k,20k,100k")
    parser.add_argument("--peers", default="agentrecall,mcp", help="comma-separated; '' for none")
    parser.add_argument("--repeats", type=int, default=2, help="passes over the 220 queries")
    parser.add_argument("--mcp-queries", type=int, default=55, help="MCP queries per pass")
    parser.add_argument("--rounds", type=int, default=15, help="cold rounds; 0 skips them")
    parser.add_argument("--install", choices=("regular", "dev"), default="regular")
    parser.add_argument("--install-peers", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if args.install_peers:
        install_peers()
    import latency
    from common import parse_size, write_section

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    python = Path(sys.executable)
    if args.rounds and args.install == "regular":
        python = latency.regular_install(log) or python
    data: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "command": "python bench/peers.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": f"{os.cpu_count()} cores, Python {sys.version.split()[0]}",
        "sizes": [],
    }
    for size in sorted(parse_size(s) for s in args.sizes.split(",") if s.strip()):
        data["sizes"].append(measure_size(size, args, python, log))
    (OUT / f"peers-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(json.dumps(data, indent=2))
    section = render(data)
    print(section)
    if not args.no_write:
        write_section(section, BEGIN, END)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
