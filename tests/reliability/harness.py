"""Shared machinery of the reliability tests and of ``bench/stress.py`` (the long run).

The same workloads run in both: the CI tests call them with small numbers, the stress
script with large ones. Nothing here imports pytest. What "nothing lost" means is
checked in one place, :func:`check_run`:

* every write whose command printed its ID (exit 0) is in the store afterwards, with
  the content it was given, unless the same run later purged it on purpose;
* the store passes ``PRAGMA integrity_check``, ``PRAGMA foreign_key_check`` and the FTS5
  ``integrity-check`` (which also compares the index with the external content table);
* no command failed, and none printed anything on stderr (so no "database is locked"
  ever reached a user) - unless the scenario killed it.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WORKER = Path(__file__).with_name("worker.py")
NERVAMEM = [sys.executable, "-m", "nervamem"]
ENV_OVERRIDES = (
    "NERVAPACK_MEMORY_DB",
    "NERVAMEM_DB",
    "NERVAMEM_FORMAT",
    "NERVAMEM_TOKENIZER",
    "NERVAMEM_DEBUG",
    "NERVAMEM_BUSY_TIMEOUT_MS",
    "NO_COLOR",
)


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """The caller's environment without any nervamem setting, HOME moved to ``home``."""
    env = {k: v for k, v in os.environ.items() if k not in ENV_OVERRIDES}
    env["HOME"] = str(home)
    env.update(extra)
    return env


# ---------------------------------------------------------------------------- checks
@dataclass
class StoreHealth:
    integrity: str
    fts_integrity: str
    foreign_keys: int
    ids: set[str]
    contents: dict[str, str]

    @property
    def ok(self) -> bool:
        return self.integrity == "ok" and self.fts_integrity == "ok" and not self.foreign_keys


def inspect_store(db: Path) -> StoreHealth:
    """Integrity of a store no process is using any more (recovers a WAL a kill left)."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        integrity = "; ".join(r[0] for r in conn.execute("PRAGMA integrity_check"))
        try:
            conn.execute("INSERT INTO mem_fts(mem_fts, rank) VALUES ('integrity-check', 1)")
            fts = "ok"
        except sqlite3.DatabaseError as exc:
            fts = f"failed: {exc}"
        foreign = len(conn.execute("PRAGMA foreign_key_check").fetchall())
        rows = conn.execute("SELECT id, content FROM mem_nodes").fetchall()
    finally:
        conn.close()
    return StoreHealth(integrity, fts, foreign, {r[0] for r in rows}, dict(rows))


def digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def tree_digest(folder: Path) -> dict[str, str]:
    """Name -> SHA-256 of every file under ``folder`` (what "nothing changed" compares)."""
    digest: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_dir():
            digest[str(path.relative_to(folder)) + "/"] = "dir"
    return digest


def logical_dump(db: Path) -> list[str]:
    """The store's content as SQL text, readable while another connection holds it."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [
            f"user_version={conn.execute('PRAGMA user_version').fetchone()[0]}",
            *conn.iterdump(),
        ]
    finally:
        conn.close()


