"""The PostgreSQL engine beside SQLite, in one run (issue 15's figures).

    python bench/postgres.py                  # 10k and 100k memories (a few minutes)
    python bench/postgres.py --sizes 10k      # quicker

It starts its own PostgreSQL server (Debian's binaries, as the tests do: a throwaway
cluster under bench/out/, run as an unprivileged user when started as root, a Unix
socket, fsync on as a real server has it), and for each size builds the same seeded
workload (bench/workload.py) into an SQLite file and into a PostgreSQL database through
the API's bulk path, then measures:

* bulk ingest rate (memories/s): ``store_many`` inside ``store.batch()``, per engine;
* in-process ``recall`` (budget 500) p50/p95 over the workload's query sets, the two
  engines interleaved query by query (the same load for both);
* fresh-process ``nervamem store`` and ``nervamem recall`` (on the 10k stores, or the
  smallest size), both engines in the same interleaved rounds.

Results go to stdout, bench/out/postgres-<time>.json and the section of bench/results.md
between ``<!-- postgres:begin -->`` and ``<!-- postgres:end -->`` (--no-write leaves it).
The load average is recorded beside the figures: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for folder in (ROOT, HERE):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import workload  # noqa: E402
from common import (  # noqa: E402
    OUT,
    label,
    load_average,
    machine,
    parse_size,
    percentile,
    write_section,
)

from nervamem import MemoryStore  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

BEGIN, END = "<!-- postgres:begin -->", "<!-- postgres:end -->"
BUDGET = 500
TARGETS = {"p50_100k_ms": 15.0, "ingest_per_s": 5_000.0}


# ---------------------------------------------------------------------------- the server
class BenchServer(PgServer):
    """The tests' throwaway server (tests/pg_server.py), with a real server's durability
    (fsync, synchronous commit) and more shared buffers."""

    SETTINGS = "-c max_connections=50 -c shared_buffers=256MB"


def vacuum(url: str) -> None:
    """What autovacuum does soon after a bulk load (visibility map, statistics), done at
    once so that every run measures the same steady state."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


# ---------------------------------------------------------------------------- figures
def build(target: str, size: int, log: Any) -> dict[str, Any]:
    plans = list(workload.generate(size))
    clock = workload.SteppedClock()
    with MemoryStore(target, clock=clock) as store:
        report = workload.ingest_bulk(store, plans, clock)
        nodes = int(store.connection.execute("SELECT count(*) FROM mem_nodes").fetchone()[0])
    log(f"[{label(size)} {engine_of(target)}] {nodes:,} nodes: {report.nodes_per_second:,.0f}/s")
    return {"nodes": nodes, "seconds": report.seconds, "per_s": report.nodes_per_second}


def engine_of(target: str) -> str:
    return "postgresql" if target.startswith("postgresql://") else "sqlite"


def recall_latency(targets: dict[str, str], repeats: int) -> dict[str, Any]:
    """Every query on each engine in turn, ``repeats`` times: interleaved."""
    questions = [q for qs in workload.queries().values() for q in qs]
    stores = {engine: MemoryStore(target) for engine, target in targets.items()}
    samples: dict[str, list[float]] = {engine: [] for engine in stores}
    per_query: dict[str, dict[str, list[float]]] = {engine: {} for engine in stores}
    try:
        for question in questions:  # warm-up
            for store in stores.values():
                store.recall(question, budget_tokens=BUDGET)
        for _ in range(repeats):
            for question in questions:
                for engine, store in stores.items():
                    began = time.perf_counter()
                    store.recall(question, budget_tokens=BUDGET)
                    elapsed = (time.perf_counter() - began) * 1000
                    samples[engine].append(elapsed)
                    per_query[engine].setdefault(question, []).append(elapsed)
    finally:
        for store in stores.values():
            store.close()
    result: dict[str, Any] = {}
    for engine, values in samples.items():
        slowest = max(per_query[engine].items(), key=lambda kv: statistics.median(kv[1]))
        result[engine] = {
            "p50": percentile(values, 0.5),
            "p95": percentile(values, 0.95),
            "slowest": (slowest[0], statistics.median(slowest[1])),
        }
    return result


