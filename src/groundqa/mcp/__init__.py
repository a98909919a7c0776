"""The MCP server: an index's questions, passages and sources as tools an assistant calls.

    server    create_server: the tools ask, search and source over one Engine; listen, run
    results   what each tool returns, as text and as structured content

A shell beside the HTTP API: it calls the library and holds no pipeline logic of its
own. It needs the `mcp` extra (the official MCP Python SDK); `groundqa mcp` says so
when it is missing.
"""

from __future__ import annotations

from groundqa.mcp.server import create_server, listen, run

__all__ = ["create_server", "listen", "run"]
