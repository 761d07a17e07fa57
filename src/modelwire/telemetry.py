"""OpenTelemetry traces and metrics, following the semantic conventions for generative AI.

Spans: ``invoke_agent {agent}`` around a reply, ``chat {model}`` for each model call
(provider, request and response model, response id, finish reasons, input / output / cache
tokens, time to first token, cost), ``execute_tool {tool}`` for each tool run (tool name,
call id). Metrics: ``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration``
histograms.

Only ``opentelemetry-api`` is used, and only when it is installed (``pip install
'modelwire[otel]'``) and in use in the process (something imported ``opentelemetry.trace``:
an SDK, Logfire, auto-instrumentation): whatever the application configured receives the
spans, with no further code. Otherwise this module does nothing and imports nothing.
``MODELWIRE_TRACING=0`` turns it off. Message content is recorded only when the
conventions' switch is on: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``.
"""

from __future__ import annotations

import contextvars
import functools
import importlib.util
import json
import os
import sys
import time
from typing import Any, AsyncGenerator

__all__ = [
    "enabled",
    "capture_content",
    "ModelCallTrace",
    "model_call",
    "agent_span",
    "end_agent_span",
    "under",
    "tool_span",
    "mark_error",
]

_api: Any = None  # (trace, metrics) once looked up; False when not installed
_instruments: dict[str, Any] = {}


def _provider_name(provider: str) -> str:
    """The conventions' name for a provider: its preset's ``otel_name``, else its own."""
    from .protocols import find_preset

    preset = find_preset(provider)  # one lookup: no protocol is loaded for it
    return (preset.otel_name if preset is not None else None) or provider


def enabled() -> bool:
    """Whether traces and metrics are made: ``opentelemetry-api`` is installed."""
    return _otel() is not None


def capture_content() -> bool:
    """Whether spans carry the messages themselves (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``)."""
    return os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "").lower() in ("true", "1")


def _otel() -> Any:
    global _api
    if _api is None:
        if os.environ.get("MODELWIRE_TRACING", "1") in ("0", "false") or not _installed():
            _api = False
        elif "opentelemetry.trace" not in sys.modules:
            # Installed (often as another package's dependency) and not in use: nothing in
            # this process imported the API, so no SDK, Logfire or auto-instrumentation is
            # there to receive a span, and one made now would be a no-op that cost the first
            # call the API's import. Asked again at every call, so tracing starts with the
            # first call after the application sets one up.
            return None
        else:
            from opentelemetry import metrics, trace

            _api = (trace, metrics)
    return _api or None


@functools.cache
def _installed() -> bool:
    """Whether ``opentelemetry`` can be imported (looked up once)."""
    return importlib.util.find_spec("opentelemetry") is not None


def _instrument(name: str) -> Any:
    found = _instruments.get(name)
    if found is None:
        _, metrics = _otel()
        meter = metrics.get_meter("modelwire")
        if name == "tokens":
            found = meter.create_histogram(
                "gen_ai.client.token.usage",
                unit="{token}",
                description="Measures number of input and output tokens used",
            )
        else:
            found = meter.create_histogram(
                "gen_ai.client.operation.duration", unit="s", description="GenAI operation duration"
            )
        _instruments[name] = found
    return found


def _tracer() -> Any:
    trace, _ = _otel()
    return trace.get_tracer("modelwire")


class ModelCallTrace:
    """One model call's span; ``first_token()`` once output starts, then ``end()``."""

    __slots__ = ("span", "started", "first", "attrs", "ended")

    def __init__(self, span: Any, attrs: dict[str, Any]) -> None:
        self.span: Any = span
        self.started: float = time.monotonic()
        self.first: float | None = None
        self.attrs: dict[str, Any] = attrs
        self.ended: bool = False

    def first_token(self) -> None:
        if self.first is None:
            self.first = time.monotonic() - self.started
            self.span.add_event("gen_ai.first_token", {"modelwire.time_to_first_token": self.first})
            self.span.set_attribute("modelwire.time_to_first_token", self.first)

    def end(self, end_event: Any = None, error: BaseException | None = None, output: Any = None) -> None:
        if self.ended:
            return
        self.ended = True
        span = self.span
        if end_event is not None:
            usage = {
                "gen_ai.usage.input_tokens": end_event.input_tokens,
                "gen_ai.usage.output_tokens": end_event.output_tokens,
                "gen_ai.usage.cache_read.input_tokens": end_event.cache_input_tokens,
                "gen_ai.usage.cache_creation.input_tokens": end_event.cache_creation_input_tokens,
                "gen_ai.usage.reasoning.output_tokens": end_event.reasoning_tokens,
            }
            for key, value in usage.items():
                span.set_attribute(key, value)
            meta = end_event.metadata or {}
            if meta.get("model"):
                span.set_attribute("gen_ai.response.model", str(meta["model"]))
            if meta.get("response_id"):
                span.set_attribute("gen_ai.response.id", str(meta["response_id"]))
            if end_event.provider_stop_reason:
                span.set_attribute("gen_ai.response.finish_reasons", [end_event.provider_stop_reason])
            if end_event.stop_reason:
                span.set_attribute("modelwire.stop_reason", end_event.stop_reason)
            cost = end_event.cost or {}
            if cost.get("total") is not None:
                span.set_attribute("modelwire.cost.total_usd", cost["total"])
            tokens = _instrument("tokens")
            tokens.record(end_event.input_tokens, {**self.attrs, "gen_ai.token.type": "input"})
            tokens.record(end_event.output_tokens, {**self.attrs, "gen_ai.token.type": "output"})
        if output is not None and capture_content():
            span.set_attribute("gen_ai.output.messages", json.dumps([output.to_dict()], ensure_ascii=False))
        attrs = dict(self.attrs)
        if error is not None:
            kind = getattr(error, "error_type", None) or type(error).__name__
            span.set_attribute("error.type", str(kind))
            attrs["error.type"] = str(kind)
            trace, _ = _otel()
            span.set_status(trace.Status(trace.StatusCode.ERROR, str(getattr(error, "message", error))[:300]))
        _instrument("duration").record(time.monotonic() - self.started, attrs)
        span.end()


