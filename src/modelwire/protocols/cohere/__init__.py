"""Cohere's v2 Chat API (``POST /v2/chat``, streamed as SSE named by event type).

What a request takes (https://docs.cohere.com/reference/chat, and the official SDK's
``ClientV2.chat_stream``): ``max_tokens``, ``temperature``, ``p`` (top-p),
``stop_sequences``, ``thinking`` (``{"type": "enabled" | "disabled", "token_budget"}``, for
its reasoning models), ``response_format`` (``{"type": "json_object", "json_schema"}``),
``tools`` with ``tool_choice`` ``REQUIRED`` or ``NONE``. There is no reasoning effort, no
summary or display switch and no switch for parallel calls: those options are refused.
Thinking and tool plans are replayed only to Cohere (``replay_scope = "provider"``).
"""

from __future__ import annotations

from typing import Any

from .._protocol import Capabilities, ModelCapabilities, ModelOptions, Preset, WireProtocol, refuse
from ...adapters import encode_sse
from .presets import PRESETS

__all__ = ["PROTOCOL", "CohereProtocol"]


class CohereProtocol(WireProtocol):
    name = "cohere"
    presets = PRESETS
    description = "Cohere v2 Chat"
    adapter = "modelwire.protocols.cohere.adapter:CohereAdapter"
    formatter = "modelwire.protocols.cohere.formatter:CohereFormatter"
    path = "/v2/chat"
    content_type = "text/event-stream"
    framing = "sse"
    signature = (b"event: message-start", b'"type":"content-delta"', b'"type":"tool-plan-delta"')
    replay_scope = "provider"
    replay_keys = ("tool_plan",)
    extras_keys = ("tool_plan", "citations")
    sdk_package = "cohere"
    capabilities = Capabilities(
        native_structured_output=True, thinking=True, server_tools=False, parallel_tool_calls=True
    )

    prompt_order = ("tools", "messages")

    def apply_options(
        self,
        p: dict[str, Any],
        o: ModelOptions,
        /,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        for option, field in (("max_tokens", "max_tokens"), ("temperature", "temperature"), ("top_p", "p")):
            if getattr(o, option) is not None:
                p[field] = getattr(o, option)
        if o.stop:
            p["stop_sequences"] = list(o.stop)
        if o.thinking is not None or o.thinking_budget is not None:
            if o.thinking is False and o.thinking_budget is not None:
                raise refuse(
                    "thinking_budget", preset, "thinking=False turns thinking off; drop the budget", model=model
                )
            thinking: dict[str, Any] = {"type": "disabled" if o.thinking is False else "enabled"}
            if o.thinking_budget is not None:
                thinking["token_budget"] = o.thinking_budget
            p["thinking"] = thinking
        for option, why in _REFUSED:
            if getattr(o, option) is not None:
                raise refuse(option, preset, why, model=model)
        if o.json_schema is not None:
            p["response_format"] = {"type": "json_object", "json_schema": o.json_schema}

    def answer_events(self, answer: dict[str, Any]) -> list[tuple[str | None, Any]]:
        from .adapter import answer_events

        return answer_events(answer)

    def fake_answer(self, *blocks: tuple[Any, ...], usage: tuple[int, int] = (10, 5)) -> dict[str, Any]:
        from .adapter import fake_answer

        return fake_answer(blocks, usage)

    def fake_stream(self, *blocks: tuple[Any, ...], usage: tuple[int, int] = (10, 5), **_: Any) -> bytes:
        """``("think", text)`` streams a thinking part; calls stream their arguments whole."""
        from .adapter import fake_stream

        return encode_sse(fake_stream(blocks, usage))


_REFUSED = (
    ("reasoning_effort", "Cohere takes a thinking token budget, not an effort; use thinking_budget"),
    ("reasoning_summary", "Cohere streams its thinking itself; summaries come from the Responses API"),
    ("thinking_display", "Cohere has no switch for how thinking is shown"),
    ("parallel_tool_calls", "Cohere has no switch for parallel calls"),
)

PROTOCOL = CohereProtocol()
