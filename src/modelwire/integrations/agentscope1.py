"""AgentScope 1.x agents on modelwire models: a ``ChatModelBase`` and its formatter for
``agentscope==1.*`` (the 2.x one is :mod:`modelwire.integrations.agentscope`).

    from agentscope.agent import ReActAgent
    from modelwire.integrations.agentscope1 import ModelwireChatModel, ModelwireFormatter

    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are a helpful assistant.",
        model=ModelwireChatModel("anthropic:claude-sonnet-4-5", max_tokens=2048),
        formatter=ModelwireFormatter(),
        toolkit=toolkit,
    )

A 1.x agent formats its memory with its formatter and hands the result to its model. The
formatter here hands over the messages' own JSON (``Msg.to_dict()``), and the model reads it
with :func:`modelwire.message.from_agentscope1_history`: tool results (1.x keeps them in
``system`` messages) go back beside their calls, and modelwire's formatter for the model's
provider builds the request. What comes back is what 1.0.21's own models return: a
``ChatResponse`` (not streaming) or an async generator of them whose every chunk holds the
whole reply so far (the 1.x ``ReActAgent`` replaces its message's content with each chunk's),
tool calls as ``tool_use`` blocks with ``input`` and ``raw_input``, thinking with the
provider's extras (an Anthropic ``signature``) as keys of its block, usage as ``ChatUsage``
and a ``structured_model``'s answer as the response's ``metadata``.

Importing this module imports AgentScope 1.x; ``import modelwire`` does not.
"""

from __future__ import annotations

import json
import time
from typing import Any, AsyncGenerator, Sequence

from agentscope.formatter import FormatterBase
from agentscope.message import Msg as ASMsg
from agentscope.model import ChatModelBase, ChatResponse
from agentscope.model._model_usage import ChatUsage
from agentscope.tracing import trace_llm

from .. import errors as E
from .._record import extras_of
from ..message import Msg, ToolCallBlock, from_agentscope1_history
from ..message._agentscope1 import _written
from ..models import load_model

__all__ = ["ModelwireChatModel", "ModelwireFormatter", "STRUCTURED_TOOL"]

STRUCTURED_TOOL = "generate_structured_output"
"""The tool a ``structured_model`` is asked through (the name 1.0.21's own models give it)."""
_CHOICES = ("auto", "none", "required")


class ModelwireFormatter(FormatterBase):
    """The formatter to pair with :class:`ModelwireChatModel`: the messages' 1.x JSON, which
    the model reads; the request itself is built by modelwire, for the model's provider."""

    async def format(self, msgs: list[ASMsg], **kwargs: Any) -> list[dict[str, Any]]:
        """``msgs`` as their ``to_dict()`` JSON, in order (copies: the memory is not shared)."""
        self.assert_list_of_msgs(msgs)
        return [json.loads(json.dumps(m.to_dict(), ensure_ascii=False)) for m in msgs]