@contextmanager
def write_lock_held(db: Path) -> Iterator[sqlite3.Connection]:
    """Another connection that holds the store's write lock until the block ends."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    finally:
        conn.execute("ROLLBACK")
        conn.close()


# ---------------------------------------------------------------------------- records
@dataclass
class Record:
    """One command's outcome, from a fresh process or a worker's JSON line."""

    op: str
    rc: int | None
    err: str = ""
    id: str = ""
    content: str = ""
    secs: float = 0.0
    killed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunReport:
    records: list[Record] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def acknowledged(self) -> dict[str, str]:
        """ID -> content (or its digest) of every write that printed its ID."""
        return {
            r.id: r.content or r.extra.get("sha", "")
            for r in self.records
            if r.op in ("store", "supersede") and r.rc == 0 and r.id
        }

    @property
    def purged(self) -> set[str]:
        """Purges that finished, and ones in flight when a kill came (either outcome)."""
        return {r.id for r in self.records if r.op in ("purge", "purging")}

    @property
    def failures(self) -> list[Record]:
        return [
            r
            for r in self.records
            if not r.killed
            and r.op != "purging"
            and not _read_before_the_store_existed(r)
            and (
                r.rc != 0
                or _warned(r.err)
                or r.extra.get("valid_json") is False
                or r.extra.get("found") is False
            )
        ]

    def count(self, *ops: str) -> int:
        return sum(1 for r in self.records if r.op in ops and r.rc == 0)


def _warned(err: str) -> bool:
    """Whether stderr holds more than the notes a successful command may print (a purge
    on a shared store says that git history keeps old copies)."""
    return any(line and not line.startswith("nervamem: note: ") for line in err.splitlines())


def _read_before_the_store_existed(record: Record) -> bool:
    """A read released before any writer had created the store: it creates none and
    says so (exit 1, store_missing), the right answer at that moment."""
    return (
        record.op in ("recall", "stats", "timeline", "verify")
        and record.rc == 1
        and '"store_missing"' in record.err
        and record.extra.get("found") is not False
    )


def check_run(db: Path, report: RunReport, *, allow_killed: bool = False) -> list[str]:
    """Everything that went wrong, as sentences (an empty list means nothing was lost)."""
    problems: list[str] = []
    for record in report.failures[:20]:
        problems.append(
            f"{record.op} failed: exit {record.rc}, stderr {record.err!r}"
            + (" (read-your-write miss)" if record.extra.get("found") is False else "")
        )
    if not allow_killed and any(r.killed for r in report.records):
        problems.append("a command had to be killed (hung past the time limit)")
    health = inspect_store(db)
    if health.integrity != "ok":
        problems.append(f"integrity_check: {health.integrity}")
    if health.fts_integrity != "ok":
        problems.append(f"FTS5 integrity-check {health.fts_integrity}")
    if health.foreign_keys:
        problems.append(f"{health.foreign_keys} foreign key violations")
    purged = report.purged
    for node_id, expected in report.acknowledged.items():
        if node_id in purged:
            continue
        if node_id not in health.ids:
            problems.append(f"acknowledged write {node_id} is missing from the store")
        elif expected and expected not in (
            health.contents[node_id],
            digest(health.contents[node_id]),
        ):
            problems.append(f"acknowledged write {node_id} has other content than was sent")
    for record in report.records:
        if record.op == "purge" and record.rc == 0 and record.id in health.ids:
            problems.append(f"purged node {record.id} is still in the store")
    return problems


# ---------------------------------------------------------------------------- fresh processes
def run_fresh(
    args: Sequence[str | bytes],
    *,
    env: dict[str, str],
    stdin: str | bytes | None = None,
    timeout: float = 60.0,
    preexec_fn: Callable[[], None] | None = None,
) -> tuple[int | None, str, str, float]:
    """One ``nervamem`` process: (exit code or None if it hung, stdout, stderr, seconds)."""
    started = time.monotonic()
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    try:
        proc = subprocess.run(
            [*NERVAMEM, *args],
            input=data,
            # No input: end of file, not pytest's own stdin (`nervamem mcp` serves until then).
            stdin=subprocess.DEVNULL if data is None else None,
            capture_output=True,
            env=env,
            timeout=timeout,
            preexec_fn=preexec_fn,
        )
    except subprocess.TimeoutExpired as exc:
        return None, (exc.stdout or b"").decode(), (exc.stderr or b"").decode(), timeout
    return (
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
        time.monotonic() - started,
    )


def fresh_process_load(
    db: Path,
    *,
    env: dict[str, str],
    writers: int,
    writes: int,
    readers: int,
    reads: int,
    seed: int = 0,
) -> RunReport:
    """``writers`` threads each run ``writes`` ``nervamem store`` processes one after the
    other while ``readers`` threads run ``nervamem recall`` processes: all at once."""
    report = RunReport()
    lock = threading.Lock()
    barrier = threading.Barrier(writers + readers)

    def add(record: Record) -> None:
        with lock:
            report.records.append(record)

    def write_loop(wid: int) -> None:
        rng = random.Random(seed * 100 + wid)
        barrier.wait()
        for i in range(writes):
            content = f"f{wid}n{i}s{seed} fresh process write {rng.choice(('alpha', 'bravo'))}"
            args = ["--db", str(db), "store", "fact", content, "-e", "SharedService"]
            code, out, err, secs = run_fresh(args, env=env)
            add(Record("store", code, err.strip(), out.strip(), content, secs, code is None))

    def read_loop(rid: int) -> None:
        rng = random.Random(seed * 100 + 50 + rid)
        barrier.wait()
        for _ in range(reads):
            query = rng.choice(("alpha", "fresh process", "bravo write"))
            code, out, err, secs = run_fresh(
                ["--db", str(db), "recall", query, "--format", "json"], env=env
            )
            valid = True
            if code == 0:
                try:
                    json.loads(out)
                except ValueError:
                    valid = False
            add(
                Record(
                    "recall",
                    code,
                    err.strip(),
                    secs=secs,
                    killed=code is None,
                    extra={"valid_json": valid},
                )
            )

    started = time.monotonic()
    threads = [threading.Thread(target=write_loop, args=(w,)) for w in range(writers)]
    threads += [threading.Thread(target=read_loop, args=(r,)) for r in range(readers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report.seconds = time.monotonic() - started
    return report


# ---------------------------------------------------------------------------- workers
def spawn_worker(
    db: Path,
    role: str,
    *,
    env: dict[str, str],
    wid: int = 0,
    ops: int = 50,
    seed: int = 0,
    start_at: float = 0.0,
    options: Iterable[str] = (),
) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        str(WORKER),
        "--db",
        str(db),
        "--role",
        role,
        "--wid",
        str(wid),
        "--ops",
        str(ops),
        "--seed",
        str(seed),
        "--start-at",
        str(start_at),
        *options,
    ]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def worker_records(stdout: bytes, *, killed: bool) -> list[Record]:
    records: list[Record] = []
    lines = stdout.decode("utf-8", "replace").splitlines()
    for index, line in enumerate(lines):
        try:
            data = json.loads(line)
        except ValueError:
            if killed and index == len(lines) - 1:
                break  # the kill cut the last line short
            raise
        op = data.pop("op")
        if op in ("ready", "done"):
            continue
        records.append(
            Record(
                op=op,
                rc=data.pop("rc", 0),
                err=data.pop("err", ""),
                id=data.pop("id", "") or "",
                content="",
                secs=data.pop("secs", 0.0),
                extra=data,
            )
        )
    return records


def worker_load(
    db: Path,
    *,
    env: dict[str, str],
    writers: int,
    writes: int,
    readers: int,
    reads: int,
    seed: int = 0,
    verify: float = 0.2,
    purge: bool = True,
    timeout: float = 300.0,
) -> RunReport:
    """Long-lived worker processes hammering one store through the CLI entry point,
    all released at the same moment."""
    start_at = time.time() + 1.5  # every interpreter has imported nervamem by then
    procs = [
        spawn_worker(
            db,
            "writer",
            env=env,
            wid=w,
            ops=writes,
            seed=seed,
            start_at=start_at,
            options=["--verify", str(verify), "--sessions", *(["--purge"] if purge else [])],
        )
        for w in range(writers)
    ]
    procs += [
        spawn_worker(db, "reader", env=env, wid=100 + r, ops=reads, seed=seed, start_at=start_at)
        for r in range(readers)
    ]
    report = RunReport()
    deadline = time.monotonic() + timeout
    outputs = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=max(deadline - time.monotonic(), 1))
            killed = False
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            killed = True
        if proc.returncode not in (0, -signal.SIGKILL) or (err and not killed):
            report.records.append(Record("worker", proc.returncode, err.decode()[-2000:]))
        outputs.append((out, killed))
    report.seconds = time.time() - start_at
    for out, killed in outputs:
        records = worker_records(out, killed=killed)
        if killed:
            report.records.append(Record("worker", None, "worker hung", killed=True))
        report.records.extend(records)
    return report


def mixed_load(
    db: Path,
    *,
    env: dict[str, str],
    cli_writers: int,
    api_writers: int,
    readers: int,
    seconds: float,
    seed: int = 0,
) -> RunReport:
    """Writers of both kinds for ``seconds``, all released at the same moment:
    ``cli_writers`` threads each run ``nervamem store`` processes one after the other
    (every agent call is a fresh process), ``api_writers`` long-lived processes each keep
    one ``MemoryStore`` open and store in a tight loop, and ``readers`` long-lived
    processes recall, time and count. A store record's ``extra["kind"]`` says which kind
    of writer made it ("cli" or "api")."""
    if not db.exists():
        code, _, err, _ = run_fresh(["--db", str(db), "init"], env=env)
        assert code == 0, err
    start_at = time.time() + 1.5  # every interpreter has imported nervamem by then
    end_at = start_at + seconds
    timing = ["--seconds", str(seconds)]
    procs = [
        spawn_worker(db, "api-writer", env=env, wid=w, seed=seed, start_at=start_at, options=timing)
        for w in range(api_writers)
    ]
    procs += [
        spawn_worker(
            db, "reader", env=env, wid=100 + r, seed=seed, start_at=start_at, options=timing
        )
        for r in range(readers)
    ]
    report = RunReport()
    lock = threading.Lock()

    def cli_loop(wid: int) -> None:
        time.sleep(max(start_at - time.time(), 0))
        i = 0
        while time.time() < end_at:
            content = f"c{wid}n{i}s{seed} fresh process write"
            args = ["--db", str(db), "store", "fact", content, "-e", "SharedService"]
            code, out, err, secs = run_fresh(args, env=env, timeout=seconds + 120)
            record = Record("store", code, err.strip(), out.strip(), content, secs, code is None)
            record.extra["kind"] = "cli"
            with lock:
                report.records.append(record)
            i += 1

    outputs: list[tuple[bytes, bool]] = []

    def collect(proc: subprocess.Popen[bytes]) -> None:
        # Read while the worker runs: a full pipe would stop a fast writer.
        try:
            out, err = proc.communicate(timeout=max(end_at + 120 - time.time(), 1))
            killed = False
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            killed = True
        with lock:
            if proc.returncode not in (0, -signal.SIGKILL) or (err and not killed):
                report.records.append(Record("worker", proc.returncode, err.decode()[-2000:]))
            outputs.append((out, killed))

    threads = [threading.Thread(target=cli_loop, args=(w,)) for w in range(cli_writers)]
    threads += [threading.Thread(target=collect, args=(proc,)) for proc in procs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report.seconds = time.time() - start_at
    for out, killed in outputs:
        if killed:
            report.records.append(Record("worker", None, "worker hung", killed=True))
        report.records.extend(worker_records(out, killed=killed))
    return report


# ---------------------------------------------------------------------------- crashes
def crash_rounds(
    db: Path,
    *,
    env: dict[str, str],
    rounds: int,
    seed: int = 0,
    workers: int = 2,
    fresh: int = 2,
    min_life: float = 0.05,
    max_life: float = 1.0,
) -> tuple[RunReport, list[str]]:
    """Each round starts ``workers`` writer workers (with purges, sessions and large
    content) plus ``fresh`` one-shot ``nervamem store`` processes, and SIGKILLs all of
    them at a random moment. After every round the store is checked; the problems of
    all rounds are returned with the combined report."""
    rng = random.Random(seed)
    report = RunReport()
    problems: list[str] = []
    started = time.monotonic()
    for round_no in range(rounds):
        procs = [
            spawn_worker(
                db,
                "writer",
                env=env,
                wid=w,
                ops=100_000,
                seed=seed * 1000 + round_no,
                options=["--purge", "--sessions", "--big", "0.1"],
            )
            for w in range(workers)
        ]
        for proc in procs:  # kill the workers while they write, not while they import
            assert proc.stdout is not None
            first = proc.stdout.readline()
            assert b'"ready"' in first, first + (proc.stderr.read() if proc.stderr else b"")
        one_shots = []
        for index in range(fresh):
            content = f"k{round_no}x{index}s{seed} killed one-shot write"
            proc = subprocess.Popen(
                [*NERVAMEM, "--db", str(db), "store", "fact", content, "-e", "SharedService"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
            )
            one_shots.append((proc, content))
        time.sleep(rng.uniform(min_life, max_life))
        for proc in procs + [p for p, _ in one_shots]:
            proc.send_signal(signal.SIGKILL)
        round_report = RunReport()
        for proc in procs:
            out, _ = proc.communicate()
            # A worker reports a command only once it returned, so every record here,
            # failed ones included, is a real outcome and not an effect of the kill.
            round_report.records.extend(worker_records(out, killed=True))
        for proc, content in one_shots:
            out, err = proc.communicate()
            node = out.decode().strip()
            killed = proc.returncode == -signal.SIGKILL
            code = 0 if node else (None if killed else proc.returncode)
            round_report.records.append(
                Record(
                    "store",
                    code,
                    "" if killed else err.decode().strip(),
                    node,
                    content,
                    killed=killed and not node,
                )
            )
        # After the kills, the store must still be usable by a fresh command.
        code, out, err, _ = run_fresh(["--db", str(db), "stats", "--format", "json"], env=env)
        if code != 0:
            problems.append(f"round {round_no}: stats after the kills exited {code}: {err}")
        report.records.extend(round_report.records)
        problems += [f"round {round_no}: {p}" for p in check_run(db, report, allow_killed=True)]
        if problems:
            break
    report.seconds = time.monotonic() - started
    return report, problems
