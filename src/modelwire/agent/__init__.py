"""The agent: ``reply()`` and ``reply_stream()`` running the reason-act loop on any model."""

from ..formatters import ServerTool
from ._agent import Agent, ResumeEvent
from ._limits import UsageLimits
from ._mcp import MCPServer
from ._output import OutputPartial, PartialOutput
from ._reply import STRUCTURED_TOOL
from ._tools import Tool, Toolset, tool

__all__ = [
    "Agent",
    "ResumeEvent",
    "Tool",
    "tool",
    "Toolset",
    "STRUCTURED_TOOL",
    "UsageLimits",
    "ServerTool",
    "MCPServer",
    "PartialOutput",
    "OutputPartial",
]
