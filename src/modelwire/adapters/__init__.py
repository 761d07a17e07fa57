"""Provider stream events -> modelwire events: the shared kit of every protocol's adapter.

    from modelwire.adapters import StreamDecoder
    from modelwire.protocols import get_adapter

    decoder = StreamDecoder(get_adapter(protocol_name)(reply_id))
    for chunk in http_body_chunks:
        for event in decoder.feed(chunk):
            ...
    for event in decoder.close():
        ...

Each adapter lives with its wire protocol (``modelwire.protocols.<name>.adapter``). They
are pure and synchronous: no I/O, no clock of their own beyond the one you pass in. See
``BaseAdapter`` for the contract, errors included.
"""

from __future__ import annotations

from typing import Any, Literal

from ._adapter import BaseAdapter, debug
from ._decoders import AWSStreamDecoder, StreamDecoder, decode_answer
from ._makers import COMMON_EXTRAS, DELTA_MAKERS, error_object, json_text
from ._shapes import OPTIONAL, shape_problem
from ._state import STREAMING, Block
from ._eventstream import EventStreamDecoder, Frame, encode_frame
from ._fast import Const, Delta, fast_path_source
from ._sse import SSEDecoder, SSEEvent, encode_sse, split_sse

__all__ = [
    "AWSStreamDecoder",
    "EventStreamDecoder",
    "Frame",
    "encode_frame",
    "BaseAdapter",
    "Block",
    "Const",
    "Delta",
    "fast_path_source",
    "COMMON_EXTRAS",
    "DELTA_MAKERS",
    "OPTIONAL",
    "STREAMING",
    "debug",
    "decode_answer",
    "error_object",
    "json_text",
    "shape_problem",
    "StreamDecoder",
    "SSEDecoder",
    "SSEEvent",
    "encode_sse",
    "split_sse",
    "NDJSONDecoder",
    "FRAMINGS",
    "Framing",
    "framing_decoder",
    "split_framed",
]

Framing = Literal["sse", "ndjson", "aws-eventstream"]  # how a protocol frames its stream (WireProtocol.framing)
FRAMINGS: tuple[Framing, ...] = ("sse", "ndjson", "aws-eventstream")


def framing_decoder(framing: str, adapter: BaseAdapter, *, keep: bool = False) -> StreamDecoder:
    """The decoder of one framing around ``adapter``: bytes in, events out, with one
    keep/fail contract (``keep``: keep the raw body for errors and cassettes)."""
    if framing == "sse":
        return StreamDecoder(adapter, keep=keep)
    if framing == "ndjson":
        from ._ndjson import NDJSONDecoder

        return NDJSONDecoder(adapter, keep=keep)
    if framing == "aws-eventstream":
        return AWSStreamDecoder(adapter, keep=keep)
    raise ValueError(f"unknown framing {framing!r}; known: {', '.join(FRAMINGS)}")


def split_framed(framing: str, body: bytes) -> list[bytes]:
    """A body of that framing in the pieces a server sends: one event, line or frame each."""
    if framing == "ndjson":
        from ._ndjson import split_lines

        return split_lines(body)
    if framing == "aws-eventstream":
        return [encode_frame(f.headers, f.payload) for f in EventStreamDecoder().feed(body)]
    if framing == "sse":
        return split_sse(body)
    raise ValueError(f"unknown framing {framing!r}; known: {', '.join(FRAMINGS)}")


def __getattr__(name: str) -> Any:
    if name == "NDJSONDecoder":  # imported on first use
        from ._ndjson import NDJSONDecoder

        return NDJSONDecoder
    raise AttributeError(name)
