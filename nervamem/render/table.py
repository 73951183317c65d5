"""Rich renderings for people at a terminal. The only module that imports Rich.

Every piece of stored or user-supplied text is passed through visible() before Rich sees
it: Rich prints an escape sequence raw (it strips only BEL, backspace, CR, VT and FF).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..visible import one_line, visible

# Below this many columns, tables put their short fields together in one column.
NARROW_COLUMNS = 72


def render(view: str, payload: Any) -> None:
    from rich.console import Console
    from rich.markdown import Markdown
    from rich.table import Table
    from rich.text import Text  # user text is shown as is, never read as Rich markup

    from . import json as json_renderer
    from . import markdown

    console = Console()
    if view == "recall":
        # payload.markdown has its controls escaped already (visible.one_line), but a numeric
        # character reference is the one way Markdown makes a character its source lacks:
        # "&#x202e;" would become a bidi override, so it is shown as written. A link shows
        # its target instead of becoming an OSC 8 hyperlink whose target is hidden.
        text = payload.markdown.replace("&#", "\\&#")
        console.print(Markdown(text, hyperlinks=False))
        return
    narrow = console.width < NARROW_COLUMNS
    if view in NARROW_VIEWS and narrow:
        console.print(NARROW_VIEWS[view](payload))
        return
    if view in WIDE_VIEWS:
        console.print(WIDE_VIEWS[view](payload))
        return
    if view == "timeline":
        table = Table(title=f"Timeline ({len(payload)} items)")
        for column in ("id", "valid from", "valid until", "kind", "content", "superseded by"):
            table.add_column(column, overflow="fold")
        for item in payload:
            table.add_row(
                item.short_id,
                item.valid_from[:10],
                item.valid_until[:10] if item.valid_until else "now",
                item.kind,
                Text(visible(item.content)),
                item.superseded_by_short
                or (
                    "conflicts with " + ", ".join(item.conflicts_with_short)
                    if item.conflicts_with_short
                    else ""
                ),
                style="dim" if item.superseded_by else None,
            )
        console.print(table)
        return
    if view == "ns_list":
        table = Table()
        table.add_column("namespace")
        table.add_column("nodes", justify="right")
        for info in payload:
            table.add_row(Text(visible(info.name)), str(info.nodes))
        console.print(table)
        return
    if view == "show":
        for detail in payload:
            console.print(_show_table(detail))
        return
    if view == "list":
        console.print(_list_table(payload, narrow=narrow))
        return
    if view in ("hooks_record", "hooks_backfill"):
        # Lines of text are their best table: print the Markdown, markup off.
        console.print(markdown.render(view, payload), end="", markup=False, highlight=False)
        return
    document = json_renderer.to_document(view, payload)
    if isinstance(document, dict) and view not in ("id",):
        table = Table(show_header=False)
        table.add_column("key", style="bold")
        table.add_column("value", overflow="fold")
        for key, value in document.items():
            table.add_row(str(key), Text(_cell(value)))
        console.print(table)
        return
    console.print(markdown.render(view, payload), end="", markup=False, highlight=False)


def _cell(value: Any) -> str:
    if isinstance(value, dict):
        return visible(", ".join(f"{k} {v}" for k, v in value.items())) or "-"
    if isinstance(value, (list, tuple)):  # asdict keeps a frozen dataclass's tuples
        return "\n".join(_cell(v) for v in value) or "-"
    return "-" if value is None else visible(str(value))


def _show_table(detail: Any) -> Any:
    """One node as a two-column table: a field per row, each link on its own row."""
    from rich.table import Table
    from rich.text import Text

    from .markdown import anchor_text, link_label, link_text

    table = Table(
        title=Text(visible(f"[{detail.short_id}] {detail.kind} · {detail.status}")),
        show_header=False,
        style="dim" if detail.status != "current" else "",
    )
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    rows: list[tuple[str, str]] = [
        ("content", detail.content),
        ("id", detail.id),
        ("namespace", detail.namespace),
        ("valid", f"{detail.valid_from} → {detail.valid_until or 'open'}"),
        ("recorded", detail.recorded_at),
        ("confidence", f"{detail.confidence:g}"),
    ]
    if detail.session is not None:
        rows.append(("session", f"[{detail.session.short_id}] {detail.session.content}"))
    if detail.entities:
        rows.append(("entities", ", ".join(detail.entities)))
    if detail.rationale:
        rows.append(("rationale", detail.rationale))
    rows += [("rejected", alternative) for alternative in detail.rejected]
    rows += [(link_label(link), link_text(link)) for link in detail.links]
    rows += [("anchored", anchor_text(anchor)) for anchor in detail.anchors]
    rows += [(key, str(value)) for key, value in sorted(detail.data.items())]
    for field, value in rows:
        table.add_row(field, Text(visible(value)))
    return table


def _list_table(items: list[Any], *, narrow: bool) -> Any:
    """Newest first. In a narrow terminal the ID, kind and date share the first column,
    one per line, so the content keeps most of the width."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"Memories ({len(items)}, newest first)", show_lines=narrow)
    if narrow:
        table.add_column("memory", no_wrap=True)
    else:
        for column in ("id", "recorded", "kind"):
            table.add_column(column, no_wrap=True)
    table.add_column("content", overflow="fold", ratio=1, min_width=16)
    for item in items:
        status = "" if item.status == "current" else f" [{item.status}]"
        facts = (item.short_id, item.recorded_at[:10], item.kind)
        table.add_row(
            *(["\n".join(facts)] if narrow else facts),
            Text(visible(item.content + status)),
            style="dim" if item.status != "current" else None,
        )
    return table


