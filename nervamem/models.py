"""Plain, frozen value objects returned by the core. They know nothing of storage."""

from __future__ import annotations

import _thread
from typing import TYPE_CHECKING, Any

# The kinds live in kinds.py (cheap to import); they are re-exported here. Every class
# has a docstring: without one, @dataclass builds one from inspect.signature (~0.2 ms).
from .kinds import EDGE_KINDS as EDGE_KINDS
from .kinds import NODE_KINDS as NODE_KINDS
from .kinds import STORABLE_KINDS as STORABLE_KINDS

# Building a frozen dataclass costs ~1 ms (it compiles six methods), and a CLI call is a
# fresh process that needs one or two of these classes: `recall` builds RecallItem and
# RecallResult, not the seven others. So each class below is made a dataclass on its
# first use (PEP 562 __getattr__), then kept in the module; type checkers see plain
# @dataclass classes.
if TYPE_CHECKING:
    from dataclasses import dataclass, field
else:
    _PENDING: dict[str, tuple[type, dict[str, Any]]] = {}
    _LOCK = _thread.allocate_lock()

    class _Field:
        def __init__(self, **options: Any) -> None:
            self.options = options

    def field(**options: Any) -> Any:
        return _Field(**options)

    def dataclass(**options: Any) -> Any:
        def register(cls: type) -> type:
            _PENDING[cls.__name__] = (cls, options)
            return cls

        return register


@dataclass(frozen=True)
class Node:
    """A stored node, every column (``get``)."""

    id: str
    kind: str
    content: str
    namespace: str
    valid_from: str
    valid_until: str | None
    recorded_at: str
    confidence: float
    tombstoned: bool
    access_count: int
    last_accessed: str | None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RecallItem:
    """One recalled node with its score and the four factors of it."""

    id: str
    short_id: str
    kind: str
    content: str
    score: float
    relevance: float
    recency: float
    frequency: float
    connectivity: float
    confidence: float
    valid_from: str
    valid_until: str | None
    recorded_at: str
    session_id: str | None
    session_short_id: str | None
    via: str  # "search" or "expansion"
    rationale: str | None = None  # decisions: why (``--rationale``)
    rejected: tuple[str, ...] = ()  # decisions: the alternatives rejected (``--rejected``)
    # Current memories that supersede the same node as this one (conflicts.py).
    conflicts_with: tuple[str, ...] = ()
    conflicts_with_short: tuple[str, ...] = ()
    # A long memory shown by a passage (recall/passages.py): its (start, end) offsets into
    # content; None when it is shown whole.
    passage: tuple[int, int] | None = None


@dataclass(frozen=True)
class RecallResult:
    """What ``recall`` returns: the chosen items and their Markdown rendering."""

    query: str
    as_of: str | None
    budget_tokens: int
    used_tokens: int
    items: tuple[RecallItem, ...]
    markdown: str
    tokenizer: str
    # --known-at: the answer from what had been recorded by then (transaction time).
    known_at: str | None = None


@dataclass(frozen=True)
class TimelineItem:
    """One version in a ``timeline``, with what superseded it."""

    id: str
    short_id: str
    kind: str
    content: str
    valid_from: str
    valid_until: str | None
    recorded_at: str
    superseded_by: str | None
    superseded_by_short: str | None
    conflicts_with: tuple[str, ...] = ()
    conflicts_with_short: tuple[str, ...] = ()


@dataclass(frozen=True)
class ForgetResult:
    """What ``forget`` did."""

    id: str
    purged: bool
    # Purge only: the duplicates of it that consolidation forgot (they hold its text),
    # then the entity nodes that existed only because those memories named them.
    removed: tuple[str, ...] = ()
    # Tombstone only: it was forgotten before, so this call changed nothing.
    already: bool = False
    # Purge only: why the store's files may still hold the purged bytes (a PostgreSQL
    # role that does not own the tables, a lock), and what to run; None when scrubbed.
    files_not_scrubbed: str | None = None


