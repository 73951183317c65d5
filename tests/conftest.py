"""Shared fixtures: real stores (SQLite files in tmp_path, or a fresh schema of the
PostgreSQL server the session starts: tests/pg_server.py), a fixed clock and a counting
ID source so that IDs and times in snapshots are deterministic (no matcher that accepts
anything).

Engines: a test that uses ``store``, ``make_store``, ``cli`` or ``db_path`` (all
through the ``engine`` fixture) runs once per engine when it is marked
``both_engines`` (most modules say so in their ``pytestmark``), with the same assertions
and the same snapshots: the same output on both is the point. Marked ``sqlite_only`` (a
test about the SQLite file itself: its WAL, its folder, state.yaml) it runs on SQLite
only; marked ``postgresql_only``, on the server only. The mark, not the folder a test
sits in, decides, and a test that takes a store without one of the three is refused at
collection. PostgreSQL tests are skipped
with the reason only when the server cannot be started; under CI=true they fail instead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.amber import AmberSnapshotExtension
from typer.testing import CliRunner

from nervamem import MemoryStore
from nervamem.cli import app as cli_app
from nervamem.cli import context as cli_context

pytest_plugins = ("pytester",)  # tests/test_engine_marks.py

START = datetime(2026, 7, 3, 12, 0, 0, tzinfo=timezone.utc)


class FakeClock:
    """Advances one second per reading, so every write has its own time."""

    def __init__(self, start: datetime = START, step: timedelta = timedelta(seconds=1)) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> datetime:
        current = self.now
        self.now += self.step
        return current


class CountingRandom:
    """Deterministic random parts: a counter spread over 64 bits (Fibonacci hashing), so
    that, as with real random IDs, short IDs (a prefix of the random part) stay short."""

    def __init__(self) -> None:
        self.value = 0

    def __call__(self) -> int:
        self.value += 1
        return (self.value * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test may touch the real home store or inherit the caller's settings."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in (
        "NERVAPACK_MEMORY_DB",
        "NERVAMEM_DB",
        "NERVAMEM_FORMAT",
        "NERVAMEM_TOKENIZER",
        "NERVAMEM_DEBUG",
        "NO_COLOR",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


ENGINES = ("sqlite", "postgresql")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "engine" not in metafunc.fixturenames:
        return
    if metafunc.definition.get_closest_marker("postgresql_only"):
        engines: tuple[str, ...] = ("postgresql",)
    elif metafunc.definition.get_closest_marker("sqlite_only"):
        engines = ("sqlite",)
    elif metafunc.definition.get_closest_marker("both_engines"):
        engines = ENGINES
    else:
        # Which engines a test runs on is said, not inferred: a new module that takes a
        # store must choose, so that PostgreSQL is never left out by accident.
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid} takes a store (the engine fixture) but is not"
            " marked both_engines, sqlite_only or postgresql_only"
        )
    metafunc.parametrize("engine", engines, indirect=True)


# The engine's part of a parametrised test's ID: [sqlite], [postgresql-x], [x-sqlite].
_ENGINE_ID = re.compile(
    r"(?<=\[)(?:sqlite|postgresql)-|-(?:sqlite|postgresql)(?=\])|\[(?:sqlite|postgresql)\]"
)


class EngineNeutralAmber(AmberSnapshotExtension):
    """Snapshots named without the engine: both engines must print the very same."""

    @classmethod
    def get_snapshot_name(cls, *, test_location: Any, index: Any = 0) -> str:
        name = super().get_snapshot_name(test_location=test_location, index=index)
        return _ENGINE_ID.sub("", name)


@pytest.fixture
def snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(EngineNeutralAmber)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[object]:
    """The session's PostgreSQL server, started on first use (tests/pg_server.py)."""
    from .pg_server import PgServer, PgUnavailable

    try:
        server = PgServer()
        server.start()
    except PgUnavailable as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"PostgreSQL is required under CI=true and could not start: {exc}")
        pytest.skip(f"PostgreSQL could not be started: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> str:
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture
def new_store(
    engine: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Callable[[str], Path | str]:
    """A maker of fresh, empty stores for a test that needs one per example (hypothesis):
    a new file, or a new schema of the server."""

    def make(name: str) -> Path | str:
        if engine == "sqlite":
            return tmp_path_factory.mktemp(name) / "memory.db"
        return str(request.getfixturevalue("pg_server").fresh_url())

    return make


# What a store holds, table by table, for "a failed command changes nothing" on a server.
_FINGERPRINT_TABLES = {
    "mem_nodes": "id",
    "mem_edges": "src, kind, dst",
    "mem_aliases": "namespace, alias",
    "mem_review_queue": "job_id",
    "mem_state": "id",
    "mem_degree": "node_id",
}


def store_fingerprint(db_path: Path | str) -> object:
    """The bytes of an SQLite file; every row of a PostgreSQL store's tables."""
    if isinstance(db_path, Path):
        return db_path.read_bytes()
    import psycopg

    with psycopg.connect(db_path, autocommit=True) as conn:
        return {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
            for table, order in _FINGERPRINT_TABLES.items()
        }


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db_path(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """The store a test uses: a file in tmp_path on SQLite; on PostgreSQL the URL of a
    fresh schema (a str: what ``--db`` and ``MemoryStore()`` take alike, so a test that
    only opens the store runs on both; one about the file is ``sqlite_only``)."""
    if engine == "sqlite":
        return tmp_path / "store" / "memory.db"
    server = request.getfixturevalue("pg_server")
    return server.fresh_url()  # type: ignore[no-any-return]


@pytest.fixture
def make_store(db_path: Path, clock: FakeClock) -> Iterator[Callable[..., MemoryStore]]:
    random = CountingRandom()
    opened: list[MemoryStore] = []

    def factory(path: Path | str | None = None, **kwargs: object) -> MemoryStore:
        store = MemoryStore(path or db_path, clock=clock, random_source=random, **kwargs)  # type: ignore[arg-type]
        opened.append(store)
        return store

    yield factory
    for store in opened:
        try:
            store.close()
        except Exception:
            pass


@pytest.fixture
def store(make_store: Callable[..., MemoryStore]) -> MemoryStore:
    return make_store()


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, db_path: Path, clock: FakeClock) -> Callable[..., object]:
    """Run the CLI in-process against the store (db_path) with the fixed clock and IDs.

    Returns a function ``run(*args, input=None, env=None)`` giving Click's Result, whose
    ``stdout`` and ``stderr`` are separate."""
    random = CountingRandom()

    def factory(db: str | None, namespace: str | None, migrate: bool = True) -> MemoryStore:
        return MemoryStore(
            db, namespace=namespace, clock=clock, random_source=random, migrate=migrate
        )

    monkeypatch.setattr(cli_context, "store_factory", factory)
    monkeypatch.setenv("NERVAPACK_MEMORY_DB", str(db_path))
    runner = CliRunner()

    def run(*args: str, input: str | bytes | None = None, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
        return runner.invoke(cli_app, list(args), input=input, env=env)

    return run
