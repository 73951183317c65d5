"""``code index`` speed per language: cold and unchanged-tree index time and peak memory
on real open-source code, Python (``ast``) beside Go, Rust, Java, TypeScript and
JavaScript (tree-sitter).

    python bench/code_index.py Python=/path/to/networkx Go=/path/to/go/src ...
    python bench/code_index.py --fetch          # obtain the sources below, then run

Each ``LABEL=FOLDER`` is copied to a scratch folder outside any git work tree (in the
system's temporary folder: inside this repository git would list none of its files, as
bench/out/ is ignored), so the ``.nervapack/`` goes there, not into the source; then
indexed in a fresh Python process twice: **cold** (no graph yet) and **unchanged**
(nothing edited since). For each run it reports the files, symbols (graph nodes),
seconds, the process's peak RSS, symbols per second and seconds per thousand symbols,
and that cost as a ratio to the Python row (the target: within 2x). The cold run also
times the parsers alone over the same files.

``--fetch`` obtains the sources through the package registries this project reaches,
with their ordinary clients, into bench/out/code/src/: networkx (pip download, sdist),
rxjs 7 (npm pack; its ``src/`` is TypeScript), lodash 4 (npm pack; plain JavaScript),
tokio 1.24 (Debian's librust-tokio-dev, which ships the crate's source), the Go 1.19
standard library (Debian's golang-1.19-src) and OpenJDK's ``java.base`` (the
``src.zip`` a JDK on this machine ships). Results go to stdout and, with ``--write``, to
the ``<!-- code-index:begin -->`` section of bench/results.md.

``--truth LABEL=GIT_DIR`` (repeatable; ``--commits N``, default 200) runs instead the
measurements of bench/code_truth.py on real histories: the staleness truth table and a
formatter run over each repository, into the ``<!-- code-truth:begin -->`` section.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out" / "code"
SOURCES = OUT / "src"
SCRATCH = Path(tempfile.gettempdir()) / "nervamem-code-bench"

# Runs in a fresh interpreter: one index of the given root, or (mode "parse") the
# parsers alone over its files, already read; its figures as JSON.
PROBE = """
import json, resource, sys, time
from pathlib import Path
root, mode = Path(sys.argv[1]), sys.argv[2]
if mode == "parse":
    from nervamem.code.files import list_source_files
    from nervamem.code.parsing import source_symbols
    sources = [(rel, (root / rel).read_bytes()) for rel in list_source_files(root)]
    started = time.perf_counter()
    for rel, data in sources:
        source_symbols(rel, data)
    print(json.dumps({"parse_seconds": time.perf_counter() - started}))
    raise SystemExit(0)
from nervamem.code.indexing import build_index
started = time.perf_counter()
result = build_index(root / ".nervapack" / "graph.graphml")
seconds = time.perf_counter() - started
peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"files": result.files, "nodes": result.nodes, "parsed": result.parsed,
    "reused": result.reused, "errors": len(result.errors), "skipped": len(result.skipped),
    "languages": result.languages, "seconds": seconds, "peak_mib": peak_kib / 1024}))
"""


def run_index(root: Path, mode: str = "index") -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(root), mode],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    data: dict[str, object] = json.loads(done.stdout)
    return data


def baseline_mib() -> float:
    """Peak RSS of a process that imports the indexer and indexes nothing."""
    empty = SCRATCH / "empty"
    shutil.rmtree(empty, ignore_errors=True)
    (empty / ".nervapack").mkdir(parents=True)
    return float(run_index(empty)["peak_mib"])  # type: ignore[arg-type]


def _run(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(args, cwd=cwd, check=True, capture_output=True)


def fetch() -> dict[str, Path]:
    """The real code bases this bench uses, through the registries' own clients."""
    SOURCES.mkdir(parents=True, exist_ok=True)
    found: dict[str, Path] = {}
    python = SOURCES / "networkx"
    if not python.exists():
        _run(
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "networkx==3.6.1",
            "-d",
            str(SOURCES / "dl"),
        )
        [sdist] = glob.glob(str(SOURCES / "dl" / "networkx-*.tar.gz"))
        with tarfile.open(sdist) as tar:
            tar.extractall(SOURCES / "dl", filter="data")
        [folder] = glob.glob(str(SOURCES / "dl" / "networkx-*" / "networkx"))
        shutil.copytree(folder, python)
    found["Python"] = python
    for label, package, inner in (
        ("TypeScript", "rxjs@7.8.2", "src"),
        ("JavaScript", "lodash@4.18.1", ""),
    ):
        target = SOURCES / package.split("@")[0]
        if not target.exists():
            _run("npm", "pack", package, "--silent", cwd=SOURCES)
            [tgz] = glob.glob(str(SOURCES / f"{package.split('@')[0]}-*.tgz"))
            with tarfile.open(tgz) as tar:
                tar.extractall(target, filter="data")
        found[label] = target / "package" / inner if inner else target / "package"
    debs = SOURCES / "debs"
    for label, package, pattern in (
        ("Go", "golang-1.19-src", "usr/share/go-1.19/src"),
        ("Rust", "librust-tokio-dev", "usr/share/cargo/registry/tokio-*"),
    ):
        extracted = SOURCES / package
        if not extracted.exists():
            debs.mkdir(exist_ok=True)
            _run("apt-get", "download", package, cwd=debs)
            [deb] = glob.glob(str(debs / f"{package}_*.deb"))
            _run("dpkg", "-x", deb, str(extracted))
        [folder] = glob.glob(str(extracted / pattern))
        found[label] = Path(folder)
    java = SOURCES / "java.base"
    if not java.exists():
        zips = sorted(glob.glob("/usr/lib/jvm/*/lib/src.zip"))
        readable = [z for z in zips if Path(z).resolve().is_file()]
        if readable:
            with zipfile.ZipFile(readable[-1]) as archive:
                members = [m for m in archive.namelist() if m.startswith("java.base/")]
                archive.extractall(SOURCES, members)
    if java.exists():
        found["Java"] = java
    return found


