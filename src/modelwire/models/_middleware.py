"""Middleware: behaviour around any model's calls, without subclassing it.

    import modelwire

    model = modelwire.wrap(modelwire.load_model("anthropic:claude-sonnet-4-5"), Redact(), Logged())

A :class:`Middleware` has two hooks, each optional:

- ``request(call)``: change the call before the request is built (``call.messages``,
  ``call.tools``, ``call.tool_choice``, ``call.options``), or refuse it by raising;
- ``stream(call, call_next)``: the call's events, from ``call_next(call)`` (the rest of
  the layers, then the model): pass them on, change or drop them, stop the stream cleanly
  (:class:`StreamStop`), see the errors it raises, or call ``call_next`` again (a retry).

Order: the first middleware is the outermost layer. Its ``request`` sees the call first and
its ``stream`` sees the events last, after every later layer changed them; ``wrap(model,
a, b)`` is ``wrap(wrap(model, b), a)`` (as Vercel's ``wrapLanguageModel`` and AgentScope's
middleware lists). A layer's ``request`` runs each time the layer outside it calls
``call_next``, on a copy of the call: a retry from an outer layer runs it again.

Cost per event: none without middleware (``wrap(model)`` is ``model``); with some, one async
generator step for the wrapper and one for each ``stream`` hook (about 70 ns each, see
``benchmarks/middleware.py``); ``request`` hooks run once per call.

The wrapped model has the model interface (``stream``, ``complete``, ``complete_sync``,
``count_tokens`` of the request as the hooks change it, ``batch`` with each request
changed), and anything else the model has is read through it (``capabilities``,
``provider`` ...). ``complete`` folds the wrapped ``stream``, so a whole answer passes the
same layers. No middleware, no wrapping: ``wrap(model)`` is ``model``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, AsyncGenerator, AsyncIterator, Callable, Sequence, TypeVar, overload

from .. import event as E
from .._ids import new_id
from .._sync import run_sync
from ..errors import ConfigError
from ..event._events import StopReasonValue
from ..message import Msg, MsgInput, as_messages

__all__ = ["Middleware", "ModelCall", "CallNext", "WrappedModel", "StreamStop", "DefaultOptions", "wrap"]

CallNext = Callable[["ModelCall"], AsyncIterator[E.AgentEvent]]


@dataclasses.dataclass
class ModelCall:
    """One model call as middleware see it, and may change it before it is sent.

    Attributes:
        messages: the conversation (a list of :class:`~modelwire.message.Msg`).
        tools: the tools offered (``ToolSpec``, server tools ...), or None.
        tool_choice: as the model takes it (``"auto"``, ``"required"``, a tool's name ...).
        options: the call's :class:`~modelwire.models.ModelOptions` as a dict of the ones set.
        reply_id: the id of the assistant message the events fold into.
        model: the model the layers wrap (to read, for example ``model.name``).
        inner: the layers inside this one and the model, as one model: what a layer asks
            when it needs the model's view of the call (``await call.inner.count_tokens(
            call.messages, ...)`` counts the request those layers would send).
    """

    messages: list[Msg]
    tools: list[Any] | None
    tool_choice: Any
    options: dict[str, Any]
    reply_id: str
    model: Any
    inner: Any = None

    def copy(self) -> "ModelCall":
        """A copy whose lists and options a layer may change without touching this one's."""
        return dataclasses.replace(
            self,
            messages=list(self.messages),
            tools=None if self.tools is None else list(self.tools),
            options=dict(self.options),
        )


class Middleware:
    """Behaviour around a model's calls: override ``request``, ``stream`` or both (see the
    module doc). A ``stream`` hook not overridden adds no step per event. Subclassing is
    optional: any object with either method, of the same shape, is middleware."""

    async def request(self, call: ModelCall) -> None:
        """Change ``call`` in place before the request is built; raise to refuse the call
        (the error reaches whoever iterates the stream, before any event)."""

    def stream(self, call: ModelCall, call_next: CallNext) -> AsyncIterator[E.AgentEvent]:
        """The call's events: by default, those of ``call_next(call)``, unchanged. An
        override is usually an async generator; an error the model raised comes out of
        ``call_next``'s iteration after the events that close what it opened."""
        return call_next(call)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _overrides(middleware: Any, hook: str) -> bool:
    """Whether ``middleware`` has ``hook`` of its own (not the base class's do-nothing one)."""
    own = getattr(type(middleware), hook, None)
    return callable(own) and own is not getattr(Middleware, hook)


