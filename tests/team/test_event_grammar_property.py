"""The events folder as hostile input, by property (issue 35): folders of event files
generated from a grammar of valid and invalid pieces, read by every command that reads
events.

The grammar: valid events (memories of every node kind, edges, aliases, tombstones,
data changes, purges) whose fields take every documented shape, with numbers of every
JSON form, nested data, any Unicode text and unknown fields (ignored by the format);
events that refer to a node no file holds; and hostile pieces: bytes that are no JSON
or no UTF-8, other encodings, other JSON values, unknown versions, each field of the
schema broken in turn (impossible dates, numbers out of range or not finite, IDs of
the wrong form, nesting too deep, NUL and lone surrogates), valid events filed under
another name or month, month folders that are no month, and files or folders sync has
no business reading.

For each generated folder:

(a) ``init`` of a clone, ``sync``, ``sync --rebuild``, ``import`` of the same texts,
    ``export`` and ``init --shared`` never fail with an internal error;
(b) every hostile piece is reported (by its file, or its folder) and skipped, and the
    exit status is 4 exactly when something was reported;
(c) every valid event is imported (one that names a node no file holds waits, reported);
(d) a second clone that gets the same files in another order, in batches with a sync
    after each, reaches the same canonical state, and so does a rebuild;
(e) export, imported into a new store, gives that store the same state, which it can
    share (``init --shared``).

Bounded: the suite runs under CI=true, where this stays within ~30-60 s.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from nervamem import MemoryStore
from nervamem.cli import app
from nervamem.ids import KIND_PREFIX
from nervamem.kinds import EDGE_KINDS, NODE_KINDS
from nervamem.timeparse import format_time

from . import eventfiles

# Under CI (.ci/run) the default bounds the run time; more for a deeper search locally.
EXAMPLES = int(os.environ.get("NERVAMEM_EVENT_EXAMPLES", "25"))


@dataclass
class Piece:
    """One file (or folder) in the generated events folder, and what must become of it."""

    where: str  # under events/
    data: bytes | None  # None: a folder
    expect: str  # "good", "waits", "bad", "ignored"
    event_id: str | None = None


@dataclass
class World:
    pieces: list[Piece] = field(default_factory=list)
    serial: int = 0

    def next_serial(self) -> int:
        self.serial += 1
        return self.serial


# ----------------------------------------------------------------- values of every shape

# Any Unicode text store takes: no NUL, no lone surrogate (those are hostile pieces).
texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.integers(-(10**400), 10**400),  # JSON has no limit; Python reads 4300 digits
    st.floats(allow_nan=False, allow_infinity=False),
    texts.filter(lambda t: len(t) <= 12),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(texts.map(lambda k: k[:6]), inner, max_size=3)
    ),
    max_leaves=12,
)
# Keys nervamem gives no meaning to (x_...), so that any value is a valid one.
free_data = st.dictionaries(texts.map(lambda k: f"x_{k[:6]}"), json_values, max_size=3)
unknown_fields = st.dictionaries(texts.map(lambda k: f"future_{k[:8]}"), json_values, max_size=2)
confidences = st.one_of(
    st.floats(0, 1), st.sampled_from([0, 1, 0.0, 1.0, 5e-324, 0.9999999999999999])
)
contents = texts
namespaces = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9_.\-]{0,10}\Z")
# Event times: 1970 to 9999 (the event ID range); validity times: any real instant.
event_ms = st.integers(0, 253402300799999)
valid_ms = st.integers(-62135596800000, 253402300799999)


def valid_time(ms: int) -> str:
    moment = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms)
    return format_time(moment)


def file_of(document: Any) -> str:
    """Where sync looks for an event: its recorded_at's month, its ID's name."""
    at = document["recorded_at"]
    return f"{at[:4]}/{at[5:7]}/{document['id']}.json"


# ----------------------------------------------------------------- valid pieces


@st.composite
def node_event(draw: st.DrawFn, world: World, kind: str) -> tuple[dict[str, Any], str]:
    serial = world.next_serial()
    ms = draw(event_ms)
    at = valid_time(ms)
    node_id = f"{KIND_PREFIX[kind]}_{ms:013x}{serial:016x}"
    data: dict[str, Any] = draw(free_data)
    if kind == "decision" and draw(st.booleans()):
        data["rationale"] = draw(contents)
        data["rejected"] = draw(st.lists(contents, max_size=2))
    change = eventfiles.node_change(
        node_id,
        at,
        draw(contents),
        kind=kind,
        namespace=draw(namespaces),
        valid_from=valid_time(draw(valid_ms)),
        confidence=draw(confidences),
        data=data,
        **draw(unknown_fields),
    )
    if draw(st.booleans()):
        change["valid_until"] = valid_time(draw(valid_ms))
    document = eventfiles.event(ms, serial, [change], **draw(unknown_fields))
    if draw(st.booleans()):
        document["author"] = draw(contents)
    return document, node_id


@st.composite
def link_event(draw: st.DrawFn, world: World, nodes: list[tuple[str, str]]) -> dict[str, Any]:
    """An edge, alias, tombstone, data change or purge about nodes of ``nodes``."""
    serial = world.next_serial()
    ms = draw(event_ms)
    at = valid_time(ms)
    pick = draw(st.sampled_from(nodes))[0]
    entities = [node for node, kind in nodes if kind == "entity"]
    what = draw(st.sampled_from(["edge", "alias", "tombstone", "data", "purge"]))
    change: dict[str, Any]
    if what == "edge":
        change = {
            "type": "edge",
            "src": pick,
            "dst": draw(st.sampled_from(nodes))[0],
            "kind": draw(st.sampled_from(EDGE_KINDS)),
            "created_at": at,
            "data": draw(free_data),
        }
    elif what == "alias" and entities:
        change = {
            "type": "alias",
            "namespace": draw(namespaces),
            "alias": draw(contents),
            "entity_id": draw(st.sampled_from(entities)),
        }
    elif what == "data":
        change = {"type": "data", "id": pick, "set": draw(free_data)}
    elif what == "purge":
        change = {"type": "purge", "id": pick}
    else:
        change = {"type": "tombstone", "id": pick}
    change.update(draw(unknown_fields))
    return eventfiles.event(ms, serial, [change])


# ----------------------------------------------------------------- hostile pieces

IMPOSSIBLE_TIMES = st.sampled_from(
    [
        "2026-13-45T00:44:19.748Z",
        "2026xxxxxxTxxxxxxxxxxxxZ",
        "2026-99-99T99:99:99.999Z",
        "2026-02-29T00:00:00.000Z",
        "2026-07-03T12:00:00.000",
        "2026-07-03T12:00:00Z",
        "+2026-07-03T12:00:00.000Z"[:24],
        "2026-07-03T12:00:00.000+00:00",
        "",
    ]
)
BAD_NUMBERS = st.sampled_from(
    ["1" + "0" * 400, "1e400", "-1e400", "NaN", "Infinity", "-Infinity", "2", "-0.5", "true"]
)


def _node(document: dict[str, Any]) -> dict[str, Any]:
    return document["changes"][0]  # type: ignore[no-any-return]


def _set(path: tuple[str, ...], value: Any) -> Any:
    def mutate(document: dict[str, Any]) -> None:
        target: Any = _node(document) if path[0] == "node" else document
        for key in path[1:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


@st.composite
def hostile_text(draw: st.DrawFn, document: dict[str, Any]) -> bytes:
    """A valid node event broken in one way the schema forbids, as the file's bytes."""
    how = draw(
        st.sampled_from(
            [
                "text",
                "json-value",
                "format",
                "event-id",
                "recorded-at",
                "changes",
                "change",
                "node-time",
                "node-id",
                "number",
                "namespace",
                "kind",
                "deep",
                "nul",
                "surrogate",
                "rationale",
                "stated-end",
                "edge-kind",
            ]
        )
    )
    node = _node(document)
    text: str | None = None
    if how == "text":
        raw = json.dumps(document)
        return draw(
            st.sampled_from(
                [
                    raw[: len(raw) // 2].encode(),
                    b"\xff\xfe" + raw.encode("utf-16-le"),
                    "\ufeff".encode() + raw.encode(),
                    raw.encode()[:-1] + b"\xc3",
                    raw.encode().replace(b'"fact"', b'"f\xe9ct"'),
                    b"",
                    b"{this is not json",
                    raw.encode() + b"{}",
                ]
            )
        )
    if how == "json-value":
        text = json.dumps(draw(st.one_of(json_scalars, st.lists(json_scalars, max_size=2))))
    elif how == "format":
        document["format"] = draw(st.sampled_from([2, 0, "1", 1.0, True, None, [1]]))
    elif how == "event-id":
        document["id"] = draw(
            st.sampled_from(
                [document["id"].upper(), document["id"][:-1], "ev_" + "g" * 29, 7, None]
            )
        )
    elif how == "recorded-at":
        document["recorded_at"] = draw(st.one_of(IMPOSSIBLE_TIMES, st.just(None)))
    elif how == "changes":
        document["changes"] = draw(st.sampled_from([[], {}, None, "node", [[]]]))
    elif how == "change":
        node["type"] = draw(st.sampled_from(["nodes", "", None, 1, "NODE"]))
    elif how == "node-time":
        key = draw(st.sampled_from(["valid_from", "recorded_at", "valid_until"]))
        node[key] = draw(st.one_of(IMPOSSIBLE_TIMES, st.just("1969-12-31T23:59:59.999Z")))
        if key != "recorded_at" and node[key].startswith("1969"):
            node[key] = "1970-02-30T00:00:00.000Z"  # a validity may be before 1970
    elif how == "node-id":
        node["id"] = draw(
            st.sampled_from(
                ["x_" + node["id"][2:], node["id"] + "0", "d" + node["id"][1:], "", None]
            )
        )
    elif how == "number":
        text = json.dumps(document).replace(
            f'"confidence": {json.dumps(node["confidence"])}',
            f'"confidence": {draw(BAD_NUMBERS)}',
        )
    elif how == "namespace":
        node["namespace"] = draw(st.sampled_from(["", "../up", "a b", "x" * 65, 5, "-lead"]))
    elif how == "kind":
        node["kind"] = draw(st.sampled_from(["rumour", "", None, "Fact"]))
    elif how == "deep":
        node["data"]["x_deep"] = json.loads("[" * 70 + "]" * 70)
    elif how == "nul":
        node["content"] = "a\x00b"
    elif how == "surrogate":
        text = json.dumps(document)[:-1] + ', "future": "\\udc00"}'
    elif how == "rationale":
        node["kind"] = "decision"
        node["id"] = "d" + node["id"][1:]
        node["data"]["rationale"] = draw(st.sampled_from([5, ["a"], {"a": 1}, True]))
    elif how == "stated-end":
        node["data"]["stated_valid_until"] = draw(st.sampled_from(["soon", 5, None]))
    elif how == "edge-kind":
        document["changes"].append(
            {
                "type": "edge",
                "src": node["id"],
                "dst": node["id"],
                "kind": draw(st.sampled_from(["FOO", "about", "", 3])),
                "created_at": node["recorded_at"],
            }
        )
    return (text if text is not None else json.dumps(document)).encode("utf-8", "surrogatepass")


STRAY_MONTHS = st.sampled_from(["2026/13", "0000/00", "1969/12", "2026/00", "9999/99"])
IGNORED_PLACES = st.sampled_from(
    [
        "notes/ev_{hex}.json",
        "2026/ev_{hex}.json",
        "2026/07/ev_{hex}.json.tmp",
        "2026/07/.ev_{hex}.json.tmp",
        "2026/07/nested/ev_{hex}.json",
        "2026/7/ev_{hex}.json",
        "20260/07/ev_{hex}.json",
        "README.md",
    ]
)


@st.composite
def worlds(draw: st.DrawFn) -> World:
    world = World()
    nodes: list[tuple[str, str]] = []
    for _ in range(draw(st.integers(1, 4))):
        document, node_id = draw(node_event(world, draw(st.sampled_from(NODE_KINDS))))
        world.pieces.append(Piece(file_of(document), json.dumps(document).encode(), "good"))
        world.pieces[-1].event_id = document["id"]
        nodes.append((node_id, _node(document)["kind"]))
    for _ in range(draw(st.integers(0, 4))):
        document = draw(link_event(world, nodes))
        piece = Piece(file_of(document), json.dumps(document).encode(), "good", document["id"])
        world.pieces.append(piece)
    if draw(st.booleans()):  # about a node no file holds: waits, reported
        missing = f"f_{0x19B76DAA800:013x}{0xDEAD:016x}"
        document = draw(link_event(world, [(missing, "fact")]))
        if document["changes"][0]["type"] != "purge":  # a purge of nothing is no reference
            piece = Piece(file_of(document), json.dumps(document).encode(), "waits")
            piece.event_id = document["id"]
            world.pieces.append(piece)
    for _ in range(draw(st.integers(0, 4))):
        document, _ = draw(node_event(world, "fact"))
        where = file_of(document)
        world.pieces.append(Piece(where, draw(hostile_text(document)), "bad"))
    for _ in range(draw(st.integers(0, 2))):
        document, _ = draw(node_event(world, "fact"))
        stray = draw(STRAY_MONTHS)
        data = json.dumps(document).encode()
        world.pieces.append(Piece(f"{stray}/{document['id']}.json", data, "bad"))
    if draw(st.booleans()):  # a valid event out of its place: another name or month
        document, _ = draw(node_event(world, "fact"))
        at = document["recorded_at"]
        month = f"{at[:4]}/{int(at[5:7]) % 12 + 1:02d}" if draw(st.booleans()) else at[:7]
        name = f"ev_{world.next_serial():029x}" if month == at[:7] else document["id"]
        data = json.dumps(document).encode()
        world.pieces.append(Piece(f"{month.replace('-', '/')}/{name}.json", data, "bad"))
    for _ in range(draw(st.integers(0, 2))):
        document, _ = draw(node_event(world, "fact"))
        place = draw(IGNORED_PLACES).format(hex=document["id"][3:])
        world.pieces.append(Piece(place, json.dumps(document).encode(), "ignored"))
    if draw(st.booleans()):  # a folder where a file is looked for
        world.pieces.append(Piece(f"2026/07/ev_{world.next_serial():029x}.json", None, "ignored"))
    return world


# ----------------------------------------------------------------- running the commands

RUNNER = CliRunner()


def run(db: Path, *args: str, stdin: str | None = None) -> Any:
    result = RUNNER.invoke(app, ["--db", str(db), "--format", "json", *args], input=stdin)
    assert "internal error" not in result.stderr, (args, result.stderr)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args,
        result.exception,
    )
    assert result.exit_code in (0, 4), (args, result.exit_code, result.stderr)
    return result


