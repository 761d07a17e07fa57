"""10,000 random event streams fold to the same message in modelwire and in AgentScope 2.0.11.

Each stream is what an agent could send for one reply: model calls with text, thinking,
data (base64 in independently padded pieces, or a URL), hint and tool-call blocks; tool
results made of text pieces (empty ones too) and data; confirmations and external
execution; and noise AgentScope skips with a warning (another reply's events, deltas for
blocks that do not exist). Both folds get the same events (AgentScope's parsed from
modelwire's JSON); their messages must dump to the same JSON, apart from the times and
ids AgentScope makes itself when it folds (it stamps a block with the clock, and gives a
tool result's text part a random id).
"""

from __future__ import annotations

import base64
import json
import logging
import random
import warnings
from typing import Any

import pytest

from modelwire import event as E
from modelwire.message import AssistantMsg, ToolCallBlock, ToolResultBlock

pytest.importorskip("agentscope", reason="the dev extra installs agentscope==2.0.11")
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from agentscope import event as as_event  # noqa: E402
    from agentscope import message as as_message  # noqa: E402

# AgentScope marks its EXCEED_MAX_ITERS event deprecated (REPLY_END's finished_reason says it); it still folds it.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

STREAMS = int(__import__("os").environ.get("PARITY_STREAMS", 10_000))
MEDIA = ["image/png", "image/jpeg", "audio/wav", "application/pdf"]
ALPHABET = 'ab \n"{}漢🙂é'


class _Stream:
    """One reply's events, made from a seeded random source."""

    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd
        self.events: list[E.EventBase] = []
        self.serial = 0
        self.calls: list[str] = []

    def add(self, cls: type, **fields: Any) -> None:
        fields.setdefault("reply_id", "r")
        self.events.append(cls(**fields))
        if self.rnd.random() < 0.03:  # noise: another reply's copy, or a block that is not there
            noise = dict(fields, reply_id="other") if self.rnd.random() < 0.5 else None
            if noise is not None:
                self.events.append(cls(**noise))
            else:
                self.events.append(E.TextBlockDeltaEvent(reply_id="r", block_id="ghost", delta="x"))

    def text(self) -> str:
        return "".join(self.rnd.choice(ALPHABET) for _ in range(self.rnd.randint(0, 8)))

    def new_id(self, kind: str) -> str:
        self.serial += 1
        return f"{kind}-{self.serial}"

    def pieces(self) -> list[str]:
        return [self.text() for _ in range(self.rnd.randint(0, 4))]

    def streamed(self, kind: str) -> None:
        block = self.new_id(kind)
        start, delta, end = {
            "text": (E.TextBlockStartEvent, E.TextBlockDeltaEvent, E.TextBlockEndEvent),
            "thinking": (E.ThinkingBlockStartEvent, E.ThinkingBlockDeltaEvent, E.ThinkingBlockEndEvent),
        }[kind]
        self.add(start, block_id=block)
        for piece in self.pieces():
            self.add(delta, block_id=block, delta=piece)
        self.add(end, block_id=block)

    def data(self) -> None:
        block, media = self.new_id("data"), self.rnd.choice(MEDIA)
        self.add(E.DataBlockStartEvent, block_id=block, media_type=media)
        if self.rnd.random() < 0.2:
            self.add(E.DataBlockDeltaEvent, block_id=block, media_type=media, url=f"https://example.com/{block}")
        else:
            for _ in range(self.rnd.randint(0, 3)):
                piece = base64.b64encode(self.rnd.randbytes(self.rnd.randint(1, 7))).decode()
                said = media if self.rnd.random() < 0.7 else self.rnd.choice(MEDIA)  # a delta may name another type
                self.add(E.DataBlockDeltaEvent, block_id=block, media_type=said, data=piece)
        self.add(E.DataBlockEndEvent, block_id=block)

    def tool_call(self) -> None:
        call = self.new_id("call")
        self.add(E.ToolCallStartEvent, tool_call_id=call, tool_call_name="f")
        for piece in self.pieces():
            self.add(E.ToolCallDeltaEvent, tool_call_id=call, delta=piece)
        self.add(E.ToolCallEndEvent, tool_call_id=call)
        self.calls.append(call)

    def model_call(self) -> None:
        self.add(E.ModelCallStartEvent, model_name="m")
        for _ in range(self.rnd.randint(0, 4)):
            kind = self.rnd.choice(["text", "thinking", "data", "hint", "tool_call"])
            if kind in ("text", "thinking"):
                self.streamed(kind)
            elif kind == "data":
                self.data()
            elif kind == "hint":
                self.add(E.HintBlockEvent, block_id=self.new_id("hint"), hint=self.text() or "h", source="system")
            else:
                self.tool_call()
        self.add(
            E.ModelCallEndEvent,
            input_tokens=self.rnd.randint(0, 99),
            output_tokens=self.rnd.randint(0, 99),
            cache_input_tokens=self.rnd.randint(0, 9),
        )

    def tool_result(self, call: str) -> None:
        self.add(E.ToolResultStartEvent, tool_call_id=call, tool_call_name="f")
        for _ in range(self.rnd.randint(0, 4)):
            if self.rnd.random() < 0.7:
                self.add(
                    E.ToolResultTextDeltaEvent, tool_call_id=call, delta=self.text() if self.rnd.random() < 0.7 else ""
                )
            elif self.rnd.random() < 0.5:
                data = base64.b64encode(self.rnd.randbytes(self.rnd.randint(1, 9))).decode()
                self.add(
                    E.ToolResultDataDeltaEvent,
                    tool_call_id=call,
                    block_id=self.new_id("out"),
                    media_type=self.rnd.choice(MEDIA),
                    data=data,
                )
            else:
                self.add(
                    E.ToolResultDataDeltaEvent,
                    tool_call_id=call,
                    block_id=self.new_id("out"),
                    media_type="image/png",
                    url="https://example.com/o.png",
                )
        self.add(E.ToolResultEndEvent, tool_call_id=call, state=self.rnd.choice(["success", "error", "denied"]))

    def after_calls(self) -> None:
        for call in self.calls:
            roll = self.rnd.random()
            block = ToolCallBlock(id=call, name="f", input="{}")
            if roll < 0.2:
                self.add(E.RequireUserConfirmEvent, tool_calls=[block])
                confirmed = self.rnd.random() < 0.5
                self.add(
                    E.UserConfirmResultEvent, confirm_results=[E.ConfirmResult(confirmed=confirmed, tool_call=block)]
                )
                if confirmed:
                    self.tool_result(call)
            elif roll < 0.35:
                self.add(E.RequireExternalExecutionEvent, tool_calls=[block])
                result = ToolResultBlock(id=call, name="f", output=self.text(), state="success")
                self.add(E.ExternalExecutionResultEvent, execution_results=[result])
            elif roll < 0.9:
                self.tool_result(call)
        self.calls = []


