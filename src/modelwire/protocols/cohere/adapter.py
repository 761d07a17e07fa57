"""Cohere's v2 Chat stream (``POST /v2/chat``, ``stream: true``, SSE named by type) -> events.

The events (https://docs.cohere.com/docs/streaming, the official SDK's
``V2ChatStreamResponse``):

- ``message-start`` (the response id) opens the call;
- ``content-start`` / ``content-delta`` / ``content-end``, by ``index``: a ``text`` part, or
  a reasoning model's ``thinking`` part -> a text or a thinking block;
- ``tool-plan-delta``: the plan the model writes before it calls tools -> a thinking block
  marked ``tool_plan`` (sent back to Cohere as the message's ``tool_plan``);
- ``tool-call-start`` (id, name, first arguments) / ``tool-call-delta`` / ``tool-call-end``,
  by ``index`` -> a tool call; a call with no arguments streams ``{}``;
- ``citation-start`` / ``citation-end``: each citation kept, whole, on the text block it
  cites (``extras["citations"]``), or on the call's metadata when no text is open;
- ``message-end``: ``finish_reason`` (``COMPLETE``, ``STOP_SEQUENCE``, ``MAX_TOKENS``,
  ``TOOL_CALL``, ``ERROR``, ``TIMEOUT``) and ``usage`` (``tokens``: what the model read and
  wrote, ``billed_units``, ``cached_tokens``), kept as sent in the call's metadata.

A stream that ends before ``message-end`` is an :class:`~modelwire.errors.IncompleteStreamError`.
"""

from __future__ import annotations

from typing import Any

from ...adapters import OPTIONAL, BaseAdapter, error_object, shape_problem
from ...errors import StreamProtocolError, error_from_body

__all__ = ["CohereAdapter", "STOP_REASONS"]

STOP_REASONS = {
    "COMPLETE": "end_turn",
    "STOP_SEQUENCE": "stop_sequence",
    "MAX_TOKENS": "max_tokens",
    "TOOL_CALL": "tool_use",
    "ERROR": "error",
    "TIMEOUT": "error",
}

_INDEXED: dict[str, tuple[type, ...]] = {"index": (int,)}
_MESSAGE = {"delta": (dict,), "delta.message": (dict,)}  # where every delta's fields are
SHAPES: dict[str, dict[str, tuple[type, ...]]] = {
    "message-start": {"id": (str, OPTIONAL)},
    "content-start": {
        **_INDEXED,
        **_MESSAGE,
        "delta.message.content": (dict,),
        "delta.message.content.type": (str,),
    },
    "content-delta": {**_INDEXED, **_MESSAGE, "delta.message.content": (dict,)},
    "content-end": _INDEXED,
    "tool-plan-delta": {**_MESSAGE, "delta.message.tool_plan": (str,)},
    "tool-call-start": {
        **_INDEXED,
        **_MESSAGE,
        "delta.message.tool_calls": (dict,),
        "delta.message.tool_calls.id": (str,),
        "delta.message.tool_calls.function": (dict,),
        "delta.message.tool_calls.function.name": (str,),
        "delta.message.tool_calls.function.arguments": (str, OPTIONAL),
    },
    "tool-call-delta": {
        **_INDEXED,
        **_MESSAGE,
        "delta.message.tool_calls": (dict,),
        "delta.message.tool_calls.function": (dict,),
        "delta.message.tool_calls.function.arguments": (str,),
    },
    "tool-call-end": _INDEXED,
    "citation-start": {**_MESSAGE, "delta.message.citations": (dict,)},
    "message-end": {
        "delta": (dict, OPTIONAL),
        "delta.finish_reason": (str, OPTIONAL),
        "delta.usage": (dict, OPTIONAL),
        "delta.usage.tokens": (dict, OPTIONAL),
        "delta.usage.billed_units": (dict, OPTIONAL),
        "delta.usage.tokens.input_tokens": (int, float, OPTIONAL),
        "delta.usage.tokens.output_tokens": (int, float, OPTIONAL),
        "delta.usage.billed_units.input_tokens": (int, float, OPTIONAL),
        "delta.usage.billed_units.output_tokens": (int, float, OPTIONAL),
        "delta.usage.cached_tokens": (int, float, OPTIONAL),
    },
}
_PARTS = {"text": "text", "thinking": "thinking"}  # a content part's type -> the block it is


