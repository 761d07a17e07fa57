"""Messages and content blocks: the data an agent keeps (pure data, no I/O)."""

from typing import TYPE_CHECKING, Any

from ._blocks import (
    BLOCK_TYPES,
    Base64Source,
    ContentBlock,
    ContentBlockTypes,
    DataBlock,
    HintBlock,
    PermissionRule,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolCallState,
    ToolResultBlock,
    ToolResultState,
    URLSource,
    normalize_base64,
    normalize_media_type,
    validate_base64,
    validate_media_type,
)
from .._record import Record, extras_of, fields_of
from ._msg import (
    AssistantMsg,
    BlockList,
    ErrorInfo,
    ErrorType,
    Msg,
    MsgInput,
    ReplyFinishedReason,
    SystemMsg,
    Usage,
    UserMsg,
    as_messages,
)

__all__ = [
    "Record",
    "extras_of",
    "fields_of",
    "Msg",
    "UserMsg",
    "AssistantMsg",
    "SystemMsg",
    "Usage",
    "ErrorInfo",
    "ErrorType",
    "ReplyFinishedReason",
    "BlockList",
    "MsgInput",
    "as_messages",
    "TextBlock",
    "ThinkingBlock",
    "DataBlock",
    "HintBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "Base64Source",
    "URLSource",
    "ToolCallState",
    "ToolResultState",
    "PermissionRule",
    "ContentBlock",
    "ContentBlockTypes",
    "BLOCK_TYPES",
    "validate_base64",
    "normalize_base64",
    "normalize_media_type",
    "Origin",
    "origin",
    "provenance",
    "BINDINGS",
    "validate_media_type",
    "from_agentscope1",
    "from_agentscope1_history",
    "to_agentscope1",
    "to_agentscope1_memory",
]

if TYPE_CHECKING:  # pragma: no cover - loaded on first use, below
    from ._provenance import BINDINGS as BINDINGS, Origin as Origin, origin as origin, provenance as provenance
    from ._agentscope1 import (
        from_agentscope1 as from_agentscope1,
        from_agentscope1_history as from_agentscope1_history,
        to_agentscope1 as to_agentscope1,
        to_agentscope1_memory as to_agentscope1_memory,
    )

_AGENTSCOPE1 = ("from_agentscope1", "from_agentscope1_history", "to_agentscope1", "to_agentscope1_memory")


def __getattr__(name: str) -> Any:
    # Provenance is for formatters and adapters: a program that only makes messages does
    # not load it (its named tuple is the one class here that Python compiles code for).
    if name in ("Origin", "origin", "provenance", "BINDINGS"):
        from . import _provenance

        value = globals()[name] = getattr(_provenance, name)  # kept: asked once, as modelwire's own lazy names
        return value
    if name in _AGENTSCOPE1:  # AgentScope 1.x JSON: loaded by the programs that read or write it
        from . import _agentscope1

        value = globals()[name] = getattr(_agentscope1, name)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
