"""Small response bodies for any protocol, written from the documented wire formats, for
scripting the local provider server. Each protocol fakes itself
(:meth:`~modelwire.protocols.WireProtocol.fake_stream`); this is the one entry point."""

from __future__ import annotations

from typing import Any

from ..adapters import encode_sse

__all__ = ["body", "encode_sse"]


def body(protocol: str, *blocks: tuple, **options: Any) -> bytes:
    """One body from neutral blocks: ``("think", text)``, ``("text", text)``,
    ``("tool", call_id, name, arguments_json)``; options are the protocol's own
    (``usage=(input, output)`` everywhere)."""
    from ..protocols import get_protocol

    return get_protocol(protocol).fake_stream(*blocks, **options)