# ---------------------------------------------------------------- narrow terminals
# Below NARROW_COLUMNS a table keeps two columns: the short facts of a row (ID, dates,
# kind), one per line, and its text (content and the rest), which gets the width.


def _two_columns(title: str, head: str, text_head: str, rows: list[tuple[str, str, bool]]) -> Any:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(visible(title)), show_lines=True)
    table.add_column(head, no_wrap=True)
    table.add_column(text_head, overflow="fold", ratio=1, min_width=16)
    for facts, text, dim in rows:
        table.add_row(Text(visible(facts)), Text(visible(text)), style="dim" if dim else None)
    return table


def _timeline_narrow(items: list[Any]) -> Any:
    rows = []
    for item in items:
        until = item.valid_until[:10] if item.valid_until else "now"
        later = f"\nsuperseded by {item.superseded_by_short}" if item.superseded_by else ""
        facts = f"{item.short_id}\n{item.kind}\n{item.valid_from[:10]}\n→ {until}"
        rows.append((facts, one_line(item.content) + later, bool(item.superseded_by)))
    return _two_columns(f"Timeline ({len(items)} items)", "version", "content", rows)


def _code_for_rows(result: Any) -> list[tuple[Any, str]]:
    return [(item, "\n".join(_anchor_label(a) for a in item.anchors)) for item in result.items]


def _anchor_label(anchor: Any) -> str:
    from .code_markdown import state_note

    lines = ""
    if anchor.start_line is not None and (anchor.state is None or anchor.lines_now is not None):
        lines = f" L{anchor.start_line}-{anchor.end_line or anchor.start_line}"
    return f"{anchor.qualname or anchor.graph_node_id}{lines}{state_note(anchor)}"


def _code_for_title(result: Any) -> str:
    target = result.file_path if result.line is None else f"{result.file_path}:{result.line}"
    return f"Memories about {target} ({len(result.items)})"


def _code_for_narrow(result: Any) -> Any:
    rows = [
        (
            f"{item.short_id}\n{item.kind}\n{item.valid_from[:10]}",
            f"{one_line(item.content)}\n↳ {code}",
            False,
        )
        for item, code in _code_for_rows(result)
    ]
    return _two_columns(_code_for_title(result), "memory", "content ↳ code", rows)


