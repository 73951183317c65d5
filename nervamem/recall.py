"""Recall: FTS5 stages -> graph expansion -> temporal mask -> scoring.

Rules a reader must not break:
* User text is data, never FTS5 syntax: every term is quoted before MATCH.
* The temporal mask applies to search hits and expanded neighbours alike. Without
  ``as_of``: open validity, not superseded, not tombstoned. With ``as_of = T``:
  ``valid_from <= T < valid_until`` (or open), not tombstoned.
* Nothing crosses a namespace: every query filters by it.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from .timeparse import to_datetime

_TERM = re.compile(r"[^\W_]+", re.UNICODE)
MAX_QUERY_TERMS = 32
STAGE_LIMIT = 200
EXPANSION_DECAY = 0.6
EXPANSION_FANOUT = 8
EXPANSION_SEEDS = 30
RECENCY_HALF_LIFE_DAYS = 30.0

# Words that carry no topic: in the prefix and OR stages they only make FTS5 score most
# of the corpus (slow) and drown the words that matter. The exact-phrase stage keeps them.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves ever also many much get got""".split()
)

# Edges that expansion follows, in both directions. OCCURRED_IN is left out on purpose:
# a session links to everything that happened in it, so following it would pull a whole
# session into every recall. ABOUT and TOUCHES reach an entity and what else is about it
# (bounded by EXPANSION_FANOUT, newest first, so a hub entity cannot flood the result).
# SUPERSEDES is left out: a superseded version is masked out anyway.
EXPANSION_EDGES = ("ABOUT", "TOUCHES", "CAUSED", "DERIVED_FROM", "CONTRADICTS")

NODE_COLUMNS = (
    "n.id, n.kind, n.content, n.valid_from, n.valid_until, n.recorded_at, "
    "n.confidence, n.access_count"
)


@dataclass
class Candidate:
    id: str
    kind: str
    content: str
    valid_from: str
    valid_until: str | None
    recorded_at: str
    confidence: float
    access_count: int
    relevance: float
    via: str


def query_terms(text: str) -> list[str]:
    return [t.lower() for t in _TERM.findall(text)][:MAX_QUERY_TERMS]


def content_terms(terms: Sequence[str]) -> list[str]:
    kept = [t for t in dict.fromkeys(terms) if t not in STOPWORDS]
    return kept or list(dict.fromkeys(terms))


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def fts_stages(text: str) -> list[str]:
    """MATCH expressions to try in order: exact phrase, every term as prefix, any term."""
    terms = query_terms(text)
    if not terms:
        return []
    keys = content_terms(terms)
    stages = [_quote(" ".join(terms))]
    stages.append(" ".join(_quote(t) + "*" for t in keys))
    if len(keys) > 1:
        stages.append(" OR ".join(_quote(t) for t in keys))
    return list(dict.fromkeys(stages))


def mask_sql(as_of: str | None, alias: str = "n") -> tuple[str, list[str]]:
    if as_of is None:
        return (
            f"{alias}.tombstoned = 0 AND {alias}.valid_until IS NULL AND NOT EXISTS "
            f"(SELECT 1 FROM mem_edges s WHERE s.dst = {alias}.id AND s.kind = 'SUPERSEDES')",
            [],
        )
    return (
        f"{alias}.tombstoned = 0 AND {alias}.valid_from <= ? "
        f"AND ({alias}.valid_until IS NULL OR {alias}.valid_until > ?)",
        [as_of, as_of],
    )


def search(
    conn: sqlite3.Connection,
    namespace: str,
    query: str,
    *,
    as_of: str | None,
    kinds: Sequence[str] | None,
    want: int,
    apply_mask: bool = True,
) -> dict[str, Candidate]:
    """Run the FTS stages in order; a later stage runs only while fewer than ``want``
    candidates were found, and its hits rank below every hit of the stages before it."""
    found: dict[str, Candidate] = {}
    if apply_mask:
        mask, mask_params = mask_sql(as_of)
    else:
        mask, mask_params = "n.tombstoned = 0", []
    kind_sql = ""
    kind_params: list[str] = []
    if kinds:
        kind_sql = f" AND n.kind IN ({','.join('?' * len(kinds))})"
        kind_params = list(kinds)
    floor = 1.0
    for expression in fts_stages(query):
        if len(found) >= want:
            break
        rows = conn.execute(
            f"SELECT {NODE_COLUMNS}, bm25(mem_fts) AS rank FROM mem_fts "
            "JOIN mem_nodes n ON n.seq = mem_fts.rowid "
            f"WHERE mem_fts MATCH ? AND n.namespace = ? AND {mask}{kind_sql} "
            "ORDER BY rank LIMIT ?",
            [expression, namespace, *mask_params, *kind_params, STAGE_LIMIT],
        ).fetchall()
        new_rows = [row for row in rows if row[0] not in found]
        if not new_rows:
            continue
        best = max(-row[8] for row in new_rows) or 1.0
        stage_top = floor
        for row in new_rows:
            # bm25() is negative, better is lower; normalise to (0, 1] within the stage.
            relevance = stage_top * max(-row[8], 0.0) / best if best > 0 else stage_top
            found[row[0]] = Candidate(*row[:8], relevance=max(relevance, 1e-6), via="search")
        floor = min(c.relevance for c in found.values()) * 0.999
    return found


