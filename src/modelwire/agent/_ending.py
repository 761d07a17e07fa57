"""How an agent's reply ends when it does not end by itself: interrupted, cancelled, or
failed. What its events opened is closed and its open calls answered, so the conversation
stays one the next reply can send."""

from __future__ import annotations

import asyncio
from typing import AsyncGenerator

from .. import event as E
from ..errors import ModelwireError, ProviderError, debug_enabled
from ..event._events import StopReasonValue
from ..message import ErrorInfo
from ._acting import _Acting
from ._reply import _error_info, _Open, _ReplyState


class _Ending(_Acting):
    """The end of a reply that was interrupted or failed (a part of ``Agent``)."""

    async def _guarded(
        self, state: _ReplyState, inner: AsyncGenerator[E.AgentEvent, None]
    ) -> AsyncGenerator[E.AgentEvent, None]:
        """Keep track of what is open, so an interrupt or a cancellation can close it.

        ``interrupt()`` while the agent waits (for the model, for a tool) cancels that wait
        at once; while the consumer holds an event, it takes effect when the consumer asks
        for the next one. Either way the reply then ends with ``interrupted`` events.
        """
        tracker = _Open()
        task = asyncio.current_task()
        self._task = task
        try:
            async for ev in inner:
                tracker.see(ev)
                self._outside = True
                yield ev
                self._outside = False
                if self._interrupted:
                    await inner.aclose()
                    async for closing in self._finish_interrupted(state, tracker):
                        yield closing
                    return
        except GeneratorExit:
            # The consumer closed the stream early (a break, a reader gone): what runs below
            # is closed, and the reply ends as interrupted in the stored message, so the
            # conversation stays one the next reply can send.
            await inner.aclose()
            async for _ in self._finish_interrupted(state, tracker):
                pass
            raise
        except asyncio.CancelledError:
            if self._interrupted and task is not None and task.uncancel() == 0:
                # Our own interrupt cut a wait short: end the reply in the open.
                async for closing in self._finish_interrupted(state, tracker):
                    yield closing
                return
            # The consumer is gone: close the reply in the stored message only.
            async for _ in self._finish_interrupted(state, tracker):
                pass
            raise
        except Exception as exc:  # noqa: BLE001 - whatever failed, the reply ends with its error
            async for closing in self._finish_failed(state, tracker, exc):
                yield closing
            if debug_enabled() and not isinstance(exc, ModelwireError):
                raise  # a bug in modelwire: the tests see it as itself, after the reply ended
            if isinstance(exc, ProviderError):
                exc.partial = state.reply
            state.failures.append(exc)  # raised by reply_stream once the stream is over
        finally:
            await inner.aclose()
            self._task = None
            self._outside = False

    async def _finish_failed(
        self, state: _ReplyState, tracker: _Open, exc: Exception
    ) -> AsyncGenerator[E.AgentEvent, None]:
        """End the reply with ``exc`` as its error: what is open is closed, open calls get
        an error result (so the history stays sendable), and the agent can reply again."""
        rid = state.reply.id
        for ev in self._close_open(state, tracker, "error"):
            yield self._emit(state, ev)
        async for ev in self._answer_open_calls(state, "The reply ended with an error before this call ran.", "error"):
            yield ev
        yield self._emit(
            state,
            E.ReplyEndEvent(
                session_id=self.session_id,
                reply_id=rid,
                finished_reason="error",
                error=ErrorInfo.from_dict(_error_info(exc)),
            ),
        )
        self._states.pop(rid, None)

    def _close_open(self, state: _ReplyState, tracker: _Open, model_call_reason: StopReasonValue) -> list[E.AgentEvent]:
        """END events for everything ``tracker`` saw opened and not closed."""
        rid = state.reply.id
        out: list[E.AgentEvent] = []
        for block_id, kind in list(tracker.blocks.items()):
            cls = {"TEXT": E.TextBlockEndEvent, "THINKING": E.ThinkingBlockEndEvent, "DATA": E.DataBlockEndEvent}[kind]
            out.append(cls(reply_id=rid, block_id=block_id))
        out += [E.ToolCallEndEvent(reply_id=rid, tool_call_id=c) for c in sorted(tracker.calls)]
        if tracker.model_call:
            out.append(
                E.ModelCallEndEvent(
                    reply_id=rid,
                    input_tokens=0,
                    output_tokens=0,
                    finished_reason="interrupted",
                    stop_reason=model_call_reason,
                )
            )
        out += [
            E.ToolResultEndEvent(reply_id=rid, tool_call_id=c, state="interrupted") for c in sorted(tracker.results)
        ]
        for ev in out:
            tracker.see(ev)
        return out

    async def _finish_interrupted(self, state: _ReplyState, tracker: _Open) -> AsyncGenerator[E.AgentEvent, None]:
        rid = state.reply.id
        for ev in self._close_open(state, tracker, "interrupted"):
            yield self._emit(state, ev)
        async for ev in self._answer_open_calls(state, "The call was interrupted before it finished.", "interrupted"):
            yield ev
        yield self._emit(
            state, E.ReplyEndEvent(session_id=self.session_id, reply_id=rid, finished_reason="interrupted")
        )
        self._states.pop(rid, None)
