"""What a POSTed body asks for: its dialect, the turn it holds, and the event that resumes
a parked reply; the reply an agent keeps; and the end, in the client's dialect, of a stream
followed from a worker that died. A body is the client's: whatever in it is wrong is a
``BadRequest`` (400) or a ``Conflict`` (409), never a 500."""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Callable
from urllib.parse import parse_qs

from ..agent import ResumeEvent
from ..errors import AgentError
from ..event import ExternalExecutionResultEvent, UserInterruptEvent
from ..message import Msg
from ._agui import AGUIEncoder, read_agui
from ._store import Conflict, RunnerGone
from ._turn import BadRequest, Encoder, EventsEncoder, Resume, Turn, read_events
from ._uimessage import UIMessageEncoder, read_ui_message

DIALECTS: dict[str, tuple[Callable[[dict[str, Any]], Turn], type[Encoder]]] = {
    "events": (read_events, EventsEncoder),
    "ag-ui": (read_agui, AGUIEncoder),
    "ui-message": (read_ui_message, UIMessageEncoder),
}


def _dialect(data: dict[str, Any], query: str) -> str:
    """``?encoding=`` if given, else the request's shape: AG-UI's RunAgentInput has
    ``threadId`` and ``runId``; ``useChat`` posts UI messages, which have ``parts``."""
    asked = parse_qs(query).get("encoding")
    if asked:
        if asked[-1] not in DIALECTS:
            raise BadRequest(f"unknown encoding {asked[-1]!r}; one of {sorted(DIALECTS)}")
        return asked[-1]
    if "threadId" in data and "runId" in data:
        return "ag-ui"
    messages = data.get("messages")
    if isinstance(messages, list) and any(isinstance(m, dict) and "parts" in m for m in messages):
        return "ui-message"
    return "events"


def _json_body(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise BadRequest(f"the body is not JSON: {exc}") from None
    except RecursionError:
        raise BadRequest("the body is JSON nested too deeply to read") from None
    if not isinstance(data, dict):
        raise BadRequest(f"the body is a JSON {type(data).__name__}, not an object")
    return data


def _read(read: Callable[[dict[str, Any]], Turn], dialect: str, data: dict[str, Any]) -> Turn:
    """The turn a request body asks for. The body is the client's: whatever in it the
    reader cannot take (a part of the wrong shape, a value of the wrong type) is the
    client's mistake, a 400 that says what it is, never a 500."""
    try:
        return read(data)
    except BadRequest:
        raise
    except Exception as exc:  # noqa: BLE001 - sorted: the client's data, not the server's state
        from ..errors import ValidationError

        what = (
            "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3])
            if isinstance(exc, ValidationError)
            else f"{type(exc).__name__}: {exc}"
        )
        raise BadRequest(f"the body is not a valid {dialect} request ({what[:300]})") from None


def _resume_event(agent: Any, rid: str, resume: Resume) -> ResumeEvent:
    """The event that resumes ``rid``, built from the parked calls (never from the
    client's copy of them: the client answers, the server keeps what was asked)."""
    if resume.interrupt:
        return UserInterruptEvent(reply_id=rid)
    pending = {c.id: c for c in agent.pending_calls(rid)}
    if resume.about - set(pending):
        raise Conflict()  # the answer names calls this reply does not wait for
    if resume.partial:
        resume.confirm = {k: v for k, v in resume.confirm.items() if k in pending and pending[k].state == "asking"}
        resume.results = {k: v for k, v in resume.results.items() if k in pending and pending[k].state == "submitted"}
    if resume.confirm and resume.results:
        raise BadRequest("answer confirmations and external results in separate requests")
    if resume.confirm:
        try:
            confirmed: ResumeEvent = agent.confirm(resume.confirm, rid)
            return confirmed
        except AgentError:
            raise Conflict() from None  # a call that does not wait for a confirmation
    if not resume.results:
        raise BadRequest("the answer holds no confirmation, no result and no interrupt")
    results = []
    for call_id, result in resume.results.items():
        call = pending.get(call_id)
        if call is None or call.state != "submitted":
            raise Conflict()
        results.append(result if result.name == call.name else result.replace(name=call.name))
    return ExternalExecutionResultEvent(reply_id=rid, execution_results=results)


def _reply_of(agent: Any, rid: str) -> Msg | None:
    """The reply the agent keeps: it folds each event into it before yielding the event,
    so the encoders read a block whole from it at the block's end."""
    context: list[Msg] = getattr(agent, "context", [])
    for m in reversed(context):
        if m.id == rid:
            return m
    return None


async def _until_runner_gone(frames: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """A stream followed from another worker, ended in its own dialect with an error (its
    frames numbered on) if that worker dies before the reply ends."""
    try:
        async for chunk in frames:
            yield chunk
    except RunnerGone as gone:
        enc = DIALECTS.get(gone.dialect, DIALECTS["events"])[1](Turn(), "")
        enc.reply_id = gone.reply_id or None
        ending = (
            enc.error("the worker running this reply stopped before the reply ended; send your message again")
            + enc.done()
        )
        yield b"".join(b"id: %d\n" % (gone.next + k) + frame for k, frame in enumerate(ending))
