"""A real MCP server for the tests, built on the mcp SDK's own MCPServer class.

``python mcp_tools.py`` serves over stdio; ``python mcp_tools.py http PORT`` over
streamable HTTP on 127.0.0.1 (``--legacy`` keeps the tools fixed and notifies list changes
the pre-2026 way, for clients that negotiate the initialize handshake).
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import EmbeddedResource, ResourceLink, TextContent, TextResourceContents

# a 1x1 red PNG
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)

mcp = MCPServer("test-tools")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
def logo() -> Image:
    """The logo, as a PNG image."""
    return Image(data=PNG, format="png")


@mcp.tool()
def notes() -> list:
    """Notes as an embedded resource and a link."""
    return [
        TextContent(type="text", text="two notes"),
        EmbeddedResource(
            type="resource", resource=TextResourceContents(uri="note://1", mime_type="text/plain", text="buy milk")
        ),
        ResourceLink(type="resource_link", uri="note://2", name="second"),
    ]


@mcp.tool()
def fail(message: str) -> str:
    """Always fails with the message."""
    raise ToolError(message)


@mcp.tool()
async def slow(seconds: float) -> str:
    """Sleeps, then answers."""
    await asyncio.sleep(seconds)
    return "woke up"


@mcp.tool()
def die() -> str:
    """Ends the server process in the middle of the call."""
    os._exit(3)


@mcp.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@mcp.tool()
async def unlock(ctx: Context) -> str:
    """Adds the tool `secret` and says the tool list changed."""

    def secret() -> str:
        """The secret."""
        return "42"

    mcp.add_tool(secret)
    await ctx.notify_tools_changed()  # to subscriptions/listen streams (2026-07-28)
    if ctx.protocol_version and ctx.protocol_version < "2026-07-28":
        await ctx.session.send_tool_list_changed()  # the notification of earlier versions
    return "unlocked"


@mcp.tool()
async def unlock_later(ctx: Context, seconds: float = 0.3) -> str:
    """Answers at once; adds the tool `later` after a while and says the tool list changed."""
    legacy = bool(ctx.protocol_version and ctx.protocol_version < "2026-07-28")
    session = ctx.session if legacy else None

    async def change() -> None:
        await asyncio.sleep(seconds)

        def later() -> str:
            """Added later."""
            return "late"

        mcp.add_tool(later)
        if session is not None:
            await session.send_tool_list_changed()
        else:
            await ctx.notify_tools_changed()

    asyncio.get_running_loop().create_task(change())
    return "soon"


@mcp.tool()
def whoami(ctx: Context) -> str:
    """The Authorization header the request came with."""
    return (ctx.headers or {}).get("authorization", "(none)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        mcp.run("streamable-http", port=int(sys.argv[2]))
    else:
        mcp.run()