def lay_out(events: Path, pieces: list[Piece]) -> None:
    for piece in pieces:
        path = events / piece.where
        if path.exists():
            continue  # an ignored place may repeat
        if piece.data is None:
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(piece.data)


def reported_by_sync(report: dict[str, Any], pieces: list[Piece]) -> set[str]:
    """The pieces a sync report names: by file, or by the stray folder holding it."""
    sources = {problem["source"] for problem in report["problems"]}
    return {
        piece.where
        for piece in pieces
        if piece.where in sources or piece.where.rsplit("/", 1)[0] in sources
    }


# The changes that hold a node's text (team/sync.py's _CONTENT_KEYS): a sync takes out the
# file of an event holding a purged node's text (docs/team-memory.md, a purge is
# forever), so such an event is not held by a clone that synced the purge.
CONTENT_KEYS = {"node": "id", "alias": "entity_id", "data": "id"}


def taken_out_by_purges(pieces: list[Piece]) -> set[str]:
    """The good events whose files a sync takes out: they hold the text of a node a
    good purge event purges."""
    documents = {p.event_id: json.loads(p.data) for p in pieces if p.expect == "good" and p.data}
    purged = {
        change["id"]
        for document in documents.values()
        for change in document["changes"]
        if change["type"] == "purge"
    }
    return {
        event_id
        for event_id, document in documents.items()
        if any(
            change.get(CONTENT_KEYS.get(change["type"], "")) in purged
            for change in document["changes"]
        )
    }


