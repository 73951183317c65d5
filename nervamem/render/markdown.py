"""Markdown (plain text) renderings: what agents read and what pipes get by default.

Whatever a view holds, :func:`render` returns it with control characters escaped
(nervamem/visible.py): the text may reach a person's terminal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..visible import one_line, visible

if TYPE_CHECKING:  # annotations only: `store` prints an ID without building the models
    from ..consolidate import ConsolidationResult
    from ..models import (
        CurrentContext,
        ForgetResult,
        InitResult,
        NamespaceInfo,
        Stats,
        SyncReport,
        TimelineItem,
    )


def _timeline(items: list[TimelineItem]) -> str:
    lines = [f"## Timeline ({len(items)} item{'' if len(items) == 1 else 's'})"]
    if items:
        lines.append("")
    for item in items:
        until = item.valid_until[:10] if item.valid_until else "now"
        marker = f" [superseded by {item.superseded_by_short}]" if item.superseded_by else ""
        if item.conflicts_with_short:
            marker += " [conflicts with " + ", ".join(item.conflicts_with_short) + "]"
        lines.append(
            f"- [{item.short_id}] {item.valid_from[:10]} → {until} · {item.kind} — "
            f"{one_line(item.content)}{marker}"
        )
    return "\n".join(lines) + "\n"


def _stats(stats: Stats) -> str:
    lines = [f"## Memory stats: namespace {stats.namespace}", ""]
    lines.append("- nodes: " + (", ".join(f"{k} {v}" for k, v in stats.nodes.items()) or "none"))
    lines.append("- edges: " + (", ".join(f"{k} {v}" for k, v in stats.edges.items()) or "none"))
    lines.append(f"- tombstoned: {stats.tombstoned}")
    lines.append(f"- superseded: {stats.superseded}")
    if stats.conflicts:
        lines.append(f"- conflicts: {stats.conflicts} (supersede both versions to resolve)")
    lines.append(f"- pending consolidation: {stats.pending_consolidation}")
    lines.append(f"- store: {stats.db_path} ({stats.db_bytes} bytes)")
    return "\n".join(lines) + "\n"


def render(view: str, payload: Any) -> str:
    return visible(_render(view, payload))


def _render(view: str, payload: Any) -> str:
    if view == "id":
        return f"{payload}\n"
    if view == "recall":
        return str(payload.markdown)
    if view == "timeline":
        return _timeline(payload)
    if view == "stats":
        return _stats(payload)
    if view == "forget":
        result: ForgetResult = payload
        verb = "purged" if result.purged else "already forgotten" if result.already else "forgot"
        lines = [f"{verb} {result.id}"]
        lines += [f"purged {entity} (an entity only it named)" for entity in result.removed]
        return "\n".join(lines) + "\n"
    if view == "ns_list":
        infos: list[NamespaceInfo] = payload
        return "".join(f"{info.name}\t{info.nodes}\n" for info in infos)
    if view in ("ns_current", "ns_switch"):
        context: CurrentContext = payload
        return f"namespace: {context.namespace}\nsession: {context.session or '-'}\n"
    if view == "init":
        init: InitResult = payload
        text = f"{'Initialised' if init.created else 'Already initialised'} {init.db_path}\n"
        if init.shared:
            text += f"Shared: events in {init.events_folder}"
            if init.events_written:
                text += f" ({init.events_written} written from its history)"
            text += "\n"
        return text
    if view in ("sync", "import"):
        return _sync(view, payload)
    if view in ("code_index", "code_for", "code_to", "verify_staleness"):
        from .code_markdown import VIEWS  # here: only the code commands load it

        return VIEWS[view](payload)
    if view == "consolidate":
        return _consolidation(payload)
    raise ValueError(f"no markdown renderer for {view}")


def _sync(view: str, report: SyncReport) -> str:
    what = "Synced" if view == "sync" else "Imported"
    new = report.imported
    lines = [
        f"{what}: {new} new event{'' if new == 1 else 's'}, {report.already} already held"
        + (f", {len(report.problems)} skipped" if report.problems else "")
    ]
    lines += [f"- purged {node_id}" for node_id in report.purged]
    lines += [f"- skipped {p.source}: {p.reason}" for p in report.problems]
    return "\n".join(lines) + "\n"


def _consolidation(result: ConsolidationResult) -> str:
    jobs = result.jobs_processed
    if result.dry_run:
        head = f"## Consolidation dry run ({result.strategy}): {jobs} pending job"
        head += f"{'' if jobs == 1 else 's'}, {len(result.tombstoned)} would be tombstoned"
    else:
        head = f"## Consolidation ({result.strategy}): {jobs} job{'' if jobs == 1 else 's'} "
        head += f"processed, {len(result.tombstoned)} tombstoned"
    lines = [head]
    if result.duplicates:
        lines.append("")
    for dup in result.duplicates:
        lines.append(f"- [{dup.short_id}] duplicate of [{dup.duplicate_of_short}] ({dup.reason})")
    return "\n".join(lines) + "\n"
