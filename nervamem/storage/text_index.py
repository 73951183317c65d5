"""The full-text index as a capability: what recall's search (recall/search.py) and
entity resolution (entities.py) ask of an engine, each engine answering with its own
SQL: FTS5's ``mem_fts`` on SQLite (sqlite/text_index.py), the term tables of
postgres/search.py on PostgreSQL (postgres/text_index.py). The same memories give the
same answers on both (tests/recall/test_search_postgres.py).

What stays with the caller: which terms to look up (recall/terms.py), their forms
(recall/irregular.py), the mask (recall/mask.py), the limits and every score. The index
only finds rows: user text reaches it as terms, and each engine binds or quotes them so
that they are never its query syntax.

Rules every engine keeps:
* Where a scan stops at a LIMIT, the namespace, mask and kinds (``Filters``) are applied
  inside the scan, so that rows recall may not show never crowd out those it may.
* ``postings`` reads a term's list up to ``limit`` rows: cost bounded by the rare terms.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol

from .dbapi import Connection
from .engine import POSTGRESQL, dialect_of

# A WHERE fragment over ``mem_nodes n`` (the mask and the kinds asked for) and its
# parameters.
Filters = tuple[str, list[Any]]


class TextIndex(Protocol):
    def filters(
        self, mask: str, mask_params: Sequence[Any], kinds: Sequence[str] | None
    ) -> Filters:
        """``mask`` (over ``mem_nodes n``) and, when ``kinds`` is given, ``n.kind`` among
        them, in this engine's SQL."""
        ...

    def postings(
        self, keys: Sequence[Sequence[str]], limit: int
    ) -> tuple[int, list[Collection[int] | None]]:
        """The largest seq (the corpus size of IDF), and for each key (given as its forms:
        a row holding any form holds the key) the seqs holding it; None when ``limit`` or
        more do (a common key)."""
        ...

    def newest_matching(
        self, terms: Sequence[str], namespace: str, filters: Filters, limit: int
    ) -> set[int]:
        """The newest ``limit`` rows holding every one of ``terms`` (none: any of them),
        among those the namespace and ``filters`` admit."""
        ...

    def newest_unfiltered(self, terms: Sequence[str], every: bool, limit: int) -> tuple[int, ...]:
        """The newest ``limit`` rows holding every one (``every``) or any of ``terms``,
        newest first, before any namespace, mask or kinds."""
        ...

    def prefix_ranked(
        self, prefixes: Sequence[str], namespace: str, filters: Filters, scan: int
    ) -> list[tuple[int, float]]:
        """The newest ``scan`` rows holding a word that starts with any of ``prefixes``
        among those the namespace and ``filters`` admit, each with FTS5's bm25() of the
        prefixes (lower is better), in no particular order."""
        ...

    def read_rows(
        self, columns: str, seqs: Sequence[int], namespace: str, filters: Filters
    ) -> list[Any]:
        """``columns`` of the rows of ``seqs`` (``mem_nodes n``) that the namespace and
        ``filters`` admit, ordered by seq."""
        ...

    def entities_by_phrase(
        self, words: Sequence[str], namespace: str, limit: int
    ) -> list[tuple[str, str]]:
        """(id, content) of up to ``limit`` live entities whose text holds ``words`` as a
        phrase, as FTS5 matches one: the same terms, in order (entities.py)."""
        ...


def text_index_of(conn: Connection) -> TextIndex:
    """The index ``conn``'s engine keeps. PostgreSQL's module is imported only for a
    PostgreSQL connection: SQLite's start-up never pays for it."""
    if dialect_of(conn) == POSTGRESQL:
        from .postgres.text_index import PostgresTextIndex

        return PostgresTextIndex(conn)
    from .sqlite.text_index import SQLiteTextIndex

    return SQLiteTextIndex(conn)
