"""The code graph and the TOUCHES bridge, on a small real git repository made in
tmp_path with its store in ``.nervapack/memory.db`` (no CLI)."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from nervamem import MemoryStore, NotFoundError
from nervamem.code.graph_file import read_graphml
from nervamem.code.indexing import build_index
from nervamem.code.live import LiveSource
from nervamem.code.sidecar import open_code_index
from nervamem.code.symbols import python_symbols
from nervamem.code.values import CodeSymbol
from nervamem.errors import BadInputError
from nervamem.render.markdown import render

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

AUTH = '''\
"""Authentication."""


class AuthService:
    """Issues tokens."""

    def login(self, user):
        return f"token-{user}"

    def logout(self, user):
        return None


def load(path):
    return open(path).read()
'''

STORAGE = """\
import functools


def load(key):
    return key


@functools.cache
def save(key, value):
    return None
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"},
    )


def make_repo(repo: Path) -> Path:
    """A git repository with a package of two modules (one tracked, one untracked), an
    ignored file, a virtual environment and a store folder that must not be indexed."""
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "auth.py").write_text(AUTH)
    (repo / "pkg" / "storage.py").write_text(STORAGE)
    (repo / "ignored.py").write_text("def hidden():\n    pass\n")
    (repo / ".gitignore").write_text("ignored.py\n")
    venv = repo / "env"
    (venv / "lib").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib" / "vendored.py").write_text("def vendored():\n    pass\n")
    (repo / ".nervapack").mkdir()
    (repo / ".nervapack" / "stray.py").write_text("def stray():\n    pass\n")
    git(repo, "init", "-q")
    git(repo, "add", "pkg/__init__.py", "pkg/auth.py", ".gitignore")
    return repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def memory(repo: Path, make_store: Callable[..., MemoryStore]) -> MemoryStore:
    return make_store(repo / ".nervapack" / "memory.db")


@pytest.fixture
def indexed(memory: MemoryStore) -> MemoryStore:
    memory.index_code()
    return memory


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def touches(store: MemoryStore, node_id: str) -> list[tuple[str, dict[str, object]]]:
    rows = store.connection.execute(
        "SELECT dst, data FROM mem_edges WHERE src = ? AND kind = 'TOUCHES' ORDER BY dst",
        (node_id,),
    ).fetchall()
    return [(row[0], json.loads(row[1])) for row in rows]


# ----------------------------------------------------------------------------- parsing
def test_python_symbols_cover_modules_classes_functions_and_methods() -> None:
    symbols = {s.node_id: s for s in python_symbols("pkg/auth.py", AUTH.encode())}
    assert list(symbols) == [
        "pkg/auth.py",
        "pkg/auth.py::AuthService",
        "pkg/auth.py::AuthService.login",
        "pkg/auth.py::AuthService.logout",
        "pkg/auth.py::load",
    ]
    module = symbols["pkg/auth.py"]
    assert (module.kind, module.name, module.qualname, module.start_line, module.end_line) == (
        "module",
        "auth",
        "pkg.auth",
        1,
        15,
    )
    login = symbols["pkg/auth.py::AuthService.login"]
    assert (login.kind, login.name, login.start_line, login.end_line) == ("method", "login", 7, 8)
    assert login.parent == "pkg/auth.py::AuthService"
    assert symbols["pkg/auth.py::load"].kind == "function"


def test_decorators_belong_to_the_symbol_and_moving_keeps_the_hash() -> None:
    save = [s for s in python_symbols("s.py", STORAGE.encode()) if s.name == "save"][0]
    assert (save.start_line, save.end_line) == (8, 10)
    moved = [s for s in python_symbols("s.py", ("\n\n" + STORAGE).encode()) if s.name == "save"][0]
    assert moved.start_line == 10 and moved.source_hash == save.source_hash


