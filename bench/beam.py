"""BEAM (Tavakoli et al. 2025) as a quality set: long conversations between a developer
and a coding assistant, with questions whose evidence is labelled by message.

The data is read from a copy of the public repository mohammadtavakoli78/BEAM (it carries
no licence file, so nothing of it is copied into this project): pass the folder of one
tier, e.g. ``/tmp/beam/chats/500K``. Each numbered folder is one conversation:
``chat.json`` (batches of turns; each message has a numeric ``id``, a ``role`` and,
on some user messages, a ``time_anchor`` such as ``January-05-2024``) and
``probing_questions/probing_questions.json`` (questions per category, evidence in
``source_chat_ids``: a list of message IDs, or a dict of such lists).

Ingest as the issue describes it: one ``fact`` per message, content ``"<role>: <text>"``,
one session per batch, valid from the last time anchor seen (a second per message so
that their order survives). Abstention questions have no evidence and are left out.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

from bench.corpus import Corpus, Memory, Question, Session

# An evidence message counts as found when the output holds it whole, or, when it is
# longer, a contiguous excerpt of at least this many characters of it (the rule).
EXCERPT_CHARS = 300
KNOWLEDGE_UPDATE = "knowledge_update"


def _anchor(text: str) -> datetime:
    return datetime.strptime(text, "%B-%d-%Y")


def _messages(chat: list[dict]) -> list[tuple[int, list[dict]]]:
    """(batch number, its messages in order); turns are lists of messages or messages."""
    batches = []
    for batch in chat:
        messages: list[dict] = []
        for turn in batch["turns"]:
            messages.extend(turn if isinstance(turn, list) else [turn])
        batches.append((int(batch["batch_number"]), messages))
    return batches


def _ids(value: object) -> list[int]:
    if isinstance(value, dict):
        return [i for part in value.values() for i in _ids(part)]
    if isinstance(value, list):
        return [i for part in value for i in _ids(part)]
    if isinstance(value, int):
        return [value]
    return []


def beam_corpus(folder: Path) -> Corpus:
    chat = json.loads((folder / "chat.json").read_text(encoding="utf-8"))
    batches = _messages(chat)
    anchors = [m["time_anchor"] for _, ms in batches for m in ms if m.get("time_anchor")]
    day = _anchor(anchors[0]) if anchors else datetime(2024, 1, 1)
    moment = day
    text: dict[int, str] = {}
    sessions = []
    for number, messages in batches:
        memories = []
        for message in messages:
            if message.get("time_anchor"):
                anchored = _anchor(message["time_anchor"])
                if anchored != day:
                    day = moment = anchored
            moment += timedelta(seconds=1)
            text[int(message["id"])] = message["content"]
            memories.append(
                Memory(
                    f"m{message['id']}",
                    "fact",
                    f"{message['role']}: {message['content']}",
                    moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
                )
            )
        sessions.append(Session(f"{folder.name} batch {number}", memories))
    questions = []
    probing = folder / "probing_questions" / "probing_questions.json"
    for category, asked in json.loads(probing.read_text(encoding="utf-8")).items():
        for entry in asked:
            sources = entry.get("source_chat_ids")
            wanted = tuple(dict.fromkeys(text[i] for i in _ids(sources) if i in text))
            if not wanted:
                continue  # abstention: nothing to find
            forbidden: tuple[str, ...] = ()
            if category == KNOWLEDGE_UPDATE and isinstance(sources, dict):
                updated = {text[i] for i in _ids(sources.get("updated_info")) if i in text}
                forbidden = tuple(
                    dict.fromkeys(
                        text[i]
                        for i in _ids(sources.get("original_info"))
                        if i in text and text[i] not in updated
                    )
                )
            questions.append(
                Question(
                    entry["question"],
                    category,
                    wanted,
                    forbidden=forbidden,
                    min_excerpt=EXCERPT_CHARS,
                )
            )
    return Corpus(f"beam {folder.name}", sessions, questions)


def beam_corpora(tier: Path) -> list[Corpus]:
    folders = sorted(
        (p for p in tier.iterdir() if p.is_dir() and (p / "chat.json").is_file()),
        key=lambda p: int(p.name) if p.name.isdigit() else 0,
    )
    return [beam_corpus(folder) for folder in folders]
