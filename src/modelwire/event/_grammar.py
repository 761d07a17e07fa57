"""``check_stream``: the grammar of one reply's event stream.

Rules (each violation names the event index, its type and the rule):

1. ``REPLY_START`` comes first and ``REPLY_END`` last; nothing follows ``REPLY_END``.
2. Every event but ``CUSTOM`` carries the ``reply_id`` of ``REPLY_START``.
3. Model calls do not nest: ``MODEL_CALL_START`` ... ``MODEL_CALL_END``; a block opened
   inside a model call is closed before that call ends.
4. Each text / thinking / data / tool-call block is started once, gets deltas only
   while open, of its own kind, and is ended once. Ids are unique within the reply.
5. A tool result starts only after its call ended, once, and its deltas and END come
   between its START and END. ``EXTERNAL_EXECUTION_RESULT`` answers ended calls.
6. ``REQUIRE_USER_CONFIRM`` / ``REQUIRE_EXTERNAL_EXECUTION`` name ended calls.
7. At ``REPLY_END`` no block, tool result or model call is left open.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..errors import StreamGrammarError

__all__ = ["check_stream", "StreamChecker"]

_BLOCK_KIND = {
    "TEXT_BLOCK_START": "text",
    "TEXT_BLOCK_DELTA": "text",
    "TEXT_BLOCK_END": "text",
    "THINKING_BLOCK_START": "thinking",
    "THINKING_BLOCK_DELTA": "thinking",
    "THINKING_BLOCK_END": "thinking",
    "DATA_BLOCK_START": "data",
    "DATA_BLOCK_DELTA": "data",
    "DATA_BLOCK_END": "data",
}


class StreamChecker:
    """Incremental form of :func:`check_stream`: ``feed`` events one by one, then ``close``."""

    def __init__(self) -> None:
        self.index: int = -1
        self.reply_id: str | None = None
        self.ended: bool = False
        self.in_call: bool = False
        self.block_ids: set[str] = set()
        self.open_blocks: dict[str, str] = {}  # block_id -> kind
        self.call_blocks: set[str] = set()  # opened inside the current model call
        self.calls: dict[str, str] = {}  # tool_call_id -> "open" | "ended"
        self.results: dict[str, str] = {}  # tool_call_id -> "open" | "ended"

    def _fail(self, event: Any, rule: str) -> StreamGrammarError:
        return StreamGrammarError(self.index, str(getattr(event, "type", "?")), rule)

    def feed(self, event: Any) -> None:
        self.index += 1
        etype = event.type
        if self.ended:
            raise self._fail(event, "no event may follow REPLY_END")
        if self.reply_id is None:
            if etype != "REPLY_START":
                raise self._fail(event, "the stream must begin with REPLY_START")
            self.reply_id = event.reply_id
            return
        if etype == "CUSTOM":
            return
        if event.reply_id != self.reply_id:
            raise self._fail(event, f"reply_id {event.reply_id!r} differs from REPLY_START's {self.reply_id!r}")

        kind = _BLOCK_KIND.get(etype)
        if kind is not None:
            self._block(event, etype, kind, event.block_id)
        elif etype.startswith("TOOL_CALL_"):
            self._tool_call(event, etype, event.tool_call_id)
        elif etype.startswith("TOOL_RESULT_"):
            self._tool_result(event, etype, event.tool_call_id)
        else:
            self._control(event, etype)

    def _control(self, event: Any, etype: str) -> None:
        """The events around blocks: model calls, hints, confirmation and external results,
        the end of the reply."""
        if etype == "MODEL_CALL_START" or etype == "MODEL_CALL_END":
            self._model_call(event, etype)
        elif etype == "HINT_BLOCK":
            self._new_block_id(event, event.block_id)
        elif etype in (
            "REQUIRE_USER_CONFIRM",
            "REQUIRE_EXTERNAL_EXECUTION",
            "USER_CONFIRM_RESULT",
            "EXTERNAL_EXECUTION_RESULT",
        ):
            self._human_in_the_loop(event, etype)
        elif etype == "REPLY_END":
            self._close(event)
            self.ended = True
        elif etype == "REPLY_START":
            raise self._fail(event, "a second REPLY_START")

    def _model_call(self, event: Any, etype: str) -> None:
        """Model calls do not nest, and one ends only once every block it opened has."""
        if etype == "MODEL_CALL_START":
            if self.in_call:
                raise self._fail(event, "MODEL_CALL_START inside an open model call (model calls do not nest)")
            self.in_call = True
            self.call_blocks = set()
            return
        if not self.in_call:
            raise self._fail(event, "MODEL_CALL_END without an open model call")
        still = sorted(b for b in self.call_blocks if b in self.open_blocks or self.calls.get(b) == "open")
        if still:
            raise self._fail(event, f"model call ends while blocks it opened are still open: {still}")
        self.in_call = False

    def _human_in_the_loop(self, event: Any, etype: str) -> None:
        """Confirmation asked for and given, and external results, name calls of this reply
        (ended ones, but for a confirmation's answer)."""
        if etype == "USER_CONFIRM_RESULT":
            for result in event.confirm_results:
                if result.tool_call.id not in self.calls:
                    raise self._fail(event, f"tool call {result.tool_call.id!r} is not a call of this reply")
        elif etype == "EXTERNAL_EXECUTION_RESULT":
            for result in event.execution_results:
                if self.calls.get(result.id) != "ended":
                    raise self._fail(event, f"result for {result.id!r}, which is not an ended call of this reply")
                if result.id not in self.results:
                    self.results[result.id] = "ended"
        else:
            for call in event.tool_calls:
                if self.calls.get(call.id) != "ended":
                    raise self._fail(event, f"tool call {call.id!r} is not an ended call of this reply")

    def _new_block_id(self, event: Any, block_id: str) -> None:
        if block_id in self.block_ids:
            raise self._fail(event, f"block id {block_id!r} is already used in this reply")
        self.block_ids.add(block_id)

    def _block(self, event: Any, etype: str, kind: str, block_id: str) -> None:
        if etype.endswith("_START"):
            self._new_block_id(event, block_id)
            self.open_blocks[block_id] = kind
            if self.in_call:
                self.call_blocks.add(block_id)
            return
        open_kind = self.open_blocks.get(block_id)
        if open_kind is None:
            state = "has ended" if block_id in self.block_ids else "was never started"
            raise self._fail(event, f"{kind} block {block_id!r} {state}")
        if open_kind != kind:
            raise self._fail(event, f"block {block_id!r} is a {open_kind} block, not a {kind} block")
        if etype.endswith("_END"):
            del self.open_blocks[block_id]

    def _tool_call(self, event: Any, etype: str, call_id: str) -> None:
        state = self.calls.get(call_id)
        if etype == "TOOL_CALL_START":
            if state is not None:
                raise self._fail(event, f"tool call id {call_id!r} is already used in this reply")
            self.calls[call_id] = "open"
            if self.in_call:
                self.call_blocks.add(call_id)
            return
        if state != "open":
            what = "has ended" if state == "ended" else "was never started"
            raise self._fail(event, f"tool call {call_id!r} {what}")
        if etype == "TOOL_CALL_END":
            self.calls[call_id] = "ended"

    def _tool_result(self, event: Any, etype: str, call_id: str) -> None:
        state = self.results.get(call_id)
        if etype == "TOOL_RESULT_START":
            if self.calls.get(call_id) != "ended":
                raise self._fail(event, f"result for tool call {call_id!r} before that call ended")
            if state is not None:
                raise self._fail(event, f"tool call {call_id!r} already has a result")
            self.results[call_id] = "open"
            return
        if state != "open":
            what = "has ended" if state == "ended" else "was never started"
            raise self._fail(event, f"tool result {call_id!r} {what}")
        if etype == "TOOL_RESULT_END":
            self.results[call_id] = "ended"

    def _close(self, event: Any) -> None:
        if self.in_call:
            raise self._fail(event, "REPLY_END while a model call is open")
        open_blocks = sorted(self.open_blocks)
        open_calls = sorted(c for c, s in self.calls.items() if s == "open")
        open_results = sorted(c for c, s in self.results.items() if s == "open")
        if open_blocks or open_calls or open_results:
            raise self._fail(
                event,
                f"REPLY_END with open blocks {open_blocks}, tool calls {open_calls}, tool results {open_results}",
            )

    def close(self) -> None:
        """Check that the stream ended with ``REPLY_END``."""
        if not self.ended:
            raise StreamGrammarError(self.index + 1, "<end of stream>", "the stream must end with REPLY_END")


def check_stream(events: Iterable[Any]) -> int:
    """Check the grammar of one reply's events; returns how many were checked.

    Raises :class:`~modelwire.errors.StreamGrammarError` naming the index of the event
    that broke a rule, its type and the rule.
    """
    checker = StreamChecker()
    for event in events:
        checker.feed(event)
    checker.close()
    return checker.index + 1
