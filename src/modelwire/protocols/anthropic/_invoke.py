"""Claude on Bedrock's Anthropic API (``invoke-with-response-stream``): AWS event-stream
frames whose ``chunk`` events carry one Anthropic stream event each, as base64 JSON in
``bytes`` (with a random ``p`` field as padding). The frames, their CRCs and AWS's exception
frames are :class:`~modelwire.adapters.AWSStreamDecoder`'s; this only unwraps the event."""

from __future__ import annotations

import base64
import binascii
import logging
from typing import Any

from msgspec.json import decode as from_json

from ...adapters import AWSStreamDecoder
from ...errors import StreamProtocolError

_log = logging.getLogger("modelwire.adapters")

__all__ = ["InvokeStreamDecoder", "wrap_event"]


class InvokeStreamDecoder(AWSStreamDecoder):
    def _event(self, obj: dict[str, Any], event_type: str | None) -> list[Any]:
        adapter = self.adapter
        if event_type != "chunk":
            _log.debug("a %r frame in a Bedrock invoke stream, not a chunk: skipped", event_type)
            return []
        raw = obj.get("bytes")
        if not isinstance(raw, str):
            adapter.fail(StreamProtocolError(f"a Bedrock chunk frame without base64 bytes ({type(raw).__name__})"))
            return []  # not reached: fail() raises while the call is open
        try:
            event = from_json(base64.b64decode(raw, validate=True))
        except (binascii.Error, ValueError, RecursionError) as exc:
            adapter.fail(StreamProtocolError(f"a Bedrock chunk whose bytes are not base64 JSON: {exc}", body=raw[:200]))
            return []
        if not isinstance(event, dict):
            adapter.fail(StreamProtocolError(f"a Bedrock chunk holds {type(event).__name__}, not an Anthropic event"))
            return []
        return adapter.feed(event, event.get("type") if isinstance(event.get("type"), str) else None)


def wrap_event(event: dict[str, Any]) -> bytes:
    """One Anthropic event as Bedrock frames it (for the test server)."""
    import json

    from ...adapters import encode_frame

    payload = {
        "bytes": base64.b64encode(json.dumps(event).encode()).decode(),
        "p": "abcdefghij"[: len(event.get("type", "")) % 10],
    }
    return encode_frame(
        {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"},
        json.dumps(payload).encode(),
    )
