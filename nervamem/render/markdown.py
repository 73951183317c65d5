"""Markdown (plain text) renderings: what agents read and what pipes get by default.

Whatever a view holds, :func:`render` returns it with control characters escaped
(nervamem/visible.py): the text may reach a person's terminal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..visible import one_line, visible

if TYPE_CHECKING:  # annotations only: `store` prints an ID without building the models
    from ..browse import Link, ListedNode, NodeDetail
    from ..code.values import CodeAnchor
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
    from ..team.hooks import BackfillResult, CommitRecord


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
        lines += [
            f"purged {node} (an entity only it named)"
            if node.startswith("e_")
            else f"purged {node} (a duplicate of it that consolidation forgot)"
            for node in result.removed
        ]
        return "\n".join(lines) + "\n"
    if view == "ns_list":
        infos: list[NamespaceInfo] = payload
        lines = [f"## Namespaces ({len(infos)})", ""]
        lines += [
            f"- {info.name}: {info.nodes} node{'' if info.nodes == 1 else 's'}" for info in infos
        ]
        return "\n".join(lines) + "\n"
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
    if view == "hooks_install":
        return "".join(f"{change.action} {change.path}\n" for change in payload)
    if view in ("sync", "import"):
        return _sync(view, payload)
    if view in ("code_index", "code_for", "code_to", "verify_staleness"):
        from .code_markdown import VIEWS  # here: only the code commands load it

        return VIEWS[view](payload)
    if view == "consolidate":
        return _consolidation(payload)
    if view == "show":
        return "\n".join(_show(detail) for detail in payload)
    if view == "list":
        return _list(payload)
    if view == "hooks_record":
        return _commit_line(payload) + "\n"
    if view == "hooks_backfill":
        return _backfill(payload)
    raise ValueError(f"no markdown renderer for {view}")


def _sync(view: str, report: SyncReport) -> str:
    what = "Synced" if view == "sync" else "Imported"
    new = report.imported
    lines = [
        f"{what}: {new} new event{'' if new == 1 else 's'}, {report.already} already held"
        + (f", {len(report.problems)} skipped" if report.problems else "")
    ]
    if report.rebuilt:
        lines[0] += " (event files it held were gone, e.g. after a checkout: made again)"
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


# How an edge reads from the node shown: (edge kind, direction) -> label.
LINK_LABELS = {
    ("SUPERSEDES", "out"): "supersedes",
    ("SUPERSEDES", "in"): "superseded by",
    ("CONTRADICTS", "out"): "contradicts",
    ("CONTRADICTS", "in"): "contradicted by",
    ("CAUSED", "out"): "caused",
    ("CAUSED", "in"): "caused by",
    ("DERIVED_FROM", "out"): "derived from",
    ("DERIVED_FROM", "in"): "source of",
    ("OCCURRED_IN", "in"): "in this session",
    ("ABOUT", "in"): "about it",
    ("TOUCHES", "in"): "anchored by",
}


def link_label(link: Link) -> str:
    return LINK_LABELS.get((link.edge, link.direction), f"{link.edge} {link.direction}")


def link_text(link: Link) -> str:
    forgotten = " (forgotten)" if link.tombstoned else ""
    return f"[{link.short_id}] {link.kind} — {one_line(link.content)}{forgotten}"


def anchor_text(anchor: CodeAnchor) -> str:
    from .code_markdown import state_note

    via = f" via entity {anchor.entity}" if anchor.entity else ""
    return f"{anchor.location} {anchor.qualname or anchor.graph_node_id}{via}{state_note(anchor)}"


def _show(detail: NodeDetail) -> str:
    lines = [
        f"## [{detail.short_id}] {detail.kind} · {detail.status}",
        "",
        one_line(detail.content),
        "",
        f"- id: {detail.id}",
        f"- namespace: {detail.namespace}",
        f"- valid: {detail.valid_from} → {detail.valid_until or 'open'}",
        f"- recorded: {detail.recorded_at}",
        f"- confidence: {detail.confidence:g}",
    ]
    if detail.session is not None:
        lines.append(f"- session: [{detail.session.short_id}] {one_line(detail.session.content)}")
    if detail.entities:
        lines.append("- entities: " + ", ".join(one_line(e) for e in detail.entities))
    if detail.rationale:
        lines.append(f"- rationale: {one_line(detail.rationale)}")
    for alternative in detail.rejected:
        lines.append(f"- rejected: {one_line(alternative)}")
    for link in detail.links:
        lines.append(f"- {link_label(link)}: {link_text(link)}")
    lines += [f"- anchored: {one_line(anchor_text(anchor))}" for anchor in detail.anchors]
    for key, value in sorted(detail.data.items()):
        lines.append(f"- {key}: {one_line(str(value))}")
    return "\n".join(lines) + "\n"


def _list(items: list[ListedNode]) -> str:
    lines = [f"## Memories ({len(items)} item{'' if len(items) == 1 else 's'}, newest first)"]
    if items:
        lines.append("")
    for item in items:
        status = "" if item.status == "current" else f" [{item.status}]"
        session = f" · session {item.session_short_id}" if item.session_short_id else ""
        lines.append(
            f"- [{item.short_id}] {item.recorded_at[:10]} · {item.kind}{session} — "
            f"{one_line(item.content)}{status}"
        )
    return "\n".join(lines) + "\n"


def _commit_line(record: CommitRecord) -> str:
    if record.already:
        return f"already recorded {record.short} as {record.action_short}"
    parts = [f"recorded {record.short} as {record.action_short}"]
    if record.decisions:
        parts.append(f"{len(record.decisions)} decision{'' if len(record.decisions) == 1 else 's'}")
    if record.symbols:
        parts.append(f"anchored to {', '.join(record.symbols)}")
    return "; ".join(parts) + f" — {one_line(record.subject)}"


def _backfill(result: BackfillResult) -> str:
    count = len(result.recorded)
    span = f" after {result.since}" if result.since else ""
    lines = [
        f"## Backfill of {result.repository}{span}: {count} commit{'' if count == 1 else 's'} "
        f"recorded, {result.already} already recorded"
    ]
    if result.recorded:
        lines.append("")
    lines += [f"- {_commit_line(record)}" for record in result.recorded]
    return "\n".join(lines) + "\n"
