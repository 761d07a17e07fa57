"""The ASGI application: routing, request bodies, parked replies, and the stream pump."""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs

from ..errors import AgentError
from ..event import EventBase, ExternalExecutionResultEvent, UserInterruptEvent
from ..message import Msg
from ._agui import AGUIEncoder, read_agui
from ._turn import BadRequest, Encoder, EventsEncoder, Resume, Turn, read_events
from ._uimessage import UIMessageEncoder, read_ui_message

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

HERE = Path(__file__).parent
STATIC = {"/": (HERE / "page.html", "text/html; charset=utf-8"), "/fold.mjs": (HERE.parent / "js" / "fold.mjs", "text/javascript; charset=utf-8")}
MAX_BODY = 16 * 1024 * 1024

DIALECTS: dict[str, tuple[Callable[[dict[str, Any]], Turn], type[Encoder]]] = {
    "events": (read_events, EventsEncoder),
    "ag-ui": (read_agui, AGUIEncoder),
    "ui-message": (read_ui_message, UIMessageEncoder),
}


class Conflict(Exception):
    """An answer to a reply that is not waiting here; answered with 409."""


class ParkedReplies:
    """Agents whose reply waits for the client (a confirmation, an external result).

    Bounded: the oldest is dropped past ``limit``, and any older than ``ttl`` seconds."""

    def __init__(self, limit: int = 1000, ttl: float = 1800.0) -> None:
        self.limit, self.ttl = limit, ttl
        self._agents: OrderedDict[str, tuple[float, Any]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._agents)

    def put(self, reply_id: str, agent: Any) -> None:
        self._agents[reply_id] = (time.monotonic(), agent)
        self._agents.move_to_end(reply_id)
        while len(self._agents) > self.limit:
            self._agents.popitem(last=False)

    def take(self, resume: Resume) -> tuple[str, Any]:
        now = time.monotonic()
        for rid in [r for r, (at, _) in self._agents.items() if now - at > self.ttl]:
            del self._agents[rid]
        rid = resume.reply_id
        if rid is None:  # named by its calls only
            ids = resume.call_ids()
            rid = next((r for r, (_, a) in self._agents.items() if ids & {c.id for c in a.pending_calls(r)}), None)
            if rid is None:
                raise Conflict(f"no reply here waits for an answer about {sorted(ids)} (it ended, expired, or was answered already)")
        if rid not in self._agents:
            raise Conflict(f"reply {rid!r} is not waiting for an answer here (it ended, expired after {self.ttl:g} s, or was answered already)")
        return rid, self._agents.pop(rid)[1]