class CohereAdapter(BaseAdapter):
    protocol = "cohere"

    def __init__(self, reply_id: str, **kwargs: Any) -> None:
        super().__init__(reply_id, **kwargs)
        self._message_started = False

    # A proxy's error object; Cohere's own error event (``{"message": ...}`` with no type) is
    # told apart from a message-start in handle, which knows the stream's state.
    is_error_frame = staticmethod(error_object)

    def shape_problem(self, data: dict[str, Any], event: str | None) -> str | None:
        spec = SHAPES.get(data.get("type"))  # type: ignore[arg-type]
        return shape_problem(data, spec) if spec else None

    def handle(self, data: dict[str, Any], event: str | None) -> None:
        etype = data.get("type")
        if etype == "message-start":
            if self._message_started:
                raise StreamProtocolError("a second message-start in one cohere stream", body=data)
            self._message_started = True
            self.call_metadata["response_id"] = data.get("id")
            return
        if etype in ("error", None) and ("message" in data or "error" in data):
            raise error_from_body(data, self.protocol)
        if not self._message_started:
            raise StreamProtocolError(f"{str(etype)[:40]!r} before message-start", body=data)
        handler = _HANDLERS.get(etype)  # type: ignore[arg-type]
        if handler is not None:
            handler(self, data)
        else:  # debug events, and any kind Cohere adds: kept as sent
            self.call_metadata.setdefault("unhandled_events", []).append(data)
            self.note_unread(str(etype), data)

    def _content_start(self, data: dict[str, Any]) -> None:
        part = data["delta"]["message"]["content"]
        kind = _PARTS.get(part["type"])
        if kind is None:
            raise StreamProtocolError(f"cohere: a content part of type {part['type'][:40]!r}", body=data)
        self._close_plan()
        block = self.open_block(("content", data["index"]), kind)
        if kind == "thinking":
            block.extras["provider_metadata"] = self.origin
        self.delta(block, part.get(kind) or "")

    def _content_delta(self, data: dict[str, Any]) -> None:
        block = self._open(("content", data["index"]), data)
        part = data["delta"]["message"]["content"]
        text = part.get(block.kind)
        if not isinstance(text, str):
            raise StreamProtocolError(f"cohere: a {block.kind} delta without its {block.kind} string", body=data)
        self.delta(block, text)

    def _tool_plan(self, data: dict[str, Any]) -> None:
        block = self.blocks.get("plan")
        if block is None:
            block = self.open_block("plan", "thinking")
            block.extras.update(provider_metadata=self.origin, tool_plan=True)
        self.delta(block, data["delta"]["message"]["tool_plan"])

    def _close_plan(self) -> None:
        self.close_block("plan")

    def _call_start(self, data: dict[str, Any]) -> None:
        call = data["delta"]["message"]["tool_calls"]
        self._close_plan()
        key = ("call", data["index"])
        block = self.open_block(key, "tool_call", name=call["function"]["name"], block_id=call["id"])
        self.delta(block, call["function"].get("arguments") or "")

    def _call_delta(self, data: dict[str, Any]) -> None:
        block = self._open(("call", data["index"]), data)
        self.delta(block, data["delta"]["message"]["tool_calls"]["function"]["arguments"])

    def _call_end(self, data: dict[str, Any]) -> None:
        key = ("call", data["index"])
        block = self._open(key, data)
        if not block.has_delta:
            self.delta(block, "{}")  # a tool that takes no arguments: Cohere streams none
        self.close_block(key)

    def _content_end(self, data: dict[str, Any]) -> None:
        key = ("content", data["index"])
        self._open(key, data)
        self.close_block(key)

    def _citation(self, data: dict[str, Any]) -> None:
        citation = data["delta"]["message"]["citations"]
        text = next((b for k, b in self.blocks.items() if b.kind == "text" and k[0] == "content"), None)
        if text is not None:
            text.extras.setdefault("citations", []).append(citation)
        else:
            self.call_metadata.setdefault("citations", []).append(citation)

    def _message_end(self, data: dict[str, Any]) -> None:
        delta = data.get("delta") or {}
        reason = delta.get("finish_reason")
        self.provider_stop_reason = reason
        self.stop_reason = STOP_REASONS.get(reason, "other") if reason is not None else None
        usage = delta.get("usage") or {}
        if usage:
            self.call_metadata["usage"] = usage
        tokens = usage.get("tokens") or usage.get("billed_units") or {}
        self.input_tokens = int(tokens.get("input_tokens") or 0)
        self.output_tokens = int(tokens.get("output_tokens") or 0)
        self.cache_input_tokens = int(usage.get("cached_tokens") or 0)
        if "id" in data:
            self.call_metadata.setdefault("response_id", data["id"])
        self.finish()

    def _open(self, key: Any, data: dict[str, Any]) -> Any:
        block = self.blocks.get(key)
        if block is None:
            raise StreamProtocolError(f"cohere: {data.get('type')} for {key[0]} {key[1]}, which is not open", body=data)
        return block


