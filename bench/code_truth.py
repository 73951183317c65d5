"""Does the code bridge tell the truth? (issue 37) Two measurements on real histories,
run through ``bench/code_index.py --truth LABEL=GIT_DIR ...``:

* **Staleness truth table.** For each repository, the last N first-parent commits are
  replayed: at each commit the symbols its diff touches (at most a few per file) are
  anchored as ``store -e`` anchors them (token hash, and the old lines hash beside it),
  then every later commit is checked with the code ``verify-staleness`` runs
  (``queries._judge`` over the files as they are at that commit) and compared with the
  truth computed from the commits' own diffs: an anchor is truly stale from the first
  later commit whose diff changes the symbol's lines other than in whitespace and
  comments (a commit whose message says it formats or lints is no change), or from the
  commit where the symbol disappears. A *false changed* is a check the bridge calls
  stale that is not; a *missed change* one it calls current that is stale. Checks are
  counted per (anchor, later commit).
* **A formatter run.** The repository at its newest commit is reformatted whole (``black``
  for Python, ``rustfmt`` for Rust where installed, else a re-indenting script that
  does what gofmt does to layout: re-indent, re-space operators and commas, move
  trailing comments), every symbol is anchored before and checked after: how many are
  reported changed, by the token hash and by the old lines hash.

Only git commands read the repositories (``git clone --bare`` a copy first); nothing of
them is written anywhere but a scratch folder.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from nervamem.code.languages import language_of
from nervamem.code.live import LiveSource
from nervamem.code.parsing import GrammarMissing, source_symbols
from nervamem.code.queries import _judge
from nervamem.code.symbols import HASH_SCHEME
from nervamem.code.values import LINES_SCHEME, CodeAnchor, CodeSymbol

STALE_STATES = frozenset({"changed", "removed", "file missing", "file does not parse"})
# A commit that says it only formats: its diffs are no change to the truth. (Lint
# autofixes are not in it: they rewrite expressions, which is a change.)
FORMATTING_COMMIT = re.compile(
    r"\breformat|\bgofmt\b|\bgo fmt\b|\brustfmt\b|\bcargo fmt\b|\bblack\b|\bprettier\b"
    r"|\bformat(ting)? (the )?(code|source|files)\b|\brun(ning)? (the )?formatter",
    re.IGNORECASE,
)
ANCHORS_PER_FILE = 3
ANCHORS_PER_COMMIT = 6


def git(repo: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", str(repo), *args], capture_output=True, check=True
    ).stdout


class Blobs:
    """Blob contents and their symbols, each read and parsed once."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._data: dict[str, bytes] = {}
        self._symbols: dict[tuple[str, str], list[CodeSymbol]] = {}

    def data(self, blob: str) -> bytes:
        if blob not in self._data:
            self._data[blob] = git(self.repo, "cat-file", "blob", blob)
        return self._data[blob]

    def symbols(self, path: str, blob: str) -> list[CodeSymbol]:
        key = (path, blob)
        if key not in self._symbols:
            self._symbols[key] = source_symbols(path, self.data(blob))
        return self._symbols[key]


class BlobSource(LiveSource):
    """LiveSource over one commit's tree instead of a work tree: the very checks
    verify-staleness makes, on the files as that commit has them."""

    def __init__(self, blobs: Blobs, tree: dict[str, str]) -> None:
        super().__init__(Path("."))
        self.blobs = blobs
        self.tree = tree

    def symbols(self, file_path: str) -> tuple[str | None, list[CodeSymbol]]:
        blob = self.tree.get(file_path)
        if blob is None:
            return "file missing", []
        found = self.blobs.symbols(file_path, blob)
        return ("file does not parse" if found[0].parse_error else None), found


def tree_of(repo: Path, commit: str) -> dict[str, str]:
    out = git(repo, "ls-tree", "-r", "-z", commit).split(b"\0")
    tree = {}
    for entry in out:
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        name = path.decode("utf-8", "surrogateescape")
        if language_of(name) is not None or name.endswith(".py"):
            tree[name] = meta.split()[2].decode()
    return tree


_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class Hunk:
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    removed: list[bytes] = field(default_factory=list)
    added: list[bytes] = field(default_factory=list)


def hunks(repo: Path, old_blob: str, new_blob: str) -> list[Hunk]:
    text = git(repo, "diff", "-U0", "--no-color", old_blob, new_blob)
    found: list[Hunk] = []
    for line in text.split(b"\n"):
        match = _HUNK.match(line)
        if match:
            a, b, c, d = match.groups()
            found.append(
                Hunk(int(a), 1 if b is None else int(b), int(c), 1 if d is None else int(d))
            )
        elif found and line.startswith(b"-") and not line.startswith(b"---"):
            found[-1].removed.append(line[1:])
        elif found and line.startswith(b"+") and not line.startswith(b"+++"):
            found[-1].added.append(line[1:])
    return found


