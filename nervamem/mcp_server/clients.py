"""The configuration that connects a client to ``nervamem mcp``, for the common clients.

Each snippet starts the server on one store, named by absolute path (``--db``): a client
launches its servers from a folder of its choosing, so the store must not depend on it.
A snippet is exactly what goes in the file (no comment: not every client's JSON takes
one); where that file is, is said apart (docs/mcp.md has the same).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

SERVER_NAME = "nervamem"


def _json(document: object) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _toml_string(text: str) -> str:
    # A TOML basic string and a JSON string escape alike for what a path can hold.
    return json.dumps(text, ensure_ascii=False)


def _claude_code(command: str, args: Sequence[str]) -> str:
    import shlex

    words = ["claude", "mcp", "add", "--scope", "user", SERVER_NAME, "--", command, *args]
    return " ".join(shlex.quote(word) for word in words) + "\n"


def _mcp_servers(command: str, args: Sequence[str]) -> str:
    return _json({"mcpServers": {SERVER_NAME: {"command": command, "args": list(args)}}})


def _vscode(command: str, args: Sequence[str]) -> str:
    entry = {"type": "stdio", "command": command, "args": list(args)}
    return _json({"servers": {SERVER_NAME: entry}})


def _zed(command: str, args: Sequence[str]) -> str:
    entry = {"source": "custom", "command": command, "args": list(args), "env": {}}
    return _json({"context_servers": {SERVER_NAME: entry}})


def _codex(command: str, args: Sequence[str]) -> str:
    values = ", ".join(_toml_string(arg) for arg in args)
    return f"[mcp_servers.{SERVER_NAME}]\ncommand = {_toml_string(command)}\nargs = [{values}]\n"


Snippet = Callable[[str, Sequence[str]], str]
# client -> (where the snippet goes, the snippet)
CLIENTS: dict[str, tuple[str, Snippet]] = {
    "claude-code": (
        "run this once (--scope project writes .mcp.json for the whole team instead)",
        _claude_code,
    ),
    "claude-desktop": (
        "claude_desktop_config.json (Settings > Developer > Edit Config)",
        _mcp_servers,
    ),
    "cursor": (".cursor/mcp.json in the project, or ~/.cursor/mcp.json", _mcp_servers),
    "vscode": (".vscode/mcp.json, or 'MCP: Open User Configuration'", _vscode),
    "zed": ("Zed's settings.json", _zed),
    "codex": ("~/.codex/config.toml, or .codex/config.toml in a trusted project", _codex),
    "windsurf": ("~/.codeium/windsurf/mcp_config.json", _mcp_servers),
}


def server_arguments(db_path: str, namespace: str | None) -> list[str]:
    """The arguments that start the server on this store (and namespace, if pinned)."""
    args = ["--db", db_path]
    if namespace is not None:
        args += ["--ns", namespace]
    return [*args, "mcp"]


def config_for(
    client: str, command: str, db_path: str, namespace: str | None = None
) -> tuple[str, str]:
    """Where the snippet for ``client`` goes, and the snippet; KeyError if nervamem knows
    no such client."""
    where, snippet = CLIENTS[client]
    return where, snippet(command, server_arguments(db_path, namespace))