def _code_for_wide(result: Any) -> Any:
    table = _wide_table(_code_for_title(result), ("id", "date", "kind"), ("content", "code"))
    for item, code in _code_for_rows(result):
        _add(table, (item.short_id, item.valid_from[:10], item.kind, one_line(item.content), code))
    return table


def _code_to_title(result: Any) -> str:
    return f"Code anchors of [{result.short_id}] {result.kind} — {one_line(result.content)}"


def _code_to_narrow(result: Any) -> Any:
    rows = [
        (
            anchor.kind or "symbol",
            f"{anchor.location}\n{_anchor_label(anchor)}{_via(anchor)}",
            False,
        )
        for anchor in result.anchors
    ]
    return _two_columns(_code_to_title(result), "kind", "where", rows)


def _code_to_wide(result: Any) -> Any:
    from .code_markdown import state_note

    table = _wide_table(_code_to_title(result), ("kind",), ("location", "symbol", "via entity"))
    for anchor in result.anchors:
        _add(
            table,
            (anchor.kind or "symbol", anchor.location,
             (anchor.qualname or anchor.graph_node_id) + state_note(anchor), anchor.entity),
        )  # fmt: skip
    return table


def _via(anchor: Any) -> str:
    return f"\nvia entity {anchor.entity}" if anchor.entity else ""


def _staleness_title(report: Any) -> str:
    stale = len({item.id for item in report.stale})
    title = f"Staleness: {report.checked} anchored memories checked, {stale or 'none'} stale"
    if report.unverifiable:
        title += f" ({report.unverifiable} anchors without a comparable hash)"
    return title


def _staleness_narrow(report: Any) -> Any:
    rows = [
        (
            f"{item.short_id}\n{item.kind}\n{item.reason}",
            f"{item.file_path} · {item.qualname or item.graph_node_id}\n{item.detail}\n"
            f"{one_line(item.content)}",
            False,
        )
        for item in report.stale
    ]
    return _two_columns(_staleness_title(report), "memory", "code · why · content", rows)


def _staleness_wide(report: Any) -> Any:
    table = _wide_table(_staleness_title(report), ("id", "reason"), ("code · why", "content"))
    for item in report.stale:
        code = f"{item.file_path} · {item.qualname or item.graph_node_id}\n{item.detail}"
        _add(table, (item.short_id, item.reason, code, one_line(item.content)))
    return table


def _wide_table(title: str, short: tuple[str, ...], long: tuple[str, ...]) -> Any:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(visible(title)))
    for column in short:
        table.add_column(column, no_wrap=True)
    for column in long:
        table.add_column(column, overflow="fold", ratio=1)
    return table


def _add(table: Any, cells: tuple[str, ...]) -> None:
    from rich.text import Text

    table.add_row(*(Text(visible(cell)) for cell in cells))


def _consolidation(result: Any) -> Any:
    from rich.console import Group
    from rich.text import Text

    from .markdown import render

    # The summary above the table, not as its title: a title wraps to the table's width.
    summary = Text(render("consolidate", result).splitlines()[0].removeprefix("## "))
    if not result.duplicates:
        return summary
    table = _wide_table("", ("id", "duplicate of"), ("reason",))
    for dup in result.duplicates:
        _add(table, (dup.short_id, dup.duplicate_of_short, dup.reason))
    return Group(summary, table)


NARROW_VIEWS: dict[str, Callable[[Any], Any]] = {
    "timeline": _timeline_narrow,
    "code_for": _code_for_narrow,
    "code_to": _code_to_narrow,
    "verify_staleness": _staleness_narrow,
}
WIDE_VIEWS: dict[str, Callable[[Any], Any]] = {
    "code_for": _code_for_wide,
    "code_to": _code_to_wide,
    "verify_staleness": _staleness_wide,
    "consolidate": _consolidation,
}
