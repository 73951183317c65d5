"""Markdown of the code bridge's results: ``code index``, ``code-for``, ``code-to`` and
``verify-staleness``.

Used through :func:`nervamem.render.markdown.render`, which escapes control characters in
the whole text: these functions leave that to it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..visible import one_line

if TYPE_CHECKING:
    from ..code.values import CodeAnchor, CodeForResult, CodeToResult, IndexResult, StalenessReport


def index_result(result: IndexResult) -> str:
    errors = f", {len(result.errors)} with syntax errors" if result.errors else ""
    skipped = f", {len(result.skipped)} skipped" if result.skipped else ""
    state = "written to" if result.written else "unchanged:"
    counts = ", ".join(f"{count} {name}" for name, count in result.languages.items())
    languages = f" ({counts})" if len(result.languages) > 1 else ""
    only = next(iter(result.languages), "") + " " if len(result.languages) == 1 else ""
    lines = [
        f"Indexed {result.files} {only}file{'' if result.files == 1 else 's'}{languages} under "
        f"{result.root} ({result.parsed} parsed, {result.reused} reused{errors}{skipped}): "
        f"{result.nodes} nodes, {result.edges} CONTAINS edges; {state} {result.graph_path}"
    ]
    if result.anchored:
        count = result.anchored
        lines.append(
            f"Anchored {count} memor{'y' if count == 1 else 'ies'} whose entity names now "
            "resolve in the code."
        )
    lines.extend(f"- {error}" for error in result.errors)
    reasons: dict[str, list[str]] = {}
    for item in result.skipped:
        reasons.setdefault(item.reason, []).append(item.file_path)
    for reason, paths in reasons.items():
        shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
        lines.append(f"- skipped {shown}: {reason}")
    return "\n".join(lines) + "\n"


def code_for_result(result: CodeForResult) -> str:
    target = result.file_path if result.line is None else f"{result.file_path}:{result.line}"
    count = len(result.items)
    lines = [f"## Memories about {target} ({count} item{'' if count == 1 else 's'})"]
    if result.items:
        lines.append("")
    for item in result.items:
        where = ", ".join(
            f"{a.qualname or a.graph_node_id} {_line_range(a)}".strip() + state_note(a)
            for a in item.anchors
        )
        lines.append(
            f"- [{item.short_id}] {item.valid_from[:10]} · {item.kind} — "
            f"{one_line(item.content)} ({where})"
        )
    return "\n".join(lines) + "\n"


def code_to_result(result: CodeToResult) -> str:
    count = len(result.anchors)
    lines = [
        f"## Code anchors of [{result.short_id}] ({count} anchor{'' if count == 1 else 's'})",
        "",
        f"{result.kind} — {one_line(result.content)}",
    ]
    if result.anchors:
        lines.append("")
    for anchor in result.anchors:
        via = f" via entity {anchor.entity}" if anchor.entity else ""
        lines.append(
            f"- {anchor.location} · {anchor.kind or 'symbol'} "
            f"{anchor.qualname or anchor.graph_node_id}{via}{state_note(anchor)}"
        )
    return "\n".join(lines) + "\n"


def staleness_report(report: StalenessReport) -> str:
    memories = len({item.id for item in report.stale})
    head = (
        f"## Staleness: {report.checked} anchored "
        f"memor{'y' if report.checked == 1 else 'ies'} checked, "
        + (f"{memories} stale" if memories else "none stale")
    )
    lines = [head]
    if report.stale:
        lines.append("")
    for item in report.stale:
        lines.append(
            f"- [{item.short_id}] {item.file_path} · {item.qualname or item.graph_node_id}"
            f" — {item.reason}: {item.detail} — {one_line(item.content)}"
        )
    if report.unverifiable:
        lines += ["", f"{report.unverifiable} anchor(s) carry no comparable source hash."]
    return "\n".join(lines) + "\n"


def _line_range(anchor: CodeAnchor) -> str:
    """The lines code-for shows: today's, none when the code is gone (its note says
    where it was)."""
    if anchor.start_line is None or (anchor.state is not None and anchor.lines_now is None):
        return ""
    return f"L{anchor.start_line}-{anchor.end_line or anchor.start_line}"


def state_note(anchor: CodeAnchor) -> str:
    """What became of an anchor's code since it was anchored, for every view that shows
    an anchor; nothing when it is as it was (or was not checked)."""
    state = anchor.state
    if state is None or state == "fresh":
        return ""
    now = _lines(anchor.lines_now)
    then = _lines(anchor.lines_recorded)
    if state == "moved":
        return f" — moved: {then} when anchored, {now} now"
    if state == "changed":
        moved = now and anchor.lines_now != anchor.lines_recorded
        return f" — changed since anchored ({now} now)" if moved else " — changed since anchored"
    if state == "removed":
        return f" — removed since anchored (was {then})" if then else " — removed since anchored"
    return f" — {state}"


def _lines(lines: tuple[int, int] | None) -> str:
    return "" if lines is None else f"L{lines[0]}-{lines[1]}"


# The views the code commands emit (cli/code_commands.py), by name.
VIEWS: dict[str, Callable[[Any], str]] = {
    "code_index": index_result,
    "code_for": code_for_result,
    "code_to": code_to_result,
    "verify_staleness": staleness_report,
}