_HANDLERS = {
    "content-start": CohereAdapter._content_start,
    "content-delta": CohereAdapter._content_delta,
    "content-end": CohereAdapter._content_end,
    "tool-plan-delta": CohereAdapter._tool_plan,
    "tool-call-start": CohereAdapter._call_start,
    "tool-call-delta": CohereAdapter._call_delta,
    "tool-call-end": CohereAdapter._call_end,
    "citation-start": CohereAdapter._citation,
    "citation-end": lambda self, data: None,  # the citation came whole with its start
    "message-end": CohereAdapter._message_end,
}


def answer_events(answer: dict[str, Any]) -> list[tuple[str | None, Any]]:
    """A whole (not streamed) v2 Chat answer as the events its stream would have sent."""
    message = answer.get("message") or {}
    events: list[tuple[str | None, Any]] = []

    def add(kind: str, **fields: Any) -> None:
        events.append((kind, {"type": kind, **fields}))

    add("message-start", id=answer.get("id"), delta={"message": {"role": message.get("role", "assistant")}})
    if message.get("tool_plan"):
        add("tool-plan-delta", delta={"message": {"tool_plan": message["tool_plan"]}})
    for i, part in enumerate(message.get("content") or ()):
        kind = part.get("type")
        add("content-start", index=i, delta={"message": {"content": {"type": kind, kind: ""}}})
        add("content-delta", index=i, delta={"message": {"content": {kind: part.get(kind, "")}}})
        for citation in message.get("citations") or ():
            if citation.get("content_index", 0) == i:
                add("citation-start", index=0, delta={"message": {"citations": citation}})
        add("content-end", index=i)
    for i, call in enumerate(message.get("tool_calls") or ()):
        function = call.get("function") or {}
        start = {"id": call.get("id"), "type": "function", "function": {"name": function.get("name"), "arguments": ""}}
        add("tool-call-start", index=i, delta={"message": {"tool_calls": start}})
        arguments = function.get("arguments") or ""
        add("tool-call-delta", index=i, delta={"message": {"tool_calls": {"function": {"arguments": arguments}}}})
        add("tool-call-end", index=i)
    end = {"finish_reason": answer.get("finish_reason"), "usage": answer.get("usage") or {}}
    add("message-end", delta=end)
    return events


def fake_stream(blocks: tuple[Any, ...], usage: tuple[int, int]) -> list[tuple[str | None, Any]]:
    """The events of a made-up stream: thinking and text parts a word at a time, calls whole."""
    from .._protocol import fake_words

    events: list[tuple[str | None, Any]] = []

    def add(kind: str, **fields: Any) -> None:
        events.append((kind, {"type": kind, **fields}))

    add("message-start", id="msg_1", delta={"message": {"role": "assistant", "content": [], "tool_plan": ""}})
    index = calls = 0
    for block in blocks:
        if block[0] in ("think", "text"):
            kind = "thinking" if block[0] == "think" else "text"
            add("content-start", index=index, delta={"message": {"content": {"type": kind, kind: ""}}})
            for word in fake_words(block[1]):
                add("content-delta", index=index, delta={"message": {"content": {kind: word}}})
            add("content-end", index=index)
            index += 1
        else:
            _, call_id, name, args = block
            start = {"id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
            add("tool-call-start", index=calls, delta={"message": {"tool_calls": start}})
            if args:
                add(
                    "tool-call-delta", index=calls, delta={"message": {"tool_calls": {"function": {"arguments": args}}}}
                )
            add("tool-call-end", index=calls)
            calls += 1
    reason = "TOOL_CALL" if calls else "COMPLETE"
    tokens = {"input_tokens": usage[0], "output_tokens": usage[1]}
    add("message-end", delta={"finish_reason": reason, "usage": {"billed_units": tokens, "tokens": tokens}})
    return events


def fake_answer(blocks: tuple[Any, ...], usage: tuple[int, int]) -> dict[str, Any]:
    """The whole answer a made-up stream of these blocks would have been."""
    content: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for block in blocks:
        if block[0] in ("think", "text"):
            kind = "thinking" if block[0] == "think" else "text"
            content.append({"type": kind, kind: block[1]})
        else:
            _, call_id, name, args = block
            calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": args}})
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    tokens = {"input_tokens": usage[0], "output_tokens": usage[1]}
    usage_sent = {"billed_units": tokens, "tokens": tokens}
    return {
        "id": "msg_1",
        "finish_reason": "TOOL_CALL" if calls else "COMPLETE",
        "message": message,
        "usage": usage_sent,
    }
