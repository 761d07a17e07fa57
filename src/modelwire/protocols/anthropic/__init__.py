"""The Anthropic Messages protocol (``POST /v1/messages``, streamed).

Its adapter is :mod:`.adapter`, its formatter :mod:`.formatter`; this module says how a
request is built, how options map onto it, what it can do, and how the test server fakes
it. Thinking it produced is valid on every server that speaks it (``replay_scope =
"protocol"``): the Anthropic API, and Claude on other clouds.
"""

from __future__ import annotations

from typing import Any

from ...adapters import encode_sse
from .._protocol import DEFAULT_MAX_TOKENS, Capabilities, ModelOptions, Preset, WireProtocol, refuse, sampling

__all__ = ["PROTOCOL", "AnthropicProtocol"]


class AnthropicProtocol(WireProtocol):
    name = "anthropic"
    description = "Anthropic Messages"
    adapter = "modelwire.protocols.anthropic.adapter:AnthropicAdapter"
    formatter = "modelwire.protocols.anthropic.formatter:AnthropicFormatter"
    path = "/v1/messages"
    input_includes_cache = False  # input_tokens excludes cache reads and writes
    signature = (b"event: message_start", b'"type": "message_start"', b'"type":"message_start"', b'"content_block_delta"')
    replay_scope = "protocol"
    capabilities = Capabilities(native_structured_output=False, thinking=True, server_tools=True)
    sdk_package = "anthropic"

    def sdk_base_url(self, base_url: str) -> str:
        base_url = base_url.rstrip("/")
        return base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url

    def apply_options(self, p: dict[str, Any], o: ModelOptions, preset: Preset, model: str = "") -> None:
        p["max_tokens"] = o.max_tokens or DEFAULT_MAX_TOKENS
        sampling(p, o, stop="stop_sequences")
        if o.thinking is False and o.thinking_budget:
            raise refuse("thinking_budget", preset, "thinking=False turns thinking off; drop the budget or the False")
        if o.thinking or o.thinking_budget:
            budget = o.thinking_budget or max(1024, min(16000, p["max_tokens"] // 2))
            if budget >= p["max_tokens"]:
                raise refuse("thinking_budget", preset, f"budget {budget} must be below max_tokens {p['max_tokens']}")
            p["thinking"] = {"type": "enabled", "budget_tokens": budget}
        elif o.thinking is False:
            p["thinking"] = {"type": "disabled"}
        if o.reasoning_effort is not None:
            raise refuse("reasoning_effort", preset, "use thinking / thinking_budget")
        if o.reasoning_summary is not None:
            raise refuse("reasoning_summary", preset, "Anthropic streams its thinking itself; use thinking=True")
        if o.parallel_tool_calls is not None:
            if o.parallel_tool_calls is False:
                choice = p.setdefault("tool_choice", {"type": "auto"})
                choice["disable_parallel_tool_use"] = True
            # True is Anthropic's default: nothing to send.
        if o.json_schema is not None:
            raise refuse(
                "json_schema",
                preset,
                "ask for structured output through a tool (the agent's structured_model does this), or pass the"
                " provider's own field in extra_body",
            )

    def answer_events(self, answer: dict[str, Any]) -> list[tuple[str | None, Any]]:
        message = {k: v for k, v in answer.items() if k not in ("stop_reason", "stop_sequence")}
        delta = {"stop_reason": answer.get("stop_reason"), "stop_sequence": answer.get("stop_sequence")}
        return [
            ("message_start", {"type": "message_start", "message": message}),  # its content: complete blocks
            ("message_delta", {"type": "message_delta", "delta": delta, "usage": answer.get("usage") or {}}),
            ("message_stop", {"type": "message_stop"}),
        ]

    def fake_stream(self, *blocks: tuple, stop: str | None = None, msg_id: str = "msg_1", usage: tuple[int, int] = (10, 5), **_: Any) -> bytes:
        ev: list[tuple[str, Any]] = [
            ("message_start", {"type": "message_start", "message": {"id": msg_id, "type": "message", "role": "assistant", "model": "claude-test", "content": [], "stop_reason": None, "usage": {"input_tokens": usage[0], "output_tokens": 1}}})
        ]
        for i, block in enumerate(blocks):
            kind = block[0]
            if kind == "think":
                text = block[1]
                signature = block[2] if len(block) > 2 else f"sig-{text[:8]}"
                ev.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}))
                for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
                    ev.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "thinking_delta", "thinking": piece}}))
                ev.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "signature_delta", "signature": signature}}))
            elif kind == "text":
                ev.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}))
                for word in block[1].split(" "):
                    ev.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": word + " "}}))
            else:
                ev.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": block[1], "name": block[2], "input": {}}}))
                args = block[3]
                for piece in ("", args[: len(args) // 2], args[len(args) // 2 :]):
                    ev.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": piece}}))
            ev.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        if stop is None:
            stop = "tool_use" if any(b[0] == "tool" for b in blocks) else "end_turn"
        ev.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": usage[1]}}))
        ev.append(("message_stop", {"type": "message_stop"}))
        return encode_sse(ev)


PROTOCOL = AnthropicProtocol()
