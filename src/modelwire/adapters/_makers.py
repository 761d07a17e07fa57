"""What an adapter makes its events with, outside its class: the positional makers of the
events of a block's life, a value's JSON text (a tool call's arguments), and the block extras
and the error object every protocol shares. See :class:`~modelwire.adapters.BaseAdapter`.
"""

from __future__ import annotations

import json
from itertools import repeat
from typing import Any, Callable

from .._record import MISSING, maker
from .. import event as E

__all__ = ["COMMON_EXTRAS", "DELTA_MAKERS", "json_text", "error_object"]

# Block extras the shared kits write and read for any protocol: where a block came from
# (provenance), a call a provider ran itself, a provider's own block kept whole, a block cut
# off before its end, and deltas of a kind the adapter does not know. Each protocol declares
# its own beside these (WireProtocol.extras_keys).
COMMON_EXTRAS = frozenset(
    {
        "provider_metadata",
        "server_side",
        "provider_block_type",
        "provider_block",
        "truncated",
        "provider_deltas",
        "summary",  # a compaction block's summary as text, where the provider gave one
    }
)


def _json_text() -> Callable[[Any], str]:
    """A whole value as the JSON text a tool call's arguments (or a result) are kept as: what
    ``json.dumps(value, ensure_ascii=False)`` writes. The values are parsed JSON (no cycles,
    nothing but JSON types), so the stdlib's own C encoder is made once, without the
    circular-reference table: ``JSONEncoder.encode`` builds that encoder again on every call,
    about two thirds of the 1.3 us it takes for a small dict. Without the C encoder (another
    Python), the stdlib's encoder as it is."""
    make = getattr(json.encoder, "c_make_encoder", None)
    encoder = json.JSONEncoder(ensure_ascii=False)
    if make is None:  # pragma: no cover - CPython has it
        return encoder.encode
    chunks = make(None, encoder.default, json.encoder.encode_basestring, None, ": ", ", ", False, False, True)
    join = "".join

    def json_text(value: Any) -> str:
        """``json.dumps(value, ensure_ascii=False)`` of a parsed JSON value."""
        return join(chunks(value, 0))

    return json_text


json_text: Callable[[Any], str] = _json_text()


def error_object(data: dict[str, Any]) -> bool:
    """Whether ``data`` is the error object a proxy or gateway sends on any route, in place
    of an event: ``{"error": {...}}`` or ``{"type": "error", "error": ...}``. The shared
    part of most protocols' :meth:`BaseAdapter.is_error_frame`; a protocol adds its own
    exceptions (a chunk that also carries content is its adapter's to read)."""
    error = data.get("error")  # None on almost every frame: the one lookup they cost
    return error is not None and isinstance(error, (dict, str)) and data.get("type") in (None, "error")


# What an adapter gives as an event's id to leave it to the event (see EventBase.id): a
# call into C, where new_id() would be a Python call per event.
_LAZY_ID: Callable[[], Any] = repeat(MISSING).__next__


def _maker(cls: type, *names: str, checked: tuple[str, ...] = ()) -> Callable[..., Any]:
    """A positional constructor of an event of a block's life: (id, created_at, reply_id,
    block or call id, then ``names[1:]``). The adapter's own values are stored as they are
    (an id of its own or MISSING, its clock's stamp, the reply id it was given, a block id,
    a tool name and extras that ``open_block`` / ``whole_call`` checked or made); the fields
    in ``checked`` (a delta: a provider's value) are checked as the constructor checks them."""
    fields = ("id", "created_at", "reply_id", *names)
    return maker(cls, *fields, trusted=tuple(f for f in fields if f not in checked))


# The events of a block's life, built positionally (a keyword call and its dict cost as much
# again). The deltas are public for an adapter's own short path (see the protocols' ``feed``).
DELTA_MAKERS = _DELTAS = {
    "text": _maker(E.TextBlockDeltaEvent, "block_id", "delta", checked=("delta",)),
    "thinking": _maker(E.ThinkingBlockDeltaEvent, "block_id", "delta", checked=("delta",)),
    "tool_call": _maker(E.ToolCallDeltaEvent, "tool_call_id", "delta", checked=("delta",)),
    "tool_result": _maker(E.ToolResultTextDeltaEvent, "tool_call_id", "delta", checked=("delta",)),
}


class _Makers(dict[str, Callable[..., Any]]):
    """One event of a block's life, a maker per block kind (see :func:`_maker`), each built on
    its first use: building one compiles its event class, which a process that never makes
    that kind of block (thinking, tool calls) should not pay for at import."""

    def __init__(self, **specs: tuple[type, tuple[str, ...]]) -> None:
        super().__init__()
        self.kinds = frozenset(specs)
        self._specs = specs

    def __missing__(self, kind: str) -> Callable[..., Any]:
        cls, names = self._specs[kind]
        made = self[kind] = _maker(cls, *names)
        return made


_STARTS = _Makers(  # (..., block id) and, for a call, its name
    text=(E.TextBlockStartEvent, ("block_id",)),
    thinking=(E.ThinkingBlockStartEvent, ("block_id",)),
    tool_call=(E.ToolCallStartEvent, ("tool_call_id", "tool_call_name")),
)
_ENDS = _Makers(  # (..., block id, extras: a block's own dict, or None)
    text=(E.TextBlockEndEvent, ("block_id", "extras")),
    thinking=(E.ThinkingBlockEndEvent, ("block_id", "extras")),
    tool_call=(E.ToolCallEndEvent, ("tool_call_id", "extras")),
)
