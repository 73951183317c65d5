"""Fresh-process latency of nervamem commands from two source trees, interleaved.

    python bench/fresh_compare.py BASE_TREE NEW_TREE [--rounds 30]
    python bench/fresh_compare.py BASE NEW --store bench/out/peers-1k/memory.db --query "..."
    python bench/fresh_compare.py BASE NEW --store ... --instructions   # needs valgrind

Each tree is put on PYTHONPATH in turn (same Python, same store) and every command is
run in a fresh process, alternating the order of the trees every round, with bytecode
caching on (a private PYTHONPYCACHEPREFIX per tree); the medians and the ratio NEW/BASE
(wall and CPU time) are printed with the load average; CPU time is the steadier figure
on a shared machine. A command BASE does not have fails fast there. A
quick check that a change did not slow start-up; bench/latency.py is the full
measurement.

``--instructions`` counts instead the instructions each command executes (valgrind's
callgrind, user space, one run per tree on a fresh copy of the store, hash seed fixed):
a figure the machine's load does not move (repeated runs agree within ~0.5M), for
telling apart changes of a few hundred microseconds. Time is not instructions (a
cache miss costs more than an add): the ratio to ``import typer`` in instructions is
higher than in CPU time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

COMMANDS = {
    "--version": ["--version"],
    "store": ["store", "fact", "a fact about login tokens"],
    "recall": ["recall", "auth tokens"],
    "list": ["list", "--limit", "20"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument(
        "--store",
        help="a copy of this store for each tree (else 50 facts written by BASE, shared)",
    )
    parser.add_argument("--query", default="auth tokens", help="what `recall` asks")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="instructions executed (valgrind --tool=callgrind) instead of times",
    )
    args = parser.parse_args()
    trees = {"base": args.base, "new": args.new}
    COMMANDS["recall"] = ["recall", args.query]
    scratch = tempfile.mkdtemp(prefix="nervamem-fresh-")
    env = {**os.environ, "NERVAMEM_DB": os.path.join(scratch, "m.db")}
    databases = {tree: env["NERVAMEM_DB"] for tree in trees}
    if args.store:  # one copy per tree: one tree's writes never reach the other's runs
        for tree in trees:
            databases[tree] = os.path.join(scratch, tree, "m.db")
            os.makedirs(os.path.dirname(databases[tree]))
            shutil.copy(args.store, databases[tree])
    env["NERVAMEM_FORMAT"] = "markdown"
    # Bytecode caching on, as an installed nervamem runs, in a private folder per tree.
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def run(tree: str, argv: list[str]) -> tuple[float, float]:
        """Wall and CPU (user + system) milliseconds of one fresh process."""
        started = time.perf_counter()
        command = argv if tree == "typer" else ["-m", "nervamem", *argv]
        child = subprocess.Popen(
            [sys.executable, *command],
            env={
                **env,
                "NERVAMEM_DB": databases.get(tree, ""),
                "PYTHONPATH": trees.get(tree, ""),
                "PYTHONPYCACHEPREFIX": os.path.join(scratch, f"pycache-{tree}"),
            },
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=scratch,
        )
        _, _, usage = os.wait4(child.pid, 0)
        wall = (time.perf_counter() - started) * 1000
        return wall, (usage.ru_utime + usage.ru_stime) * 1000

    def instructions(tree: str, argv: list[str]) -> int:
        """User-space instructions of one fresh process under callgrind."""
        if args.store and tree in databases:  # every command on the store as given
            shutil.copy(args.store, databases[tree])
            for suffix in ("-wal", "-shm"):
                if os.path.exists(databases[tree] + suffix):
                    os.remove(databases[tree] + suffix)
        command = argv if tree == "typer" else ["-m", "nervamem", *argv]
        result = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
            + [sys.executable, *command],
            env={
                **env,
                "PYTHONHASHSEED": "0",
                "NERVAMEM_DB": databases.get(tree, ""),
                "PYTHONPATH": trees.get(tree, ""),
                "PYTHONPYCACHEPREFIX": os.path.join(scratch, f"pycache-{tree}"),
            },
            capture_output=True,
            text=True,
            cwd=scratch,
        )
        counts = [line for line in result.stderr.splitlines() if "Collected :" in line]
        if not counts:
            sys.exit(f"valgrind gave no count for {tree} {argv}: {result.stderr[-300:]}")
        return int(counts[-1].split(":")[-1].strip().replace(",", ""))

    try:
        if not args.store:
            run("base", ["init"])
            for i in range(50):
                run("base", ["store", "fact", f"fact {i} about auth tokens and logins"])
        if args.instructions:
            run("typer", ["-c", "import typer"])  # bytecode caches
            for tree in trees:
                for argv in COMMANDS.values():
                    run(tree, argv)
            typer_count = instructions("typer", ["-c", "import typer"])
            print(f"python -c 'import typer': {typer_count / 1e6:.1f}M instructions")
            print("command     base / new (M instructions)   new/base   x typer base / new")
            for name, argv in COMMANDS.items():
                base, new = (instructions(tree, argv) for tree in trees)
                print(
                    f"{name:10s}  {base / 1e6:7.1f} / {new / 1e6:7.1f}           "
                    f"{new / base:.3f}      {base / typer_count:.2f} / {new / typer_count:.2f}"
                )
            return
        typer: list[tuple[float, float]] = []
        for tree in trees:  # warm-up: bytecode caches
            for argv in COMMANDS.values():
                run(tree, argv)
        times: dict[tuple[str, str], list[tuple[float, float]]] = {
            (t, c): [] for t in trees for c in COMMANDS
        }
        for round_no in range(args.rounds):
            order = list(trees) if round_no % 2 else list(trees)[::-1]
            typer.append(run("typer", ["-c", "import typer"]))
            for name, argv in COMMANDS.items():
                for tree in order:
                    times[(tree, name)].append(run(tree, argv))
        typer_cpu = statistics.median(c for _, c in typer)
        print(
            f"python -c 'import typer' in the same rounds: wall "
            f"{statistics.median(w for w, _ in typer):.1f} ms, CPU {typer_cpu:.1f} ms"
        )
        print("command     median wall base / new (ms)   median CPU base / new (ms)   CPU new/base")
        for name in COMMANDS:
            wall = [statistics.median(w for w, _ in times[(t, name)]) for t in trees]
            cpu = [statistics.median(c for _, c in times[(t, name)]) for t in trees]
            print(
                f"{name:10s}  {wall[0]:7.1f} / {wall[1]:7.1f}            "
                f"{cpu[0]:7.1f} / {cpu[1]:7.1f}           {cpu[1] / cpu[0]:.3f}"
                f"   (CPU x typer {cpu[0] / typer_cpu:.2f} / {cpu[1] / typer_cpu:.2f})"
            )
        print("load average", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    finally:
        shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