def measure(label: str, source: Path) -> dict[str, object]:
    scratch = SCRATCH / label
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(source, scratch, symlinks=True)
    (scratch / ".nervapack").mkdir()
    parse = run_index(scratch, "parse")
    cold = {**run_index(scratch), **parse}
    unchanged = run_index(scratch)
    return {"label": label, "source": str(source), "cold": cold, "unchanged": unchanged}


def table(rows: list[dict[str, object]], base_mib: float) -> str:
    python = next((r for r in rows if r["label"] == "Python"), None)

    def per_k(run: dict[str, float], key: str = "seconds") -> float:
        return 1000 * run[key] / max(run["nodes"], 1)

    python_cold = per_k(python["cold"]) if python else None  # type: ignore[arg-type]
    python_parse = per_k(python["cold"], "parse_seconds") if python else None  # type: ignore[arg-type]
    lines = [
        "| language | files | symbols | cold s | unchanged s | peak RSS MiB (cold) "
        "| symbols/s (cold) | s per 1k symbols | vs Python | parse only s | parse vs Python |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        cold: dict[str, float] = row["cold"]  # type: ignore[assignment]
        unchanged: dict[str, float] = row["unchanged"]  # type: ignore[assignment]
        ratio = f"{per_k(cold) / python_cold:.2f}x" if python_cold else "-"
        parse = per_k(cold, "parse_seconds")
        parse_ratio = f"{parse / python_parse:.2f}x" if python_parse else "-"
        lines.append(
            f"| {row['label']} | {cold['files']:,} | {cold['nodes']:,} | {cold['seconds']:.2f} "
            f"| {unchanged['seconds']:.2f} | {cold['peak_mib']:.0f} "
            f"| {cold['nodes'] / cold['seconds']:,.0f} | {per_k(cold):.3f} | {ratio} "
            f"| {cold['parse_seconds']:.2f} | {parse_ratio} |"
        )
    lines.append("")
    lines.append(
        f"Peak RSS is the whole process's (Python, nervamem, NetworkX, the grammars); a "
        f"process that indexes an empty folder peaks at {base_mib:.0f} MiB. *Parse only* is "
        "the time to turn every file's bytes into its symbols (`parsing.source_symbols`, "
        "files already read), in a process of its own, without listing, hashing or writing "
        "the graph."
    )
    return "\n".join(lines)


def write_results(text: str, section: str = "code-index") -> None:
    results = HERE / "results.md"
    body = results.read_text(encoding="utf-8")
    begin, end = f"<!-- {section}:begin -->", f"<!-- {section}:end -->"
    if begin in body and end in body:
        head, rest = body.split(begin, 1)
        body = head + begin + "\n" + text + "\n" + end + rest.split(end, 1)[1]
    else:
        body = body.rstrip("\n") + "\n\n" + begin + "\n" + text + "\n" + end + "\n"
    results.write_text(body, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="*", help="LABEL=FOLDER, e.g. Go=/src/go")
    parser.add_argument("--fetch", action="store_true", help="obtain the default sources")
    parser.add_argument("--write", action="store_true", help="update bench/results.md")
    parser.add_argument(
        "--truth", action="append", default=[], help="LABEL=GIT_DIR: staleness truth table"
    )
    parser.add_argument("--commits", type=int, default=200, help="commits replayed (--truth)")
    args = parser.parse_args()
    if args.truth:
        sys.path.insert(0, str(ROOT))
        from bench.code_truth import run_all

        repos = {label: Path(d) for label, _, d in (t.partition("=") for t in args.truth)}
        header = (
            f"### Code bridge truth ({platform.python_version()}, {os.cpu_count()} cores)\n\n"
            f"`python bench/code_index.py --truth ... --commits {args.commits} --write`\n\n"
        )
        report = header + run_all(repos, args.commits)
        print(report)
        if args.write:
            write_results(report, "code-truth")
        return
    trees: dict[str, Path] = fetch() if args.fetch else {}
    for item in args.trees:
        label, _, folder = item.partition("=")
        trees[label] = Path(folder)
    if not trees:
        parser.error("give LABEL=FOLDER trees or --fetch")
    order = ["Python", "Go", "Rust", "Java", "TypeScript", "JavaScript"]
    rows = [
        measure(label, trees[label])
        for label in sorted(trees, key=lambda k: order.index(k) if k in order else 99)
    ]
    base = baseline_mib()
    text = table(rows, base)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    header = (
        f"### Code index per language ({platform.python_version()}, "
        f"{os.cpu_count()} cores, load {load:.1f})\n\n"
        "`python bench/code_index.py --fetch --write`; sources: "
        + ", ".join(f"{r['label']}: `{Path(str(r['source'])).name}`" for r in rows)
        + "\n\n"
    )
    print(header + text)
    shutil.rmtree(SCRATCH, ignore_errors=True)
    (OUT / "code-index.json").write_text(json.dumps(rows, indent=1))
    if args.write:
        write_results(header + text)


if __name__ == "__main__":
    main()
