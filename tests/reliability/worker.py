"""A load and crash worker: runs nervamem commands in a loop and reports each outcome.

Run as a script (``python worker.py --db PATH --role writer ...``). Every command goes
through the real CLI entry point (``nervamem.cli.main``) in this process, so one process
can issue hundreds of commands per second; each command opens and closes its own
connection exactly as a fresh ``nervamem`` process does. Outcomes are printed as JSON
lines and flushed one by one, so that a parent that SIGKILLs the worker still holds
every acknowledgement the worker gave before it died. A write is acknowledged only
after the command returned exit 0 with its ID on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import itertools
import json
import random
import sys
import time
from typing import Any

COMMON_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")
ENTITIES = ("SharedService", "auth_service", "BillingAPI", "queue-worker")


def run_cli(argv: list[str], stdin: str | None = None) -> tuple[int, str, str]:
    """One nervamem command, in process: (exit code, stdout, stderr)."""
    from nervamem.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    saved_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8")), encoding="utf-8")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException as exc:  # anything else is a crash the user would see
                code = 99
                err.write(f"uncaught {type(exc).__name__}: {exc}\n")
    finally:
        sys.stdin = saved_stdin
    return code, out.getvalue(), err.getvalue()


def digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def report(record: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _outcome(
    op: str, code: int, out: str, err: str, started: float, **extra: Any
) -> dict[str, Any]:
    return {
        "op": op,
        "rc": code,
        "out": out.strip()[:200],
        "err": err.strip()[:500],
        "secs": round(time.monotonic() - started, 4),
        **extra,
    }


def writer(args: argparse.Namespace, rng: random.Random) -> None:
    db = ["--db", args.db]
    live: list[str] = []  # this worker's nodes that are current (not superseded/forgotten)
    for i in range(args.ops):
        token = f"w{args.wid}n{i}s{args.seed}"  # one FTS5 token, unstemmed (ends in a digit)
        words = " ".join(rng.sample(COMMON_WORDS, 2))
        content = f"{token} {words} written by worker {args.wid}"
        if args.big and rng.random() < args.big:
            # Large content spans many overflow pages: a wider window for a kill mid-write.
            content += " " + " ".join(rng.choice(COMMON_WORDS) for _ in range(40_000))
        roll = rng.random()
        started = time.monotonic()
        if live and roll < 0.15:
            old = live.pop(rng.randrange(len(live)))
            code, out, err = run_cli([*db, "store", "fact", content, "--supersedes", old])
            node = out.strip()
            report(
                _outcome(
                    "supersede", code, out, err, started, old=old, id=node, sha=digest(content)
                )
            )
            if code == 0:
                live.append(node)
            else:
                live.append(old)
        elif live and roll < 0.22:
            node = live.pop(rng.randrange(len(live)))
            code, out, err = run_cli([*db, "forget", node])
            report(_outcome("forget", code, out, err, started, id=node))
        elif args.purge and live and roll < 0.26:
            node = live.pop(rng.randrange(len(live)))
            report({"op": "purging", "id": node})
            code, out, err = run_cli([*db, "forget", node, "--purge", "--yes"])
            report(_outcome("purge", code, out, err, started, id=node))
        elif args.sessions and roll < 0.30:
            code, out, err = run_cli([*db, "session", "start", f"worker {args.wid} task {i}"])
            report(_outcome("session", code, out, err, started, id=out.strip()))
        else:
            argv = [*db, "store", rng.choice(("fact", "decision", "action")), "-"]
            argv += ["-e", rng.choice(ENTITIES)]
            code, out, err = run_cli(argv, stdin=content)
            node = out.strip()
            report(_outcome("store", code, out, err, started, id=node, sha=digest(content)))
            if code == 0:
                live.append(node)
                if rng.random() < args.verify:
                    # Read your own write: a later command must find what was acknowledged.
                    started = time.monotonic()
                    code, out, err = run_cli(
                        [*db, "recall", token, "--format", "json", "--hops", "0"]
                    )
                    found = code == 0 and node in {i["id"] for i in json.loads(out)["items"]}
                    report(_outcome("verify", code, "", err, started, id=node, found=found))


def turns(args: argparse.Namespace) -> range | itertools.count[int]:
    """``--ops`` turns, or as many as fit before ``--start-at`` + ``--seconds``."""
    return itertools.count() if args.seconds else range(args.ops)


def time_is_up(args: argparse.Namespace) -> bool:
    return bool(args.seconds) and time.time() >= args.start_at + args.seconds


def api_writer(args: argparse.Namespace, rng: random.Random) -> None:
    """One long-lived ``MemoryStore`` storing in a tight loop, as an agent framework
    that keeps the store open does: the writer that loops commits back to back."""
    from nervamem import MemoryStore
    from nervamem.errors import StoreError

    with MemoryStore(args.db) as memory:
        for i in turns(args):
            if time_is_up(args):
                break
            content = f"a{args.wid}n{i}s{args.seed} {' '.join(rng.sample(COMMON_WORDS, 2))}"
            started = time.monotonic()
            try:
                node = memory.store("fact", content, entities=[rng.choice(ENTITIES)])
            except StoreError as exc:
                report(_outcome("store", 1, "", str(exc), started, kind="api"))
                continue
            report(
                _outcome("store", 0, node, "", started, id=node, sha=digest(content), kind="api")
            )


def reader(args: argparse.Namespace, rng: random.Random) -> None:
    db = ["--db", args.db]
    for _ in turns(args):
        if time_is_up(args):
            break
        started = time.monotonic()
        roll = rng.random()
        if roll < 0.7:
            query = " ".join(rng.sample(COMMON_WORDS, rng.randint(1, 2)))
            code, out, err = run_cli([*db, "recall", query, "--format", "json"])
            op = "recall"
        elif roll < 0.85:
            code, out, err = run_cli([*db, "timeline", rng.choice(COMMON_WORDS), "-f", "json"])
            op = "timeline"
        else:
            code, out, err = run_cli([*db, "stats", "--format", "json"])
            op = "stats"
        valid = True
        if code == 0:
            try:
                json.loads(out)
            except ValueError:
                valid = False
        report(_outcome(op, code, "", err, started, valid_json=valid))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", required=True)
    parser.add_argument("--role", choices=("writer", "reader", "api-writer"), required=True)
    parser.add_argument("--wid", type=int, default=0)
    parser.add_argument("--ops", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=0.0, help="run this long, not --ops")
    parser.add_argument("--start-at", type=float, default=0.0, help="epoch seconds")
    parser.add_argument("--verify", type=float, default=0.0, help="read-back probability")
    parser.add_argument("--big", type=float, default=0.0, help="probability of ~250 KB")
    parser.add_argument("--purge", action="store_true")
    parser.add_argument("--sessions", action="store_true")
    args = parser.parse_args()
    rng = random.Random(args.seed * 1000 + args.wid)
    import nervamem.cli  # noqa: F401  (import before the barrier, like a warm process)

    delay = args.start_at - time.time()
    if delay > 0:
        time.sleep(delay)
    report({"op": "ready"})
    {"writer": writer, "reader": reader, "api-writer": api_writer}[args.role](args, rng)
    report({"op": "done"})


if __name__ == "__main__":
    main()
