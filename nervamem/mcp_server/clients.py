"""The configuration that connects a client to ``nervamem mcp``, for the common clients.

Each snippet starts the server on one store, named by absolute path (``--db``): a client
launches its servers from a folder of its choosing, so the store must not depend on it.
Where the snippet goes is said in a comment line above it (docs/mcp.md has the same).
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
    return "# Run once (--scope project writes .mcp.json for the whole team instead):\n" + (
        " ".join(shlex.quote(word) for word in words) + "\n"
    )


def _mcp_servers(where: str) -> Callable[[str, Sequence[str]], str]:
    def snippet(command: str, args: Sequence[str]) -> str:
        entry = {"command": command, "args": list(args)}
        return f"// {where}\n" + _json({"mcpServers": {SERVER_NAME: entry}})

    return snippet


def _vscode(command: str, args: Sequence[str]) -> str:
    entry = {"type": "stdio", "command": command, "args": list(args)}
    return "// .vscode/mcp.json (or 'MCP: Open User Configuration')\n" + _json(
        {"servers": {SERVER_NAME: entry}}
    )


def _zed(command: str, args: Sequence[str]) -> str:
    entry = {"source": "custom", "command": command, "args": list(args), "env": {}}
    return "// Zed settings.json\n" + _json({"context_servers": {SERVER_NAME: entry}})


def _codex(command: str, args: Sequence[str]) -> str:
    values = ", ".join(_toml_string(arg) for arg in args)
    return (
        "# ~/.codex/config.toml (or .codex/config.toml in a trusted project)\n"
        f"[mcp_servers.{SERVER_NAME}]\n"
        f"command = {_toml_string(command)}\n"
        f"args = [{values}]\n"
    )


CLIENTS: dict[str, Callable[[str, Sequence[str]], str]] = {
    "claude-code": _claude_code,
    "claude-desktop": _mcp_servers(
        "claude_desktop_config.json (Settings > Developer > Edit Config)"
    ),
    "cursor": _mcp_servers(".cursor/mcp.json in the project, or ~/.cursor/mcp.json"),
    "vscode": _vscode,
    "zed": _zed,
    "codex": _codex,
    "windsurf": _mcp_servers("~/.codeium/windsurf/mcp_config.json"),
}


def server_arguments(db_path: str, namespace: str | None) -> list[str]:
    """The arguments that start the server on this store (and namespace, if pinned)."""
    args = ["--db", db_path]
    if namespace is not None:
        args += ["--ns", namespace]
    return [*args, "mcp"]


def config_for(client: str, command: str, db_path: str, namespace: str | None = None) -> str:
    """The snippet for ``client``; KeyError if nervamem knows no such client."""
    return CLIENTS[client](command, server_arguments(db_path, namespace))