def make_stream(seed: int) -> list[E.EventBase]:
    stream = _Stream(random.Random(seed))
    stream.add(E.ReplyStartEvent, session_id="s", name="agent")
    for _ in range(stream.rnd.randint(1, 3)):
        stream.model_call()
        stream.after_calls()
    if stream.rnd.random() < 0.1:
        stream.add(E.UserInterruptEvent)
    if stream.rnd.random() < 0.1:
        stream.add(E.ExceedMaxItersEvent, name="agent")
    reason = stream.rnd.choice(["completed", "interrupted", "exceed_max_iters", "error"])
    stream.add(E.ReplyEndEvent, session_id="s", finished_reason=reason)
    return stream.events


def _comparable(value: Any, in_result: bool = False) -> Any:
    """A dump without what AgentScope makes when it folds: block times, and the ids of a tool
    result's text parts."""
    if isinstance(value, dict):
        skip = {"created_at", "finished_at"} | ({"id"} if in_result and value.get("type") == "text" else set())
        return {
            k: _comparable(v, in_result or value.get("type") == "tool_result")
            for k, v in value.items()
            if k not in skip
        }
    if isinstance(value, list):
        return [_comparable(v, in_result) for v in value]
    return value


def test_random_streams_fold_alike_in_both_libraries():
    from pydantic import TypeAdapter

    parse = TypeAdapter(as_event.AgentEvent).validate_python
    logging.getLogger("modelwire.fold").setLevel(logging.ERROR)  # the noise is skipped with warnings
    logging.getLogger("agentscope").setLevel(logging.ERROR)
    differ, kinds = [], set()
    for seed in range(STREAMS):
        events = make_stream(seed)
        ours = AssistantMsg("agent", [], id="r", created_at="2026-01-01T00:00:00")
        theirs = as_message.Msg.model_validate(json.loads(ours.to_json()))
        for event in events:
            ours.append_event(event)
            theirs.append_event(parse(json.loads(E.event_to_json(event))))
            kinds.add(event.type)
        if _comparable(ours.model_dump()) != _comparable(theirs.model_dump(mode="json")):
            differ.append(seed)
    assert set(E.EventType) - kinds == {
        "CUSTOM"
    }  # every type but CUSTOM, which carries no reply_id (AgentScope's fold reads one)
    assert differ == [], f"{len(differ)} of {STREAMS} streams fold differently, first seeds {differ[:5]}"
