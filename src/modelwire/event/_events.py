"""The 28 event types an agent streams while it builds one reply.

Field names, ``type`` strings and enum values follow AgentScope 2.x. modelwire's
additions are new optional fields, so AgentScope loads modelwire's JSON (it ignores
fields it does not know) and modelwire loads AgentScope's:

- ``REPLY_END``: ``structured_output`` (folded into ``Msg.structured_output``);
- ``MODEL_CALL_END``: ``reasoning_tokens``, ``stop_reason`` (normalized, see
  :class:`StopReason`) and ``provider_stop_reason`` (the provider's own word);
- ``TEXT_BLOCK_END``, ``THINKING_BLOCK_END``, ``DATA_BLOCK_END``, ``TOOL_CALL_END``:
  ``extras``, provider data that belongs on the block (a thinking ``signature``,
  ``redacted_thinking_data``, a Responses ``reasoning_item_id``, text ``citations``
  ...). Folding the END event sets each key on the block.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias, Union

from .._ids import new_id, now_iso
from .._record import PlainStrEnum, Record, field
from ..message import (
    DataBlock,
    PermissionRule,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultState,
)
from ..message import ErrorInfo, ReplyFinishedReason
from ..message._blocks import ToolResultStateValue, loose_base64, loose_media_type
from ..message._types import ReplyFinishedReasonValue

__all__ = [
    "EventType",
    "StopReason",
    "ReplyEndReason",
    "ReplyFinishedReason",
    "FinishedReason",
    "EventBase",
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
    "AgentEvent",
    "EVENT_CLASSES",
]


class ReplyEndReason(PlainStrEnum):
    """Why a reply ended, as AgentScope's ``event`` module names it (``ReplyFinishedReason``
    adds ``error``; both are importable from here, as from AgentScope's)."""

    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    EXCEED_MAX_ITERS = "exceed_max_iters"


class FinishedReason(PlainStrEnum):
    """How one model call ended (``ModelCallEndEvent.finished_reason``; AgentScope keeps this
    enum in its ``model`` module). Why the model stopped is :class:`StopReason`."""

    INTERRUPTED = "interrupted"
    COMPLETED = "completed"


class EventType(PlainStrEnum):
    """Every event's ``type``. An event's ``type`` is one of these members, so it equals its
    string (``ev.type == "TEXT_BLOCK_DELTA"``), has a ``.value`` and writes as the string."""

    REPLY_START = "REPLY_START"
    REPLY_END = "REPLY_END"
    MODEL_CALL_START = "MODEL_CALL_START"
    MODEL_CALL_END = "MODEL_CALL_END"
    TEXT_BLOCK_START = "TEXT_BLOCK_START"
    TEXT_BLOCK_DELTA = "TEXT_BLOCK_DELTA"
    TEXT_BLOCK_END = "TEXT_BLOCK_END"
    DATA_BLOCK_START = "DATA_BLOCK_START"
    DATA_BLOCK_DELTA = "DATA_BLOCK_DELTA"
    DATA_BLOCK_END = "DATA_BLOCK_END"
    THINKING_BLOCK_START = "THINKING_BLOCK_START"
    THINKING_BLOCK_DELTA = "THINKING_BLOCK_DELTA"
    THINKING_BLOCK_END = "THINKING_BLOCK_END"
    HINT_BLOCK = "HINT_BLOCK"
    TOOL_CALL_START = "TOOL_CALL_START"
    TOOL_CALL_DELTA = "TOOL_CALL_DELTA"
    TOOL_CALL_END = "TOOL_CALL_END"
    TOOL_RESULT_START = "TOOL_RESULT_START"
    TOOL_RESULT_TEXT_DELTA = "TOOL_RESULT_TEXT_DELTA"
    TOOL_RESULT_DATA_DELTA = "TOOL_RESULT_DATA_DELTA"
    TOOL_RESULT_END = "TOOL_RESULT_END"
    EXCEED_MAX_ITERS = "EXCEED_MAX_ITERS"
    REQUIRE_USER_CONFIRM = "REQUIRE_USER_CONFIRM"
    REQUIRE_EXTERNAL_EXECUTION = "REQUIRE_EXTERNAL_EXECUTION"
    USER_CONFIRM_RESULT = "USER_CONFIRM_RESULT"
    USER_INTERRUPT = "USER_INTERRUPT"
    EXTERNAL_EXECUTION_RESULT = "EXTERNAL_EXECUTION_RESULT"
    CUSTOM = "CUSTOM"


