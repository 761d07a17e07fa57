"""Ollama's native chat API (``POST /api/chat``, streamed as NDJSON).

The OpenAI-compatible ``/v1`` endpoint of Ollama ignores ``num_ctx`` and ``think``; this one
takes them: ``options`` (``num_ctx``, ``num_predict``, ``temperature``, ``top_p``, ``stop``),
``think`` (``true`` / ``false``, or a level: ``low``, ``medium``, ``high``), ``format`` (a
JSON schema for structured output) and ``keep_alive``. The context length defaults to
what the server says the model takes (``POST /api/show``), never silently to Ollama's own
default of a few thousand tokens: when the server does not say, a warning says so.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from .._caps import Refusal
from .._protocol import (
    Capabilities,
    ModelCapabilities,
    ModelOptions,
    Preset,
    WireProtocol,
    check_effort,
    refuse,
    fake_words,
)
from .presets import PRESETS

__all__ = ["PROTOCOL", "OllamaProtocol"]

log = logging.getLogger("modelwire.protocols.ollama")
_LEVELS = ("low", "medium", "high")  # think's level form (gpt-oss)
_WARNED: set[str] = set()  # models whose unknown context length was said once


class OllamaProtocol(WireProtocol):
    name = "ollama"
    presets = PRESETS
    description = "Ollama native chat"
    adapter = "modelwire.protocols.ollama.adapter:OllamaAdapter"
    formatter = "modelwire.protocols.ollama.formatter:OllamaFormatter"
    path = "/api/chat"
    conform = "modelwire.protocols.ollama._conform:CHECKS"
    content_type = "application/x-ndjson"
    framing = "ndjson"
    signature = (b'"done":false', b'"done": false', b'"done_reason"', b'"eval_count"')
    replay_scope = "provider"
    capabilities = Capabilities(
        native_structured_output=True, thinking=True, server_tools=False, parallel_tool_calls=True
    )
    # Ollama's 400s to what a model's capabilities lack (its native and its OpenAI routes).
    refusals = (
        Refusal(
            r"\bdoes not support tools\b",
            "tools",
            lambda m: {"tool_use": False},
            "Ollama's 400 to tools for a model without the tools capability: "
            "'registry.ollama.ai/library/deepseek-r1:14b does not support tools' (ollama/ollama#11131, "
            "2025-06-19; ollama/ollama#14795, 2026-03-12)",
        ),
        Refusal(
            r"\bdoes not support thinking\b",
            "thinking",
            lambda m: {"thinking": []},
            "Ollama's 400 to think for a model without the thinking capability: '\"llama3.1:8b\" does not "
            "support thinking' (Gitlawb/openclaude#1371, 2026-05-26; taketwo/llm-ollama#54, 2025-07-27)",
        ),
    )
    # Every request depends on the model: its context length goes in options.num_ctx.
    lookup_always = True
    whole_tool_calls = True

    # -- what the server says about a model ----------------------------------------------

    def model_info_url(self, base_url: str, model: str, preset: Preset) -> str | None:
        return base_url.rstrip("/") + "/api/show"

    def model_info_body(self, model: str) -> bytes | None:
        return json.dumps({"model": model}).encode()

    def capabilities_from_info(self, data: Any, model: str) -> ModelCapabilities | None:
        """``/api/show``: ``model_info["<architecture>.context_length"]`` and ``capabilities``
        (``completion``, ``tools``, ``thinking``, ``vision`` ...)."""
        if not isinstance(data, dict):
            return None
        values: dict[str, Any] = {}
        info = data.get("model_info")
        if isinstance(info, dict):
            arch = info.get("general.architecture")
            length = info.get(f"{arch}.context_length") if isinstance(arch, str) else None
            if length is None:
                length = next((v for k, v in info.items() if k.endswith(".context_length")), None)
            if isinstance(length, int) and not isinstance(length, bool) and length > 0:
                values["context_window"] = length
        caps = data.get("capabilities")
        if isinstance(caps, list) and all(isinstance(c, str) for c in caps):
            values["image_input"] = "vision" in caps
            if "thinking" not in caps:
                values["thinking"] = []
        if "context_window" not in values and model not in _WARNED:
            # Said only where the server answered: one that is not running says so itself.
            _WARNED.add(model)
            log.warning(
                "ollama:%s: the context length is not known (the server did not say), so Ollama uses its default,"
                " often 4,096 tokens; set it with capabilities={'context_window': N} or "
                "extra_body={'options': {'num_ctx': N}}",
                model,
            )
        if not values:
            return None
        return ModelCapabilities.from_mapping(values, "provider: POST /api/show")

    # -- the request -----------------------------------------------------------------------

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
        options: dict[str, Any] = {}
        if caps.context_window:
            options["num_ctx"] = caps.context_window
        if o.max_tokens is not None:
            options["num_predict"] = o.max_tokens
        if o.temperature is not None:
            options["temperature"] = o.temperature
        if o.top_p is not None:
            options["top_p"] = o.top_p
        if o.stop:
            options["stop"] = list(o.stop)
        if options:
            p["options"] = options
        if o.thinking_budget is not None:
            raise refuse(
                "thinking_budget",
                preset,
                "Ollama's think takes a switch or a level; use thinking or reasoning_effort",
                model=model,
            )
        if o.reasoning_effort is not None:
            if o.thinking is False:
                raise refuse(
                    "reasoning_effort",
                    preset,
                    "thinking=False turns thinking off; drop the effort or the False",
                    model=model,
                )
            p["think"] = check_effort(o.reasoning_effort, caps, preset, model, _LEVELS)
        elif o.thinking is not None:
            if o.thinking and caps.thinking == ():
                raise refuse("thinking", preset, "the server says the model does not think", model=model)
            p["think"] = bool(o.thinking)
        if o.thinking_display is not None:
            raise refuse(
                "thinking_display", preset, "Ollama sends the thinking it has; there is no display switch", model=model
            )
        if o.reasoning_summary is not None:
            raise refuse("reasoning_summary", preset, "summaries come from the Responses API", model=model)
        if o.parallel_tool_calls is not None:
            raise refuse("parallel_tool_calls", preset, "Ollama has no switch for parallel calls", model=model)
        if o.json_schema is not None:
            p["format"] = o.json_schema

    def answer_events(self, answer: dict[str, Any]) -> list[tuple[str | None, Any]]:
        return [(None, answer)]  # a whole answer is one line with done: true

    def fake_answer(self, *blocks: tuple[Any, ...], usage: tuple[int, int] = (10, 5)) -> dict[str, Any]:
        """The whole /api/chat answer (one object, ``done: true``) of the same blocks as
        :meth:`fake_stream`."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(b[1] for b in blocks if b[0] == "text")}
        thinking = "".join(b[1] for b in blocks if b[0] == "think")
        calls = [{"function": {"name": b[2], "arguments": json.loads(b[3] or "{}")}} for b in blocks if b[0] == "tool"]
        if thinking:
            message["thinking"] = thinking
        if calls:
            message["tool_calls"] = calls
        return {
            "model": "ollama-test",
            "created_at": "2026-01-01T00:00:01Z",
            "message": message,
            "done_reason": "stop",
            "done": True,
            "prompt_eval_count": usage[0],
            "eval_count": usage[1],
        }

    def fake_stream(self, *blocks: tuple[Any, ...], usage: tuple[int, int] = (10, 5), **_: Any) -> bytes:
        """``("think", text)`` streams ``message.thinking``; calls come whole, without ids."""
        lines: list[dict[str, Any]] = []

        def line(message: dict[str, Any]) -> None:
            lines.append(
                {
                    "model": "ollama-test",
                    "created_at": "2026-01-01T00:00:00Z",
                    "message": {"role": "assistant", "content": "", **message},
                    "done": False,
                }
            )

        calls = []
        for block in blocks:
            if block[0] in ("think", "text"):
                field = "thinking" if block[0] == "think" else "content"
                for word in fake_words(block[1]):
                    line({field: word})
            else:
                calls.append({"function": {"name": block[2], "arguments": json.loads(block[3] or "{}")}})
        if calls:
            line({"tool_calls": calls})
        lines.append(
            {
                "model": "ollama-test",
                "created_at": "2026-01-01T00:00:01Z",
                "message": {"role": "assistant", "content": ""},
                "done_reason": "stop",
                "done": True,
                "total_duration": 1000,
                "prompt_eval_count": usage[0],
                "eval_count": usage[1],
            }
        )
        return b"".join(json.dumps(item).encode() + b"\n" for item in lines)


PROTOCOL = OllamaProtocol()
