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


def mask_sql(as_of: str | None, alias: str = "n") -> tuple[str, list[str]]:
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
