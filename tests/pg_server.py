"""A real PostgreSQL server for the test run: made with initdb in a temporary folder,
started once per session with pg_ctl, listening on a unix socket only, stopped and
deleted at the end.

initdb and postgres refuse to run as root; as root, the server runs as an unprivileged
account (``nobody`` unless NERVAMEM_TEST_PG_USER names another) owning the folder.
Durability is switched off (fsync, synchronous_commit): the tests need a server's
behaviour, not its crash safety, and the run stays fast.

Each test gets its own schema (:meth:`PgServer.fresh_url`): ``CREATE SCHEMA`` costs
about a millisecond, and a URL whose ``options`` set the ``search_path`` makes
nervamem create and use its tables there, so that tests never see each other's data.

Binaries: ``NERVAMEM_TEST_PG_BINDIR``, else the newest /usr/lib/postgresql/*/bin, else
``pg_config --bindir``, else PATH.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote

DATABASE = "nervamem"
ROLE = "nervamem"
_counter = itertools.count(1)


class PgUnavailable(Exception):
    """PostgreSQL cannot be started here; the message says why."""


def find_bindir() -> Path:
    explicit = os.environ.get("NERVAMEM_TEST_PG_BINDIR")
    if explicit:
        return Path(explicit)
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    for candidate in reversed(versions):
        if (candidate / "initdb").exists():
            return candidate
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        if out.returncode == 0 and (Path(out.stdout.strip()) / "initdb").exists():
            return Path(out.stdout.strip())
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise PgUnavailable(
        "no PostgreSQL server binaries (initdb, pg_ctl) found: install Debian's "
        "'postgresql' package or set NERVAMEM_TEST_PG_BINDIR"
    )


class PgServer:
    def __init__(self) -> None:
        self.bindir = find_bindir()
        self.folder = Path(tempfile.mkdtemp(prefix="nervamem-pg-"))
        self.data = self.folder / "data"
        self.socket_dir = self.folder / "socket"
        self.log = self.folder / "server.log"
        self.user = None
        if os.geteuid() == 0:
            self.user = os.environ.get("NERVAMEM_TEST_PG_USER", "nobody")
        self.started = False

    # ------------------------------------------------------------------ processes
    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = list(args)
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if check and done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise PgUnavailable(f"{Path(args[0]).name} failed: {' / '.join(tail)}")
        return done

    def start(self) -> PgServer:
        self.socket_dir.mkdir()
        if self.user is not None:
            import pwd

            try:
                entry = pwd.getpwnam(self.user)
            except KeyError:
                raise PgUnavailable(f"no account {self.user!r} to run PostgreSQL as") from None
            for path in (self.folder, self.socket_dir):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            ROLE,
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        self.pg_ctl("start")
        self.started = True
        self.admin("CREATE DATABASE " + DATABASE)
        return self

    # Server settings beyond the socket; bench/postgres.py keeps a real server's durability.
    SETTINGS = (
        "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
        "-c max_connections=200 -c shared_buffers=64MB"
    )

    def pg_ctl(self, action: str) -> None:
        options = f"-k {self.socket_dir} -c listen_addresses='' {self.SETTINGS}"
        args = [str(self.bindir / "pg_ctl"), "-D", str(self.data), "-w", "-t", "60"]
        if action in ("start", "restart"):
            args += ["-l", str(self.log), "-o", options]
        if action in ("stop", "restart"):
            args += ["-m", "fast"]
        self._run(*args, action)

    def restart(self) -> None:
        self.pg_ctl("restart")

    def stop(self) -> None:
        if self.started:
            self._run(
                str(self.bindir / "pg_ctl"),
                "-D",
                str(self.data),
                "-m",
                "immediate",
                "stop",
                check=False,
            )
            self.started = False
        # Deleting the data folder's tens of thousands of files (a schema per test) takes
        # seconds: a process of its own does it, and the test run need not wait.
        subprocess.run(
            ["sh", "-c", 'rm -rf "$1" >/dev/null 2>&1 &', "sh", str(self.folder)], check=False
        )

    # ------------------------------------------------------------------ URLs
    def url(
        self, database: str = DATABASE, *, schema: str | None = None, password: str | None = None
    ) -> str:
        who = ROLE if password is None else f"{ROLE}:{quote(password, safe='')}"
        url = f"postgresql://{who}@/{database}?host={quote(str(self.socket_dir), safe='/')}"
        if schema is not None:
            url += "&options=" + quote(f"-csearch_path={schema}", safe="")
        return url

    def admin(self, sql: str, database: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute(sql)

    def fresh_url(self, *, password: str | None = None) -> str:
        """The URL of a new, empty schema of the test database: one per test."""
        schema = f"t{os.getpid()}_{next(_counter)}"
        self.admin(f"CREATE SCHEMA {schema}", DATABASE)
        return self.url(schema=schema, password=password)
