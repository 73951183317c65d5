"""Proof that the reliability tests can fail: break nervamem on purpose, one way at a
time, in a throw-away copy, and see which tests catch it.

    python tests/reliability/mutants.py            # every mutant (~20 min on 2 cores)
    python tests/reliability/mutants.py purge- mask-   # only mutants whose names start so

Each mutant is a text replacement in a copy of the committed tree (``git archive
HEAD``) with this folder's tests laid over it; the working tree is never touched, so
other people working in it see nothing. The tests of ``tests/reliability`` run against
the copy (``PYTHONPATH`` puts it before the installed package, for child processes too)
and the failing ones are listed. The results are recorded in docs/reliability.md.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOGS = Path(tempfile.gettempdir()) / "nervamem-mutants"  # each mutant's pytest output
HERE = Path(__file__).resolve().parent

# name -> [(file, old text, new text, how many occurrences to replace: 0 = all)]
MUTANTS: dict[str, list[tuple[str, str, str, int]]] = {
    "baseline": [],
    "busy-timeout-0": [
        (
            "nervamem/storage/sqlite/__init__.py",
            "DEFAULT_BUSY_TIMEOUT_MS = 15_000",
            "DEFAULT_BUSY_TIMEOUT_MS = 0",
            1,
        ),
    ],
    "busy-timeout-env-ignored": [
        (
            "nervamem/storage/sqlite/__init__.py",
            'ENV_BUSY_TIMEOUT, DEFAULT_BUSY_TIMEOUT_MS, "milliseconds"',
            '"NERVAMEM_NO_SUCH_VARIABLE", DEFAULT_BUSY_TIMEOUT_MS, "milliseconds"',
            1,
        ),
    ],
    "deferred-begin": [
        (
            "nervamem/storage/sqlite/__init__.py",
            'self.connection.execute("BEGIN IMMEDIATE")',
            'self._conn.execute("BEGIN")',
            1,
        ),
    ],
    "autocommit-writes": [
        (
            "nervamem/storage/sqlite/__init__.py",
            'self.connection.execute("BEGIN IMMEDIATE")',
            "pass",
            1,
        ),
        (
            "nervamem/storage/sqlite/__init__.py",
            '            self.connection.execute("COMMIT")',
            "            pass",
            1,
        ),
    ],
    "wal-switch-no-retry": [
        (
            "nervamem/storage/sqlite/__init__.py",
            "switch_to_wal(conn, self.busy_timeout_ms)",
            'conn.execute("PRAGMA journal_mode = WAL")',
            1,
        ),
    ],
    "purge-checkpoint-no-retry": [
        (
            "nervamem/storage/sqlite/__init__.py",
            "            time.sleep(0.02)\n",
            "            return not busy\n",
            1,
        ),
    ],
    "rollback-journal": [
        (
            "nervamem/storage/sqlite/files.py",
            'conn.execute("PRAGMA journal_mode = WAL")',
            'conn.execute("PRAGMA journal_mode = DELETE")',
            1,
        ),
    ],
    "journal-off": [
        (
            "nervamem/storage/sqlite/files.py",
            'conn.execute("PRAGMA journal_mode = WAL")',
            'conn.execute("PRAGMA journal_mode = OFF")',
            1,
        ),
        (
            "nervamem/storage/sqlite/__init__.py",
            'conn.execute("PRAGMA synchronous = FULL")',
            'conn.execute("PRAGMA synchronous = OFF")',
            1,
        ),
    ],
    "purge-no-secure-delete": [
        (
            "nervamem/storage/sqlite/__init__.py",
            '"PRAGMA secure_delete = ON"',
            '"PRAGMA secure_delete = OFF"',
            1,
        ),
    ],
    "purge-no-index-rebuild": [
        ("nervamem/storage/sqlite/__init__.py", "search_index.rebuild(self.connection)", "pass", 1),
    ],
    "purge-no-vacuum": [
        ("nervamem/storage/sqlite/__init__.py", 'self.connection.execute("VACUUM")', "pass", 1),
    ],
    "purge-optimize-index": [  # the cause of the store that 1,000 purges bricked
        (
            "nervamem/storage/sqlite/__init__.py",
            "search_index.rebuild(self.connection)",
            """self.connection.execute("INSERT INTO mem_fts (mem_fts) VALUES ('optimize')")""",
            1,
        ),
    ],
    "purge-no-secure-delete-rebuild-vacuum": [
        (
            "nervamem/storage/sqlite/__init__.py",
            '"PRAGMA secure_delete = ON"',
            '"PRAGMA secure_delete = OFF"',
            1,
        ),
        ("nervamem/storage/sqlite/__init__.py", "search_index.rebuild(self.connection)", "pass", 1),
        ("nervamem/storage/sqlite/__init__.py", 'self.connection.execute("VACUUM")', "pass", 1),
    ],
    "purge-no-secure-delete-no-vacuum": [
        (
            "nervamem/storage/sqlite/__init__.py",
            '"PRAGMA secure_delete = ON"',
            '"PRAGMA secure_delete = OFF"',
            1,
        ),
        ("nervamem/storage/sqlite/__init__.py", 'self.connection.execute("VACUUM")', "pass", 1),
    ],
    "purge-no-checkpoint": [
        (
            "nervamem/storage/sqlite/__init__.py",
            '            self.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")\n',
            "",
            1,
        ),
        (
            "nervamem/storage/sqlite/__init__.py",
            'busy = self.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]',
            "busy = 0",
            1,
        ),
    ],
    "purge-ignores-pinned-pages": [
        (
            "nervamem/storage/sqlite/__init__.py",
            "        if not emptied:\n",
            "        if False:\n",
            1,
        ),
    ],
    "foreign-db-switched-to-wal": [
        ("nervamem/storage/sqlite/__init__.py", " and _may_convert_to_wal(conn):", ":", 1),
    ],
    "read-only-not-immutable": [
        ("nervamem/storage/sqlite/__init__.py", 'uri += "&immutable=1"', "pass", 1),
    ],
    "recall-no-namespace-filter": [
        # '+n.namespace = ?' becomes '+(n.namespace = ? OR 1)': every filter of recall's
        # search, session context and expansion
        ("nervamem/storage/sqlite/text_index.py", "n.namespace = ?", "(n.namespace = ? OR 1)", 0),
        ("nervamem/storage/sqlite/graph_reads.py", "n.namespace = ?", "(n.namespace = ? OR 1)", 0),
        ("nervamem/recall/expansion.py", "n.namespace = ?", "(n.namespace = ? OR 1)", 0),
    ],
    "session-context-no-namespace-filter": [
        (
            "nervamem/storage/sqlite/graph_reads.py",
            '"WHERE n.seq {seqs} AND +n.namespace = ? AND {mask}"',
            '"WHERE n.seq {seqs} AND (+n.namespace = ? OR 1) AND {mask}"',
            1,
        ),
    ],
    # Recall masks as of a moment (now without --as-of): the as_of branch of mask_sql.
    "mask-keeps-tombstoned": [
        (
            "nervamem/recall/mask.py",
            'f"{alias}.tombstoned = 0 AND {alias}.valid_from <= ? "',
            'f"{alias}.tombstoned >= 0 AND {alias}.valid_from <= ? "',
            1,
        ),
    ],
    "mask-keeps-superseded": [
        (
            "nervamem/recall/mask.py",
            'f"AND ({alias}.valid_until IS NULL OR {alias}.valid_until > ?)"',
            'f"AND ({alias}.valid_until IS NULL OR {alias}.valid_until > ? OR 1)"',
            1,
        ),
    ],
    "pack-no-final-trim": [
        (
            "nervamem/recall/packing.py",
            "        if used <= budget:\n            return chosen, text, used",
            "        if True:\n            return chosen, text, used",
            1,
        ),
    ],
    "pack-no-budget-checks": [  # all three guards: lower bound, exact cost, final trim
        (
            "nervamem/recall/packing.py",
            "        if least is not None and meter.tokens + least > budget:\n",
            "        if False:\n",
            1,
        ),
        (
            "nervamem/recall/packing.py",
            "        if meter.tokens + cost > budget:\n",
            "        if False:\n",
            1,
        ),
        (
            "nervamem/recall/packing.py",
            "        if used <= budget:\n            return chosen, text, used",
            "        if True:\n            return chosen, text, used",
            1,
        ),
    ],
    "query-surrogates-accepted": [
        ("nervamem/recall/validation.py", '        query.encode("utf-8")\n', "        pass\n", 1),
    ],
    "date-overflow-uncaught": [
        ("nervamem/timeparse.py", "except OverflowError:", "except ZeroDivisionError:", 1),
    ],
    "corrupt-page-is-internal-error": [
        ("nervamem/failures.py", "if isinstance(exc, sqlite3.DatabaseError):", "if False:", 1),
    ],
    "bad-state-yaml-ignored": [
        (
            "nervamem/state.py",
            'raise StateError(f"{path} is not valid YAML ({first}); fix or delete it") from None',
            "return {}",
            1,
        ),
    ],
    "write-queue-never-insists": [  # writers out of turn forever: SQLite's unfairness again
        ("nervamem/storage/sqlite/write_queue.py", "PATIENCE = 0.1\n", "PATIENCE = 1e9\n", 1),
    ],
    "write-queue-off": [
        (
            "nervamem/storage/sqlite/__init__.py",
            "self._queue_writes = True",
            "self._queue_writes = False",
            1,
        ),
    ],
}


def build_copy(target: Path) -> None:
    archive = subprocess.run(
        ["git", "archive", "HEAD"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    shutil.rmtree(target / "tests" / "reliability")
    shutil.copytree(
        HERE, target / "tests" / "reliability", ignore=shutil.ignore_patterns("__pycache__")
    )


def apply(target: Path, edits: list[tuple[str, str, str, int]]) -> None:
    for relative, old, new, count in edits:
        path = target / relative
        text = path.read_text(encoding="utf-8")
        found = text.count(old)
        if not found or (count and found != count):
            raise SystemExit(f"{relative}: expected {count or 'some'} of {old!r}, found {found}")
        path.write_text(text.replace(old, new), encoding="utf-8")


def run(name: str, edits: list[tuple[str, str, str, int]]) -> tuple[list[str], str, float]:
    with tempfile.TemporaryDirectory(prefix=f"nervamem-mutant-{name}-") as folder:
        target = Path(folder)
        build_copy(target)
        apply(target, edits)
        env = {**os.environ, "PYTHONPATH": str(target)}
        check = subprocess.run(
            [sys.executable, "-c", "import nervamem; print(nervamem.__file__)"],
            cwd=target,
            env=env,
            capture_output=True,
            text=True,
        )
        assert check.stdout.startswith(str(target)), check.stdout + check.stderr
        started = time.monotonic()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-rf",
                "-p",
                "no:cacheprovider",
                "tests/reliability",
            ],
            cwd=target,
            env=env,
            capture_output=True,
            text=True,
            timeout=3600,
        )
        LOGS.mkdir(parents=True, exist_ok=True)
        (LOGS / f"{name}.log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
        failed = sorted(set(re.findall(r"^FAILED (\S+)", proc.stdout, re.M)))
        summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr
        return (
            [f.replace("tests/reliability/", "") for f in failed],
            summary,
            time.monotonic() - started,
        )


def main() -> None:
    prefixes = tuple(sys.argv[1:]) or ("",)
    for name, edits in MUTANTS.items():
        if not name.startswith(prefixes):
            continue
        failed, summary, seconds = run(name, edits)
        verdict = "caught" if failed else ("ok" if name == "baseline" else "NOT CAUGHT")
        print(f"## {name}: {verdict} ({seconds:.0f}s) {summary}", flush=True)
        for test in failed:
            print(f"   - {test}", flush=True)


if __name__ == "__main__":
    main()
