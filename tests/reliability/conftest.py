"""Fixtures of the reliability tests: a clean environment for child processes and a
seed that a failing run prints, so that it can be replayed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from . import harness

# Replay a failure with NERVAMEM_RELIABILITY_SEED=<the seed in its message>.
SEED = int(os.environ.get("NERVAMEM_RELIABILITY_SEED", "20260703"))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """Environment for nervamem child processes: no inherited nervamem setting."""
    (tmp_path / "home").mkdir(exist_ok=True)
    return harness.clean_env(tmp_path / "home")


@pytest.fixture
def seed() -> int:
    return SEED
