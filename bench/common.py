"""What the bench entry points share: where they write, sizes as people write them,
percentiles, the machine and its load, CPU time of child processes, and each entry
point's own section of results.md.

Imports nothing of nervamem at module level: an entry point chooses which nervamem it
measures (peers.py and recall_dump.py put a checkout first on ``sys.path``) before it
asks for one, and ``machine()`` reads the version of that one.
"""

from __future__ import annotations

import os
import platform
import sqlite3
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"  # stores, scratch venvs and raw JSON figures; ignored by git
RESULTS = HERE / "results.md"


def parse_size(text: str) -> int:
    """``10k`` -> 10000, ``1m`` -> 1000000, ``500`` -> 500."""
    text = text.strip().lower()
    factor = 1
    if text.endswith("k"):
        factor, text = 1_000, text[:-1]
    elif text.endswith("m"):
        factor, text = 1_000_000, text[:-1]
    return int(float(text) * factor)


def label(size: int) -> str:
    """The size as parse_size reads it back: the name of its store folder."""
    if size >= 1_000_000 and size % 1_000_000 == 0:
        return f"{size // 1_000_000}M"
    if size >= 1_000 and size % 1_000 == 0:
        return f"{size // 1_000}k"
    return str(size)


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks; NaN for no values."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def machine() -> dict[str, Any]:
    from nervamem import __version__

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = "n/a"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                break
    except OSError:
        pass
    try:
        from importlib.metadata import version

        typer_version = version("typer")
    except Exception:
        typer_version = "n/a"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": memory,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "nervamem": __version__,
        "typer": typer_version,
    }


def children_cpu() -> float:
    """CPU seconds (user + system) of finished child processes, finer than os.times()."""
    try:
        import resource

        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime
    except ImportError:  # not on Unix
        times = os.times()
        return times.children_user + times.children_system


def met(value: float, limit: float) -> str:
    return "yes" if value <= limit else "**no**"


def write_section(section: str, begin: str, end: str, *, first: bool = False) -> None:
    """Replace the part of results.md between ``begin`` and ``end`` with ``section``
    (which holds both markers), keeping every other section as it is. Without the
    markers the section is appended, or, with ``first``, put before the first ``##``."""
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# Benchmark results\n"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + section.rstrip("\n") + tail
    else:
        marker = text.find("\n## ") if first else -1
        if marker == -1:
            text = text.rstrip("\n") + "\n\n" + section
        else:
            text = text[: marker + 1] + section + "\n" + text[marker + 1 :]
    RESULTS.write_text(text, encoding="utf-8")
