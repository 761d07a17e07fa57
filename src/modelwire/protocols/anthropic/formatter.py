"""Messages -> an Anthropic Messages request (``POST /v1/messages``), without ``model`` /
``max_tokens`` / sampling options, which the models layer adds.

Rules:

- system messages go to the top-level ``system`` (a list of text blocks);
- user and assistant turns alternate: consecutive content of one role is merged, in order;
- an assistant message's tool calls become ``tool_use`` blocks (``input`` parsed), and their
  results become ``tool_result`` blocks at the start of the very next user turn, all the
  results of one turn together, in call order, ``is_error`` for error / denied /
  interrupted results;
- thinking is replayed (``thinking`` + ``signature``, or ``redacted_thinking``) only when it
  came from this protocol (see ``modelwire.message.origin``: modelwire's provenance, or
  AgentScope's ``signature`` / ``redacted_thinking_data``); other thinking is dropped, or
  sent as text with ``thinking_as_text=True``;
- server tool blocks (``server_tool_use`` and their ``*_tool_result``) and other Anthropic
  blocks kept whole by the adapter are replayed as they came;
- empty text blocks are never sent;
- images (jpeg, png, gif, webp), PDFs and plain-text documents, as base64 or URL sources,
  also inside tool results. ``file://`` sources must be resolved to base64 first (the
  models layer does it); other media types are an error;
- prompt caching: ``cache_control`` on the system prompt, the tools and the last N user
  turns, as asked, within Anthropic's limit of four breakpoints.
"""

from __future__ import annotations

import base64
from types import MappingProxyType
from typing import Any, Mapping, Sequence
from urllib.parse import unquote_to_bytes

from ..._record import extras_of
from ...errors import FormatError
from ...message import Msg
from ...formatters import (
    Formatter,
    merge_turn,
    is_raw_provider_block,
    ToolSpec,
    sent_source,
    file_ref,
    parse_arguments,
    raw_provider_block,
    replays_natively,
    result_blocks,
    Segment,
    Turns,
    tool_choice_name,
    tool_specs,
    ServerTool,
    refuse_server_tool,
    split_server_tools,
)

from ...formatters._toolids import IdRules
from . import PROTOCOL as _WIRE
from ._body import IMAGE_TYPES, MAX_CACHE_BREAKPOINTS

__all__ = ["AnthropicFormatter", "format_anthropic", "MAX_CACHE_BREAKPOINTS"]

PROTOCOL = _WIRE.name
SCOPE = _WIRE.replay_scope
_EPHEMERAL = {"type": "ephemeral"}
_NONE: Mapping[str, Any] = MappingProxyType({})  # the extras of a block that has none


# tool_use ids: ^[a-zA-Z0-9_-]+$; tool names: ^[a-zA-Z0-9_-]{1,64}$.
# The levels a system message's output_config.effort takes (the anthropic SDK's
# BetaSystemMessageOutputConfigParam.effort).
MESSAGE_EFFORTS = ("low", "medium", "high", "xhigh", "max")

TOOL_IDS = IdRules(allowed="A-Za-z0-9_-", max_len=256)
TOOL_NAMES = IdRules(allowed="A-Za-z0-9_-", max_len=64)