class ModelwireChatModel(ChatModelBase):
    """A modelwire model (by config string, profile, or a model object) as an AgentScope 1.x
    chat model. ``options`` are :func:`modelwire.load_model`'s (``max_tokens``, ``thinking``,
    ``api_key``, ``base_url`` ...); ``generate_kwargs`` are per-call options, as 1.x's models
    take them."""

    def __init__(
        self,
        model: Any,
        *,
        stream: bool = True,
        generate_kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if isinstance(model, str) or model is None:
            self.wire_model = load_model(model, **options)
        else:
            if options:
                raise E.ConfigError("pass options to load_model() when you bring your own model")
            self.wire_model = model
        super().__init__(getattr(self.wire_model, "name", str(model)), stream)
        self.generate_kwargs = dict(generate_kwargs or {})

    @trace_llm  # AgentScope's own spans, where its tracing is on (as its own models have them)
    async def __call__(  # pyright: ignore[reportIncompatibleMethodOverride] - trace_llm's own return type
        self,
        messages: Sequence[dict[str, Any] | ASMsg],
        tools: list[dict] | None = None,
        tool_choice: str | None = None,
        structured_model: Any = None,
        **generate_kwargs: Any,
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        """One model call, as 1.0.21's models make it: ``tool_choice`` is ``auto``, ``none``,
        ``required`` or a tool's name; a ``structured_model`` (a pydantic class) replaces the
        tools with one the model must call, and its arguments are the response's metadata."""
        history = from_agentscope1_history(_as_json(messages))
        if tool_choice == "any":  # 1.x's models take this old name for "required"
            tool_choice = "required"
        if tool_choice is not None:
            self._validate_tool_choice(tool_choice, tools)
        if structured_model is not None:
            tools, tool_choice = [_structured_tool(structured_model)], STRUCTURED_TOOL
        options = {**self.generate_kwargs, **generate_kwargs}
        call = _Call(self.wire_model, history, tools or None, tool_choice, options, structured_model is not None)
        if not self.stream:
            return await call.whole()
        # The call starts here, as 1.x's own models start theirs: an error before the first
        # output (a refused key, a 429) is raised by this await, not by the first iteration.
        chunks = call.chunks()
        first = await chunks.__anext__()
        return _chain(first, chunks)


async def _chain(first: ChatResponse, rest: AsyncGenerator[ChatResponse, None]) -> AsyncGenerator[ChatResponse, None]:
    try:
        yield first
        async for chunk in rest:
            yield chunk
    finally:
        await rest.aclose()


def _as_json(messages: Sequence[Any]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        if isinstance(m, ASMsg):
            out.append(m.to_dict())
        elif isinstance(m, dict) and {"id", "name", "role", "content"} <= m.keys():  # what 1.x's to_dict() writes
            out.append(m)
        else:
            raise E.InvalidMessageError(
                "ModelwireChatModel reads AgentScope 1.x messages (Msg, or their to_dict() JSON: pair it with "
                "ModelwireFormatter), not a provider's request messages"
            )
    return out


def _structured_tool(structured_model: Any) -> dict[str, Any]:
    schema = structured_model.model_json_schema()
    schema.pop("title", None)
    return {
        "type": "function",
        "function": {
            "name": STRUCTURED_TOOL,
            "description": "Generate the required structured output.",
            "parameters": schema,
        },
    }


class _Call:
    """One model call, streamed as 1.x's cumulative chunks or answered whole."""

    def __init__(
        self, wire_model: Any, history: list[Msg], tools: Any, tool_choice: Any, options: dict, structured: bool
    ) -> None:
        self.wire_model, self.history, self.tools, self.tool_choice = wire_model, history, tools, tool_choice
        self.options, self.structured = options, structured
        self.reply = Msg(name="assistant", role="assistant", content=[])
        self.started = time.monotonic()
        self.usage_sent = False

    async def whole(self) -> ChatResponse:
        async for _ in self._events():
            pass
        return self.final()

    async def chunks(self) -> AsyncGenerator[ChatResponse, None]:
        partial = _Partial()
        events = self._events()
        try:
            async for event in events:
                if partial.apply(event):
                    yield ChatResponse(content=partial.content(), id=self.reply.id, usage=self._usage())
        finally:
            await events.aclose()  # a 1.x reply cancelled between chunks closes the HTTP stream now
        yield self.final()

    async def _events(self) -> AsyncGenerator[Any, None]:
        stream = self.wire_model.stream(
            self.history,
            tools=self.tools,
            tool_choice=self.tool_choice,
            options=self.options or None,
            reply_id=self.reply.id,
        )
        try:
            async for event in stream:
                self.reply.append_event(event, strict=True)
                if event.type == "MODEL_CALL_END":
                    self.usage_sent = self.usage_sent or "usage" in (event.metadata or {})
                yield event
        finally:
            await stream.aclose()  # a cancelled 1.x reply closes the HTTP stream

    def _usage(self) -> ChatUsage | None:
        usage = self.reply.usage
        if usage is None or not self.usage_sent:
            return None
        details = {
            "cache_input_tokens": usage.cache_input_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "reasoning_tokens": usage.reasoning_tokens,
        }
        return ChatUsage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            time=time.monotonic() - self.started,
            metadata={k: v for k, v in details.items() if v} or None,
        )

    def final(self) -> ChatResponse:
        """The whole reply: the blocks 1.x holds; a server's own tool calls and results (which
        the agent must not run) and any other block 1.x has no form for, in ``metadata``
        only when no ``structured_model`` owns it."""
        content: list[Any] = []  # 1.x's blocks are TypedDicts: these dicts are their JSON
        metadata: Any = None
        for i, block in enumerate(self.reply.content):
            if block.type == "tool_result" or (block.type == "tool_call" and extras_of(block).get("server_side")):
                continue  # a server's own tool, run by the provider: the agent must not run it
            try:
                written = _written(block, f"content[{i}]")
            except E.InvalidMessageError:
                continue
            if isinstance(block, ToolCallBlock):
                written.setdefault("raw_input", block.input)
                if self.structured and block.name == STRUCTURED_TOOL:
                    metadata = written["input"]
            content.append(written)
        if self.structured and metadata is None:
            raise E.StructuredOutputError("the model did not answer in the structure asked for")
        return ChatResponse(content=content, id=self.reply.id, usage=self._usage(), metadata=metadata)


class _Partial:
    """A streamed reply as 1.x shows it while it streams: every block so far, whole."""

    def __init__(self) -> None:
        self.blocks: dict[str, dict[str, Any]] = {}
        self.raw: dict[str, str] = {}

    def apply(self, event: Any) -> bool:
        """Take one event; whether it changed what a chunk shows."""
        kind = event.type
        if kind == "TEXT_BLOCK_DELTA":
            block = self.blocks.setdefault(event.block_id, {"type": "text", "text": ""})
            block["text"] += event.delta
        elif kind == "THINKING_BLOCK_DELTA":
            block = self.blocks.setdefault(event.block_id, {"type": "thinking", "thinking": ""})
            block["thinking"] += event.delta
        elif kind == "TOOL_CALL_START":
            self.raw[event.tool_call_id] = ""
            self.blocks[event.tool_call_id] = {
                "type": "tool_use",
                "id": event.tool_call_id,
                "name": event.tool_call_name,
                "input": {},
                "raw_input": "",
            }
        elif kind == "TOOL_CALL_DELTA" and event.tool_call_id in self.blocks:
            raw = self.raw[event.tool_call_id] = self.raw[event.tool_call_id] + event.delta
            block = self.blocks[event.tool_call_id]
            block["raw_input"] = raw
            try:
                block["input"] = json.loads(raw)
            except ValueError:
                pass  # the arguments so far are not JSON yet: the last that was stays shown
        elif kind == "TOOL_CALL_END" and (event.extras or {}).get("server_side"):
            self.blocks.pop(event.tool_call_id, None)
        else:
            return False
        return True

    def content(self) -> list[Any]:
        return [dict(b) for b in self.blocks.values()]
