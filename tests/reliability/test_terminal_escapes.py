"""Stored or typed text never drives the terminal of the person who reads it.

A corpus of terminal escapes (clear screen, window title ended by BEL and by ST, an OSC 8
hyperlink, blink, the one-byte C1 CSI, DEL, backspace, carriage return, bidi overrides)
is stored as content, as entity names, as a session title and summary, as a rationale,
and typed as IDs, namespaces, paths and options. Every command whose output can hold it
is run in every format: Markdown and table must show each control as its escape
(``\\x1b``, ``\\x9b``, ``\\u202e``; nervamem/visible.py) and hold none of them raw, on
stdout and on stderr; JSON must stay valid and give back the stored text byte for byte.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nervamem import BadInputError, MemoryStore
from nervamem.recall.tokens import get_counter
from tests.code.test_codegraph import edit, make_repo

pytestmark = pytest.mark.sqlite_only  # not yet run against PostgreSQL

Run = Callable[..., Any]

CORPUS = {
    "csi-clear-screen": "\x1b[2J",
    "osc-title-bel": "\x1b]0;pwned\x07",
    "osc-title-st": "\x1b]0;pwned\x1b\\",
    "osc8-hyperlink": "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\",
    "sgr-blink": "\x1b[5m",
    "c1-csi": "\x9b2J",
    "del": "\x7f",
    "backspace": "\x08",
    "carriage-return": "\r",
    "bidi-override": "\u202e",
    "bidi-isolate": "\u2066",
}
# What a person sees instead: a backslash escape of each code point.
SHOWN = {
    "csi-clear-screen": "\\x1b[2J",
    "osc-title-bel": "\\x1b]0;pwned\\x07",
    "osc-title-st": "\\x1b]0;pwned\\x1b\\",
    "osc8-hyperlink": "\\x1b]8;;http://evil.example\\x1b\\click",
    "sgr-blink": "\\x1b[5m",
    "c1-csi": "\\x9b2J",
    "del": "\\x7f",
    "backspace": "\\x08",
    "carriage-return": "\\x0d",
    "bidi-override": "\\u202e",
    "bidi-isolate": "\\u2066",
}
HOSTILE = " ".join(f"{name}:{seq}" for name, seq in CORPUS.items())
# Every character that must never reach a terminal raw, NUL aside (refused as input).
EVERY_CONTROL = "".join(
    chr(code)
    for code in (*range(1, 32), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A))
)
# In content, a carriage return is whitespace that Markdown collapses to a space: it
# cannot be expected in its escaped form where content is put on one line.
ONE_LINE_SHOWN = {k: v for k, v in SHOWN.items() if k != "carriage-return"}

# Never raw in a human-facing rendering: C0 controls except tab and newline, DEL, C1
# controls, and the bidi embeddings, overrides and isolates. Defined here, not imported,
# so that the test does not trust the code it tests.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# What Rich itself writes on a terminal: colours and bold (SGR), never blink (5).
RICH_STYLE = re.compile(r"\x1b\[(?![0-9;]*\b5\b)[0-9;]*m")
WIDE = {"COLUMNS": "2000"}  # no folding: an escape is never split across lines
TERMINAL = {"COLUMNS": "2000", "FORCE_COLOR": "1"}  # Rich writes as to a terminal


def assert_harmless(text: str, what: object) -> None:
    leaked = sorted(set(RAW.findall(text)))
    assert not leaked, f"{what}: raw {leaked} reached the output: {text!r}"


def assert_shown(text: str, shown: dict[str, str], what: object) -> None:
    missing = [name for name, form in shown.items() if form not in text]
    assert not missing, f"{what}: {missing} not shown escaped in {text!r}"


def assert_ok_and_harmless(result: Any, what: object) -> str:
    assert result.exit_code == 0, (what, result.stdout, result.stderr)
    assert_harmless(result.stdout, what)
    assert_harmless(result.stderr, what)
    return str(result.stdout)


def assert_terminal_safe(result: Any, what: object) -> str:
    """Rich's own styles aside, nothing a memory holds reaches a real terminal raw."""
    assert result.exit_code == 0, (what, result.stdout, result.stderr)
    assert "\x1b[" in result.stdout, f"{what}: Rich did not write as to a terminal"
    assert "\x1b[5m" not in result.stdout, what
    assert "\x1b]" not in result.stdout, f"{what}: OSC sequence (title, hyperlink)"
    unstyled = RICH_STYLE.sub("", result.stdout)
    assert_harmless(unstyled, what)
    assert_harmless(result.stderr, what)
    return unstyled