def test_nested_and_conditional_definitions_and_duplicates() -> None:
    source = textwrap.dedent(
        """
        import sys
        if sys.version_info > (3,):
            def compat():
                def inner():
                    pass
        class C:
            @property
            def x(self):
                return 1
            @x.setter
            def x(self, value):
                pass
        """
    ).encode()
    ids = [s.node_id for s in python_symbols("m.py", source)]
    assert ids == [
        "m.py",
        "m.py::compat",
        "m.py::compat.inner",
        "m.py::C",
        "m.py::C.x",
        "m.py::C.x#2",
    ]


def test_a_file_that_does_not_parse_yields_its_module_alone() -> None:
    symbols = python_symbols("bad.py", b"def broken(:\n")
    assert len(symbols) == 1 and symbols[0].parse_error
    assert "SyntaxError" in symbols[0].parse_error


# ----------------------------------------------------------------------------- index
def test_index_writes_a_networkx_graph_of_the_files_git_would_track(
    indexed: MemoryStore, repo: Path
) -> None:
    import networkx as nx

    graph = nx.read_graphml(repo / ".nervapack" / "graph.graphml")
    files = {data["file_path"] for _, data in graph.nodes(data=True)}
    assert files == {"pkg/__init__.py", "pkg/auth.py", "pkg/storage.py"}
    login = graph.nodes["pkg/auth.py::AuthService.login"]
    assert login["qualname"] == "AuthService.login"
    assert login["kind"] == "method" and login["name"] == "login"
    assert (int(login["start_line"]), int(login["end_line"])) == (7, 8)
    assert len(login["source_hash"]) == 16
    assert graph.has_edge("pkg/auth.py::AuthService", "pkg/auth.py::AuthService.login")
    assert graph.edges["pkg/auth.py", "pkg/auth.py::AuthService"]["kind"] == "CONTAINS"


def test_reindex_reuses_unchanged_files(memory: MemoryStore, repo: Path) -> None:
    first = memory.index_code()
    assert (first.files, first.parsed, first.reused, first.written) == (3, 3, 0, True)
    again = memory.index_code()
    assert (again.parsed, again.reused, again.written) == (0, 3, False)
    edit(repo / "pkg" / "storage.py", "return key", "return key.upper()")
    after_edit = memory.index_code()
    assert (after_edit.parsed, after_edit.reused, after_edit.written) == (1, 2, True)
    (repo / "pkg" / "storage.py").unlink()
    after_delete = memory.index_code()
    assert after_delete.files == 2
    _, symbols = read_graphml(repo / ".nervapack" / "graph.graphml")
    assert not [s for s in symbols if s.file_path == "pkg/storage.py"]