def fresh_process(targets: dict[str, str], rounds: int) -> dict[str, Any]:
    nervamem = str(Path(sys.executable).with_name("nervamem"))
    question = workload.queries()["question"][0]
    names = workload.entity_names()
    commands = {
        "store": [nervamem, "store", "fact", "The bench run stored this fact", "-e", names[3]],
        "recall": [nervamem, "recall", question, "--budget", str(BUDGET)],
    }
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(OUT / "pycache")
    work = Path(tempfile.mkdtemp(prefix="pgbench-cli-"))
    wall: dict[tuple[str, str], list[float]] = {}
    try:
        for _ in range(rounds + 2):  # two warm-up rounds, not counted
            for engine, target in targets.items():
                for name, argv in commands.items():
                    began = time.perf_counter()
                    subprocess.run(
                        argv,
                        env={**env, "NERVAPACK_MEMORY_DB": target},
                        cwd=work,
                        capture_output=True,
                        check=True,
                    )
                    wall.setdefault((engine, name), []).append((time.perf_counter() - began) * 1000)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {f"{e} {n}": statistics.median(v[2:]) for (e, n), v in wall.items()}


def statement_profile(target: str, rounds: int = 2) -> list[tuple[float, float, str]]:
    """Where a PostgreSQL recall's time goes: each SQL statement's time per recall (ms),
    its calls per recall, and its text (shortened), the costliest first (all of them)."""
    questions = [q for qs in workload.queries().values() for q in qs]
    spent: dict[str, list[float]] = {}
    with MemoryStore(target) as store:
        connection: Any = store.connection
        execute = connection.execute

        def timed(sql: str, parameters: Any = ()) -> Any:
            began = time.perf_counter()
            try:
                return execute(sql, parameters)
            finally:
                key = " ".join(sql.split())
                key = key if len(key) <= 90 else key[:60] + " ... " + key[-25:]
                if "mem_search_" in sql or "BY n.seq" in sql:  # search's own
                    key = "(search) " + key
                spent.setdefault(key, []).append((time.perf_counter() - began) * 1000)

        connection.execute = timed
        for _ in range(rounds):
            for question in questions:
                store.recall(question, budget_tokens=BUDGET)
    count = rounds * len(questions)
    rows = [(sum(v) / count, len(v) / count, sql) for sql, v in spent.items()]
    return sorted(rows, reverse=True)


# ---------------------------------------------------------------------------- report
def met(ok: bool) -> str:
    return "yes" if ok else "**no**"


