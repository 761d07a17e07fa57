"""What a request needs beside its formatter's payload: whether building it depends on the
model's capabilities, the strict-schema check, the conversation a cassette keeps of it, and
(in debug mode) the check that a body built on a draft is the one a full format gives."""

from __future__ import annotations

import json
from typing import Any, Sequence

from ..errors import UnsupportedOptionError
from ..formatters import ServerTool, ToolSpec
from ..message import Msg
from ..protocols import ModelOptions
from ._body import encode_body

__all__ = ["check_strict_tools", "conversation", "depends_on_capabilities", "same_as_full"]


def depends_on_capabilities(opts: ModelOptions, tools: Any, tool_choice: Any) -> bool:
    """Whether the request for these options differs from model to model (else the
    capability lookup is not worth its time)."""
    shaped = (
        opts.thinking,
        opts.thinking_budget,
        opts.reasoning_effort,
        opts.thinking_display,
        opts.json_schema,
        opts.temperature,
        opts.top_p,
    )
    return any(v is not None for v in shaped) or bool(tools and tool_choice not in (None, "auto", "none"))


def same_as_full(payload: dict[str, Any], fmt: Any, messages: Sequence[Msg], tools: Any, tool_choice: Any) -> None:
    """With ``MODELWIRE_DEBUG=1`` (the tests), a payload built on a draft is checked against
    a full format of the same messages."""
    full = fmt.format(messages, tools, tool_choice)
    if encode_body(full) != encode_body(payload):
        raise AssertionError(f"a {fmt.protocol} payload built on a draft differs from a full format")  # a bug here


def conversation(
    messages: Sequence[Msg], tools: Sequence[Any] | None, tool_choice: Any, opts: ModelOptions
) -> dict[str, Any]:
    """A call's conversation as a cassette keeps it: the messages in modelwire's JSON form
    (times left out, so a recording made again reads the same), the tools, the tool choice,
    and the options that were set."""
    from dataclasses import asdict

    def timeless(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: timeless(v) for k, v in value.items() if k not in ("created_at", "finished_at")}
        if isinstance(value, list):
            return [timeless(v) for v in value]
        return value

    options = {
        k: v for k, v in asdict(opts).items() if v not in (None, {}, [], "output") and k not in ("extra_headers",)
    }

    def message(msg: Msg) -> dict[str, Any]:
        data: dict[str, Any] = timeless(msg.to_dict())
        data.pop("id", None)  # made afresh for each object: not part of the conversation
        for block in data.get("content") or ():
            if isinstance(block, dict) and block.get("type") not in ("tool_call", "tool_result"):
                block.pop("id", None)  # (a call's id pairs it with its result: kept)
        return data

    return {
        "messages": [message(m) for m in messages],
        "tools": [
            {"server_tool": t.kind, "config": t.config, "raw": t.raw}
            if isinstance(t, ServerTool)
            else asdict(ToolSpec.coerce(t))
            for t in tools or ()
        ],
        "tool_choice": tool_choice,
        "options": json.loads(json.dumps(options, default=str)),
    }


def check_strict_tools(tools: Sequence[Any], refused: Sequence[str], provider: str, model: str) -> None:
    """Refuse a strict tool whose schema holds a keyword the provider's strict mode refuses
    (the schema is the caller's: it is not changed behind its back)."""
    for given in tools:
        spec = ToolSpec.coerce(given)
        if spec.strict is not True:
            continue
        path = _keyword_in(spec.parameters, frozenset(refused), "parameters")
        if path is not None:
            raise UnsupportedOptionError(
                "tools",
                provider,
                f"tool {spec.name!r}: strict mode on this model refuses {path}; remove it, or set strict=False",
                model=model,
            )


def _keyword_in(node: Any, refused: frozenset[str], path: str) -> str | None:
    """Where the first of the ``refused`` keywords is in a JSON schema (property names are
    not keywords), or None."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            found = _keyword_in(item, refused, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    if not isinstance(node, dict):
        return None
    for key, value in node.items():
        if key in refused and not (key == "default" and value is None):  # a null default is taken
            return f"{key!r} at {path}"
        if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(value, dict):
            found = next(
                (
                    f
                    for name, sub in value.items()
                    if (f := _keyword_in(sub, refused, f"{path}.{key}.{name}")) is not None
                ),
                None,
            )
        else:
            found = _keyword_in(value, refused, f"{path}.{key}")
        if found is not None:
            return found
    return None
