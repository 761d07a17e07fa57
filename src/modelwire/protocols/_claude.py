"""Claude's request rules, wherever Claude is reached: the Anthropic API, Claude on Vertex
(the anthropic protocol at a cloud endpoint) and Claude on Bedrock (the Converse API's
additional fields). One module, so the protocols that speak to Claude share its facts
without importing each other."""

from __future__ import annotations

import logging
from typing import Any

from ._caps import ModelCapabilities
from ._protocol import ModelOptions, Preset, check_effort, refuse

__all__ = ["STRICT_RULES", "EFFORTS", "MIN_BUDGET", "claude_schema", "claude_fields"]

log = logging.getLogger("modelwire.protocols.anthropic")

# The schema subset of Claude's structured outputs (output_config.format, strict tools), as
# the anthropic SDK's own transform_schema writes it (formatters._schema.SchemaRules).
STRICT_RULES: dict[str, Any] = dict(
    keywords=frozenset({"format", "minItems"}),
    formats=frozenset({"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}),
    all_required=False,
    inline_ref_siblings=False,
    min_items=frozenset({0, 1}),
    drop_null_default=False,
    literal_without_type=True,
    format_on_strings_only=True,
)


def claude_schema(schema: dict[str, Any], preset: Preset, model: str) -> dict[str, Any]:
    """``schema`` in the subset Claude's structured output takes, or a refusal naming why."""
    from ..formatters._schema import NotStrict, SchemaRules, strict_schema

    try:
        out, notes = strict_schema(schema, SchemaRules(**STRICT_RULES))
    except NotStrict as exc:
        raise refuse(
            "json_schema", preset, f"Claude's structured output cannot express it: {exc}", model=model
        ) from None
    for note in notes:
        log.debug("json_schema for %s: %s", model, note)
    return out


EFFORTS = ("low", "medium", "high", "xhigh", "max")  # what output_config.effort can carry
MIN_BUDGET = 1024


def _budget(
    o: ModelOptions,
    preset: Preset,
    model: str,
    caps: ModelCapabilities,
    max_tokens: int | None,
    *,
    forced_tool: bool,
    default_budget: int,
) -> dict[str, Any]:
    """Thinking on a budget, where the model takes one: the budget asked for, else half of
    max_tokens (within what Claude takes); never with a forced tool."""
    if caps.thinking is not None and "budget" not in caps.thinking:
        raise refuse(
            "thinking_budget",
            preset,
            "the model takes adaptive thinking only; use thinking=True, and reasoning_effort for how much",
            model=model,
        )
    budget = o.thinking_budget or (max(MIN_BUDGET, min(16000, max_tokens // 2)) if max_tokens else default_budget)
    if budget < MIN_BUDGET:
        raise refuse(
            "thinking_budget", preset, f"budget {budget} is below the least Claude takes ({MIN_BUDGET})", model=model
        )
    if max_tokens is not None and budget >= max_tokens:
        raise refuse("thinking_budget", preset, f"budget {budget} must be below max_tokens {max_tokens}", model=model)
    if forced_tool:
        raise refuse(
            "tool_choice",
            preset,
            (
                "Claude cannot be made to call a tool while thinking on a budget; use "
                "tool_choice='auto', or thinking=False"
            ),
            model=model,
        )
    return {"type": "enabled", "budget_tokens": budget}


def claude_fields(
    o: ModelOptions,
    preset: Preset,
    model: str,
    caps: ModelCapabilities,
    max_tokens: int | None,
    *,
    forced_tool: bool,
    default_budget: int,
) -> dict[str, Any]:
    """Claude's ``thinking`` and ``output_config.effort`` for these options on this model,
    wherever Claude is reached (the Anthropic API, Bedrock's additional fields):
    adaptive thinking where the model takes it (and must, where it is the only form), a
    budget only where the model needs one; summarized thinking asked for where the model
    would otherwise omit it; effort levels the model has."""
    fields: dict[str, Any] = {}
    modes = caps.thinking
    if o.thinking is False:
        if o.thinking_budget:
            raise refuse("thinking_budget", preset, "thinking=False turns thinking off; drop the budget or the False")
        if o.thinking_display is not None:
            raise refuse(
                "thinking_display", preset, "thinking=False turns thinking off; there is nothing to show", model=model
            )
        if caps.thinking_off is False:
            raise refuse("thinking", preset, "the model always thinks; thinking=False cannot be honoured", model=model)
        # Sonnet 5.5 refuses "disabled": its lowest setting, "between_tools", is what off means there.
        fields["thinking"] = {"type": caps.thinking_off_as or "disabled"}
    elif o.thinking or o.thinking_budget:
        if modes == ():
            raise refuse(
                "thinking" if o.thinking else "thinking_budget",
                preset,
                "the model does not think; choose a model that does",
                model=model,
            )
        thinking: dict[str, Any]
        if o.thinking_budget or modes is None or "adaptive" not in modes:
            thinking = _budget(
                o, preset, model, caps, max_tokens, forced_tool=forced_tool, default_budget=default_budget
            )
        else:
            thinking = {"type": "adaptive"}
        display = o.thinking_display or ("summarized" if caps.display_default == "omitted" else None)
        if display is not None:
            thinking["display"] = display
        fields["thinking"] = thinking
    elif o.thinking_display is not None:
        if caps.thinking_off is not False and caps.thinking_default is not True:
            raise refuse(
                "thinking_display",
                preset,
                "it says how thinking is shown; turn thinking on with thinking=True",
                model=model,
            )
        # A model that thinks unasked: how its thinking is shown can be asked on its own.
        fields["thinking"] = {"type": "adaptive", "display": o.thinking_display}
    if o.reasoning_effort is not None:
        fields["output_config"] = {"effort": check_effort(o.reasoning_effort, caps, preset, model, EFFORTS)}
    return fields
