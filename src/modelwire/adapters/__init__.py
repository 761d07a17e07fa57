"""Provider stream events -> modelwire events: one sans-I/O adapter per wire protocol.

    from modelwire.adapters import StreamDecoder, get_adapter

    decoder = StreamDecoder(get_adapter("anthropic")(reply_id))
    for chunk in http_body_chunks:
        for event in decoder.feed(chunk):
            ...
    for event in decoder.close():
        ...

Adapters are pure and synchronous: no I/O, no clock of their own beyond the one you
pass in. See ``_base.BaseAdapter`` for the contract, errors included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import BaseAdapter, StreamDecoder
from ._sse import SSEDecoder, SSEEvent

if TYPE_CHECKING:  # pragma: no cover
    from ..event import EventBase

__all__ = ["BaseAdapter", "StreamDecoder", "SSEDecoder", "SSEEvent", "PROTOCOLS", "get_adapter", "decode_sse"]

PROTOCOLS = {
    "anthropic": ("modelwire.adapters.anthropic", "AnthropicAdapter"),
    "openai-chat": ("modelwire.adapters.openai_chat", "OpenAIChatAdapter"),
    "openai-responses": ("modelwire.adapters.openai_responses", "OpenAIResponsesAdapter"),
}


def get_adapter(protocol: str) -> type[BaseAdapter]:
    """The adapter class for a wire protocol name (``anthropic``, ``openai-chat``, ``openai-responses``)."""
    try:
        module, name = PROTOCOLS[protocol]
    except KeyError:
        raise ValueError(f"unknown protocol {protocol!r}; known: {', '.join(PROTOCOLS)}") from None
    import importlib

    return getattr(importlib.import_module(module), name)


def decode_sse(protocol: str, body: bytes, reply_id: str, **adapter_options: Any) -> list["EventBase"]:
    """Decode a whole SSE body into modelwire events (one model call).

    On a provider or stream error the :class:`~modelwire.errors.ProviderError` is raised
    with ``events`` holding every event produced, closing events included.
    """
    decoder = StreamDecoder(get_adapter(protocol)(reply_id, **adapter_options), keep=True)
    try:
        decoder.feed(body)
        decoder.close()
    except Exception as err:
        if hasattr(err, "events"):
            err.events = decoder.events
        raise
    return decoder.events
