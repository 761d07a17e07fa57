"""The agent: ``reply()`` and ``reply_stream()`` running the reason-act loop on any model."""

from ..errors import UsageLimitExceeded
from ..formatters import ServerTool
from ._agent import STRUCTURED_TOOL, Agent, AgentError
from ._limits import UsageLimits
from ._tools import Tool, ToolArgumentsError, tool

__all__ = ["Agent", "AgentError", "Tool", "tool", "ToolArgumentsError", "STRUCTURED_TOOL", "UsageLimits", "UsageLimitExceeded", "ServerTool"]