def assert_error_harmless(result: Any, code: int, what: object, *, json_error: bool) -> str:
    assert result.exit_code == code, (what, result.exit_code, result.stdout, result.stderr)
    assert result.stdout == "", what
    assert_harmless(result.stderr, what)
    lines = result.stderr.rstrip("\n").split("\n")
    assert len(lines) == 1, (what, result.stderr)
    if json_error:
        return str(json.loads(lines[0])["error"]["message"])
    assert lines[0].startswith("nervamem: error: "), (what, result.stderr)
    return str(lines[0])


# ----------------------------------------------------------------------------- the store
def test_the_store_keeps_every_control_but_nul(store: MemoryStore) -> None:
    """NUL is refused as input; every other control is stored byte for byte, so it is
    the renderings that must make them harmless."""
    with pytest.raises(BadInputError):
        store.store("fact", "a\x00b")
    for text in (HOSTILE, f"omega {EVERY_CONTROL}"):
        node_id = store.store("fact", text)
        row = store.connection.execute("SELECT content FROM mem_nodes WHERE id = ?", (node_id,))
        assert row.fetchone()[0] == text


@pytest.mark.parametrize("fmt", ["markdown", "table"])
def test_every_control_is_shown_escaped(cli: Run, fmt: str) -> None:
    cli("store", "fact", f"omega {EVERY_CONTROL}")
    for command in ("recall", "timeline"):
        out = assert_ok_and_harmless(cli(command, "omega", "--format", fmt, env=WIDE), command)
        assert "\\x01\\x02" in out and "\\x7f\\x80" in out and "\\u2068\\u2069" in out, out


@pytest.fixture
def seeded(cli: Run) -> dict[str, str]:
    """The corpus as a session title and summary, fact content, an entity name, decision
    content and rationale, and a rejected alternative."""

    def ok(*args: str) -> str:
        result = cli(*args)
        assert result.exit_code == 0, (args, result.stderr)
        assert_harmless(result.stdout + result.stderr, args)
        return str(result.stdout.strip())

    ids = {"session": ok("session", "start", f"alpha session {HOSTILE}")}
    ids["fact"] = ok("store", "fact", f"alpha fact {HOSTILE}", "-e", f"Beta {HOSTILE}")
    ids["decision"] = ok(
        "store",
        "decision",
        f"alpha decision {HOSTILE}",
        "--rationale",
        HOSTILE,
        "--rejected",
        HOSTILE,
    )
    ok("session", "end", "--summary", HOSTILE)
    return ids


# ----------------------------------------------------------------------------- recall
@pytest.mark.parametrize("fmt", ["markdown", "table"])
def test_recall_shows_controls_escaped(cli: Run, seeded: dict[str, str], fmt: str) -> None:
    out = assert_ok_and_harmless(cli("recall", "alpha", "--format", fmt, env=WIDE), fmt)
    assert_shown(out, ONE_LINE_SHOWN, fmt)
    assert "Beta csi-clear-screen:\\x1b[2J" in out  # the entity name
    assert "alpha session csi-clear-screen:\\x1b[2J" in out  # the session title


def test_recall_table_on_a_terminal(cli: Run, seeded: dict[str, str]) -> None:
    out = assert_terminal_safe(cli("recall", "alpha", "--format", "table", env=TERMINAL), "")
    assert_shown(out, ONE_LINE_SHOWN, "terminal")


