import pytest

pytestmark = pytest.mark.both_engines  # the same assertions and snapshots on SQLite and PostgreSQL


def test_store_prints_id_and_recall_finds_it(cli) -> None:  # type: ignore[no-untyped-def]
    stored = cli("store", "fact", "the sky is blue")
    assert stored.exit_code == 0, stored.stderr
    node_id = stored.stdout.strip()
    assert node_id.startswith("f_")
    recalled = cli("recall", "sky", "--format", "json")
    assert recalled.exit_code == 0
    assert node_id in recalled.stdout
