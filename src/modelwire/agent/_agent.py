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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncGenerator, Iterable

from .. import event as E
from .. import telemetry
from .._ids import id_again, new_id
from ..errors import (
    AgentBusyError,
    AgentError,
    ConfigError,
    FormatError,
    ModelwireError,
    ProviderError,
    StreamProtocolError,
    StructuredOutputError,
    ToolError,
    ToolServerError,
    UsageLimitExceeded,
    debug_enabled,
)
from ..formatters import ServerTool, ToolSpec
from .._sync import run_sync
from ..message import (
    AssistantMsg,
    Base64Source,
    DataBlock,
    ErrorInfo,
    Msg,
    MsgInput,
    Record,
    SystemMsg,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    UserMsg,
    as_messages,
)
from ..event._events import StopReasonValue
from ..message._blocks import ToolResultStateValue
from ._limits import ReplyLimits
from ._output import PartialOutput
from ._tools import Tool, ToolArgumentsError, Toolset

__all__ = ["Agent", "AgentError"]

STRUCTURED_TOOL = "final_answer"


ResumeEvent = E.UserConfirmResultEvent | E.ExternalExecutionResultEvent | E.UserInterruptEvent
"""What resumes a parked reply: the user's answers, the results run elsewhere, or a stop."""


@dataclass
class _ReplyState:
    reply: Msg
    iters: int = 0
    structured: Any = None  # a pydantic model class
    native_structured: bool = False
    forced_structured: bool = False
    refused: bool = False  # the last model call stopped with a refusal (or a content filter)
    paused: bool = False  # the last model call paused its turn (a long server-tool turn, a compaction) to go on
    span: Any = None  # the reply's trace span, while a stream of it runs
    failures: list = field(default_factory=list)  # what ended this stream of the reply with an error
    output: Any = None  # the validated instance of ``structured``, once the reply ended with one


@dataclass
class _Open:
    """What the events passed on so far have opened and not closed (for interrupts)."""

    model_call: bool = False
    blocks: dict[str, str] = field(default_factory=dict)  # block id -> kind
    calls: set[str] = field(default_factory=set)
    results: set[str] = field(default_factory=set)

    def see(self, ev: E.AgentEvent) -> None:
        if ev.type == "MODEL_CALL_START":
            self.model_call = True
        elif ev.type == "MODEL_CALL_END":
            self.model_call = False
        elif isinstance(ev, (E.TextBlockStartEvent, E.ThinkingBlockStartEvent, E.DataBlockStartEvent)):
            self.blocks[ev.block_id] = ev.type[: -len("_BLOCK_START")]
        elif isinstance(ev, (E.TextBlockEndEvent, E.ThinkingBlockEndEvent, E.DataBlockEndEvent)):
            self.blocks.pop(ev.block_id, None)
        elif ev.type == "TOOL_CALL_START":
            self.calls.add(ev.tool_call_id)
        elif ev.type == "TOOL_CALL_END":
            self.calls.discard(ev.tool_call_id)
        elif ev.type == "TOOL_RESULT_START":
            self.results.add(ev.tool_call_id)
        elif ev.type == "TOOL_RESULT_END":
            self.results.discard(ev.tool_call_id)


_log = logging.getLogger("modelwire.agent")

_TOOL_EVENTS = frozenset(
    {
        "TOOL_CALL_START",
        "TOOL_CALL_DELTA",
        "TOOL_CALL_END",
        "TOOL_RESULT_START",
        "TOOL_RESULT_TEXT_DELTA",
        "TOOL_RESULT_DATA_DELTA",
        "TOOL_RESULT_END",
    }
)


class _CallIds:
    """The tool-call ids of one model call's events, kept distinct across the reply.

    Providers mint ids per response (``call_0`` on every call, one constant id): a call of
    this model call whose id an earlier call of the reply has streams with an id of its own,
    made from the provider's (``call_0_2``), and so do its deltas, its end and a result the
    provider names it by. A result of a provider-run tool must answer a call of this reply."""

    __slots__ = ("calls", "renamed")

    def __init__(self, reply: Msg) -> None:
        # The reply's calls so far, and this model call's as they start (with the ids given here).
        self.calls = {b.id for b in reply.content if b.type == "tool_call"}
        self.renamed: dict[str, str] = {}

    def see(self, ev: Any) -> Any:
        call_id = ev.tool_call_id
        if ev.type == "TOOL_CALL_START":
            if call_id not in self.calls:
                self.calls.add(call_id)
                return ev
            new_id = self.renamed[call_id] = id_again(call_id, self.calls)
            self.calls.add(new_id)
            return ev.replace(tool_call_id=new_id)
        new_id = self.renamed.get(call_id)
        if new_id is not None:
            return ev.replace(tool_call_id=new_id)
        if ev.type == "TOOL_RESULT_START" and call_id not in self.calls:
            raise StreamProtocolError(
                f"the provider sent a result for tool call {call_id!r}, which no call of this reply made"
            )
        return ev