def expand(
    conn: sqlite3.Connection,
    namespace: str,
    seeds: dict[str, Candidate],
    *,
    hops: int,
    as_of: str | None,
    kinds: Sequence[str] | None,
) -> dict[str, Candidate]:
    """Neighbours of the best seeds, each with 0.6x its parent's relevance per hop."""
    result = dict(seeds)
    frontier = sorted(seeds.values(), key=lambda c: -c.relevance)[:EXPANSION_SEEDS]
    edge_list = ",".join(f"'{kind}'" for kind in EXPANSION_EDGES)
    mask, mask_params = mask_sql(as_of)
    for _ in range(hops):
        inherited: dict[str, float] = {}
        for parent in frontier:
            rows = conn.execute(
                f"SELECT dst FROM mem_edges WHERE src = ? AND kind IN ({edge_list}) "
                f"UNION SELECT src FROM mem_edges WHERE dst = ? AND kind IN ({edge_list}) "
                "ORDER BY 1 DESC LIMIT ?",
                (parent.id, parent.id, EXPANSION_FANOUT),
            ).fetchall()
            for (neighbour,) in rows:
                if neighbour in result:
                    continue
                score = parent.relevance * EXPANSION_DECAY
                if score > inherited.get(neighbour, 0.0):
                    inherited[neighbour] = score
        if not inherited:
            break
        frontier = []
        for row in _fetch_masked(conn, namespace, list(inherited), mask, mask_params):
            candidate = Candidate(*row, relevance=inherited[row[0]], via="expansion")
            frontier.append(candidate)
            if not kinds or candidate.kind in kinds:
                result[candidate.id] = candidate
        frontier.sort(key=lambda c: -c.relevance)
        frontier = frontier[:EXPANSION_SEEDS]
    return result


def _fetch_masked(
    conn: sqlite3.Connection, namespace: str, ids: list[str], mask: str, mask_params: list[str]
) -> list[tuple[str, str, str, str, str | None, str, float, int]]:
    rows: list[tuple[str, str, str, str, str | None, str, float, int]] = []
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        rows += conn.execute(
            f"SELECT {NODE_COLUMNS} FROM mem_nodes n WHERE n.id IN "
            f"({','.join('?' * len(chunk))}) AND n.namespace = ? AND {mask}",
            [*chunk, namespace, *mask_params],
        ).fetchall()
    return rows


def degrees(conn: sqlite3.Connection, ids: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    id_list = list(ids)
    for start in range(0, len(id_list), 500):
        chunk = id_list[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for column in ("src", "dst"):
            for node_id, count in conn.execute(
                f"SELECT {column}, count(*) FROM mem_edges WHERE {column} IN ({marks}) "
                f"GROUP BY {column}",
                chunk,
            ):
                counts[node_id] = counts.get(node_id, 0) + count
    return counts


def recency(recorded_at: str, reference: datetime) -> float:
    age_days = max((reference - to_datetime(recorded_at)).total_seconds() / 86400.0, 0.0)
    return math.exp(-math.log(2) * age_days / RECENCY_HALF_LIFE_DAYS)


def frequency(access_count: int) -> float:
    return 1.0 + 0.1 * math.log1p(max(access_count, 0))


def connectivity(degree: int) -> float:
    return 1.0 + 0.1 * math.log1p(max(degree, 0))


def sessions_of(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        for src, dst in conn.execute(
            f"SELECT src, dst FROM mem_edges WHERE kind = 'OCCURRED_IN' AND src IN "
            f"({','.join('?' * len(chunk))})",
            chunk,
        ):
            found[src] = dst
    return found
