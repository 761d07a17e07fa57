"""AgentScope agents on modelwire models: a ``ChatModelBase`` for AgentScope 2.x.

    from modelwire.integrations.agentscope import ModelwireChatModel

    model = ModelwireChatModel("anthropic:claude-sonnet-4-5", max_tokens=2048)
    agent = Agent(name="Friday", system_prompt="...", model=model, toolkit=toolkit)

AgentScope's messages go in through their shared JSON form (nothing is lost: signatures,
reasoning items, data blocks, tool results), modelwire's formatter and transport do the
call, and the events come back out as AgentScope's streamed ``ChatResponse`` deltas, ending
with the complete response (usage, and modelwire's stop reasons in ``metadata``).

Who retries is one switch: ``retries="modelwire"`` (the default) keeps modelwire's
transport retries and tells AgentScope there is nothing left to retry;
``retries="agentscope"`` turns modelwire's off and lists modelwire's retryable errors
(``RateLimitError``, ``OverloadedError``, ``ConnectionError``, ``TimeoutError``,
``UpstreamError``) for AgentScope's own ``max_retries`` and fallback model.

Importing this module imports AgentScope (``pip install 'modelwire[agentscope]'``);
``import modelwire`` does not.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any, AsyncGenerator, Type

from pydantic import BaseModel, ConfigDict

from agentscope.credential import CredentialBase
from agentscope.message import Msg as ASMsg
from agentscope.message import DataBlock as ASDataBlock
from agentscope.message import TextBlock as ASTextBlock
from agentscope.message import ThinkingBlock as ASThinkingBlock
from agentscope.message import ToolCallBlock as ASToolCallBlock
from agentscope.model import ChatModelBase, ChatResponse
from agentscope.model._model_usage import ChatUsage

from .. import errors as E
from ..message import Msg, extras_of
from ..protocols.gemini import GEMINI_TS
from ..models import load_model
from ..models.transport import RetryPolicy

__all__ = ["ModelwireChatModel", "ModelwireCredential", "to_modelwire", "to_agentscope_blocks", "kept_id"]

_AS_BLOCKS: dict[str, type[BaseModel]] = {
    "text": ASTextBlock,
    "thinking": ASThinkingBlock,
    "tool_call": ASToolCallBlock,
    "data": ASDataBlock,
}
_MAX_KEPT = 10_000
_RETRYABLE = (
    E.RateLimitError,
    E.OverloadedError,
    E.ConnectionError,
    E.TimeoutError,
    E.UpstreamError,
    E.IncompleteStreamError,
)


class ModelwireCredential(CredentialBase):
    """modelwire resolves keys itself (environment, ``modelwire.toml``); AgentScope wants a
    credential object, so this one records only which provider the model speaks to."""

    provider: str = ""

    @classmethod
    def get_chat_model_class(cls) -> Type[ChatModelBase]:
        return ModelwireChatModel


class _Formatter:
    """What AgentScope's Agent asks of a model's formatter: which media it can send. The
    formatting itself is modelwire's (at call time, per protocol)."""

    def __init__(self, wire_model: Any) -> None:
        self._wire = wire_model

    @property
    def supported_input_media_types(self) -> list[str]:
        """The media the model's capabilities do not refuse (AgentScope strips the others
        from what it sends, as it does for its own models); a kind whose support is not
        known is passed on, for modelwire to send or refuse with a ``FormatError``."""
        caps = getattr(self._wire, "capabilities", None)
        kinds = [("image/*", "image_input"), ("application/pdf", "pdf_input"), ("audio/*", "audio_input")]
        taken = [media for media, flag in kinds if getattr(caps, flag, None) is not False]
        return [*taken, "text/*", "video/*"]


