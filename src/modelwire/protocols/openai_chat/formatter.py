"""Messages -> an OpenAI Chat Completions request (and OpenAI-compatible servers), without
``model`` and sampling options, which the models layer adds.

Rules:

- system messages as ``system`` (or ``developer``) messages;
- user content parts: ``text``, ``image_url`` (data URI or URL), ``input_audio`` (wav or
  mp3, base64 only), ``file`` (PDF and other documents, base64 only); a user message of one
  text part is sent as a plain string;
- an assistant turn carries its text and ``tool_calls``; it is followed at once by one
  ``tool`` message per call, in call order; media returned by tools, which a ``tool``
  message cannot carry, goes in one user message after all the tool messages of that turn;
- ``name`` is sent only with ``include_names=True``, sanitized to what the API accepts;
- reasoning is replayed in the server's own field (``reasoning_field="reasoning_content"``
  for DeepSeek-style servers, which want it on tool-call turns, or ``"reasoning"``) when
  the dialect asks for it, and never otherwise: OpenAI itself takes no reasoning back.
  Only reasoning that came from the same provider (or plain reasoning with no recorded
  origin, as AgentScope writes it) is replayed there;
- text documents (``text/*`` data) are sent as text parts: Chat Completions takes only PDF
  files;
- hints become user content; thinking and server-tool blocks of other providers are not
  sent (or thinking as text, with ``thinking_as_text=True``).
"""

from __future__ import annotations

import base64
from typing import Any, Sequence

from ...errors import FormatError
from ...message import Msg, origin
from ...formatters import (
    sent_undeferred,
    Formatter,
    Segment,
    Turns,
    Walk,
    extra,
    is_raw_provider_block,
    ToolSpec,
    sent_source,
    file_ref,
    data_uri,
    origin_replays,
    sanitize_name,
    tool_choice_name,
    tool_specs,
    raw_server_tools,
)

from ...formatters._toolids import IdRules
from . import PROTOCOL as _WIRE

__all__ = ["OpenAIChatFormatter", "format_openai_chat"]

PROTOCOL = _WIRE.name
SCOPE = _WIRE.replay_scope
_AUDIO = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


# Tool-call ids: OpenAI takes any printable id up to 40 characters; Mistral (which speaks
# this protocol) exactly nine letters and digits. Function names: [a-zA-Z0-9_-]{1,64}.
TOOL_IDS = IdRules(allowed="!-~", max_len=40)
MISTRAL_IDS = IdRules(allowed="A-Za-z0-9", exact=9)
TOOL_NAMES = IdRules(allowed="A-Za-z0-9_-", max_len=64)


