"""Every mutant of mutants.py still applies to the code: a mutant whose text has moved
elsewhere breaks nothing, so the proof that the reliability tests can fail would quietly
stop covering what it names (nine had gone stale when the purge's pragmas and index
rebuild moved into the SQLite Storage). Not in tests/reliability: the mutants run
those tests, and this one would catch every mutant."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability import mutants

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", sorted(mutants.MUTANTS))
def test_each_mutant_still_finds_the_text_it_replaces(name: str) -> None:
    for relative, old, _, count in mutants.MUTANTS[name]:
        found = (ROOT / relative).read_text(encoding="utf-8").count(old)
        assert found and (not count or found == count), (relative, old, found)