def test_recall_table_makes_no_hidden_character_from_a_markdown_reference(cli: Run) -> None:
    """Markdown decodes "&#x202e;" into a bidi override, and a link into an OSC 8
    hyperlink whose target is hidden: the table shows both as written."""
    cli("store", "fact", "gamma &#x202e;evil &#8238; [click](http://evil.example) AT&T")
    out = assert_terminal_safe(cli("recall", "gamma", "--format", "table", env=TERMINAL), "")
    assert "&#x202e;evil &#8238;" in out
    assert "http://evil.example" in out
    assert "AT&T" in out


def test_recall_json_is_valid_and_byte_exact(cli: Run, seeded: dict[str, str]) -> None:
    result = cli("recall", "alpha", "--format", "json")
    assert result.exit_code == 0, result.stderr
    # json.dumps escapes every C0 control; DEL, C1 and bidi characters pass as they are
    # (ensure_ascii=False): JSON is a contract for programs, its bytes do not change.
    assert not re.search("[\x00-\x1f]", result.stdout.rstrip("\n"))
    contents = {item["content"] for item in json.loads(result.stdout)["items"]}
    assert f"alpha fact {HOSTILE}" in contents
    assert f"alpha decision {HOSTILE}" in contents


@pytest.mark.parametrize("tokenizer", ["char", "tiktoken"])
def test_escapes_are_paid_for_within_the_budget(
    cli: Run, seeded: dict[str, str], tokenizer: str
) -> None:
    """The escapes are longer than the characters they show: they are measured, so the
    budget still holds and the header's used figure is the text's."""
    counter = get_counter(tokenizer)
    shown_any = False
    for budget in (40, 60, 80, 100, 150, 200, 300, 500):
        result = cli("--tokenizer", tokenizer, "recall", "alpha", "--budget", str(budget))
        out = assert_ok_and_harmless(result, budget)
        used = counter.count(out)
        assert used <= budget, (budget, used, out)
        assert f" · {used}/{budget} tokens" in out.split("\n")[0], (budget, out)
        if tokenizer == "char":
            assert math.ceil(len(out) / 4) <= budget
        shown_any = shown_any or "\\x1b[2J" in out
    assert shown_any


# ----------------------------------------------------------------------------- timeline
@pytest.mark.parametrize("fmt", ["markdown", "table"])
def test_timeline_shows_controls_escaped(cli: Run, seeded: dict[str, str], fmt: str) -> None:
    out = assert_ok_and_harmless(cli("timeline", "alpha", "--format", fmt, env=WIDE), fmt)
    # A table cell keeps the content as stored, so its carriage return is shown too.
    assert_shown(out, SHOWN if fmt == "table" else ONE_LINE_SHOWN, fmt)


def test_timeline_table_on_a_terminal(cli: Run, seeded: dict[str, str]) -> None:
    out = assert_terminal_safe(cli("timeline", "alpha", "--format", "table", env=TERMINAL), "")
    assert_shown(out, SHOWN, "terminal")


def test_timeline_table_keeps_newlines_and_tabs_inside_the_cell(cli: Run) -> None:
    """A newline stays a line break within its cell (it cannot leave the table); a tab
    is expanded by Rich. Neither is a control that acts on the terminal."""
    cli("store", "fact", "delta first\nsecond\tthird")
    out = assert_ok_and_harmless(cli("timeline", "delta", "--format", "table", env=WIDE), "")
    row = [line for line in out.split("\n") if "delta first" in line]
    assert row and "│" in row[0], out
    assert "second" in out and "\\x0a" not in out and "\\x09" not in out


