"""The temporal mask: which nodes recall may show as of a moment.

Rules a reader must not break:
* The mask applies to search hits, session context and expanded neighbours alike: every
  stage that reads node rows filters them with :func:`mask_sql`.
* With ``as_of = T``: ``valid_from <= T < valid_until`` (or open), not tombstoned. Recall
  without ``--as-of`` passes now as T (recall/api.py): a memory valid from a later date
  is not true yet.
* ``as_of = None`` (open validity, not tombstoned, whatever the dates) is code-for's
  "current memories".
"""

from __future__ import annotations

from typing import NamedTuple


class KnownAt(NamedTuple):
    """``--as-of T --known-at K``: what was true at T according to what had been recorded
    by K (transaction time). Memories recorded after K, supersessions recorded after K
    and forgetting after K are ignored."""

    as_of: str
    known_at: str


# valid_until as it stood at K: the earlier of the end stated when the memory was stored
# (store --valid-until) and the earliest valid_from of the successors recorded by then
# (none and no stated end: still open).
_UNTIL_KNOWN = (
    "(CASE WHEN {a}.valid_until IS NULL THEN NULL ELSE (SELECT CASE "
    "WHEN known IS NULL THEN stated WHEN stated IS NULL OR known < stated THEN known "
    "ELSE stated END FROM (SELECT (SELECT min(ks.valid_from) FROM mem_edges ke "
    "JOIN mem_nodes ks ON ks.id = ke.src WHERE ke.dst = {a}.id AND ke.kind = 'SUPERSEDES' "
    "AND ks.recorded_at <= ?) AS known, "
    "json_extract({a}.data, '$.stated_valid_until') AS stated) AS k) END)"
)


def until_known_sql(alias: str = "n") -> str:
    """SQL for a node's valid_until as known at a time (one ``?``: that time)."""
    return _UNTIL_KNOWN.format(a=alias)


def known_sql(alias: str = "n") -> str:
    """SQL: recorded by a time and not yet forgotten then (two ``?``: that time)."""
    return (
        f"{alias}.recorded_at <= ? AND ({alias}.tombstoned = 0 OR "
        f"({alias}.tombstoned_at IS NOT NULL AND {alias}.tombstoned_at > ?))"
    )


def mask_sql(as_of: str | KnownAt | None, alias: str = "n") -> tuple[str, list[str]]:
    if isinstance(as_of, KnownAt):
        until = until_known_sql(alias)
        return (
            f"{known_sql(alias)} AND {alias}.valid_from <= ? AND ({until} IS NULL OR {until} > ?)",
            [*[as_of.known_at] * 2, as_of.as_of, *[as_of.known_at] * 2, as_of.as_of],
        )
    if as_of is None:
        # "Not superseded" needs no edge lookup: valid_until is derived from the
        # SUPERSEDES edges in the same transaction that writes them (the earliest
        # valid_from of the superseders; store.py, bulk.py, purge's relink), so a node
        # with an incoming SUPERSEDES edge never has an open validity. The lookup it
        # replaces cost ~40 % of every candidate fetch.
        return f"{alias}.tombstoned = 0 AND {alias}.valid_until IS NULL", []
    return (
        f"{alias}.tombstoned = 0 AND {alias}.valid_from <= ? "
        f"AND ({alias}.valid_until IS NULL OR {alias}.valid_until > ?)",
        [as_of, as_of],
    )
