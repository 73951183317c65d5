"""state.yaml keeps its access rights when it is rewritten: other accounts that share
the store (a hook running as another user) must still be able to read it."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from nervamem.state import State, load_state, save_state, state_path


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o600, 0o664], ids=oct)
def test_a_rewrite_keeps_the_mode_of_the_file_it_replaces(
    tmp_path: Path, umask_022: None, mode: int
) -> None:
    db = tmp_path / "memory.db"
    save_state(db, State("first"))
    state_path(db).chmod(mode)
    save_state(db, State("second", None))
    assert _mode(state_path(db)) == mode
    assert load_state(db) == State("second")


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077, 0o002], ids=oct)
def test_a_new_file_gets_the_umask_default(tmp_path: Path, umask: int) -> None:
    db = tmp_path / "memory.db"
    previous = os.umask(umask)
    try:
        save_state(db, State("fresh"))
    finally:
        os.umask(previous)
    assert _mode(state_path(db)) == 0o666 & ~umask


def test_a_rewrite_keeps_the_group(tmp_path: Path, umask_022: None) -> None:
    db = tmp_path / "memory.db"
    save_state(db, State("first"))
    other_groups = [g for g in os.getgroups() if g != os.getegid()]
    if not other_groups and os.geteuid() != 0:
        pytest.skip("this account belongs to no second group")
    group = other_groups[0] if other_groups else 1
    os.chown(state_path(db), -1, group)
    state_path(db).chmod(0o640)
    save_state(db, State("second"))
    assert (state_path(db).stat().st_gid, _mode(state_path(db))) == (group, 0o640)


def test_no_temporary_file_is_left_behind(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    for name in ("a", "b", "c"):
        save_state(db, State(name))
    assert [p.name for p in tmp_path.iterdir()] == ["state.yaml"]