class EventStreamApp:
    """An ASGI application streaming one agent reply per request (see the package doc).

    ``make_agent()`` gives a fresh agent for each new reply; ``wrap_reply`` (optional) is a
    context-manager factory entered around each reply, for example a cassette replay;
    ``history=False`` answers each input alone, without the conversation posted before it
    (a replay of one recorded exchange); ``page_config`` is what the chat page reads."""

    def __init__(
        self,
        make_agent: Callable[[], Any],
        *,
        path: str = "/reply",
        max_body: int = MAX_BODY,
        parked: ParkedReplies | None = None,
        wrap_reply: Callable[[], Any] | None = None,
        history: bool = True,
        page_config: dict[str, Any] | None = None,
    ) -> None:
        self.make_agent = make_agent
        self.path = path
        self.max_body = max_body
        self.parked = parked if parked is not None else ParkedReplies()
        self.wrap_reply = wrap_reply
        self.history = history
        self.page_config = page_config or {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        method, path = scope["method"], scope["path"]
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :] or "/"  # mounted under a prefix (FastAPI's app.mount, Starlette's Mount)
        if path == self.path and method == "POST":
            try:
                data = _json_body(await self._body(receive))
                dialect = _dialect(data, scope.get("query_string", b"").decode("latin-1"))
                read, encoder_cls = DIALECTS[dialect]
                turn = _read(read, dialect, data)
                agent, rid, event = self._agent_for(turn)
            except BadRequest as exc:
                return await _json(send, 400, {"error": str(exc)})
            except Conflict as exc:
                return await _json(send, 409, {"error": str(exc)})
            except Exception as exc:  # noqa: BLE001 - make_agent failed: say so, not a bare 500
                return await _json(send, 500, {"error": f"the agent could not be made: {type(exc).__name__}: {exc}"})
            return await self._stream(agent, turn, rid, event, encoder_cls(turn, getattr(agent, "session_id", "")), receive, send)
        if path == "/config.json" and method == "GET":
            # Relative to the page, so the page works wherever the app is mounted.
            return await _json(send, 200, {"path": self.path.lstrip("/"), **self.page_config})
        if path in STATIC and method in ("GET", "HEAD"):
            file, content_type = STATIC[path]
            body = file.read_bytes()
            return await _answer(send, 200, content_type, body if method == "GET" else b"")
        if path in STATIC or path == self.path:
            return await _json(send, 405, {"error": f"{method} is not allowed on {path}"})
        await _json(send, 404, {"error": f"nothing at {path}"})

    async def _body(self, receive: Receive) -> bytes:
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise BadRequest("the client went away before its request ended")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                raise BadRequest(f"the request body is over {self.max_body} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _agent_for(self, turn: Turn) -> tuple[Any, str | None, EventBase | None]:
        """The agent to run, the parked reply's id and the event resuming it (if any)."""
        if turn.resume is None:
            agent = self.make_agent()
            if turn.history and self.history:
                agent.context = list(turn.history)
            return agent, None, None
        rid, agent = self.parked.take(turn.resume)
        try:
            return agent, rid, _resume_event(agent, rid, turn.resume)
        except BadRequest:
            self.parked.put(rid, agent)  # a bad answer leaves the reply waiting
            raise

    async def _stream(self, agent: Any, turn: Turn, rid: str | None, event: EventBase | None, enc: Encoder, receive: Receive, send: Send) -> None:
        headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),  # proxies: pass each event on at once
            *enc.headers,
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        if rid is not None:
            enc.msg = _reply_of(agent, rid)

        async def emit(frames: list[bytes]) -> None:
            if frames:
                await send({"type": "http.response.body", "body": b"".join(frames), "more_body": True})

        async def pump() -> None:
            nonlocal rid
            stream = agent.reply_stream(event=event) if event is not None else agent.reply_stream(turn.inputs)
            async for ev in stream:
                if ev.type == "REPLY_START":
                    rid = ev.reply_id
                    enc.msg = _reply_of(agent, rid)
                await emit(enc.event(ev))
            calls = agent.pending_calls(rid) if rid is not None and hasattr(agent, "pending_calls") else []
            if calls and enc.msg is not None and enc.msg.finished_reason is None:
                self.parked.put(rid, agent)
                await emit(enc.parked(calls))

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        async def run() -> None:
            if self.wrap_reply is None:
                return await pump()
            with self.wrap_reply():
                await pump()

        reply, gone = asyncio.create_task(run()), asyncio.create_task(watch())
        try:
            await asyncio.wait({reply, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (reply, gone):
                task.cancel()
            # Cancelling the reply closes the provider's stream before this returns.
            await asyncio.gather(reply, gone, return_exceptions=True)
        if gone.done() and not gone.cancelled():
            return  # the client is gone: nothing more can be sent
        if not reply.cancelled() and reply.exception() is not None:
            # The agent ends a reply with REPLY_END(error) for provider errors; anything
            # else is a bug worth seeing in the stream rather than a silent cut.
            err = reply.exception()
            await emit(enc.error(f"{type(err).__name__}: {err}"))
        await emit(enc.done())
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _reply_of(agent: Any, rid: str) -> Msg | None:
    """The reply the agent keeps: it folds each event into it before yielding the event,
    so the encoders read a block whole from it at the block's end."""
    for m in reversed(getattr(agent, "context", ())):
        if m.id == rid:
            return m
    return None


def _resume_event(agent: Any, rid: str, resume: Resume) -> EventBase:
    """The event that resumes ``rid``, built from the parked calls (never from the
    client's copy of them: the client answers, the server keeps what was asked)."""
    if resume.interrupt:
        return UserInterruptEvent(reply_id=rid)
    pending = {c.id: c for c in agent.pending_calls(rid)}
    if resume.partial:
        resume.confirm = {k: v for k, v in resume.confirm.items() if k in pending and pending[k].state == "asking"}
        resume.results = {k: v for k, v in resume.results.items() if k in pending and pending[k].state == "submitted"}
    if resume.confirm and resume.results:
        raise BadRequest("answer confirmations and external results in separate requests")
    if resume.confirm:
        try:
            return agent.confirm(resume.confirm, rid)
        except AgentError as exc:
            raise BadRequest(str(exc)) from None
    if not resume.results:
        raise BadRequest("the answer holds no confirmation, no result and no interrupt")
    results = []
    for call_id, result in resume.results.items():
        call = pending.get(call_id)
        if call is None or call.state != "submitted":
            raise BadRequest(f"no call waiting for an external result with id {call_id!r}")
        results.append(result if result.name == call.name else result.model_copy(update={"name": call.name}))
    return ExternalExecutionResultEvent(reply_id=rid, execution_results=results)


def _read(read: Callable[[dict[str, Any]], Turn], dialect: str, data: dict[str, Any]) -> Turn:
    """The turn a request body asks for. The body is the client's: whatever in it the
    reader cannot take (a part of the wrong shape, a value of the wrong type) is the
    client's mistake, a 400 that says what it is, never a 500."""
    try:
        return read(data)
    except BadRequest:
        raise
    except Exception as exc:  # noqa: BLE001 - sorted: the client's data, not the server's state
        from pydantic import ValidationError

        what = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3]) if isinstance(exc, ValidationError) else f"{type(exc).__name__}: {exc}"
        raise BadRequest(f"the body is not a valid {dialect} request ({what[:300]})") from None


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


async def _answer(send: Send, status: int, content_type: str, body: bytes) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, status: int, data: dict[str, Any]) -> None:
    await _answer(send, status, "application/json", json.dumps(data).encode())