_COMMENTS = {
    "py": re.compile(rb"#[^\n]*"),
    "c": re.compile(rb"//[^\n]*|/\*.*?\*/", re.DOTALL),
}


def normalised(lines: list[bytes], path: str) -> bytes:
    """Lines without comments and whitespace: what changes beyond layout. In Python the
    indentation of each line stays, as its level among the symbol's indentations."""
    text = b"\n".join(lines)
    if not path.endswith(".py"):
        return re.sub(rb"\s+", b"", _COMMENTS["c"].sub(b"", text))
    kept: list[bytes] = []
    depth = 0  # open brackets: a line inside them continues the logical line above
    for line in _COMMENTS["py"].sub(b"", text).split(b"\n"):
        if not line.strip():
            continue
        if depth > 0 and kept:
            kept[-1] += line.strip()
        else:
            kept.append(line)
        depth = max(
            0, depth + sum(line.count(c) for c in b"([{") - sum(line.count(c) for c in b")]}")
        )
    kept = [re.sub(rb",([)\]}])", rb"\1", line) for line in kept]  # a trailing comma
    widths = sorted({len(line) - len(line.lstrip()) for line in kept})
    level = {width: rank for rank, width in enumerate(widths)}
    return b"\n".join(
        b"%d:" % level[len(line) - len(line.lstrip())] + re.sub(rb"\s+", b"", line) for line in kept
    )


def _find(symbols: list[CodeSymbol], anchor: CodeAnchor) -> CodeSymbol | None:
    """The anchored symbol in another version: by node ID (``#2`` tells overloads and
    same-named impl blocks apart), else by name nearest its lines."""
    exact = [s for s in symbols[1:] if s.node_id == anchor.graph_node_id]
    if exact:
        return exact[0]
    same = [s for s in symbols[1:] if s.qualname == anchor.qualname and s.kind == anchor.kind]
    if not same:
        return None
    return min(same, key=lambda s: abs((s.start_line or 0) - (anchor.start_line or 0)))


@dataclass
class Tally:
    anchors: int = 0
    checks: int = 0
    truly_stale: int = 0
    false_changed: int = 0
    missed: int = 0
    false_changed_lines: int = 0
    missed_lines: int = 0
    examples: list[str] = field(default_factory=list)


def truth_table(repo: Path, commits: int) -> Tally:
    order = git(repo, "rev-list", "--first-parent", f"--max-count={commits}", "HEAD")
    history = order.decode().split()[::-1]
    messages = {
        c: git(repo, "log", "-1", "--format=%s", c).decode("utf-8", "replace") for c in history
    }
    trees = [tree_of(repo, c) for c in history]
    blobs = Blobs(repo)
    tally = Tally()
    for i in range(1, len(history)):
        anchors = _anchors_of_commit(repo, blobs, trees[i - 1], trees[i])
        for anchor in anchors:
            tally.anchors += 1
            _follow(repo, blobs, anchor, i, history, trees, messages, tally)
    return tally


def _anchors_of_commit(
    repo: Path, blobs: Blobs, before: dict[str, str], after: dict[str, str]
) -> list[CodeAnchor]:
    anchors: list[CodeAnchor] = []
    for path, blob in sorted(after.items()):
        if before.get(path) == blob or path not in before:
            continue
        try:
            symbols = blobs.symbols(path, blob)
        except GrammarMissing:
            continue
        if symbols[0].parse_error:
            continue
        touched_lines = set()
        for hunk in hunks(repo, before[path], blob):
            touched_lines.update(range(hunk.new_start, hunk.new_start + max(hunk.new_count, 1)))
        picked = [
            s
            for s in symbols[1:]
            if s.start_line
            and s.end_line
            and touched_lines & set(range(s.start_line, s.end_line + 1))
        ]
        # The innermost symbols first: what a memory is most often about.
        picked.sort(key=lambda s: ((s.end_line or 0) - (s.start_line or 0), s.start_line))
        for symbol in picked[:ANCHORS_PER_FILE]:
            anchors.append(
                CodeAnchor(
                    file_path=path,
                    start_line=symbol.start_line,
                    end_line=symbol.end_line,
                    graph_node_id=symbol.node_id,
                    qualname=symbol.qualname,
                    kind=symbol.kind,
                    source_hash=symbol.source_hash,
                    hash_scheme=HASH_SCHEME,
                    entity=symbol.lines_hash or "",  # carried along for the lines check
                )
            )
        if len(anchors) >= ANCHORS_PER_COMMIT:
            break
    return anchors[:ANCHORS_PER_COMMIT]


