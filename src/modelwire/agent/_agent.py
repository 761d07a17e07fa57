"""The agent: a reason-act loop on any model, streaming its work as events.

One reply is one assistant message. The agent builds the message it keeps by folding
the very events it yields, so folding ``reply_stream()``'s events always gives what
``reply()`` returns and what the agent stored.

A reply may *park*: a tool call waits for the user's confirmation
(``REQUIRE_USER_CONFIRM``) or for an external system (``REQUIRE_EXTERNAL_EXECUTION``).
The stream then ends without ``REPLY_END``; the caller resumes the same reply with
``reply_stream(event=...)`` (a ``USER_CONFIRM_RESULT``, an ``EXTERNAL_EXECUTION_RESULT`` or a
``USER_INTERRUPT``), and the resumed stream starts by echoing that event. The events of
all the streams of one reply, in order, are one valid reply stream.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from contextlib import aclosing
from pathlib import Path
from typing import Any, AsyncGenerator, Iterable

from .. import event as E
from .. import telemetry
from .._ids import new_id
from .._sync import run_sync
from ..errors import AgentBusyError, AgentError, ConfigError, StructuredOutputError
from ..formatters import ServerTool
from ..message import AssistantMsg, ErrorInfo, Msg, MsgInput, ToolCallBlock, as_messages
from ._asking import _Asking
from ._ending import _Ending
from ._output import PartialOutput
from ._reply import _PARK, STRUCTURED_TOOL, _Open, _ReplyState
from ._reply import _TOOL_EVENTS as _TOOL_EVENTS  # read from here by tests and benchmarks
from ._reply import _CallIds as _CallIds
from ._tools import Tool, ToolArgumentsError, Toolset

__all__ = ["Agent", "AgentError"]


ResumeEvent = E.UserConfirmResultEvent | E.ExternalExecutionResultEvent | E.UserInterruptEvent
"""What resumes a parked reply: the user's answers, the results run elsewhere, or a stop."""


_log = logging.getLogger("modelwire.agent")


