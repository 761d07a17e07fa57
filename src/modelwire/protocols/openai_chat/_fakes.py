"""What the test server answers for OpenAI's Chat Completions: fake streams and whole
answers, and a whole answer read as its stream's chunks (a mixin before ``WireProtocol`` in
:class:`~modelwire.protocols.openai_chat.OpenAIChatProtocol`)."""

from __future__ import annotations

from typing import Any

from ...adapters import encode_sse
from .._parts import TestSupport
from .._protocol import fake_words

__all__ = ["OpenAIChatTestSupport"]

# Where OpenAI-compatible servers put reasoning in a message (DeepSeek, vLLM, llama.cpp:
# reasoning_content; OpenRouter, Groq: reasoning and reasoning_details).
_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_details")


class OpenAIChatTestSupport(TestSupport):
    def answer_events(self, answer: dict[str, Any]) -> list[tuple[str | None, Any]]:
        # The reasoning first, in a chunk of its own (as a stream sends it, before the text),
        # then the rest with the finish reason and the usage.
        head = {k: v for k, v in answer.items() if k not in ("choices", "usage")}
        thinking, choices = [], []
        for choice in answer.get("choices") or []:
            message = dict(choice.get("message") or {})
            index = choice.get("index", 0)
            reasoning = {k: message.pop(k) for k in _REASONING_FIELDS if message.get(k)}
            if reasoning:
                thinking.append(
                    {
                        "index": index,
                        "delta": {"role": message.get("role", "assistant"), **reasoning},
                        "finish_reason": None,
                    }
                )
            calls = message.pop("tool_calls", None)
            if calls:
                message["tool_calls"] = [{"index": i, **call} for i, call in enumerate(calls)]
            choices.append({"index": index, "delta": message, "finish_reason": choice.get("finish_reason")})
        chunks: list[tuple[str | None, Any]] = [(None, {**head, "choices": thinking})] if thinking else []
        chunks.append((None, {**head, **({"usage": answer["usage"]} if "usage" in answer else {}), "choices": choices}))
        chunks.append((None, "[DONE]"))
        return chunks

    def fake_answer(self, *blocks: tuple[Any, ...], usage: tuple[int, int] = (10, 5)) -> dict[str, Any]:
        """The whole chat completion of the same blocks as :meth:`fake_stream` (the thinking
        in ``reasoning_content``, as the fake stream sends it)."""
        message: dict[str, Any] = {"role": "assistant", "content": None}
        texts = [b[1] for b in blocks if b[0] == "text"]
        thoughts = [b[1] for b in blocks if b[0] == "think"]
        calls = [
            {"id": b[1], "type": "function", "function": {"name": b[2], "arguments": b[3]}}
            for b in blocks
            if b[0] == "tool"
        ]
        if texts:
            message["content"] = "".join(texts)
        if thoughts:
            message["reasoning_content"] = "".join(thoughts)
        if calls:
            message["tool_calls"] = calls
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        used = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "chat-test",
            "choices": [choice],
            "usage": used,
        }

    def fake_stream(
        self,
        *blocks: tuple[Any, ...],
        finish: str | None = None,
        reasoning_field: str = "reasoning_content",
        usage: tuple[int, int] = (10, 5),
        **_: Any,
    ) -> bytes:
        """Tool calls are streamed in parallel, their fragments interleaved."""

        def chunk(delta: dict[str, Any] | None, fin: str | None = None, **extra: Any) -> tuple[None, dict[str, Any]]:
            choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": fin}]
            return (
                None,
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "model": "chat-test",
                    "choices": choices,
                    **extra,
                },
            )

        ev: list[tuple[str | None, Any]] = [chunk({"role": "assistant", "content": ""})]
        tools = [b for b in blocks if b[0] == "tool"]
        for block in blocks:
            if block[0] in ("think", "text"):
                field = reasoning_field if block[0] == "think" else "content"
                for word in fake_words(block[1]):
                    ev.append(chunk({field: word}))
        for k, (_, cid, name, _args) in enumerate(tools):
            ev.append(
                chunk(
                    {
                        "tool_calls": [
                            {"index": k, "id": cid, "type": "function", "function": {"name": name, "arguments": ""}}
                        ]
                    }
                )
            )
        halves = [(k, t[3][: len(t[3]) // 2], t[3][len(t[3]) // 2 :]) for k, t in enumerate(tools)]
        for k, first, _ in halves:
            ev.append(chunk({"tool_calls": [{"index": k, "function": {"arguments": first}}]}))
        for k, _, second in halves:
            ev.append(chunk({"tool_calls": [{"index": k, "function": {"arguments": second}}]}))
        ev.append(chunk({}, finish or ("tool_calls" if tools else "stop")))
        ev.append(
            chunk(None, usage={"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)})
        )
        ev.append((None, "[DONE]"))
        return encode_sse(ev)