def _follow(
    repo: Path,
    blobs: Blobs,
    anchor: CodeAnchor,
    at: int,
    history: list[str],
    trees: list[dict[str, str]],
    messages: dict[str, str],
    tally: Tally,
) -> None:
    path = anchor.file_path
    lines_anchor = replace(anchor, source_hash=anchor.entity, hash_scheme=LINES_SCHEME)
    reference = _text_of(blobs, anchor, path, trees[at][path])
    stale = False
    verdict = lines_verdict = False
    for k in range(at + 1, len(history)):
        old, new = trees[k - 1].get(path), trees[k].get(path)
        if old != new:
            now = _text_of(blobs, anchor, path, new) if new is not None else None
            # A formatting commit carries the truth forward: what equalled the anchored
            # code before it equals it after it.
            if (
                FORMATTING_COMMIT.search(messages[history[k]])
                and old is not None
                and now is not None
                and _text_of(blobs, anchor, path, old) == reference
            ):
                reference = now
            stale = now is None or now != reference
            source = BlobSource(blobs, trees[k])
            verdict = _judge(anchor, source)[0] in STALE_STATES
            lines_verdict = _judge(lines_anchor, source)[0] in STALE_STATES
        tally.checks += 1
        tally.truly_stale += stale
        if verdict and not stale:
            tally.false_changed += 1
            if len(tally.examples) < 8 and old != new:
                tally.examples.append(f"false changed {history[k][:10]} {path}::{anchor.qualname}")
        if stale and not verdict:
            tally.missed += 1
            if len(tally.examples) < 8 and old != new:
                tally.examples.append(f"missed {history[k][:10]} {path}::{anchor.qualname}")
        tally.false_changed_lines += lines_verdict and not stale
        tally.missed_lines += stale and not lines_verdict


def _text_of(blobs: Blobs, anchor: CodeAnchor, path: str, blob: str) -> bytes | None:
    """The anchored symbol's code in this version, comments and layout out (Python keeps
    its indentation as levels, which are meaning); None when it is gone. The symbol is
    found by its name, nearest its anchored lines, as a reader would find it."""
    try:
        symbols = blobs.symbols(path, blob)
    except GrammarMissing:
        return None
    if symbols[0].parse_error:
        return None
    found = _find(symbols, anchor)
    if found is None:
        return None
    lines = blobs.data(blob).split(b"\n")[(found.start_line or 1) - 1 : found.end_line]
    return normalised([line.rstrip(b"\r") for line in lines], path)


# ----------------------------------------------------------------------------- formatter


def checkout(repo: Path, into: Path) -> Path:
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "--git-dir", str(repo), "archive", "HEAD"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def source_files(root: Path) -> Iterator[tuple[str, Path]]:
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and language_of(rel) is not None:
            yield rel, path


def gofmt_like(text: str) -> str:
    """What gofmt does to hand-written layout, undone and redone: every indent becomes
    four spaces per tab, operators and commas get one space around them, a trailing
    comment moves to its own line above. Raw strings (``...``) are left as they are."""
    out: list[str] = []
    in_raw = False
    for line in text.split("\n"):
        if in_raw or "`" in line:
            in_raw ^= line.count("`") % 2 == 1
            out.append(line)
            continue
        stripped = line.lstrip("\t")
        depth = len(line) - len(stripped)
        body = stripped
        comment = ""
        if "//" in body and '"' not in body and "'" not in body:
            body, _, comment = body.partition("//")
            body = body.rstrip()
        if '"' not in body and "'" not in body:  # never inside a string literal
            body = re.sub(r"\s*,\s*", ", ", body).rstrip()
            body = re.sub(r"\s*(:=|==|!=|&&|\|\|)\s*", r" \1 ", body)
        if comment and body:
            out.append("    " * depth + "//" + comment)
        out.append(
            "    " * depth + body if body or not comment else "    " * depth + "//" + comment
        )
    return "\n".join(out)


def formatter_run(repo: Path, language: str, scratch: Path) -> dict[str, object]:
    root = checkout(repo, scratch)
    # A repository that is formatted already would show nothing: it is first laid out
    # otherwise by the same formatter (narrow lines, other indentation), the memories
    # are anchored then, and the formatter's default run follows.
    _format(root, language, other_layout=True)
    before: dict[str, list[CodeSymbol]] = {}
    for rel, path in source_files(root):
        symbols = source_symbols(rel, path.read_bytes())
        if not symbols[0].parse_error:
            before[rel] = symbols
    tool = _format(root, language)
    source = LiveSource(root)
    anchors = changed = changed_lines = 0
    examples: list[str] = []
    for rel, symbols in before.items():
        for symbol in symbols[1:]:
            anchor = CodeAnchor(
                file_path=rel,
                start_line=symbol.start_line,
                end_line=symbol.end_line,
                graph_node_id=symbol.node_id,
                qualname=symbol.qualname,
                kind=symbol.kind,
                source_hash=symbol.source_hash,
                hash_scheme=HASH_SCHEME,
            )
            anchors += 1
            if _judge(anchor, source)[0] in STALE_STATES:
                changed += 1
                if len(examples) < 5:
                    examples.append(f"{rel}::{symbol.qualname}")
            old = replace(anchor, source_hash=symbol.lines_hash, hash_scheme=LINES_SCHEME)
            changed_lines += _judge(old, source)[0] in STALE_STATES
    return {
        "tool": tool,
        "anchors": anchors,
        "changed": changed,
        "changed_lines": changed_lines,
        "examples": examples,
    }


