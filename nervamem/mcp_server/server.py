"""The MCP SDK's low-level server over stdio, serving the tools of tools.py.

Nothing of the protocol is written here: the SDK frames, validates and answers the
messages; this module only lists the tools and the prompt and hands each call to
MemoryServer. With stdio.py, it is one of the two modules that import the SDK at their
top (ruff bans that elsewhere), and only ``nervamem mcp`` imports them.

The bytes move through stdio.py, a transport without a worker thread per line; the
messages in them are still parsed and serialised by the SDK. Standard output belongs to
the protocol: while serving, the transport points file descriptor 1 at standard error,
so a stray print cannot corrupt a message; logging goes to stderr.
Calls run one at a time on the event loop's thread, which owns the SQLite connection.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext

from .. import __version__
from .definitions import GUIDE, TOOLS
from .stdio import Transport, stdio_transport
from .tools import MemoryServer, recall_guide

PROMPT_NAME = "use_memory"
PROMPT = types.Prompt(
    name=PROMPT_NAME,
    title="Use the memory",
    description=(
        "How to use nervamem as your memory in this task; with a topic, also what the "
        "memory already holds about it."
    ),
    arguments=[
        types.PromptArgument(
            name="topic",
            description="What the task is about: recalled into the prompt.",
            required=False,
        )
    ],
)


def tool_list() -> list[types.Tool]:
    """The tools as the protocol lists them (names, descriptions, JSON Schemas, hints)."""
    return [
        types.Tool(
            name=tool.name,
            title=tool.title,
            description=tool.description,
            input_schema=tool.input_schema,
            annotations=types.ToolAnnotations(
                title=tool.title,
                read_only_hint=tool.hints.read_only,
                destructive_hint=tool.hints.destructive,
                idempotent_hint=tool.hints.idempotent,
                open_world_hint=False,
            ),
        )
        for tool in TOOLS
    ]


def build(memory: MemoryServer) -> Server[Any]:
    tools = tool_list()

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        answer = memory.call(params.name, params.arguments)
        return types.CallToolResult(
            content=[types.TextContent(text=answer.text)],
            structured_content=answer.document,
            is_error=answer.is_error,
        )

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[PROMPT])

    async def get_prompt(
        ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != PROMPT_NAME:
            from mcp.shared.exceptions import MCPError

            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown prompt {params.name!r}")
        topic = (params.arguments or {}).get("topic")
        text = recall_guide(memory, topic)
        return types.GetPromptResult(
            description=PROMPT.description,
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(text=text)),
            ],
        )

    return Server(
        "nervamem",
        version=__version__,
        title="nervamem memory",
        instructions=GUIDE,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def serve(memory: MemoryServer, transport: Transport = stdio_transport) -> None:
    """Serve over stdin and stdout until the client closes stdin. The transport is
    stdio.py's unless given (the benchmark passes the SDK's ``stdio_server`` to compare)."""
    server = build(memory)

    async def flush_access_counts() -> None:
        # A recall's access counts wait in memory until FLUSH_AFTER seconds pass (or
        # FLUSH_EVERY recalls): checked at the next recall, so an idle server would keep
        # them. Written here, on the loop's thread, between two calls (a call never
        # awaits), so other processes see them at most ~2 s late.
        from ..recall.access_counts import FLUSH_AFTER

        while True:
            await anyio.sleep(FLUSH_AFTER)
            memory.flush_access_counts()

    async def run() -> None:
        async with transport() as (read_stream, write_stream), anyio.create_task_group() as tasks:
            tasks.start_soon(flush_access_counts)
            await server.run(read_stream, write_stream, server.create_initialization_options())
            tasks.cancel_scope.cancel()

    try:
        anyio.run(run)
    finally:
        memory.close()