class Agent:
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
        self.session_id = session_id or new_id()
        self.model_options = model_options or {}
        self.context: list[Msg] = []
        self._states: dict[str, _ReplyState] = {}
        self._interrupted = False  # interrupt() was called for the running reply (a flag: nothing waits on it)
        self._task: asyncio.Task | None = None
        self._outside = False  # True while the consumer holds an event
        self._running: asyncio.Task | None = None  # the task running a reply
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
                yield ev  # type: ignore[misc]  # every event made here is one of AgentEvent's classes
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

    def _emit(self, state: _ReplyState, ev: E.AgentEvent) -> E.AgentEvent:
        state.reply.append_event(ev, strict=True)
        return ev

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
            await inner.aclose()  # type: ignore[attr-defined]
            telemetry.end_agent_span(state.span, state.reply)
            state.span = None

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
            await inner.aclose()  # type: ignore[attr-defined]
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
                exc.partial = state.reply  # type: ignore[attr-defined]
            state.failures.append(exc)  # raised by reply_stream once the stream is over
        finally:
            await inner.aclose()  # type: ignore[attr-defined]
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

    def _model_request(self, state: _ReplyState, last_call: bool) -> tuple[list[Msg], list[Any], Any, dict[str, Any]]:
        """What the next model call is sent: the messages, the tools, the tool choice and the
        options (structured output as a schema or as a tool; no tools on the last call)."""
        tools: list[Any] = [t.tool_spec() for t in self._active.values()]
        options: dict[str, Any] = {}  # the agent's model_options join them in _call_model
        tool_choice: Any = None
        hint: str | None = None
        if state.structured is not None:
            if self._native_structured():
                options["json_schema"] = _schema(state.structured)
                options["json_schema_name"] = state.structured.__name__
                state.native_structured = True
            else:
                tools.append(
                    ToolSpec(
                        STRUCTURED_TOOL,
                        "Give the final answer in this structure. Call it once, last.",
                        _schema(state.structured),
                    )
                )
                if state.forced_structured:
                    if self._can_force({**self.model_options, **options}):
                        tool_choice = STRUCTURED_TOOL
                    else:  # thinking that refuses a forced tool (Claude on a budget, DeepSeek): ask instead
                        hint = f"Give your final answer now by calling the {STRUCTURED_TOOL} tool."
        if last_call:
            tool_choice = "none" if tools else None
        elif self.server_tools:
            tools += self.server_tools
        messages = ([self._system_msg()] if self.system_prompt else []) + self.context
        if hint is not None:
            messages.append(UserMsg("user", hint))  # for this call only: never kept in the context
        return messages, tools, tool_choice, options

    def _system_msg(self) -> Msg:
        """The system prompt as a message, the same one while the prompt stays the same (the
        model then builds the next request on what it built for the last)."""
        prompt = self.system_prompt or ""
        kept = self._system
        if kept is None or kept[0] != prompt:
            kept = self._system = (prompt, SystemMsg("system", prompt))
        return kept[1]

    async def _ask_model(self, state: _ReplyState, last_call: bool) -> AsyncGenerator[E.AgentEvent, None]:
        """One model call, its events passed on; how it stopped is kept on ``state``."""
        messages, tools, tool_choice, options = self._model_request(state, last_call)
        stream = self._call_model(state).stream(
            messages, tools=tools or None, tool_choice=tool_choice, options=options or None, reply_id=state.reply.id
        )
        if state.span is not None:
            stream = telemetry.under(state.span, stream)
        ids = _CallIds(state.reply)
        try:
            async for ev in stream:
                if ev.type in _TOOL_EVENTS:
                    ev = ids.see(ev)
                elif ev.type == "MODEL_CALL_END":
                    stop = getattr(ev, "stop_reason", None)
                    state.refused = stop in ("refusal", "content_filter")
                    state.paused = stop in ("pause_turn", "compaction")
                yield self._emit(state, ev)
        except ProviderError as err:
            for ev in err.events:  # what closes the stream's call; _guarded ends the reply
                yield self._emit(state, ids.see(ev) if ev.type in _TOOL_EVENTS else ev)
            raise
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()

    def _call_model(self, state: _ReplyState) -> Any:
        """The model as this reply's calls use it: inside the agent's own middleware, the
        outermost first (the reply's usage limits, then the agent's default options), or the
        model itself when there is none."""
        if self.limits is None and not self.model_options:
            return self.model
        from ..models._middleware import DefaultOptions, wrap

        layers: list[Any] = [ReplyLimits(self.limits, state)] if self.limits is not None else []
        if self.model_options:
            layers.append(DefaultOptions(**self.model_options))
        return wrap(self.model, *layers)

    async def _list_tools(self) -> dict[str, Tool]:
        """The agent's own tools and its toolsets' tools as they are now; a name given twice
        is refused (say which), since a call could not be routed."""
        active = dict(self.tools)
        owner = {name: "the agent's own tools" for name in active}
        for toolset in self.toolsets:
            for t in await toolset.list_tools():
                if t.name in active:
                    raise ConfigError(
                        (
                            f"the tool name {t.name!r} comes from both {owner[t.name]} and {toolset.name!r}; give the "
                            "toolset a prefix (MCPServer(..., prefix=...))"
                        )
                    )
                active[t.name] = t
                owner[t.name] = repr(toolset.name)
        return active

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

    def _can_force(self, options: dict[str, Any]) -> bool:
        """Whether the model can be made to call a tool with these options (a model that
        does not say is assumed to)."""
        check = getattr(self.model, "forced_tool_ok", None)
        return bool(check(options or None)) if callable(check) else True

    def _native_structured(self) -> bool:
        capabilities = getattr(self.model, "capabilities", None)
        return bool(getattr(capabilities, "native_structured_output", False))

    def _structured_done(self, state: _ReplyState) -> bool:
        return any(
            c.name == STRUCTURED_TOOL and c.state == "finished" and self._result_state(state, c.id) == "success"
            for c in state.reply.get_content_blocks("tool_call")
        )

    def _result_state(self, state: _ReplyState, call_id: str) -> str | None:
        for r in state.reply.get_content_blocks("tool_result"):
            if r.id == call_id:
                return r.state
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

    # -- acting -------------------------------------------------------------------------------

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
        list[tuple[ToolCallBlock, Tool | None, dict[str, Any] | None, str | None]],
        list[ToolCallBlock],
        list[ToolCallBlock],
    ]:
        """The open calls sorted into those to run now (with a tool and its arguments, or
        with the answer the model gets instead: ``!`` for an error), those that wait for the
        user's confirmation, and those the client runs."""
        run: list[tuple[ToolCallBlock, Tool | None, dict[str, Any] | None, str | None]] = []
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

    def _sendable(self, events: list[E.AgentEvent], refused: list) -> list[E.AgentEvent]:
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

    async def _run_tools(self, rid: str, run: list, span: Any = None) -> AsyncGenerator[E.AgentEvent, None]:
        """Run the calls of one turn concurrently; their result events interleave."""
        queue: asyncio.Queue = asyncio.Queue()
        done = object()

        async def one(call: ToolCallBlock, tool: Tool | None, args: dict | None, fixed: str | None) -> None:
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


