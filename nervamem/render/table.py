"""Rich renderings for people at a terminal. The only module that imports Rich.

Every piece of stored or user-supplied text is passed through visible() before Rich sees
it: Rich prints an escape sequence raw (it strips only BEL, backspace, CR, VT and FF).
"""

from __future__ import annotations

from typing import Any

from ..visible import visible


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
