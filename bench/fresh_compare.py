"""Fresh-process latency of nervamem commands from two source trees, interleaved.

    python bench/fresh_compare.py BASE_TREE NEW_TREE [--rounds 30]

Each tree is put on PYTHONPATH in turn (same Python, same store) and every command is
run in a fresh process, alternating the order of the trees every round, with bytecode
caching on (a private PYTHONPYCACHEPREFIX per tree); the medians and the ratio NEW/BASE
(wall and CPU time) are printed with the load average; CPU time is the steadier figure
on a shared machine. A command BASE does not have fails fast there. A
quick check that a change did not slow start-up; bench/latency.py is the full
measurement.
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
    args = parser.parse_args()
    trees = {"base": args.base, "new": args.new}
    scratch = tempfile.mkdtemp(prefix="nervamem-fresh-")
    env = {**os.environ, "NERVAMEM_DB": os.path.join(scratch, "m.db")}
    env["NERVAMEM_FORMAT"] = "markdown"
    # Bytecode caching on, as an installed nervamem runs, in a private folder per tree.
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def run(tree: str, argv: list[str]) -> tuple[float, float]:
        """Wall and CPU (user + system) milliseconds of one fresh process."""
        started = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "nervamem", *argv],
            env={
                **env,
                "PYTHONPATH": trees[tree],
                "PYTHONPYCACHEPREFIX": os.path.join(scratch, f"pycache-{tree}"),
            },
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=scratch,
        )
        _, _, usage = os.wait4(child.pid, 0)
        wall = (time.perf_counter() - started) * 1000
        return wall, (usage.ru_utime + usage.ru_stime) * 1000

    try:
        run("base", ["init"])
        for i in range(50):
            run("base", ["store", "fact", f"fact {i} about auth tokens and logins"])
        for tree in trees:  # warm-up: bytecode caches
            for argv in COMMANDS.values():
                run(tree, argv)
        times: dict[tuple[str, str], list[tuple[float, float]]] = {
            (t, c): [] for t in trees for c in COMMANDS
        }
        for round_no in range(args.rounds):
            order = list(trees) if round_no % 2 else list(trees)[::-1]
            for name, argv in COMMANDS.items():
                for tree in order:
                    times[(tree, name)].append(run(tree, argv))
        print("command     median wall base / new (ms)   median CPU base / new (ms)   CPU new/base")
        for name in COMMANDS:
            wall = [statistics.median(w for w, _ in times[(t, name)]) for t in trees]
            cpu = [statistics.median(c for _, c in times[(t, name)]) for t in trees]
            print(
                f"{name:10s}  {wall[0]:7.1f} / {wall[1]:7.1f}            "
                f"{cpu[0]:7.1f} / {cpu[1]:7.1f}           {cpu[1] / cpu[0]:.3f}"
            )
        print("load average", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    finally:
        shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