def _error_info(exc: Exception) -> dict[str, str]:
    """``REPLY_END.error`` for any failure: the SPEC's error type and a message."""
    if isinstance(exc, ProviderError):
        return exc.to_error_info()
    if isinstance(exc, (ConfigError, ToolServerError)):
        return {"type": "setup", "message": str(exc)}
    if isinstance(exc, UsageLimitExceeded):
        return {"type": "rate_limit", "message": str(exc)}  # the reply's own budget, spent
    if isinstance(exc, ModelwireError) and isinstance(exc, ValueError):
        return {"type": "invalid_request", "message": str(exc)}  # a request that cannot be made: FormatError ...
    return {"type": "internal", "message": f"{type(exc).__name__}: {exc}"}


_PARK = object()
_RESUME_EVENTS = (E.UserConfirmResultEvent, E.ExternalExecutionResultEvent, E.UserInterruptEvent)
_RESUME_TYPES = {cls.__record_tag__ for cls in _RESUME_EVENTS}


def _schema(model_cls: Any) -> dict[str, Any]:
    schema = model_cls.model_json_schema()
    schema.setdefault("additionalProperties", False)
    return schema


def _output_events(rid: str, call_id: str, value: Any) -> list[E.AgentEvent]:
    """A tool's return value (or one streamed piece) as result events."""
    if value is None:
        return []
    if isinstance(value, str):
        return [E.ToolResultTextDeltaEvent(reply_id=rid, tool_call_id=call_id, delta=value)] if value else []
    if isinstance(value, TextBlock):
        return _output_events(rid, call_id, value.text)
    if isinstance(value, DataBlock):
        src = value.source
        if src.type == "base64":
            return [
                E.ToolResultDataDeltaEvent(
                    reply_id=rid, tool_call_id=call_id, block_id=value.id, media_type=src.media_type, data=src.data
                )
            ]
        return [
            E.ToolResultDataDeltaEvent(
                reply_id=rid, tool_call_id=call_id, block_id=value.id, media_type=src.media_type, url=src.url
            )
        ]
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, TextBlock, DataBlock)) for v in value):
        return [ev for v in value for ev in _output_events(rid, call_id, v)]
    dump = getattr(value, "model_dump_json", None)  # a pydantic model
    if callable(dump):
        return _output_events(rid, call_id, dump())
    if isinstance(value, Record):
        return _output_events(rid, call_id, value.to_json())
    try:
        return _output_events(rid, call_id, json.dumps(value, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return _output_events(rid, call_id, str(value))
