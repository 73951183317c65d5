"""The engines a test runs on are its marks (tests/conftest.py): a module that takes a
store runs on both engines only when it says both_engines, and one that says nothing is
refused at collection instead of silently leaving PostgreSQL out."""

from __future__ import annotations

from pathlib import Path

import pytest

CONFTEST = (Path(__file__).parent / "conftest.py").read_text()
MODULE = """
import pytest
{mark}

def test_it(engine):
    assert engine in ("sqlite", "postgresql")
"""


def _collected(pytester: pytest.Pytester, mark: str) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST.replace("from .pg_server import", "from tests.pg_server import"))
    pytester.makeini(
        "[pytest]\nmarkers =\n    both_engines: x\n    sqlite_only: x\n    postgresql_only: x\n"
    )
    pytester.makepyfile(test_module=MODULE.format(mark=mark))
    return pytester.runpytest_inprocess("--collect-only", "-q", "-p", "no:cacheprovider")


@pytest.mark.parametrize(
    ("mark", "ids"),
    [
        ("pytestmark = pytest.mark.both_engines", ["test_it[sqlite]", "test_it[postgresql]"]),
        ("pytestmark = pytest.mark.sqlite_only", ["test_it[sqlite]"]),
        ("pytestmark = pytest.mark.postgresql_only", ["test_it[postgresql]"]),
    ],
)
def test_a_mark_chooses_the_engines(pytester: pytest.Pytester, mark: str, ids: list[str]) -> None:
    result = _collected(pytester, mark)
    collected = [line.split("::")[1] for line in result.outlines if "::" in line]
    assert collected == ids


def test_a_module_that_takes_a_store_without_a_mark_is_refused(pytester: pytest.Pytester) -> None:
    result = _collected(pytester, "")
    assert result.ret != 0
    assert "is not marked both_engines, sqlite_only or postgresql_only" in result.stdout.str()
