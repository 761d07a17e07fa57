"""What the test server answers for the Anthropic protocol: fake streams and whole answers,
and a whole answer read as its stream's events (a mixin before ``WireProtocol`` in
:class:`~modelwire.protocols.anthropic.AnthropicProtocol`)."""

from __future__ import annotations

import json
from typing import Any

from ...adapters import encode_sse
from .._parts import TestSupport
from .._protocol import fake_words

__all__ = ["AnthropicTestSupport"]


class AnthropicTestSupport(TestSupport):
    def answer_events(self, answer: dict[str, Any]) -> list[tuple[str | None, Any]]:
        message = {k: v for k, v in answer.items() if k not in ("stop_reason", "stop_sequence", "context_management")}
        delta = {"stop_reason": answer.get("stop_reason"), "stop_sequence": answer.get("stop_sequence")}
        ended: dict[str, Any] = {"type": "message_delta", "delta": delta, "usage": answer.get("usage") or {}}
        if answer.get("context_management") is not None:  # what the server cleared, as a stream says it
            ended["context_management"] = answer["context_management"]
        return [
            ("message_start", {"type": "message_start", "message": message}),  # its content: complete blocks
            ("message_delta", ended),
            ("message_stop", {"type": "message_stop"}),
        ]

    def fake_answer(self, *blocks: tuple[Any, ...], usage: tuple[int, int] = (10, 5)) -> dict[str, Any]:
        """The whole Messages answer of the same blocks as :meth:`fake_stream`."""
        content: list[dict[str, Any]] = []
        for block in blocks:
            if block[0] == "think":
                text, *signed = block[1:]
                signature = signed[0] if signed else f"sig-{text[:8]}"
                content.append({"type": "thinking", "thinking": text, "signature": signature})
            elif block[0] == "text":
                content.append({"type": "text", "text": block[1]})
            else:
                arguments = json.loads(block[3] or "{}")
                content.append({"type": "tool_use", "id": block[1], "name": block[2], "input": arguments})
        stop = "tool_use" if any(b[0] == "tool" for b in blocks) else "end_turn"
        message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": content}
        used = {"input_tokens": usage[0], "output_tokens": usage[1]}
        return {**message, "stop_reason": stop, "stop_sequence": None, "usage": used}

    def fake_stream(
        self,
        *blocks: tuple[Any, ...],
        stop: str | None = None,
        msg_id: str = "msg_1",
        usage: tuple[int, int] = (10, 5),
        **_: Any,
    ) -> bytes:
        ev: list[tuple[str, Any]] = []

        def add(kind: str, **data: Any) -> None:
            ev.append((kind, {"type": kind, **data}))

        started = {"input_tokens": usage[0], "output_tokens": 1}
        message = {"id": msg_id, "type": "message", "role": "assistant", "model": "claude-test", "content": []}
        add("message_start", message={**message, "stop_reason": None, "usage": started})
        for i, block in enumerate(blocks):
            start, deltas = _fake_block(block)
            add("content_block_start", index=i, content_block=start)
            for delta in deltas:
                add("content_block_delta", index=i, delta=delta)
            add("content_block_stop", index=i)
        if stop is None:
            stop = "tool_use" if any(b[0] == "tool" for b in blocks) else "end_turn"
        add("message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage={"output_tokens": usage[1]})
        add("message_stop")
        return encode_sse(ev)


def _fake_block(block: tuple[Any, ...]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A fake stream's block: how it starts, and its deltas (text a word at a time; thinking
    and arguments in halves, thinking then signed)."""
    if block[0] == "think":
        text = block[1]
        signature = block[2] if len(block) > 2 else f"sig-{text[:8]}"
        halves = [
            {"type": "thinking_delta", "thinking": piece} for piece in (text[: len(text) // 2], text[len(text) // 2 :])
        ]
        return {"type": "thinking", "thinking": "", "signature": ""}, [
            *halves,
            {"type": "signature_delta", "signature": signature},
        ]
    if block[0] == "text":
        return {"type": "text", "text": ""}, [{"type": "text_delta", "text": word} for word in fake_words(block[1])]
    args = block[3]
    pieces = ("", args[: len(args) // 2], args[len(args) // 2 :])
    start = {"type": "tool_use", "id": block[1], "name": block[2], "input": {}}
    return start, [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
