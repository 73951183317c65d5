"""Entity resolution: many spellings, one entity node.

Order (concepts.md): the alias as given (case-insensitive), its CamelCase->snake_case
form, its separator-stripped form, an FTS phrase match on entity content with the same
number of words (catches stemming variants such as ``UserSessions``/``user_session``),
else a new entity with four alias forms: original, basic slug, snake_case, stripped.
"""

from __future__ import annotations

import re
import sqlite3

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[\s\-_.:/\\]+")
_NON_ALNUM = re.compile(r"[\W_]+", re.UNICODE)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def camel_to_snake(name: str) -> str:
    snake = _CAMEL_BOUNDARY.sub("_", name.strip())
    return _SEPARATORS.sub("_", snake).strip("_").lower()


def basic_slug(name: str) -> str:
    return _NON_ALNUM.sub("-", name.strip().lower()).strip("-")


def stripped(name: str) -> str:
    return _NON_ALNUM.sub("", name).lower()


def alias_forms(name: str) -> list[str]:
    """The four alias forms registered for a new entity, without duplicates or blanks."""
    forms: list[str] = []
    for form in (name.strip(), basic_slug(name), camel_to_snake(name), stripped(name)):
        if form and form.lower() not in (f.lower() for f in forms):
            forms.append(form)
    return forms


def words(name: str) -> list[str]:
    return _WORD.findall(camel_to_snake(name))


def find_entity(conn: sqlite3.Connection, namespace: str, name: str) -> str | None:
    """Return the ID of the live entity that ``name`` denotes, or None."""
    for candidate in dict.fromkeys((name.strip(), camel_to_snake(name), stripped(name))):
        if not candidate:
            continue
        row = conn.execute(
            "SELECT a.entity_id FROM mem_aliases a JOIN mem_nodes n ON n.id = a.entity_id "
            "WHERE a.namespace = ? AND a.alias = ? AND n.tombstoned = 0",
            (namespace, candidate),
        ).fetchone()
        if row:
            return str(row[0])
    return _find_by_fts(conn, namespace, name)


def _find_by_fts(conn: sqlite3.Connection, namespace: str, name: str) -> str | None:
    name_words = words(name)
    if not name_words:
        return None
    phrase = '"' + " ".join(w.replace('"', '""') for w in name_words) + '"'
    rows = conn.execute(
        "SELECT n.id, n.content FROM mem_fts JOIN mem_nodes n ON n.seq = mem_fts.rowid "
        "WHERE mem_fts MATCH ? AND n.kind = 'entity' AND n.namespace = ? AND n.tombstoned = 0 "
        "ORDER BY bm25(mem_fts) LIMIT 20",
        (phrase, namespace),
    ).fetchall()
    for entity_id, content in rows:
        # A phrase hit inside a longer name ("auth" in "auth_service") is another entity.
        if len(words(content)) == len(name_words):
            return str(entity_id)
    return None