def _format(root: Path, language: str, *, other_layout: bool = False) -> str:
    files = [path for rel, path in source_files(root)]
    if language == "Python" and (shutil.which("black") or Path(_venv_black()).exists()):
        black = shutil.which("black") or _venv_black()
        layout = ["-l", "50", "-S"] if other_layout else []
        subprocess.run([black, "-q", *layout, *map(str, files)], check=False)
        return "black -l 50 -S, then black"
    if language == "Rust" and shutil.which("rustfmt"):
        rs = [str(p) for p in files if p.suffix == ".rs"]
        layout = ["--config", "tab_spaces=2,max_width=60"] if other_layout else []
        subprocess.run(
            ["rustfmt", "--edition", "2021", *layout, *rs], check=False, capture_output=True
        )
        return "rustfmt --config tab_spaces=2,max_width=60, then rustfmt"
    if other_layout:
        return ""
    for path in files:
        path.write_text(gofmt_like(path.read_text(encoding="utf-8", errors="surrogateescape")),
                        encoding="utf-8", errors="surrogateescape")  # fmt: skip
    return "re-indenting script (gofmt's layout changes)"


def _venv_black() -> str:
    import sys

    return str(Path(sys.executable).parent / "black")


def scratch_folder() -> Path:
    return Path(tempfile.gettempdir()) / "nervamem-code-truth"


# ----------------------------------------------------------------------------- the report


def _origin(repo: Path) -> str:
    """owner/name of a clone of a /work/.mirror/owner+name/repo snapshot, else its name."""
    try:
        url = git(repo, "config", "remote.origin.url").decode().strip()
    except subprocess.CalledProcessError:
        url = ""
    mirrored = Path(url).parent.name if url.endswith("/repo") else ""
    return mirrored.replace("+", "/") if "+" in mirrored else repo.name.removesuffix(".git")


def run_all(repos: dict[str, Path], commits: int) -> str:
    """Both measurements on each repository; Markdown for bench/results.md."""
    rows = []
    formats = []
    for label, repo in repos.items():
        tally = truth_table(repo, commits)
        rows.append((label, repo, tally))
        formats.append((label, formatter_run(repo, label, scratch_folder() / label)))
    shutil.rmtree(scratch_folder(), ignore_errors=True)
    lines = [
        f"Staleness truth table: the last {commits} first-parent commits of each repository "
        "replayed; checks are (anchor, later commit) pairs; *false changed* is over the checks "
        "truly current, *missed* over those truly stale. The lines hash is the scheme before "
        "issue 37, on the same anchors.",
        "",
        "| language | repository | anchors | checks | truly stale | false changed | missed "
        "| false changed (lines hash) | missed (lines hash) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, repo, t in rows:
        current = max(t.checks - t.truly_stale, 1)
        stale = max(t.truly_stale, 1)
        lines.append(
            f"| {label} | `{_origin(repo)}` | {t.anchors:,} | {t.checks:,} "
            f"| {t.truly_stale:,} | {t.false_changed} ({100 * t.false_changed / current:.2f} %) "
            f"| {t.missed} ({100 * t.missed / stale:.2f} %) "
            f"| {t.false_changed_lines} ({100 * t.false_changed_lines / current:.2f} %) "
            f"| {t.missed_lines} ({100 * t.missed_lines / stale:.2f} %) |"
        )
    lines += [
        "",
        "A formatter run over the whole repository at its newest commit: every symbol "
        "anchored, then checked after the run.",
        "",
        "| language | formatter | anchors | reported changed | reported changed (lines hash) |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for label, result in formats:
        lines.append(
            f"| {label} | {result['tool']} | {result['anchors']:,} | {result['changed']} "
            f"| {result['changed_lines']} |"
        )
    examples = [e for _, _, t in rows for e in t.examples[:3]]
    examples += [e for _, r in formats for e in r["examples"][:3]]  # type: ignore[index]
    if examples:
        lines += ["", "Examples of disagreements: " + "; ".join(f"`{e}`" for e in examples)]
    return "\n".join(lines)