class StopReason(PlainStrEnum):
    """Why one model call stopped, normalized across providers.

    The provider's own word travels beside it in ``provider_stop_reason``.
    """

    END_TURN = "end_turn"  # anthropic end_turn, openai stop, responses completed
    MAX_TOKENS = "max_tokens"  # anthropic max_tokens, openai length, responses max_output_tokens
    STOP_SEQUENCE = "stop_sequence"
    TOOL_USE = "tool_use"  # anthropic tool_use, openai tool_calls / function_call
    PAUSE_TURN = "pause_turn"  # anthropic: a long server-tool turn paused; send it back to continue
    COMPACTION = "compaction"  # the provider compacted the conversation and paused; send it back to continue
    REFUSAL = "refusal"
    CONTENT_FILTER = "content_filter"
    ERROR = "error"
    INTERRUPTED = "interrupted"
    OTHER = "other"


StopReasonValue = Literal[
    "end_turn",
    "max_tokens",
    "stop_sequence",
    "tool_use",
    "pause_turn",
    "compaction",
    "refusal",
    "content_filter",
    "error",
    "interrupted",
    "other",
]


class EventBase(Record):
    """What every event has: an ``id`` (made on its first read), ``created_at`` and free ``metadata``."""

    id: str = field(default_factory=new_id, lazy=True)  # made on its first read when not given
    created_at: str = field(default_factory=now_iso)
    metadata: dict[str, Any] = field(default_factory=dict, lazy=True)


class ReplyStartEvent(EventBase):
    """A reply began: its ``reply_id`` is the id of the assistant message the events fold into."""

    type: Literal["REPLY_START"] = "REPLY_START"
    session_id: str
    reply_id: str
    name: str
    role: Literal["user", "assistant", "system"] = "assistant"


class ReplyEndEvent(EventBase):
    """A reply ended: folding sets the message's ``finished_at``, ``finished_reason`` and ``error``."""

    type: Literal["REPLY_END"] = "REPLY_END"
    session_id: str
    reply_id: str
    finished_reason: ReplyFinishedReason | ReplyFinishedReasonValue = ReplyFinishedReason.COMPLETED
    error: ErrorInfo | None = None
    structured_output: dict[str, Any] | None = None
    """modelwire addition: the validated structured output, when one was asked for."""


class ModelCallStartEvent(EventBase):
    """One call of the model began (a reply makes one per turn of its loop)."""

    type: Literal["MODEL_CALL_START"] = "MODEL_CALL_START"
    reply_id: str
    model_name: str


class ModelCallEndEvent(EventBase):
    """One call of the model ended: its token counts (added to the message's usage) and why it stopped."""

    type: Literal["MODEL_CALL_END"] = "MODEL_CALL_END"
    reply_id: str
    input_tokens: int
    output_tokens: int
    cache_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    finished_reason: FinishedReason | Literal["completed", "interrupted"] = FinishedReason.COMPLETED
    reasoning_tokens: int = 0
    stop_reason: StopReason | StopReasonValue | None = None
    provider_stop_reason: str | None = None
    cost: dict[str, Any] | None = None
    """modelwire addition: the price of this call (see ``modelwire.cost``), or why there is none."""


class _BlockEvent(EventBase):
    reply_id: str
    block_id: str


class TextBlockStartEvent(_BlockEvent):
    """A text block began: folding appends an empty text block with ``block_id``."""

    type: Literal["TEXT_BLOCK_START"] = "TEXT_BLOCK_START"


class TextBlockDeltaEvent(_BlockEvent):
    """A piece of a text block's text: folding appends ``delta``."""

    type: Literal["TEXT_BLOCK_DELTA"] = "TEXT_BLOCK_DELTA"
    delta: str


class TextBlockEndEvent(_BlockEvent):
    """A text block is complete: folding sets its ``finished_at`` and its ``extras``."""

    type: Literal["TEXT_BLOCK_END"] = "TEXT_BLOCK_END"
    text: str | None = None
    """When set, replaces the text gathered from the deltas."""
    extras: dict[str, Any] | None = None


class ThinkingBlockStartEvent(_BlockEvent):
    """A thinking block began: folding appends an empty thinking block with ``block_id``."""

    type: Literal["THINKING_BLOCK_START"] = "THINKING_BLOCK_START"


