"""Git commits as memories: each commit an action, each ``Decision:`` trailer of its
message a decision that CAUSED the action, both anchored to the code symbols the
commit's diff changed (so ``code-for FILE`` shows the commits and decisions that touched
it), and both stamped with the commit's hash.

Invariants:

* Recording is idempotent, keyed by the commit hash: a commit already recorded (by the
  post-commit hook, an earlier backfill, or the hook of older versions, whose action
  reads "Commit <short hash>: ...") is never recorded again, forgotten or not.
* A commit is recorded whole or not at all: its decisions and its action are written
  in one transaction.
* Nothing that names the repository is anchored to code: the repository's name is kept
  in the action's data (``repository``), never passed as an entity, which would match a
  package named like the repository (``requests/__init__.py``) and mark every commit
  stale at the next version bump.
* Only lines inside a function, method or class anchor a symbol (the innermost one);
  module-level lines (a version string, imports) anchor nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .. import nodes
from ..errors import BadInputError, NotFoundError
from ..storage import rows
from .git import git, work_tree

if TYPE_CHECKING:
    from ..code.values import CodeSymbol
    from ..storage.engine import Storage

# A commit touching more symbols than this anchors the first ones (by file and line):
# a sweeping refactor should not tie one action to hundreds of entities.
MAX_SYMBOLS_PER_COMMIT = 30
_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_OLD_HOOK_ACTION = re.compile(r"^Commit ([0-9a-f]{4,40}):")


@dataclass(frozen=True)
class CommitRecord:
    """One commit as recorded (or found recorded already)."""

    commit: str
    short: str
    subject: str
    action: str
    action_short: str
    decisions: tuple[str, ...]
    symbols: tuple[str, ...]
    already: bool


@dataclass(frozen=True)
class BackfillResult:
    """What ``hooks backfill`` recorded, and how many commits it found recorded."""

    repository: str
    since: str | None
    recorded: tuple[CommitRecord, ...]
    already: int


def record_commit(storage: Storage, repo: Path, rev: str = "HEAD") -> CommitRecord:
    """Record the commit ``rev`` names, unless it is recorded already."""
    storage.namespace_for(None)  # an unusable state.yaml fails first, like every command
    top = work_tree(repo)
    commit = _full_hash(top, rev)
    recorded = RecordedCommits(storage)
    return _record(storage, top, commit, recorded)


def backfill(
    storage: Storage, repo: Path, since: str | None = None, *, limit: int | None = None
) -> BackfillResult:
    """Record every commit reachable from HEAD (after ``since`` when given), oldest
    first, skipping those recorded already. Safe to run again: it then records nothing.
    ``limit`` keeps the newest that many commits of the range."""
    if limit is not None and limit < 1:
        raise BadInputError("--limit must be at least 1")
    storage.namespace_for(None)  # an unusable state.yaml fails first, like every command
    top = work_tree(repo)
    span = f"{_full_hash(top, since)}..HEAD" if since else "HEAD"
    listed = git(top, "rev-list", "--reverse", span).decode("ascii").split()
    if limit is not None:
        listed = listed[-limit:]
    recorded = RecordedCommits(storage)
    done: list[CommitRecord] = []
    already = 0
    for commit in listed:
        if recorded.find(commit) is not None:
            already += 1
            continue
        done.append(_record(storage, top, commit, recorded))
    return BackfillResult(top.name, since, tuple(done), already)


class RecordedCommits:
    """The commits recorded in the namespace in use: by hash (``data.commit``), and by
    the short hash the older hook wrote at the start of each action."""

    def __init__(self, storage: Storage) -> None:
        self.by_hash: dict[str, str] = {}
        self.by_short: dict[str, str] = {}
        for node_id, commit, content in storage.connection.execute(
            "SELECT id, json_extract(data, '$.commit'), content FROM mem_nodes "
            "WHERE namespace = ? AND kind = 'action' AND (json_extract(data, '$.commit') "
            "IS NOT NULL OR substr(content, 1, 7) = 'Commit ')",
            (storage.namespace,),
        ):
            if commit:
                self.by_hash[str(commit)] = node_id
            else:
                match = _OLD_HOOK_ACTION.match(content)
                if match:
                    self.by_short[match.group(1)] = node_id

    def find(self, commit: str) -> str | None:
        if commit in self.by_hash:
            return self.by_hash[commit]
        for short, node_id in self.by_short.items():
            if len(short) >= 7 and commit.startswith(short):
                return node_id
        return None


def _full_hash(top: Path, rev: str) -> str:
    if not rev.strip() or rev.startswith("-"):
        raise BadInputError(f"{rev[:40]!r} is not a revision")
    try:
        return git(top, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}").decode().strip()
    except BadInputError:
        raise NotFoundError(f"no commit {rev[:40]!r} in {top}") from None


def _record(storage: Storage, top: Path, commit: str, recorded: RecordedCommits) -> CommitRecord:
    from ..writing import NewMemory, store_memories

    short = git(top, "rev-parse", "--short", commit).decode().strip()
    message = git(top, "log", "-1", "--format=%B", commit).decode("utf-8", "replace")
    subject = message.strip().splitlines()[0] if message.strip() else ""
    existing = recorded.find(commit)
    if existing is not None:
        shown = nodes.short_ids(storage, [existing])[existing]
        return CommitRecord(commit, short, subject, existing, shown, (), (), True)
    when = git(top, "log", "-1", "--format=%cI", commit).decode().strip()
    trailers = git(
        top, "log", "-1", "--format=%(trailers:key=Decision,valueonly,unfold)", commit
    ).decode("utf-8", "replace")
    decisions = [line.strip() for line in trailers.splitlines() if line.strip()]
    symbols = changed_symbols(top, commit, storage)
    memories = [
        NewMemory("decision", text, entities=symbols, valid_from=when) for text in decisions
    ]
    memories.append(
        NewMemory(
            "action",
            f"Commit {short}: {message.strip() or '(no message)'}\n",
            entities=symbols,
            valid_from=when,
            caused_by=list(range(len(decisions))),
        )
    )
    with storage.transaction():
        ids = store_memories(storage, memories, bulk=False).ids
        for node_id in ids[:-1]:
            rows.update_data(storage, node_id, {"commit": commit})
        rows.update_data(storage, ids[-1], {"commit": commit, "repository": top.name})
    recorded.by_hash[commit] = ids[-1]
    shown = nodes.short_ids(storage, [ids[-1]])[ids[-1]]
    return CommitRecord(
        commit, short, subject, ids[-1], shown, tuple(ids[:-1]), tuple(symbols), False
    )


def changed_symbols(top: Path, commit: str, storage: Storage) -> list[str]:
    """The code graph names (``path::qualname``) of the innermost functions, methods and
    classes holding the lines ``commit`` added or changed, as that commit's files read;
    paths relative to the code root, as anchors are. Empty when no code graph lies
    beside the store."""
    from ..code.files import relative_to
    from ..code.languages import SOURCE_SUFFIXES
    from ..code.parsing import GrammarMissing, source_symbols
    from ..code.queries import code_root
    from ..locate import graph_path_beside

    if not graph_path_beside(storage.path).is_file():
        return []
    root = code_root(storage).resolve()
    patch = git(top, "diff-tree", "-r", "-p", "-U0", "--root", "--no-renames", "-m",
                "--first-parent", "--no-commit-id", commit)  # fmt: skip
    names: list[str] = []
    for path, lines in _changed_lines(patch):
        if not path.endswith(SOURCE_SUFFIXES) or not lines:
            continue
        rel = relative_to((top / path).resolve(), root)
        if rel is None:
            continue
        try:
            data = git(top, "show", f"{commit}:{path}")
        except BadInputError:
            continue
        try:
            symbols = source_symbols(rel, data)[1:]
        except GrammarMissing:
            continue  # a language whose grammar is not installed: anchored to nothing
        for line in sorted(lines):
            inner = _innermost(symbols, line)
            if inner is not None and inner.node_id not in names:
                names.append(inner.node_id)
    return names[:MAX_SYMBOLS_PER_COMMIT]


def _innermost(symbols: Iterable[CodeSymbol], line: int) -> CodeSymbol | None:
    holding = [s for s in symbols if s.contains(line)]
    return min(holding, key=lambda s: (s.end_line or 0) - (s.start_line or 0), default=None)


def _changed_lines(patch: bytes) -> list[tuple[str, set[int]]]:
    """(path, new-side line numbers) per file of a ``-U0`` patch. A hunk that only
    deletes touches the line it deleted after."""
    files: list[tuple[str, set[int]]] = []
    for raw in patch.splitlines():
        if raw.startswith(b"+++ "):
            target = raw[4:].decode("utf-8", "surrogateescape")
            files.append((target[2:] if target.startswith("b/") else "", set()))
        elif raw.startswith(b"@@") and files:
            match = _HUNK.match(raw)
            if match:
                start = int(match.group(1))
                count = int(match.group(2)) if match.group(2) is not None else 1
                files[-1][1].update(range(start, start + count) if count else {max(start, 1)})
    return [(path, lines) for path, lines in files if path]
