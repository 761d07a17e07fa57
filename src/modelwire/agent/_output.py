"""The agent's structured output as it streams (see :meth:`Agent.partial_output`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import PartialJSONError
from ..event import PartialJSON

if TYPE_CHECKING:
    from ..event._partial import PartialOptions

__all__ = ["OutputPartial", "PartialOutput"]


class OutputPartial(NamedTuple):
    """The structured output so far.

    While it streams, ``value`` is the JSON parsed so far, not validated: a partial object
    lacks fields the model requires, and validating each would walk the whole value again
    on every delta. It grows in place (copy one you keep). At the end of the reply,
    ``done`` is true, ``value`` is the output the agent validated (``Msg.structured_output``)
    and ``output`` the model's instance of it."""

    value: Any
    done: bool = False
    output: Any = None


class PartialOutput:
    """Feed it the events of an agent's reply (:meth:`see`); it answers the structured
    output each time it grows, and once more, validated, when the reply ends with it.

    Where the model writes the structured output itself (``native``), it is the JSON text of
    the reply's text blocks; elsewhere it is the arguments of the agent's ``tool_name``
    call. A new text block or a new such call starts over (a model asked again after an
    answer that did not fit); a text block that is not JSON is passed over.
    """

    __slots__ = ("structured_model", "_native", "_tool_name", "_options", "_parser", "_source")

    def __init__(
        self,
        structured_model: Any,
        *,
        native: bool,
        tool_name: str,
        partial_strings: bool = False,
        whole_under: int | None = None,
    ) -> None:
        self.structured_model: Any = structured_model
        self._native = native
        self._tool_name = tool_name
        self._options: PartialOptions = {"partial_strings": partial_strings, "whole_under": whole_under}
        self._parser: PartialJSON | None = None
        self._source: str | None = None  # the text block or the call the output comes in

    def see(self, event: Any) -> OutputPartial | None:
        """Take the next event; an :class:`OutputPartial` when the output grew or ended."""
        etype = event.type
        if etype == ("TEXT_BLOCK_DELTA" if self._native else "TOOL_CALL_DELTA"):
            source = event.block_id if self._native else event.tool_call_id
            return self._feed(event.delta) if source == self._source else None
        if etype == "TEXT_BLOCK_START" and self._native:
            self._start(event.block_id)
        elif etype == "TOOL_CALL_START" and not self._native and event.tool_call_name == self._tool_name:
            self._start(event.tool_call_id)
        elif etype == "REPLY_END" and event.structured_output is not None:
            output = self.structured_model.model_validate(event.structured_output)
            return OutputPartial(event.structured_output, done=True, output=output)
        return None

    def _start(self, source: str) -> None:
        self._parser = PartialJSON(**self._options)
        self._source = source

    def _feed(self, delta: str) -> OutputPartial | None:
        parser = self._parser
        assert parser is not None
        try:
            changed = parser.feed(delta)
        except PartialJSONError:
            self._source = None  # not the output (prose before it): nothing more of it shows
            return None
        return OutputPartial(parser.value) if changed else None
