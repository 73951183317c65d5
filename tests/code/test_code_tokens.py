"""Token hashes (issue 37): what a formatter does to a symbol is no change to its hash,
what changes what the code does is, in every language the bridge reads."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from nervamem import MemoryStore
from nervamem.code.parsing import GrammarMissing, source_symbols
from nervamem.code.symbols import LINES_SCHEME

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL

# (file, source, what a formatter makes of it, a change to what it does)
CASES = {
    "Python": (
        "m.py",
        "@cache\ndef load(path, mode = 'r'):\n"
        "  '''Read a file.\n\n     Whole.'''\n"
        "  return (open(path, mode).read())  # all of it\n",
        '@cache\ndef load(\n    path,\n    mode="r",\n):\n'
        '    """Read a file.\n\n    Whole."""\n'
        "    # all of it\n    return open(path, mode).read()\n",
        "@cache\ndef load(path, mode = 'rb'):\n"
        "  '''Read a file.\n\n     Whole.'''\n"
        "  return (open(path, mode).read())  # all of it\n",
    ),
    "Go": (
        "m.go",
        "package m\n\nfunc load(path string) (string, error) {\n"
        "  data, err := os.ReadFile(path) // whole\n  return string(data),err\n}\n",
        "package m\n\nfunc load(path string) (string, error) {\n"
        "\t// whole\n\tdata, err := os.ReadFile(path)\n\treturn string(data), err\n}\n",
        "package m\n\nfunc load(path string) (string, error) {\n"
        '  data, err := os.ReadFile(path) // whole\n  return string(data)+"",err\n}\n',
    ),
    "Rust": (
        "src/m.rs",
        "fn load(path: &str) -> (String, u8) {\n    let t = (1,);\n"
        "    (std::fs::read_to_string(path).unwrap(), t.0,)\n}\n",
        "fn load(path: &str) -> (String, u8) {\n  let t = (1,);\n"
        "  (\n    std::fs::read_to_string(path).unwrap(),\n    t.0\n  )\n}\n",
        # (1,) is a one-element tuple, (1) is the number 1: a change.
        "fn load(path: &str) -> (String, u8) {\n    let t = (1);\n"
        "    (std::fs::read_to_string(path).unwrap(), t.0,)\n}\n",
    ),
    "Java": (
        "M.java",
        "class M {\n  String load(String path) {\n    return read(path, 'r');\n  }\n}\n",
        "class M {\n    String load(String path)\n    {\n        /* read */ return read(\n"
        "            path, 'r');\n    }\n}\n",
        "class M {\n  String load(String path) {\n    return read(path, 'w');\n  }\n}\n",
    ),
    "JavaScript": (
        "m.js",
        "const load = path => {\n  return read(path, 'it\\'s', [1, 2])\n}\n",
        'const load = (path) => {\n  return read(\n    path,\n    "it\'s",\n'
        "    [1, 2,],\n  );\n};\n",
        "const load = path => {\n  return read(path, 'its', [1, 2])\n}\n",
    ),
}


@pytest.mark.parametrize("language", sorted(CASES))
def test_a_formatter_run_changes_no_hash_and_a_code_change_does(language: str) -> None:
    path, source, formatted, changed = CASES[language]
    try:
        before = {s.name: s for s in source_symbols(path, source.encode())}
    except GrammarMissing:
        pytest.skip("grammar not installed")
    after = {s.name: s for s in source_symbols(path, formatted.encode())}
    edited = {s.name: s for s in source_symbols(path, changed.encode())}
    load = before["load"]
    assert load.parse_error is None and after["load"].parse_error is None
    assert after["load"].source_hash == load.source_hash
    assert after["load"].lines_hash != load.lines_hash  # the layout did change
    assert edited["load"].source_hash != load.source_hash


def test_a_string_contents_change_is_a_change_but_its_quotes_are_not_in_javascript() -> None:
    pytest.importorskip("tree_sitter")
    symbols = [
        {s.qualname: s for s in source_symbols("m.ts", text.encode())}["f"].source_hash
        for text in (
            "function f() { return 'a  b' }\n",
            'function f() {\n  return "a  b";\n}\n',
            "function f() { return 'a b' }\n",
        )
    ]
    assert symbols[0] == symbols[1] != symbols[2]


def test_an_anchor_recorded_with_line_hashes_is_still_verified(
    tmp_path: Path, make_store: Callable[..., MemoryStore]
) -> None:
    """Anchors stored before token hashes carry sha256-lines-16: verification compares
    them with the lines hash, as it always did, not with the new token hash."""
    repo = tmp_path / "repo"
    (repo / ".nervapack").mkdir(parents=True)
    module = repo / "m.py"
    module.write_text("def load(path):\n    return open(path).read()\n")
    memory = make_store(repo / ".nervapack" / "memory.db")
    memory.index_code()
    node_id = memory.store("fact", "load reads it all", entities=["load"])
    live = source_symbols("m.py", module.read_bytes())[1]
    old = {
        "anchors": [
            {
                "file_path": "m.py",
                "start_line": 1,
                "end_line": 2,
                "graph_node_id": "m.py::load",
                "qualname": "load",
                "kind": "function",
                "source_hash": live.lines_hash,
                "hash_scheme": LINES_SCHEME,
            }
        ]
    }
    with memory.storage.transaction():  # an old store's record, written as it was
        memory.storage.connection.execute(
            "UPDATE mem_edges SET data = ? WHERE src = ? AND kind = 'TOUCHES'",
            (json.dumps(old), node_id),
        )
    assert memory.verify_staleness().stale == ()
    assert memory.code_to(node_id).anchors[0].state == "fresh"
    module.write_text("def load(path):\n    return open(path).read(10)\n")
    assert [s.reason for s in memory.verify_staleness().stale] == ["source changed"]


def test_rustfmt_rewrapping_arms_closures_and_calls_is_no_change() -> None:
    """What rustfmt does at another width: a lone expression of a match arm or a
    closure gains or loses its braces, a call's arguments gain a trailing comma."""
    pytest.importorskip("tree_sitter_rust")
    wide = (
        "fn f(x: Option<u8>) -> u8 {\n    let g = |y| y + 1;\n"
        "    match x {\n        Some(v) => g(v),\n        None => 0,\n    }\n}\n"
    )
    narrow = (
        "fn f(x: Option<u8>) -> u8 {\n  let g = |y| {\n    y + 1\n  };\n"
        "  match x {\n    Some(v) => {\n      g(\n        v,\n      )\n    }\n"
        "    None => 0,\n  }\n}\n"
    )
    statement = wide.replace("Some(v) => g(v),", "Some(v) => { g(v); }")
    hashes = [
        {s.name: s for s in source_symbols("src/m.rs", text.encode())}["f"].source_hash
        for text in (wide, narrow, statement)
    ]
    assert hashes[0] == hashes[1] != hashes[2]


