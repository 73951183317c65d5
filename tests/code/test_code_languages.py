"""The code bridge beyond Python: Go, Rust, Java, TypeScript and JavaScript through
tree-sitter, next to Python through ``ast``, on small repositories written here (a real
store, a real index, real edits; no CLI).

One table of edits and staleness verdicts runs for every language, Python included, so
the languages cannot drift apart."""

from __future__ import annotations

import json
import os
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nervamem import MemoryStore
from nervamem.code import treesitter
from nervamem.code.languages import SourceLanguage, language_of
from nervamem.code.parsing import source_symbols
from nervamem.code.symbols import hash_lines, python_symbols
from nervamem.code.treesitter import GrammarMissing, rust_module
from nervamem.code.values import (
    REASON_FILE_MISSING,
    REASON_SOURCE_CHANGED,
    REASON_SYMBOL_REMOVED,
    REASON_UNPARSABLE,
)

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL


@dataclass(frozen=True)
class Fixture:
    """One language's file: a class-like ``SessionStore`` with a method whose body holds
    ``1041``, and a function ``other`` whose body holds ``2007``."""

    language: str
    path: str
    source: str
    method: str  # the method's name as written
    method_text: str  # the method's whole text, to delete it
    qualified: str  # the method's name as the language's users write it
    node_id: str


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


FIXTURES = {
    "Python": Fixture(
        "Python",
        "auth/session.py",
        _src("""
            class SessionStore:
                ttl = 5

                @property
                def refresh(self):
                    return 1041


            def other():
                return 2007
            """),
        "refresh",
        "    @property\n    def refresh(self):\n        return 1041\n",
        "auth.session.SessionStore.refresh",
        "auth/session.py::SessionStore.refresh",
    ),
    "Go": Fixture(
        "Go",
        "auth/session.go",
        _src("""
            package auth

            type SessionStore struct {
            \tttl int
            }

            func (s *SessionStore) Refresh() int {
            \treturn 1041
            }

            func Other() int {
            \treturn 2007
            }
            """),
        "Refresh",
        "func (s *SessionStore) Refresh() int {\n\treturn 1041\n}\n",
        "auth.SessionStore.Refresh",
        "auth/session.go::SessionStore.Refresh",
    ),
    "Rust": Fixture(
        "Rust",
        "src/auth/session.rs",
        _src("""
            pub struct SessionStore {
                ttl: u32,
            }

            impl SessionStore {
                #[inline]
                pub fn refresh(&self) -> u32 {
                    1041
                }
            }

            pub fn other() -> u32 {
                2007
            }
            """),
        "refresh",
        "    #[inline]\n    pub fn refresh(&self) -> u32 {\n        1041\n    }\n",
        "crate::auth::session::SessionStore::refresh",
        "src/auth/session.rs::SessionStore::refresh",
    ),
    "Java": Fixture(
        "Java",
        "src/main/java/com/example/auth/SessionStore.java",
        _src("""
            package com.example.auth;

            public class SessionStore {
                private int ttl = 5;

                @Deprecated
                public int refresh() {
                    return 1041;
                }

                static int other() {
                    return 2007;
                }
            }
            """),
        "refresh",
        "    @Deprecated\n    public int refresh() {\n        return 1041;\n    }\n",
        "com.example.auth.SessionStore.refresh",
        "src/main/java/com/example/auth/SessionStore.java::SessionStore.refresh",
    ),
    "TypeScript": Fixture(
        "TypeScript",
        "src/auth/session.ts",
        _src("""
            export class SessionStore {
              private ttl = 5;

              refresh(): number {
                return 1041;
              }
            }

            export function other(): number {
              return 2007;
            }
            """),
        "refresh",
        "  refresh(): number {\n    return 1041;\n  }\n",
        "src/auth/session.ts::SessionStore.refresh",
        "src/auth/session.ts::SessionStore.refresh",
    ),
    "JavaScript": Fixture(
        "JavaScript",
        "lib/auth/session.js",
        _src("""
            class SessionStore {
              constructor() {
                this.ttl = 5;
              }

              refresh() {
                return 1041;
              }
            }

            const other = () => {
              return 2007;
            };

            module.exports = { SessionStore, other };
            """),
        "refresh",
        "  refresh() {\n    return 1041;\n  }\n",
        "lib/auth/session.js::SessionStore.refresh",
        "lib/auth/session.js::SessionStore.refresh",
    ),
}
LANGUAGES = list(FIXTURES)