class AnthropicFormatter(Formatter):
    system_in_place = False  # system messages join the top-level system prompt
    takes_effort_change = True  # a system message with its output_config (see _system)
    tool_id_rules: IdRules | None = TOOL_IDS
    tool_name_rules: IdRules | None = TOOL_NAMES
    protocol = PROTOCOL

    @staticmethod
    def needs_inline(media_type: str) -> bool:
        """Whether an http(s) source of this media type must be sent as base64 (the
        models layer fetches it first): Anthropic fetches images and PDFs itself."""
        base = media_type.split(";")[0].strip().lower()
        return not (base.startswith("image/") or base == "application/pdf")

    def __init__(
        self,
        *,
        provider: str | None = None,
        thinking_as_text: bool = False,
        speaker_names: bool = False,
        assistant_name: str | None = None,
        cache_system: bool = False,
        cache_tools: bool = False,
        cache_last_turns: int = 0,
    ) -> None:
        super().__init__(provider=provider, speaker_names=speaker_names, assistant_name=assistant_name)
        self.thinking_as_text = thinking_as_text
        self.cache_system = cache_system
        self.cache_tools = cache_tools
        self.cache_last_turns = cache_last_turns

    payload_turns = "messages"
    turn_content = "content"

    def take(self, acc: Turns, seg: Segment) -> None:
        if seg.kind == "system":
            self._system(acc, seg)
            return
        content: list[dict[str, Any]] = []
        if seg.kind == "assistant":
            role = "assistant"
            for b in seg.blocks:
                btype = b.type
                if btype == "text" and not b.__dict__:  # the usual text (no citations): inlined
                    if b.text:
                        content.append({"type": "text", "text": b.text})
                elif btype == "tool_call" and not b.__dict__:  # the usual client call: inlined
                    content.append({"type": "tool_use", "id": b.id, "name": b.name, "input": parse_arguments(b)})
                else:
                    self._assistant_block(b, seg, content)
        elif seg.kind == "results":
            role = "user"
            for b in seg.blocks:
                self._result(b, seg, content)
        else:
            role = "user"
            for b in seg.blocks:
                if b.type == "text":  # _user_block(), inlined for text: most of a user turn
                    if b.text:
                        content.append({"type": "text", "text": b.text})
                else:
                    self._user_block(b, seg, content)
        merge_turn(acc.turns, role, content, after_results=_after_results if seg.kind == "results" else None)

    def _system(self, acc: Turns, seg: Segment) -> None:
        """A system segment: where the model takes it (see system_messages), a system
        message where it is, with the effort change it carries in its ``output_config``
        (https://platform.claude.com/docs/en/build-with-claude/effort-per-message: "a
        role: system message ... with empty content and the new effort level in
        output_config.effort"); else joined to the system prompt at the top."""
        parts = [{"type": "text", "text": b.text} for b in seg.blocks if b.text]
        changes = [b for b in seg.blocks if b.type == "effort_change"]
        if changes:
            level = changes[-1].level
            if not acc.turns:
                raise FormatError(
                    seg.index,
                    "an effort change before the first turn: set reasoning_effort for the call instead",
                    PROTOCOL,
                    code="effort-change",
                )
            if level not in MESSAGE_EFFORTS:
                raise FormatError(
                    seg.index,
                    f"effort {level!r} cannot change in mid-conversation; Claude takes {', '.join(MESSAGE_EFFORTS)}",
                    PROTOCOL,
                    code="effort-change",
                )
            if not self.system_in_place:  # the text joins the top, the change stays where it is
                acc.system += parts
                parts = []
            # A message of its own, never merged: its output_config is the change.
            acc.turns.append({"role": "system", "content": parts, "output_config": {"effort": level}})
        elif self.system_in_place and acc.turns:
            if parts:
                merge_turn(acc.turns, "system", parts)
        else:
            acc.system += parts

    def tool_fields(self, tools: Sequence[Any] | None, tool_choice: Any) -> dict[str, Any]:
        server, tools = split_server_tools(tools)
        fields: dict[str, Any] = {}
        _tools(fields, tool_specs(tools), server, tool_choice)
        return fields

    def assemble(self, acc: Turns, fields: dict[str, Any]) -> dict[str, Any]:
        payload: dict[str, Any] = {}
        if acc.system:
            payload["system"] = acc.system
        payload["messages"] = acc.turns
        payload.update(fields)
        self._cache(payload)
        return payload

    # -- blocks -----------------------------------------------------------------------------

    def _user_block(self, block: Any, seg: Segment, out: list[dict[str, Any]]) -> None:
        if block.type == "text":
            if block.text:
                out.append({"type": "text", "text": block.text})
        elif block.type == "data":
            out.append(media_block(block, seg.index_of(block), self.endpoint))
        else:
            raise FormatError(seg.index_of(block), f"a {block.type!r} block cannot be sent in a user turn", PROTOCOL)

    def _assistant_block(self, block: Any, seg: Segment, out: list[dict[str, Any]]) -> None:
        btype = block.type
        extras = extras_of(block) or _NONE
        if btype == "text":
            if block.text:
                part: dict[str, Any] = {"type": "text", "text": block.text}
                if extras.get("citations"):
                    part["citations"] = extras["citations"]
                out.append(part)
        elif btype == "thinking":
            signed = _signed_thinking(block, extras)  # None: nothing to replay, whatever made it
            if signed is not None and not self._native(block):
                signed = None
            if signed is not None:
                out.append(signed)
            elif self.thinking_as_text and block.thinking:
                out.append({"type": "text", "text": f"<thinking>\n{block.thinking}\n</thinking>"})
        elif btype == "tool_call":
            if not extras.get("server_side", False):
                out.append({"type": "tool_use", "id": block.id, "name": block.name, "input": parse_arguments(block)})
            elif self._native(block):  # a server tool's call: only one Anthropic ran can be replayed
                out.append(_server_call(block, extras))
        elif btype == "tool_result":  # a server tool's result, kept whole by the adapter
            raw = block.metadata.get("provider_block") if self._native(block) else None
            if raw:
                out.append(raw)
        elif btype == "data":
            if not is_raw_provider_block(block):
                raise FormatError(
                    seg.index_of(block),
                    f"an assistant turn cannot carry {block.source.media_type} data for Anthropic",
                    PROTOCOL,
                )
            raw = raw_provider_block(block, PROTOCOL, self.provider, scope=SCOPE, endpoint=self.endpoint)
            if raw:
                out.append(raw)
        else:
            raise FormatError(seg.index_of(block), f"a {btype!r} block cannot be sent in an assistant turn", PROTOCOL)

    def _native(self, block: Any) -> bool:
        return replays_natively(
            block, PROTOCOL, self.provider, scope=SCOPE, endpoint=self.endpoint, model=self.model, account=self.account
        )

    def _result(self, block: Any, seg: Segment, turn: list[dict[str, Any]]) -> None:
        out: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.id}
        turn.append(out)
        if isinstance(block.output, str):
            if block.output:
                out["content"] = block.output
        else:
            content = []
            for piece in result_blocks(block):
                if piece.type == "text":
                    if piece.text:
                        content.append({"type": "text", "text": piece.text})
                else:
                    content.append(media_block(piece, seg.index_of(block), self.endpoint))
            if content:
                out["content"] = content
        if block.state in ("error", "denied", "interrupted"):
            out["is_error"] = True

    # -- prompt caching -----------------------------------------------------------------------

    def _cache(self, payload: dict[str, Any]) -> None:
        wanted = int(self.cache_system and bool(payload.get("system"))) + int(
            self.cache_tools and bool(payload.get("tools"))
        )
        turns = payload["messages"]
        marked: list[int] = []  # where the last cache_last_turns user turns are: read from the end, no walk
        k = len(turns)
        while k and len(marked) < self.cache_last_turns:
            k -= 1
            if turns[k]["role"] == "user":
                marked.append(k)
        last = len(marked)
        if wanted + last > MAX_CACHE_BREAKPOINTS:
            raise FormatError(
                None,
                f"{wanted + last} cache breakpoints asked for (system, tools, last {self.cache_last_turns} user turns);"
                f" Anthropic allows {MAX_CACHE_BREAKPOINTS}",
                PROTOCOL,
                code="cache-breakpoints",
            )
        # Marks go on copies: the turns and system parts may be a draft's (see Formatter.finish).
        if self.cache_system and payload.get("system"):
            system = payload["system"] = list(payload["system"])
            system[-1] = {**system[-1], "cache_control": dict(_EPHEMERAL)}
        if self.cache_tools and payload.get("tools"):
            tools = payload["tools"]  # the payload's own list; its items a draft's, for every request
            tools[-1] = {**tools[-1], "cache_control": dict(_EPHEMERAL)}
        if last:
            turns = payload["messages"] = list(turns)
            for k in marked:
                turns[k] = _marked(turns[k])


