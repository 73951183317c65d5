"""The graph as each language's users see it (issue 37): Go methods under their receiver
type, Go consts and vars, Rust macros, consts and statics, Java fields, JavaScript
object-literal methods and default exports; build and dependency folders skipped outside
git, and a ``.nervamemignore`` for the rest."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from nervamem import MemoryStore
from nervamem.code.files import list_source_files
from nervamem.code.parsing import GrammarMissing, source_symbols

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL


def _symbols(path: str, source: str) -> list[tuple[str, str, str | None]]:
    try:
        found = source_symbols(path, textwrap.dedent(source).lstrip().encode())
    except GrammarMissing:
        pytest.skip("grammar not installed")
    return [(s.kind, s.qualname, s.parent) for s in found[1:]]


def test_go_methods_hang_off_their_type_and_consts_and_vars_are_symbols() -> None:
    found = _symbols(
        "p/s.go",
        """
        package p

        func (s *Store) Get() int { return s.n }

        type Store struct{ n int }

        const Limit = 10

        var (
        \tcount, total int
        )
        """,
    )
    assert found == [
        ("method", "Store.Get", "p/s.go::Store"),
        ("struct", "Store", "p/s.go"),
        ("constant", "Limit", "p/s.go"),
        ("variable", "count", "p/s.go"),
        ("variable", "total", "p/s.go"),
    ]


def test_rust_macros_consts_and_statics_are_symbols() -> None:
    found = _symbols(
        "src/lib.rs",
        """
        macro_rules! square { ($x:expr) => { $x * $x }; }
        pub const LIMIT: u32 = 10;
        static NAME: &str = "n";
        impl Store { const CAP: usize = 4; }
        """,
    )
    assert [(kind, name) for kind, name, _ in found] == [
        ("macro", "square"),
        ("constant", "LIMIT"),
        ("static", "NAME"),
        ("impl", "impl Store"),
        ("constant", "Store::CAP"),
    ]


def test_java_fields_are_symbols_of_their_class() -> None:
    found = _symbols(
        "M.java",
        """
        package x;
        class Store { private int size, cap = 2; static final String NAME = "s"; }
        """,
    )
    assert found[1:] == [
        ("field", "Store.size", "M.java::Store"),
        ("field", "Store.cap", "M.java::Store"),
        ("field", "Store.NAME", "M.java::Store"),
    ]


def test_javascript_object_literal_methods_and_default_exports_are_symbols() -> None:
    found = _symbols(
        "api.js",
        """
        const api = { get(id) { return id }, post: (x) => x, limit: 3 };
        export default function () {}
        """,
    )
    assert [(kind, name) for kind, name, _ in found] == [
        ("method", "api.get"),
        ("method", "api.post"),
        ("function", "default"),
    ]
    vue = _symbols("c.js", "export default { data() { return {} } }\n")
    assert [(kind, name) for kind, name, _ in vue] == [("method", "default.data")]


def test_an_object_literal_method_is_anchored_by_its_name(
    tmp_path: Path, make_store: Callable[..., MemoryStore]
) -> None:
    pytest.importorskip("tree_sitter_javascript")
    repo = tmp_path / "repo"
    (repo / ".nervapack").mkdir(parents=True)
    (repo / "api.js").write_text("const api = {\n  get(id) {\n    return id\n  },\n};\n")
    memory = make_store(repo / ".nervapack" / "memory.db")
    memory.index_code()
    node_id = memory.store("fact", "get is idempotent", entities=["api.get"])
    assert [(a.qualname, a.start_line, a.end_line) for a in memory.code_to(node_id).anchors] == [
        ("api.get", 2, 4)
    ]


def test_build_and_dependency_folders_are_skipped_outside_git(tmp_path: Path) -> None:
    root = tmp_path / "plain"  # no git work tree here
    for rel in (
        "src/main.rs",
        "target/debug/build/gen.rs",
        "dist/bundle.js",
        "vendor/lib/x.go",
        "node_modules/m/index.js",
        "app/app.js",
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("\n")
    assert list_source_files(root) == ["app/app.js", "src/main.rs"]


def test_nervamemignore_leaves_out_what_it_names(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    for rel in ("gen/a_pb.go", "src/a.go", "src/b_pb.go", "src/keep_pb.go", "docs/x/y.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("\n")
    (root / ".nervamemignore").write_text("# generated\ngen/\n*_pb.go\n!keep_pb.go\n/docs/**\n")
    assert list_source_files(root) == ["src/a.go", "src/keep_pb.go"]