class ThinkingBlockDeltaEvent(_BlockEvent):
    """A piece of the model's thinking: folding appends ``delta``."""

    type: Literal["THINKING_BLOCK_DELTA"] = "THINKING_BLOCK_DELTA"
    delta: str


class ThinkingBlockEndEvent(_BlockEvent):
    """A thinking block is complete: folding sets its ``finished_at`` and its ``extras`` (a signature ...)."""

    type: Literal["THINKING_BLOCK_END"] = "THINKING_BLOCK_END"
    extras: dict[str, Any] | None = None


def _one_source(data: str | None, url: str | None) -> None:
    if (data is None) == (url is None):
        raise ValueError("Exactly one of `data` or `url` must be provided.")  # AgentScope's words


def _media(value: str) -> str:
    return loose_media_type(
        value
    )  # as a message takes it: "jpg" is image/jpeg; any string kept, as AgentScope keeps it


def _data(value: str | None) -> str | None:
    """Base64 data of an event, taken as a message takes it (unpadded, URL-safe, with line
    breaks: made standard; any other string kept, and refused where it would be sent)."""
    return None if value is None else loose_base64(value)


class DataBlockStartEvent(_BlockEvent):
    """A data block (an image, audio ...) began, with its media type."""

    type: Literal["DATA_BLOCK_START"] = "DATA_BLOCK_START"
    media_type: str
    name: str | None = None

    def __post_init__(self) -> None:
        self.media_type = _media(self.media_type)


class DataBlockDeltaEvent(_BlockEvent):
    """A piece of a data block: base64 ``data`` (each piece padded on its own) or a whole ``url``."""

    type: Literal["DATA_BLOCK_DELTA"] = "DATA_BLOCK_DELTA"
    media_type: str
    data: str | None = None
    """A piece of base64, itself validly padded base64."""
    url: str | None = None

    def __post_init__(self) -> None:
        self.media_type = _media(self.media_type)
        self.data = _data(self.data)
        _one_source(self.data, self.url)


class DataBlockEndEvent(_BlockEvent):
    """A data block is complete: folding sets its ``finished_at`` and its ``extras``."""

    type: Literal["DATA_BLOCK_END"] = "DATA_BLOCK_END"
    extras: dict[str, Any] | None = None


_HintItem = Union[TextBlock, DataBlock]


class HintBlockEvent(_BlockEvent):
    """A hint for the model (text, or text and data), appended whole as a hint block."""

    type: Literal["HINT_BLOCK"] = "HINT_BLOCK"
    source: str | None = None
    hint: str | list[_HintItem]


class _ToolEvent(EventBase):
    reply_id: str
    tool_call_id: str


class ToolCallStartEvent(_ToolEvent):
    """The model began a tool call: folding appends a call with ``tool_call_id`` and ``tool_call_name``."""

    type: Literal["TOOL_CALL_START"] = "TOOL_CALL_START"
    tool_call_name: str


class ToolCallDeltaEvent(_ToolEvent):
    """A piece of a tool call's JSON arguments: folding appends ``delta`` to its ``input``."""

    type: Literal["TOOL_CALL_DELTA"] = "TOOL_CALL_DELTA"
    delta: str


class ToolCallEndEvent(_ToolEvent):
    """A tool call's arguments are complete: folding sets its ``finished_at`` and its ``extras``."""

    type: Literal["TOOL_CALL_END"] = "TOOL_CALL_END"
    extras: dict[str, Any] | None = None


class ToolResultStartEvent(_ToolEvent):
    """A tool began answering a call: folding appends a running result with the call's id."""

    type: Literal["TOOL_RESULT_START"] = "TOOL_RESULT_START"
    tool_call_name: str


class ToolResultTextDeltaEvent(_ToolEvent):
    """A piece of a tool result's text: folding appends it to the result's last text part."""

    type: Literal["TOOL_RESULT_TEXT_DELTA"] = "TOOL_RESULT_TEXT_DELTA"
    delta: str


class ToolResultDataDeltaEvent(_ToolEvent):
    """A data part of a tool result (an image a tool made ...): base64 ``data`` or a ``url``."""

    type: Literal["TOOL_RESULT_DATA_DELTA"] = "TOOL_RESULT_DATA_DELTA"
    block_id: str = field(default_factory=new_id)
    media_type: str
    data: str | None = None
    url: str | None = None

    def __post_init__(self) -> None:
        self.media_type = _media(self.media_type)
        self.data = _data(self.data)
        _one_source(self.data, self.url)