_NO_SEGMENT = Segment("assistant", 0, [])


# The server tools Anthropic runs, as the current API names them.
SERVER_TOOLS = {
    "web_search": "web_search_20250305",
    "code_execution": "code_execution_20250825",
    "web_fetch": "web_fetch_20250910",
}


# Tool search, which finds deferred tools (``defer_loading``) when the model needs them, in
# two variants: "Regex Tool Search (tool_search_tool_regex_20251119)" and "BM25 Tool Search
# (tool_search_tool_bm25_20251119)" (https://platform.claude.com/docs/en/agents-and-tools/
# tool-use/tool-search-tool; the anthropic SDK's ToolSearchToolRegex20251119Param, whose
# name is the literal tool_search_tool_regex).
TOOL_SEARCH = {
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
}


def _tool_search(tool: ServerTool) -> dict[str, Any]:
    """``ServerTool("tool_search", variant="regex" | "bm25")``: the search tool of that variant."""
    variant = tool.config.get("variant", "regex")
    if variant not in TOOL_SEARCH or set(tool.config) - {"variant"}:
        raise refuse_server_tool(tool, PROTOCOL, "its tool search takes variant='regex' or variant='bm25' only")
    return dict(TOOL_SEARCH[variant])


def server_tool(tool: ServerTool) -> dict[str, Any]:
    """A :class:`ServerTool` as Anthropic's tool definition."""
    if tool.raw is not None:
        return dict(tool.raw)
    if tool.kind == "tool_search":
        return _tool_search(tool)
    if tool.kind not in SERVER_TOOLS:
        raise refuse_server_tool(
            tool, PROTOCOL, f"it runs {', '.join(SERVER_TOOLS)}; or give its own definition as ServerTool(raw={{...}})"
        )
    return {"type": SERVER_TOOLS[tool.kind], "name": tool.kind, **tool.config}


