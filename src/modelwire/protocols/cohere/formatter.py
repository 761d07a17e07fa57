"""Messages -> a Cohere v2 Chat request (``messages``, ``tools``, ``tool_choice``; the options
are added by the protocol).

Rules (https://docs.cohere.com/reference/chat, the official SDK's request types):

- system text -> ``{"role": "system", "content"}``; user text -> ``{"role": "user",
  "content"}``, a plain string, or a list of ``text`` and ``image_url`` parts when it holds
  images (a data URI or a web URL); other media is refused, Cohere has no part for it;
- an assistant turn -> ``content`` (``text`` parts, and its own ``thinking`` parts back
  where Cohere made them), its tool plan back in ``tool_plan``, and ``tool_calls`` as
  ``{"id", "type": "function", "function": {"name", "arguments"}}`` (arguments as JSON text);
- a tool result -> ``{"role": "tool", "tool_call_id", "content": [{"type": "text"}]}``, one
  message per result, in the order of the calls;
- tool choice: ``required`` -> ``REQUIRED``, ``none`` -> ``NONE``; a named tool cannot be
  forced (Cohere takes no name) and is refused.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from ...errors import FormatError
from ...formatters import (
    sent_undeferred,
    MessagesFormatter,
    function_tool,
    Segment,
    Turns,
    sent_source,
    data_uri,
    extra,
    file_ref,
    is_raw_provider_block,
    origin_replays,
    parse_arguments,
    raw_server_tools,
    result_blocks,
    tool_choice_name,
    tool_specs,
)
from ...message import Msg, origin
from . import PROTOCOL as _WIRE

__all__ = ["CohereFormatter", "format_cohere"]

PROTOCOL = _WIRE.name
SCOPE = _WIRE.replay_scope


class CohereFormatter(MessagesFormatter):
    protocol = PROTOCOL

    def __init__(
        self,
        *,
        provider: str | None = None,
        thinking_as_text: bool = False,
        speaker_names: bool = False,
        assistant_name: str | None = None,
    ) -> None:
        super().__init__(provider=provider, speaker_names=speaker_names, assistant_name=assistant_name)
        self.thinking_as_text = thinking_as_text

    def tool_fields(self, tools: Sequence[Any] | None, tool_choice: Any) -> dict[str, Any]:
        raw, tools = raw_server_tools(tools, PROTOCOL, "Cohere runs no server tools")
        specs = tool_specs(tools)
        sent_undeferred(specs, PROTOCOL)
        fields: dict[str, Any] = {}
        mode, name = tool_choice_name(tool_choice, specs)
        if mode == "tool":
            raise FormatError(
                None,
                f"Cohere cannot force one tool ({name!r}); use tool_choice='required' (any tool) or 'auto'",
                PROTOCOL,
                code="unsupported-option",
            )
        if specs or raw:
            fields["tools"] = [function_tool(s) for s in specs] + raw
            if mode in ("required", "none"):
                fields["tool_choice"] = mode.upper()
        return fields

    def assemble(self, acc: Turns, fields: dict[str, Any]) -> dict[str, Any]:
        return {"messages": acc.turns, **fields}

    def _user(self, seg: Segment) -> dict[str, Any] | None:
        parts: list[dict[str, Any]] = []
        for block in seg.blocks:
            if block.type == "text":
                if block.text:
                    parts.append({"type": "text", "text": block.text})
            elif block.type == "data":
                parts.append(_image(block, seg.index_of(block), self.endpoint))
            else:
                raise FormatError(
                    seg.index_of(block), f"a {block.type!r} block cannot be sent in a user message", PROTOCOL
                )
        if not parts:
            return None
        if all(p["type"] == "text" for p in parts):
            return {"role": "user", "content": "\n\n".join(p["text"] for p in parts)}
        return {"role": "user", "content": parts}

    def _replays(self, block: Any) -> bool:
        found = origin(block)
        return found is None or origin_replays(found, PROTOCOL, self.provider, scope=SCOPE, endpoint=self.endpoint)

    def _assistant(self, seg: Segment) -> dict[str, Any] | None:
        content: list[dict[str, Any]] = []
        plan: list[str] = []
        calls: list[dict[str, Any]] = []
        for block in seg.blocks:
            btype = block.type
            if btype == "text":
                if block.text:
                    content.append({"type": "text", "text": block.text})
            elif btype == "thinking":
                if not block.thinking:
                    continue
                if self._replays(block):
                    if extra(block, "tool_plan", False):
                        plan.append(block.thinking)
                    else:
                        content.append({"type": "thinking", "thinking": block.thinking})
                elif self.thinking_as_text:
                    content.append({"type": "text", "text": f"<think>\n{block.thinking}\n</think>"})
            elif btype == "tool_call":
                if extra(block, "server_side", False):
                    continue  # another provider ran it; its answer carries what it found
                arguments = json.dumps(parse_arguments(block), ensure_ascii=False)
                calls.append(
                    {"id": block.id, "type": "function", "function": {"name": block.name, "arguments": arguments}}
                )
            elif btype == "tool_result" or (btype == "data" and is_raw_provider_block(block)):
                continue  # another provider's own items
            else:
                raise FormatError(
                    seg.index_of(block), f"an assistant message cannot carry a {btype!r} block for Cohere", PROTOCOL
                )
        if not (content or plan or calls):
            return None
        msg: dict[str, Any] = {"role": "assistant"}
        if content:
            msg["content"] = content
        if plan:
            msg["tool_plan"] = "".join(plan)
        if calls:
            msg["tool_calls"] = calls
        return msg

    def _result(self, result: Any, index: int) -> dict[str, Any]:
        parts: list[dict[str, Any]] = []
        for piece in result_blocks(result):
            if piece.type == "text":
                parts.append({"type": "text", "text": piece.text})
            else:
                raise FormatError(
                    index,
                    f"Cohere takes a tool's result as text or documents, not {piece.source.media_type}",
                    PROTOCOL,
                    code="unsupported-media",
                )
        if not any(p["text"] for p in parts):
            text = f"The tool call was {result.state}." if result.state in ("denied", "interrupted") else ""
            parts = [{"type": "text", "text": text}]
        return {"role": "tool", "tool_call_id": result.id, "content": parts}


def _image(block: Any, index: int, endpoint: str | None = None) -> dict[str, Any]:
    file_ref(block, endpoint, None, index, PROTOCOL)  # Cohere holds no file: a reference is refused, saying what to do
    _, _, media_type = sent_source(block, index, PROTOCOL)
    if not media_type.split(";")[0].strip().lower().startswith("image/"):
        raise FormatError(index, f"Cohere takes images only, not {media_type}", PROTOCOL, code="unsupported-media")
    return {"type": "image_url", "image_url": {"url": data_uri(block)}}


def format_cohere(
    messages: Sequence[Msg], tools: Sequence[Any] | None = None, tool_choice: Any = None, **options: Any
) -> dict[str, Any]:
    """Shortcut for ``CohereFormatter(**options).format(messages, tools, tool_choice)``."""
    return CohereFormatter(**options).format(messages, tools, tool_choice)