@dataclass(frozen=True)
class NamespaceInfo:
    """A namespace and how many live nodes it holds."""

    name: str
    nodes: int


@dataclass(frozen=True)
class CurrentContext:
    """The namespace and session in use."""

    namespace: str
    session: str | None


@dataclass(frozen=True)
class Stats:
    """Counts of a namespace and the size of the store file."""

    namespace: str
    nodes: dict[str, int]
    edges: dict[str, int]
    tombstoned: int
    superseded: int
    pending_consolidation: int
    db_path: str
    db_bytes: int
    # Nodes with two current successors (a shared store's merge; conflicts.py).
    conflicts: int = 0


@dataclass(frozen=True)
class InitResult:
    """Where ``init`` put the store, and whether it created it."""

    db_path: str
    created: bool
    # A shared store (docs/team-memory.md): its events folder, and how many events its
    # history became when an existing store was shared.
    shared: bool = False
    events_folder: str | None = None
    events_written: int = 0


@dataclass(frozen=True, order=True)
class EventProblem:
    """An event that was not imported: where it came from and why (one line)."""

    source: str
    reason: str


@dataclass(frozen=True)
class SyncReport:
    """What ``sync`` or ``import`` did with the events it read."""

    imported: int
    already: int
    problems: tuple[EventProblem, ...] = ()
    folders_read: int = 0
    purged: tuple[str, ...] = ()
    # Event files the cache held were gone (a checkout, a reset): it was made again.
    rebuilt: bool = False


__all__ = [
    "EDGE_KINDS",
    "NODE_KINDS",
    "STORABLE_KINDS",
    "CurrentContext",
    "EventProblem",
    "ForgetResult",
    "InitResult",
    "NamespaceInfo",
    "Node",
    "RecallItem",
    "RecallResult",
    "Stats",
    "SyncReport",
    "TimelineItem",
]