_MCP_KEYS = {"url", "name", "allowed_tools", "authorization_token", "headers"}


def _mcp_config(tool: ServerTool) -> dict[str, Any]:
    config = dict(tool.config)
    unknown = set(config) - _MCP_KEYS
    if unknown or not config.get("url") or not config.get("name"):
        raise refuse_server_tool(
            tool,
            PROTOCOL,
            f"its MCP connector takes {', '.join(sorted(_MCP_KEYS))} (url and name required)"
            + (f", not {', '.join(sorted(unknown))}" if unknown else ""),
        )
    headers = {k.lower(): v for k, v in (config.pop("headers", None) or {}).items()}
    auth = headers.pop("authorization", "")
    if headers or (auth and not auth.startswith("Bearer ")):
        raise refuse_server_tool(
            tool, PROTOCOL, "its MCP connector sends no headers but an Authorization bearer token (authorization_token)"
        )
    if auth:
        config.setdefault("authorization_token", auth[len("Bearer ") :])
    return config


def mcp_server(tool: ServerTool) -> dict[str, Any]:
    """``ServerTool("mcp", url=..., name=...)`` as an entry of ``mcp_servers``."""
    config = _mcp_config(tool)
    out: dict[str, Any] = {"type": "url", "name": config["name"], "url": config["url"]}
    if config.get("authorization_token"):
        out["authorization_token"] = config["authorization_token"]
    return out


def mcp_toolset(tool: ServerTool) -> dict[str, Any]:
    """The ``mcp_toolset`` tool that enables the server's tools (only ``allowed_tools``,
    when given: the others disabled by default)."""
    config = _mcp_config(tool)
    out: dict[str, Any] = {"type": "mcp_toolset", "mcp_server_name": config["name"]}
    if config.get("allowed_tools") is not None:
        out["default_config"] = {"enabled": False}
        out["configs"] = {name: {"enabled": True} for name in config["allowed_tools"]}
    return out


# The API's 400: "tools.N.custom.input_schema: input_schema does not support oneOf, allOf, or
# anyOf at the top level" (anthropics/claude-code#5319, 2025-08-07; #40075, 2026-03-28).
_TOP_LEVEL_REFUSED = ("oneOf", "allOf", "anyOf")


def _tool(spec: ToolSpec) -> dict[str, Any]:
    top = [key for key in _TOP_LEVEL_REFUSED if key in spec.parameters]
    if top:
        raise FormatError(
            None,
            f"tool {spec.name!r}: Claude takes no {top[0]} at the top of a tool's input schema; "
            "move it under a property, or describe the choice in the tool's description",
            PROTOCOL,
            code="tool-schema",
        )
    out: dict[str, Any] = {"name": spec.name}
    if spec.description:
        out["description"] = spec.description
    out["input_schema"] = spec.parameters
    if spec.defer:
        out["defer_loading"] = True
    return out


def media_block(block: Any, index: int, endpoint: str | None = None) -> dict[str, Any]:
    """An image or document block for a data block (a file ``endpoint`` holds by its id)."""
    ref = file_ref(block, endpoint, "anthropic", index, PROTOCOL)
    if ref is not None:
        return _file_block(block, ref, index)
    kind, payload, media_type = sent_source(block, index, PROTOCOL)
    base = media_type.split(";")[0].strip().lower()
    if kind == "url" and payload.startswith("data:"):
        kind, payload = "base64", _data_uri_payload(payload, index)
    if base in IMAGE_TYPES:
        source = (
            {"type": "base64", "media_type": base, "data": payload}
            if kind == "base64"
            else {"type": "url", "url": payload}
        )
        return {"type": "image", "source": source}
    if base == "application/pdf":
        source = (
            {"type": "base64", "media_type": base, "data": payload}
            if kind == "base64"
            else {"type": "url", "url": payload}
        )
        doc: dict[str, Any] = {"type": "document", "source": source}
    elif base == "text/plain":
        if kind == "url":
            raise FormatError(
                index,
                "Anthropic takes text/plain documents as base64 only; resolve the URL first (the models layer does)",
                PROTOCOL,
            )
        text = base64.b64decode(payload).decode("utf-8", "replace")
        doc = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": text}}
    else:
        raise FormatError(
            index,
            f"Anthropic takes images ({', '.join(sorted(IMAGE_TYPES))}), PDFs and plain-text documents;"
            f" {media_type!r} cannot be sent",
            PROTOCOL,
        )
    if block.name:
        doc["title"] = block.name
    return doc


