"""The active namespace, and the active session of each namespace, kept in
``state.yaml`` beside the store: switching to another namespace and back resumes the
session left there.

Written atomically (temporary file + rename) as YAML whose values are JSON strings, so
the common case is read without importing PyYAML (start-up time matters: every agent
call is a fresh process). A hand-edited file falls back to a real YAML parse; anything
that is not a mapping of valid values raises StateError.

Invariant: every read-modify-write of the state (MemoryStore: sessions, ns switch,
forgetting the active session) reads it again and writes it while holding the store's
write lock, so that no command writes back a state it read before another's change.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import BadInputError, StateError
from .ids import ID_PATTERN

STATE_FILE = "state.yaml"
DEFAULT_NAMESPACE = "default"
MAX_STATE_CHARS = 64 * 1024


# Both patterns are compiled on first use: a command on a store without a state file and
# without --ns needs neither (start-up).
@functools.cache
def namespace_pattern() -> re.Pattern[str]:
    return re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


@functools.cache
def _fast_line() -> re.Pattern[str]:
    """A line of the form nervamem writes: a key and a JSON null, string or flat object
    of strings (``sessions``)."""
    return re.compile(r'^([a-z_]+): (null|"(?:[^"\\]|\\.)*"|\{(?:[^"{}\\]|"(?:[^"\\]|\\.)*")*\})$')


class State:
    """The active namespace, and the active session of each namespace (state.yaml).
    Immutable, compared by value.

    ``session`` is the active namespace's session; ``others`` the sessions left active
    in the other namespaces, resumed when one switches back to them. Written out rather
    than a frozen @dataclass, which costs ~1 ms (and the dataclasses import) on every
    command.
    """

    __slots__ = ("namespace", "session", "others")
    namespace: str
    session: str | None
    others: tuple[tuple[str, str], ...]  # (namespace, session), sorted

    def __init__(
        self,
        namespace: str = DEFAULT_NAMESPACE,
        session: str | None = None,
        others: Mapping[str, str] | None = None,
    ) -> None:
        object.__setattr__(self, "namespace", namespace)
        object.__setattr__(self, "session", session)
        kept = sorted((ns, sid) for ns, sid in (others or {}).items() if ns != namespace)
        object.__setattr__(self, "others", tuple(kept))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, State):
            return NotImplemented
        return (self.namespace, self.session, self.others) == (
            other.namespace,
            other.session,
            other.others,
        )

    def __hash__(self) -> int:
        return hash((self.namespace, self.session, self.others))

    def __repr__(self) -> str:
        others = f", others={dict(self.others)!r}" if self.others else ""
        return f"State(namespace={self.namespace!r}, session={self.session!r}{others})"

    def sessions(self) -> dict[str, str]:
        """The active session of every namespace that has one."""
        active = dict(self.others)
        if self.session is not None:
            active[self.namespace] = self.session
        return active

    def session_of(self, namespace: str) -> str | None:
        return self.sessions().get(namespace)

    def with_session(self, namespace: str, session: str | None) -> State:
        """This state with ``session`` active in ``namespace`` (None: none active)."""
        active = self.sessions()
        if session is None:
            active.pop(namespace, None)
        else:
            active[namespace] = session
        return State(self.namespace, active.get(self.namespace), active)

    def switched(self, namespace: str) -> State:
        """``namespace`` made active; every namespace keeps its session."""
        active = self.sessions()
        return State(namespace, active.get(namespace), active)

    def without_session(self, session: str) -> State:
        """This state with ``session`` active nowhere (it ended or was forgotten)."""
        active = {ns: sid for ns, sid in self.sessions().items() if sid != session}
        return State(self.namespace, active.get(self.namespace), active)


def validate_namespace(name: str) -> str:
    if not namespace_pattern().match(name):
        raise BadInputError(
            f"invalid namespace {name[:40]!r}: use 1-64 letters, digits, '.', '_' or '-'"
        )
    return name


def state_path(db_path: Path) -> Path:
    return db_path.parent / STATE_FILE


def load_state(db_path: Path) -> State:
    path = state_path(db_path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return State()
    except (OSError, UnicodeDecodeError) as exc:
        raise StateError(f"cannot read {path}: {exc}") from None
    raw = _parse_fast(text)
    if raw is None:
        if len(text) > MAX_STATE_CHARS:  # PyYAML needs ~1 s per MB, on every command
            raise StateError(f"{path} is too large to be nervamem state; fix or delete it")
        raw = _parse_yaml(text, path)
    return _validate(raw, path)


def state_text(state: State) -> str:
    """The state as nervamem writes it (state.yaml, or a store on a server)."""
    import json  # here: a command that reads no state file never needs it (start-up)

    return (
        "# nervamem state: the active namespace, its session, and the session left active\n"
        "# in each namespace. Written by nervamem.\n"
        f"namespace: {json.dumps(state.namespace)}\n"
        f"session: {json.dumps(state.session)}\n"
        f"sessions: {json.dumps(state.sessions(), sort_keys=True)}\n"
    )


def state_from_text(text: str, source: str) -> State:
    """The state ``text`` holds (as :func:`state_text` writes it); ``source`` names it in
    messages."""
    raw = _parse_fast(text)
    if raw is None:
        raw = _parse_yaml(text, source)
    return _validate(raw, source)


def save_state(db_path: Path, state: State) -> None:
    """Replace state.yaml atomically. The new file keeps the mode (and, where allowed, the
    group) of the one it replaces, so that other accounts sharing the store (a hook
    running as another user) can still read it; a first one gets the umask's default."""
    path = state_path(db_path)
    body = state_text(state)
    try:
        replaced: os.stat_result | None = os.stat(path)
    except OSError:
        replaced = None
    try:
        fd, tmp = _create_temporary(path.parent, 0o600 if replaced else 0o666)
    except OSError as exc:
        raise StateError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            if replaced is not None:
                _copy_access(handle.fileno(), tmp, replaced)
            handle.write(body)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):  # e.g. state.yaml is a directory, or the disk is full
            raise StateError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise


def _create_temporary(folder: Path, mode: int) -> tuple[int, Path]:
    """A new file beside state.yaml, created with ``mode`` less the umask (tempfile's
    mkstemp would force 0600, and reading the umask means changing it, for every
    thread)."""
    for _ in range(100):
        tmp = folder / f".state-{os.urandom(6).hex()}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {folder}")


def _copy_access(fd: int, tmp: Path, replaced: os.stat_result) -> None:
    if hasattr(os, "fchown") and os.fstat(fd).st_gid != replaced.st_gid:
        try:  # allowed when the writer belongs to that group; the mode is kept either way
            os.fchown(fd, -1, replaced.st_gid)
        except OSError:
            pass
    # After the chown, which may clear bits; a path only where chmod takes no descriptor.
    os.chmod(fd if os.chmod in os.supports_fd else tmp, replaced.st_mode & 0o777)


def _parse_fast(text: str) -> dict[str, Any] | None:
    import json

    values: dict[str, Any] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _fast_line().match(line)
        if not match:
            return None
        values[match.group(1)] = json.loads(match.group(2))
    return values


def _parse_yaml(text: str, path: Path | str) -> dict[str, Any]:
    import yaml

    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "syntax error"
        raise StateError(f"{path} is not valid YAML ({first}); fix or delete it") from None
    except RecursionError:  # PyYAML composes nested collections recursively: [[[[...]]]]
        raise StateError(
            f"{path} is nested too deeply to be nervamem state; fix or delete it"
        ) from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise StateError(f"{path} must be a mapping with 'namespace' and 'session'")
    return loaded


def _validate(raw: dict[str, Any], path: Path | str) -> State:
    """The state a file holds. A file without ``sessions`` (written before sessions were
    kept per namespace) has the active namespace's ``session`` only; ``session`` wins
    over ``sessions`` for the active namespace, as an older nervamem may have rewritten
    the file with ``session`` alone."""
    namespace = raw.get("namespace", DEFAULT_NAMESPACE)
    session = raw.get("session")
    sessions = raw.get("sessions") or {}
    if namespace is None:
        namespace = DEFAULT_NAMESPACE
    if not isinstance(namespace, str) or not namespace_pattern().match(namespace):
        raise StateError(f"{path}: 'namespace' is not a valid namespace name; fix or delete it")
    if session is not None and (not isinstance(session, str) or not ID_PATTERN.match(session)):
        raise StateError(f"{path}: 'session' is not a session ID; fix or delete it")
    if not isinstance(sessions, dict) or not all(
        isinstance(ns, str)
        and namespace_pattern().match(ns)
        and isinstance(sid, str)
        and ID_PATTERN.match(sid)
        for ns, sid in sessions.items()
    ):
        raise StateError(
            f"{path}: 'sessions' is not a mapping of namespaces to session IDs; fix or delete it"
        )
    return State(namespace=namespace, session=session, others=sessions)