def test_timeline_json_is_valid_and_byte_exact(cli: Run, seeded: dict[str, str]) -> None:
    result = cli("timeline", "alpha", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert not re.search("[\x00-\x1f]", result.stdout.rstrip("\n"))
    contents = {item["content"] for item in json.loads(result.stdout)["items"]}
    assert {f"alpha fact {HOSTILE}", f"alpha decision {HOSTILE}"} <= contents


# ----------------------------------------------------------------------------- paths, names
@pytest.fixture
def hostile_db(tmp_path: Path) -> Path:
    """A store whose folder name holds the corpus (Linux allows all but NUL and '/')."""
    return tmp_path / ("db " + "".join(CORPUS.values()).replace("/", "_")) / "memory.db"


@pytest.mark.parametrize("fmt", ["markdown", "table"])
def test_stats_and_init_show_a_hostile_path_escaped(cli: Run, hostile_db: Path, fmt: str) -> None:
    for command in (["init"], ["stats"]):
        out = assert_ok_and_harmless(
            cli("--db", str(hostile_db), *command, "--format", fmt, env=WIDE), command
        )
        assert "\\x1b[2J" in out and "\\x9b2J" in out and "\\u202e" in out, (command, out)


def test_stats_json_keeps_the_path(cli: Run, hostile_db: Path) -> None:
    assert cli("--db", str(hostile_db), "init").exit_code == 0  # stats creates no store
    result = cli("--db", str(hostile_db), "stats", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["db_path"] == str(hostile_db.resolve())


@pytest.mark.parametrize("fmt", ["markdown", "table", "json"])
def test_ns_commands(cli: Run, seeded: dict[str, str], fmt: str) -> None:
    """Namespace names are validated, so ns output holds no stored control; a namespace
    typed with one is refused in an error line that shows it escaped."""
    for command in (["ns", "list"], ["ns", "current"]):
        assert_ok_and_harmless(cli(*command, "--format", fmt, env=WIDE), command)
    message = assert_error_harmless(
        cli("ns", "switch", f"x{CORPUS['osc-title-bel']}", "--format", fmt),
        2,
        fmt,
        json_error=fmt == "json",
    )
    assert "\\x1b]0;pwned\\x07" in message


# ----------------------------------------------------------------------------- errors
ERRORS: list[tuple[str, list[str], int]] = [
    ("bad-id", ["forget", "f_0{seq}x"], 2),
    ("bad-id-alone", ["forget", "{seq}"], 2),
    ("bad-namespace", ["recall", "x", "--ns", "a{seq}"], 2),
    ("bad-root-namespace", ["--ns", "a{seq}", "stats"], 2),
    ("bad-format", ["stats", "--format", "j{seq}"], 2),
    ("bad-as-of", ["recall", "x", "--as-of", "2026{seq}"], 2),
    ("bad-kind", ["store", "f{seq}", "x"], 2),
    ("bad-kind-filter", ["recall", "x", "--kind", "f{seq}"], 2),
    ("bad-budget", ["recall", "x", "--budget", "1{seq}"], 2),
    ("unknown-option", ["stats", "--x{seq}"], 2),
    ("extra-argument", ["stats", "x{seq}"], 2),
    ("unknown-command", ["x{seq}"], 2),
    ("unknown-strategy", ["consolidate", "--strategy", "x{seq}"], 2),
    ("code-to-bad-id", ["code-to", "d_0{seq}x"], 2),
    ("supersedes-bad-id", ["store", "fact", "x", "--supersedes", "f_0{seq}x"], 2),
]


@pytest.mark.parametrize("json_error", [False, True], ids=["text", "json"])
@pytest.mark.parametrize(("case", "args", "code"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_show_typed_controls_escaped(
    cli: Run, case: str, args: list[str], code: int, json_error: bool
) -> None:
    cli("store", "fact", "something")  # a store to look in
    # The JSON error line goes through the same message: three kinds of control suffice.
    names = ["csi-clear-screen", "c1-csi", "bidi-override"] if json_error else list(CORPUS)
    for name in names:
        seq = CORPUS[name]
        typed = [arg.replace("{seq}", seq) for arg in args]
        env = {"NERVAMEM_FORMAT": "json"} if json_error else None
        result = cli(*typed, env=env)
        what = (case, name, result.stderr)
        # The wrong --format wins over NERVAMEM_FORMAT=json: that error is plain text.
        as_json = json_error and case != "bad-format"
        message = assert_error_harmless(result, code, what, json_error=as_json)
        if name != "carriage-return":  # whitespace: an error line collapses it to a space
            assert SHOWN[name][:4] in message, what


# ----------------------------------------------------------------------------- code bridge
class TestCodeBridge:
    @pytest.fixture
    def repo(self, tmp_path: Path) -> Path:
        return make_repo(tmp_path / "repo")

    @pytest.fixture
    def db_path(self, repo: Path) -> Path:
        return repo / ".nervapack" / "memory.db"

    @pytest.fixture
    def anchored(self, cli: Run, repo: Path) -> str:
        assert cli("code", "index").exit_code == 0
        result = cli("store", "fact", f"alpha login {HOSTILE}", "-e", "AuthService.login")
        assert result.exit_code == 0, result.stderr
        return str(result.stdout.strip())

    @pytest.mark.parametrize("fmt", ["markdown", "table"])
    def test_code_commands_show_controls_escaped(
        self, cli: Run, repo: Path, anchored: str, fmt: str
    ) -> None:
        runs = {
            "code-for": cli("code-for", "pkg/auth.py", "--format", fmt, env=WIDE),
            "code-to": cli("code-to", anchored, "--format", fmt, env=WIDE),
        }
        edit(repo / "pkg" / "auth.py", 'return f"token-{user}"', 'return f"jwt-{user}"')
        runs["verify-staleness"] = cli("verify-staleness", "--format", fmt, env=WIDE)
        for command, result in runs.items():
            out = assert_ok_and_harmless(result, (command, fmt))
            assert_shown(out, ONE_LINE_SHOWN, (command, fmt))

    @pytest.mark.parametrize("fmt", ["markdown", "table", "json"])
    def test_code_for_echoes_a_typed_path_escaped(self, cli: Run, anchored: str, fmt: str) -> None:
        typed = f"pkg/x{CORPUS['csi-clear-screen']}{CORPUS['c1-csi']}.py"
        result = cli("code-for", f"{typed}:3", "--format", fmt, env=WIDE)
        assert result.exit_code == 0, result.stderr  # no memory about it: not a failure
        assert_harmless(result.stderr, fmt)
        if fmt == "json":
            assert json.loads(result.stdout)["file_path"] == typed
        else:
            assert_harmless(result.stdout, fmt)
            assert "pkg/x\\x1b[2J\\x9b2J.py" in result.stdout

    @pytest.mark.parametrize("fmt", ["markdown", "table"])
    def test_code_index_shows_a_hostile_file_name_escaped(
        self, cli: Run, repo: Path, fmt: str
    ) -> None:
        """A file in the repository, named by whoever wrote it, that does not parse: its
        name is listed among the syntax errors."""
        (repo / "pkg" / f"bad{CORPUS['osc-title-bel']}.py").write_text("def (:\n")
        out = assert_ok_and_harmless(cli("code", "index", "--format", fmt, env=WIDE), fmt)
        assert "\\x1b]0;pwned\\x07" in out, out

    def test_code_json_is_byte_exact(self, cli: Run, anchored: str) -> None:
        document = json.loads(cli("code-to", anchored, "--format", "json").stdout)
        assert document["content"] == f"alpha login {HOSTILE}"


# ----------------------------------------------------------------------------- consolidate
@pytest.mark.parametrize("fmt", ["markdown", "table", "json"])
def test_consolidate_with_hostile_duplicates(cli: Run, fmt: str) -> None:
    cli("session", "start", f"dup {HOSTILE}")
    cli("store", "fact", f"dup {HOSTILE}")
    cli("store", "fact", f"DUP {HOSTILE}")
    cli("session", "end", "--summary", HOSTILE)
    dry = cli("consolidate", "--dry-run", "--format", "json")
    assert len(json.loads(dry.stdout)["duplicates"]) == 1, dry.stdout
    for args in (["consolidate", "--dry-run"], ["consolidate"]):
        result = cli(*args, "--format", fmt, env=WIDE)
        assert result.exit_code == 0, result.stderr
        assert_harmless(result.stderr, args)
        if fmt == "json":
            json.loads(result.stdout)
        else:
            assert_harmless(result.stdout, args)