def render(data: dict[str, Any]) -> str:
    m = data["machine"]
    lines = [
        BEGIN,
        "## PostgreSQL engine",
        "",
        f"Measured {data['started']} with `{data['command']}` on {m['cpu']}, {m['cores']} "
        f"cores, {m['memory']}; PostgreSQL {data['server_version']} on a local Unix socket "
        f"(started by the bench), SQLite {m['sqlite']}, Python {m['python']}. Load average "
        f"{data['load_before']} before, {data['load_after']} after (shared machine: both "
        "engines measured in the same interleaved rounds).",
        "",
        "| figure | target | PostgreSQL | SQLite | met? |",
        "|---|---|---|---|---|",
    ]
    for size, figures in sorted(data["sizes"].items(), key=lambda kv: int(kv[0])):
        n = label(int(size))
        pg, lite = figures["recall"]["postgresql"], figures["recall"]["sqlite"]
        target = TARGETS["p50_100k_ms"] if int(size) == 100_000 else None
        lines.append(
            f"| recall p50 @ {n} | {f'<= {target:g} ms' if target else '-'} | "
            f"{pg['p50']:.2f} ms | {lite['p50']:.2f} ms | "
            f"{met(pg['p50'] <= target) if target else '-'} |"
        )
        lines.append(f"| recall p95 @ {n} | - | {pg['p95']:.2f} ms | {lite['p95']:.2f} ms | - |")
        lines.append(
            f"| slowest query (median) @ {n} | - | {pg['slowest'][1]:.2f} ms "
            f'("{pg["slowest"][0]}") | {lite["slowest"][1]:.2f} ms | - |'
        )
        rate_pg = figures["build"]["postgresql"]["per_s"]
        rate_lite = figures["build"]["sqlite"]["per_s"]
        lines.append(
            f"| bulk ingest @ {n} | >= {TARGETS['ingest_per_s']:,.0f}/s | {rate_pg:,.0f}/s | "
            f"{rate_lite:,.0f}/s | {met(rate_pg >= TARGETS['ingest_per_s'])} |"
        )
    for size, fresh in data.get("fresh", {}).items():
        for name in ("store", "recall"):
            lines.append(
                f"| fresh-process `nervamem {name}` @ {label(int(size))} | - | "
                f"{fresh[f'postgresql {name}']:.0f} ms | {fresh[f'sqlite {name}']:.0f} ms | - |"
            )
    for size, profile in data.get("profile", {}).items():
        total = sum(ms for ms, _, _ in profile[:10])
        lines += [
            "",
            f"Where a PostgreSQL recall's time goes at {label(int(size))} (SQL statements, "
            f"the ten costliest: {total:.1f} ms of each recall, network round trips "
            "included; search's own are marked (search)):",
            "",
            "| ms per recall | calls per recall | statement |",
            "|---|---|---|",
        ]
        lines += [
            f"| {ms:.2f} | {calls:.1f} | `{sql.replace('|', '/')}` |"
            for ms, calls, sql in profile[:10]
        ]
        own = sum(ms for ms, _, sql in profile if sql.startswith("(search) "))
        every = sum(ms for ms, _, _ in profile)
        lines += [
            "",
            f"All statements: {every:.1f} ms of each recall; search's own (on `mem_search_*`, "
            f"and its candidate reads): {own:.1f} ms.",
        ]
    lines += ["", *data.get("notes", []), END]
    return "\n".join(lines) + "\n"


def write_results(section: str) -> None:
    """Our section of results.md replaced (appended the first time); the rest is kept."""
    write_section(section, BEGIN, END)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10k,100k")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each query")
    parser.add_argument("--rounds", type=int, default=10, help="fresh-process rounds")
    parser.add_argument("--no-write", action="store_true", help="leave bench/results.md")
    args = parser.parse_args(argv)
    sizes = sorted({parse_size(s) for s in args.sizes.split(",") if s.strip()})
    OUT.mkdir(exist_ok=True)

    def log(message: str) -> None:
        print(message, flush=True)

    data: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%d %H:%M"),
        "command": " ".join(
            ["python bench/postgres.py", *(sys.argv[1:] if argv is None else argv)]
        ),
        "machine": machine(),
        "load_before": load_average(),
        "sizes": {},
    }
    server = BenchServer().start()
    scratch = Path(tempfile.mkdtemp(prefix="pgbench-sqlite-", dir=OUT))
    try:
        import psycopg

        with psycopg.connect(server.url()) as conn:
            data["server_version"] = conn.execute("SHOW server_version").fetchone()[0]
        for size in sizes:
            targets = {
                "sqlite": str(scratch / f"{label(size)}.db"),
                "postgresql": server.fresh_url(),
            }
            figures: dict[str, Any] = {"build": {}}
            for engine, target in targets.items():
                figures["build"][engine] = build(target, size, log)
            vacuum(targets["postgresql"])
            figures["recall"] = recall_latency(targets, args.repeats)
            for engine, r in figures["recall"].items():
                log(f"[{label(size)} {engine}] recall p50 {r['p50']:.2f} ms p95 {r['p95']:.2f}")
            data["sizes"][str(size)] = figures
            data.setdefault("profile", {})[str(size)] = statement_profile(targets["postgresql"])
            if size == sizes[0] and args.rounds:
                data["fresh"] = {str(size): fresh_process(targets, args.rounds)}
                log(f"[{label(size)}] fresh process: {data['fresh'][str(size)]}")
    finally:
        server.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    data["load_after"] = load_average()
    section = render(data)
    (OUT / f"postgres-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(json.dumps(data, indent=2))
    print(section)
    if not args.no_write:
        write_results(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