def write_repo(root: Path, fixtures: list[Fixture]) -> Path:
    """The files, dated a minute back so that the index trusts their stat stamps."""
    (root / ".nervapack").mkdir(parents=True)
    past = time.time() - 60
    for fixture in fixtures:
        path = root / fixture.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(fixture.source)
        os.utime(path, (past, past))
    return root


def touches(store: MemoryStore, node_id: str) -> list[str]:
    rows = store.connection.execute(
        "SELECT data FROM mem_edges WHERE src = ? AND kind = 'TOUCHES'", (node_id,)
    ).fetchall()
    return sorted(a["graph_node_id"] for row in rows for a in json.loads(row[0])["anchors"])


@pytest.fixture
def open_repo(
    tmp_path: Path, make_store: Callable[..., MemoryStore]
) -> Callable[[list[Fixture]], tuple[Path, MemoryStore]]:
    def factory(fixtures: list[Fixture]) -> tuple[Path, MemoryStore]:
        root = write_repo(tmp_path / "repo", fixtures)
        return root, make_store(root / ".nervapack" / "memory.db")

    return factory


# ----------------------------------------------------------------------------- staleness


def _rewrite(root: Path, fixture: Fixture, old: str, new: str) -> None:
    path = root / fixture.path
    text = path.read_text()
    assert old in text, (fixture.language, old)
    path.write_text(text.replace(old, new))


EDITS: dict[str, tuple[Callable[[Path, Fixture], None], str | None]] = {
    "nothing": (lambda root, f: None, None),
    "body change": (lambda root, f: _rewrite(root, f, "1041", "1042"), REASON_SOURCE_CHANGED),
    "lines shifted above": (
        lambda root, f: (root / f.path).write_text("\n\n\n" + f.source),
        None,
    ),
    "another symbol edited": (lambda root, f: _rewrite(root, f, "2007", "2008"), None),
    "rename": (
        lambda root, f: _rewrite(root, f, f.method, f.method + "Later"),
        REASON_SYMBOL_REMOVED,
    ),
    "symbol deleted": (
        lambda root, f: _rewrite(root, f, f.method_text, ""),
        REASON_SYMBOL_REMOVED,
    ),
    "file deleted": (lambda root, f: (root / f.path).unlink(), REASON_FILE_MISSING),
    "syntax error": (
        lambda root, f: (root / f.path).write_text(f.source + "\n@@@ ((( {\n"),
        REASON_UNPARSABLE,
    ),
}


@pytest.mark.parametrize("edit", list(EDITS))
@pytest.mark.parametrize("language", LANGUAGES)
def test_staleness_after_real_edits_is_the_same_in_every_language(
    open_repo: Callable[[list[Fixture]], tuple[Path, MemoryStore]], language: str, edit: str
) -> None:
    fixture = FIXTURES[language]
    root, store = open_repo([fixture])
    result = store.index_code()
    assert (result.parsed, result.errors, result.skipped) == (1, (), ())
    memory = store.store("decision", "refresh must stay idempotent", entities=[fixture.qualified])
    assert touches(store, memory) == [fixture.node_id]
    assert store.verify_staleness().stale == ()

    change, verdict = EDITS[edit]
    change(root, fixture)
    report = store.verify_staleness()
    assert report.checked == 1
    assert [(s.id, s.reason) for s in report.stale] == ([(memory, verdict)] if verdict else [])


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_memory_anchored_after_the_edit_is_fresh(
    open_repo: Callable[[list[Fixture]], tuple[Path, MemoryStore]], language: str
) -> None:
    """The graph is older than the code: the anchor is taken from the file as it is."""
    fixture = FIXTURES[language]
    root, store = open_repo([fixture])
    store.index_code()
    _rewrite(root, fixture, "1041", "1042\n" if language == "Python" else "1042")
    old = store.verify_staleness()
    memory = store.store("fact", "refresh returns 1042", entities=[fixture.qualified])
    assert old.stale == ()
    assert store.verify_staleness().stale == ()
    assert touches(store, memory) == [fixture.node_id]


