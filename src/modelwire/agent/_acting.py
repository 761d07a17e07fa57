"""An agent's acting: the open tool calls of its reply sorted into those to run, to ask the
user about and to leave to the client; the ones to run run at once, their output turned
into result events the model can take."""

from __future__ import annotations

import asyncio
import copy
from typing import Any, AsyncGenerator

from .. import event as E
from .. import telemetry
from ..errors import FormatError, ToolError
from ..message import AssistantMsg, Base64Source, DataBlock, ToolCallBlock, ToolResultBlock, UserMsg
from ..message._blocks import ToolResultStateValue
from ._reply import _PARK, STRUCTURED_TOOL, _output_events, _Parts, _ReplyState
from ._tools import Tool, ToolArgumentsError


# A call to run now: with its tool and arguments, or with the answer the model gets instead
# (``!`` first for an error).
_Run = tuple[ToolCallBlock, Tool | None, dict[str, Any] | None, str | None]


class _Acting(_Parts):
    """The tool calls of a reply: answered, run, or left waiting (a part of ``Agent``)."""

    def _open_calls(self, state: _ReplyState) -> list[ToolCallBlock]:
        answered = {r.id for r in state.reply.get_content_blocks("tool_result")}
        return [
            c
            for c in state.reply.get_content_blocks("tool_call")
            if c.id not in answered
            and not getattr(c, "server_side", False)
            and c.state in ("pending", "allowed", "asking", "submitted")
        ]

    async def _answer_open_calls(
        self, state: _ReplyState, text: str, result_state: ToolResultStateValue
    ) -> AsyncGenerator[E.AgentEvent, None]:
        for call in self._open_calls(state):
            for ev in self._result_events(state.reply.id, call, text, result_state):
                yield self._emit(state, ev)

    async def _act(self, state: _ReplyState) -> AsyncGenerator[Any, None]:
        rid = state.reply.id
        # Denied calls (finished by USER_CONFIRM_RESULT without a result) get their result.
        answered = {r.id for r in state.reply.get_content_blocks("tool_result")}
        for call in state.reply.get_content_blocks("tool_call"):
            if call.state == "finished" and call.id not in answered and not getattr(call, "server_side", False):
                for ev in self._result_events(rid, call, "The user denied this tool call.", "denied"):
                    yield self._emit(state, ev)
        calls = self._open_calls(state)
        if not calls:
            return
        run, ask, external = self._sort_calls(state, calls)
        if run:
            running = self._run_tools(rid, run, state.span)
            try:
                async for ev in running:
                    yield self._emit(state, ev)
            finally:
                await running.aclose()  # its tasks are cancelled if the reply stops here
        if ask:
            yield self._emit(state, E.RequireUserConfirmEvent(reply_id=rid, tool_calls=[copy.deepcopy(c) for c in ask]))
        if external:
            yield self._emit(
                state, E.RequireExternalExecutionEvent(reply_id=rid, tool_calls=[copy.deepcopy(c) for c in external])
            )
        if ask or external or any(c.state in ("asking", "submitted") for c in self._open_calls(state)):
            yield _PARK

    def _sort_calls(
        self, state: _ReplyState, calls: list[ToolCallBlock]
    ) -> tuple[
        list[_Run],
        list[ToolCallBlock],
        list[ToolCallBlock],
    ]:
        """The open calls sorted into those to run now (with a tool and its arguments, or
        with the answer the model gets instead: ``!`` for an error), those that wait for the
        user's confirmation, and those the client runs."""
        run: list[_Run] = []
        ask: list[ToolCallBlock] = []
        external: list[ToolCallBlock] = []
        for call in calls:
            if call.state in ("asking", "submitted"):
                continue  # still waiting
            if call.name == STRUCTURED_TOOL and state.structured is not None:
                try:
                    state.structured.model_validate_json(call.input or "{}")
                    run.append((call, None, None, "Structured answer recorded."))
                except ValueError as exc:
                    run.append((call, None, None, f"!The answer does not fit the structure: {exc}"))
                continue
            if getattr(call, "truncated", False):
                # Cut off (max_tokens) before its arguments were complete: never run it.
                run.append(
                    (
                        call,
                        None,
                        None,
                        (
                            "!This call was cut off by the max_tokens limit before its arguments were complete; it "
                            "was not run. Call it again with fewer words before it, or ask for more max_tokens."
                        ),
                    )
                )
                continue
            tool = self._active.get(call.name)
            if tool is None:
                run.append(
                    (
                        call,
                        None,
                        None,
                        f"!There is no tool named {call.name!r}. Tools: {', '.join(self._active) or 'none'}.",
                    )
                )
                continue
            try:
                args = tool.parse(call.input)
            except ToolArgumentsError as exc:
                run.append((call, None, None, f"!{exc}. Fix the arguments and call the tool again."))
                continue
            if tool.requires_confirmation and call.state == "pending":
                ask.append(call)
            elif tool.external:
                external.append(call)
            else:
                run.append((call, tool, args, None))
        return run, ask, external

    def _result_events(
        self, rid: str, call: ToolCallBlock, text: str, result_state: ToolResultStateValue
    ) -> list[E.AgentEvent]:
        events: list[E.AgentEvent] = [
            E.ToolResultStartEvent(reply_id=rid, tool_call_id=call.id, tool_call_name=call.name)
        ]
        if text:
            events.append(E.ToolResultTextDeltaEvent(reply_id=rid, tool_call_id=call.id, delta=text))
        events.append(E.ToolResultEndEvent(reply_id=rid, tool_call_id=call.id, state=result_state))
        return events

    def _sendable(self, events: list[E.AgentEvent], refused: list[E.ToolResultDataDeltaEvent]) -> list[E.AgentEvent]:
        """A tool's output events, with data the model cannot take in a tool result (an SVG
        for Anthropic) put aside in ``refused`` and said in words instead: sent as it is,
        it would fail this request and every later one of the conversation."""
        out: list[E.AgentEvent] = []
        for ev in events:
            if ev.type != "TOOL_RESULT_DATA_DELTA" or (rule := self._unsendable(ev.media_type)) is None:
                out.append(ev)
                continue
            refused.append(ev)
            note = f"The tool returned {ev.media_type} data, which this model cannot take ({rule}); it was not sent."
            out.append(E.ToolResultTextDeltaEvent(reply_id=ev.reply_id, tool_call_id=ev.tool_call_id, delta=note))
        return out

    def _unsendable(self, media_type: str) -> str | None:
        """Why the model's formatter refuses ``media_type`` in a tool result, or None (also
        for a model without a formatter to ask). Asked once per media type."""
        formatter = getattr(self.model, "formatter", None)
        key = (formatter, media_type)
        if key in self._media_rules:
            return self._media_rules[key]
        rule = None
        if formatter is not None:
            data = DataBlock(source=Base64Source(data="AAAA", media_type=media_type))
            probe = [
                UserMsg("user", "?"),
                AssistantMsg(
                    "a",
                    [
                        ToolCallBlock(id="c", name="t", input="{}"),
                        ToolResultBlock(id="c", name="t", output=[data], state="success"),
                    ],
                ),
            ]
            try:
                formatter.format(probe)
            except FormatError as exc:
                rule = exc.rule
        self._media_rules[key] = rule
        return rule

    async def _run_tools(self, rid: str, run: list[_Run], span: Any = None) -> AsyncGenerator[E.AgentEvent, None]:
        """Run the calls of one turn concurrently; their result events interleave."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        done = object()

        async def one(call: ToolCallBlock, tool: Tool | None, args: dict[str, Any] | None, fixed: str | None) -> None:
            try:
                await queue.put(E.ToolResultStartEvent(reply_id=rid, tool_call_id=call.id, tool_call_name=call.name))
                if tool is None:
                    error = fixed is not None and fixed.startswith("!")
                    text = fixed[1:] if fixed is not None and error else (fixed or "")
                    if text:
                        await queue.put(E.ToolResultTextDeltaEvent(reply_id=rid, tool_call_id=call.id, delta=text))
                    await queue.put(
                        E.ToolResultEndEvent(reply_id=rid, tool_call_id=call.id, state="error" if error else "success")
                    )
                    return
                assert args is not None  # a tool to run has its arguments
                await self._run_tool(rid, call, tool, args, queue.put, span)
            finally:
                await queue.put(done)

        tasks = [asyncio.create_task(one(*item)) for item in run]
        remaining = len(tasks)
        try:
            while remaining:
                ev = await queue.get()
                if ev is done:
                    remaining -= 1
                    continue
                yield ev
        finally:
            for task in tasks:
                task.cancel()

    async def _run_tool(
        self, rid: str, call: ToolCallBlock, tool: Tool, args: dict[str, Any], put: Any, span: Any
    ) -> None:
        """One tool run to its end: its output as result events (``put`` each), ended with
        its state. A tool's error, an exception or a timeout is a result the model reads;
        output the model cannot take ends it as an error, kept in the metadata."""
        state: ToolResultStateValue = "success"
        refused: list[E.ToolResultDataDeltaEvent] = []
        limit = tool.timeout if tool.timeout is not None else self.tool_timeout
        with telemetry.tool_span(call.name, call.id, call.input, span) as tool_trace:
            try:
                async with asyncio.timeout(limit):
                    try:
                        if tool.is_async_gen:
                            async for piece in tool.func(**args):  # type: ignore[misc]
                                for ev in self._sendable(_output_events(rid, call.id, piece), refused):
                                    await put(ev)
                        else:
                            value = await tool.call(args)
                            for ev in self._sendable(_output_events(rid, call.id, value), refused):
                                await put(ev)
                    except ToolError as exc:  # the tool's own error result, as it is
                        state = "error"
                        telemetry.mark_error(tool_trace, "ToolError", str(exc))
                        for ev in self._sendable(_output_events(rid, call.id, exc.output), refused):
                            await put(ev)
                    except Exception as exc:  # noqa: BLE001 - a tool's failure is the model's to read
                        state = "error"
                        telemetry.mark_error(tool_trace, type(exc).__name__, str(exc))
                        await put(
                            E.ToolResultTextDeltaEvent(
                                reply_id=rid, tool_call_id=call.id, delta=f"Error: {type(exc).__name__}: {exc}"
                            )
                        )
            except TimeoutError:
                # A hanging tool ends as an error the model reads, not as a hung reply (a
                # function in a worker thread cannot be stopped: its result is dropped).
                state = "error"
                telemetry.mark_error(tool_trace, "TimeoutError", f"no result after {limit:g} s")
                await put(
                    E.ToolResultTextDeltaEvent(
                        reply_id=rid, tool_call_id=call.id, delta=f"Error: the tool gave no result within {limit:g} s"
                    )
                )
        metadata: dict[str, Any] = {}
        if refused:
            state = "error"
            metadata["unsent_output"] = [
                {"media_type": ev.media_type, "data": ev.data, "url": ev.url} for ev in refused
            ]
        await put(E.ToolResultEndEvent(reply_id=rid, tool_call_id=call.id, state=state, metadata=metadata))
