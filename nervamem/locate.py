"""Where the store lives, and the code graph beside it.

A ``postgresql://`` or ``postgres://`` URL in place of a path names a store on a
PostgreSQL server (:func:`resolve_store`); everything else here is about files.

Order (cli.md): an explicit path (``--db`` / ``MemoryStore(db_path)``), then
``NERVAMEM_DB``, then ``NERVAPACK_MEMORY_DB``, then ``.nervapack/memory.db`` found
walking up from the working directory, then ``~/.nervapack/memory.db``.

A path that cannot name a store file (blank, ending in a separator, ``~user`` of no such
user) is bad input (exit 2); no home folder for the default store is an unusable store
(exit 1). Both are refused here, before anything is created.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from .errors import BadInputError, StoreError

# Every variable nervamem reads is named NERVAMEM_*; NERVAPACK_MEMORY_DB is the one
# alias, the older name kept so that stores shared with NervaPack keep working. Messages
# name NERVAMEM_DB.
ENV_DB = "NERVAPACK_MEMORY_DB"
# The name that matches every other NERVAMEM_ variable; it wins over ENV_DB, which stays
# read so that stores shared with NervaPack keep working.
ENV_DB_NERVAMEM = "NERVAMEM_DB"
STORE_DIR = ".nervapack"
STORE_FILE = "memory.db"
GRAPH_FILE = "graph.graphml"
SHOWN_PATH_CHARS = 80
# A store named by one of these is a PostgreSQL database (docs/postgres.md).
URL_SCHEMES = ("postgresql://", "postgres://")


@functools.cache
def _url_like() -> re.Pattern[str]:
    """What looks like a URL rather than a path: ``scheme:/`` (a scheme of two characters
    or more, so that ``C:/`` stays a Windows path) or ``://`` anywhere. Such a value that
    is not a PostgreSQL URL is a typo (``psql://``, ``postgresql:/``), never an SQLite
    path."""
    return re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/|://")


def shown_path(path: str | os.PathLike[str]) -> str:
    """A path for a one-line message: a very long one is cut in the middle."""
    text = os.fspath(path)
    if len(text) <= SHOWN_PATH_CHARS:
        return text
    return f"{text[:50]}...{text[-20:]} ({len(text)} characters)"


def graph_path_beside(db_path: Path) -> Path:
    """The code graph that memories stored in ``db_path`` are anchored to; the only place
    that knows its name (``code index`` writes it, ``store`` reads it)."""
    return db_path.parent / GRAPH_FILE


def home_store() -> Path:
    try:
        home = Path.home()
    except (RuntimeError, KeyError):
        # HOME is unset and the user database has no entry for this user ID.
        raise StoreError(
            f"cannot place the default store: no home folder (HOME is not set and user ID "
            f"{os.getuid()} has no entry in the user database); set {ENV_DB_NERVAMEM} or give --db"
        ) from None
    return home / STORE_DIR / STORE_FILE


def working_folder() -> Path:
    try:
        return Path.cwd()
    except OSError as exc:  # deleted under us
        raise StoreError(
            f"the working folder is unreadable ({exc.strerror or exc}); set {ENV_DB_NERVAMEM} "
            "or give --db"
        ) from None


def find_project_store(start: Path | None = None) -> Path | None:
    here = (start or working_folder()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / STORE_DIR / STORE_FILE
        if candidate.is_file():
            return candidate
    return None


def resolve_db_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    if explicit is not None:
        return given_path(os.fspath(explicit), "the store path")
    for variable in (ENV_DB_NERVAMEM, ENV_DB):
        from_env = os.environ.get(variable)
        if from_env:  # set but empty counts as unset, as for any variable
            return given_path(from_env, variable)
    return find_project_store() or home_store()


def is_store_url(name: object) -> bool:
    """Whether ``name`` is a PostgreSQL URL (storage/postgres/) rather than a path:
    the scheme in any case, spaces or a newline around it (pasted) ignored."""
    return isinstance(name, str) and name.strip()[:13].lower().startswith(URL_SCHEMES)


def store_url(name: str) -> str:
    """A PostgreSQL URL as libpq takes it: without the spaces around it, the scheme in
    lower case (libpq reads ``POSTGRESQL://`` as a key=value string)."""
    text = name.strip()
    scheme, sep, rest = text.partition("://")
    return f"{scheme.lower()}{sep}{rest}"


def refuse_url_like(text: str, source: str) -> None:
    """BadInputError for a value that looks like a URL but is not a PostgreSQL one; the
    value is not quoted: it may hold a password."""
    # Both of _url_like()'s forms hold ":/": a path without it is answered without compiling
    # the pattern (every command that names its store, at start-up).
    if ":/" in text and _url_like().search(text.strip()):
        raise BadInputError(
            f"{source} looks like a URL but is not a postgresql:// or postgres:// one "
            "(not shown: it may hold a password); give a PostgreSQL URL or the path of "
            "a store file"
        )


def resolve_store(explicit: str | os.PathLike[str] | None = None) -> Path | str:
    """The store in use: a PostgreSQL URL as given (``--db`` or the environment, in
    the order of :func:`resolve_db_path`), else the SQLite file's path."""
    if explicit is not None:
        return (
            store_url(os.fspath(explicit))
            if is_store_url(os.fspath(explicit))
            else resolve_db_path(explicit)
        )
    for variable in (ENV_DB_NERVAMEM, ENV_DB):
        from_env = os.environ.get(variable)
        if from_env:
            return store_url(from_env) if is_store_url(from_env) else given_path(from_env, variable)
    return find_project_store() or home_store()


def store_path_in_environment() -> bool:
    return any(os.environ.get(variable) for variable in (ENV_DB_NERVAMEM, ENV_DB))


def given_path(text: str, source: str) -> Path:
    """The store file a user named, ``~`` expanded; BadInputError if it cannot be one."""
    if not text.strip():
        raise BadInputError(f"{source} is blank: give the path of a store file")
    if "\x00" in text:
        raise BadInputError(f"{source} contains a NUL byte")
    refuse_url_like(text, source)
    # Checked on the text: Path("x/") forgets the separator.
    if text.endswith(("/", os.sep)) or (os.altsep and text.endswith(os.altsep)):
        raise BadInputError(
            f"{source} {shown_path(text)} ends with a separator: give the path of a store "
            "file, not of a folder"
        )
    try:
        path = Path(text).expanduser()
    except (RuntimeError, KeyError):  # ~user of no such user, or ~ without a home folder
        user = text[1:].split("/", 1)[0]
        who = f"no user {user[:40]!r}" if user else "no home folder"
        raise BadInputError(f"{source} {shown_path(text)} cannot be expanded: {who}") from None
    if path.name in ("", ".", ".."):
        raise BadInputError(
            f"{source} {shown_path(text)} names a folder: give the path of a store file"
        )
    if not path.name.strip():
        raise BadInputError(f"{source} {shown_path(text)} has a blank file name")
    return path


# What `init` writes into a project store's folder, so that `git add .` never commits the
# store: everything in .nervapack/ is ignored but this file and events/, the folder that
# team memory shares through git.
STORE_GITIGNORE = (
    "# Written by nervamem init. The store is local data: keep it out of git, except\n"
    "# events/ (what team memory shares) and this file.\n"
    "*\n"
    "!.gitignore\n"
    "!events/\n"
    "!events/**\n"
    "events/**/.*.tmp\n"
)


def keep_store_out_of_git(store_folder: Path) -> bool:
    """Write ``.gitignore`` into a store folder named ``.nervapack`` that has none;
    whether it was written. Best effort: a folder that cannot take it still holds a
    usable store."""
    if store_folder.name != STORE_DIR:
        return False  # a folder the user named with --db: theirs to configure
    target = store_folder / ".gitignore"
    try:
        with open(target, "x", encoding="utf-8") as handle:
            handle.write(STORE_GITIGNORE)
    except OSError:
        return False
    return True


# A PostgreSQL URL as shown to people and written to files: without its password. Here,
# beside the other rules about store names, so that the CLI needs no engine module.
def shown_url(url: str) -> str:
    """The URL with its password (in the netloc or a ``password=`` parameter) as ***."""
    return _without_password(url, "***")


def url_without_password(url: str) -> str:
    """The URL with its password left out (for a configuration file: libpq then reads
    it from PGPASSWORD or ~/.pgpass)."""
    return _without_password(url, None)


def _without_password(url: str, mask: str | None) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return "a PostgreSQL URL that does not parse"
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        if ":" in user:
            user = user.split(":", 1)[0] + (f":{mask}" if mask else "")
        netloc = f"{user}@{host}"
    pairs = [
        (key, mask if key.lower() == "password" else value)
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
        if mask is not None or key.lower() != "password"
    ]
    query = urlencode(pairs, safe="/*") if pairs else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def secrets_of(url: str) -> list[str]:
    """What of a URL may be a password, to scrub from any message that might echo it:
    the password as urllib and as libpq read it, everything between the user's ``:``
    and the last ``@`` before the path (libpq splits an unencoded ``@`` at the first
    one and then quotes the rest as a host), each ``@``- or ``/``-separated piece of
    those, and a ``password=`` parameter; longest first, so that no piece is left."""
    found: list[str] = []
    try:
        parts = urlsplit(url)
        found += [parts.password or ""]
        found += [v for k, v in parse_qsl(parts.query) if k.lower() == "password"]
    except ValueError:
        pass
    rest = url.partition("://")[2].split("?", 1)[0]
    user_info = rest.rpartition("@")[0]
    if ":" in user_info:
        found.append(user_info.split(":", 1)[1])
    found += [m.group(1) for m in re.finditer(r"[?&]password=([^&#]*)", url, re.IGNORECASE)]
    pieces = {unquote(text) for text in found} | set(found)
    for text in list(pieces):
        pieces.update(piece for piece in re.split(r"[@/]", text) if len(piece) >= 3)
    return sorted((piece for piece in pieces if piece), key=len, reverse=True)