# ----------------------------------------------------------------------------- names

NAMES = {
    "Python": [
        ("auth.session.SessionStore.refresh", "auth/session.py::SessionStore.refresh"),
        ("SessionStore.refresh", "auth/session.py::SessionStore.refresh"),
        ("auth/session.py::SessionStore.refresh", "auth/session.py::SessionStore.refresh"),
        ("other", "auth/session.py::other"),
        ("session.py", "auth/session.py"),
    ],
    "Go": [
        ("auth.SessionStore.Refresh", "auth/session.go::SessionStore.Refresh"),
        ("SessionStore.Refresh", "auth/session.go::SessionStore.Refresh"),
        ("session_store.refresh", "auth/session.go::SessionStore.Refresh"),
        ("auth/session.go::SessionStore.Refresh", "auth/session.go::SessionStore.Refresh"),
        ("auth.Other", "auth/session.go::Other"),
        ("SessionStore", "auth/session.go::SessionStore"),
        ("session.go", "auth/session.go"),
    ],
    "Rust": [
        (
            "crate::auth::session::SessionStore::refresh",
            "src/auth/session.rs::SessionStore::refresh",
        ),
        ("session::SessionStore::refresh", "src/auth/session.rs::SessionStore::refresh"),
        ("SessionStore::refresh", "src/auth/session.rs::SessionStore::refresh"),
        (
            "src/auth/session.rs::SessionStore::refresh",
            "src/auth/session.rs::SessionStore::refresh",
        ),
        ("crate::auth::session::other", "src/auth/session.rs::other"),
        ("SessionStore", "src/auth/session.rs::SessionStore"),
        ("impl SessionStore", "src/auth/session.rs::impl SessionStore"),
        ("crate::auth::session", "src/auth/session.rs"),
    ],
    "Java": [
        (
            "com.example.auth.SessionStore.refresh",
            "src/main/java/com/example/auth/SessionStore.java::SessionStore.refresh",
        ),
        (
            "SessionStore.refresh",
            "src/main/java/com/example/auth/SessionStore.java::SessionStore.refresh",
        ),
        ("SessionStore", "src/main/java/com/example/auth/SessionStore.java::SessionStore"),
        (
            "com.example.auth.SessionStore.other",
            "src/main/java/com/example/auth/SessionStore.java::SessionStore.other",
        ),
        ("SessionStore.java", "src/main/java/com/example/auth/SessionStore.java"),
    ],
    "TypeScript": [
        ("src/auth/session.ts::SessionStore.refresh", "src/auth/session.ts::SessionStore.refresh"),
        ("SessionStore.refresh", "src/auth/session.ts::SessionStore.refresh"),
        ("session.SessionStore.refresh", "src/auth/session.ts::SessionStore.refresh"),
        ("other", "src/auth/session.ts::other"),
        ("src/auth/session.ts", "src/auth/session.ts"),
    ],
    "JavaScript": [
        ("lib/auth/session.js::SessionStore.refresh", "lib/auth/session.js::SessionStore.refresh"),
        ("SessionStore.refresh", "lib/auth/session.js::SessionStore.refresh"),
        ("SessionStore.constructor", "lib/auth/session.js::SessionStore.constructor"),
        ("other", "lib/auth/session.js::other"),
        ("session.js", "lib/auth/session.js"),
    ],
}


