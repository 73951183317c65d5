"""nervamem as an MCP server: the memory operations of concepts.md as MCP tools.

- tools.py: the tools (names, descriptions, JSON Schemas) and what each call does, in
  plain Python; it knows nothing of the protocol, so the tests and the benchmark can call
  it in-process and compare with the wire.
- server.py: the MCP SDK wired to tools.py over stdio. The only module that imports the
  SDK, and only ``nervamem mcp`` imports it: the CLI's start-up never pays for the SDK.
- clients.py: the configuration snippets that connect the common clients to this server.

Invariant: a tool call gives what the CLI command of the same name gives on the same
store (the same renderers, the same store resolution, the same active namespace and
session in state.yaml, the same error codes and messages).
"""
