"""Small response bodies for any protocol, written from the documented wire formats, for
scripting the local provider server. Each protocol fakes itself
(:meth:`~modelwire.protocols.WireProtocol.fake_stream`); this is the one entry point."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..adapters import encode_sse

if TYPE_CHECKING:
    from .server import Reply

__all__ = ["body", "encode_sse", "stream_reply"]


def body(protocol: str, *blocks: tuple[Any, ...], **options: Any) -> bytes:
    """One body from neutral blocks: ``("think", text)``, ``("text", text)``,
    ``("tool", call_id, name, arguments_json)``; options are the protocol's own
    (``usage=(input, output)`` everywhere)."""
    from ..protocols import get_protocol

    return get_protocol(protocol).fake_stream(*blocks, **options)


def stream_reply(protocol: str, raw: bytes, **kw: Any) -> "Reply":
    """A scripted streamed answer in ``protocol``'s framing: its content type, and its body
    sent in the pieces its servers send (SSE events, or AWS event-stream frames). ``kw``
    goes to :class:`~modelwire.testing.Reply` (``delay``, ``stall_after`` ...)."""
    from ..protocols import get_protocol
    from .server import Reply

    wire = get_protocol(protocol)
    return Reply(body=raw, pieces=wire.split_stream(raw), headers={"content-type": wire.content_type}, **kw)
