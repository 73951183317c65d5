"""The long version of the reliability tests: load, crashes, lock timeouts.

    python bench/stress.py                 # the documented long run (~1-2 min on 2 cores)
    python bench/stress.py --quick         # a one-minute smoke run
    python bench/stress.py --json out.json # also write the figures as JSON

It runs the same workloads as tests/reliability (tests/reliability/harness.py) with
larger numbers and prints one Markdown table of figures - writes acknowledged, errors,
lost writes, time, integrity - the table that docs/reliability.md records:

1. fresh processes: W writer threads each run N ``nervamem store`` processes one after
   the other while R reader threads run ``nervamem recall`` processes (default 8 x 50
   writes, 2 x 50 recalls), all started at the same moment, on one new store;
2. busy workers: W long-lived processes issue commands back to back through the CLI
   entry point (stores, supersedes, forgets, purges, session starts, reading back their
   own writes) while readers recall, time and count;
3. crashes: rounds of busy writers and one-shot ``nervamem store`` processes, SIGKILLed
   at random moments, the store checked after every round;
4. lock timeouts: a writer facing a lock that is never released gives up after
   NERVAMEM_BUSY_TIMEOUT_MS, with exit 1 and nothing written;
5. mixed contention: 16, then 32 writers for --mixed-seconds each (default 60): half of
   them threads running ``nervamem store`` processes one after the other, half
   long-lived processes that keep one ``MemoryStore`` open and store in a tight loop,
   plus 4 reader processes. Its own table: does every writer get its turn (lock errors,
   a CLI store's latency, stores per writer of each kind)?

    python bench/stress.py --only mixed --mixed-seconds 30   # the mixed scenario alone

6. with ``--shared``, the first four run on stores made with ``init --shared`` (every
   write also an event file), and after each the cache is made again from the event
   files alone (``sync --rebuild``) and checked once more: an acknowledged write whose
   event is missing counts as lost;
7. ``--only postgres``: a PostgreSQL server of its own (tests/pg_server.py), CLI writers
   (one ``nervamem store`` process after the other) and API writers (one ``MemoryStore``
   each, kept across failures) for --pg-seconds, while the server is hit every
   --pg-fault-every seconds, in turn, by a restart (``pg_ctl restart -m fast``), a
   SIGKILL of one writer's server process (the server then resets every connection and
   recovers) and ``pg_terminate_backend`` of every nervamem connection. Its own table:
   writes acknowledged, lost, wrong, errors by code (``internal`` is a bug: a lost
   connection must be ``store_unavailable``, exit 1).

    python bench/stress.py --only postgres --pg-seconds 60
    python bench/stress.py --only classic --shared

Exit status 0 when nothing was lost and no check failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.reliability import harness  # noqa: E402


def _latency(report: harness.RunReport, *ops: str) -> str:
    times = sorted(r.secs for r in report.records if r.op in ops and r.rc == 0)
    if not times:
        return "-"
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    return f"{statistics.median(times) * 1000:.0f} / {p95 * 1000:.0f} / {times[-1] * 1000:.0f}"


def _row(
    name: str, db: Path, report: harness.RunReport, problems: list[str], extra: str = ""
) -> dict[str, Any]:
    health = harness.inspect_store(db)
    acknowledged = report.acknowledged
    lost = [p for p in problems if "missing" in p or "other content" in p]
    errors = report.failures  # commands that failed or printed to stderr (kills excluded)
    return {
        "scenario": name,
        "commands": len([r for r in report.records if r.op != "purging"]),
        "writes_acknowledged": len(acknowledged),
        "errors": len(errors),
        "lost": len(lost),
        "seconds": round(report.seconds, 1),
        "write_latency_ms": _latency(report, "store", "supersede"),
        "integrity": "ok" if health.ok else f"{health.integrity} / {health.fts_integrity}",
        "problems": problems[:10],
        "note": extra,
        "report": report,
    }


def fresh_processes(folder: Path, env: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    db = folder / "fresh" / "memory.db"
    report = harness.fresh_process_load(
        db,
        env=env,
        writers=args.writers,
        writes=args.writes,
        readers=args.readers,
        reads=args.reads,
        seed=args.seed,
    )
    problems = harness.check_run(db, report)
    note = f"{args.writers} writers x {args.writes} + {args.readers} readers x {args.reads}"
    return _row("fresh processes", db, report, problems, note)


def busy_workers(folder: Path, env: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    db = folder / "workers" / "memory.db"
    report = harness.worker_load(
        db,
        env=env,
        writers=args.writers,
        writes=args.worker_writes,
        readers=args.readers,
        reads=args.worker_writes,
        seed=args.seed,
        verify=0.2,
        timeout=3600,
    )
    problems = harness.check_run(db, report)
    ops = {
        op: report.count(op)
        for op in ("store", "supersede", "forget", "purge", "session", "verify", "recall")
    }
    note = f"{args.writers} workers x {args.worker_writes} commands; " + ", ".join(
        f"{k} {v}" for k, v in ops.items()
    )
    return _row("busy workers", db, report, problems, note)


def crashes(folder: Path, env: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    db = folder / "crash" / "memory.db"
    report, problems = harness.crash_rounds(
        db, env=env, rounds=args.crash_rounds, seed=args.seed, workers=2, fresh=3
    )
    note = f"{args.crash_rounds} rounds of SIGKILL, 2 workers + 3 one-shot stores each"
    return _row("SIGKILL at random moments", db, report, problems, note)


def lock_timeouts(folder: Path, env: dict[str, str]) -> dict[str, Any]:
    db = folder / "locked" / "memory.db"
    code, _, err, _ = harness.run_fresh(["--db", str(db), "store", "fact", "seed"], env=env)
    assert code == 0, err
    before = harness.logical_dump(db)
    report = harness.RunReport()
    problems: list[str] = []
    waits = []
    with harness.write_lock_held(db):
        for timeout_ms in (100, 1000, 3000):
            code, out, err, secs = harness.run_fresh(
                ["--db", str(db), "store", "fact", "must not be written"],
                env={**env, "NERVAMEM_BUSY_TIMEOUT_MS": str(timeout_ms)},
            )
            waits.append(f"{timeout_ms} ms -> exit {code} after {secs:.2f} s")
            if code != 1 or "locked" not in err or len(err.strip().splitlines()) != 1:
                problems.append(f"timeout {timeout_ms}: exit {code}, {err!r}")
            report.records.append(harness.Record("locked-store", code, "", secs=secs))
    if harness.logical_dump(db) != before:
        problems.append("a writer that gave up changed the store")
    report.seconds = sum(r.secs for r in report.records)
    row = _row("lock held past the busy timeout", db, report, problems, "; ".join(waits))
    row["errors"] = len(problems)
    return row


def rebuilt_from_events(
    db: Path, env: dict[str, str], report: harness.RunReport, row: dict[str, Any]
) -> dict[str, Any]:
    """A shared store's cache made again from its event files, checked again: what was
    acknowledged but has no event (or another content there) counts as lost."""
    code, _, err, _ = harness.run_fresh(["--db", str(db), "sync", "--rebuild"], env=env)
    problems = [] if code == 0 else [f"sync --rebuild exited {code}: {err.strip()}"]
    after = [p for p in harness.check_run(db, report, allow_killed=True) if "failed:" not in p]
    problems += [f"after sync --rebuild: {p}" for p in after]
    row["lost"] += len([p for p in after if "missing" in p or "other content" in p])
    row["problems"] = row["problems"] + problems
    row["note"] += "; then sync --rebuild from the event files, checked again"
    return row


def made_shared(db: Path, env: dict[str, str]) -> None:
    db.parent.mkdir(parents=True, exist_ok=True)
    code, _, err, _ = harness.run_fresh(["--db", str(db), "init", "--shared"], env=env)
    assert code == 0, err


def _percentile(times: list[float], fraction: float) -> float:
    return times[min(len(times) - 1, int(len(times) * fraction))]


def mixed_contention(
    folder: Path, env: dict[str, str], args: argparse.Namespace, writers: int
) -> dict[str, Any]:
    db = folder / f"mixed{writers}" / "memory.db"
    cli, api = writers // 2, writers - writers // 2
    report = harness.mixed_load(
        db,
        env=env,
        cli_writers=cli,
        api_writers=api,
        readers=args.mixed_readers,
        seconds=args.mixed_seconds,
        seed=args.seed,
    )
    problems = harness.check_run(db, report)
    stores = [r for r in report.records if r.op == "store"]
    by_kind = {
        kind: sorted(r.secs for r in stores if r.extra.get("kind") == kind and r.rc == 0)
        for kind in ("cli", "api")
    }
    locked = [r for r in report.failures if "locked" in r.err]
    cli_times = by_kind["cli"] or [0.0]
    api_times = by_kind["api"] or [0.0]
    return {
        "scenario": f"mixed contention, {writers} writers",
        "writers": f"{cli} CLI + {api} API",
        "readers": args.mixed_readers,
        "seconds": round(report.seconds, 1),
        "writes_acknowledged": len(report.acknowledged),
        "lost": len([p for p in problems if "missing" in p or "other content" in p]),
        "lock_errors": len(locked),
        "errors": len(report.failures),
        "first_lock_error_s": round(min(r.secs for r in locked), 1) if locked else None,
        "cli_store_ms": [round(_percentile(cli_times, f) * 1000) for f in (0.5, 0.99, 1.0)],
        "api_store_ms": [round(_percentile(api_times, f) * 1000, 1) for f in (0.5, 0.99, 1.0)],
        "stores": {"cli": len(by_kind["cli"]), "api": len(by_kind["api"])},
        "stores_per_writer": {
            "cli": round(len(by_kind["cli"]) / max(cli, 1)),
            "api": round(len(by_kind["api"]) / max(api, 1)),
        },
        "reads": report.count("recall", "timeline", "stats"),
        "integrity": "ok" if harness.inspect_store(db).ok else "FAILED",
        "problems": problems[:10],
    }


def postgres_faults(args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    """Writers on a PostgreSQL server that restarts, crashes and drops connections."""
    import os
    import random
    import signal
    import threading
    from collections import Counter

    import psycopg

    from nervamem import MemoryStore
    from nervamem.errors import NervamemError
    from tests.pg_server import PgServer

    class DurableServer(PgServer):
        """The tests' server with a real server's durability: the tests' own turns off
        fsync and synchronous_commit, and a crash (the SIGKILL below) then loses commits
        that had returned, which is the server's setting and not nervamem."""

        SETTINGS = "-c max_connections=200 -c shared_buffers=64MB"

    server = DurableServer().start()
    try:
        url = server.fresh_url()
        code, _, err, _ = harness.run_fresh(["--db", url, "init"], env=env)
        assert code == 0, err
        deadline = time.monotonic() + args.pg_seconds
        lock = threading.Lock()
        acknowledged: dict[str, str] = {}
        errors: Counter[str] = Counter()
        samples: dict[str, str] = {}
        commands = Counter[str]()
        faults: list[str] = []

        def outcome(
            kind: str, content: str, node: str | None, error: str | None, text: str
        ) -> None:
            for why in ("lost the connection", "cannot connect"):
                if error and error.endswith("store_unavailable") and why in text:
                    error += f" ({why})"
            with lock:
                commands[kind] += 1
                if node:
                    acknowledged[node] = content
                if error:
                    errors[f"{kind} {error}"] += 1
                    samples.setdefault(f"{kind} {error}", text[:300])

        def cli_writer(wid: int) -> None:
            n = 0
            while time.monotonic() < deadline:
                content = f"p{wid}n{n} postgres write under faults"
                n += 1
                code, out, err, _ = harness.run_fresh(
                    ["--db", url, "store", "fact", content, "--format", "json"], env=env
                )
                if code == 0:
                    outcome("CLI", content, json.loads(out)["id"], None, "")
                    continue
                try:
                    name = json.loads(err.strip().splitlines()[-1])["error"]["code"]
                except (ValueError, KeyError, IndexError):
                    name = "unparsed"
                outcome("CLI", content, None, f"exit {code} {name}", err.strip())

        def api_writer(wid: int) -> None:
            store = MemoryStore(url)
            n = 0
            try:
                while time.monotonic() < deadline:
                    content = f"a{wid}n{n} postgres write under faults"
                    n += 1
                    try:
                        node = store.store("fact", content)
                    except NervamemError as exc:
                        outcome("API", content, None, exc.code, str(exc))
                        time.sleep(0.05)
                    except Exception as exc:  # a bug: the caller gets no documented error
                        outcome("API", content, None, f"internal {type(exc).__name__}", repr(exc))
                        time.sleep(0.05)
                    else:
                        outcome("API", content, node, None, "")
            finally:
                try:
                    store.close()
                except Exception:
                    pass

        def backends() -> list[int]:
            with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
                rows = conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = 'nervamem'"
                ).fetchall()
            return [row[0] for row in rows]

        def fault_loop() -> None:
            rng = random.Random(args.seed)
            turn = 0
            while time.monotonic() + args.pg_fault_every < deadline:
                time.sleep(args.pg_fault_every)
                kind = ("restart", "terminate", "sigkill")[turn % 3]
                turn += 1
                try:
                    if kind == "restart":
                        server.restart()
                    elif kind == "sigkill":
                        pids = backends()
                        if pids:
                            os.kill(rng.choice(pids), signal.SIGKILL)
                    else:
                        server.admin(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE application_name = 'nervamem'"
                        )
                    faults.append(kind)
                except Exception as exc:  # the server was recovering from the last one
                    faults.append(f"{kind} failed ({str(exc).strip().splitlines()[0][:200]})")

        started = time.monotonic()
        threads = [threading.Thread(target=cli_writer, args=(w,)) for w in range(args.pg_cli)]
        threads += [threading.Thread(target=api_writer, args=(w,)) for w in range(args.pg_api)]
        threads.append(threading.Thread(target=fault_loop))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.monotonic() - started
        for _ in range(120):  # until a server restarted or crashed by the last fault is back
            try:
                with psycopg.connect(url, autocommit=True) as conn:
                    stored = dict(conn.execute("SELECT id, content FROM mem_nodes").fetchall())
                break
            except psycopg.OperationalError:
                time.sleep(0.5)
        else:
            raise RuntimeError("the server did not come back after the last fault")
        lost = [node for node in acknowledged if node not in stored]
        wrong = [n for n, c in acknowledged.items() if n in stored and stored[n] != c]
    finally:
        server.stop()
    return {
        "scenario": "PostgreSQL with faults",
        "writers": f"{args.pg_cli} CLI + {args.pg_api} API",
        "seconds": round(seconds, 1),
        "commands": dict(commands),
        "faults": dict(Counter(f.split(" ")[0] for f in faults)),
        "faults_failed": [f for f in faults if "failed" in f],
        "writes_acknowledged": len(acknowledged),
        "lost": len(lost),
        "wrong": len(wrong),
        "errors": sum(errors.values()),
        "errors_by_code": dict(sorted(errors.items())),
        "samples": samples,
        "integrity": "ok",
        "problems": [f"acknowledged write {n} is missing" for n in lost[:5]]
        + [f"acknowledged write {n} has other content" for n in wrong[:5]]
        + [f"{k}: {samples[k]}" for k in errors if "internal" in k or "unparsed" in k],
    }


