"""Small helpers shared by the tests."""

from __future__ import annotations

from typing import Any

from modelwire import event as E
from modelwire.message import AssistantMsg, Msg


class Reply:
    """Build the events of one reply without repeating ``reply_id`` everywhere."""

    def __init__(self, reply_id: str = "reply-1", session_id: str = "s-1", name: str = "agent") -> None:
        self.reply_id = reply_id
        self.session_id = session_id
        self.name = name
        self.events: list[E.EventBase] = []

    def add(self, cls: type, **fields: Any) -> "Reply":
        if cls is not E.CustomEvent:
            fields.setdefault("reply_id", self.reply_id)
        self.events.append(cls(**fields))
        return self

    def start(self) -> "Reply":
        return self.add(E.ReplyStartEvent, session_id=self.session_id, name=self.name)

    def end(self, **fields: Any) -> "Reply":
        return self.add(E.ReplyEndEvent, session_id=self.session_id, **fields)

    def call(self, model: str = "m") -> "Reply":
        return self.add(E.ModelCallStartEvent, model_name=model)

    def call_end(self, i: int = 1, o: int = 1, **fields: Any) -> "Reply":
        return self.add(E.ModelCallEndEvent, input_tokens=i, output_tokens=o, **fields)

    def text(self, block_id: str, *pieces: str, **end: Any) -> "Reply":
        self.add(E.TextBlockStartEvent, block_id=block_id)
        for p in pieces:
            self.add(E.TextBlockDeltaEvent, block_id=block_id, delta=p)
        return self.add(E.TextBlockEndEvent, block_id=block_id, **end)

    def thinking(self, block_id: str, *pieces: str, extras: dict | None = None) -> "Reply":
        self.add(E.ThinkingBlockStartEvent, block_id=block_id)
        for p in pieces:
            self.add(E.ThinkingBlockDeltaEvent, block_id=block_id, delta=p)
        return self.add(E.ThinkingBlockEndEvent, block_id=block_id, extras=extras)

    def tool_call(self, call_id: str, name: str, *pieces: str) -> "Reply":
        self.add(E.ToolCallStartEvent, tool_call_id=call_id, tool_call_name=name)
        for p in pieces:
            self.add(E.ToolCallDeltaEvent, tool_call_id=call_id, delta=p)
        return self.add(E.ToolCallEndEvent, tool_call_id=call_id)

    def tool_result(self, call_id: str, name: str, *pieces: str, state: str = "success") -> "Reply":
        self.add(E.ToolResultStartEvent, tool_call_id=call_id, tool_call_name=name)
        for p in pieces:
            self.add(E.ToolResultTextDeltaEvent, tool_call_id=call_id, delta=p)
        return self.add(E.ToolResultEndEvent, tool_call_id=call_id, state=state)


def fold(events: list[E.EventBase], reply_id: str | None = None, created_at: str = "2026-01-01T00:00:00") -> Msg:
    """Fold a reply's events into a fresh assistant message, as a consumer would."""
    start = events[0]
    rid = reply_id or start.reply_id
    msg = AssistantMsg(getattr(start, "name", "agent"), [], id=rid, created_at=created_at)
    for ev in events:
        msg.append_event(ev)
    return msg
