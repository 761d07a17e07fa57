"""ASGI plumbing the app answers with: plain answers, JSON answers, the CORS preflight, the
lifespan, and an event stream relayed to a client until it ends or the client leaves."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, AsyncIterator, Awaitable, Callable

_log = logging.getLogger("modelwire.serve")


Scope = dict[str, Any]


Receive = Callable[[], Awaitable[dict[str, Any]]]


Send = Callable[[dict[str, Any]], Awaitable[None]]


_SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),  # proxies: pass each event on at once
    (b"x-content-type-options", b"nosniff"),
]


async def _relay(chunks: AsyncIterator[bytes], receive: Receive, send: Send, extra: list[tuple[bytes, bytes]]) -> None:
    """Send an event stream's chunks as they come, until it ends or the client leaves.

    The chunks are sent from this task; one task of its own watches for the client leaving
    and then cuts this one's wait short (a task less per open stream than one for each)."""
    await send({"type": "http.response.start", "status": 200, "headers": [*_SSE_HEADERS, *extra]})
    this = asyncio.current_task()
    assert this is not None
    left = False

    async def watch() -> None:
        nonlocal left
        while (await receive())["type"] != "http.disconnect":
            pass
        left = True
        this.cancel()

    watcher = asyncio.create_task(watch())
    try:
        try:
            async for chunk in chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except Exception as exc:  # noqa: BLE001 - the response ends where its stream broke
            _log.debug("a stream ended early: %s: %s", type(exc).__name__, exc)
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    except asyncio.CancelledError:
        if not left:
            raise  # cancelled from outside: not ours to take
        this.uncancel()  # the watcher's: the client is gone, nothing more can be sent
    finally:
        # Not awaited: this task does not wait again here, so the watcher, cancelled before
        # its next step, can no longer cancel it.
        watcher.cancel()


async def _answer(
    send: Send, status: int, content_type: str, body: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, status: int, data: dict[str, Any], extra: list[tuple[bytes, bytes]] | None = None) -> None:
    await _answer(send, status, "application/json", json.dumps(data).encode(), extra)


def _path(scope: Scope) -> str:
    """The request's path inside the app (mounted under a prefix: FastAPI's app.mount,
    Starlette's Mount)."""
    path: str = scope["path"]
    root = scope.get("root_path", "")
    if root and path.startswith(root):
        return path[len(root) :] or "/"
    return path


async def _preflight(send: Send, origin: str | None, cors: list[tuple[bytes, bytes]] | None) -> None:
    """A CORS preflight: allowed for an allowed origin, refused for any other."""
    if origin is None or cors is None:
        return await _json(send, 403, {"error": "this origin may not call this server (allowed_origins)"})
    preflight = [
        *cors,
        (b"access-control-allow-methods", b"POST"),
        (b"access-control-allow-headers", b"content-type, authorization, last-event-id"),
        (b"access-control-max-age", b"600"),
    ]
    await _answer(send, 204, "text/plain", b"", preflight)


async def _lifespan(receive: Receive, send: Send) -> None:
    """The ASGI lifespan: nothing to start or stop, both acknowledged."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