def _file_block(block: Any, file_id: str, index: int) -> dict[str, Any]:
    """An uploaded file as an image or document block (``source.type`` ``file``)."""
    base = block.source.media_type.split(";")[0].strip().lower()
    if base in IMAGE_TYPES:
        return {"type": "image", "source": {"type": "file", "file_id": file_id}}
    if base not in ("application/pdf", "text/plain"):
        raise FormatError(
            index, f"Anthropic takes files as images, PDFs and plain text; {base!r} cannot be sent", PROTOCOL
        )
    doc: dict[str, Any] = {"type": "document", "source": {"type": "file", "file_id": file_id}}
    if block.name:
        doc["title"] = block.name
    return doc


def _data_uri_payload(uri: str, index: int) -> str:
    head, _, data = uri.partition(",")
    if head.endswith(";base64"):
        return data
    return base64.b64encode(unquote_to_bytes(data)).decode("ascii")


def format_anthropic(
    messages: Sequence[Msg], tools: Sequence[Any] | None = None, tool_choice: Any = None, **options: Any
) -> dict[str, Any]:
    """Shortcut for ``AnthropicFormatter(**options).format(messages, tools, tool_choice)``."""
    return AnthropicFormatter(**options).format(messages, tools, tool_choice)


def _marked(turn: dict[str, Any]) -> dict[str, Any]:
    """A copy of a user turn with a cache breakpoint on its last block."""
    content = list(turn["content"])
    content[-1] = {**content[-1], "cache_control": dict(_EPHEMERAL)}
    return {**turn, "content": content}


def _after_results(part: dict[str, Any]) -> bool:
    """Whether a part of a user turn goes after its tool results (which must open the turn)."""
    return part.get("type") != "tool_result"


def _tools(payload: dict[str, Any], specs: list[Any], server: list[Any], tool_choice: Any) -> None:
    """The request's tools (declared ones, the provider's own, MCP toolsets and their
    servers) and tool choice."""
    mcp = [t for t in server if t.kind == "mcp" and t.raw is None]
    server = [t for t in server if t not in mcp]
    if specs or server or mcp:
        payload["tools"] = [_tool(s) for s in specs] + [server_tool(t) for t in server] + [mcp_toolset(t) for t in mcp]
        _searched(payload["tools"], specs)
    if mcp:
        payload["mcp_servers"] = [mcp_server(t) for t in mcp]
    mode, name = tool_choice_name(tool_choice, specs)
    if mode is not None:
        payload["tool_choice"] = (
            {"type": "any"}
            if mode == "required"
            else ({"type": "tool", "name": name} if mode == "tool" else {"type": mode})
        )


def _searched(tools: list[dict[str, Any]], specs: list[Any]) -> None:
    """The regex tool search added to ``tools`` when a tool is deferred and none was declared
    (deferred tools are found only by a search)."""
    if any(s.defer for s in specs) and not any(str(t.get("type", "")).startswith("tool_search_tool_") for t in tools):
        tools.append(dict(TOOL_SEARCH["regex"]))


def _signed_thinking(block: Any, extras: Any) -> dict[str, Any] | None:
    """Thinking this endpoint family made, as it replays it: redacted, or with its
    signature (None: neither, so it cannot go back as thinking)."""
    if extras.get("redacted_thinking_data"):
        return {"type": "redacted_thinking", "data": extras["redacted_thinking_data"]}
    if extras.get("signature"):
        return {"type": "thinking", "thinking": block.thinking, "signature": extras["signature"]}
    return None


def _server_call(block: Any, extras: Any) -> dict[str, Any]:
    """A server tool's call (web search, an MCP server's tool) as Anthropic replays it."""
    part = {"type": extras.get("provider_block_type", "server_tool_use"), "id": block.id, "name": block.name}
    if extras.get("server_name"):
        part["server_name"] = extras["server_name"]
    part["input"] = parse_arguments(block)
    return part