def held_events(db: Path) -> set[str]:
    with MemoryStore(db) as memory:
        return {row[0] for row in memory.connection.execute("SELECT id FROM mem_events")}


def state_of(db: Path) -> str:
    with MemoryStore(db) as memory:
        return memory.canonical_state()


# An example runs a dozen commands (~1 s on a 2-core machine): a failure is reported as
# drawn, not shrunk (shrinking one took over five minutes).
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(world=worlds(), order=st.randoms(use_true_random=False), batches=st.integers(1, 3))
def test_every_reader_of_events_skips_what_is_hostile_and_converges(
    world: World, order: Any, batches: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pieces = world.pieces
        good = {p.event_id for p in pieces if p.expect == "good"}
        hostile = {p.where for p in pieces if p.expect in ("bad", "waits")}
        # A clone gets every file at once: init makes its cache (a), (b), (c).
        a = root / "a" / ".nervapack"
        lay_out(a / "events", pieces)
        init = run(a / "memory.db", "init")
        synced = run(a / "memory.db", "sync", "--full")
        report = json.loads(synced.stdout)
        assert reported_by_sync(report, pieces) == hostile, report["problems"]
        assert (synced.exit_code == 4) == bool(report["problems"])
        assert (init.exit_code == 4) == bool(report["problems"])
        taken_out = taken_out_by_purges(pieces)
        assert good - taken_out <= held_events(a / "memory.db")
        assert not taken_out & held_events(a / "memory.db")
        assert not any((a / "events" / p.where).exists() for p in pieces if p.event_id in taken_out)
        state = state_of(a / "memory.db")
        rebuilt = run(a / "memory.db", "sync", "--rebuild")
        assert reported_by_sync(json.loads(rebuilt.stdout), pieces) == hostile
        assert state_of(a / "memory.db") == state
        # (d) another clone: the same files in another order, in batches.
        b = root / "b" / ".nervapack"
        (b / "events").mkdir(parents=True)
        run(b / "memory.db", "init")
        shuffled = list(pieces)
        order.shuffle(shuffled)
        for number in range(batches):
            lay_out(b / "events", shuffled[number::batches])
            run(b / "memory.db", "sync")
        last = json.loads(run(b / "memory.db", "sync").stdout)
        assert reported_by_sync(last, pieces) == hostile
        assert state_of(b / "memory.db") == state
        # The same texts imported as lines: bad ones reported, good ones imported.
        c = root / "c" / "memory.db"
        lines = [p.data.decode("utf-8", "replace") for p in pieces if p.data is not None]
        lines = [line for line in lines if line.strip() and "\n" not in line]
        imported = run(c, "import", "-", stdin="".join(f"{line}\n" for line in lines))
        assert good <= held_events(c)
        assert (imported.exit_code == 4) == bool(json.loads(imported.stdout)["problems"])
        # (e) export, imported into a new store that then shares it.
        exported = run(a / "memory.db", "export")
        d = root / "d" / "memory.db"
        again = run(d, "import", "-", stdin=exported.stdout)
        assert again.exit_code == 0, again.stdout
        assert state_of(d) == state
        run(d, "init", "--shared")
        shutil.rmtree(root / "d")
