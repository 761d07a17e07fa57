"""An adapter's state outside its class: each open block (:class:`Block`) and where its
call is (``IDLE`` -> ``STREAMING`` -> ``DONE`` or ``FAILED``)."""

from __future__ import annotations

from typing import Any, Final, Literal

__all__ = ["Block", "AdapterState", "IDLE", "STREAMING", "DONE", "FAILED"]


class Block:
    """An open block: its kind, modelwire id, and what its END will carry."""

    __slots__ = ("kind", "id", "extras", "has_delta", "name", "parts", "closed")

    def __init__(self, kind: str, block_id: str, name: str = "") -> None:
        self.kind = kind  # text | thinking | tool_call | data | tool_result
        self.id = block_id
        self.extras: dict[str, Any] = {}
        self.has_delta = False
        self.name = name
        self.parts: list[str] | None = None  # for blocks emitted whole at their end
        self.closed = False


AdapterState = Literal["IDLE", "STREAMING", "DONE", "FAILED"]
IDLE: Final = "IDLE"  # nothing received yet
STREAMING: Final = "STREAMING"  # the call is open: MODEL_CALL_START was emitted
DONE: Final = "DONE"  # the provider's terminal event closed the call
FAILED: Final = "FAILED"  # an error closed the call (``failed`` holds it)
_ENDED = (DONE, FAILED)