@pytest.mark.parametrize(
    ("language", "name", "node_id"),
    [(language, name, node_id) for language, pairs in NAMES.items() for name, node_id in pairs],
)
def test_qualified_names_as_each_language_writes_them(
    open_repo: Callable[[list[Fixture]], tuple[Path, MemoryStore]],
    language: str,
    name: str,
    node_id: str,
) -> None:
    _, store = open_repo([FIXTURES[language]])
    store.index_code()
    memory = store.store("fact", "about the code", entities=[name])
    assert touches(store, memory) == [node_id]


SHAPES = {
    "auth/store.go": (
        """
        package auth

        // Store keeps sessions.
        type Store[T any] struct{ items []T }

        func (s *Store[T]) Put(item T) { s.items = append(s.items, item) }

        type (
        \tID int
        \tKeeper interface {
        \t\tKeep(id ID) error
        \t}
        )

        func New() *Store[int] { return nil }
        """,
        [
            ("struct", "Store", 4, 4),
            ("method", "Store.Put", 6, 6),
            ("type", "ID", 9, 9),
            ("interface", "Keeper", 10, 12),
            ("method", "Keeper.Keep", 11, 11),
            ("function", "New", 15, 15),
        ],
    ),
    "src/store/mod.rs": (
        """
        use std::fmt;

        /// A store.
        #[derive(Debug)]
        pub struct Store<T> {
            items: Vec<T>,
        }

        impl<T> fmt::Display for Store<T> {
            fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { Ok(()) }
        }

        pub trait Keeper {
            fn keep(&self);
            fn forget(&self) {}
        }

        pub enum Kind { A, B }

        #[cfg(test)]
        mod tests {
            #[test]
            fn keeps() {}
        }
        """,
        [
            ("struct", "Store", 4, 7),
            ("impl", "impl Display for Store", 9, 11),
            ("method", "Store::fmt", 10, 10),
            ("trait", "Keeper", 13, 16),
            ("method", "Keeper::keep", 14, 14),
            ("method", "Keeper::forget", 15, 15),
            ("enum", "Kind", 18, 18),
            ("namespace", "tests", 20, 24),
            ("function", "tests::keeps", 22, 23),
        ],
    ),
    "Store.java": (
        """
        package com.example;

        @Component
        public class Store<T> {
            Store() {}

            static class Entry { void touch() {} }

            interface Listener { void changed(); }

            enum State { OPEN; boolean open() { return true; } }
        }
        """,
        [
            ("class", "Store", 3, 12),
            ("method", "Store.Store", 5, 5),
            ("class", "Store.Entry", 7, 7),
            ("method", "Store.Entry.touch", 7, 7),
            ("interface", "Store.Listener", 9, 9),
            ("method", "Store.Listener.changed", 9, 9),
            ("enum", "Store.State", 11, 11),
            ("method", "Store.State.open", 11, 11),
        ],
    ),
    "src/store.ts": (
        """
        export interface Keeper { keep(id: number): void; size: number }

        export abstract class Store<T> implements Keeper {
          @logged()
          keep(id: number): void {
            function inner() {}
          }
          onChange = () => {};
          abstract size: number;
        }

        export namespace Stores {
          export const make = (): number => 1;
        }

        export enum Kind { A }
        export type Id = number;
        export default function () {}
        """,
        [
            ("interface", "Keeper", 1, 1),
            ("method", "Keeper.keep", 1, 1),
            ("class", "Store", 3, 10),
            ("method", "Store.keep", 4, 7),
            ("function", "Store.keep.inner", 6, 6),
            ("method", "Store.onChange", 8, 8),
            ("namespace", "Stores", 12, 14),
            ("function", "Stores.make", 13, 13),
            ("enum", "Kind", 16, 16),
            ("type", "Id", 17, 17),
            ("function", "default", 18, 18),  # an anonymous default export
        ],
    ),
    "src/overloads.ts": (
        """
        /** By name. */
        export function find(name: string): number;
        /** By id. */
        export function find(id: number): number;
        export function find(key: string | number): number {
          return 0;
        }

        class Cache {
          get(key: string): string;
          @traced
          get(key: number): string {
            return "";
          }
        }

        declare function log(text: string): void;
        declare function log(code: number): void;
        """,
        [
            ("function", "find", 2, 7),
            ("class", "Cache", 9, 15),
            ("method", "Cache.get", 10, 14),
            ("function", "log", 17, 18),
        ],
    ),
    "lib/bundle.js": (
        """
        ;(function() {
          function helper() {}

          var runInContext = (function runInContext(context) {
            function baseGet() {}
            return baseGet;
          });
        }.call(this));
        """,
        [
            ("function", "helper", 2, 2),
            ("function", "runInContext", 4, 7),
            ("function", "runInContext.baseGet", 5, 5),
        ],
    ),
}


