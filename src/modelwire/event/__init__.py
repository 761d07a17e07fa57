"""The event vocabulary an agent streams while it builds a reply (pure data, no I/O)."""

from ._codec import dumps_jsonl, event_from_json, event_to_json, iter_jsonl, loads_jsonl, parse_event, write_jsonl
from ._events import (
    EVENT_CLASSES,
    AgentEvent,
    ConfirmResult,
    CustomEvent,
    DataBlockDeltaEvent,
    DataBlockEndEvent,
    DataBlockStartEvent,
    EventBase,
    EventType,
    ExceedMaxItersEvent,
    ExternalExecutionResultEvent,
    HintBlockEvent,
    ModelCallEndEvent,
    ModelCallStartEvent,
    ReplyEndEvent,
    ReplyEndReason,
    ReplyFinishedReason,
    FinishedReason,
    ReplyStartEvent,
    RequireExternalExecutionEvent,
    RequireUserConfirmEvent,
    StopReason,
    TextBlockDeltaEvent,
    TextBlockEndEvent,
    TextBlockStartEvent,
    ThinkingBlockDeltaEvent,
    ThinkingBlockEndEvent,
    ThinkingBlockStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultDataDeltaEvent,
    ToolResultEndEvent,
    ToolResultStartEvent,
    ToolResultTextDeltaEvent,
    UserConfirmResultEvent,
    UserInterruptEvent,
)
from typing import TYPE_CHECKING, Any

from ._grammar import StreamChecker, check_stream

if TYPE_CHECKING:
    from ._partial import PartialJSON as PartialJSON
    from ._partial_calls import PartialToolCalls as PartialToolCalls
    from ._partial_calls import ToolCallPartial as ToolCallPartial

__all__ = [
    "EventType",
    "StopReason",
    "ReplyEndReason",
    "ReplyFinishedReason",
    "FinishedReason",
    "EventBase",
    "AgentEvent",
    "EVENT_CLASSES",
    "ReplyStartEvent",
    "ReplyEndEvent",
    "ModelCallStartEvent",
    "ModelCallEndEvent",
    "TextBlockStartEvent",
    "TextBlockDeltaEvent",
    "TextBlockEndEvent",
    "ThinkingBlockStartEvent",
    "ThinkingBlockDeltaEvent",
    "ThinkingBlockEndEvent",
    "DataBlockStartEvent",
    "DataBlockDeltaEvent",
    "DataBlockEndEvent",
    "HintBlockEvent",
    "ToolCallStartEvent",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolResultStartEvent",
    "ToolResultTextDeltaEvent",
    "ToolResultDataDeltaEvent",
    "ToolResultEndEvent",
    "RequireUserConfirmEvent",
    "ConfirmResult",
    "UserConfirmResultEvent",
    "RequireExternalExecutionEvent",
    "ExternalExecutionResultEvent",
    "UserInterruptEvent",
    "ExceedMaxItersEvent",
    "CustomEvent",
    "check_stream",
    "StreamChecker",
    "PartialJSON",
    "PartialToolCalls",
    "ToolCallPartial",
    "parse_event",
    "event_to_json",
    "event_from_json",
    "dumps_jsonl",
    "write_jsonl",
    "iter_jsonl",
    "loads_jsonl",
]


def __getattr__(name: str) -> Any:
    # The partial-JSON parser loads the stdlib's JSON scanner: only programs that read
    # arguments as they grow load it (``import modelwire.event`` is on every program's path).
    if name == "PartialJSON":
        from ._partial import PartialJSON

        value: Any = PartialJSON
    elif name in ("PartialToolCalls", "ToolCallPartial"):
        from . import _partial_calls

        value = getattr(_partial_calls, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
