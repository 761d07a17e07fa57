"""A function tool as every formatter reads it (its own module: the id and name rules of
``_toolids`` read it too, below the walk that uses them)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import FormatError


@dataclass
class ToolSpec:
    """A tool the model may call: its name, a description and a JSON schema for its arguments.

    ``defer``: the tool is not loaded into the model's context up front; the provider's own
    tool search finds it when the model needs it (an agent with hundreds of tools). Where the
    provider has no tool search, a deferred tool is sent as usual, with a note.
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool | None = None
    defer: bool = False

    @classmethod
    def coerce(cls, tool: Any) -> "ToolSpec":
        """Accept a ToolSpec, or a tool definition in OpenAI Chat, OpenAI Responses or
        Anthropic shape, or a plain ``{name, description, parameters}`` dict."""
        if isinstance(tool, ToolSpec):
            return tool
        if hasattr(tool, "tool_spec"):  # agent tools describe themselves
            spec: ToolSpec = tool.tool_spec()
            return spec
        if not isinstance(tool, dict):
            raise FormatError(None, f"a tool must be a ToolSpec or a dict, not {type(tool).__name__}")
        if isinstance(tool.get("function"), dict):
            tool = tool["function"]
        schema = tool.get("parameters", tool.get("input_schema"))
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            raise FormatError(None, f"a tool definition needs a name: {json.dumps(tool, default=str)[:120]}")
        if schema is not None and not isinstance(schema, dict):
            raise FormatError(
                None, f"tool {tool['name']!r}: its parameters must be a JSON schema object, not {type(schema).__name__}"
            )
        if not isinstance(tool.get("description") or "", str):
            raise FormatError(None, f"tool {tool['name']!r}: its description must be a string")
        return cls(
            name=tool["name"],
            description=tool.get("description") or "",
            parameters=schema if schema is not None else {"type": "object", "properties": {}},
            strict=tool.get("strict"),
            defer=bool(tool.get("defer_loading") or tool.get("defer")),
        )


def sent_undeferred(specs: list[ToolSpec], protocol: str) -> None:
    """Note deferred tools a target without tool search gets as usual (all in its context)."""
    deferred = [s.name for s in specs if s.defer]
    if deferred:
        import logging

        logging.getLogger("modelwire.formatters").info(
            "%s has no tool search: %d deferred tool(s) sent as usual (%s)",
            protocol,
            len(deferred),
            ", ".join(deferred[:5]) + (" ..." if len(deferred) > 5 else ""),
        )


def function_tool(spec: ToolSpec) -> dict[str, Any]:
    """``spec`` as a ``{"type": "function", "function": {name, description, parameters}}``
    tool, the shape Ollama and Cohere take (no ``strict``: neither reads one)."""
    function: dict[str, Any] = {"name": spec.name, "parameters": spec.parameters}
    if spec.description:
        function["description"] = spec.description
    return {"type": "function", "function": function}
