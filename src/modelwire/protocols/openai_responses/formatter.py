"""Messages -> an OpenAI Responses request (``input`` items), without ``model`` and
sampling options, which the models layer adds.

Rules:

- system messages as ``system`` / ``developer`` message items, or, with
  ``instructions=True``, the leading ones as the top-level ``instructions``;
- user messages as ``message`` items with ``input_text``, ``input_image`` (data URI or
  URL) and ``input_file`` (base64 ``file_data`` or ``file_url``) parts;
- prior assistant output as ``message`` items with ``output_text`` (and ``refusal``) parts;
- tool calls as ``function_call`` items (``custom_tool_call`` for custom tools) and their
  results as ``function_call_output`` items, whose output may be text or a list of
  ``input_text`` / ``input_image`` / ``input_file`` parts;
- reasoning from the same provider's Responses API is replayed as ``reasoning`` items, with
  their id, summary (or raw ``reasoning_text``) and ``encrypted_content`` (from
  ``reasoning_item_raw``), in their original position; a reasoning item AgentScope wrote
  (``reasoning_item_raw`` without modelwire's part markers) is replayed whole, once; other
  thinking is dropped, or sent as text with ``thinking_as_text=True``;
- server-side items (``web_search_call`` ...) and other items kept whole by the adapter
  are replayed as they came. Item ids of replayed output are sent unless
  ``item_ids=False``.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Sequence

from ...errors import FormatError
from ...message import Msg
from ...formatters import (
    Formatter,
    Segment,
    Turns,
    is_raw_provider_block,
    ToolSpec,
    sent_source,
    file_ref,
    data_uri,
    raw_provider_block,
    replays_natively,
    result_blocks,
    tool_choice_name,
    tool_specs,
    ServerTool,
    refuse_server_tool,
    split_server_tools,
)

from ...formatters._toolids import IdRules
from ..openai_chat.formatter import TOOL_IDS, TOOL_NAMES  # the same rules on OpenAI's two APIs
from . import PROTOCOL as _WIRE

__all__ = ["OpenAIResponsesFormatter", "format_openai_responses"]
_NONE: Any = MappingProxyType({})  # the extras of a block that has none

PROTOCOL = _WIRE.name
# The levels a configuration_update item takes (the openai SDK's ReasoningEffort).
ITEM_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
SCOPE = _WIRE.replay_scope


class OpenAIResponsesFormatter(Formatter):
    protocol = PROTOCOL
    tool_id_rules: IdRules | None = TOOL_IDS
    tool_name_rules: IdRules | None = TOOL_NAMES
    takes_effort_change = True  # a configuration_update item (see _configuration_update)

    @staticmethod
    def needs_inline(media_type: str) -> bool:
        """Whether an http(s) source of this media type must be sent as base64: never,
        images go as ``image_url`` and files as ``file_url``."""
        return False

    def __init__(
        self,
        *,
        provider: str | None = None,
        system_role: str = "system",
        instructions: bool = False,
        item_ids: bool = True,
        thinking_as_text: bool = False,
        speaker_names: bool = False,
        assistant_name: str | None = None,
    ) -> None:
        if system_role not in ("system", "developer"):
            raise ValueError("system_role is 'system' or 'developer'")
        super().__init__(provider=provider, speaker_names=speaker_names, assistant_name=assistant_name)
        self.system_role = system_role
        self.instructions = instructions
        self.item_ids = item_ids
        self.thinking_as_text = thinking_as_text

    payload_turns = "input"

    def take(self, acc: Turns, seg: Segment) -> None:
        items = acc.turns
        if seg.kind == "system":
            text = "\n\n".join(b.text for b in seg.blocks if b.text)
            if text and self.instructions and not items:
                acc.system.append(text)  # what comes before any item is the instructions
            elif text:
                items.append({"type": "message", "role": self.system_role, "content": text})
            if any(b.type == "effort_change" for b in seg.blocks):
                items.append(self._configuration_update(seg, bool(items)))
        elif seg.kind == "user":
            content = []
            for b in seg.blocks:
                if b.type == "text":  # _input_part(), inlined for text: most of a user turn
                    if b.text:
                        content.append({"type": "input_text", "text": b.text})
                else:
                    content += self._input_part(b, seg.index_of(b))
            if content:
                items.append({"type": "message", "role": "user", "content": content})
        elif seg.kind == "assistant":
            items += self._assistant(seg)
        else:
            for r in seg.blocks:
                output = r.output
                if isinstance(output, str) and output:  # the usual result, as _result() sends it
                    items.append({"type": "function_call_output", "call_id": r.id, "output": output})
                else:
                    items.append(self._result(r, seg.index_of(r)))

    def _configuration_update(self, seg: Segment, after_items: bool) -> dict[str, Any]:
        """The effort change a system segment carries (see EffortChange), as the input item
        that changes the effort from here on without changing the cached prefix (the openai
        SDK's ResponseConfigurationUpdateItemParamParam: "Each setting stays in effect until a
        later update replaces it")."""
        level = next(b.level for b in reversed(seg.blocks) if b.type == "effort_change")
        if not after_items:
            raise FormatError(
                seg.index,
                "an effort change before the first item: set reasoning_effort for the call instead",
                PROTOCOL,
                code="effort-change",
            )
        if level not in ITEM_EFFORTS:
            raise FormatError(
                seg.index, f"effort {level!r}: the Responses API takes {', '.join(ITEM_EFFORTS)}", PROTOCOL
            )
        return {"type": "configuration_update", "reasoning": {"effort": level}}

    def tool_fields(self, tools: Sequence[Any] | None, tool_choice: Any) -> dict[str, Any]:
        server, tools = split_server_tools(tools)
        fields: dict[str, Any] = {}
        _tools(fields, tool_specs(tools), server, tool_choice)
        return fields

    def assemble(self, acc: Turns, fields: dict[str, Any]) -> dict[str, Any]:
        payload: dict[str, Any] = {}
        if acc.system:
            payload["instructions"] = "\n\n".join(acc.system)
        payload["input"] = acc.turns
        payload.update(fields)
        return payload

    def _input_part(self, block: Any, index: int) -> list[dict[str, Any]]:
        if block.type == "text":
            return [{"type": "input_text", "text": block.text}] if block.text else []
        if block.type == "data":
            if is_raw_provider_block(block):  # a part a compacted window kept whole
                raw = raw_provider_block(block, PROTOCOL, self.provider, scope=SCOPE, endpoint=self.endpoint)
                if raw is None:
                    raise FormatError(
                        index,
                        f"a user part another endpoint kept ({block.provider_block_type}) cannot go here",
                        PROTOCOL,
                    )
                return [raw]
            return [input_media(block, index, self.endpoint)]
        raise FormatError(index, f"a {block.type!r} block cannot be sent as user input", PROTOCOL)

    def _assistant(self, seg: Any) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        message: dict[str, Any] | None = None  # the output message being filled
        reasoning: dict[str, Any] | None = None  # the reasoning item being filled
        replayed_raw: set[str] = set()  # reasoning items sent verbatim (AgentScope's way)

        for block in seg.blocks:
            btype = block.type
            extras = getattr(
                block, "__dict__", _NONE
            )  # extras_of(), inlined: read once per block, several of its extras decide
            if btype == "thinking":
                message, reasoning = self._thought(block, extras, items, message, reasoning, replayed_raw)
                continue
            reasoning = None
            if btype == "text":
                if (
                    block.text and not extras and (message is None or "id" in message)
                ):  # the usual text, as _output_text() sends it
                    message = {"type": "message", "role": "assistant", "content": block.text}
                    items.append(message)
                elif block.text:
                    item_id = extras.get("item_id") if self.item_ids else None
                    annotations = extras.get("annotations") or []
                    message = self._output_text(
                        items, message, block.text, item_id, bool(extras.get("refusal", False)), annotations
                    )
                continue
            message = None
            if btype == "tool_call" and not extras:  # the usual call, as _item() sends it
                items.append(
                    {"type": "function_call", "call_id": block.id, "name": block.name, "arguments": block.input or "{}"}
                )
                continue
            item = self._item(block, extras, seg)
            if item:
                items.append(item)
        return _reasoning_first(items)

    def _thought(
        self,
        block: Any,
        extras: Any,
        items: list[dict[str, Any]],
        message: dict[str, Any] | None,
        reasoning: dict[str, Any] | None,
        replayed_raw: set[str],
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """A thinking block of the turn: its reasoning item where this endpoint made it, as
        text when ``thinking_as_text``, else nothing; the output message and the reasoning
        item being filled after it."""
        raw = extras.get("reasoning_item_raw")
        if not isinstance(raw, dict):
            raw = {}
        rid = extras.get("reasoning_item_id") or raw.get("id")
        if rid and self._native(block):
            reasoning, began = self._reasoning(block, extras, rid, raw, items, reasoning, replayed_raw)
            return (None if began else message), reasoning
        if self.thinking_as_text and block.thinking:
            message = self._output_text(items, message, f"<thinking>\n{block.thinking}\n</thinking>", None, False, [])
        return message, reasoning

    def _reasoning(
        self,
        block: Any,
        extras: Any,
        rid: str,
        raw: dict[str, Any],
        items: list[dict[str, Any]],
        reasoning: dict[str, Any] | None,
        replayed_raw: set[str],
    ) -> tuple[dict[str, Any] | None, bool]:
        """A thinking block this endpoint made, into its reasoning item: the reasoning item
        being filled after it, and whether an item began (which ends the output message)."""
        part = extras.get("reasoning_part")
        if part is None and raw.get("id") == rid and raw.get("type") == "reasoning":
            # Written by AgentScope: the whole item is the truth, sent once.
            if rid not in replayed_raw:
                replayed_raw.add(rid)
                items.append({k: v for k, v in raw.items() if v is not None})
            return None, True
        began = reasoning is None or reasoning["id"] != rid
        if reasoning is None or began:
            reasoning = {"type": "reasoning", "id": rid, "summary": []}
            items.append(reasoning)
        encrypted = extras.get("encrypted_content") or raw.get("encrypted_content")
        if encrypted:
            reasoning["encrypted_content"] = encrypted
        if part == "content":
            reasoning.setdefault("content", []).append({"type": "reasoning_text", "text": block.thinking})
        elif block.thinking:  # an item with no summary came as one empty block
            reasoning["summary"].append({"type": "summary_text", "text": block.thinking})
        return reasoning, began

    def _item(self, block: Any, extras: Any, seg: Any) -> dict[str, Any] | None:
        """The input item of a tool call, a server-side result or a provider's raw block in
        the agent's turn (None: nothing is sent for it)."""
        if block.type == "tool_call":
            if extras.get("server_side", False):
                return None  # replayed through its result, which holds the whole item
            if extras.get("tool_type") == "custom_tool_call":
                item = {"type": "custom_tool_call", "call_id": block.id, "name": block.name, "input": block.input}
            else:
                item = {
                    "type": "function_call",
                    "call_id": block.id,
                    "name": block.name,
                    "arguments": block.input or "{}",
                }
            if self.item_ids and extras.get("item_id"):
                item["id"] = extras["item_id"]
            return item
        if block.type == "tool_result":
            return block.metadata.get("provider_block") if self._native(block) else None
        if block.type == "data":
            if is_raw_provider_block(block):
                return raw_provider_block(block, PROTOCOL, self.provider, scope=SCOPE, endpoint=self.endpoint)
            raise FormatError(
                seg.index_of(block), f"assistant output cannot carry {block.source.media_type} data", PROTOCOL
            )
        return None

    def _native(self, block: Any) -> bool:
        return replays_natively(block, PROTOCOL, self.provider, scope=SCOPE, endpoint=self.endpoint)

    @staticmethod
    def _output_text(
        items: list[dict[str, Any]],
        message: dict[str, Any] | None,
        text: str,
        item_id: str | None,
        refusal: bool,
        annotations: list[Any],
    ) -> dict[str, Any]:
        """Add text to the assistant message being built. Output that came with its item id
        is replayed as that output message (``output_text`` / ``refusal`` parts); other text
        goes in a plain assistant message, which the API takes without an id."""
        if item_id:
            if message is None or message.get("id") != item_id:
                message = {"type": "message", "id": item_id, "role": "assistant", "content": [], "status": "completed"}
                items.append(message)
            part = (
                {"type": "refusal", "refusal": text}
                if refusal
                else {"type": "output_text", "text": text, "annotations": list(annotations)}
            )
            message["content"].append(part)
            return message
        if message is None or "id" in message:
            message = {"type": "message", "role": "assistant", "content": text}
            items.append(message)
        else:
            message["content"] += "\n\n" + text
        return message

    def _result(self, result: Any, index: int) -> dict[str, Any]:
        output = result.output
        if isinstance(output, str):  # the usual result: its text as it is
            if result.state in ("denied", "interrupted") and not output:
                output = f"The tool call was {result.state}."
            return {"type": "function_call_output", "call_id": result.id, "output": output}
        pieces = result_blocks(result)
        texts: list[str] | None = []
        for p in pieces:  # text alone is sent as one string
            if p.type != "text":
                texts = None
                break
            texts.append(p.text)  # type: ignore[union-attr]
        if texts is not None:
            output = "".join(texts)
        else:
            output = []
            for p in pieces:
                if p.type == "text":
                    if p.text:
                        output.append({"type": "input_text", "text": p.text})
                else:
                    output.append(input_media(p, index, self.endpoint))
        if result.state in ("denied", "interrupted") and not output:
            output = f"The tool call was {result.state}."
        return {"type": "function_call_output", "call_id": result.id, "output": output}


def server_tool(tool: ServerTool) -> dict[str, Any]:
    """A :class:`ServerTool` as a Responses tool: ``web_search`` (``allowed_domains`` as its
    filter, ``user_location``), ``code_execution`` as the code interpreter, ``mcp`` as the
    remote MCP tool (``url``, ``name``, ``allowed_tools``, ``headers``,
    ``authorization_token``, ``require_approval``: ``"never"`` unless given)."""
    if tool.raw is not None:
        return dict(tool.raw)
    config = dict(tool.config)
    if tool.kind == "web_search":
        out: dict[str, Any] = {"type": "web_search"}
        if "allowed_domains" in config:
            out["filters"] = {"allowed_domains": list(config.pop("allowed_domains"))}
        if "user_location" in config:
            out["user_location"] = {"type": "approximate", **config.pop("user_location")}
    elif tool.kind == "code_execution":
        out = {"type": "code_interpreter", "container": {"type": "auto"}}
    elif tool.kind == "tool_search":
        out = {"type": "tool_search"}  # hosted: OpenAI runs the search (the SDK's ToolSearchToolParam)
    elif tool.kind == "mcp":
        if not config.get("url") or not config.get("name"):
            raise refuse_server_tool(tool, PROTOCOL, "its mcp tool needs url and name")
        # Approval requests would wait for an answer the agent cannot give: the server
        # was declared by the user, so its calls run unless require_approval says otherwise.
        out = {
            "type": "mcp",
            "server_label": config.pop("name"),
            "server_url": config.pop("url"),
            "require_approval": config.pop("require_approval", "never"),
        }
        for ours, theirs in (
            ("allowed_tools", "allowed_tools"),
            ("headers", "headers"),
            ("authorization_token", "authorization"),
            ("description", "server_description"),
        ):
            if ours in config:
                value = config.pop(ours)
                out[theirs] = list(value) if ours == "allowed_tools" else (dict(value) if ours == "headers" else value)
    else:
        raise refuse_server_tool(
            tool,
            PROTOCOL,
            "it runs web_search, code_execution and mcp; or give its own definition as ServerTool(raw={...})",
        )
    if config:
        raise refuse_server_tool(tool, PROTOCOL, f"its {tool.kind} takes no {', '.join(sorted(config))}")
    return out


def _reasoning_first(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Reasoning before the output it belongs to. A turn that ends with reasoning (AgentScope
    stores the reasoning of a reply after its text and calls) has it moved before the items
    since the reasoning before it: the API refuses a reasoning item its output does not follow."""
    end = len(items)
    if not end or items[-1].get("type") != "reasoning":
        return items
    k = end
    while k and items[k - 1].get("type") == "reasoning":
        k -= 1
    start = k
    while start and items[start - 1].get("type") != "reasoning":
        start -= 1
    if start == k:
        return items
    return items[:start] + items[k:] + items[start:k]


def _tool(spec: ToolSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "function", "name": spec.name}
    if spec.description:
        out["description"] = spec.description
    out["parameters"] = spec.parameters
    out["strict"] = bool(spec.strict)  # the API wants it said; strict schemas are opt-in
    if spec.defer:
        out["defer_loading"] = True  # found by the tool search (the openai SDK's FunctionToolParam)
    return out


def input_media(block: Any, index: int, endpoint: str | None = None) -> dict[str, Any]:
    ref = file_ref(block, endpoint, "openai", index, PROTOCOL)
    if ref is not None:
        if block.source.media_type.split(";")[0].strip().lower().startswith("image/"):
            return {"type": "input_image", "file_id": ref, "detail": "auto"}
        return {"type": "input_file", "file_id": ref}
    kind, payload, media_type = sent_source(block, index, PROTOCOL)
    base = media_type.split(";")[0].strip().lower()
    if base.startswith("image/"):
        return {"type": "input_image", "image_url": data_uri(block), "detail": "auto"}
    if base == "application/pdf" or base.startswith("text/"):
        name = block.name or ("document.pdf" if base == "application/pdf" else "document.txt")
        if kind == "url" and not payload.startswith("data:"):
            return {"type": "input_file", "file_url": payload}
        return {"type": "input_file", "filename": name, "file_data": data_uri(block)}
    raise FormatError(
        index, f"OpenAI Responses takes images and files (PDF, text); {media_type!r} cannot be sent", PROTOCOL
    )


def format_openai_responses(
    messages: Sequence[Msg], tools: Sequence[Any] | None = None, tool_choice: Any = None, **options: Any
) -> dict[str, Any]:
    """Shortcut for ``OpenAIResponsesFormatter(**options).format(messages, tools, tool_choice)``."""
    return OpenAIResponsesFormatter(**options).format(messages, tools, tool_choice)


def _tools(payload: dict[str, Any], specs: list[Any], server: list[Any], tool_choice: Any) -> None:
    """The request's tools (functions and the provider's own) and tool choice."""
    if specs or server:
        payload["tools"] = [_tool(s) for s in specs] + [server_tool(t) for t in server]
        if any(s.defer for s in specs) and not any(t.get("type") == "tool_search" for t in payload["tools"]):
            payload["tools"].append({"type": "tool_search"})  # deferred tools are found by a search
    mode, name = tool_choice_name(tool_choice, specs)
    if mode is not None:
        payload["tool_choice"] = {"type": "function", "name": name} if mode == "tool" else mode
