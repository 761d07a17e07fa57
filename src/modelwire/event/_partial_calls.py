"""Each tool call's arguments as they stream, read from the events (pure, no I/O).

:class:`PartialToolCalls` is fed a stream's events, as :class:`~modelwire.event.StreamChecker`
is, and answers a :class:`ToolCallPartial` when a call's arguments parsed so far changed:
calls are told apart by their id, so parallel calls whose deltas interleave each grow on
their own. Only the tool-call events cost anything; the others are passed over.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import PartialJSONError
from ._partial import PartialJSON

if TYPE_CHECKING:
    from ._partial import PartialOptions

__all__ = ["PartialToolCalls", "ToolCallPartial"]


class ToolCallPartial(NamedTuple):
    """A tool call's arguments so far (see :class:`~modelwire.event.PartialJSON` for what
    shows). ``value`` grows in place as later deltas come: copy one you keep."""

    tool_call_id: str
    tool_call_name: str
    value: Any
    done: bool = False
    """The call's arguments are complete (its ``TOOL_CALL_END``): ``value`` is the whole of them."""
    error: PartialJSONError | None = None
    """The arguments are not JSON (a call cut off by ``max_tokens``, a model's typo): no
    partial of this call follows; ``value`` is what parsed before the fault."""


class PartialToolCalls:
    """Feed it events (:meth:`see`); it answers each tool call's arguments when they change.

    >>> from modelwire import event as E
    >>> calls = PartialToolCalls(whole_under=0)  # every object as it opens (default: small ones once whole)
    >>> calls.see(E.ToolCallStartEvent(reply_id="r", tool_call_id="c1", tool_call_name="weather"))
    >>> calls.see(E.ToolCallDeltaEvent(reply_id="r", tool_call_id="c1", delta='{"city": "Paris", "da'))
    ToolCallPartial(tool_call_id='c1', tool_call_name='weather', value={'city': 'Paris'}, done=False, error=None)
    >>> calls.see(E.ToolCallEndEvent(reply_id="r", tool_call_id="c1")).value
    {'city': 'Paris'}
    """

    __slots__ = ("_options", "_calls")

    def __init__(self, *, partial_strings: bool = False, whole_under: int | None = None) -> None:
        self._options: PartialOptions = {"partial_strings": partial_strings, "whole_under": whole_under}
        self._calls: dict[str, tuple[str, PartialJSON]] = {}

    def see(self, event: Any) -> ToolCallPartial | None:
        """Take the next event; a :class:`ToolCallPartial` when a call's arguments changed,
        else ``None``."""
        etype = event.type
        if etype == "TOOL_CALL_DELTA":
            call = self._calls.get(event.tool_call_id)
            if call is None:
                return None  # a call never started, or one already given up on
            name, parser = call
            try:
                changed = parser.feed(event.delta)
            except PartialJSONError as exc:
                del self._calls[event.tool_call_id]
                return ToolCallPartial(event.tool_call_id, name, exc.value, done=False, error=exc)
            return ToolCallPartial(event.tool_call_id, name, parser.value) if changed else None
        if etype == "TOOL_CALL_START":
            self._calls[event.tool_call_id] = (event.tool_call_name, PartialJSON(**self._options))
        elif etype == "TOOL_CALL_END":
            return self._end(event.tool_call_id)
        return None

    def _end(self, call_id: str) -> ToolCallPartial | None:
        call = self._calls.pop(call_id, None)
        if call is None:
            return None
        name, parser = call
        if parser.empty:
            return ToolCallPartial(call_id, name, {}, done=True)  # a call without arguments
        try:
            return ToolCallPartial(call_id, name, parser.finish(), done=True)
        except PartialJSONError as exc:
            return ToolCallPartial(call_id, name, exc.value, done=False, error=exc)
