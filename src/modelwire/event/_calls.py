"""The tool calls one model call's events carry, read from the events alone: for readers of
a stream that may have broken off (a recheck, a probe), where folding into a message would
refuse the partial list."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["tool_calls_in"]


def tool_calls_in(events: Iterable[Any]) -> list[tuple[str, str, str]]:
    """``(id, name, arguments)`` of each call started in ``events``, in order, its argument
    deltas joined (a delta for a call that never started is left out)."""
    names: dict[str, str] = {}
    args: dict[str, list[str]] = {}
    for event in events:
        etype = event.type
        if etype == "TOOL_CALL_START":
            names[event.tool_call_id] = event.tool_call_name
            args[event.tool_call_id] = []
        elif etype == "TOOL_CALL_DELTA" and event.tool_call_id in args:
            args[event.tool_call_id].append(event.delta)
    return [(call_id, name, "".join(args[call_id])) for call_id, name in names.items()]
