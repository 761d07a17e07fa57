"""Unified call options, mapped onto each provider's request fields.

An option a provider cannot honour raises :class:`UnsupportedOptionError` (a clear error,
never a silent drop). Anything a provider takes that has no unified name goes in
``extra_body`` (merged into the request body last) or ``extra_headers``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..errors import ModelwireError

__all__ = ["ModelOptions", "UnsupportedOptionError", "apply_options"]


class UnsupportedOptionError(ModelwireError, ValueError):
    """An option the chosen provider cannot honour."""

    def __init__(self, option: str, provider: str, hint: str = "") -> None:
        self.option = option
        self.provider = provider
        super().__init__(f"{provider} does not take {option!r}" + (f": {hint}" if hint else ""))


@dataclass
class ModelOptions:
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: list[str] | None = None
    thinking: bool | None = None  # turn extended thinking / reasoning on or off
    thinking_budget: int | None = None  # tokens (Anthropic budget_tokens)
    reasoning_effort: str | None = None  # minimal | low | medium | high (OpenAI)
    reasoning_summary: str | None = None  # auto | concise | detailed (OpenAI Responses)
    parallel_tool_calls: bool | None = None
    json_schema: dict[str, Any] | None = None  # structured output: a JSON schema
    json_schema_name: str = "output"
    extra_headers: dict[str, str] = field(default_factory=dict)
    extra_body: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "ModelOptions":
        data = dict(data or {})
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise UnsupportedOptionError(sorted(unknown)[0], "modelwire", f"known options: {', '.join(sorted(known))}")
        if isinstance(data.get("stop"), str):
            data["stop"] = [data["stop"]]
        return cls(**data)

    def merged(self, other: "ModelOptions | dict[str, Any] | None") -> "ModelOptions":
        if other is None:
            return self
        if isinstance(other, dict):
            other = ModelOptions.from_dict(other)
        mine = asdict(self)
        theirs = asdict(other)
        out = {}
        for key, value in mine.items():
            new = theirs[key]
            if key in ("extra_headers", "extra_body"):
                out[key] = {**value, **new}
            else:
                out[key] = new if new is not None and new != ModelOptions.__dataclass_fields__[key].default else value
        return ModelOptions(**out)


DEFAULT_MAX_TOKENS = 4096


def apply_options(protocol: str, provider: str, payload: dict[str, Any], opts: ModelOptions, *, max_tokens_field: str = "max_tokens") -> None:
    """Put ``opts`` into ``payload`` in the provider's shape (in place)."""
    if protocol == "anthropic":
        _anthropic(provider, payload, opts)
    elif protocol == "openai-chat":
        _chat(provider, payload, opts, max_tokens_field)
    else:
        _responses(provider, payload, opts)
    _deep_merge(payload, opts.extra_body)


def _anthropic(provider: str, p: dict[str, Any], o: ModelOptions) -> None:
    p["max_tokens"] = o.max_tokens or DEFAULT_MAX_TOKENS
    if o.temperature is not None:
        p["temperature"] = o.temperature
    if o.top_p is not None:
        p["top_p"] = o.top_p
    if o.stop:
        p["stop_sequences"] = list(o.stop)
    if o.thinking or o.thinking_budget:
        budget = o.thinking_budget or max(1024, min(16000, p["max_tokens"] // 2))
        if budget >= p["max_tokens"]:
            raise UnsupportedOptionError("thinking_budget", provider, f"budget {budget} must be below max_tokens {p['max_tokens']}")
        p["thinking"] = {"type": "enabled", "budget_tokens": budget}
    elif o.thinking is False:
        p["thinking"] = {"type": "disabled"}
    if o.reasoning_effort is not None:
        raise UnsupportedOptionError("reasoning_effort", provider, "use thinking / thinking_budget")
    if o.reasoning_summary is not None:
        raise UnsupportedOptionError("reasoning_summary", provider)
    if o.parallel_tool_calls is False:
        if "tool_choice" in p:
            p["tool_choice"]["disable_parallel_tool_use"] = True
        elif p.get("tools"):
            p["tool_choice"] = {"type": "auto", "disable_parallel_tool_use": True}
    if o.json_schema is not None:
        raise UnsupportedOptionError(
            "json_schema",
            provider,
            "ask for structured output through a tool (the agent's structured_model does this), or pass the"
            " provider's own field in extra_body",
        )


def _chat(provider: str, p: dict[str, Any], o: ModelOptions, max_tokens_field: str) -> None:
    if o.max_tokens is not None:
        p[max_tokens_field] = o.max_tokens
    if o.temperature is not None:
        p["temperature"] = o.temperature
    if o.top_p is not None:
        p["top_p"] = o.top_p
    if o.stop:
        p["stop"] = list(o.stop)
    if o.reasoning_effort is not None:
        p["reasoning_effort"] = o.reasoning_effort
    if o.thinking_budget is not None:
        raise UnsupportedOptionError("thinking_budget", provider, "use reasoning_effort")
    if o.thinking is not None and o.reasoning_effort is None and provider in ("openai", "azure"):
        raise UnsupportedOptionError("thinking", provider, "reasoning models always reason; set reasoning_effort")
    if o.reasoning_summary is not None:
        raise UnsupportedOptionError("reasoning_summary", provider, "summaries come from the Responses API (openai-responses:)")
    if o.parallel_tool_calls is not None and p.get("tools"):
        p["parallel_tool_calls"] = o.parallel_tool_calls
    if o.json_schema is not None:
        p["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": o.json_schema_name, "schema": o.json_schema, "strict": True},
        }


def _responses(provider: str, p: dict[str, Any], o: ModelOptions) -> None:
    if o.max_tokens is not None:
        p["max_output_tokens"] = o.max_tokens
    if o.temperature is not None:
        p["temperature"] = o.temperature
    if o.top_p is not None:
        p["top_p"] = o.top_p
    if o.stop:
        raise UnsupportedOptionError("stop", provider, "the Responses API has no stop sequences")
    if o.thinking_budget is not None:
        raise UnsupportedOptionError("thinking_budget", provider, "use reasoning_effort")
    if o.reasoning_effort is not None or o.reasoning_summary is not None:
        reasoning: dict[str, Any] = {}
        if o.reasoning_effort is not None:
            reasoning["effort"] = o.reasoning_effort
        if o.reasoning_summary is not None:
            reasoning["summary"] = o.reasoning_summary
        p["reasoning"] = reasoning
    if o.parallel_tool_calls is not None and p.get("tools"):
        p["parallel_tool_calls"] = o.parallel_tool_calls
    if o.json_schema is not None:
        p["text"] = {"format": {"type": "json_schema", "name": o.json_schema_name, "schema": o.json_schema, "strict": True}}


def _deep_merge(target: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_merge(target[key], value)
        else:
            target[key] = value