def test_index_outside_git_walks_and_skips_venvs(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("def a():\n    pass\n")
    (root / ".venv" / "lib").mkdir(parents=True)
    (root / ".venv" / "lib" / "b.py").write_text("def b():\n    pass\n")
    (root / "tools" / "lib").mkdir(parents=True)
    (root / "tools" / "pyvenv.cfg").write_text("")
    (root / "tools" / "lib" / "c.py").write_text("def c():\n    pass\n")
    result = build_index(root / ".nervapack" / "graph.graphml")
    assert result.files == 1
    _, symbols = read_graphml(root / ".nervapack" / "graph.graphml")
    assert {s.node_id for s in symbols} == {"src/a.py", "src/a.py::a"}


def test_index_reports_syntax_errors_and_keeps_going(memory: MemoryStore, repo: Path) -> None:
    (repo / "pkg" / "broken.py").write_text("def broken(:\n")
    result = memory.index_code()
    assert result.files == 4
    assert result.errors and result.errors[0].startswith("pkg/broken.py: SyntaxError")


def test_index_of_a_subfolder_keeps_paths_relative_to_the_repository(
    memory: MemoryStore, repo: Path
) -> None:
    result = memory.index_code(repo / "pkg")
    assert result.files == 3
    _, symbols = read_graphml(repo / ".nervapack" / "graph.graphml")
    assert "pkg/auth.py::load" in {s.node_id for s in symbols}


def test_a_missing_root_is_not_found(memory: MemoryStore, repo: Path) -> None:
    with pytest.raises(NotFoundError):
        memory.index_code(repo / "nowhere")
    with pytest.raises(BadInputError):
        memory.index_code(repo / "pkg" / "auth.py")


# ----------------------------------------------------------------------------- anchoring
def test_store_anchors_matching_entities_with_touches(indexed: MemoryStore) -> None:
    node, report = indexed.store_anchored(
        "decision", "Tokens carry the user name", entities=["AuthService"]
    )
    [(entity_id, edge)] = touches(indexed, node)
    entity = indexed.get(entity_id)
    assert entity.content == "AuthService"
    assert entity.data["file_path"] == "pkg/auth.py"
    assert (entity.data["start_line"], entity.data["end_line"]) == (4, 11)
    assert entity.data["graph_node_id"] == "pkg/auth.py::AuthService"
    assert len(entity.data["source_hash"]) == 16
    assert entity.data["ambiguous"] is False
    assert edge["anchors"] == entity.data["anchors"]
    assert report is not None and report.warnings == ()


@pytest.mark.parametrize(
    ("name", "graph_node_id"),
    [
        ("auth_service", "pkg/auth.py::AuthService"),
        ("auth-service", "pkg/auth.py::AuthService"),
        ("AuthService.login", "pkg/auth.py::AuthService.login"),
        ("auth_service.login", "pkg/auth.py::AuthService.login"),
        ("pkg.auth.AuthService.logout", "pkg/auth.py::AuthService.logout"),
        ("auth.load", "pkg/auth.py::load"),
        ("pkg/auth.py", "pkg/auth.py"),
        ("pkg/storage.py::save", "pkg/storage.py::save"),
        ("pkg.storage", "pkg/storage.py"),
    ],
)
def test_qualified_and_differently_spelt_names_match(
    indexed: MemoryStore, name: str, graph_node_id: str
) -> None:
    node = indexed.store("fact", "something about the code", entities=[name])
    [(_, edge)] = touches(indexed, node)
    assert [a["graph_node_id"] for a in edge["anchors"]] == [graph_node_id]  # type: ignore[attr-defined]


def test_names_that_are_not_code_get_no_touches(indexed: MemoryStore) -> None:
    node = indexed.store("decision", "Chose JWT", entities=["JWT"])
    assert touches(indexed, node) == []
    assert (
        indexed.connection.execute(
            "SELECT count(*) FROM mem_edges WHERE kind = 'ABOUT'"
        ).fetchone()[0]
        == 1
    )


def test_an_ambiguous_bare_name_anchors_to_each_candidate(indexed: MemoryStore) -> None:
    node, report = indexed.store_anchored("fact", "load never caches", entities=["load"])
    [(entity_id, edge)] = touches(indexed, node)
    ids = [a["graph_node_id"] for a in edge["anchors"]]  # type: ignore[attr-defined]
    assert ids == ["pkg/auth.py::load", "pkg/storage.py::load"]
    entity = indexed.get(entity_id)
    assert entity.data["ambiguous"] is True
    assert entity.data["graph_node_id"] == "pkg/auth.py::load"
    assert [a["graph_node_id"] for a in entity.data["anchors"]] == ids
    assert report is not None and report.ambiguous == ("load",)
    assert "ambiguous" in report.warnings[0] and "anchored to each" in report.warnings[0]


def test_without_a_graph_touches_are_skipped_silently(memory: MemoryStore) -> None:
    node, report = memory.store_anchored(
        "decision", "Tokens carry the user name", entities=["AuthService"]
    )
    assert touches(memory, node) == []
    assert report is None


def test_an_unreadable_graph_never_fails_store(memory: MemoryStore, repo: Path) -> None:
    (repo / ".nervapack" / "graph.graphml").write_text("<graphml><node")
    node, report = memory.store_anchored(
        "decision", "Tokens carry the user name", entities=["AuthService"]
    )
    assert touches(memory, node) == []
    assert report is not None and "unreadable" in report.warnings[0]
    assert memory.get(node).content == "Tokens carry the user name"


def test_anchoring_records_the_source_as_it_is_when_stored(
    indexed: MemoryStore, repo: Path
) -> None:
    # The code moved and changed after indexing: the anchor follows the live source.
    edit(repo / "pkg" / "auth.py", '"""Authentication."""', '"""Authentication."""\n\n\n')
    edit(repo / "pkg" / "auth.py", "return None", "return user")
    node = indexed.store("fact", "logout echoes the user", entities=["AuthService.logout"])
    [(_, edge)] = touches(indexed, node)
    anchor = edge["anchors"][0]  # type: ignore[index]
    assert (anchor["start_line"], anchor["end_line"]) == (13, 14)
    assert indexed.verify_staleness().stale == ()


def test_the_sidecar_follows_a_rewritten_graph(indexed: MemoryStore, repo: Path) -> None:
    graph = repo / ".nervapack" / "graph.graphml"
    with open_code_index(graph) as index:
        assert [s.node_id for s in index.lookup("save")] == ["pkg/storage.py::save"]
    edit(repo / "pkg" / "storage.py", "def save(", "def persist(")
    indexed.index_code()
    with open_code_index(graph) as index:
        assert index.lookup("save") == []
        assert [s.node_id for s in index.lookup("persist")] == ["pkg/storage.py::persist"]


# ----------------------------------------------------------------------------- foreign graphs
FOREIGN = """<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="fp" for="node" attr.name="file_path" attr.type="string"/>
  <key id="sl" for="node" attr.name="start_line" attr.type="string"/>
  <key id="el" for="node" attr.name="end_line" attr.type="string"/>
  <key id="qn" for="node" attr.name="qualname" attr.type="string"/>
  <key id="k" for="node" attr.name="kind" attr.type="string"><default>function</default></key>
  <key id="rel" for="edge" attr.name="relation" attr.type="string"/>
  <graph edgedefault="directed">
    <node id="n1"><data key="fp">pkg/auth.py</data><data key="qn">pkg.auth.AuthService</data>
      <data key="k">class</data><data key="sl">4</data><data key="el">11.0</data></node>
    <node id="n2"><data key="fp">./pkg/auth.py</data>
      <data key="qn">pkg.auth.AuthService.login</data>
      <data key="sl">7</data><data key="el">eight</data></node>
    <node id="n3"><data key="fp">pkg\\storage.py</data><data key="qn">save</data></node>
    <node id="concept"><data key="qn">not code</data></node>
    <edge source="n1" target="n2"><data key="rel">calls</data></edge>
  </graph>
</graphml>
"""


def test_any_graphml_with_the_node_attributes_works(memory: MemoryStore, repo: Path) -> None:
    (repo / ".nervapack" / "graph.graphml").write_text(FOREIGN)
    _, symbols = read_graphml(repo / ".nervapack" / "graph.graphml")
    by_id = {s.node_id: s for s in symbols}
    assert set(by_id) == {"n1", "n2", "n3"}
    assert by_id["n2"] == CodeSymbol(
        node_id="n2",
        file_path="pkg/auth.py",
        kind="function",
        name="login",
        qualname="pkg.auth.AuthService.login",
        module="pkg.auth",
        start_line=7,
        end_line=None,  # "eight" is no line number
    )
    assert by_id["n3"].file_path == "pkg/storage.py" and by_id["n3"].start_line is None

    login = memory.store("fact", "login prefixes the token", entities=["AuthService.login"])
    saving = memory.store("fact", "save ignores the value", entities=["save"])
    anchors = memory.code_to(login).anchors
    assert [(a.graph_node_id, a.file_path, a.start_line, a.end_line) for a in anchors] == [
        ("n2", "pkg/auth.py", 7, 8)  # lines and hash come from the live source
    ]
    assert memory.verify_staleness().stale == ()
    edit(repo / "pkg" / "auth.py", 'f"token-{user}"', 'f"tok-{user}"')
    edit(repo / "pkg" / "storage.py", "def save(", "def store(")
    report = memory.verify_staleness()
    assert {(s.id, s.reason) for s in report.stale} == {
        (login, "source changed"),
        (saving, "symbol removed"),
    }


# ----------------------------------------------------------------------------- queries
@pytest.fixture
def memories(indexed: MemoryStore) -> dict[str, str]:
    return {
        "service": indexed.store("decision", "AuthService owns tokens", entities=["AuthService"]),
        "login": indexed.store("fact", "login returns a token", entities=["AuthService.login"]),
        "load": indexed.store("fact", "load reads files", entities=["load"]),
        "save": indexed.store("fact", "save is cached", entities=["pkg.storage.save"]),
        "module": indexed.store("fact", "storage is a stub", entities=["pkg/storage.py"]),
        "plain": indexed.store("fact", "unrelated", entities=["JWT"]),
    }


def test_code_for_a_file(indexed: MemoryStore, memories: dict[str, str]) -> None:
    result = indexed.code_for("pkg/auth.py")
    assert [item.id for item in result.items] == [
        memories["load"],
        memories["login"],
        memories["service"],
    ]
    load = result.items[0]
    assert [a.graph_node_id for a in load.anchors] == ["pkg/auth.py::load"]  # this file only
    assert render("code_for", result).startswith("## Memories about pkg/auth.py (3 items)")


def test_code_for_a_line_finds_the_code_that_contains_it(
    indexed: MemoryStore, memories: dict[str, str], repo: Path
) -> None:
    assert {i.id for i in indexed.code_for("pkg/auth.py:8").items} == {
        memories["login"],
        memories["service"],
    }
    assert {i.id for i in indexed.code_for("pkg/auth.py:10").items} == {memories["service"]}
    assert indexed.code_for("pkg/auth.py:2").items == ()
    assert {i.id for i in indexed.code_for("pkg/storage.py:9").items} == {
        memories["save"],
        memories["module"],
    }
    # Lines follow the code as it is now, not as it was indexed.
    edit(repo / "pkg" / "auth.py", '"""Authentication."""', '"""Authentication."""\n\n\n')
    assert {i.id for i in indexed.code_for("pkg/auth.py:11").items} == {
        memories["login"],
        memories["service"],
    }


def test_code_for_takes_paths_relative_to_the_working_directory_and_folders(
    indexed: MemoryStore, memories: dict[str, str], repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo / "pkg")
    assert {i.id for i in indexed.code_for("storage.py").items} == {
        memories["load"],
        memories["save"],
        memories["module"],
    }
    assert {i.id for i in indexed.code_for(str(repo / "pkg" / "storage.py")).items} == {
        memories["load"],
        memories["save"],
        memories["module"],
    }
    assert len(indexed.code_for("pkg/", cwd=repo).items) == 5
    assert indexed.code_for("nowhere.py").items == ()


def test_code_for_shows_only_current_memories_of_the_namespace(
    indexed: MemoryStore,
    memories: dict[str, str],
    make_store: Callable[..., MemoryStore],
    repo: Path,
) -> None:
    newer = indexed.store(
        "decision",
        "AuthService owns refresh tokens",
        entities=["AuthService"],
        supersedes=memories["service"],
    )
    indexed.forget(memories["login"])
    other = make_store(repo / ".nervapack" / "memory.db", namespace="other")
    other.store("fact", "other namespace", entities=["AuthService"])
    assert [i.id for i in indexed.code_for("pkg/auth.py").items] == [newer, memories["load"]]


def test_code_for_rejects_bad_targets(indexed: MemoryStore) -> None:
    with pytest.raises(BadInputError):
        indexed.code_for("pkg/auth.py:0")
    with pytest.raises(BadInputError):
        indexed.code_for("  ")


def test_code_to_lists_the_anchors(indexed: MemoryStore, memories: dict[str, str]) -> None:
    result = indexed.code_to(memories["load"])
    assert [(a.file_path, a.start_line, a.end_line, a.graph_node_id) for a in result.anchors] == [
        ("pkg/auth.py", 14, 15, "pkg/auth.py::load"),
        ("pkg/storage.py", 4, 5, "pkg/storage.py::load"),
    ]
    assert indexed.code_to(memories["plain"]).anchors == ()
    entity = touches(indexed, memories["save"])[0][0]
    assert [a.graph_node_id for a in indexed.code_to(entity).anchors] == ["pkg/storage.py::save"]
    with pytest.raises(NotFoundError):
        indexed.code_to("d_ffff")


def test_nothing_is_stale_right_after_anchoring(
    indexed: MemoryStore, memories: dict[str, str]
) -> None:
    report = indexed.verify_staleness()
    assert report.checked == 5
    assert report.anchors_checked == 6
    assert report.stale == ()
    assert "none stale" in render("verify_staleness", report)


def test_staleness_after_editing_and_deleting_code(
    indexed: MemoryStore, memories: dict[str, str], repo: Path
) -> None:
    # Moving code is not a change.
    edit(repo / "pkg" / "auth.py", '"""Authentication."""', '"""Authentication."""\n\n')
    assert indexed.verify_staleness().stale == ()
    edit(repo / "pkg" / "auth.py", 'f"token-{user}"', 'f"jwt-{user}"')
    edit(
        repo / "pkg" / "storage.py",
        "@functools.cache\ndef save(key, value):\n    return None\n",
        "",
    )
    report = indexed.verify_staleness()
    got = {(s.id, s.graph_node_id, s.reason) for s in report.stale}
    assert got == {
        (memories["login"], "pkg/auth.py::AuthService.login", "source changed"),
        (memories["service"], "pkg/auth.py::AuthService", "source changed"),
        (memories["save"], "pkg/storage.py::save", "symbol removed"),
        (memories["module"], "pkg/storage.py", "source changed"),
    }
    assert all(s.detail for s in report.stale)


def test_staleness_when_the_file_is_gone_or_broken(
    indexed: MemoryStore, memories: dict[str, str], repo: Path
) -> None:
    (repo / "pkg" / "storage.py").unlink()
    (repo / "pkg" / "auth.py").write_text(AUTH + "\ndef broken(:\n")
    reasons = {(s.id, s.file_path, s.reason) for s in indexed.verify_staleness().stale}
    assert (memories["save"], "pkg/storage.py", "file missing") in reasons
    assert (memories["load"], "pkg/storage.py", "file missing") in reasons
    assert (memories["load"], "pkg/auth.py", "file does not parse") in reasons
    assert (memories["service"], "pkg/auth.py", "file does not parse") in reasons


def test_a_memory_stored_after_a_change_is_fresh_while_the_old_one_is_stale(
    indexed: MemoryStore, memories: dict[str, str], repo: Path
) -> None:
    edit(repo / "pkg" / "auth.py", 'f"token-{user}"', 'f"jwt-{user}"')
    fresh = indexed.store("fact", "login returns a jwt", entities=["AuthService.login"])
    stale_ids = {s.id for s in indexed.verify_staleness().stale}
    assert memories["login"] in stale_ids and fresh not in stale_ids


def test_a_root_outside_the_store_folder_is_recorded(tmp_path: Path) -> None:
    project = make_repo(tmp_path / "project")
    graph = tmp_path / "home" / ".nervapack" / "graph.graphml"
    graph.parent.mkdir(parents=True)
    build_index(graph, project)
    with open_code_index(graph) as index:
        assert index.root == project.resolve()
        assert [s.file_path for s in index.lookup("AuthService")] == ["pkg/auth.py"]


# ----------------------------------------------------------------------------- hostile repositories
# The code8 audit: file names that are not UTF-8 or hold control characters, named
# pipes, leading spaces, a lone \r, NUL bytes.


def test_a_file_name_that_is_not_utf8_is_reported_and_the_rest_indexed(
    memory: MemoryStore, repo: Path
) -> None:
    bad = os.fsencode(repo / "pkg") + b"/bad\xffname.py"
    with open(bad, "wb") as handle:
        handle.write(b"def bad():\n    pass\n")
    result = memory.index_code()
    assert result.errors == ("pkg/bad\\xffname.py: the file name is not valid UTF-8; not indexed",)
    _, symbols = read_graphml(repo / ".nervapack" / "graph.graphml")  # still valid XML
    assert "pkg/auth.py::load" in {s.node_id for s in symbols}
    assert memory.store("fact", "load reads the file", entities=["auth.load"])


def test_a_folder_whose_path_is_not_utf8_is_refused_and_the_graph_kept(tmp_path: Path) -> None:
    graph = tmp_path / "store" / ".nervapack" / "graph.graphml"
    good = tmp_path / "good"
    good.mkdir()
    (good / "a.py").write_text("def a():\n    pass\n")
    build_index(graph, good)
    before = graph.read_bytes()
    folder = os.fsencode(tmp_path) + b"/\xffdir"
    os.mkdir(folder)
    with open(folder + b"/q.py", "wb") as handle:
        handle.write(b"def q():\n    pass\n")
    with pytest.raises(BadInputError, match="not valid UTF-8"):
        build_index(graph, os.fsdecode(folder))
    assert graph.read_bytes() == before


@pytest.mark.parametrize("suffix", [".js", ".ts", ".go"])
def test_a_lone_carriage_return_does_not_shift_a_tree_sitter_symbols_hash(suffix: str) -> None:
    """tree-sitter breaks rows at \\n only: a lone \\r in a comment above a function
    must not move the function's hash onto the lines above it, or an edit to its last
    line would go unnoticed."""
    pytest.importorskip("tree_sitter")
    from nervamem.code.parsing import GrammarMissing, source_symbols

    head = b"package p\n" if suffix == ".go" else b""
    body = {
        ".go": b"func f() int {\n\tx := 1\n\treturn x\n}\n",
        ".js": b"function f() {\n  let x = 1;\n  return x;\n}\n",
        ".ts": b"function f(): number {\n  let x = 1;\n  return x;\n}\n",
    }[suffix]
    source = head + b"// a\rcomment\n" + body
    edited = source.replace(b"}\n", b"} // end\n")
    try:
        before = {s.qualname: s for s in source_symbols(f"a{suffix}", source)}
    except GrammarMissing:
        pytest.skip("grammar not installed")
    after = {s.qualname: s for s in source_symbols(f"a{suffix}", edited)}
    f = before["f"]
    assert (f.start_line, f.end_line) == (2 + bool(head), 5 + bool(head))
    # A comment is no change to the code's tokens, but the lines hash (what anchors made
    # before token hashes compare with) must see the edit on f's own last line.
    assert after["f"].lines_hash != f.lines_hash
    crlf = source.replace(b"\n", b"\r\n")
    assert {s.qualname: s for s in source_symbols(f"a{suffix}", crlf)}["f"].source_hash == (
        f.source_hash
    )


def test_a_named_pipe_where_anchored_code_was_is_missing_not_a_hang(
    memory: MemoryStore, repo: Path
) -> None:
    memory.index_code()
    memory.store("fact", "load reads the file", entities=["auth.load"])
    target = repo / "pkg" / "auth.py"
    target.unlink()
    os.mkfifo(target)
    seen: dict[str, object] = {}
    reader = threading.Thread(
        target=lambda: seen.update(live=LiveSource(repo).symbols("pkg/auth.py")), daemon=True
    )
    reader.start()
    reader.join(10)
    if reader.is_alive():
        with open(target, "wb"):  # let the blocked reader go
            pass
        reader.join(10)
        pytest.fail("reading the anchored file blocked on a named pipe")
    assert seen["live"] == ("file missing", [])
    report = memory.verify_staleness()
    assert [(item.file_path, item.reason) for item in report.stale] == [
        ("pkg/auth.py", "file missing")
    ]


def test_a_file_name_with_a_leading_space_is_not_stale_right_after_anchoring(
    memory: MemoryStore, repo: Path
) -> None:
    """The anchor's recorded path was stripped when read back (' lead.py' became
    'lead.py'), so verification said 'file missing' at once."""
    (repo / " lead.py").write_text("def leading():\n    pass\n")
    memory.index_code()
    stored = memory.store("fact", "leading does nothing", entities=["leading"])
    assert memory.verify_staleness().stale == ()
    assert [a.file_path for a in memory.code_to(stored).anchors] == [" lead.py"]
    assert [item.id for item in memory.code_for(str(repo / " lead.py")).items] == [stored]


@pytest.mark.parametrize("name", ["ctl\x01name.py", "cr\rname.py"])
def test_a_file_name_xml_cannot_hold_is_reported_and_the_graph_stays_readable(
    memory: MemoryStore, repo: Path, name: str
) -> None:
    """A control character made graph.graphml XML no reader accepts (and a \\r came back
    as \\n): once the sidecar was gone, store anchored nothing."""
    (repo / "pkg" / name).write_text("def odd():\n    pass\n")
    result = memory.index_code()
    assert result.errors == (f"pkg/{name}: the file name holds a control character; not indexed",)
    graph = repo / ".nervapack" / "graph.graphml"
    (repo / ".nervapack" / "graph-index.sqlite").unlink()
    _, symbols = read_graphml(graph)
    assert "pkg/auth.py::load" in {s.node_id for s in symbols}
    stored = memory.store("fact", "load reads the file", entities=["auth.load"])
    assert [a.graph_node_id for a in memory.code_to(stored).anchors] == ["pkg/auth.py::load"]


def test_a_quoted_name_with_a_control_character_keeps_the_graph_readable(
    memory: MemoryStore, repo: Path
) -> None:
    pytest.importorskip("tree_sitter_typescript")
    (repo / "pkg" / "odd.ts").write_bytes(
        b'declare module "a\x01b" {\n  export function f(): void;\n}\n'
        b'class A {\n  "we\x02ird"() { return 1; }\n}\n'
    )
    result = memory.index_code()
    assert not result.errors and result.languages.get("TypeScript") == 1
    (repo / ".nervapack" / "graph-index.sqlite").unlink()
    _, symbols = read_graphml(repo / ".nervapack" / "graph.graphml")
    assert {"pkg/odd.ts::a\ufffdb.f", "pkg/odd.ts::A.we\ufffdird"} <= {s.node_id for s in symbols}


def test_a_leading_space_survives_a_sidecar_rebuilt_from_the_graph(
    memory: MemoryStore, repo: Path
) -> None:
    (repo / " lead.py").write_text("def leading():\n    pass\n")
    memory.index_code()
    (repo / ".nervapack" / "graph-index.sqlite").unlink()  # a cache: deleting it is allowed
    _, symbols = read_graphml(repo / ".nervapack" / "graph.graphml")
    assert {s.file_path for s in symbols if s.node_id.startswith(" lead.py")} == {" lead.py"}
    memory.store("fact", "leading does nothing", entities=["leading"])
    assert memory.verify_staleness().stale == ()


@pytest.mark.parametrize("target", ["~\x00/x.py", "pkg/a\x00.py:3"])
def test_a_nul_byte_in_a_code_path_is_bad_input(memory: MemoryStore, target: str) -> None:
    """Through MCP a path may hold a NUL byte: '~\\0' was a ValueError (internal)."""
    with pytest.raises(BadInputError, match="NUL"):
        memory.code_for(target)
    with pytest.raises(BadInputError, match="NUL"):
        memory.index_code(target)