class ToolResultEndEvent(_ToolEvent):
    """``metadata`` becomes the tool result block's ``metadata`` when folded."""

    type: Literal["TOOL_RESULT_END"] = "TOOL_RESULT_END"
    state: ToolResultState | ToolResultStateValue


class ExceedMaxItersEvent(EventBase):
    """The agent reached ``max_iters`` tool rounds; the reply ends with ``exceed_max_iters``."""

    type: Literal["EXCEED_MAX_ITERS"] = "EXCEED_MAX_ITERS"
    reply_id: str
    name: str


class RequireUserConfirmEvent(EventBase):
    """The reply waits for the user to allow or deny these calls: folding moves them to ``asking``."""

    type: Literal["REQUIRE_USER_CONFIRM"] = "REQUIRE_USER_CONFIRM"
    reply_id: str
    tool_calls: list[ToolCallBlock]


class RequireExternalExecutionEvent(EventBase):
    """The reply waits for these calls to run elsewhere: folding moves them to ``submitted``."""

    type: Literal["REQUIRE_EXTERNAL_EXECUTION"] = "REQUIRE_EXTERNAL_EXECUTION"
    reply_id: str
    tool_calls: list[ToolCallBlock]


class ConfirmResult(Record):
    """The user's answer for one call: ``confirmed``, and permission ``rules`` to remember."""

    confirmed: bool
    tool_call: ToolCallBlock
    rules: list[PermissionRule] | None = None


class UserConfirmResultEvent(EventBase):
    """The user answered: folding moves each asking call to ``allowed`` or ``finished``."""

    type: Literal["USER_CONFIRM_RESULT"] = "USER_CONFIRM_RESULT"
    reply_id: str
    confirm_results: list[ConfirmResult]


class UserInterruptEvent(EventBase):
    """The user interrupted the reply (it ends with ``finished_reason='interrupted'``)."""

    type: Literal["USER_INTERRUPT"] = "USER_INTERRUPT"
    reply_id: str


class ExternalExecutionResultEvent(EventBase):
    """Results of calls run elsewhere: folding appends them (one per call, the first wins)."""

    type: Literal["EXTERNAL_EXECUTION_RESULT"] = "EXTERNAL_EXECUTION_RESULT"
    reply_id: str
    execution_results: list[ToolResultBlock]


class CustomEvent(EventBase):
    """An application signal (``name`` + JSON ``value``); carries no ``reply_id``."""

    type: Literal["CUSTOM"] = "CUSTOM"
    name: str
    value: dict[str, Any] = field(default_factory=dict)


AgentEvent: TypeAlias = Union[
    ReplyStartEvent,
    ReplyEndEvent,
    ExceedMaxItersEvent,
    RequireUserConfirmEvent,
    RequireExternalExecutionEvent,
    ModelCallStartEvent,
    ModelCallEndEvent,
    TextBlockStartEvent,
    TextBlockDeltaEvent,
    TextBlockEndEvent,
    DataBlockStartEvent,
    DataBlockDeltaEvent,
    DataBlockEndEvent,
    ThinkingBlockStartEvent,
    ThinkingBlockDeltaEvent,
    ThinkingBlockEndEvent,
    HintBlockEvent,
    ToolCallStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolResultStartEvent,
    ToolResultTextDeltaEvent,
    ToolResultDataDeltaEvent,
    ToolResultEndEvent,
    UserConfirmResultEvent,
    UserInterruptEvent,
    ExternalExecutionResultEvent,
    CustomEvent,
]

EVENT_CLASSES: dict[str, type[EventBase]] = {
    cls.__record_tag__: cls
    for cls in AgentEvent.__args__  # type: ignore[attr-defined]
}

# modelwire's additions to AgentScope's events (see Record.model_dump and the module docstring).
ReplyEndEvent.__record_added__ = frozenset({"structured_output"})
ModelCallEndEvent.__record_added__ = frozenset({"cost", "provider_stop_reason", "reasoning_tokens", "stop_reason"})
for _end in (TextBlockEndEvent, ThinkingBlockEndEvent, DataBlockEndEvent, ToolCallEndEvent):
    _end.__record_added__ = frozenset({"extras"})
del _end


def _typed_tags() -> None:
    """Each class's ``type`` becomes its EventType member (equal to the tag string that
    ``to_dict`` writes), so ``ev.type.value`` works as in AgentScope."""
    for tag, cls in EVENT_CLASSES.items():
        type.__setattr__(cls, "type", EventType(tag))


_typed_tags()
