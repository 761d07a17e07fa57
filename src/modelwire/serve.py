"""Serving an agent's events to browsers: a plain ASGI application, no framework.

``EventStreamApp(make_agent)`` answers ``POST /reply`` (a JSON body: ``{"input": "text"}``
or ``{"messages": [message JSON, ...]}``) with the reply's events as server-sent events,
one modelwire / AgentScope event JSON per ``data:`` line, as ``reply_stream()`` yields
them. Each request gets its own agent from ``make_agent()``. When the client goes away
the reply is cancelled, which closes the provider's stream too. ``GET /fold.mjs`` serves
the JavaScript fold (``appendEvent``, ``EventStreamParser``) that rebuilds the messages
in the browser.

Mount it in any ASGI server or framework (uvicorn, Starlette, FastAPI's ``app.mount``,
Django's ASGI router)::

    app = EventStreamApp(lambda: Agent("bot", load_model("anthropic:claude-sonnet-4-5")))
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Awaitable, Callable

from .event import event_to_json
from .message import Msg, UserMsg

__all__ = ["EventStreamApp"]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

JS_DIR = Path(__file__).parent / "js"
MAX_BODY = 16 * 1024 * 1024


class BadRequest(Exception):
    """A request this app cannot take; answered with 400 and the reason."""


class EventStreamApp:
    """An ASGI application streaming one agent reply per request (see the module doc)."""

    def __init__(self, make_agent: Callable[[], Any], *, path: str = "/reply", max_body: int = MAX_BODY) -> None:
        self.make_agent = make_agent
        self.path = path
        self.max_body = max_body

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
        if path == self.path and method == "POST":
            try:
                messages = _messages(await self._body(receive))
            except BadRequest as exc:
                return await _json(send, 400, {"error": str(exc)})
            return await self._stream(messages, receive, send)
        if path == "/fold.mjs" and method in ("GET", "HEAD"):
            body = (JS_DIR / "fold.mjs").read_bytes()
            return await _answer(send, 200, "text/javascript; charset=utf-8", body if method == "GET" else b"")
        if path in (self.path, "/fold.mjs"):
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

    async def _stream(self, messages: list[Msg], receive: Receive, send: Send) -> None:
        agent = self.make_agent()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"cache-control", b"no-cache"),
                    (b"x-accel-buffering", b"no"),  # proxies: pass each event on at once
                ],
            }
        )

        async def pump() -> None:
            async for event in agent.reply_stream(messages):
                await send({"type": "http.response.body", "body": f"data: {event_to_json(event)}\n\n".encode(), "more_body": True})

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        reply, gone = asyncio.create_task(pump()), asyncio.create_task(watch())
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
            payload = json.dumps({"type": "ERROR", "message": f"{type(err).__name__}: {err}"})
            await send({"type": "http.response.body", "body": f"event: error\ndata: {payload}\n\n".encode(), "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _messages(raw: bytes) -> list[Msg]:
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise BadRequest(f"the body is not JSON: {exc}") from None
    if not isinstance(data, dict) or ("input" in data) == ("messages" in data):
        raise BadRequest('send {"input": "text"} or {"messages": [message, ...]}')
    if "input" in data:
        if not isinstance(data["input"], str) or not data["input"]:
            raise BadRequest('"input" must be a non-empty string')
        return [UserMsg("user", data["input"])]
    if not isinstance(data["messages"], list) or not data["messages"]:
        raise BadRequest('"messages" must be a non-empty list of messages')
    try:
        return [Msg.from_dict(m) for m in data["messages"]]
    except ValueError as exc:  # pydantic's ValidationError and the role rules are ValueErrors
        raise BadRequest(f"a message is not valid: {str(exc).splitlines()[0]}") from None


async def _answer(send: Send, status: int, content_type: str, body: bytes) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, status: int, data: dict[str, Any]) -> None:
    await _answer(send, status, "application/json", json.dumps(data).encode())