class ModelwireChatModel(ChatModelBase):
    """A modelwire model (by config string, profile, or a model object) as an AgentScope
    chat model."""

    type = "modelwire"

    class Parameters(ChatModelBase.Parameters):
        """modelwire's call options (see ``modelwire.ModelOptions``); unknown ones are refused."""

        model_config = ConfigDict(extra="allow")

    def __init__(
        self,
        model: Any,
        *,
        stream: bool = True,
        retries: str = "modelwire",
        max_retries: int = 2,
        retry_delay: float = 1.0,
        context_size: int = 200_000,
        **options: Any,
    ) -> None:
        if retries not in ("modelwire", "agentscope"):
            raise E.ConfigError("retries is 'modelwire' or 'agentscope': the one that retries failed calls")
        self.retries = retries
        policy = RetryPolicy(max_retries=max_retries) if retries == "modelwire" else RetryPolicy(max_retries=0)
        if isinstance(model, str) or model is None:
            self.wire_model = load_model(model, retry=policy, **options)
        else:
            self.wire_model = model  # any modelwire Model (stream / complete)
            if options:
                raise E.ConfigError("pass options to load_model() when you bring your own model")
            if hasattr(model, "retry"):
                model.retry = policy
        super().__init__(
            credential=ModelwireCredential(provider=getattr(self.wire_model, "provider", "")),
            model=getattr(self.wire_model, "name", str(model)),
            parameters=self.Parameters(),
            stream=stream,
            max_retries=max_retries if retries == "agentscope" else 0,
            retry_delay=retry_delay,
            context_size=context_size,
        )
        self.formatter = _Formatter(self.wire_model)
        # AgentScope's text, data and tool-call blocks drop fields they do not declare. A
        # text or data block's extras (a Gemini thought signature on a text part), and a
        # thinking block's beyond the fields AgentScope names, ride in its id, which
        # AgentScope stores (see kept_id); a tool call's id is sent to the provider, so its
        # extras other than a Gemini signature are kept here, by call id, for as long as
        # this model lives.
        self._extras: dict[str, dict[str, Any]] = {}

    def _get_retryable_exceptions(self) -> tuple[Type[Exception], ...]:  # type: ignore[override]
        """modelwire's retryable errors when AgentScope retries; none when modelwire does
        (AgentScope then makes one attempt: ``max_retries`` is 0 on its side)."""
        return _RETRYABLE if self.retries == "agentscope" else ()

    async def _call_api(
        self,
        model_name: str,
        messages: list[ASMsg],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        wire_messages = [self._restore(to_modelwire(m)) for m in messages]
        tools, choice = _tools_and_choice(tools, tool_choice)
        options = {**self.parameters.model_dump(exclude_none=True), **kwargs}
        if self.stream:
            # Start the call here, as AgentScope's own models do: an error before the first
            # output (a 429, an overloaded server) is raised inside AgentScope's retry loop.
            stream = self._stream(wire_messages, tools, choice, options)
            try:
                first = await stream.__anext__()
            except StopAsyncIteration:
                first = None
            return _chain(first, stream)
        final = None
        async for final in self._stream(wire_messages, tools, choice, options):
            pass
        if final is None:
            raise E.IncompleteStreamError("the model sent nothing")
        return final

    async def _stream(
        self, messages: list[Msg], tools: Any, choice: Any, options: dict[str, Any]
    ) -> AsyncGenerator[ChatResponse, None]:
        started = time.monotonic()
        reply = Msg(name="assistant", role="assistant", content=[])
        folded = False
        chunks = _Chunks(whole=bool(getattr(getattr(self.wire_model, "wire", None), "whole_tool_calls", False)))
        stream = self.wire_model.stream(
            messages, tools=tools, tool_choice=choice, options=options or None, reply_id=reply.id
        )
        try:
            async for event in stream:
                reply.append_event(event, strict=True)
                folded = True
                chunk = chunks.of(event)
                if chunk is not None:
                    yield ChatResponse(content=chunk, is_last=False)
        finally:
            await stream.aclose()  # a cancelled AgentScope reply closes the HTTP stream
        if folded:
            yield self._final(reply, chunks.end, time.monotonic() - started, chunks.usage_sent)

    def _final(self, reply: Msg, end: Any, seconds: float, usage_sent: bool) -> ChatResponse:
        for block in reply.content:
            if block.type == "tool_call" and extras_of(block):
                if len(self._extras) >= _MAX_KEPT:
                    self._extras.pop(next(iter(self._extras)))
                self._extras[block.id] = dict(extras_of(block))
        return _final(reply, end, seconds, usage_sent)

    def _restore(self, msg: Msg) -> Msg:
        endpoint = getattr(self.wire_model, "endpoint", None)
        for block in msg.content:
            kept = self._extras.get(block.id)
            if kept and block.type == "tool_call" and not extras_of(block):
                extras_of(block).update(kept)
            elif isinstance(endpoint, str) and block.type in _KEPT_IN_ID:
                _endpoint_restored(extras_of(block), endpoint)
        return msg


class _Chunks:
    """modelwire's events as the blocks of AgentScope's streamed ``ChatResponse`` chunks."""

    def __init__(self, whole: bool) -> None:
        # Calls that arrive whole are passed on at their end, when their extras are known: a
        # Gemini call's thought signature goes into its id, AgentScope's own way of keeping it.
        self.whole = whole
        self.open_calls: dict[
            str, str
        ] = {}  # tool call id -> name, kept open in every chunk (AgentScope ends the others)
        self.held: dict[str, list[str]] = {}
        self.end: Any = None
        self.usage_sent = False  # AgentScope's usage is None where the provider sent none

    def of(self, event: Any) -> list[Any] | None:
        """The blocks of the chunk ``event`` makes, or None where it makes none."""
        chunk = self._blocks(event)
        if chunk is None:
            return None
        keep = [
            ASToolCallBlock(id=i, name=n, input="")
            for i, n in self.open_calls.items()
            if i not in self.held and not any(getattr(b, "id", None) == i for b in chunk)
        ]
        return chunk + keep

    def _blocks(self, event: Any) -> list[Any] | None:
        kind = event.type
        if kind == "TEXT_BLOCK_DELTA":
            return [ASTextBlock(id=event.block_id, text=event.delta)]
        if kind == "THINKING_BLOCK_DELTA":
            return [ASThinkingBlock(id=event.block_id, thinking=event.delta)]
        if kind == "DATA_BLOCK_DELTA" and event.data:
            return [
                ASDataBlock.model_validate(
                    {
                        "id": event.block_id,
                        "source": {"type": "base64", "data": event.data, "media_type": event.media_type},
                    }
                )
            ]
        if kind in ("TOOL_CALL_START", "TOOL_CALL_DELTA", "TOOL_CALL_END"):
            return self._call(event)
        if kind == "MODEL_CALL_END":
            self.end = event
            self.usage_sent = self.usage_sent or "usage" in (event.metadata or {})
        return None

    def _call(self, event: Any) -> list[Any] | None:
        call_id = event.tool_call_id
        if event.type == "TOOL_CALL_START":
            self.open_calls[call_id] = event.tool_call_name
            if self.whole:
                self.held[call_id] = []
            return []
        if event.type == "TOOL_CALL_DELTA":
            if call_id in self.held:
                self.held[call_id].append(event.delta)
                return None
            return [ASToolCallBlock(id=call_id, name=self.open_calls.get(call_id, ""), input=event.delta)]
        name = self.open_calls.pop(call_id, None)
        if call_id not in self.held:
            return None
        pieces = self.held.pop(call_id)
        return [ASToolCallBlock(id=agentscope_call_id(call_id, event.extras), name=name or "", input="".join(pieces))]


async def _chain(first: Any, rest: AsyncGenerator[ChatResponse, None]) -> AsyncGenerator[ChatResponse, None]:
    try:
        if first is not None:
            yield first
        async for chunk in rest:
            yield chunk
    finally:
        await rest.aclose()


def to_modelwire(msg: ASMsg) -> Msg:
    """An AgentScope message as modelwire's, through the JSON form both share; a text or
    data block's extras kept in its id (:func:`kept_id`) are put back on it."""
    data = json.loads(msg.model_dump_json())
    content = data.get("content")
    if isinstance(content, list):
        for block in content:
            if (
                isinstance(block, dict)
                and block.get("type") in _KEPT_IN_ID
                and str(block.get("id", "")).startswith(_KEPT)
            ):
                _unkept(block)
    return Msg.from_dict(data)


_KEPT = "mw1."
_KEPT_IN_ID = ("text", "data", "thinking")
# A thinking block's fields AgentScope names itself (its formatters replay them): kept as
# fields; modelwire's others (provenance, the reasoning field's name ...) ride in the id.
_AGENTSCOPE_THINKING = ("signature", "redacted_thinking_data", "reasoning_item_id", "reasoning_item_raw")


_REF = "ref:"


def endpoint_ref(endpoint: str) -> str:
    """An endpoint family as AgentScope stores it: a preset's name as it is (``anthropic``),
    an address (``127.0.0.1:8080``, ``llm.internal.example:443``) by reference, a digest of
    it, so that what AgentScope saves names no host or port of the deployment."""
    if not any(c in endpoint for c in ".:/") or endpoint.startswith(_REF):
        return endpoint
    import hashlib

    return _REF + hashlib.sha256(endpoint.encode()).hexdigest()[:16]


def _by_reference(extras: dict[str, Any]) -> dict[str, Any]:
    """``extras`` with every endpoint its provenance records written by reference."""
    meta = extras.get("provider_metadata")
    if not isinstance(meta, dict):
        return extras
    out = {}
    for provider, fields in meta.items():
        if isinstance(fields, dict) and isinstance(fields.get("endpoint"), str):
            fields = {**fields, "endpoint": endpoint_ref(fields["endpoint"])}
        out[provider] = fields
    return {**extras, "provider_metadata": out}


def _endpoint_restored(extras: dict[str, Any], endpoint: str) -> None:
    """A provenance endpoint written by reference made the model's own again where the
    reference is the model's endpoint (a family of another deployment stays a reference,
    which no model's endpoint equals: not replayed, as for any other family)."""
    meta = extras.get("provider_metadata")
    if not isinstance(meta, dict):
        return
    ref = endpoint_ref(endpoint)
    for fields in meta.values():
        if isinstance(fields, dict) and fields.get("endpoint") == ref != endpoint:
            fields["endpoint"] = endpoint


def kept_id(block_id: str, extras: dict[str, Any] | None) -> str:
    """The id a text, data or thinking block has in AgentScope: its own where it has no
    extras (for thinking: none but the fields AgentScope names), else ``mw1.`` and its id
    and extras as base64url JSON, so they are in what AgentScope saves (it keeps no other
    field of text and data blocks) and come back with the block. An endpoint family that
    is an address is kept by reference (:func:`endpoint_ref`)."""
    if not extras:
        return block_id
    extras = _by_reference(extras)
    raw = json.dumps({"id": block_id, "extras": extras}, ensure_ascii=False, separators=(",", ":"))
    return _KEPT + base64.urlsafe_b64encode(raw.encode()).decode("ascii").rstrip("=")


def _unkept(block: dict[str, Any]) -> None:
    encoded = block["id"][len(_KEPT) :]
    try:
        kept = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
        block_id, extras = kept["id"], kept["extras"]
    except (ValueError, KeyError, TypeError):
        return  # not one of ours: the id stays as it is
    if isinstance(block_id, str) and isinstance(extras, dict):
        block["id"] = block_id
        for key, value in extras.items():
            block.setdefault(key, value)


def agentscope_call_id(call_id: str, extras: dict[str, Any] | None) -> str:
    """The id AgentScope gives a tool call: a Gemini call's thought signature rides in it
    (``gemini_ts:<signature>``, as AgentScope's own Gemini model writes it), so it survives
    AgentScope's storage, which keeps no other field of a tool call."""
    signature = (extras or {}).get("thought_signature")
    return (
        GEMINI_TS + signature
        if isinstance(signature, str) and signature and not call_id.startswith(GEMINI_TS)
        else call_id
    )


def to_agentscope_blocks(msg: Msg) -> tuple[list[Any], list[dict[str, Any]]]:
    """The blocks AgentScope's ``ChatResponse`` can hold, and the others (server-side tool
    calls and their results, which AgentScope must not run) as JSON for the metadata."""
    blocks: list[Any] = []
    other: list[dict[str, Any]] = []
    renamed: dict[str, str] = {}
    for block in msg.content:
        data = block.to_dict()
        if block.type == "tool_call" and not data.get("server_side"):
            new_id = agentscope_call_id(block.id, extras_of(block))
            if new_id != block.id:
                renamed[block.id] = data["id"] = new_id
        elif block.type == "tool_result" and block.id in renamed:
            data["id"] = renamed[block.id]
        elif block.type == "thinking":
            own = {k: v for k, v in extras_of(block).items() if k not in _AGENTSCOPE_THINKING}
            data = {k: v for k, v in data.items() if k not in own}
            data["id"] = kept_id(block.id, own)
        elif block.type in _KEPT_IN_ID:
            data["id"] = kept_id(block.id, extras_of(block))
        if block.type == "tool_call" and data.get("server_side"):
            other.append(data)
        elif block.type in _AS_BLOCKS:
            blocks.append(_AS_BLOCKS[block.type].model_validate(data))
        else:
            other.append(data)
    return blocks, other


def _final(reply: Msg, end: Any, seconds: float, usage_sent: bool = True) -> ChatResponse:
    blocks, other = to_agentscope_blocks(reply)
    for block in blocks:
        block.finished_at = None  # as AgentScope's own models give their blocks to its agent
    usage = reply.usage if usage_sent else None
    metadata: dict[str, Any] = {}
    if end is not None:
        metadata.update(
            stop_reason=end.stop_reason,
            provider_stop_reason=end.provider_stop_reason,
            reasoning_tokens=end.reasoning_tokens,
        )
        metadata.update(
            {k: v for k, v in (end.metadata or {}).items() if k in ("provider", "protocol", "model", "response_id")}
        )
    if other:
        metadata["server_tool_blocks"] = other
    return ChatResponse(
        content=blocks,
        is_last=True,
        usage=None
        if usage is None
        else ChatUsage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            time=seconds,
            cache_input_tokens=usage.cache_input_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens,
        ),
        metadata=metadata,
    )


def _tools_and_choice(tools: list[dict[str, Any]] | None, tool_choice: Any) -> tuple[list[dict[str, Any]] | None, Any]:
    """AgentScope's tool schemas (OpenAI's function shape) and ``ToolChoice`` as modelwire's."""
    if tool_choice is None:
        return tools, None
    allowed = getattr(tool_choice, "tools", None)
    if allowed is not None and tools:
        tools = [t for t in tools if (t.get("function") or t).get("name") in allowed]
    return tools, getattr(tool_choice, "mode", tool_choice)
