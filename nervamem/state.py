"""The active namespace and session, kept in ``state.yaml`` beside the store.

Written atomically (temporary file + rename) as YAML whose values are JSON strings, so
the common case is read without importing PyYAML (start-up time matters: every agent
call is a fresh process). A hand-edited file falls back to a real YAML parse; anything
that is not a mapping of valid values raises StateError.

Invariant: every read-modify-write of the state (MemoryStore: sessions, ns switch,
forgetting the active session) reads it again and writes it while holding the store's
write lock, so that no command writes back a state it read before another's change.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from .errors import BadInputError, StateError
from .ids import ID_PATTERN

STATE_FILE = "state.yaml"
DEFAULT_NAMESPACE = "default"
MAX_STATE_CHARS = 64 * 1024
NAMESPACE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
_FAST_LINE = re.compile(r'^([a-z_]+): (null|"(?:[^"\\]|\\.)*")$')


class State:
    """The active namespace and session (state.yaml). Immutable, compared by value.

    Written out rather than a frozen @dataclass, which costs ~1 ms (and the dataclasses
    import) on every command.
    """

    __slots__ = ("namespace", "session")
    namespace: str
    session: str | None

    def __init__(self, namespace: str = DEFAULT_NAMESPACE, session: str | None = None) -> None:
        object.__setattr__(self, "namespace", namespace)
        object.__setattr__(self, "session", session)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, State):
            return NotImplemented
        return (self.namespace, self.session) == (other.namespace, other.session)

    def __hash__(self) -> int:
        return hash((self.namespace, self.session))

    def __repr__(self) -> str:
        return f"State(namespace={self.namespace!r}, session={self.session!r})"


def validate_namespace(name: str) -> str:
    if not NAMESPACE_PATTERN.match(name):
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


def save_state(db_path: Path, state: State) -> None:
    """Replace state.yaml atomically. The new file keeps the mode (and, where allowed, the
    group) of the one it replaces, so that other accounts sharing the store (a hook
    running as another user) can still read it; a first one gets the umask's default."""
    path = state_path(db_path)
    body = (
        "# nervamem state: the active namespace and session. Written by nervamem.\n"
        f"namespace: {json.dumps(state.namespace)}\n"
        f"session: {json.dumps(state.session)}\n"
    )
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
    values: dict[str, Any] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _FAST_LINE.match(line)
        if not match:
            return None
        values[match.group(1)] = json.loads(match.group(2))
    return values


def _parse_yaml(text: str, path: Path) -> dict[str, Any]:
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


def _validate(raw: dict[str, Any], path: Path) -> State:
    namespace = raw.get("namespace", DEFAULT_NAMESPACE)
    session = raw.get("session")
    if namespace is None:
        namespace = DEFAULT_NAMESPACE
    if not isinstance(namespace, str) or not NAMESPACE_PATTERN.match(namespace):
        raise StateError(f"{path}: 'namespace' is not a valid namespace name; fix or delete it")
    if session is not None and (not isinstance(session, str) or not ID_PATTERN.match(session)):
        raise StateError(f"{path}: 'session' is not a session ID; fix or delete it")
    return State(namespace=namespace, session=session)
