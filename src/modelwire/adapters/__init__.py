"""Provider stream events -> modelwire events: the shared kit of every protocol's adapter.

    from modelwire.adapters import StreamDecoder, get_adapter

    decoder = StreamDecoder(get_adapter("anthropic")(reply_id))
    for chunk in http_body_chunks:
        for event in decoder.feed(chunk):
            ...
    for event in decoder.close():
        ...

Each adapter lives with its wire protocol (``modelwire.protocols.<name>.adapter``). They
are pure and synchronous: no I/O, no clock of their own beyond the one you pass in. See
``_base.BaseAdapter`` for the contract, errors included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import OPTIONAL, AWSStreamDecoder, BaseAdapter, Block, StreamDecoder, debug, decode_answer, shape_problem
from ._eventstream import EventStreamDecoder, EventStreamError, Frame, encode_frame
from ._sse import SSEDecoder, SSEEvent, encode_sse, split_sse

if TYPE_CHECKING:  # pragma: no cover
    from ..event import EventBase

__all__ = [
    "AWSStreamDecoder",
    "EventStreamDecoder",
    "EventStreamError",
    "Frame",
    "encode_frame",
    "BaseAdapter",
    "Block",
    "OPTIONAL",
    "debug",
    "decode_answer",
    "shape_problem",
    "StreamDecoder", "SSEDecoder", "SSEEvent", "encode_sse", "split_sse", "get_adapter", "decode_sse"]


def get_adapter(protocol: str) -> type[BaseAdapter]:
    """The adapter class of a wire protocol (see :mod:`modelwire.protocols`)."""
    from ..protocols import get_protocol

    return get_protocol(protocol).adapter_class()


def decode_sse(protocol: str, body: bytes, reply_id: str, **adapter_options: Any) -> list["EventBase"]:
    """Decode a whole response body into modelwire events (one model call).

    On a provider or stream error the :class:`~modelwire.errors.ProviderError` is raised
    with ``events`` holding every event produced, closing events included.
    """
    from ..protocols import get_protocol

    proto = get_protocol(protocol)
    decoder = proto.decoder(proto.adapter_class()(reply_id, **adapter_options), keep=True)
    try:
        decoder.feed(body)
        decoder.close()
    except Exception as err:
        if hasattr(err, "events"):
            err.events = decoder.events
        raise
    return decoder.events
