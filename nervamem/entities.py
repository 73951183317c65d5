"""Entity resolution: many spellings, one entity node.

Order (concepts.md): the alias as given (case-insensitive), its CamelCase->snake_case
form, its folded form, an FTS phrase match on entity content with the same number of
words (catches stemming variants such as ``UserSessions``/``user_session``), else a new
entity with four alias forms: original, basic slug, snake_case, folded.

Invariant: normalisation folds case and separators, never digits or the boundaries
between digit runs. ``AuthService``, ``auth_service`` and ``auth-service`` are one
entity; ``v1_2`` and ``v12``, ``func_101_4`` and ``func_10_14`` are not. The folded form
therefore keeps one ``_`` where a separator stood between two digits. Stores made before
this rule hold separator-stripped aliases that join digit runs (``func_101_4`` ->
``func1014``): an alias hit counts only when the entity's own name folds to the same
key, and the FTS step only accepts a name with the same digit runs.
"""

from __future__ import annotations

import re

from .storage.dbapi import Connection
from .storage.text_index import text_index_of

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[\s\-_.:/\\]+")
_NON_ALNUM = re.compile(r"[\W_]+", re.UNICODE)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_DIGIT_GAP = re.compile(r"(?<=\d)[\W_]+(?=\d)", re.UNICODE)
_DIGIT_RUN = re.compile(r"\d+", re.UNICODE)


def camel_to_snake(name: str) -> str:
    snake = _CAMEL_BOUNDARY.sub("_", name.strip())
    return _SEPARATORS.sub("_", snake).strip("_").lower()


def basic_slug(name: str) -> str:
    return _NON_ALNUM.sub("-", name.strip().lower()).strip("-")


def stripped(name: str) -> str:
    """Every separator removed (``func_101_4`` -> ``func1014``): the alias form of stores
    made before digit boundaries were kept, and code symbol matching (code/names.py)."""
    return _NON_ALNUM.sub("", name).lower()


def folded(name: str) -> str:
    """Case and separators folded, digit boundaries kept: ``Auth-Service`` ->
    ``authservice``, ``func_101_4`` -> ``func101_4``, ``v1.2`` -> ``v1_2``."""
    return "_".join(stripped(part) for part in _DIGIT_GAP.split(name.strip()))


def digit_runs(name: str) -> list[str]:
    return _DIGIT_RUN.findall(name)


def alias_forms(name: str) -> list[str]:
    """The four alias forms registered for a new entity, without duplicates or blanks."""
    forms: list[str] = []
    for form in (name.strip(), basic_slug(name), camel_to_snake(name), folded(name)):
        if form and form.lower() not in (f.lower() for f in forms):
            forms.append(form)
    return forms


def words(name: str) -> list[str]:
    return _WORD.findall(camel_to_snake(name))


def lookup_forms(name: str) -> list[str]:
    """The aliases find_entity looks ``name`` up by, in order, without blanks or
    duplicates. The stripped form last: it finds entities of older stores by the alias
    they have."""
    forms = (name.strip(), camel_to_snake(name), folded(name), stripped(name))
    return [form for form in dict.fromkeys(forms) if form]


def find_entity(conn: Connection, namespace: str, name: str) -> str | None:
    """Return the ID of the live entity that ``name`` denotes, or None."""
    key = folded(name)
    for candidate in lookup_forms(name):
        row = conn.execute(
            "SELECT a.entity_id, n.content FROM mem_aliases a "
            "JOIN mem_nodes n ON n.id = a.entity_id "
            "WHERE a.namespace = ? AND a.alias = ? AND n.tombstoned = 0",
            (namespace, candidate),
        ).fetchone()
        # An older store's stripped alias may join digit runs (func1014 for func_101_4):
        # it names this entity only if the entity's own name folds to the same key.
        if row and folded(str(row[1])) == key:
            return str(row[0])
    return _find_by_fts(conn, namespace, name)


def _find_by_fts(conn: Connection, namespace: str, name: str) -> str | None:
    name_words = words(name)
    if not name_words:
        return None
    rows = text_index_of(conn).entities_by_phrase(name_words, namespace, 20)
    name_digits = digit_runs(name)
    for entity_id, content in rows:
        # A phrase hit inside a longer name ("auth" in "auth_service") is another entity;
        # so is one with other numbers (the tokenizer keeps digit runs whole today, and
        # stemming must never make v1_2 and v12 one entity).
        if len(words(content)) == len(name_words) and digit_runs(content) == name_digits:
            return str(entity_id)
    return None
