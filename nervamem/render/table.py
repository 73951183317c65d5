"""Rich renderings for people at a terminal. The only module that imports Rich.

Every piece of stored or user-supplied text is passed through visible() before Rich sees
it: Rich prints an escape sequence raw (it strips only BEL, backspace, CR, VT and FF).
"""

from __future__ import annotations

from typing import Any

from ..visible import visible

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
                item.superseded_by_short or "",
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
        console.print(_list_table(payload, narrow=console.width < NARROW_COLUMNS))
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
