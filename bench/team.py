"""Team memory (issue 14): what the event log of a shared store costs.

    python bench/team.py                    # 100k events (about 5 minutes on 2 cores)
    python bench/team.py --events 20000     # quicker; figures are scaled per 10k
    python bench/team.py --rounds 15 --skip-bulk

Measures, with the running Python and PYTHONPATH set to this working tree:

1. fresh-process ``nervamem store`` on an unshared store and on a shared copy of it
   (every store also writes, fsyncs and renames one event file), beside
   ``python -c "import typer"`` in the same interleaved rounds (bench/latency.py's way):
   the extra milliseconds per store and each ratio to ``import typer``;
2. fresh-process ``nervamem sync`` with nothing new, against ``import typer``;
3. importing N single-memory event files into an empty cache (``MemoryStore.sync()``,
   in process), in events/s; then ``nervamem sync --rebuild`` of that store in a fresh
   process; the events are written directly in the canonical file format (one memory,
   its entities' ABOUT edges, its session, a supersession every 10th), spread over 12
   months, plus the session start/end events, so there is one file per event, as a
   team that stores one memory at a time makes them;
4. the events folder's size (bytes of JSON and disk blocks) and file count per 10k
   memories, and, in a git repository of those files, ``git add`` of all of them,
   ``git commit``, ``git status`` (clean, and with one new event), ``git add`` of
   one new event, and ``git gc`` with the size of its pack (what a clone receives);
   git's automatic gc is off while timing, so that it does not run in the background.

Results go to stdout and to the section of bench/results.md between
``<!-- team:begin -->`` / ``<!-- team:end -->`` (--no-write leaves it alone).
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
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for entry in (ROOT, HERE):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

from common import OUT, children_cpu, load_average, machine, met, write_section  # noqa: E402

from nervamem import MemoryStore  # noqa: E402
from nervamem.storage.event_log import FORMAT, canonical_json, event_path  # noqa: E402
from nervamem.timeparse import format_time  # noqa: E402

BEGIN, END = "<!-- team:begin -->", "<!-- team:end -->"
WORK = OUT / "team"
TARGETS = {"store_extra_ms": 2.0, "sync_ratio": 1.2, "import_per_s": 5000.0, "rebuild_s": 60.0}
GIT = ("git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "gc.auto=0")


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(OUT / "pycache")
    env["PYTHONPATH"] = str(ROOT)  # this tree's nervamem, not an installed one
    for name in ("NERVAPACK_MEMORY_DB", "NERVAMEM_DB", "NERVAMEM_FORMAT", "NERVAMEM_DEBUG"):
        env.pop(name, None)
    return env


# ---------------------------------------------------------------------------- 1 and 2
def fresh_process(rounds: int, memories: int, log: Any) -> dict[str, Any]:
    """``store`` unshared vs shared, ``sync`` with nothing new, ``import typer``."""
    folder = WORK / "fresh"
    if folder.exists():
        shutil.rmtree(folder)
    plain, shared = folder / "plain" / "memory.db", folder / "shared" / "memory.db"
    plain.parent.mkdir(parents=True)
    with MemoryStore(plain) as memory, memory.batch():
        for index in range(memories):
            memory.store("fact", f"fact {index} about the service", entities=[f"E{index % 50}"])
    shutil.copytree(plain.parent, shared.parent)
    with MemoryStore(shared) as memory:
        memory.share()
    nervamem = str(Path(sys.executable).with_name("nervamem"))
    commands = {
        'python -c "import typer"': [sys.executable, "-c", "import typer"],
        "store (unshared)": [nervamem, "--db", str(plain), "store", "fact", "a fact", "-e", "E1"],
        "store (shared)": [nervamem, "--db", str(shared), "store", "fact", "a fact", "-e", "E1"],
        "sync (nothing new)": [nervamem, "--db", str(shared), "sync"],
    }
    env = child_env()
    for argv in commands.values():  # warm-up: bytecode caches, page cache
        for _ in range(2):
            subprocess.run(argv, env=env, capture_output=True, check=True)
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, argv in commands.items():
            before = children_cpu()
            began = time.perf_counter()
            subprocess.run(argv, env=env, capture_output=True, check=True)
            wall[name].append((time.perf_counter() - began) * 1000)
            cpu[name].append((children_cpu() - before) * 1000)
    baseline = statistics.median(wall['python -c "import typer"'])
    rows = {}
    for name in commands:
        median = statistics.median(wall[name])
        rows[name] = {"median_ms": median, "cpu_ms": statistics.median(cpu[name])}
        rows[name]["ratio"] = median / baseline
        log(f"[fresh] {name:28s} {median:7.1f} ms  x{median / baseline:.2f}")
    # The extra cost of sharing, round by round (the two stores ran back to back).
    extra = [s - u for s, u in zip(wall["store (shared)"], wall["store (unshared)"], strict=True)]
    cpu_extra = [s - u for s, u in zip(cpu["store (shared)"], cpu["store (unshared)"], strict=True)]
    # The same in one process (open, store, close), free of start-up noise.
    inner: dict[str, list[float]] = {"plain": [], "shared": []}
    for index in range(rounds * 10):
        for name, db in (("plain", plain), ("shared", shared)):
            began = time.perf_counter()
            with MemoryStore(db) as memory:
                memory.store("fact", f"in-process fact {index}", entities=["E1"])
            inner[name].append((time.perf_counter() - began) * 1000)
    inner_extra = [s - u for s, u in zip(inner["shared"], inner["plain"], strict=True)]
    log(
        f"[fresh] extra per store: wall {statistics.median(extra):+.1f} ms, CPU "
        f"{statistics.median(cpu_extra):+.1f} ms, "
        f"in process {statistics.median(inner_extra):+.2f} ms"
    )
    files = sum(1 for _ in (shared.parent / "events").rglob("ev_*.json"))
    return {
        "rounds": rounds,
        "memories": memories,
        "baseline_ms": baseline,
        "commands": rows,
        "store_extra_ms": statistics.median(extra),
        "store_extra_cpu_ms": statistics.median(cpu_extra),
        "store_in_process_ms": {k: statistics.median(v) for k, v in inner.items()},
        "store_extra_in_process_ms": statistics.median(inner_extra),
        "event_files": files,
    }


# ---------------------------------------------------------------------------- 3
def _ids(prefix: str, moment: datetime, counter: int) -> str:
    ms = int(moment.timestamp() * 1000)
    return f"{prefix}_{ms:013x}{(counter * 0x9E3779B97F4A7C15) & (2**64 - 1):016x}"


def write_events(folder: Path, memories: int, log: Any) -> dict[str, int]:
    """``memories`` single-memory events (and their sessions' events) in the canonical
    file format, spread over 12 months; returns counts."""
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    step = timedelta(days=365) / max(memories, 1)
    entities: list[str | None] = [None] * 300
    sessions = files = 0
    session: str | None = None
    previous: dict[int, str] = {}
    counter = 0

    def write(moment: datetime, changes: list[dict[str, Any]]) -> None:
        nonlocal counter, files
        counter += 1
        at = format_time(moment)
        event_id = "ev" + _ids("", moment, counter)
        event = {"changes": changes, "format": FORMAT, "id": event_id, "recorded_at": at}
        event["author"] = f"dev{counter % 7}@example.com"  # a team of seven
        path = event_path(folder, event_id, at)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(canonical_json(event), encoding="utf-8")
        files += 1

    for index in range(memories):
        moment = start + step * index
        at = format_time(moment)
        if index % 50 == 0:
            if session is not None:
                end = {"ended_at": at, "summary": "done"}
                write(moment, [{"type": "data", "id": session, "set": end}])
            counter += 1
            session = _ids("s", moment, counter)
            write(moment, [_node(session, "session", f"work {index // 50}", at)])
            sessions += 1
            moment += step / 3
            at = format_time(moment)
        counter += 1
        kind = "decision" if index % 10 == 0 else "fact"
        node_id = _ids(kind[0], moment, counter)
        changes: list[dict[str, Any]] = []
        for slot in (index % 300, (index * 7 + 3) % 300):
            if entities[slot] is None:
                counter += 1
                entity = _ids("e", moment, counter)
                entities[slot] = entity
                changes.append(_node(entity, "entity", f"Component {slot}", at))
                alias = f"Component {slot}"
                changes.append(
                    {"type": "alias", "alias": alias, "entity_id": entity, "namespace": "default"}
                )
        text = f"{kind} {index}: the service {index % 97} keeps its cache for {index % 60} min"
        changes.append(_node(node_id, kind, text, at))
        for slot in sorted({index % 300, (index * 7 + 3) % 300}):
            changes.append(_edge(node_id, str(entities[slot]), "ABOUT", at))
        changes.append(_edge(node_id, str(session), "OCCURRED_IN", at))
        if kind == "decision" and index - 10 in previous:
            changes.append(_edge(node_id, previous.pop(index - 10), "SUPERSEDES", at))
        if kind == "decision":
            previous[index] = node_id
        write(moment, changes)
        if index and index % 20000 == 0:
            log(f"[events] {index} memories written")
    return {"memories": memories, "files": files, "sessions": sessions}


def _node(node_id: str, kind: str, content: str, at: str) -> dict[str, Any]:
    return {
        "type": "node",
        "id": node_id,
        "kind": kind,
        "content": content,
        "namespace": "default",
        "valid_from": at,
        "recorded_at": at,
        "confidence": 1.0,
        "data": {},
    }


def _edge(src: str, dst: str, kind: str, at: str) -> dict[str, Any]:
    return {"type": "edge", "src": src, "dst": dst, "kind": kind, "created_at": at, "data": {}}


def folder_size(folder: Path) -> tuple[int, int]:
    """(bytes of the files, bytes of disk blocks they take)."""
    content = blocks = 0
    for path in folder.rglob("*.json"):
        info = path.stat()
        content += info.st_size
        blocks += info.st_blocks * 512
    return content, blocks


def bulk(memories: int, log: Any) -> dict[str, Any]:
    store = WORK / "bulk"
    if store.exists():
        shutil.rmtree(store)
    events = store / "events"
    events.mkdir(parents=True)
    began = time.perf_counter()
    counts = write_events(events, memories, log)
    log(f"[events] {counts['files']} files written in {time.perf_counter() - began:.1f} s")
    content, blocks = folder_size(events)
    db = store / "memory.db"
    began = time.perf_counter()
    with MemoryStore(db) as memory:
        report = memory.sync()
    import_s = time.perf_counter() - began
    assert not report.problems, report.problems[:3]
    assert report.imported == counts["files"], (report.imported, counts)
    log(f"[import] {report.imported} events in {import_s:.1f} s")
    nervamem = str(Path(sys.executable).with_name("nervamem"))
    began = time.perf_counter()
    subprocess.run(
        [nervamem, "--db", str(db), "sync", "--rebuild"],
        env=child_env(),
        capture_output=True,
        check=True,
    )
    rebuild_s = time.perf_counter() - began
    log(f"[rebuild] {rebuild_s:.1f} s")
    with MemoryStore(db) as memory:
        nodes = memory.connection.execute("SELECT count(*) FROM mem_nodes").fetchone()[0]
    return {
        **counts,
        "nodes": nodes,
        "import_s": import_s,
        "import_per_s": report.imported / import_s,
        "rebuild_s": rebuild_s,
        "bytes": content,
        "disk_bytes": blocks,
        "git": git_costs(store, log),
    }


# ---------------------------------------------------------------------------- 4
def _timed(folder: Path, *args: str) -> float:
    began = time.perf_counter()
    subprocess.run([*GIT, *args], cwd=folder, capture_output=True, check=True)
    return time.perf_counter() - began


def git_costs(store: Path, log: Any) -> dict[str, float]:
    """git over the events folder, as a project repository holding .nervapack/ has it."""
    (store / ".gitignore").write_text("*\n!.gitignore\n!events/\n!events/**\n")
    _timed(store, "init", "-q")
    costs = {"add_all_s": _timed(store, "add", "-A")}
    costs["commit_s"] = _timed(store, "commit", "-q", "-m", "events")
    _timed(store, "status", "--porcelain")  # the index's stat data, refreshed once
    costs["status_clean_s"] = statistics.median(
        _timed(store, "status", "--porcelain") for _ in range(5)
    )
    month = sorted(p for p in (store / "events").glob("*/*") if p.is_dir())[-1]
    (month / "ev_0000000000000ffffffffffffffff.json").write_text("{}\n")
    costs["status_new_s"] = statistics.median(
        _timed(store, "status", "--porcelain") for _ in range(5)
    )
    costs["add_one_s"] = _timed(store, "add", "-A")
    _timed(store, "commit", "-q", "-m", "one more event")
    costs["gc_s"] = _timed(store, "gc", "-q")
    pack = subprocess.run(
        ["git", "count-objects", "-v"], cwd=store, capture_output=True, text=True, check=True
    ).stdout
    costs["pack_kib"] = float(
        next(line.split()[1] for line in pack.splitlines() if line.startswith("size-pack:"))
    )
    for name, value in costs.items():
        log(f"[git] {name}: {value:.2f}")
    return costs


# ---------------------------------------------------------------------------- report
def render(data: dict[str, Any]) -> str:
    m = data["machine"]
    lines = [
        BEGIN,
        "## Team memory (event log)",
        "",
        f"On {m['cpu']}, {m['cores']} cores, Python {m['python']}, SQLite {m['sqlite']}; "
        "the machine was shared with other engineers' test runs (load averages below). "
        "Reproduce with `python bench/team.py` (about 5 minutes; `--skip-fresh` or "
        "`--skip-bulk` keeps the other part of the last run).",
        "",
    ]
    fresh = data.get("fresh")
    if fresh:
        rows = fresh["commands"]
        lines += [
            f"### Fresh process ({fresh['rounds']} interleaved rounds, stores of "
            f"{fresh['memories']} memories; the running Python, PYTHONPATH=this tree)",
            "",
            f"Measured {fresh['measured']}.",
            "",
            "| command | median | CPU | x `import typer` |",
            "|---|---:|---:|---:|",
        ]
        for name, row in rows.items():
            lines.append(
                f"| `{name}` | {row['median_ms']:.1f} ms | {row['cpu_ms']:.1f} ms | "
                f"{row['ratio']:.2f} |"
            )
        lines += [
            "",
            "| target | measured | met |",
            "|---|---:|---|",
            f"| a shared `store` costs <= {TARGETS['store_extra_ms']:.0f} ms more (median of "
            f"the per-round differences) | {fresh['store_extra_ms']:+.1f} ms | "
            f"{met(fresh['store_extra_ms'], TARGETS['store_extra_ms'])} |",
            f"| the same, CPU time of the process | {fresh['store_extra_cpu_ms']:+.1f} ms | "
            f"{met(fresh['store_extra_cpu_ms'], TARGETS['store_extra_ms'])} |",
            f"| the same in one process (open, store, close; {fresh['rounds'] * 10} rounds: "
            f"{fresh['store_in_process_ms']['plain']:.2f} -> "
            f"{fresh['store_in_process_ms']['shared']:.2f} ms) | "
            f"{fresh['store_extra_in_process_ms']:+.2f} ms | "
            f"{met(fresh['store_extra_in_process_ms'], TARGETS['store_extra_ms'])} |",
            f"| `sync` with nothing new <= {TARGETS['sync_ratio']}x `import typer` | "
            f"{rows['sync (nothing new)']['ratio']:.2f}x | "
            f"{met(rows['sync (nothing new)']['ratio'], TARGETS['sync_ratio'])} |",
            "",
        ]
    b = data.get("bulk")
    if b:
        per = 10_000 / b["memories"]
        g = b["git"]
        lines += [
            f"### {b['files']:,} event files ({b['memories']:,} single-memory events and "
            f"{b['files'] - b['memories']:,} session events, 12 months)",
            "",
            f"Measured {b['measured']}.",
            "",
            "| target | measured | met |",
            "|---|---:|---|",
            f"| import from files >= {TARGETS['import_per_s']:,.0f} events/s | "
            f"{b['import_per_s']:,.0f} events/s ({b['import_s']:.1f} s) | "
            f"{met(-b['import_per_s'], -TARGETS['import_per_s'])} |",
            f"| `nervamem sync --rebuild` (fresh process) < {TARGETS['rebuild_s']:.0f} s | "
            f"{b['rebuild_s']:.1f} s ({b['nodes']:,} nodes) | "
            f"{met(b['rebuild_s'], TARGETS['rebuild_s'])} |",
            "",
            "| events folder per 10k memories | |",
            "|---|---:|",
            f"| files | {b['files'] * per:,.0f} |",
            f"| bytes of JSON | {b['bytes'] * per / 1e6:.1f} MB |",
            f"| disk blocks | {b['disk_bytes'] * per / 1e6:.1f} MB |",
            f"| in git's pack (after `git gc`, what a clone receives) | "
            f"{g['pack_kib'] * per / 1024:.1f} MiB |",
            "",
            f"| git with {b['files']:,} event files | time |",
            "|---|---:|",
            f"| `git add -A` (all of them, first time) | {g['add_all_s']:.1f} s |",
            f"| `git commit` | {g['commit_s']:.1f} s |",
            f"| `git status` (clean, median of 5) | {g['status_clean_s'] * 1000:.0f} ms |",
            f"| `git status` (one new event) | {g['status_new_s'] * 1000:.0f} ms |",
            f"| `git add -A` (one new event) | {g['add_one_s'] * 1000:.0f} ms |",
            f"| `git gc` | {g['gc_s']:.1f} s |",
            "",
        ]
    lines.append(END)
    return "\n".join(lines) + "\n"


def write_results(section: str) -> None:
    """Replace our section of results.md (or append it), keeping every other section."""
    write_section(section, BEGIN, END)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000, help="memories for 3 and 4")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--memories", type=int, default=2000, help="of the fresh-process stores")
    parser.add_argument("--skip-fresh", action="store_true")
    parser.add_argument("--skip-bulk", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, flush=True)

    WORK.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {
        "started": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join(["python bench/team.py", *(sys.argv[1:] if argv is None else argv)]),
        "machine": machine(),
    }
    # A part skipped is the last run's (bench/out/team-last.json), with its own date.
    last = WORK / "team-last.json"
    previous = json.loads(last.read_text()) if last.exists() else {}
    for part, skip, run in (
        ("fresh", args.skip_fresh, lambda: fresh_process(args.rounds, args.memories, log)),
        ("bulk", args.skip_bulk, lambda: bulk(args.events, log)),
    ):
        if skip:
            if part in previous:
                data[part] = previous[part]
            continue
        began = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        load = load_average()
        data[part] = run()
        data[part]["measured"] = f"{began}, with `{data['command']}`, load {load} -> " + (
            load_average()
        )
    last.write_text(json.dumps(data, indent=1))
    section = render(data)
    print(section)
    if not args.no_write:
        write_results(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
