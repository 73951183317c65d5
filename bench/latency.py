"""nervamem latency benchmark: one command, every figure of issue 7.

    python bench/latency.py                     # 10k and 100k nodes (about 2 minutes)
    python bench/latency.py --sizes 10k,100k,1m # 1M is opt-in (builds a ~1 GB store once)

For each size it builds a store from the seeded workload (bench/workload.py) through the
API's bulk path and measures:

* bulk ingest rate (nodes/s) through ``store.store_many`` inside ``store.batch()``, and,
  for reference, through plain ``store.store()`` calls in one batch;
* database bytes per node (after a checkpoint, so the WAL is counted in the file);
* in-process ``recall`` latency (budget 500), p50/p95 for short keyword queries, for
  natural-language questions and for questions made of the most common words, each
  query run repeatedly, interleaved; and the slowest query's median.

Then, on a copy of each store up to 100k, fresh-process latency of
``nervamem --version``, ``store``, ``recall --budget 500`` and ``timeline``, beside
``python -c pass`` and ``python -c "import typer"`` measured in the same interleaved
rounds, as medians and as ratios to ``import typer``: for a regular install (README's
``pip install .``, into a scratch venv under bench/out/) and for the running Python's
own install (the dev venv's is editable, whose import hook costs time), each against
the ``import typer`` of the same Python (--install picks one).

Stores are kept in bench/out/ (ignored by git); 1M is reused if present and built by the
same workload version (--rebuild forces a new build). Results go to stdout, to
bench/out/latency-<time>.json, and to the section of bench/results.md between the
``<!-- latency:begin -->`` / ``<!-- latency:end -->`` markers (other sections of that
file are kept as they are; --no-write leaves it alone).

Fresh processes run with bytecode caching on (PYTHONDONTWRITEBYTECODE unset, a private
PYTHONPYCACHEPREFIX under bench/out/), as an installed nervamem runs, after warm-up runs.
Timings on a shared machine are noisy: every figure is a median over interleaved
rounds, and the load average is recorded next to them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import workload  # noqa: E402
from common import (  # noqa: E402
    OUT,
    RESULTS,
    children_cpu,
    label,
    load_average,
    machine,
    met,
    parse_size,
    percentile,
    write_section,
)

from nervamem import MemoryStore  # noqa: E402

WORKLOAD_VERSION = 4  # bump when bench/workload.py changes what it generates
BEGIN, END = "<!-- latency:begin -->", "<!-- latency:end -->"
BUDGET = 500

TARGETS = {
    "fresh_ratio": 1.3,
    "p50_100k_ms": 5.0,
    "p50_1m_ms": 25.0,
    "p95_over_p50": 3.0,
    "slowest_100k_ms": 50.0,
    "ingest_nodes_per_s": 10_000.0,
}


# ---------------------------------------------------------------------------- helpers
def remove_store(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    (path.parent / "state.yaml").unlink(missing_ok=True)


def file_bytes(path: Path) -> int:
    return sum(
        os.path.getsize(f"{path}{suffix}")
        for suffix in ("", "-wal")
        if os.path.exists(f"{path}{suffix}")
    )


# ---------------------------------------------------------------------------- ingest
def build(size: int, *, rebuild: bool, reference_nodes: int, log: Any) -> dict[str, Any]:
    """Build (or reuse) the store of ``size`` nodes; return its ingest and size figures."""
    folder = OUT / f"store-{label(size)}"
    path = folder / "memory.db"
    manifest_path = folder / "manifest.json"
    keep = size >= 1_000_000 and not rebuild
    if keep and manifest_path.exists() and path.exists():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("workload_version") == WORKLOAD_VERSION:
            log(f"[{label(size)}] reusing {path} (built {manifest['built_at']})")
            manifest["reused"] = True
            return dict(manifest)
    folder.mkdir(parents=True, exist_ok=True)
    remove_store(path)
    plans = list(workload.generate(size))
    clock = workload.SteppedClock()
    store = MemoryStore(path, clock=clock)
    started = time.perf_counter()

    def progress(done: int) -> None:
        if size >= 200_000 and done % 100_000 < 6_000:
            rate = done / (time.perf_counter() - started)
            log(f"[{label(size)}] {done:,} nodes, {rate:,.0f}/s")

    report = workload.ingest_bulk(store, plans, clock, progress=progress)
    connection = store.connection
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    nodes = int(connection.execute("SELECT count(*) FROM mem_nodes").fetchone()[0])
    edges = int(connection.execute("SELECT count(*) FROM mem_edges").fetchone()[0])
    store.close()
    size_bytes = file_bytes(path)

    # Reference: the same memories through one store() call each, in one batch.
    reference_path = OUT / "store-reference" / "memory.db"
    reference_path.parent.mkdir(parents=True, exist_ok=True)
    remove_store(reference_path)
    reference_plans = list(workload.generate(reference_nodes))
    reference_clock = workload.SteppedClock()
    with MemoryStore(reference_path, clock=reference_clock) as reference_store:
        reference = workload.ingest(reference_store, reference_plans, reference_clock)
    remove_store(reference_path)

    manifest = {
        "size": size,
        "workload_version": WORKLOAD_VERSION,
        "built_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        "nodes": nodes,
        "edges": edges,
        "sessions": report.sessions,
        "ingest_nodes": report.nodes_written,
        "ingest_seconds": report.seconds,
        "ingest_nodes_per_s": report.nodes_per_second,
        "store_call_nodes_per_s": reference.nodes_per_second,
        "store_call_nodes": reference.nodes_written,
        "db_bytes": size_bytes,
        "bytes_per_node": size_bytes / nodes,
        "reused": False,
    }
    manifest_path.write_text(json.dumps(manifest, indent=2))
    log(
        f"[{label(size)}] {nodes:,} nodes, {edges:,} edges: bulk ingest "
        f"{manifest['ingest_nodes_per_s']:,.0f} nodes/s, store() "
        f"{manifest['store_call_nodes_per_s']:,.0f} nodes/s, "
        f"{manifest['bytes_per_node']:,.0f} bytes/node"
    )
    return manifest


# ---------------------------------------------------------------------------- in-process
def recall_latency(size: int, *, repeats: int, log: Any) -> dict[str, Any]:
    path = OUT / f"store-{label(size)}" / "memory.db"
    sets = workload.queries()
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in sets}
    with MemoryStore(path) as store:
        for questions in sets.values():  # warm the page cache and the code paths
            for question in questions:
                store.recall(question, budget_tokens=BUDGET)
        for _ in range(repeats):
            for name, questions in sets.items():
                for question in questions:
                    began = time.perf_counter()
                    store.recall(question, budget_tokens=BUDGET)
                    elapsed = (time.perf_counter() - began) * 1000
                    samples[name].setdefault(question, []).append(elapsed)
    result: dict[str, Any] = {"size": size, "sets": {}}
    every: list[float] = []
    slowest = ("", 0.0)
    for name, per_query in samples.items():
        values = [v for runs in per_query.values() for v in runs]
        every += values
        result["sets"][name] = {
            "p50": percentile(values, 0.5),
            "p95": percentile(values, 0.95),
            "max": max(values),
            "queries": {q: statistics.median(runs) for q, runs in per_query.items()},
        }
        for question, runs in per_query.items():
            median = statistics.median(runs)
            if median > slowest[1]:
                slowest = (question, median)
    result["all"] = {
        "p50": percentile(every, 0.5),
        "p95": percentile(every, 0.95),
        "max": max(every),
    }
    result["slowest_query"] = {"query": slowest[0], "median": slowest[1]}
    log(
        f"[{label(size)}] recall p50 {result['all']['p50']:.2f} ms, p95 "
        f"{result['all']['p95']:.2f} ms; slowest query {slowest[1]:.2f} ms ({slowest[0]!r})"
    )
    return result


# ---------------------------------------------------------------------------- fresh process
def regular_install(log: Any) -> Path | None:
    """A non-editable install of the working tree, as README's ``pip install .`` makes
    one: a scratch venv in bench/out/venv-regular (dependencies installed by pip the
    first time, from the index or pip's cache), nervamem reinstalled from a copy of the
    working tree on every run. Returns its Python, or None when pip cannot build it."""
    venv = OUT / "venv-regular"
    python = venv / "bin" / "python"
    source = OUT / "regular-src"  # a copy: pip's in-tree build would leave build/ in ROOT
    if source.exists():
        shutil.rmtree(source)
    shutil.copytree(
        ROOT / "nervamem", source / "nervamem", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in ("pyproject.toml", "README.md", "man/nervamem.1"):  # man: pyproject's data-files
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, source / name)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    try:
        for attempt in range(2):
            if not python.exists():
                log(f"creating {venv.relative_to(ROOT)} (pip install of nervamem and its deps)")
                subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
                subprocess.run([*pip, str(source)], check=True, capture_output=True)
            subprocess.run(
                [*pip, "--no-deps", "--force-reinstall", str(source)],
                check=True,
                capture_output=True,
            )
            probe = subprocess.run(
                [str(python), "-c", "import typer, nervamem.cli"], capture_output=True
            )
            if probe.returncode == 0:
                return python
            if attempt == 0:  # a broken venv from an interrupted run: build it again
                shutil.rmtree(venv)
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        log(f"regular install failed ({exc}; {detail.decode(errors='replace')[-300:]})")
    log("regular install unavailable: fresh-process figures for the running Python only")
    return None


def fresh_process(size: int, *, rounds: int, installs: dict[str, Path], log: Any) -> dict[str, Any]:
    """Every install's commands and its own ``import typer`` baseline in the same
    interleaved rounds; ratios are to the baseline of the same install."""
    source = OUT / f"store-{label(size)}" / "memory.db"
    work = OUT / "cli"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    db = work / "memory.db"
    shutil.copy(source, db)
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(OUT / "pycache")
    env["NERVAPACK_MEMORY_DB"] = str(db)
    for name in ("NERVAMEM_FORMAT", "NERVAMEM_TOKENIZER", "NERVAMEM_DEBUG", "PYTHONPATH"):
        env.pop(name, None)
    names = workload.entity_names()
    question = workload.queries()["question"][0]
    commands: dict[tuple[str, str], list[str]] = {}
    for install, python in installs.items():
        nervamem = str(Path(python).with_name("nervamem"))
        python_s = str(python)
        if not commands:
            commands[(install, "python -c pass")] = [python_s, "-c", "pass"]
        commands[(install, 'python -c "import typer"')] = [python_s, "-c", "import typer"]
        commands[(install, "nervamem --version")] = [nervamem, "--version"]
        commands[(install, "nervamem store")] = [
            nervamem,
            "store",
            "fact",
            "The bench run stored this fact",
            "-e",
            names[3],
        ]
        commands[(install, "nervamem recall")] = [
            nervamem,
            "recall",
            question,
            "--budget",
            str(BUDGET),
        ]
        commands[(install, "nervamem timeline")] = [nervamem, "timeline", f"{names[0]} token TTL"]
    for argv in commands.values():  # warm-up: bytecode caches, page cache
        for _ in range(2):
            subprocess.run(argv, env=env, cwd=work, capture_output=True, check=True)
    wall: dict[tuple[str, str], list[float]] = {key: [] for key in commands}
    cpu: dict[tuple[str, str], list[float]] = {key: [] for key in commands}
    for _ in range(rounds):
        for key, argv in commands.items():
            before = children_cpu()
            began = time.perf_counter()
            subprocess.run(argv, env=env, cwd=work, capture_output=True, check=True)
            elapsed = time.perf_counter() - began
            wall[key].append(elapsed * 1000)
            cpu[key].append((children_cpu() - before) * 1000)
    result: dict[str, Any] = {"size": size, "rounds": rounds, "installs": {}}
    for install, python in installs.items():
        key = (install, 'python -c "import typer"')
        baseline = statistics.median(wall[key])
        baseline_cpu = statistics.median(cpu[key])
        rows: dict[str, Any] = {}
        for (owner, name), values in wall.items():
            if owner != install:
                continue
            median = statistics.median(values)
            median_cpu = statistics.median(cpu[(owner, name)])
            rows[name] = {
                "median_ms": median,
                "cpu_ms": median_cpu,
                "ratio": median / baseline,
                "cpu_ratio": median_cpu / baseline_cpu if baseline_cpu else float("nan"),
            }
            log(
                f"[cli {label(size)} {install}] {name:28s} {median:7.1f} ms  "
                f"x{median / baseline:.2f}  (CPU x{rows[name]['cpu_ratio']:.2f})"
            )
        result["installs"][install] = {
            "python": str(python),
            "baseline_ms": baseline,
            "commands": rows,
        }
    shutil.rmtree(work)
    return result


INSTALL_TITLES = {
    "regular": "regular install (`pip install .` into a scratch venv)",
    "dev": "the running Python's install (the dev venv's is editable)",
}


# ---------------------------------------------------------------------------- report
def render(data: dict[str, Any]) -> str:
    m = data["machine"]
    lines = [
        BEGIN,
        "## Latency",
        "",
        f"Measured {data['started']} with `{data['command']}` on {m['cpu']}, "
        f"{m['cores']} cores, {m['memory']}; {m['os']}, Python {m['python']}, SQLite "
        f"{m['sqlite']}, typer {m['typer']}, nervamem {m['nervamem']}. Load average "
        f"{data['load_before']} before, {data['load_after']} after (other engineers share "
        "the machine: medians of interleaved rounds).",
        "",
        "### Targets",
        "",
        "| figure | target | measured | met? |",
        "|---|---|---|---|",
    ]
    fresh_runs = sorted(data.get("fresh", {}).items(), key=lambda kv: int(kv[0]))
    for size, fresh in fresh_runs:
        for install, figures in fresh["installs"].items():
            for name in ("nervamem recall", "nervamem store"):
                row = figures["commands"][name]
                lines.append(
                    f"| fresh-process `{name.split()[1]}` / `import typer`, "
                    f"{label(int(size))} store, {install} install "
                    f"| <= {TARGETS['fresh_ratio']}x | {row['ratio']:.2f}x "
                    f"({row['median_ms']:.0f} vs {figures['baseline_ms']:.0f} ms; "
                    f"CPU {row['cpu_ratio']:.2f}x) | {met(row['ratio'], TARGETS['fresh_ratio'])} |"
                )
    for size, latency in sorted(data["recall"].items(), key=lambda kv: int(kv[0])):
        n = int(size)
        p50 = latency["all"]["p50"]
        p95 = latency["all"]["p95"]
        if n == 100_000:
            lines.append(
                f"| in-process recall p50 @ 100k | <= {TARGETS['p50_100k_ms']:g} ms | "
                f"{p50:.2f} ms | {met(p50, TARGETS['p50_100k_ms'])} |"
            )
        if n == 1_000_000:
            lines.append(
                f"| in-process recall p50 @ 1M | <= {TARGETS['p50_1m_ms']:g} ms | "
                f"{p50:.2f} ms | {met(p50, TARGETS['p50_1m_ms'])} |"
            )
        lines.append(
            f"| recall p95 / p50 @ {label(n)} | <= {TARGETS['p95_over_p50']:g}x | "
            f"{p95 / p50:.2f}x ({p95:.2f} / {p50:.2f} ms) | "
            f"{met(p95 / p50, TARGETS['p95_over_p50'])} |"
        )
        if n == 100_000:
            slowest = latency["slowest_query"]["median"]
            lines.append(
                f"| slowest query (median of its runs) @ 100k | <= "
                f"{TARGETS['slowest_100k_ms']:g} ms | {slowest:.2f} ms | "
                f"{met(slowest, TARGETS['slowest_100k_ms'])} |"
            )
    for size, build_info in sorted(data["build"].items(), key=lambda kv: int(kv[0])):
        rate = build_info["ingest_nodes_per_s"]
        lines.append(
            f"| bulk ingest @ {label(int(size))} | >= {TARGETS['ingest_nodes_per_s']:,.0f} "
            f"nodes/s | {rate:,.0f} nodes/s | "
            f"{'yes' if rate >= TARGETS['ingest_nodes_per_s'] else '**no**'} |"
        )
    for size, build_info in sorted(data["build"].items(), key=lambda kv: int(kv[0])):
        lines.append(
            f"| store size @ {label(int(size))} | reported | "
            f"{build_info['bytes_per_node']:,.0f} bytes/node | - |"
        )
    for size, fresh in fresh_runs:
        lines += [
            "",
            f"### Fresh-process latency (store of {label(int(size))} nodes, "
            f"{fresh['rounds']} interleaved rounds)",
            "",
            "Each install's commands beside its own `import typer`, in the same rounds: "
            + "; ".join(
                f"**{install}**: {INSTALL_TITLES.get(install, install)}"
                for install in fresh["installs"]
            )
            + ".",
            "",
            "| install | command | median wall | x `import typer` | median CPU "
            "| CPU x `import typer` |",
            "|---|---|---|---|---|---|",
        ]
        for install, figures in fresh["installs"].items():
            for name, row in figures["commands"].items():
                lines.append(
                    f"| {install} | `{name}` | {row['median_ms']:.1f} ms | {row['ratio']:.2f} | "
                    f"{row['cpu_ms']:.1f} ms | {row['cpu_ratio']:.2f} |"
                )
    lines += [
        "",
        "### In-process recall (budget 500, hot cache)",
        "",
        "| size | queries | p50 | p95 | max |",
        "|---|---|---|---|---|",
    ]
    for size, latency in sorted(data["recall"].items(), key=lambda kv: int(kv[0])):
        for name, stats in latency["sets"].items():
            lines.append(
                f"| {label(int(size))} | {name} ({len(stats['queries'])}) | "
                f"{stats['p50']:.2f} ms | {stats['p95']:.2f} ms | {stats['max']:.2f} ms |"
            )
        every = latency["all"]
        lines.append(
            f"| {label(int(size))} | **all** | {every['p50']:.2f} ms | {every['p95']:.2f} ms | "
            f"{every['max']:.2f} ms |"
        )
    lines += [
        "",
        "Slowest query per size (median of its runs): "
        + "; ".join(
            f"{label(int(size))}: {latency['slowest_query']['median']:.2f} ms "
            f'("{latency["slowest_query"]["query"]}")'
            for size, latency in sorted(data["recall"].items(), key=lambda kv: int(kv[0]))
        ),
        "",
        "### Stores",
        "",
        "| size | nodes | edges | bulk ingest | store() in one batch | bytes/node | file |",
        "|---|---|---|---|---|---|---|",
    ]
    for size, b in sorted(data["build"].items(), key=lambda kv: int(kv[0])):
        reused = " (built earlier)" if b.get("reused") else ""
        lines.append(
            f"| {label(int(size))} | {b['nodes']:,} | {b['edges']:,} | "
            f"{b['ingest_nodes_per_s']:,.0f} nodes/s{reused} | "
            f"{b['store_call_nodes_per_s']:,.0f} nodes/s | {b['bytes_per_node']:,.0f} | "
            f"{b['db_bytes'] / 1e6:,.1f} MB |"
        )
    lines.append(END)
    return "\n".join(lines) + "\n"


def write_results(section: str) -> None:
    """Replace our section of results.md, keeping every other section as it is."""
    write_section(section, BEGIN, END, first=True)


# ---------------------------------------------------------------------------- main
# The variants of --private-apis: a fresh ``nervamem recall`` as shipped, and the same
# with the close-time checkpoint skipped through the public ctypes package instead of
# _ctypes (nervamem/quarantine/cpython_sqlite.py; the object layout is read either way).
PUBLIC_CTYPES = """
import ctypes, _sqlite3
from nervamem.quarantine import cpython_sqlite
def through_ctypes(conn):
    handle = ctypes.c_void_p.from_address(id(conn) + ctypes.sizeof(ctypes.c_void_p) * 2)
    if handle.value:
        library = ctypes.CDLL(_sqlite3.__file__)
        done = ctypes.c_int(0)
        library.sqlite3_db_config(handle, ctypes.c_int(cpython_sqlite.NO_CKPT_ON_CLOSE),
                                  ctypes.c_int(1), ctypes.byref(done))
cpython_sqlite._db_config_through_ctypes = through_ctypes
"""
RUN_CLI = "import sys; from nervamem.cli import main; sys.exit(main())"


def private_apis(*, rounds: int, log: Any) -> str:
    """Fresh-process ``recall`` with CPython's private _ctypes against the public ctypes
    package, in paired rounds on a scratch store: CPU medians, and callgrind instruction
    counts of one run each when valgrind is installed."""
    work = OUT / "private-apis"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    db = work / "memory.db"
    with MemoryStore(db) as memory:
        for number, text in enumerate(workload.queries()["question"] * 20):
            memory.store("fact", f"{text} (note {number})")
    question = workload.queries()["question"][0]
    variants = {"_ctypes (shipped)": RUN_CLI, "ctypes (public)": PUBLIC_CTYPES + RUN_CLI}
    env = dict(os.environ, NERVAPACK_MEMORY_DB=str(db))
    argv = {
        name: [sys.executable, "-c", code, "recall", question] for name, code in variants.items()
    }
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    for round_number in range(rounds + 2):  # two warm-up rounds
        for name, command in argv.items():
            before = children_cpu()
            subprocess.run(command, env=env, cwd=work, capture_output=True, check=True)
            if round_number >= 2:
                cpu[name].append((children_cpu() - before) * 1000)
    instructions: dict[str, str] = {}
    if shutil.which("valgrind"):
        for name, command in argv.items():
            run = subprocess.run(
                ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
                env=env,
                cwd=work,
                capture_output=True,
                text=True,
                check=True,
            )
            refs = [line for line in run.stderr.splitlines() if "refs:" in line]
            instructions[name] = refs[-1].split()[-1] if refs else "?"
    lines = ["| fresh `nervamem recall` | CPU p50 | instructions |", "| --- | --- | --- |"]
    for name, values in cpu.items():
        line = f"| {name} | {statistics.median(values):.1f} ms | {instructions.get(name, '-')} |"
        log(line)
        lines.append(line)
    shutil.rmtree(work)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10k,100k", help="comma-separated: 10k,100k,1m")
    parser.add_argument("--repeats", type=int, default=15, help="runs of each query")
    parser.add_argument("--rounds", type=int, default=25, help="fresh-process rounds")
    parser.add_argument(
        "--reference-nodes",
        type=int,
        default=10_000,
        help="nodes ingested through plain store() calls, for reference",
    )
    parser.add_argument("--rebuild", action="store_true", help="rebuild a kept 1M store")
    parser.add_argument("--skip-cli", action="store_true", help="no fresh-process figures")
    parser.add_argument(
        "--install",
        choices=("both", "regular", "dev"),
        default="both",
        help="fresh-process figures of a regular `pip install .` (scratch venv in bench/out), "
        "of the running Python's nervamem (dev: the editable dev install), or both",
    )
    parser.add_argument("--no-write", action="store_true", help="leave bench/results.md")
    parser.add_argument(
        "--private-apis",
        action="store_true",
        help="only: fresh recall with CPython's _ctypes against the public ctypes package",
    )
    args = parser.parse_args(argv)
    if args.private_apis:
        OUT.mkdir(exist_ok=True)
        print(private_apis(rounds=args.rounds, log=lambda message: None))
        return 0
    sizes = sorted({parse_size(s) for s in args.sizes.split(",") if s.strip()})
    OUT.mkdir(exist_ok=True)

    def log(message: str) -> None:
        print(message, flush=True)

    data: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%d %H:%M"),
        "command": " ".join(["python bench/latency.py", *(sys.argv[1:] if argv is None else argv)]),
        "machine": machine(),
        "load_before": load_average(),
        "build": {},
        "recall": {},
    }
    for size in sizes:
        data["build"][str(size)] = build(
            size, rebuild=args.rebuild, reference_nodes=args.reference_nodes, log=log
        )
        data["recall"][str(size)] = recall_latency(size, repeats=args.repeats, log=log)
    if not args.skip_cli:
        installs: dict[str, Path] = {}
        if args.install in ("both", "regular"):
            regular = regular_install(log)
            if regular is not None:
                installs["regular"] = regular
        if args.install in ("both", "dev") or not installs:
            installs["dev"] = Path(sys.executable)
        # Against each store up to 100k (a 1M store's first read is dominated by the disk).
        cli_sizes = [size for size in sizes if size <= 100_000] or [min(sizes)]
        data["fresh"] = {
            str(size): fresh_process(size, rounds=args.rounds, installs=installs, log=log)
            for size in cli_sizes
        }
    data["load_after"] = load_average()
    section = render(data)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (OUT / f"latency-{stamp}.json").write_text(json.dumps(data, indent=2))
    print()
    print(section)
    if not args.no_write:
        write_results(section)
        print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