class Agent(_Asking, _Ending):
    """``Agent(name, model, system_prompt, tools, max_iters)``.

    ``tools``: functions (sync, async, or async generators that stream their output),
    :class:`Tool` objects, :class:`ServerTool` declarations (tools the provider runs) and
    :class:`Toolset` sources such as :class:`MCPServer` (whose tools are listed before each
    model call). ``model``: anything with the model interface (``modelwire.models.Model``),
    for example ``modelwire.load_model("anthropic:...")``, or a model string, loaded here
    (``Agent("bot", "anthropic:claude-sonnet-4-5")``).

    An agent with toolsets holds what they hold (an MCP server process): close it with
    ``await agent.aclose()``, or use it as ``async with Agent(...) as agent``.
    """

    def __init__(
        self,
        name: str,
        model: Any,
        system_prompt: str | None = None,
        tools: Iterable[Any] = (),
        max_iters: int = 10,
        *,
        session_id: str | None = None,
        model_options: dict[str, Any] | None = None,
        limits: Any = None,
        tool_timeout: float | None = None,
    ) -> None:
        self.name = name
        self.limits = limits  # UsageLimits of each reply (None: only max_iters)
        self.tool_timeout = tool_timeout  # seconds a tool call may run, for tools without their own
        if isinstance(model, str):  # "provider:model", as load_model takes it (its errors are its own)
            from ..models import load_model

            model = load_model(model)
        elif not callable(getattr(model, "stream", None)):
            raise ConfigError(
                (
                    "an Agent's model is a model (load_model('provider:model')) or a model string, not "
                    f"{type(model).__name__}"
                )
            )
        self.model = model
        self.system_prompt = system_prompt
        self._system: tuple[str, Msg] | None = None  # the prompt, and the message sent for it
        self.tools: dict[str, Tool] = {}
        self.server_tools: list[ServerTool] = []  # the provider runs these; their blocks stream as they come
        self.toolsets: list[Toolset] = []  # tools listed before each model call (MCP servers)
        for t in tools:
            if isinstance(t, ServerTool):
                self.server_tools.append(t)
                continue
            if isinstance(t, Toolset):
                self.toolsets.append(t)
                continue
            t = t if isinstance(t, Tool) else Tool(t)
            self.tools[t.name] = t
        self._active: dict[str, Tool] = self.tools  # the tools of the current model call (with the toolsets')
        self.max_iters = max_iters
        self.session_id: str = session_id or new_id()
        self.model_options: dict[str, Any] = model_options or {}
        self.context: list[Msg] = []
        self._states: dict[str, _ReplyState] = {}
        self._interrupted = False  # interrupt() was called for the running reply (a flag: nothing waits on it)
        self._task: asyncio.Task[Any] | None = None
        self._outside = False  # True while the consumer holds an event
        self._running: asyncio.Task[Any] | None = None  # the task running a reply
        self._media_rules: dict[tuple[Any, str], str | None] = {}  # (formatter, media type) -> why it is refused

    # -- public API ------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the agent's toolsets (an MCP server's process and connection); they open
        again if the agent replies later."""
        for toolset in self.toolsets:
            await toolset.aclose()

    async def __aenter__(self) -> "Agent":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()

    async def reply(
        self,
        msg: MsgInput = None,
        *,
        event: ResumeEvent | None = None,
        structured_model: Any = None,
        raise_errors: bool = True,
    ) -> Msg:
        """Run one reply (or resume a parked one) and return its message as it stands.

        ``msg``: a string (the user's words), a message, a list of messages or their JSON
        (AgentScope's dicts load as they are). A reply that fails ends with its error on the
        message (``finished_reason="error"``, ``error``) and, unless ``raise_errors=False``,
        that error is raised: the provider's typed error (``AuthenticationError``,
        ``RateLimitError`` ...) with ``partial`` set to the reply so far, or the
        :class:`~modelwire.errors.ModelwireError` that stopped it."""
        # A resumed reply folds its new events onto the message as it was parked.
        folded: Msg | None = None if event is None else copy.deepcopy(self._reply_for(event.reply_id))
        async for ev in self.reply_stream(
            msg, event=event, structured_model=structured_model, raise_errors=raise_errors
        ):
            if ev.type == "REPLY_START":
                folded = AssistantMsg(ev.name, [], id=ev.reply_id, created_at=self._reply_for(ev.reply_id).created_at)
            assert folded is not None
            folded.append_event(ev, strict=True)
        assert folded is not None
        if folded.finished_reason is None:
            self._say_waiting(folded.id)
        elif folded.structured_output is not None:
            kept = self._reply_for(folded.id).structured_output  # the model's instance, where one was asked for
            if not isinstance(kept, dict):
                folded.structured_output = kept
        return folded

    def _say_waiting(self, rid: str) -> None:
        """A reply returned while it waits (parked): said, with what answers it, since the
        message alone looks like an answer that stopped."""
        calls = self.pending_calls(rid)
        if not calls:
            return
        asking = [c.name for c in calls if c.state == "asking"]
        what = (
            (
                f"{len(asking)} tool call(s) ({', '.join(asking)}) wait for the user's confirmation: "
                "answer with agent.reply(event=agent.confirm({call_id: True}))"
            )
            if asking
            else (
                f"{len(calls)} tool call(s) wait for results run elsewhere: answer with an ExternalExecutionResultEvent"
            )
        )
        _log.warning("reply %s is waiting, not finished: %s (agent.pending_calls() lists them)", rid, what)

    def reply_sync(
        self,
        msg: MsgInput = None,
        *,
        event: ResumeEvent | None = None,
        structured_model: Any = None,
        raise_errors: bool = True,
    ) -> Msg:
        """:meth:`reply` for scripts and notebooks without an event loop of their own."""
        return run_sync(
            self.reply(msg, event=event, structured_model=structured_model, raise_errors=raise_errors), "agent.reply"
        )

    def interrupt(self) -> None:
        """Stop the running reply as soon as possible (it ends with ``interrupted``).

        Call it from the event loop's thread (a signal handler added with
        ``loop.add_signal_handler``, another task, a callback)."""
        if self._interrupted:
            return
        self._interrupted = True
        task = self._task
        if task is not None and not task.done() and not self._outside:
            task.cancel()  # cut the current wait short; _guarded turns it into an interrupt

    async def reply_stream(
        self,
        msg: MsgInput = None,
        *,
        event: ResumeEvent | None = None,
        structured_model: Any = None,
        raise_errors: bool = True,
    ) -> AsyncGenerator[E.AgentEvent, None]:
        """Yield the events of one reply, or of the rest of a parked reply (``event=``).

        A reply that fails still ends with ``REPLY_END`` carrying its error; then, unless
        ``raise_errors=False``, the error is raised when the iteration ends (as
        :meth:`reply` raises it).

        One reply at a time: an agent keeps one conversation, so a second reply while one
        runs raises :class:`~modelwire.errors.AgentBusyError` (use one agent per task)."""
        me = asyncio.current_task()
        owner = self._running
        if owner is not None and owner is not me and not owner.done():
            raise AgentBusyError(
                (
                    f"agent {self.name!r} is already replying in another task; one reply at a time (make one "
                    "Agent per concurrent conversation)"
                )
            )
        self._running = me
        failures: list[Exception] = []
        inner = self._reply_stream(as_messages(msg), event=event, structured_model=structured_model, failures=failures)
        try:
            async for ev in inner:
                yield ev
        finally:
            # A consumer that stops early (a reader gone, a break) closes this stream: each
            # layer below closes the one it reads, down to the HTTP response, here and now.
            await inner.aclose()
            if self._running is me:
                self._running = None
        if failures and raise_errors:
            raise failures[0]

    async def _reply_stream(
        self,
        inputs: list[Msg],
        *,
        event: ResumeEvent | None = None,
        structured_model: Any = None,
        failures: list[Exception],
    ) -> AsyncGenerator[E.AgentEvent, None]:
        self._interrupted = False
        if event is not None:
            if not isinstance(event, _RESUME_EVENTS):
                raise AgentError(f"a parked reply resumes with {sorted(_RESUME_TYPES)}, not {event.type}")
            state = self._states.get(event.reply_id)
            if state is None:
                reply = self._reply_for(event.reply_id)
                state = self._states[reply.id] = _ReplyState(reply)
            state.failures = failures
            if state.reply.finished_reason is not None:
                raise AgentError(
                    f"reply {state.reply.id!r} has ended ({state.reply.finished_reason}); it cannot be resumed"
                )
            yield self._emit(state, event)  # a resumed stream starts by echoing what resumed it
            if event.type == "USER_INTERRUPT":
                async for ev in self._finish_interrupted(state, _Open()):
                    yield ev
                return
        else:
            for m in inputs:
                if m.role == "assistant" and m.has_content_blocks("tool_call"):
                    raise AgentError("input messages are user (or system) messages")
            self.context.extend(inputs)
            reply = AssistantMsg(self.name, [], id=new_id())
            self.context.append(reply)
            state = self._states[reply.id] = _ReplyState(reply, structured=structured_model)
            state.failures = failures
            yield self._emit(state, E.ReplyStartEvent(session_id=self.session_id, reply_id=reply.id, name=self.name))
        inner = self._traced(state, self._guarded(state, self._loop(state)))
        try:
            async for ev in inner:
                yield ev
        finally:
            await inner.aclose()

    def pending_calls(self, reply_id: str | None = None) -> list[ToolCallBlock]:
        """The tool calls of a parked reply that wait for a confirmation or a result."""
        reply = self._reply_for(reply_id) if reply_id else (self.context[-1] if self.context else None)
        if reply is None:
            return []
        answered = {r.id for r in reply.get_content_blocks("tool_result")}
        return [
            c
            for c in reply.get_content_blocks("tool_call")
            if c.state in ("asking", "submitted") and c.id not in answered
        ]

    def confirm(self, decisions: dict[str, bool], reply_id: str | None = None) -> E.UserConfirmResultEvent:
        """The ``USER_CONFIRM_RESULT`` event answering the asking calls (``{call id: yes/no}``)."""
        calls = {c.id: c for c in self.pending_calls(reply_id) if c.state == "asking"}
        missing = set(decisions) - set(calls)
        if missing:
            raise AgentError(f"no call waiting for confirmation with id {sorted(missing)}")
        rid = reply_id or self.context[-1].id
        results = [E.ConfirmResult(confirmed=ok, tool_call=calls[cid]) for cid, ok in decisions.items()]
        return E.UserConfirmResultEvent(reply_id=rid, confirm_results=results)

    # -- state --------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {"name": self.name, "session_id": self.session_id, "context": [m.to_dict() for m in self.context]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.session_id = state.get("session_id", self.session_id)
        self.context = [Msg.from_dict(m) for m in state["context"]]
        self._states = {}

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.state_dict(), ensure_ascii=False, indent=1), encoding="utf-8")

    def load(self, path: str | Path) -> None:
        self.load_state_dict(json.loads(Path(path).read_text(encoding="utf-8")))

    # -- the loop -------------------------------------------------------------------------------

    def _reply_for(self, reply_id: str) -> Msg:
        for m in reversed(self.context):
            if m.id == reply_id:
                return m
        raise AgentError(f"no reply {reply_id!r} in this agent's context")

    def _traced(
        self, state: _ReplyState, inner: AsyncGenerator[E.AgentEvent, None]
    ) -> AsyncGenerator[E.AgentEvent, None]:
        """The reply's span around ``inner``; ``inner`` itself when tracing is off (no layer
        at all: every event and every open reply would pay for one)."""
        return self._spanned(state, inner) if telemetry.enabled() else inner

    async def _spanned(
        self, state: _ReplyState, inner: AsyncGenerator[E.AgentEvent, None]
    ) -> AsyncGenerator[E.AgentEvent, None]:
        state.span = telemetry.agent_span(self.name, self.session_id, self.model)
        try:
            async for ev in inner:
                yield ev
        finally:
            await inner.aclose()
            telemetry.end_agent_span(state.span, state.reply)
            state.span = None

    async def _loop(self, state: _ReplyState) -> AsyncGenerator[E.AgentEvent, None]:
        reply = state.reply
        rid = reply.id
        while True:
            self._active = await self._list_tools() if self.toolsets else self.tools
            # 1. Answer the calls of the last model call.
            waiting = False
            acting = self._act(state)
            try:
                async for ev in acting:
                    if ev is _PARK:
                        waiting = True
                        continue
                    yield ev
            finally:
                await acting.aclose()
            if waiting:
                return  # parked: resumed by reply_stream(event=...)
            if state.structured is not None and reply.structured_output is None and self._structured_done(state):
                yield self._finish(state)
                return

            # 2. Ask the model (with the tools as they are now: a call may have changed them).
            if self.toolsets:
                self._active = await self._list_tools()
            last_call = state.iters >= self.max_iters
            async with aclosing(
                self._ask_model(state, last_call)
            ) as asking:  # the model's stream closed at once if the caller stops
                async for ev in asking:
                    yield ev
            state.iters += 1

            if last_call:
                yield self._emit(state, E.ExceedMaxItersEvent(reply_id=rid, name=self.name))
                async for ev in self._answer_open_calls(
                    state, "The agent stopped: too many iterations.", "interrupted"
                ):
                    yield ev
                yield self._emit(
                    state, E.ReplyEndEvent(session_id=self.session_id, reply_id=rid, finished_reason="exceed_max_iters")
                )
                self._states.pop(rid, None)
                return
            if not self._open_calls(state):
                if state.paused:
                    continue  # the provider paused a long turn: sent back as it is, it goes on (bounded by max_iters)
                if (
                    state.structured is not None
                    and not state.native_structured
                    and reply.structured_output is None
                    and not state.refused
                ):
                    state.forced_structured = True  # answered in prose: ask once more, for the structure
                    continue
                yield self._finish(state)
                return

    def _finish(self, state: _ReplyState) -> E.ReplyEndEvent:
        """The reply's end, folded into it; a structured output is kept on the reply as the
        validated instance of the model asked for (the event carries its JSON form)."""
        ev = self._end(state)
        self._emit(state, ev)
        if state.output is not None:
            state.reply.structured_output = state.output
        return ev

    def _end(self, state: _ReplyState) -> E.ReplyEndEvent:
        rid = state.reply.id
        self._states.pop(rid, None)
        if state.structured is None or state.refused:
            # A refusal is the model's answer (its text says why), not a structure that failed.
            return E.ReplyEndEvent(session_id=self.session_id, reply_id=rid)
        try:
            state.output = self._structured_value(state)
        except (ValueError, ToolArgumentsError) as exc:
            message = f"the structured output is not valid: {exc}"
            failure = StructuredOutputError(message)
            failure.partial = state.reply
            state.failures.append(failure)  # raised by reply() / reply_stream() once the reply ended, as any failure
            return E.ReplyEndEvent(
                session_id=self.session_id,
                reply_id=rid,
                finished_reason="error",
                error=ErrorInfo(type="invalid_request", message=message),
            )
        output = state.output.model_dump(mode="json")
        return E.ReplyEndEvent(session_id=self.session_id, reply_id=rid, structured_output=output)

    # -- structured output --------------------------------------------------------------------

    def partial_output(self, structured_model: Any, **options: Any) -> PartialOutput:
        """A reader of this agent's reply events that gives the structured output as it
        streams: feed it each event of ``reply_stream(..., structured_model=...)``. The
        partials are the JSON so far, unvalidated; the last one, at ``REPLY_END``, is
        validated against ``structured_model``. ``options`` are
        :class:`~modelwire.event.PartialJSON`'s (``partial_strings``, ``whole_under``)."""
        return PartialOutput(structured_model, native=self._native_structured(), tool_name=STRUCTURED_TOOL, **options)

    def _structured_done(self, state: _ReplyState) -> bool:
        return any(
            c.name == STRUCTURED_TOOL and c.state == "finished" and self._result_state(state, c.id) == "success"
            for c in state.reply.get_content_blocks("tool_call")
        )

    def _result_state(self, state: _ReplyState, call_id: str) -> str | None:
        for r in state.reply.get_content_blocks("tool_result"):
            if r.id == call_id:
                found: str | None = r.state
                return found
        return None

    def _structured_value(self, state: _ReplyState) -> Any:
        model_cls = state.structured
        if state.native_structured:
            text = ""
            for block in reversed(state.reply.content):
                if block.type == "text":
                    text = block.text
                    break
            return model_cls.model_validate_json(text)
        for call in reversed(state.reply.get_content_blocks("tool_call")):
            if call.name == STRUCTURED_TOOL and self._result_state(state, call.id) == "success":
                return model_cls.model_validate_json(call.input or "{}")
        raise ValueError("the model gave no structured answer")


_RESUME_EVENTS = (E.UserConfirmResultEvent, E.ExternalExecutionResultEvent, E.UserInterruptEvent)
_RESUME_TYPES = {cls.__record_tag__ for cls in _RESUME_EVENTS}