def test_rustfmt_trailing_commas_in_generics_parameters_and_block_arms_are_no_change() -> None:
    pytest.importorskip("tree_sitter_rust")
    wide = (
        "fn g<F: Float>(mut s: S) -> F {\n    match s.t() {\n"
        "        Ok(v) => {\n            s.n(v);\n            v\n        }\n"
        "        Err(_) => 0,\n    }\n}\nstruct E<'a, W: 'a + Write>(&'a mut W);\n"
    )
    narrow = (
        "fn g<F: Float>(\n  mut s: S,\n) -> F {\n  match s.t() {\n"
        "    Ok(v) => {\n      s.n(v);\n      v\n    },\n"
        "    Err(_) => 0,\n  }\n}\nstruct E<\n  'a,\n  W: 'a + Write,\n>(&'a mut W);\n"
    )
    before = {s.name: s.source_hash for s in source_symbols("src/m.rs", wide.encode())}
    after = {s.name: s.source_hash for s in source_symbols("src/m.rs", narrow.encode())}
    assert (after["g"], after["E"]) == (before["g"], before["E"])


def test_the_views_read_a_file_unchanged_since_the_index_from_the_graph(
    tmp_path: Path, make_store: Callable[..., MemoryStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """code-for, code-to and show give each anchor's state without parsing a file that
    has not changed since it was indexed (the graph holds its symbols and hashes); an
    edited file is parsed again."""
    import os

    from nervamem.code import live

    repo = tmp_path / "repo"
    (repo / ".nervapack").mkdir(parents=True)
    module = repo / "m.py"
    module.write_text("\n\ndef load(path):\n    return open(path).read()\n")
    an_hour_ago = module.stat().st_mtime_ns - 3600 * 10**9
    os.utime(module, ns=(an_hour_ago, an_hour_ago))  # outside the racy window
    memory = make_store(repo / ".nervapack" / "memory.db")
    memory.index_code()
    node_id = memory.store("fact", "load reads it all", entities=["load"])

    def no_parse(*args: object) -> object:
        raise AssertionError("parsed a file the graph holds")

    monkeypatch.setattr(live, "source_symbols", no_parse)
    assert [a.state for a in memory.code_to(node_id).anchors] == ["fresh"]
    assert [i.id for i in memory.code_for("m.py", cwd=repo).items] == [node_id]
    monkeypatch.undo()
    module.write_text("def load(path):\n    return open(path).read()\n")
    anchor = memory.code_to(node_id).anchors[0]
    assert (anchor.state, anchor.lines_now) == ("moved", (1, 2))