class OpenAIChatFormatter(Formatter):
    protocol = PROTOCOL
    tool_id_rules: IdRules | None = TOOL_IDS
    tool_name_rules: IdRules | None = TOOL_NAMES

    @staticmethod
    def needs_inline(media_type: str) -> bool:
        """Whether an http(s) source of this media type must be sent as base64 (the
        models layer fetches it first): only images may be given by URL."""
        return not media_type.split(";")[0].strip().lower().startswith("image/")

    def __init__(
        self,
        *,
        provider: str | None = None,
        system_role: str = "system",
        reasoning_field: str | None = None,
        reasoning_on_tool_calls: bool = False,
        replay_reasoning_details: bool = False,
        include_names: bool = False,
        thinking_as_text: bool = False,
        speaker_names: bool = False,
        assistant_name: str | None = None,
        empty_content_null: bool = True,
        tool_id_style: str | None = None,
    ) -> None:
        if tool_id_style not in (None, "mistral"):
            raise ValueError("tool_id_style is None or 'mistral'")
        if tool_id_style == "mistral":
            self.tool_id_rules = MISTRAL_IDS
        if system_role not in ("system", "developer"):
            raise ValueError("system_role is 'system' or 'developer'")
        if reasoning_field not in (None, "reasoning_content", "reasoning"):
            raise ValueError("reasoning_field is None, 'reasoning_content' or 'reasoning'")
        super().__init__(provider=provider, speaker_names=speaker_names, assistant_name=assistant_name)
        self.system_role = system_role
        self.reasoning_field = reasoning_field
        self.reasoning_on_tool_calls = reasoning_on_tool_calls
        self.replay_reasoning_details = replay_reasoning_details
        self.include_names = include_names
        self.thinking_as_text = thinking_as_text
        # An assistant turn with only tool calls: OpenAI documents content null; llama.cpp's
        # server refuses null there and takes "".
        self.no_content: str | None = None if empty_content_null else ""

    payload_turns = "messages"

    def walk(self) -> Walk:
        walk = Walk(
            PROTOCOL,
            speaker_names=self.speaker_names,
            assistant_name=self.assistant_name,
            split_users=self.include_names,
        )
        walk.stand_in = self.compaction_stand_in
        walk.effort_target = self.model or PROTOCOL  # no effort change in mid-conversation
        return walk

    def take(self, acc: Turns, seg: Segment) -> None:
        out, kind = acc.turns, seg.kind
        if kind == "assistant":
            said = self._assistant(seg)
            if said is not None:
                out.append(said)
        elif kind == "results":
            _tool_messages([(r, seg.index_of(r)) for r in seg.blocks], out, self.endpoint)
        elif kind == "system":
            text = "\n\n".join(b.text for b in seg.blocks if b.text)
            if text:
                out.append({"role": self.system_role, "content": text})
        else:
            content = self._user_content(seg)
            if content:
                msg: dict[str, Any] = {"role": "user", "content": content}
                if self.include_names and seg.name:
                    msg["name"] = sanitize_name(seg.name)
                out.append(msg)

    def tool_fields(self, tools: Sequence[Any] | None, tool_choice: Any) -> dict[str, Any]:
        raw, tools = raw_server_tools(
            tools,
            PROTOCOL,
            "this protocol runs no server tools; use openai-responses: for OpenAI's web search and code interpreter",
        )
        specs = tool_specs(tools)
        sent_undeferred(specs, PROTOCOL)
        fields: dict[str, Any] = {}
        if specs or raw:
            fields["tools"] = [_tool(s) for s in specs] + raw
        mode, name = tool_choice_name(tool_choice, specs)
        if mode is not None:
            fields["tool_choice"] = {"type": "function", "function": {"name": name}} if mode == "tool" else mode
        return fields

    def assemble(self, acc: Turns, fields: dict[str, Any]) -> dict[str, Any]:
        return {"messages": acc.turns, **fields}

    def _user_content(self, seg: Any) -> str | list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        for block in seg.blocks:
            btype = block.type
            if btype == "text":
                if block.text:
                    parts.append({"type": "text", "text": block.text})
            elif btype == "data":
                parts.append(media_part(block, seg.index_of(block), self.endpoint))
            else:
                raise FormatError(seg.index_of(block), f"a {btype!r} block cannot be sent in a user message", PROTOCOL)
        return _user_content(parts)

    def _assistant(self, seg: Any) -> dict[str, Any] | None:
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        more: tuple[list[str], list[str], list[Any]] | None = (
            None  # refusals, reasoning, details: made when a block needs them
        )
        skip_thinking = not (self.reasoning_field or self.thinking_as_text)  # no thinking is sent
        for block in seg.blocks:
            btype = block.type
            if btype == "text" and not block.__dict__:  # the usual text (no refusal)
                if block.text:
                    texts.append(block.text)
            elif btype == "tool_call" and not block.__dict__:  # the usual client call
                calls.append(
                    {
                        "id": block.id,
                        "type": "function",
                        "function": {"name": block.name, "arguments": block.input or "{}"},
                    }
                )
            elif btype != "thinking" or not skip_thinking:
                if more is None:
                    more = ([], [], [])
                self._other_block(block, seg, texts, calls, *more)
        if more is None and not self.reasoning_field:
            return self._plain(texts, calls)
        return self._message(texts, calls, *(more or ([], [], [])))

    def _other_block(
        self,
        block: Any,
        seg: Any,
        texts: list[str],
        calls: list[dict[str, Any]],
        refusals: list[str],
        reasoning: list[str],
        details: list[Any],
    ) -> None:
        """A block of the assistant turn other than plain text and a plain client call."""
        btype = block.type
        if btype == "text":
            if block.text:
                (refusals if block.__dict__.get("refusal", False) else texts).append(block.text)
        elif btype == "thinking":
            self._thinking(block, texts, reasoning, details)
        elif btype == "tool_call":
            if block.__dict__.get("server_side"):  # extra(), inlined: a call always takes extras
                return  # run by another provider; its text answer carries what it found
            calls.append(
                {"id": block.id, "type": "function", "function": {"name": block.name, "arguments": block.input or "{}"}}
            )
        elif btype == "tool_result":
            return  # a server tool's result (another provider's); see above
        elif btype == "data":
            if is_raw_provider_block(block):
                return  # another provider's item, kept for that provider only
            raise FormatError(
                seg.index_of(block), f"an assistant message cannot carry {block.source.media_type} data", PROTOCOL
            )

    def _plain(self, texts: list[str], calls: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The usual assistant message: its text (or the dialect's empty content) and its
        tool calls; None when there is nothing to send."""
        if not (texts or calls):
            return None
        msg: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) if texts else self.no_content}
        if calls:
            msg["tool_calls"] = calls
        return msg

    def _message(
        self,
        texts: list[str],
        calls: list[dict[str, Any]],
        refusals: list[str],
        reasoning: list[str],
        details: list[Any],
    ) -> dict[str, Any] | None:
        """The assistant message: its text (or the dialect's empty content), a refusal, the
        reasoning where the dialect takes it back, and its tool calls; None when there is
        nothing to send."""
        if not (texts or refusals or calls or reasoning):
            return None
        msg: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) if texts else self.no_content}
        if refusals:
            msg["refusal"] = "".join(refusals)
        if self.reasoning_field and (reasoning or (calls and self.reasoning_on_tool_calls)):
            if not (calls and self.reasoning_on_tool_calls):
                reasoning = [r for r in reasoning if type(r) is not _Foreign]
            if reasoning or calls:
                msg[self.reasoning_field] = "\n\n".join(reasoning)
        if self.replay_reasoning_details and details:
            msg["reasoning_details"] = details
        if calls:
            msg["tool_calls"] = calls
        return msg

    def _thinking(self, block: Any, texts: list[str], reasoning: list[str], details: list[Any]) -> None:
        """A thinking block of the assistant turn: sent back as reasoning where the dialect
        takes it (this provider's, or plain reasoning nobody claims: AgentScope writes no
        origin), as text when ``thinking_as_text``, else left out."""
        found = origin(block)
        native = origin_replays(found, PROTOCOL, self.provider, scope=SCOPE, endpoint=self.endpoint)
        if self.reasoning_field and (native or found is None):
            if block.thinking:
                reasoning.append(block.thinking)
            if native:
                details += extra(block, "reasoning_details") or []
        elif self.reasoning_on_tool_calls and block.thinking:
            # Another provider's reasoning text, for a dialect that needs the reasoning of a
            # tool-call turn back (DeepSeek: "the reasoning_content must be fully passed back
            # to the API in all subsequent requests",
            # https://api-docs.deepseek.com/guides/thinking_mode): sent on such a turn only,
            # as AgentScope's formatters send it, rather than an empty field.
            reasoning.append(_Foreign(block.thinking))
        elif self.thinking_as_text and block.thinking:
            texts.append(f"<think>\n{block.thinking}\n</think>")

    @staticmethod
    def _result_media(result: Any, index: int, media: list[dict[str, Any]], endpoint: str | None = None) -> str:
        """The text of a result that returned media (text documents read as text, the rest
        added to ``media``, the next user message's parts)."""
        texts = []
        data = []
        for p in result.output:
            if p.type == "text":
                texts.append(p.text)
            elif p.source.media_type.split(";")[0].strip().lower().startswith("text/"):
                texts.append(media_part(p, index, endpoint)["text"])  # a tool message takes text
            else:
                data.append(p)
        text = "".join(texts)
        if data:
            media.append({"type": "text", "text": f"Media returned by tool call {result.id} ({result.name}):"})
            media += [media_part(d, index, endpoint) for d in data]
            if not text:
                text = f"[{len(data)} media item(s); sent in the next user message]"
        return text


class _Foreign(str):
    """Reasoning text another provider wrote (see ``_thinking``)."""

    __slots__ = ()


def _user_content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """A user message's content: its one text as a string, else its parts."""
    if len(parts) == 1 and parts[0]["type"] == "text":
        text: str = parts[0]["text"]  # the formatter's own text part
        return text
    return parts


def _tool_messages(results: list[tuple[Any, int]], out: list[dict[str, Any]], endpoint: str | None = None) -> None:
    """Results (each with its message's index) as tool messages onto ``out``, then the
    media they returned in one user message."""
    media: list[dict[str, Any]] = []
    out += [_tool_message(result, index, media, endpoint) for result, index in results]
    if media:
        out.append({"role": "user", "content": media})


def _tool_message(result: Any, index: int, media: list[dict[str, Any]], endpoint: str | None = None) -> dict[str, Any]:
    """A result as its tool message; media it returned onto ``media``."""
    output = result.output
    if isinstance(output, str):  # the usual result: its text as it is
        text = output
    elif len(output) == 1 and output[0].type == "text":  # one text piece: its text
        text = output[0].text
    else:
        text = OpenAIChatFormatter._result_media(result, index, media, endpoint)
    if result.state in ("denied", "interrupted") and not text:
        text = f"The tool call was {result.state}."
    return {"role": "tool", "tool_call_id": result.id, "content": text}


def _tool(spec: ToolSpec) -> dict[str, Any]:
    fn: dict[str, Any] = {"name": spec.name}
    if spec.description:
        fn["description"] = spec.description
    fn["parameters"] = spec.parameters
    if spec.strict is not None:
        fn["strict"] = spec.strict
    return {"type": "function", "function": fn}


def media_part(block: Any, index: int, endpoint: str | None = None) -> dict[str, Any]:
    ref = file_ref(block, endpoint, "openai", index, PROTOCOL)
    if ref is not None:
        if block.source.media_type.split(";")[0].strip().lower() != "application/pdf":
            raise FormatError(
                index,
                (
                    "Chat Completions takes uploaded files by id as PDFs only; send this one by the "
                    "Responses API (openai-responses:), or upload it from a path so its bytes are sent"
                ),
                PROTOCOL,
                code="file-elsewhere",
            )
        return {"type": "file", "file": {"file_id": ref}}
    kind, payload, media_type = sent_source(block, index, PROTOCOL)
    base = media_type.split(";")[0].strip().lower()
    if base.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": data_uri(block)}}
    if base in _AUDIO:
        if kind != "base64":
            raise FormatError(
                index, "OpenAI takes audio as base64 only; resolve the URL first (the models layer does)", PROTOCOL
            )
        return {"type": "input_audio", "input_audio": {"data": payload, "format": _AUDIO[base]}}
    if base.startswith("text/"):
        return {"type": "text", "text": _document_text(block, kind, payload, index)}
    if base == "application/pdf":
        if kind != "base64":
            raise FormatError(
                index, "OpenAI takes files as base64 only; resolve the URL first (the models layer does)", PROTOCOL
            )
        return {"type": "file", "file": {"filename": block.name or "document.pdf", "file_data": data_uri(block)}}
    raise FormatError(
        index, f"OpenAI Chat Completions takes images, wav/mp3 audio and files; {media_type!r} cannot be sent", PROTOCOL
    )


def _document_text(block: Any, kind: str, payload: str, index: int) -> str:
    """A text document as the text Chat Completions takes (it has no text file parts)."""
    if kind == "url" and payload.startswith("data:"):
        head, _, payload = payload.partition(",")
        kind = "base64" if head.endswith(";base64") else "plain"
        if kind == "plain":
            from urllib.parse import unquote

            text = unquote(payload)
            return f"{block.name}:\n{text}" if block.name else text
    if kind != "base64":
        raise FormatError(
            index, "text documents must be resolved to base64 before formatting (the models layer does)", PROTOCOL
        )
    try:
        text = base64.b64decode(payload).decode("utf-8")
    except (ValueError, UnicodeDecodeError) as exc:
        raise FormatError(index, f"a {block.source.media_type} data block is not UTF-8 text: {exc}", PROTOCOL) from None
    return f"{block.name}:\n{text}" if block.name else text


def format_openai_chat(
    messages: Sequence[Msg], tools: Sequence[Any] | None = None, tool_choice: Any = None, **options: Any
) -> dict[str, Any]:
    """Shortcut for ``OpenAIChatFormatter(**options).format(messages, tools, tool_choice)``."""
    return OpenAIChatFormatter(**options).format(messages, tools, tool_choice)
