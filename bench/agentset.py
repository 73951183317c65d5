"""A recall-quality set that looks like a coding agent's memory, answers known by
construction.

Seeded and deterministic: ``agent_corpora(seed)`` always yields the same memories and
questions. One store holds a project's life over about six months, one session per
agent task, recorded as it happened (each session moves the store's clock to its date):

* services (entities) with facts about what they do, stored in the session that
  learnt them and linked ABOUT the service;
* settings of a service (timeouts, pool sizes, ...) that change over time: each new
  value SUPERSEDES the previous one;
* decisions on a topic (which queue, which cache, ...) with their reason, some later
  replaced by a new decision that SUPERSEDES the old one;
* actions and the outcomes they CAUSED; procedures; preferences;
* and many routine memories that share the project's common words (service, test,
  deploy, fix, ...), as real agent memory does.

Questions, each with the memories that answer it (``expected``) and the superseded
versions that must not be presented as current (``forbidden``):

* ``decision``  "what did we choose for the billing event queue?" -> the current decision
* ``setting``   "what is the request timeout of auth_service?" -> its current value
* ``service``   "what does ledger_writer do?" -> the facts about it (nothing in the
  question tells them from the routine notes about the same service: the hard case)
* ``service-detail`` "when does billing_service retry a declined card?" -> that fact
* ``outcome``   "what happened when we <action>?" -> the action and its outcome
* ``procedure`` "how do we <task>?" -> the procedure
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from bench.corpus import Corpus, Memory, Question, Session

START = datetime(2025, 9, 1, 9, 0, tzinfo=timezone.utc)
SESSIONS = 60

SERVICES = {
    "billing_service": [
        "billing_service turns usage records into monthly invoices",
        "billing_service retries a declined card charge after one, three and seven days",
        "billing_service publishes invoice.created events for the email dispatcher",
    ],
    "AuthService": [
        "AuthService issues access tokens signed with the rotating RS256 key",
        "AuthService keeps refresh tokens in the sessions table with a hashed secret",
        "AuthService locks an account after ten failed logins within an hour",
    ],
    "ledger_writer": [
        "ledger_writer appends double-entry rows for every settled payment",
        "ledger_writer refuses a batch whose debits and credits do not balance",
        "ledger_writer runs as a single consumer so entries stay in order",
    ],
    "search-indexer": [
        "search-indexer rebuilds product documents from the catalog change feed",
        "search-indexer strips HTML from descriptions before tokenising them",
        "search-indexer falls back to a full reindex when the feed offset is lost",
    ],
    "NotificationWorker": [
        "NotificationWorker sends push notifications through the mobile gateway",
        "NotificationWorker drops notifications older than six hours instead of sending late",
        "NotificationWorker batches digest emails per user once a day at 07:00 local time",
    ],
    "media_uploader": [
        "media_uploader streams uploads straight to object storage in 8 MB parts",
        "media_uploader generates three thumbnail sizes after an image upload",
        "media_uploader rejects files whose magic bytes do not match the declared type",
    ],
    "InventorySync": [
        "InventorySync pulls warehouse stock levels every five minutes",
        "InventorySync marks a product unavailable when stock drops below the safety buffer",
        "InventorySync reconciles reserved items against open orders nightly",
    ],
    "report_exporter": [
        "report_exporter renders finance reports to CSV and XLSX on request",
        "report_exporter caps an export at two million rows and splits larger ones",
        "report_exporter signs download links that expire after 24 hours",
    ],
}

# A question about one fact of each service, worded as an agent would ask it.
DETAILS = {
    "billing_service": ("when does billing_service retry a declined card?", 1),
    "AuthService": ("how does AuthService sign access tokens?", 0),
    "ledger_writer": ("what does ledger_writer do with an unbalanced batch?", 1),
    "search-indexer": ("what happens when search-indexer loses the feed offset?", 2),
    "NotificationWorker": ("when are digest emails sent by NotificationWorker?", 2),
    "media_uploader": ("which thumbnails does media_uploader generate?", 1),
    "InventorySync": ("how often does InventorySync pull stock levels?", 0),
    "report_exporter": ("how long do report_exporter download links stay valid?", 2),
}

SETTINGS = [
    ("AuthService", "token TTL", ["15 minutes", "30 minutes", "1 hour"]),
    ("billing_service", "request timeout", ["5 seconds", "10 seconds", "30 seconds"]),
    ("search-indexer", "batch size", ["500 documents", "2000 documents"]),
    ("InventorySync", "connection pool size", ["10 connections", "25 connections"]),
    ("ledger_writer", "retry limit", ["3 attempts", "5 attempts", "8 attempts"]),
    ("media_uploader", "maximum upload size", ["100 MB", "250 MB"]),
]

DECISIONS = [
    (
        "the billing event queue",
        [
            ("RabbitMQ", "the team already runs it for email"),
            ("Kafka", "invoices must be replayable for audits"),
        ],
    ),
    (
        "the session cache",
        [("Memcached", "it is the simplest option"), ("Redis", "we need expiring sets")],
    ),
    ("the search engine", [("Elasticsearch", "faceted product search is a must")]),
    (
        "the deployment platform",
        [
            ("plain VMs with Ansible", "nobody knew Kubernetes yet"),
            ("Kubernetes", "autoscaling the workers by queue depth"),
        ],
    ),
    (
        "API authentication",
        [("session cookies", "the web app was the only client"), ("JWT", "mobile clients")],
    ),
    ("the ORM", [("SQLAlchemy", "alembic migrations come with it")]),
    (
        "the job scheduler",
        [("cron on one host", "it was there"), ("Celery beat", "no single host to fail")],
    ),
    ("error tracking", [("Sentry", "it groups exceptions by release")]),
]

ACTIONS = [
    (
        "migrated the invoices table to partitioned storage",
        "The invoices table migration finished in 42 minutes with no lost rows",
    ),
    (
        "upgraded Postgres from 13 to 16 on staging",
        "The Postgres 16 upgrade broke two queries that relied on implicit casts",
    ),
    (
        "enabled HTTP/2 on the public gateway",
        "HTTP/2 on the gateway cut median page load by 180 ms",
    ),
    (
        "rotated the RS256 signing key",
        "The key rotation logged out every mobile user who had an app older than 4.2",
    ),
    (
        "moved thumbnail generation to a separate worker pool",
        "Upload latency dropped below one second once thumbnails left the request path",
    ),
    (
        "turned on query logging for the ledger database",
        "Query logging filled the ledger database disk within two days",
    ),
]

PROCEDURES = [
    (
        "roll back a bad release",
        "To roll back a release: pause the canary, redeploy the previous image tag, then "
        "run the smoke checks",
    ),
    (
        "add a column to a large table",
        "To add a column to a large table: add it nullable, backfill in batches of 10k, "
        "then add the constraint",
    ),
    (
        "rotate database credentials",
        "To rotate database credentials: create the new user, update the vault secret, "
        "restart the pods, drop the old user",
    ),
]

PREFERENCES = [
    "The team prefers snake_case for JSON fields in public APIs",
    "Always squash-merge pull requests and keep the PR title as the commit message",
    "Prefer feature flags over long-lived release branches",
]

ROUTINE = [
    "Ran the {svc} test suite: all tests pass after the fix",
    "Fixed a flaky test in {svc} that depended on the wall clock",
    "Updated the {svc} service dependencies to the latest patch releases",
    "Deployed {svc} to staging and checked the service logs for errors",
    "Reviewed the {svc} service dashboard: error rate is back to normal",
    "Added a unit test for the {svc} error handling path",
    "The {svc} service build takes four minutes on CI",
    "Refactored the {svc} config loading so the service starts faster",
    "Changed the {svc} log format to structured JSON for the service",
    "Bumped the {svc} service version and deployed the change to production",
]


# Routine notes that share the words of a decision topic or a setting: distractors.
TOPIC_NOTES = [
    "Looked at {topic} metrics during the incident review",
    "Wrote down open questions about {topic} for the next planning meeting",
    "Benchmarked {topic} under the load test profile",
]
SETTING_NOTES = [
    "Investigated alerts about the {name} {attribute}",
    "Documented how the {name} {attribute} is configured per environment",
]


def agent_corpora(seed: int = 7) -> list[Corpus]:
    return [_project(seed), coding_task_corpus(seed)]


def _project(seed: int) -> Corpus:
    rng = random.Random(seed)
    sessions: list[list[Memory]] = [[] for _ in range(SESSIONS)]
    questions: list[Question] = []
    counter = iter(range(1_000_000))

    def key() -> str:
        return f"m{next(counter)}"

    def day_of(index: int) -> str:
        moment = START + timedelta(days=index * 3, hours=rng.randrange(8))
        return moment.strftime("%Y-%m-%dT%H:%M:00Z")

    def place(memory: Memory, index: int) -> Memory:
        sessions[index].append(memory)
        return memory

    services = list(SERVICES)
    for name, facts in SERVICES.items():
        first = rng.randrange(0, SESSIONS // 2)
        expected = []
        for offset, text in enumerate(facts):
            index = min(first + offset * rng.randrange(1, 6), SESSIONS - 1)
            place(Memory(key(), "fact", text, day_of(index), entities=(name,)), index)
            expected.append(text)
        questions.append(Question(f"what does {name} do?", "service", tuple(expected)))
        detail, which = DETAILS[name]
        questions.append(Question(detail, "service-detail", (facts[which],)))

    for name, attribute, values in SETTINGS:
        index = rng.randrange(0, SESSIONS // 3)
        previous: Memory | None = None
        shown: list[str] = []
        for value in values:
            text = f"{name} {attribute} is {value}"
            memory = place(
                Memory(
                    key(),
                    "fact",
                    text,
                    day_of(index),
                    entities=(name,),
                    supersedes=previous.key if previous else None,
                ),
                index,
            )
            shown.append(text)
            previous = memory
            index = min(index + rng.randrange(4, 15), SESSIONS - 1)
        questions.append(
            Question(
                f"what is the {attribute} of {name}?",
                "setting",
                (shown[-1],),
                tuple(shown[:-1]),
            )
        )

    for topic, choices in DECISIONS:
        index = rng.randrange(0, SESSIONS // 2)
        previous = None
        shown = []
        for choice, reason in choices:
            text = f"Chose {choice} for {topic} because {reason}"
            memory = place(
                Memory(
                    key(),
                    "decision",
                    text,
                    day_of(index),
                    supersedes=previous.key if previous else None,
                    confidence=rng.choice((0.8, 0.9, 1.0)),
                ),
                index,
            )
            shown.append(text)
            previous = memory
            index = min(index + rng.randrange(6, 20), SESSIONS - 1)
        questions.append(
            Question(
                f"what did we choose for {topic}?", "decision", (shown[-1],), tuple(shown[:-1])
            )
        )

    for action_text, outcome_text in ACTIONS:
        index = rng.randrange(0, SESSIONS)
        when = day_of(index)
        action = place(Memory(key(), "action", f"We {action_text}", when), index)
        place(Memory(key(), "outcome", outcome_text, when, caused_by=(action.key,)), index)
        questions.append(
            Question(
                f"what happened when we {action_text}?",
                "outcome",
                (f"We {action_text}", outcome_text),
            )
        )

    for task, text in PROCEDURES:
        index = rng.randrange(0, SESSIONS)
        place(Memory(key(), "procedure", text, day_of(index)), index)
        questions.append(Question(f"how do we {task}?", "procedure", (text,)))

    for text in PREFERENCES:
        index = rng.randrange(0, SESSIONS)
        place(Memory(key(), "preference", text, day_of(index)), index)

    # Routine memories: the bulk of a real store, full of the words every row shares.
    for index in range(SESSIONS):
        for _ in range(rng.randrange(12, 25)):
            service = rng.choice(services)
            text = rng.choice(ROUTINE).format(svc=service)
            place(
                Memory(
                    key(), rng.choice(("action", "fact")), text, day_of(index), entities=(service,)
                ),
                index,
            )

    for index in range(SESSIONS):
        for _ in range(rng.randrange(1, 4)):
            if rng.random() < 0.5:
                topic = rng.choice(DECISIONS)[0]
                text = rng.choice(TOPIC_NOTES).format(topic=topic)
                entities: tuple[str, ...] = ()
            else:
                name, attribute, _values = rng.choice(SETTINGS)
                text = rng.choice(SETTING_NOTES).format(name=name, attribute=attribute)
                entities = (name,)
            place(Memory(key(), "fact", text, day_of(index), entities=entities), index)

    built = []
    for index, memories in enumerate(sessions):
        memories.sort(key=lambda m: m.valid_from)  # stable: a cause stays before its effect
        title = f"task {index + 1}: " + rng.choice(
            ("bug fix", "feature work", "incident follow-up", "maintenance", "refactor")
        )
        started = (START + timedelta(days=index * 3)).strftime("%Y-%m-%dT%H:%M:00Z")
        built.append(Session(title, memories, recorded_from=started))
    _check_order(built)
    return Corpus(f"agent-{seed}", built, questions)


def _check_order(sessions: list[Session]) -> None:
    """Supersessions and causes must point to memories stored earlier."""
    seen: set[str] = set()
    for session in sessions:
        for memory in session.memories:
            for ref in (memory.supersedes, *memory.caused_by):
                if ref is not None and ref not in seen:
                    raise AssertionError(f"{memory.key} refers to {ref}, stored later")
            seen.add(memory.key)


# ---------------------------------------------------------------------------- a coding task
# Three sessions of one coding task, named after the task as docs/guide-agents.md
# recommends, among sessions of other tasks: decisions with rationales and rejected
# alternatives (one superseded), long commit messages recorded by the post-commit hook,
# near-duplicate facts, and notes of the same sessions that are only loosely related.
TASK_TITLES = (
    "configure retries on HTTPAdapter",
    "configure retries on HTTPAdapter: backoff on 429",
    "configure retries on HTTPAdapter: review fixes",
)
OLD_RETRY_DECISION = "Mount HTTPAdapter(max_retries=3) on the API client's Session"
RETRY_DECISION = (
    "Use a urllib3 Retry(total=5, backoff_factor=0.5, status_forcelist=[429, 502, 503]) "
    "as max_retries of the HTTPAdapter mounted on the API client's Session"
)
RETRY_RATIONALE = (
    "a bare max_retries integer never retries on 429 or 503 responses, and urllib3 1.24.2 "
    "or later fixes CVE-2018-18074"
)
RETRY_REJECTED = ("tenacity decorators around each call", "a hand-written retry loop")
TIMEOUT_DECISION = "Every API client request passes timeout=(3.05, 27)"
TIMEOUT_RATIONALE = "a request without a timeout can hang a worker thread forever"
NETRC_FACTS = (
    "requests reads credentials from ~/.netrc when a request passes no auth",
    "Session.trust_env = False stops requests from reading ~/.netrc and proxy variables",
)
TASK_NOTES = (
    "The API client keeps one requests Session per worker thread",
    "Ran the API client tests against the staging proxy",
    "The staging proxy drops about one request in fifty with a 502",
    "Added a test that the API client retries a 503 response",
    "The API client logs each request at DEBUG level",
    "Read the urllib3 Retry documentation for the backoff formula",
    "The API client sends a User-Agent header with the package version",
    "The API client session is closed when the worker stops",
)
NEAR_DUPLICATES = (
    "The API client base URL comes from the API_BASE_URL environment variable",
    "The API client reads its base URL from the API_BASE_URL environment variable",
    "API client: base URL is read from API_BASE_URL in the environment",
)
COMMIT_MESSAGE = (
    "Commit {sha}: {subject}\n\n{body}\n\nThe API client now builds its Session in one place "
    "(client/session.py), mounts the adapter for both http:// and https://, and the tests "
    "use a fake transport instead of the staging proxy. Also renamed a few helpers, moved "
    "the user agent string to the package metadata, and dropped the unused "
    "client/compat.py module. Reviewed-by: the backend team\n\nDecision: see the task notes"
)
COMMITS = (
    ("3f9a1c2", "Add a retry adapter to the API client", "Retries use HTTPAdapter."),
    (
        "8b04d7e",
        "Retry on 429 and 5xx with exponential backoff",
        "The adapter gets a urllib3 Retry with backoff instead of a bare integer.",
    ),
    ("c51e990", "Review fixes for the retry change", "Typos, docstrings and a test name."),
)
OTHER_TASKS = (
    "migrate the invoices table",
    "speed up the search indexer",
    "fix the flaky login test",
    "add CSV export to reports",
    "upgrade Postgres on staging",
    "tune the thumbnail worker pool",
)


def coding_task_corpus(seed: int = 7) -> Corpus:
    rng = random.Random(seed * 1009 + 18)
    start = START + timedelta(days=200)

    def when(day: int, hour: int) -> str:
        return (start + timedelta(days=day, hours=hour)).strftime("%Y-%m-%dT%H:%M:00Z")

    sessions: list[Session] = []
    # Other tasks first: routine notes that share the project's words.
    for number, task in enumerate(OTHER_TASKS):
        notes = [
            Memory(f"o{number}-{i}", rng.choice(("fact", "action")), text, when(number, i))
            for i, text in enumerate(
                rng.sample(
                    [r.format(svc=rng.choice(list(SERVICES))) for r in ROUTINE]
                    + [
                        "Ran the API client tests before the release",
                        "The API client timeout was raised for the export job",
                        "Checked the request logs of the API gateway",
                    ],
                    8,
                )
            )
        ]
        sessions.append(Session(task, notes, recorded_from=when(number, 0)))
    day = len(OTHER_TASKS) + 1
    first = [
        Memory("d-old", "decision", OLD_RETRY_DECISION, when(day, 1), rationale="simplest"),
        Memory("netrc-1", "fact", NETRC_FACTS[0], when(day, 2)),
        Memory("dup-1", "fact", NEAR_DUPLICATES[0], when(day, 2)),
        Memory(
            "d-timeout", "decision", TIMEOUT_DECISION, when(day, 3), rationale=TIMEOUT_RATIONALE
        ),
        *(Memory(f"n1-{i}", "fact", text, when(day, 3)) for i, text in enumerate(TASK_NOTES[:4])),
    ]
    second = [
        Memory(
            "d-retry",
            "decision",
            RETRY_DECISION,
            when(day + 2, 1),
            supersedes="d-old",
            rationale=RETRY_RATIONALE,
            rejected=RETRY_REJECTED,
        ),
        Memory("dup-2", "fact", NEAR_DUPLICATES[1], when(day + 2, 2)),
        *(
            Memory(f"n2-{i}", "fact", text, when(day + 2, 2))
            for i, text in enumerate(TASK_NOTES[4:])
        ),
        Memory("netrc-2", "fact", NETRC_FACTS[1], when(day + 2, 3)),
    ]
    third = [Memory("dup-3", "fact", NEAR_DUPLICATES[2], when(day + 4, 1))]
    for number, (sha, subject, body) in enumerate(COMMITS):
        text = COMMIT_MESSAGE.format(sha=sha, subject=subject, body=body)
        memory = Memory(f"c{number}", "action", text, when(day + 2 * number, 5))
        (first, second, third)[number].append(memory)
    for index, (title, memories) in enumerate(
        zip(TASK_TITLES, (first, second, third), strict=True)
    ):
        sessions.append(Session(title, memories, recorded_from=when(day + 2 * index, 0)))
    questions = [
        Question(
            "how are retries configured on HTTPAdapter",
            "task-decision",
            (RETRY_DECISION,),
            (OLD_RETRY_DECISION,),
        ),
        Question(
            "retries on the API client", "task-decision", (RETRY_DECISION,), (OLD_RETRY_DECISION,)
        ),
        Question("CVE-2018-18074", "task-why", (RETRY_DECISION,), (OLD_RETRY_DECISION,)),
        Question(
            "why did we not use tenacity for retries",
            "task-why",
            (RETRY_DECISION,),
            (OLD_RETRY_DECISION,),
        ),
        Question("why do API client requests have a timeout", "task-why", (TIMEOUT_DECISION,)),
        Question("netrc", "task-fact", NETRC_FACTS),
        # Any one of the near-duplicates answers it.
        Question(
            "where does the API client get its base URL",
            "task-fact",
            NEAR_DUPLICATES,
            any_of=True,
        ),
    ]
    return Corpus(f"coding-task-{seed}", sessions, questions)
