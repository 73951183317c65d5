"""How the PostgreSQL engine words what goes wrong: the SQLSTATEs it tells apart, libpq's
complaint about a URL with the URL and passwords cut out, the hint for an unencoded
``@``, and an exception's first line. Kept apart from the engine in __init__.py: text
about errors, with no connection or state of its own."""

from __future__ import annotations

import re
from collections.abc import Iterable

# SQLSTATEs (PostgreSQL, appendix A) that mean: the server or the connection went away.
LOST = ("08", "57P01", "57P02", "57P03")
LOCK_TIMEOUT = "55P03"
QUERY_CANCELED = "57014"


def parse_error(message: str, secrets: Iterable[str]) -> str:
    """libpq's complaint about a URL it cannot parse, with every quoted part that holds
    the URL or a password cut out: libpq quotes the whole URI, or the piece it choked
    on, which may be the password."""
    hidden = list(secrets)

    def keep(match: re.Match[str]) -> str:
        quoted = match.group(0)
        if "://" in quoted or "@" in quoted or any(s in quoted for s in hidden):
            return '"…"'
        return quoted

    return re.sub(r'"[^"]*"', keep, message)


def encoding_hint(url: str) -> str:
    """A hint for a URL whose user or password holds an unencoded ``@``."""
    user_info = url.partition("://")[2].split("?", 1)[0].rpartition("@")[0]
    if "@" not in user_info:
        return ""
    return " (percent-encode special characters in the user and password: @ as %40)"


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
