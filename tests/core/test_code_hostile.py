"""The code bridge on hostile repositories (the code8 audit): file names that are not
UTF-8, and the other things real repositories hold, on real files and a real git
repository in tmp_path."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from nervamem import MemoryStore
from nervamem.code.graph_file import read_graphml
from nervamem.code.indexing import build_index
from nervamem.code.live import LiveSource
from nervamem.errors import BadInputError
from tests.core.test_codegraph import make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def memory(repo: Path, make_store: Callable[..., MemoryStore]) -> MemoryStore:
    return make_store(repo / ".nervapack" / "memory.db")


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
    assert after["f"].source_hash != f.source_hash
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