@pytest.mark.parametrize("path", list(SHAPES))
def test_each_language_yields_its_own_kinds_of_symbol_with_their_spans(path: str) -> None:
    source, expected = SHAPES[path]
    symbols = source_symbols(path, _src(source).encode())
    assert symbols[0].kind == "module" and symbols[0].parse_error is None
    assert [(s.kind, s.qualname, s.start_line, s.end_line) for s in symbols[1:]] == expected
    assert all(s.parent for s in symbols[1:])


@pytest.mark.parametrize(
    ("path", "module"),
    [
        ("src/lib.rs", "crate"),
        ("src/main.rs", "crate"),
        ("src/auth/mod.rs", "crate::auth"),
        ("src/auth/session.rs", "crate::auth::session"),
        ("crates/core/src/db.rs", "crate::db"),
        ("tests/smoke.rs", "tests::smoke"),
    ],
)
def test_rust_modules_follow_the_file_path(path: str, module: str) -> None:
    assert rust_module(path) == module


def test_hashes_and_spans_match_the_python_path() -> None:
    """The same text hashes the same whichever parser found its lines."""
    python = python_symbols("m.py", b"def f():\n    return 1\n")[1]
    script = source_symbols("m.js", b"function f() {\n    return 1\n}\n")[1]
    assert (python.start_line, python.end_line) == (1, 2)
    assert (script.start_line, script.end_line) == (1, 3)
    moved = source_symbols("m.js", b"\n\nfunction f() {\n    return 1\n}\n")[1]
    assert (moved.start_line, moved.source_hash) == (3, script.source_hash)


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_file_that_does_not_parse_yields_its_module_alone(language: str) -> None:
    fixture = FIXTURES[language]
    symbols = source_symbols(fixture.path, (fixture.source + "\n@@@ ((( {\n").encode())
    assert [s.kind for s in symbols] == ["module"]
    assert symbols[0].parse_error and "line" in symbols[0].parse_error


# ----------------------------------------------------------------------------- mixed repos


def test_a_mixed_repository_indexes_in_one_pass_and_incrementally(
    open_repo: Callable[[list[Fixture]], tuple[Path, MemoryStore]],
) -> None:
    root, store = open_repo(list(FIXTURES.values()))
    first = store.index_code()
    assert (first.files, first.parsed, first.reused, first.written) == (6, 6, 0, True)
    assert first.languages == dict.fromkeys(sorted(LANGUAGES), 1)
    # One graph and one sidecar per store, whatever the languages.
    graphs = [p.name for p in (root / ".nervapack").iterdir() if p.name.startswith("graph")]
    assert sorted(graphs) == ["graph-index.sqlite", "graph.graphml"]
    again = store.index_code()
    assert (again.parsed, again.reused, again.written) == (0, 6, False)

    _rewrite(root, FIXTURES["Go"], "2007", "2008")
    _rewrite(root, FIXTURES["Rust"], "2007", "2008")
    after = store.index_code()
    assert (after.parsed, after.reused, after.written) == (2, 4, True)

    # The same dotted name exists in five languages: anchored to each, said so.
    node, report = store.store_anchored("fact", "refresh is idempotent", entities=["refresh"])
    assert report is not None and report.ambiguous == ("refresh",)
    assert touches(store, node) == sorted(f.node_id for f in FIXTURES.values())