# Set by a FallbackModel around a call that follows failed ones: the span of that call
# records its attempt and why the models before it did not answer.
FALLBACK: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("modelwire_fallback", default=None)


def model_call(provider: str, model: str, url: str, options: Any, messages: Any = None) -> ModelCallTrace | None:
    """Start the span of one model call (None when tracing is off)."""
    if _otel() is None:
        return None
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": _provider_name(provider),
        "gen_ai.request.model": model,
    }
    span_attrs: dict[str, Any] = {
        **attrs,
        "server.address": parts.hostname or "",
        "server.port": parts.port or (443 if parts.scheme == "https" else 80),
    }
    for key in ("temperature", "top_p", "max_tokens"):
        value = getattr(options, key, None)
        if isinstance(value, (int, float)):
            span_attrs[f"gen_ai.request.{key}"] = value
    fallback = FALLBACK.get()
    if fallback is not None:
        span_attrs["modelwire.fallback.attempt"] = fallback["attempt"]
        span_attrs["modelwire.fallback.failed_models"] = [f["model"] for f in fallback["failed"]]
        span_attrs["modelwire.fallback.failed_errors"] = [f["error"] for f in fallback["failed"]]
    if messages is not None and capture_content():
        span_attrs["gen_ai.input.messages"] = json.dumps([m.to_dict() for m in messages], ensure_ascii=False)
    span = _tracer().start_span(f"chat {model}", kind=_otel()[0].SpanKind.CLIENT, attributes=span_attrs)
    return ModelCallTrace(span, attrs)


def agent_span(agent_name: str, session_id: str, model: Any) -> Any:
    """Start the span around one agent reply (None when tracing is off); model calls and
    tool runs of the reply are its children (see :func:`under` and :func:`tool_span`)."""
    if _otel() is None:
        return None
    attrs = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent_name,
        "gen_ai.conversation.id": session_id,
    }
    provider = getattr(model, "provider", None)
    if provider:
        attrs["gen_ai.provider.name"] = _provider_name(provider)
    if getattr(model, "name", None):
        attrs["gen_ai.request.model"] = str(model.name)
    return _tracer().start_span(f"invoke_agent {agent_name}", kind=_otel()[0].SpanKind.INTERNAL, attributes=attrs)


def end_agent_span(span: Any, reply: Any) -> None:
    """End an ``invoke_agent`` span with what the reply used and how it finished."""
    if span is None:
        return
    usage = reply.usage
    if usage is not None:
        span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
        span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cache_input_tokens)
        span.set_attribute("gen_ai.usage.cache_creation.input_tokens", usage.cache_creation_input_tokens)
    if reply.cost and reply.cost.get("total") is not None:
        span.set_attribute("modelwire.cost.total_usd", reply.cost["total"])
    if reply.finished_reason:
        span.set_attribute("modelwire.finished_reason", str(reply.finished_reason))
    if reply.error is not None:
        trace, _ = _otel()
        span.set_attribute("error.type", str(reply.error.type))
        span.set_status(trace.Status(trace.StatusCode.ERROR, reply.error.message[:300]))
    span.end()


async def under(span: Any, stream: Any) -> AsyncGenerator[Any, None]:
    """``stream`` (a model call) with ``span`` as the parent of the spans it starts: the
    parent is current only while the call starts, so nothing leaks into the consumer."""
    from opentelemetry import context, trace

    token = context.attach(trace.set_span_in_context(span))
    try:
        first = await stream.__anext__()
    except StopAsyncIteration:
        return
    finally:
        context.detach(token)
    try:
        yield first
        async for event in stream:
            yield event
    finally:
        await stream.aclose()


def tool_span(name: str, call_id: str, arguments: str | None, parent: Any) -> Any:
    """The span around one tool run, a child of the reply's (a context manager; a no-op
    when tracing is off). Entered in the tool's own task."""
    if parent is None or _otel() is None:
        return _NoSpan()
    trace, _ = _otel()
    attrs = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "function",
    }
    if arguments is not None and capture_content():
        attrs["gen_ai.tool.call.arguments"] = arguments
    return _tracer().start_as_current_span(
        f"execute_tool {name}",
        context=trace.set_span_in_context(parent),
        kind=trace.SpanKind.INTERNAL,
        attributes=attrs,
    )


def mark_error(span: Any, kind: str, message: str) -> None:
    """Mark ``span`` as failed with an ``error.type`` of ``kind`` and the message."""
    if isinstance(span, _NoSpan) or _otel() is None:
        return
    trace, _ = _otel()
    span.set_attribute("error.type", kind)
    span.set_status(trace.Status(trace.StatusCode.ERROR, message[:300]))


class _NoSpan:
    def __enter__(self) -> "_NoSpan":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def set_attribute(self, *args: Any) -> None:
        return None

    def set_status(self, *args: Any) -> None:
        return None
