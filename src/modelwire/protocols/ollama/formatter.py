"""Messages -> an Ollama ``/api/chat`` request (``messages`` and ``tools``; the options are
added by the protocol).

Rules:

- system text -> ``{"role": "system"}``; user text -> ``{"role": "user", "content"}``, images
  -> the message's ``images`` (base64, no media type: Ollama reads the bytes); other media
  (PDF, audio) is refused, Ollama has no field for it;
- an assistant turn -> ``content``, its own thinking back in ``thinking`` (Ollama takes it),
  tool calls as ``{"function": {"name", "arguments": {...}}}`` (arguments as an object);
- a tool result -> ``{"role": "tool", "content", "tool_name"}`` (Ollama pairs results with
  calls by order and name, not by id); images a tool returned ride on the same message;
- a forced tool choice is refused (Ollama has none); ``"none"`` sends no tools.
"""

from __future__ import annotations

from typing import Any, Sequence

from ...errors import FormatError
from ...formatters import (
    sent_undeferred,
    MessagesFormatter,
    function_tool,
    sent_source,
    file_ref,
    extra,
    Turns,
    is_raw_provider_block,
    parse_arguments,
    origin_replays,
    result_blocks,
    tool_choice_name,
    tool_specs,
    raw_server_tools,
)
from ...formatters._toolids import IdRules
from ...message import Msg, origin
from . import PROTOCOL as _WIRE

__all__ = ["OllamaFormatter", "format_ollama"]

PROTOCOL = _WIRE.name
SCOPE = _WIRE.replay_scope


class OllamaFormatter(MessagesFormatter):
    protocol = PROTOCOL
    tool_id_rules: IdRules | None = None  # ids are not sent
    tool_name_rules: IdRules | None = IdRules(allowed="A-Za-z0-9_.:-", max_len=128)

    @staticmethod
    def needs_inline(media_type: str) -> bool:
        """Ollama takes images as base64 only: every URL source is fetched first."""
        return True

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
        raw, tools = raw_server_tools(tools, PROTOCOL, "this protocol runs no server tools")
        specs = tool_specs(tools)
        sent_undeferred(specs, PROTOCOL)
        fields: dict[str, Any] = {}
        mode, _name = tool_choice_name(tool_choice, specs)
        if mode in ("required", "tool"):
            raise FormatError(
                None,
                "Ollama has no tool_choice: a tool cannot be forced; use tool_choice='auto'",
                PROTOCOL,
                code="unsupported-option",
            )
        if (specs or raw) and mode != "none":
            fields["tools"] = [function_tool(s) for s in specs] + raw
        return fields

    def assemble(self, acc: Turns, fields: dict[str, Any]) -> dict[str, Any]:
        return {"messages": acc.turns, **fields}

    def _user(self, seg: Any) -> dict[str, Any] | None:
        texts: list[str] = []
        images: list[str] = []
        for block in seg.blocks:
            if block.type == "text":
                if block.text:
                    texts.append(block.text)
            elif block.type == "data":
                images.append(_image(block, seg.index_of(block), self.endpoint))
            else:
                raise FormatError(
                    seg.index_of(block), f"a {block.type!r} block cannot be sent in a user message", PROTOCOL
                )
        if not texts and not images:
            return None
        msg: dict[str, Any] = {"role": "user", "content": "\n\n".join(texts)}
        if images:
            msg["images"] = images
        return msg

    def _assistant(self, seg: Any) -> dict[str, Any] | None:
        texts: list[str] = []
        thinking: list[str] = []
        calls: list[dict[str, Any]] = []
        for block in seg.blocks:
            btype = block.type
            if btype == "text":
                if block.text:
                    texts.append(block.text)
            elif btype == "thinking":
                if block.thinking and (
                    (found := origin(block)) is None
                    or origin_replays(found, PROTOCOL, self.provider, scope=SCOPE, endpoint=self.endpoint)
                ):
                    thinking.append(block.thinking)
                elif self.thinking_as_text and block.thinking:
                    texts.append(f"<think>\n{block.thinking}\n</think>")
            elif btype == "tool_call":
                if extra(block, "server_side", False):
                    continue  # another provider ran it; its answer carries what it found
                calls.append({"function": {"name": block.name, "arguments": parse_arguments(block)}})
            elif btype == "tool_result" or (btype == "data" and is_raw_provider_block(block)):
                continue  # another provider's own items
            else:
                raise FormatError(
                    seg.index_of(block), f"an assistant message cannot carry a {btype!r} block for Ollama", PROTOCOL
                )
        if not (texts or thinking or calls):
            return None
        msg: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts)}
        if thinking:
            msg["thinking"] = "\n\n".join(thinking)
        if calls:
            msg["tool_calls"] = calls
        return msg

    def _result(self, result: Any, index: int) -> dict[str, Any]:
        texts: list[str] = []
        images: list[str] = []
        for piece in result_blocks(result):
            if piece.type == "text":
                texts.append(piece.text)
            else:
                images.append(_image(piece, index, self.endpoint))
        text = "".join(texts)
        if not text and result.state in ("denied", "interrupted"):
            text = f"The tool call was {result.state}."
        msg: dict[str, Any] = {"role": "tool", "content": text, "tool_name": result.name}
        if images:
            msg["images"] = images
        return msg


def _image(block: Any, index: int, endpoint: str | None = None) -> str:
    file_ref(block, endpoint, None, index, PROTOCOL)  # Ollama holds no file: a reference is refused, saying what to do
    _, payload, media_type = sent_source(block, index, PROTOCOL, urls=())  # base64 only
    if not media_type.split(";")[0].strip().lower().startswith("image/"):
        raise FormatError(index, f"Ollama takes images only, not {media_type}", PROTOCOL, code="unsupported-media")
    return payload


def format_ollama(
    messages: Sequence[Msg], tools: Sequence[Any] | None = None, tool_choice: Any = None, **options: Any
) -> dict[str, Any]:
    """Shortcut for ``OllamaFormatter(**options).format(messages, tools, tool_choice)``."""
    return OllamaFormatter(**options).format(messages, tools, tool_choice)