def print_postgres(row: dict[str, Any]) -> None:
    print(
        f"\nPostgreSQL with faults, {row['seconds']} s, {row['writers']} writers; faults: "
        + ", ".join(f"{k} {v}" for k, v in row["faults"].items())
        + "\n"
    )
    print("| writes | acknowledged | lost | wrong | errors by code |")
    print("|---:|---:|---:|---:|---|")
    by_code = "; ".join(f"{k}: {v}" for k, v in row["errors_by_code"].items()) or "-"
    writes = sum(row["commands"].values())
    print(
        f"| {writes} | {row['writes_acknowledged']} | {row['lost']} | {row['wrong']} | {by_code} |"
    )
    for key, text in row["samples"].items():
        print(f"- {key}, e.g.: {text}")
    for problem in row["faults_failed"]:
        print(f"- fault {problem}")


def print_mixed(rows: list[dict[str, Any]]) -> None:
    print(
        "| writers | time (s) | writes acknowledged | lost | lock errors | other errors | "
        "CLI store ms (p50 / p99 / max) | API store ms (p50 / p99 / max) | "
        "stores: CLI / API (per writer) | reads | integrity |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---|---|---:|---|")
    for row in rows:
        cli_ms = " / ".join(f"{v:g}" for v in row["cli_store_ms"])
        api_ms = " / ".join(f"{v:g}" for v in row["api_store_ms"])
        stores, per = row["stores"], row["stores_per_writer"]
        print(
            f"| {row['writers']} | {row['seconds']} | {row['writes_acknowledged']} | "
            f"{row['lost']} | {row['lock_errors']} | {row['errors'] - row['lock_errors']} | "
            f"{cli_ms} | {api_ms} | {stores['cli']} / {stores['api']} "
            f"({per['cli']} / {per['api']}) | {row['reads']} | {row['integrity']} |"
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--writes", type=int, default=50, help="stores per fresh writer")
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--reads", type=int, default=50, help="recalls per fresh reader")
    parser.add_argument("--worker-writes", type=int, default=300)
    parser.add_argument("--crash-rounds", type=int, default=30)
    parser.add_argument("--mixed-seconds", type=float, default=60.0)
    parser.add_argument(
        "--mixed-writers", default="16,32", help="writer counts of the mixed scenario"
    )
    parser.add_argument("--mixed-readers", type=int, default=4)
    parser.add_argument(
        "--only",
        choices=("classic", "mixed", "postgres"),
        help="run only the first four, only mixed, or only the PostgreSQL faults",
    )
    parser.add_argument(
        "--shared", action="store_true", help="the first four on shared stores (event files)"
    )
    parser.add_argument("--pg-seconds", type=float, default=60.0)
    parser.add_argument("--pg-cli", type=int, default=4, help="CLI writers on PostgreSQL")
    parser.add_argument("--pg-api", type=int, default=4, help="API writers on PostgreSQL")
    parser.add_argument("--pg-fault-every", type=float, default=4.0, help="seconds")
    parser.add_argument("--seed", type=int, default=20260703)
    parser.add_argument("--quick", action="store_true", help="small numbers: a smoke run")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--keep", action="store_true", help="keep the stores (path printed)")
    args = parser.parse_args()
    if args.quick:
        args.writers, args.writes, args.reads = 4, 8, 8
        args.worker_writes, args.crash_rounds = 40, 5
        args.mixed_seconds = 10.0

    folder = Path(tempfile.mkdtemp(prefix="nervamem-stress-"))
    (folder / "home").mkdir()
    env = harness.clean_env(folder / "home")
    started = time.monotonic()
    rows = []
    if args.only in (None, "classic"):
        for name, step in (
            ("fresh", fresh_processes),
            ("workers", busy_workers),
            ("crash", crashes),
        ):
            if args.shared:
                made_shared(folder / name / "memory.db", env)
            rows.append(step(folder, env, args))
            if args.shared:
                report = rows[-1].pop("report")
                rows[-1] = rebuilt_from_events(folder / name / "memory.db", env, report, rows[-1])
            rows[-1].pop("report", None)
            print(f"... {rows[-1]['scenario']}: {rows[-1]['seconds']} s", file=sys.stderr)
        rows.append(lock_timeouts(folder, env))
        rows[-1].pop("report", None)
    postgres = None
    if args.only == "postgres":
        postgres = postgres_faults(args, env)
    mixed = []
    if args.only in (None, "mixed"):
        for writers in (int(n) for n in args.mixed_writers.split(",")):
            mixed.append(mixed_contention(folder, env, args, writers))
            print(f"... {mixed[-1]['scenario']}: {mixed[-1]['seconds']} s", file=sys.stderr)

    shared = ", shared stores" if args.shared else ""
    print(
        f"\nnervamem stress run, seed {args.seed}{shared}, "
        f"{time.monotonic() - started:.0f} s in all\n"
    )
    if rows:
        print(
            "| scenario | commands | writes acknowledged | errors | lost | time (s) | "
            "write latency ms (median / p95 / max) | integrity |"
        )
        print("|---|---:|---:|---:|---:|---:|---|---|")
        for row in rows:
            print(
                f"| {row['scenario']} | {row['commands']} | {row['writes_acknowledged']} | "
                f"{row['errors']} | {row['lost']} | {row['seconds']} | "
                f"{row['write_latency_ms']} | {row['integrity']} |"
            )
        print()
        for row in rows:
            print(f"- {row['scenario']}: {row['note']}")
            for problem in row["problems"]:
                print(f"  - PROBLEM: {problem}")
    if mixed:
        print(f"\nMixed contention, {args.mixed_seconds:g} s each, {args.mixed_readers} readers:\n")
        print_mixed(mixed)
        for row in mixed:
            if row["first_lock_error_s"] is not None:
                print(f"- {row['scenario']}: first lock error after {row['first_lock_error_s']} s")
            for problem in row["problems"]:
                print(f"  - PROBLEM: {problem}")
    if postgres is not None:
        print_postgres(postgres)
        for problem in postgres["problems"]:
            print(f"  - PROBLEM: {problem}")
        rows.append(postgres)
    rows += mixed
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    if args.keep:
        print(f"\nstores kept in {folder}")
    else:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    # Under PostgreSQL's faults errors are expected (exit 1, the connection was lost);
    # its problems are what was lost or wrong, and internal errors.
    failed = any(
        row["problems"]
        or (row["errors"] and row["scenario"] != "PostgreSQL with faults")
        or row["lost"]
        or row["integrity"] != "ok"
        for row in rows
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