def _options_dict(options: Any) -> dict[str, Any]:
    """A call's options (None, a dict or a ``ModelOptions``) as a dict of those set."""
    if options is None:
        return {}
    if isinstance(options, dict):
        return dict(options)
    fields = getattr(type(options), "__dataclass_fields__", None)
    if fields is None:
        raise ConfigError(f"a call's options are a dict or a ModelOptions, not {type(options).__name__}")
    out = {}
    for name, spec in fields.items():
        value = getattr(options, name)
        default = spec.default if spec.default is not dataclasses.MISSING else spec.default_factory()
        if value != default:
            out[name] = value
    return out


class _Layer:
    """One middleware and which of its hooks it has."""

    __slots__ = ("middleware", "requests", "streams")

    def __init__(self, middleware: Any) -> None:
        self.middleware = middleware
        self.requests = _overrides(middleware, "request")
        self.streams = _overrides(middleware, "stream")
        if not (self.requests or self.streams or isinstance(middleware, Middleware)):
            raise ConfigError(
                f"wrap() takes middleware (with a request or a stream hook), not {type(middleware).__name__}"
            )


class WrappedModel:
    """A model with middleware around it (made by :func:`wrap`); it has the interface of the
    model it wraps. ``model`` is that model, ``middleware`` the layers, outermost first."""

    def __init__(self, model: Any, middleware: Sequence[Middleware]) -> None:
        if not callable(getattr(model, "stream", None)):
            raise ConfigError(f"wrap() takes a model (with a stream method), not {type(model).__name__}")
        self.model = model
        self.middleware: tuple[Middleware, ...] = tuple(middleware)
        self._layers = tuple(_Layer(m) for m in self.middleware)
        self._inner: dict[int, Any] = {}  # index -> the layers from there on and the model, as one model
        # index -> whether a request hook runs before the next stream hook (or the model) from there
        awaits = [False] * (len(self._layers) + 1)
        for index in range(len(self._layers) - 1, -1, -1):
            layer = self._layers[index]
            awaits[index] = layer.requests or (not layer.streams and awaits[index + 1])
        self._awaits = awaits

    def _rest(self, index: int) -> Any:
        """Layers ``index`` on and the model, as one model (made once)."""
        found = self._inner.get(index)
        if found is None:
            rest = self.middleware[index:]
            found = self._inner[index] = WrappedModel(self.model, rest) if rest else self.model
        return found

    def __repr__(self) -> str:
        return f"WrappedModel({self.model!r}, {', '.join(map(repr, self.middleware))})"

    def __getattr__(self, name: str) -> Any:
        # Only for what the wrapper does not have itself: the model's name, provider,
        # capabilities, forced_tool_ok, upload_file ...
        if name.startswith("__") or name in ("model", "middleware", "_layers", "_inner", "_awaits"):
            raise AttributeError(name)
        return getattr(self.model, name)

    @property
    def retry(self) -> Any:
        return self.model.retry

    @retry.setter
    def retry(self, policy: Any) -> None:
        self.model.retry = policy  # the model retries; a layer may retry around it too

    def call_for(
        self,
        messages: MsgInput,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        options: Any = None,
        reply_id: str | None = None,
    ) -> ModelCall:
        """The :class:`ModelCall` for these arguments, as the first layer sees it."""
        return ModelCall(
            list(as_messages(messages)),
            None if tools is None else list(tools),
            tool_choice,
            _options_dict(options),
            reply_id or new_id(),
            self.model,
        )

    def stream(
        self,
        messages: MsgInput,
        *,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        options: Any = None,
        reply_id: str | None = None,
    ) -> AsyncGenerator[E.AgentEvent, None]:
        """The events of one call through every layer (see the module doc)."""
        return self._run(self.call_for(messages, tools, tool_choice, options, reply_id))

    async def _run(self, call: ModelCall) -> AsyncGenerator[E.AgentEvent, None]:
        opened: list[Any] = []  # every stream the layers opened, closed when the call ends
        try:
            async for event in await self._opened(0, call, opened):
                yield event
        finally:
            for stream in reversed(opened):  # the model's last: a layer's own clean-up comes first
                close = getattr(stream, "aclose", None)
                if close is not None:
                    await close()

    async def _opened(self, index: int, call: ModelCall, opened: list[Any]) -> AsyncIterator[E.AgentEvent]:
        """The stream of layer ``index`` on: the ``request`` hooks run, each on its own copy
        of the call, up to the first layer with a ``stream`` hook, which is opened around
        the layers inside it (or the model, when none has one)."""
        layers = self._layers
        while index < len(layers):
            layer = layers[index]
            if layer.requests or layer.streams:
                call = self._for_layer(index, call)
                if layer.requests:
                    await layer.middleware.request(call)
                if layer.streams:
                    return self._streamed(index, call, opened)
            index += 1
        return self._streamed(index, call, opened)

    def _enter(self, index: int, call: ModelCall, opened: list[Any]) -> AsyncIterator[E.AgentEvent]:
        """``call_next`` of layer ``index - 1``: as :meth:`_opened`, without a step of its
        own per event unless a ``request`` hook must be awaited first."""
        if self._awaits[index]:
            return self._after_requests(index, call, opened)
        layers = self._layers
        while index < len(layers) and not layers[index].streams:
            index += 1
        return self._streamed(index, self._for_layer(index, call) if index < len(layers) else call, opened)

    async def _after_requests(
        self, index: int, call: ModelCall, opened: list[Any]
    ) -> AsyncGenerator[E.AgentEvent, None]:
        async for event in await self._opened(index, call, opened):
            yield event

    def _for_layer(self, index: int, call: ModelCall) -> ModelCall:
        own = call.copy()
        own.inner = _Rest(self, index + 1)
        return own

    def _streamed(self, index: int, call: ModelCall, opened: list[Any]) -> AsyncIterator[E.AgentEvent]:
        """Layer ``index``'s ``stream`` hook around the layers inside it, or the model's
        stream (``index`` past the last layer); kept to be closed when the call ends."""
        stream: AsyncIterator[E.AgentEvent]
        if index == len(self._layers):
            stream = self.model.stream(
                call.messages,
                tools=call.tools,
                tool_choice=call.tool_choice,
                options=call.options or None,
                reply_id=call.reply_id,
            )
        else:
            stream = self._layers[index].middleware.stream(call, self._next(index + 1, opened))
        opened.append(stream)
        return stream

    def _next(self, index: int, opened: list[Any]) -> CallNext:
        def call_next(call: ModelCall) -> AsyncIterator[E.AgentEvent]:
            return self._enter(index, call, opened)

        return call_next

    async def complete(
        self,
        messages: MsgInput,
        *,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        options: Any = None,
        reply_id: str | None = None,
        name: str = "assistant",
    ) -> Msg:
        """The assistant message of one call through every layer (the folded stream)."""
        from ._http import fold_call

        return await fold_call(self, messages, tools, tool_choice, options, reply_id, name)

    def complete_sync(self, messages: MsgInput, **kwargs: Any) -> Msg:
        return run_sync(self.complete(messages, **kwargs), "model.complete")

    async def requested(self, call: ModelCall) -> ModelCall:
        """``call`` as every layer's ``request`` leaves it: what would be sent."""
        for index, layer in enumerate(self._layers):
            call = call.copy()
            call.inner = _Rest(self, index + 1)
            if layer.requests:
                await layer.middleware.request(call)
        return call

    async def count_tokens(
        self,
        messages: MsgInput,
        *,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        options: Any = None,
        **kwargs: Any,
    ) -> Any:
        """The input tokens of the request the layers would send (their ``request`` hooks run)."""
        call = await self.requested(self.call_for(messages, tools, tool_choice, options))
        return await self.model.count_tokens(
            call.messages, tools=call.tools, tool_choice=call.tool_choice, options=call.options or None, **kwargs
        )

    async def batch(self, requests: Sequence[Any]) -> Any:
        """The model's ``batch`` with each request as the layers' ``request`` hooks leave it
        (their ``stream`` hooks do not see a batch's results)."""
        changed = []
        for item in requests:
            given = item if isinstance(item, dict) else {"messages": item}
            call = await self.requested(
                self.call_for(given["messages"], given.get("tools"), given.get("tool_choice"), given.get("options"))
            )
            changed.append(
                {
                    "messages": call.messages,
                    "tools": call.tools,
                    "tool_choice": call.tool_choice,
                    "options": call.options or None,
                }
            )
        return await self.model.batch(changed)

    def preflight(self, messages: MsgInput, tools: Any = None, tool_choice: Any = None, options: Any = None) -> Any:
        raise ConfigError("a wrapped model's request is known only once its middleware ran: preflight the model")

    def build_request(self, *args: Any, **kwargs: Any) -> Any:
        raise ConfigError("a wrapped model's request is built by the model, after its middleware: call stream()")


