"""Entity resolution follows concepts.md: alias, CamelCase->snake, stripped, FTS, create."""

from __future__ import annotations

import pytest

from nervamem import MemoryStore
from nervamem.entities import alias_forms, basic_slug, camel_to_snake, stripped

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL


@pytest.mark.parametrize(
    ("name", "snake", "slug", "flat"),
    [
        ("AuthService", "auth_service", "authservice", "authservice"),
        ("auth-service", "auth_service", "auth-service", "authservice"),
        ("HTTPServer", "http_server", "httpserver", "httpserver"),
        ("Auth Service v2", "auth_service_v2", "auth-service-v2", "authservicev2"),
    ],
)
def test_normal_forms(name: str, snake: str, slug: str, flat: str) -> None:
    assert camel_to_snake(name) == snake
    assert basic_slug(name) == slug
    assert stripped(name) == flat


def test_four_alias_forms_without_duplicates() -> None:
    assert alias_forms("AuthService") == ["AuthService", "auth_service"]
    assert alias_forms("Auth Service") == [
        "Auth Service",
        "auth-service",
        "auth_service",
        "authservice",
    ]


def entity_ids(store: MemoryStore) -> list[str]:
    return [r[0] for r in store.connection.execute("SELECT id FROM mem_nodes WHERE kind='entity'")]


@pytest.mark.parametrize(
    "spelling",
    ["AuthService", "authservice", "auth_service", "auth-service", "Auth Service", "AUTH_SERVICE"],
)
def test_spellings_resolve_to_one_entity(store: MemoryStore, spelling: str) -> None:
    store.store("fact", "first", entities=["AuthService"])
    store.store("fact", "second", entities=[spelling])
    assert len(entity_ids(store)) == 1


def test_fts_step_catches_stemming_variants_but_not_longer_names(store: MemoryStore) -> None:
    store.store("fact", "a", entities=["user sessions"])
    store.store("fact", "b", entities=["UserSession"])
    assert len(entity_ids(store)) == 1
    store.store("fact", "c", entities=["user"])
    assert len(entity_ids(store)) == 2


def test_entities_link_with_about_and_are_namespaced(store: MemoryStore) -> None:
    fact = store.store("fact", "x", entities=["Billing"])
    (entity,) = entity_ids(store)
    assert (
        store.connection.execute(
            "SELECT count(*) FROM mem_edges WHERE src=? AND dst=? AND kind='ABOUT'", (fact, entity)
        ).fetchone()[0]
        == 1
    )
    store.store("fact", "y", entities=["Billing"], namespace="other")
    assert len(entity_ids(store)) == 2


def test_storing_an_existing_entity_returns_it(store: MemoryStore) -> None:
    first = store.store("entity", "PaymentGateway")
    assert store.store("entity", "payment_gateway") == first


def test_forgotten_entity_is_replaced_by_a_new_one(store: MemoryStore) -> None:
    first = store.store("entity", "Cache")
    store.forget(first)
    second = store.store("fact", "cache is warm", entities=["Cache"])
    (live,) = [e for e in entity_ids(store) if e != first]
    assert live != first and second


# Digits are identifiers: case and separators fold, digits and the boundaries between
# digit runs never do (issue 19, item 5).
DIFFERENT_NUMBERS = [
    ("func_101_4", "func_10_14"),
    ("func_10_14", "func_101_4"),
    ("v1_2", "v12"),
    ("v12", "v1_2"),
    ("release 1.2.3", "release 12.3"),
    ("Port8080", "port_80_80"),
]
SAME_NUMBERS = [
    ("func_101_4", "Func101-4"),
    ("func_101_4", "FUNC 101 4"),
    ("v1_2", "V1.2"),
    ("v1-2", "v1 2"),
    ("release 1.2.3", "Release1.2.3"),
    ("Port8080", "port_8080"),
]


@pytest.mark.parametrize(("first", "second"), DIFFERENT_NUMBERS)
def test_different_numbers_are_different_entities(
    store: MemoryStore, first: str, second: str
) -> None:
    store.store("fact", "a", entities=[first])
    store.store("fact", "b", entities=[second])
    names = sorted(store.connection.execute("SELECT content FROM mem_nodes WHERE kind='entity'"))
    assert names == sorted([(first,), (second,)])


@pytest.mark.parametrize(("first", "second"), SAME_NUMBERS)
def test_separators_around_numbers_still_fold(store: MemoryStore, first: str, second: str) -> None:
    store.store("fact", "a", entities=[first])
    store.store("fact", "b", entities=[second])
    assert len(entity_ids(store)) == 1


def test_store_many_resolves_numbers_as_store_does(store: MemoryStore) -> None:
    from nervamem.writing import NewMemory

    names = ["func_101_4", "func_10_14", "Func101-4", "v1_2", "v12", "V1.2"]
    store.store_many([NewMemory("fact", f"m {n}", entities=[n]) for n in names])
    rows = store.connection.execute(
        "SELECT n.content, e.dst FROM mem_edges e JOIN mem_nodes n ON n.id = e.src "
        "WHERE e.kind = 'ABOUT' ORDER BY n.seq"
    ).fetchall()
    entity_of = {content[2:]: dst for content, dst in rows}
    assert entity_of["Func101-4"] == entity_of["func_101_4"] != entity_of["func_10_14"]
    assert entity_of["V1.2"] == entity_of["v1_2"] != entity_of["v12"]


def _as_made_by_the_old_rule(store: MemoryStore, name: str) -> str:
    """An entity as stores made before issue 19 hold it: aliases original, slug, snake
    and the stripped form that joins digit runs (func_101_4 -> func1014)."""
    entity_id = store.store("entity", name)
    conn = store.connection
    with store.batch():
        conn.execute("DELETE FROM mem_aliases WHERE entity_id = ?", (entity_id,))
        for alias in {name, basic_slug(name), camel_to_snake(name), stripped(name)}:
            conn.execute(
                "INSERT INTO mem_aliases (namespace, alias, entity_id) VALUES ('default', ?, ?)",
                (alias, entity_id),
            )
    return entity_id


def test_an_older_stores_stripped_alias_does_not_join_numbers(store: MemoryStore) -> None:
    old = _as_made_by_the_old_rule(store, "func_101_4")
    assert store.connection.execute(
        "SELECT entity_id FROM mem_aliases WHERE alias = 'func1014'"
    ).fetchone() == (old,)
    # Its stripped alias still finds it for spellings with the same numbers ...
    assert store.store("entity", "Func101-4") == old
    assert store.store("entity", "func101_4") == old
    # ... but never for other numbers, however the old alias spells them.
    assert store.store("entity", "func_10_14") != old
    assert store.store("entity", "func1014") != old
    assert len(entity_ids(store)) == 3
