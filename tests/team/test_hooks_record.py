"""hooks.py on real git repositories and real store files: commits recorded once, keyed
by hash; Decision: trailers; anchors on the symbols a diff changed, never on the package
the repository is named after."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from nervamem import MemoryStore
from nervamem.browse import ListFilter
from nervamem.errors import NotFoundError

pytestmark = [
    pytest.mark.both_engines,
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]

MODULE = """__version__ = "1.0"


def get(url):
    return url


class Session:
    def send(self, request):
        return request
"""


def git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com", GIT_CONFIG_NOSYSTEM="1",
    )  # fmt: skip
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def requests_repo(tmp_path: Path) -> Path:
    """A repository named like its package, as requests, rich or flask are."""
    repo = tmp_path / "requests"
    (repo / "requests").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "requests" / "__init__.py").write_text(MODULE, encoding="utf-8")
    commit(repo, "initial")
    return repo


@pytest.fixture
def project_store(requests_repo: Path, make_store: Callable[..., MemoryStore]) -> MemoryStore:
    store = make_store(requests_repo / ".nervapack" / "memory.db")
    store.index_code()
    return store


def edit(repo: Path, old: str, new: str) -> None:
    path = repo / "requests" / "__init__.py"
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


def test_a_commit_is_anchored_to_the_symbols_its_diff_changed(
    requests_repo: Path, project_store: MemoryStore
) -> None:
    edit(requests_repo, "return request", "return request or None")
    commit(requests_repo, "fix send\n\nDecision: send never returns a falsy request")
    record = project_store.record_commit(requests_repo)
    assert record.symbols == ("requests/__init__.py::Session.send",)
    assert len(record.decisions) == 1 and record.action is not None
    found = project_store.code_for("requests/__init__.py:9", cwd=requests_repo)
    assert {item.id for item in found.items} == {record.action, *record.decisions}
    [action] = project_store.show([record.action])
    assert action.data["commit"] == git(requests_repo, "rev-parse", "HEAD")
    assert action.data["repository"] == "requests"
    assert [(link.edge, link.direction) for link in action.links] == [("CAUSED", "in")]


def test_a_version_bump_anchors_nothing_and_is_never_stale(
    requests_repo: Path, project_store: MemoryStore
) -> None:
    edit(requests_repo, '"1.0"', '"1.1"')
    commit(requests_repo, "bump version")
    record = project_store.record_commit(requests_repo)
    assert record.symbols == ()
    assert project_store.code_to(record.action).anchors == ()
    edit(requests_repo, '"1.1"', '"1.2"')
    assert project_store.verify_staleness().stale == ()


def test_backfill_is_idempotent_and_keyed_by_the_commit_hash(
    requests_repo: Path, project_store: MemoryStore
) -> None:
    first = git(requests_repo, "rev-parse", "HEAD")
    edit(requests_repo, "return url", "return url.strip()")
    second = commit(requests_repo, "strip urls\n\nDecision: urls are stripped")
    project_store.record_commit(requests_repo, second)  # the hook got this one
    result = project_store.backfill_commits(requests_repo)
    assert [r.commit for r in result.recorded] == [first]
    assert result.already == 1
    again = project_store.backfill_commits(requests_repo)
    assert (again.recorded, again.already) == ((), 2)
    kinds = [n.kind for n in project_store.list_nodes(ListFilter(kinds=("action", "decision")))]
    assert sorted(kinds) == ["action", "action", "decision"]


def test_backfill_since_and_commits_of_the_older_hook(
    requests_repo: Path, project_store: MemoryStore
) -> None:
    first = git(requests_repo, "rev-parse", "HEAD")
    edit(requests_repo, "return url", "return url.lower()")
    second = commit(requests_repo, "lower urls")
    # The older hook stored "Commit <short>: message" and no hash.
    project_store.store("action", f"Commit {second[:7]}: lower urls\n")
    edit(requests_repo, "return request", "return [request]")
    third = commit(requests_repo, "wrap")
    result = project_store.backfill_commits(requests_repo, since=first)
    assert [r.commit for r in result.recorded] == [third]
    assert result.already == 1


def test_an_unknown_revision_is_not_found(requests_repo: Path, project_store: MemoryStore) -> None:
    with pytest.raises(NotFoundError):
        project_store.record_commit(requests_repo, "no-such-branch")