def test_a_missing_grammar_skips_the_file_and_says_so(
    open_repo: Callable[[list[Fixture]], tuple[Path, MemoryStore]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = treesitter.load_grammar

    def without_go(language: SourceLanguage) -> object:
        if language.name == "Go":
            raise GrammarMissing("no tree-sitter grammar for Go is installed")
        return real(language)

    _, store = open_repo([FIXTURES["Go"], FIXTURES["Python"], FIXTURES["Rust"]])
    memory = store.store("fact", "nothing yet", entities=["auth.SessionStore.Refresh"])
    assert touches(store, memory) == []  # no graph yet
    assert store.index_code().anchored == 1  # the name resolves now: anchored by the index
    anchored = store.store("fact", "Go refresh", entities=["auth.SessionStore.Refresh"])
    assert touches(store, memory) != [] and touches(store, anchored) != []
    (store.path.parent / "graph.graphml").unlink()

    monkeypatch.setattr(treesitter, "load_grammar", without_go)
    result = store.index_code()
    assert [(s.file_path, s.language) for s in result.skipped] == [("auth/session.go", "Go")]
    assert "no tree-sitter grammar for Go" in result.skipped[0].reason
    assert result.languages == {"Python": 1, "Rust": 1}
    assert (result.files, result.parsed) == (2, 2)
    # Verification cannot read the file now: unverifiable, never stale.
    report = store.verify_staleness()
    assert (report.stale, report.unverifiable) == ((), 2)


def test_the_grammar_loader_reports_a_package_that_is_not_installed() -> None:
    absent = SourceLanguage("Cobol", "tree_sitter_cobol_absent", "language", ".")
    with pytest.raises(GrammarMissing, match="Cobol"):
        treesitter.load_grammar(absent)
    assert language_of("x.cob") is None


# ----------------------------------------------------------------------------- invariants

COMMENT = {
    "Python": "# note",
    "Go": "// note",
    "Rust": "// note",
    "Java": "// note",
    "TypeScript": "// note",
    "JavaScript": "// note",
}


@settings(max_examples=40, deadline=None)
@given(
    language=st.sampled_from(LANGUAGES),
    padding=st.lists(st.sampled_from(["", "comment"]), max_size=12),
)
def test_moving_code_down_moves_its_lines_and_keeps_every_hash(
    language: str, padding: list[str]
) -> None:
    """Lines above a symbol never change its hash, in any language: only its position."""
    fixture = FIXTURES[language]
    head = "".join((COMMENT[language] if line else "") + "\n" for line in padding)
    if language == "Go":  # a Go file starts with its package clause
        first, rest = fixture.source.split("\n", 1)
        moved_source = first + "\n" + head + rest
    else:
        moved_source = head + fixture.source
    before = source_symbols(fixture.path, fixture.source.encode())[1:]
    after = source_symbols(fixture.path, moved_source.encode())[1:]
    assert [(s.node_id, s.source_hash) for s in after] == [
        (s.node_id, s.source_hash) for s in before
    ]
    shift = len(padding)
    assert [(s.start_line, s.end_line) for s in after] == [
        ((s.start_line or 0) + shift, (s.end_line or 0) + shift) for s in before
    ]
    lines = moved_source.encode().splitlines()
    for symbol in after:  # every span lies within the file and is what was hashed
        start, end = symbol.start_line or 0, symbol.end_line or 0
        assert 1 <= start <= end <= len(lines)
        assert symbol.lines_hash == hash_lines(lines, start, end)
