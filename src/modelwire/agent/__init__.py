"""The agent: ``reply()`` and ``reply_stream()`` running the reason-act loop on any model."""

from ..errors import ToolError, ToolServerError, UsageLimitExceeded
from ..formatters import ServerTool
from ._agent import STRUCTURED_TOOL, Agent, AgentError, ResumeEvent
from ._limits import UsageLimits
from ._mcp import MCPServer
from ._tools import Tool, ToolArgumentsError, Toolset, tool

__all__ = [
    "Agent",
    "ResumeEvent",
    "AgentError",
    "Tool",
    "tool",
    "Toolset",
    "ToolArgumentsError",
    "ToolError",
    "ToolServerError",
    "STRUCTURED_TOOL",
    "UsageLimits",
    "UsageLimitExceeded",
    "ServerTool",
    "MCPServer",
]
