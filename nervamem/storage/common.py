"""What every engine's Storage shares and does the same way: the clock and ID source
(one reading of the clock per transaction: every ID, ``recorded_at`` and default
``valid_from`` a transaction writes share it), and the active namespace and session,
read through the engine's :meth:`StorageBase.read_state` (state.yaml beside an SQLite
file, a row of ``mem_state`` on PostgreSQL), and the one migration runner
(:meth:`StorageBase.migrate_schema`) over each engine's ordered registry (migrations.py,
postgres/schema.py), with what a schema version asks of the engine that opens it
(:meth:`StorageBase.must_migrate`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import (
    UPGRADE_NEEDED,
    BadInputError,
    SchemaTooNewError,
    SchemaUpgradeNeededError,
    StoreError,
)
from ..ids import make_id
from ..state import State, validate_namespace
from ..timeparse import format_time

if TYPE_CHECKING:
    from ..ids import RandomSource


class PendingWrites(Protocol):
    """Writes a store keeps in memory for a while (recall/access_counts.py)."""

    def flush(self) -> None: ...

    def close(self) -> None: ...


class StorageBase:
    clock: Callable[[], datetime]
    random: RandomSource
    namespace_override: str | None
    transaction_time: datetime | None
    location: str
    # False: a store with an older schema is refused (SchemaUpgradeNeededError), not
    # migrated (the git hooks, whose time limit a large store's migration can outlast).
    migrate: bool

    def __init__(self) -> None:
        self._state: State | None = None
        # A state changed inside the transaction, written when it commits.
        self._state_pending = False
        self.bookkeeping = False
        # A recall's access counts not written yet (recall/access_counts.py; SQLite only).
        self.pending_counts: PendingWrites | None = None

    def flush_access_counts(self) -> None:
        """Write the access counts that recalls left pending, before a read that shows
        them (recall/access_counts.py)."""
        if self.pending_counts is not None:
            self.pending_counts.flush()

    read_only: bool

    def transaction(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def migrate_schema(
        self, conn: Any, migrations: Sequence[tuple[str, Callable[[Any], None]]]
    ) -> None:
        """Bring the store's schema to the last of ``migrations`` (the engine's registry:
        recorded name, function), in one write transaction: each migration past the
        store's version runs, then its record (record_migration). The version is read
        again under the write lock, so two processes opening an older or a new store at
        once migrate it once."""
        latest = len(migrations)
        if not self.must_migrate(self.schema_version(conn), latest):
            return
        if self.read_only:
            raise StoreError(f"{self.location} is read-only and needs a schema upgrade")
        with self.transaction():
            version = self.schema_version(conn)
            if not self.must_migrate(version, latest):
                return
            self.prepare_migrations(conn, version)
            for number, (name, migrate) in enumerate(migrations, start=1):
                if number > version:
                    migrate(conn)
                    self.record_migration(conn, number, name)

    def schema_version(self, conn: Any) -> int:
        """The number of migrations applied to the store; 0 for a new one."""
        raise NotImplementedError

    def prepare_migrations(self, conn: Any, version: int) -> None:
        """Before the first migration past ``version``, in its transaction: refuse what
        is not a nervamem store, make the table of records."""
        raise NotImplementedError

    def record_migration(self, conn: Any, number: int, name: str) -> None:
        """Record that migration ``number`` (recorded as ``name``) is applied."""
        raise NotImplementedError

    def must_migrate(self, version: int, latest: int) -> bool:
        """Whether a store at schema ``version`` is to be migrated to ``latest``: not
        when it is there; SchemaTooNewError past it; SchemaUpgradeNeededError when it is
        older and was opened with ``migrate`` False (a new store, version 0, is always
        made)."""
        if version > latest:
            raise SchemaTooNewError(
                f"{self.location} has schema version {version}, newer than this nervamem "
                f"understands ({latest}); upgrade nervamem to use it"
            )
        if version == latest:
            return False
        if version > 0 and not self.migrate:
            raise SchemaUpgradeNeededError(UPGRADE_NEEDED)
        return True

    def read_state(self) -> State:
        """The state as the store holds it now."""
        raise NotImplementedError

    def moment(self) -> datetime:
        return self.transaction_time or self.clock()

    def now(self) -> str:
        return format_time(self.moment())

    def new_id(self, kind: str) -> str:
        moment = self.moment()
        return make_id(kind, int(moment.timestamp() * 1000), self.random())

    @property
    def state(self) -> State:
        if self._state is None:
            self._state = self.read_state()
        return self._state

    @property
    def namespace(self) -> str:
        return self.namespace_override or self.state.namespace

    def namespace_for(self, namespace: str | None) -> str:
        return validate_namespace(namespace) if namespace is not None else self.namespace

    def reload_state(self) -> State:
        """The state as it is now, not as this object first read it. Inside a write
        transaction that stays true until COMMIT: every change of the state is made
        under the write lock. A change this transaction made itself (a batch) is newer
        than the stored one, and is kept."""
        if not self._state_pending:
            self._state = self.read_state()
        return self.state


def env_whole_number(name: str, default: int, unit: str) -> int:
    """A setting from the environment (a timeout): unset or blank is ``default``;
    anything but a whole number >= 0 is bad input."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise BadInputError(f"{name}={raw[:40]!r} is not a whole number of {unit} >= 0")
    return value