if not TYPE_CHECKING:
    for _name in _PENDING:
        del globals()[_name]

    def _build(name: str) -> type:
        with _LOCK:
            built = globals().get(name)
            if built is None:
                cls, options = _PENDING[name]
                if options == {"frozen": True}:
                    built = _frozen_value_class(cls)
                else:
                    import dataclasses

                    _real_fields(cls, dataclasses)
                    built = dataclasses.dataclass(**options)(cls)
                globals()[name] = built
        return built

    def _real_fields(cls: type, dataclasses: Any) -> None:
        for attr, value in list(vars(cls).items()):
            if isinstance(value, _Field):
                setattr(cls, attr, dataclasses.field(**value.options))

    _COMPLETING = _thread.RLock()

    class _DataclassOnFirstUse:
        """``__dataclass_fields__`` and ``__dataclass_params__`` of a class made by
        _frozen_value_class until one is read: then dataclasses registers the class
        (``dataclass(init=False, repr=False, eq=False)``, which leaves its methods alone)
        and its own attributes replace these. is_dataclass, fields, asdict and replace
        all read them first, on the class or an instance, so they see a dataclass."""

        def __init__(self, name: str) -> None:
            self.name = name

        def __get__(self, instance: object, owner: type) -> Any:
            import dataclasses

            with _COMPLETING:
                # On a subclass, the class that holds this (dataclasses reads its bases).
                for holder in owner.__mro__:
                    if vars(holder).get(self.name) is self:
                        for attr in ("__dataclass_fields__", "__dataclass_params__"):
                            delattr(holder, attr)
                        _real_fields(holder, dataclasses)
                        dataclasses.dataclass(init=False, repr=False, eq=False)(holder)
                        break
            return getattr(owner, self.name)

    _NO_DEFAULT = object()

    def _frozen_value_class(cls: type) -> type:
        """``dataclass(frozen=True)(cls)`` without compiling a method, nor importing
        dataclasses before the class is asked whether it is one.

        dataclasses writes the source of six methods per class and compiles it: ~15M
        instructions (~4 ms) for the two classes a fresh ``recall`` builds (callgrind),
        and importing it imports inspect (ast, dis, tokenize...): ~40M more. Here the
        methods are closures over the fields, read from the class's annotations as
        dataclasses reads them (every one is a field: no ClassVar here), that behave
        the same: positional or keyword arguments, defaults and default factories; the
        same repr; equality and hash over the fields in order; FrozenInstanceError on
        assignment or deletion. The fields are dataclasses' own, made on first use
        (_DataclassOnFirstUse: fields, asdict, replace, is_dataclass work). Only
        ``__dataclass_params__`` differs (it reads init, repr, eq and frozen False).
        tests/test_lazy_imports.py holds them to dataclasses' own.
        """
        from operator import attrgetter

        names = tuple(vars(cls).get("__annotations__", {}))
        defaults = {}
        for name in names:
            value = vars(cls).get(name, _NO_DEFAULT)
            if isinstance(value, _Field):
                default = value.options.get("default", _NO_DEFAULT)
                defaults[name] = (default, value.options.get("default_factory", _NO_DEFAULT))
            else:
                defaults[name] = (value, _NO_DEFAULT)
        missing = _NO_DEFAULT
        setter = object.__setattr__
        get = attrgetter(*names)
        values = get if len(names) > 1 else (lambda obj: (get(obj),))
        title = cls.__name__
        every_name = frozenset(names)

        def frozen_error(message: str) -> Exception:
            from dataclasses import FrozenInstanceError

            return FrozenInstanceError(message)

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            # Every field given, all by position or all by keyword (how the core builds
            # its results: recall makes ~30 items a call): one update of the instance's
            # dict, in field order, as the loop below would set them one by one.
            if not kwargs and len(args) == len(names):
                self.__dict__.update(zip(names, args, strict=True))
                return
            if not args and len(kwargs) == len(names) and kwargs.keys() == every_name:
                self.__dict__.update(zip(names, map(kwargs.__getitem__, names), strict=True))
                return
            if len(args) > len(names):
                raise TypeError(
                    f"{title}.__init__() takes {len(names) + 1} positional arguments but "
                    f"{len(args) + 1} were given"
                )
            for name, value in zip(names, args, strict=False):  # args may stop early
                setter(self, name, value)
            for name in names[len(args) :]:
                if name in kwargs:
                    value = kwargs.pop(name)
                else:
                    default, factory = defaults[name]
                    if default is not missing:
                        value = default
                    elif factory is not missing:
                        value = factory()
                    else:
                        raise TypeError(f"{title}.__init__() missing argument: {name!r}")
                setter(self, name, value)
            if kwargs:
                unexpected = next(iter(kwargs))
                raise TypeError(f"{title}.__init__() got an unexpected argument {unexpected!r}")

        def __repr__(self: Any) -> str:
            pairs = zip(names, values(self), strict=True)
            shown = ", ".join(f"{name}={value!r}" for name, value in pairs)
            return f"{type(self).__qualname__}({shown})"

        def __eq__(self: Any, other: object) -> bool:
            if other.__class__ is self.__class__:
                return bool(values(self) == values(other))
            return NotImplemented

        def __hash__(self: Any) -> int:
            return hash(values(self))

        def __setattr__(self: Any, name: str, value: Any) -> None:
            if type(self) is cls or name in names:
                raise frozen_error(f"cannot assign to field {name!r}")
            super(cls, self).__setattr__(name, value)

        def __delattr__(self: Any, name: str) -> None:
            if type(self) is cls or name in names:
                raise frozen_error(f"cannot delete field {name!r}")
            super(cls, self).__delattr__(name)

        for method in (__init__, __repr__, __eq__, __hash__, __setattr__, __delattr__):
            method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
            setattr(cls, method.__name__, method)
        cls.__match_args__ = names  # type: ignore[attr-defined]
        for attr in ("__dataclass_fields__", "__dataclass_params__"):
            setattr(cls, attr, _DataclassOnFirstUse(attr))
        return cls

    def __getattr__(name: str) -> Any:
        if name in _PENDING:
            return _build(name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*globals(), *_PENDING})
