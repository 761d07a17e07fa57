"""Messages -> an AWS Bedrock Converse request, without ``inferenceConfig`` and the
other option fields, which the models layer adds.

Rules (the service enforces them with a ValidationException):

- system messages go to ``system`` (a list of ``{text}``);
- ``messages`` alternate ``user`` / ``assistant`` (same-role content merged) and start
  with a user turn;
- content blocks: ``text`` (never blank), ``image`` (png / jpeg / gif / webp bytes),
  ``document`` (pdf, csv, doc(x), xls(x), html, txt, md bytes, with a name the service
  accepts), ``toolUse`` (``input`` parsed), ``toolResult`` (``content`` of text / image /
  document, ``status`` error for error / denied / interrupted), in the user turn after
  the call, in call order; http(s) sources are fetched and inlined by the models layer;
- reasoning is replayed as ``reasoningContent`` only with its signature
  (``reasoningText{text, signature}``) or as ``redactedContent``, and only to the provider
  that made it; unsigned reasoning is never replayed (or as text, with
  ``thinking_as_text=True``);
- an assistant turn left with nothing to send is dropped;
- ``tool_id_style="mistral"``: tool ids become the nine letters and digits Mistral models
  accept, the same id for a call and its result;
- ``cache_system`` / ``cache_tools``: a ``cachePoint`` after the system prompt / the tools;
- ``toolConfig`` is required once the history holds ``toolUse`` or ``toolResult`` blocks,
  and ``toolChoice`` has no ``none``: ``tool_choice="none"`` (or no tools) withholds the
  tools, and with tool blocks in the history sends one inert tool (``NO_TOOLS``) instead.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from ...errors import FormatError
from ...formatters import (
    sent_undeferred,
    Formatter,
    Segment,
    Turns,
    merge_turn,
    ToolSpec,
    sent_source,
    file_ref,
    extra,
    parse_arguments,
    replays_natively,
    result_blocks,
    tool_choice_name,
    tool_specs,
    raw_server_tools,
)
from ...message import Msg
from ...formatters._toolids import IdRules
from . import PROTOCOL as _WIRE

__all__ = ["BedrockConverseFormatter", "format_bedrock_converse"]

PROTOCOL = _WIRE.name
SCOPE = _WIRE.replay_scope
IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
}
_NAME_BAD = re.compile(r"[^A-Za-z0-9 \-()\[\]]+")


# botocore's shapes: toolUseId [a-zA-Z0-9_.:-]{1,64}, tool names [a-zA-Z0-9_-]{1,64}.
TOOL_IDS = IdRules(allowed="A-Za-z0-9_.:-", max_len=64)
TOOL_NAMES = IdRules(allowed="A-Za-z0-9_-", max_len=64)


class BedrockConverseFormatter(Formatter):
    system_in_place = False  # system messages join the top-level system prompt
    tool_id_rules: IdRules | None = TOOL_IDS
    tool_name_rules: IdRules | None = TOOL_NAMES
    protocol = PROTOCOL

    @staticmethod
    def needs_inline(media_type: str) -> bool:
        """Converse takes media as bytes (or S3 locations): every http(s) source is fetched."""
        return True

    def __init__(
        self,
        *,
        provider: str | None = None,
        thinking_as_text: bool = False,
        tool_id_style: str | None = None,
        cache_system: bool = False,
        cache_tools: bool = False,
        speaker_names: bool = False,
        assistant_name: str | None = None,
    ) -> None:
        if tool_id_style not in (None, "mistral"):
            raise ValueError("tool_id_style is None or 'mistral'")
        super().__init__(provider=provider, speaker_names=speaker_names, assistant_name=assistant_name)
        self.thinking_as_text = thinking_as_text
        self.tool_id_style = tool_id_style
        if tool_id_style == "mistral":
            from ..openai_chat.formatter import MISTRAL_IDS

            self.tool_id_rules = MISTRAL_IDS
        self.cache_system = cache_system
        self.cache_tools = cache_tools

    payload_turns = "messages"
    turn_content = "content"

    def take(self, acc: Turns, seg: Segment) -> None:
        if seg.kind == "system":
            acc.system += [{"text": b.text} for b in seg.blocks if b.text.strip()]
            return
        if seg.kind == "assistant":
            role, content = "assistant", self._assistant(seg)
        elif seg.kind == "results":
            role, content = "user", [self._result(r, seg.index_of(r)) for r in seg.blocks]
        else:
            role, content = "user", [c for b in seg.blocks for c in self._user(b, seg.index_of(b))]
        merge_turn(acc.turns, role, content, after_results=_after_results if seg.kind == "results" else None)

    def tool_fields(self, tools: Sequence[Any] | None, tool_choice: Any) -> dict[str, Any]:
        raw, tools = raw_server_tools(
            tools,
            PROTOCOL,
            (
                "this protocol runs no server tools through Converse here; give Nova's system tools as "
                "ServerTool(raw={'systemTool': {...}})"
            ),
        )
        specs = tool_specs(tools)
        sent_undeferred(specs, PROTOCOL)
        mode, name = tool_choice_name(tool_choice, specs) if specs or raw else (None, None)
        if (specs or raw) and mode != "none":
            return {"toolConfig": self._tool_config(specs, raw, mode, name)}
        return {}

    def assemble(self, acc: Turns, fields: dict[str, Any]) -> dict[str, Any]:
        turns, system = acc.turns, acc.system
        if turns and turns[0]["role"] == "assistant":
            turns.insert(0, {"role": "user", "content": [{"text": "(the conversation continues)"}]})
        payload: dict[str, Any] = {"messages": turns}
        if system:
            if self.cache_system:
                system.append({"cachePoint": {"type": "default"}})
            payload["system"] = system
        if fields:
            payload.update(fields)
            if self.cache_tools:  # here, not in tool_fields: fields made once outlive a change of it
                payload["toolConfig"]["tools"].append({"cachePoint": {"type": "default"}})
        elif _holds_tool_blocks(turns):
            payload["toolConfig"] = {"tools": [NO_TOOLS]}
        return payload

    def _tool_config(
        self, specs: list[Any], raw: list[dict[str, Any]], mode: str | None, name: str | None
    ) -> dict[str, Any]:
        """``toolConfig``: the tools and the tool choice (the cache point ``cache_tools`` puts
        after the tools is :meth:`assemble`'s)."""
        tool_list: list[dict[str, Any]] = [{"toolSpec": _tool(s)} for s in specs] + raw
        config: dict[str, Any] = {"tools": tool_list}
        if mode is not None:
            config["toolChoice"] = (
                {"auto": {}} if mode == "auto" else ({"any": {}} if mode == "required" else {"tool": {"name": name}})
            )
        return config

    # -- blocks -----------------------------------------------------------------------------

    def _user(self, block: Any, index: int) -> list[dict[str, Any]]:
        if block.type == "text":
            return [{"text": block.text}] if block.text.strip() else []
        if block.type == "data":
            return [media(block, index, self.endpoint)]
        raise FormatError(index, f"a {block.type!r} block cannot be sent in a user turn", PROTOCOL)

    def _assistant(self, seg: Any) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for block in seg.blocks:
            btype = block.type
            if btype == "text":
                if block.text.strip():
                    out.append({"text": block.text})
            elif btype == "thinking":
                out += self._reasoning(block)
            elif btype == "tool_call":
                if extra(block, "server_side", False):
                    continue  # a server tool: its result in the text carries what it found
                out.append({"toolUse": {"toolUseId": block.id, "name": block.name, "input": parse_arguments(block)}})
            elif btype == "tool_result":
                continue  # a server tool's result
            elif btype == "data":
                if extra(block, "provider_block_type") is None:
                    raise FormatError(
                        seg.index_of(block),
                        f"an assistant turn cannot carry {block.source.media_type} data for Converse",
                        PROTOCOL,
                    )
            else:
                raise FormatError(
                    seg.index_of(block), f"a {btype!r} block cannot be sent in an assistant turn", PROTOCOL
                )
        return out

    def _reasoning(self, block: Any) -> list[dict[str, Any]]:
        if replays_natively(block, PROTOCOL, self.provider, scope=SCOPE, endpoint=self.endpoint):
            if extra(block, "redacted_thinking_data"):
                return [{"reasoningContent": {"redactedContent": extra(block, "redacted_thinking_data")}}]
            if extra(block, "signature"):
                return [
                    {
                        "reasoningContent": {
                            "reasoningText": {"text": block.thinking, "signature": extra(block, "signature")}
                        }
                    }
                ]
        if self.thinking_as_text and block.thinking.strip():
            return [{"text": f"<thinking>\n{block.thinking}\n</thinking>"}]
        return []  # unsigned reasoning is refused by the service

    def _result(self, block: Any, index: int) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        for piece in result_blocks(block):
            if piece.type == "text":
                if piece.text.strip():
                    content.append({"text": piece.text})
            else:
                content.append(media(piece, index, self.endpoint))
        if not content:
            content = [
                {
                    "text": f"The tool call was {block.state}."
                    if block.state in ("denied", "interrupted")
                    else "(no output)"
                }
            ]
        status = "error" if block.state in ("error", "denied", "interrupted") else "success"
        return {"toolResult": {"toolUseId": block.id, "content": content, "status": status}}


def _tool(spec: ToolSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"name": spec.name}
    if spec.description:
        out["description"] = spec.description
    out["inputSchema"] = {"json": spec.parameters}
    return out


def media(block: Any, index: int, endpoint: str | None = None) -> dict[str, Any]:
    file_ref(block, endpoint, None, index, PROTOCOL)  # Bedrock holds no file: a reference is refused, saying what to do
    kind, payload, media_type = sent_source(block, index, PROTOCOL, ("s3://", "data:"))
    base = media_type.split(";")[0].strip().lower()
    if kind == "url" and payload.startswith("data:"):
        head, _, payload = payload.partition(",")
        if not head.endswith(";base64"):
            raise FormatError(index, "a data: URI must be base64-encoded for Converse", PROTOCOL)
        kind = "base64"
    # An s3:// URL is read by Bedrock itself (botocore's ImageSource / DocumentSource s3Location).
    source = {"bytes": payload} if kind == "base64" else {"s3Location": {"uri": payload}}
    if base in IMAGE_FORMATS:
        return {"image": {"format": IMAGE_FORMATS[base], "source": source}}
    if base in DOCUMENT_FORMATS:
        name = _NAME_BAD.sub(" ", (block.name or "document").rsplit(".", 1)[0]).strip() or "document"
        return {"document": {"format": DOCUMENT_FORMATS[base], "name": name[:200], "source": source}}
    raise FormatError(
        index,
        (
            f"Converse takes images ({', '.join(IMAGE_FORMATS)}) and documents "
            f"({', '.join(DOCUMENT_FORMATS)}); {media_type!r} cannot be sent"
        ),
        PROTOCOL,
    )


def format_bedrock_converse(
    messages: Sequence[Msg], tools: Sequence[Any] | None = None, tool_choice: Any = None, **options: Any
) -> dict[str, Any]:
    """Shortcut for ``BedrockConverseFormatter(**options).format(messages, tools, tool_choice)``."""
    return BedrockConverseFormatter(**options).format(messages, tools, tool_choice)


def _after_results(part: dict[str, Any]) -> bool:
    """Whether a part of a user turn goes after its toolResult blocks (which open the turn)."""
    return "toolResult" not in part


# Converse has no tool choice "none" (only auto, any and a named tool), and refuses a request
# whose history holds toolUse or toolResult blocks without a toolConfig. So "none", or no
# tools, is sent as the tools withheld; when the history holds tool blocks, the toolConfig
# declares this one tool instead, which does nothing and says so.
NO_TOOLS: dict[str, Any] = {
    "toolSpec": {
        "name": "no_tools_available",
        "description": "No tools are available for this turn. Do not call this; answer in text.",
        "inputSchema": {"json": {"type": "object", "properties": {}}},
    }
}


def _holds_tool_blocks(turns: list[dict[str, Any]]) -> bool:
    return any("toolUse" in part or "toolResult" in part for turn in turns for part in turn["content"])
