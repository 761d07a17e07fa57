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
]

if TYPE_CHECKING:  # pragma: no cover - loaded on first use, below
    from ._provenance import BINDINGS as BINDINGS, Origin as Origin, origin as origin, provenance as provenance


def __getattr__(name: str) -> Any:
    # Provenance is for formatters and adapters: a program that only makes messages does
    # not load it (its named tuple is the one class here that Python compiles code for).
    if name in ("Origin", "origin", "provenance", "BINDINGS"):
        from . import _provenance

        value = globals()[name] = getattr(_provenance, name)  # kept: asked once, as modelwire's own lazy names
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