class _Rest:
    """``ModelCall.inner``: the layers inside one and the model, made when first used."""

    __slots__ = ("_wrapped", "_index")

    def __init__(self, wrapped: WrappedModel, index: int) -> None:
        self._wrapped = wrapped
        self._index = index

    def __getattr__(self, name: str) -> Any:
        return getattr(self._wrapped._rest(self._index), name)


_Model = TypeVar("_Model")


@overload
def wrap(model: _Model) -> _Model: ...


@overload
def wrap(model: Any, middleware: Any, /, *more: Any) -> WrappedModel: ...


def wrap(model: Any, *middleware: Any) -> Any:
    """``model`` with ``middleware`` around its calls, the first outermost (see the module
    doc). Wrapping a wrapped model adds layers outside its own; no middleware: ``model``."""
    if not middleware:
        return model
    if isinstance(model, WrappedModel):
        return WrappedModel(model.model, (*middleware, *model.middleware))
    return WrappedModel(model, middleware)


class StreamStop:
    """What a ``stream`` hook needs to stop a call cleanly: it notes the events passed on
    (``yield stop.passed(event)``), and ``stop(reason)`` gives the events that end the call
    there: every block left open ended, a tool call cut short answered as ``interrupted``
    (so that an agent does not run it on half its arguments), and a ``MODEL_CALL_END`` with
    ``finished_reason="interrupted"``, the ``stop_reason`` given (``"interrupted"`` unless
    said otherwise; a guardrail may say ``"content_filter"``) and
    ``metadata["stopped"] = {"by": ..., "reason": ...}``. The grammar of the stream stays
    valid. Token counts are those the model's own end gave, if it came; else 0."""

    __slots__ = ("call", "by", "started", "ended", "blocks", "tool_calls", "results", "end")

    def __init__(self, call: ModelCall, by: str = "middleware") -> None:
        self.call: ModelCall = call
        self.by: str = by
        self.started: bool = False
        self.ended: bool = False
        self.blocks: dict[str, str] = {}  # open block id -> kind ("text", "thinking", "data")
        self.tool_calls: dict[str, str] = {}  # open tool call id -> name
        self.results: set[str] = set()  # open tool result ids
        self.end: Any = None  # the model's MODEL_CALL_END, if seen

    def passed(self, event: E.AgentEvent) -> E.AgentEvent:
        """Note ``event`` as passed on, and return it."""
        kind = event.type
        note = _NOTES.get(kind)
        if note is not None:
            note(self, event)
        return event

    def seen_end(self, event: E.AgentEvent) -> None:
        """Note the model's ``MODEL_CALL_END`` held back (its token counts go on the stop's)."""
        self.end = event

    def stop(self, reason: str, *, stop_reason: StopReasonValue = "interrupted") -> list[E.AgentEvent]:
        """The events that end the call here (none if its end was passed on already)."""
        if self.ended:
            return []
        rid = self.call.reply_id
        out: list[E.AgentEvent] = []
        if not self.started:
            out.append(E.ModelCallStartEvent(reply_id=rid, model_name=str(getattr(self.call.model, "name", ""))))
        for block_id, kind in self.blocks.items():
            out.append(_BLOCK_ENDS[kind](reply_id=rid, block_id=block_id))
        for call_id in self.results:
            out.append(E.ToolResultEndEvent(reply_id=rid, tool_call_id=call_id, state="interrupted"))
        for call_id, name in self.tool_calls.items():
            out += [
                E.ToolCallEndEvent(reply_id=rid, tool_call_id=call_id),
                E.ToolResultStartEvent(reply_id=rid, tool_call_id=call_id, tool_call_name=name),
                E.ToolResultTextDeltaEvent(
                    reply_id=rid, tool_call_id=call_id, delta=f"The call was stopped before it was complete: {reason}"
                ),
                E.ToolResultEndEvent(reply_id=rid, tool_call_id=call_id, state="interrupted"),
            ]
        end = self.end
        out.append(
            E.ModelCallEndEvent(
                reply_id=rid,
                input_tokens=getattr(end, "input_tokens", 0),
                output_tokens=getattr(end, "output_tokens", 0),
                cache_input_tokens=getattr(end, "cache_input_tokens", 0),
                cache_creation_input_tokens=getattr(end, "cache_creation_input_tokens", 0),
                reasoning_tokens=getattr(end, "reasoning_tokens", 0),
                finished_reason="interrupted",
                stop_reason=stop_reason,
                metadata={**(getattr(end, "metadata", None) or {}), "stopped": {"by": self.by, "reason": reason}},
            )
        )
        self.blocks, self.tool_calls, self.results = {}, {}, set()
        self.ended = True
        return out


