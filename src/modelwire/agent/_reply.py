"""What one reply of an agent carries while it runs: its state, what its events have opened
(for an interrupt to close), its tool calls' ids kept distinct, a tool's output as result
events, the error a failed reply ends with; and what the parts of ``Agent`` share."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from .. import event as E
from .._ids import id_again
from ..errors import (
    ConfigError,
    ModelwireError,
    ProviderError,
    StreamProtocolError,
    ToolServerError,
    UsageLimitExceeded,
)
from ..formatters import ServerTool
from ..message import DataBlock, Msg, Record, TextBlock
from ._tools import Tool, Toolset

STRUCTURED_TOOL = "final_answer"

# What ``_act`` yields when the reply parks (its calls wait for the user or for results).
_PARK = object()


@dataclass
class _ReplyState:
    reply: Msg
    iters: int = 0
    structured: Any = None  # a pydantic model class
    native_structured: bool = False
    forced_structured: bool = False
    refused: bool = False  # the last model call stopped with a refusal (or a content filter)
    paused: bool = False  # the last model call paused its turn (a long server-tool turn, a compaction) to go on
    span: Any = None  # the reply's trace span, while a stream of it runs
    failures: list[Exception] = field(default_factory=list)  # what ended this stream of the reply with an error
    output: Any = None  # the validated instance of ``structured``, once the reply ended with one


@dataclass
class _Open:
    """What the events passed on so far have opened and not closed (for interrupts)."""

    model_call: bool = False
    blocks: dict[str, str] = field(default_factory=dict)  # block id -> kind
    calls: set[str] = field(default_factory=set)
    results: set[str] = field(default_factory=set)

    def see(self, ev: E.AgentEvent) -> None:
        if ev.type == "MODEL_CALL_START":
            self.model_call = True
        elif ev.type == "MODEL_CALL_END":
            self.model_call = False
        elif isinstance(ev, (E.TextBlockStartEvent, E.ThinkingBlockStartEvent, E.DataBlockStartEvent)):
            self.blocks[ev.block_id] = ev.type[: -len("_BLOCK_START")]
        elif isinstance(ev, (E.TextBlockEndEvent, E.ThinkingBlockEndEvent, E.DataBlockEndEvent)):
            self.blocks.pop(ev.block_id, None)
        elif ev.type == "TOOL_CALL_START":
            self.calls.add(ev.tool_call_id)
        elif ev.type == "TOOL_CALL_END":
            self.calls.discard(ev.tool_call_id)
        elif ev.type == "TOOL_RESULT_START":
            self.results.add(ev.tool_call_id)
        elif ev.type == "TOOL_RESULT_END":
            self.results.discard(ev.tool_call_id)


_TOOL_EVENTS = frozenset(
    {
        "TOOL_CALL_START",
        "TOOL_CALL_DELTA",
        "TOOL_CALL_END",
        "TOOL_RESULT_START",
        "TOOL_RESULT_TEXT_DELTA",
        "TOOL_RESULT_DATA_DELTA",
        "TOOL_RESULT_END",
    }
)


class _CallIds:
    """The tool-call ids of one model call's events, kept distinct across the reply.

    Providers mint ids per response (``call_0`` on every call, one constant id): a call of
    this model call whose id an earlier call of the reply has streams with an id of its own,
    made from the provider's (``call_0_2``), and so do its deltas, its end and a result the
    provider names it by. A result of a provider-run tool must answer a call of this reply."""

    __slots__ = ("calls", "renamed")

    def __init__(self, reply: Msg) -> None:
        # The reply's calls so far, and this model call's as they start (with the ids given here).
        self.calls = {b.id for b in reply.content if b.type == "tool_call"}
        self.renamed: dict[str, str] = {}

    def see(self, ev: Any) -> Any:
        call_id = ev.tool_call_id
        if ev.type == "TOOL_CALL_START":
            if call_id not in self.calls:
                self.calls.add(call_id)
                return ev
            new_id = self.renamed[call_id] = id_again(call_id, self.calls)
            self.calls.add(new_id)
            return ev.replace(tool_call_id=new_id)
        renamed = self.renamed.get(call_id)
        if renamed is not None:
            return ev.replace(tool_call_id=renamed)
        if ev.type == "TOOL_RESULT_START" and call_id not in self.calls:
            raise StreamProtocolError(
                f"the provider sent a result for tool call {call_id!r}, which no call of this reply made"
            )
        return ev


class _Parts:
    """What the parts of an agent (asking the model, acting on its calls, ending a reply) share:
    the attributes ``Agent.__init__`` sets, and the fold of each event into the reply."""

    name: str
    session_id: str
    model: Any
    system_prompt: str | None
    _system: tuple[str, Msg] | None
    tools: dict[str, Tool]
    server_tools: list[ServerTool]
    toolsets: list[Toolset]
    _active: dict[str, Tool]
    model_options: dict[str, Any]
    limits: Any
    tool_timeout: float | None
    context: list[Msg]
    _states: dict[str, _ReplyState]
    _interrupted: bool
    _task: asyncio.Task[Any] | None
    _outside: bool
    _media_rules: dict[tuple[Any, str], str | None]

    def _emit(self, state: _ReplyState, ev: E.AgentEvent) -> E.AgentEvent:
        state.reply.append_event(ev, strict=True)
        return ev


def _error_info(exc: Exception) -> dict[str, str]:
    """``REPLY_END.error`` for any failure: the SPEC's error type and a message."""
    if isinstance(exc, ProviderError):
        return exc.to_error_info()
    if isinstance(exc, (ConfigError, ToolServerError)):
        return {"type": "setup", "message": str(exc)}
    if isinstance(exc, UsageLimitExceeded):
        return {"type": "rate_limit", "message": str(exc)}  # the reply's own budget, spent
    if isinstance(exc, ModelwireError) and isinstance(exc, ValueError):
        return {"type": "invalid_request", "message": str(exc)}  # a request that cannot be made: FormatError ...
    return {"type": "internal", "message": f"{type(exc).__name__}: {exc}"}


def _schema(model_cls: Any) -> dict[str, Any]:
    schema: dict[str, Any] = model_cls.model_json_schema()
    schema.setdefault("additionalProperties", False)
    return schema


def _output_events(rid: str, call_id: str, value: Any) -> list[E.AgentEvent]:
    """A tool's return value (or one streamed piece) as result events."""
    if value is None:
        return []
    if isinstance(value, str):
        return [E.ToolResultTextDeltaEvent(reply_id=rid, tool_call_id=call_id, delta=value)] if value else []
    if isinstance(value, TextBlock):
        return _output_events(rid, call_id, value.text)
    if isinstance(value, DataBlock):
        src = value.source
        if src.type == "base64":
            return [
                E.ToolResultDataDeltaEvent(
                    reply_id=rid, tool_call_id=call_id, block_id=value.id, media_type=src.media_type, data=src.data
                )
            ]
        return [
            E.ToolResultDataDeltaEvent(
                reply_id=rid, tool_call_id=call_id, block_id=value.id, media_type=src.media_type, url=src.url
            )
        ]
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, TextBlock, DataBlock)) for v in value):
        return [ev for v in value for ev in _output_events(rid, call_id, v)]
    dump = getattr(value, "model_dump_json", None)  # a pydantic model
    if callable(dump):
        return _output_events(rid, call_id, dump())
    if isinstance(value, Record):
        return _output_events(rid, call_id, value.to_json())
    try:
        return _output_events(rid, call_id, json.dumps(value, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return _output_events(rid, call_id, str(value))
