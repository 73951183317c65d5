"""Entity resolution follows concepts.md: alias, CamelCase->snake, stripped, FTS, create."""

from __future__ import annotations

import pytest

from nervamem import MemoryStore
from nervamem.entities import alias_forms, basic_slug, camel_to_snake, stripped


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