def _block_start(stop: StreamStop, event: Any) -> None:
    stop.blocks[event.block_id] = _BLOCK_KINDS[event.type]


def _block_end(stop: StreamStop, event: Any) -> None:
    stop.blocks.pop(event.block_id, None)


def _call_start(stop: StreamStop, event: Any) -> None:
    stop.tool_calls[event.tool_call_id] = event.tool_call_name


def _call_end(stop: StreamStop, event: Any) -> None:
    stop.tool_calls.pop(event.tool_call_id, None)


def _result_start(stop: StreamStop, event: Any) -> None:
    stop.results.add(event.tool_call_id)


def _result_end(stop: StreamStop, event: Any) -> None:
    stop.results.discard(event.tool_call_id)


def _model_start(stop: StreamStop, event: Any) -> None:
    stop.started = True


def _model_end(stop: StreamStop, event: Any) -> None:
    stop.ended = True


_BLOCK_KINDS = {"TEXT_BLOCK_START": "text", "THINKING_BLOCK_START": "thinking", "DATA_BLOCK_START": "data"}
_BLOCK_ENDS: dict[str, Any] = {
    "text": E.TextBlockEndEvent,
    "thinking": E.ThinkingBlockEndEvent,
    "data": E.DataBlockEndEvent,
}
_NOTES: dict[str, Callable[[StreamStop, Any], None]] = {
    **dict.fromkeys(_BLOCK_KINDS, _block_start),
    **dict.fromkeys(("TEXT_BLOCK_END", "THINKING_BLOCK_END", "DATA_BLOCK_END"), _block_end),
    "TOOL_CALL_START": _call_start,
    "TOOL_CALL_END": _call_end,
    "TOOL_RESULT_START": _result_start,
    "TOOL_RESULT_END": _result_end,
    "MODEL_CALL_START": _model_start,
    "MODEL_CALL_END": _model_end,
}


class DefaultOptions(Middleware):
    """Options every call gets unless it sets them itself (a team's defaults: a
    ``max_tokens`` cap, a temperature, prompt caching ...). ``extra_headers`` and
    ``extra_body`` are merged key by key, the call's keys winning."""

    def __init__(self, **options: Any) -> None:
        self.options = options  # checked by the model, as a call's own options are

    def __repr__(self) -> str:
        return f"DefaultOptions({', '.join(f'{k}={v!r}' for k, v in self.options.items())})"

    async def request(self, call: ModelCall) -> None:
        given = call.options
        merged = {**self.options, **{k: v for k, v in given.items() if v is not None}}
        for key in ("extra_headers", "extra_body"):
            if key in self.options and key in given:
                merged[key] = {**self.options[key], **(given[key] or {})}
        call.options = merged
