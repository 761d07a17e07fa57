"""A real HTTP server on 127.0.0.1 that speaks like a provider, for end-to-end tests.

Each request takes the next scripted :class:`Reply`: a status, headers and a body sent in
pieces with delays, and faults on demand (a stall, a dropped connection). The server keeps
every request it received (method, path, headers, JSON body) and notes when a client went
away in the middle of a response.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, cast

from ..adapters import split_sse


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    pieces: list[bytes] | None = None  # the body in these pieces (default: one SSE event per piece)
    delay: float = 0.0  # seconds between pieces
    stall_after: int | None = None  # after this many pieces, stop sending (for `stall` seconds)
    stall: float = 5.0
    drop_after: int | None = None  # after this many pieces, close the connection abruptly
    check: Callable[[dict[str, Any]], None] | None = None  # raise to answer 400 instead

    def split(self) -> list[bytes]:
        if self.pieces is not None:
            return self.pieces
        return split_sse(self.body) if self.body else []


def sse_reply(body: bytes, **kw: Any) -> Reply:
    """A scripted answer of ``body`` as a server-sent event stream (``kw`` as for :class:`Reply`)."""
    return Reply(body=body, headers={"content-type": "text/event-stream"}, **kw)


def json_reply(body: Any, status: int = 200, headers: dict[str, str] | None = None, **kw: Any) -> Reply:
    """A scripted JSON answer: an upload's file object, a batch, a token count, a model list
    (``kw`` as for :class:`Reply`, ``check`` included)."""
    return Reply(
        status=status,
        body=json.dumps(body).encode(),
        headers={"content-type": "application/json", **(headers or {})},
        **kw,
    )


def answer_reply(protocol: str, *blocks: tuple[Any, ...], usage: tuple[int, int] = (10, 5), **kw: Any) -> Reply:
    """A whole (not streamed) answer in ``protocol``'s JSON, for ``stream=False`` calls:
    ``blocks`` as for :func:`modelwire.testing.sse.body` (``("text", ...)``, ``("think", ...)``,
    ``("tool", call_id, name, arguments_json)``)."""
    from ..protocols import get_protocol

    return json_reply(get_protocol(protocol).fake_answer(*blocks, usage=usage), **kw)


def error_reply(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
    """A scripted error answer: ``status`` with ``body`` as JSON (and any ``headers``, such as ``retry-after``)."""
    return Reply(
        status=status, body=json.dumps(body).encode(), headers={"content-type": "application/json", **(headers or {})}
    )


class _Server(ThreadingHTTPServer):
    request_queue_size = 512  # hundreds of clients connect at once in the load tests
    owner: "ProviderServer"


class _Handler(BaseHTTPRequestHandler):
    """One request to the fake provider: recorded, answered with its reply in chunks."""

    protocol_version = "HTTP/1.1"

    @property
    def owner(self) -> "ProviderServer":
        return cast(_Server, self.server).owner

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass

    def setup(self) -> None:
        super().setup()
        # Small writes, one per piece: without this, Nagle and delayed ACKs add ~40 ms to
        # every exchange.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        request = {
            "method": self.command,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "json": body,
            "body": raw,
        }
        reply = self.owner._reply_for(request)
        self.send_response(reply.status)
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for n, piece in enumerate(reply.split()):
                if reply.drop_after is not None and n == reply.drop_after:
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                if reply.stall_after is not None and n == reply.stall_after:
                    time.sleep(reply.stall)
                if n and reply.delay:
                    time.sleep(reply.delay)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            owner = self.owner
            with owner.lock:
                owner.disconnects.append(time.monotonic())
            self.close_connection = True


def first_preset(protocol: str) -> str:
    """The name of the first preset that speaks ``protocol`` (a protocol declares at least one)."""
    from ..protocols import all_presets

    for preset in all_presets().values():
        if preset.protocol == protocol:
            return preset.name
    raise LookupError(f"no preset speaks {protocol!r} (a protocol declares at least one in `presets`)")


class ProviderServer:
    """A real HTTP server on 127.0.0.1 that answers like a provider, in a thread.

        with ProviderServer() as server:
            server.script(stream_reply(protocol, body(protocol, ("text", "Hello."))))
            model = load_model("PROVIDER:MODEL", api_key="test", base_url=server.url)
            ...
            assert server.requests[0]["json"]["messages"][0]["role"] == "user"

    What it answers, per request, in this order:

    - ``script(*replies)``: the scripted :class:`Reply` objects, one each, in order (a
      status, headers, a body sent in pieces with ``delay`` between them; ``stall_after`` /
      ``drop_after`` for a stalled or dropped connection; ``check`` to answer 400 when the
      request is not what a test expects);
    - ``respond``: otherwise, a function from the request to a :class:`Reply` (concurrent
      clients each get their own answer);
    - a 500 when neither says anything.

    What it saw: ``requests`` (each ``{"method", "path", "headers", "json"}``, headers in lower
    case; ``keep_requests = False`` keeps none, for soak tests) and ``disconnects`` (when a
    client went away in the middle of an answer). ``url`` is its base URL; ``port=0`` (the
    default) takes a free port."""

    def __init__(self, port: int = 0) -> None:
        self.replies: list[Reply] = []
        # Called for each request when no reply is scripted: answers from what was asked
        # (concurrent clients each get their own answer).
        self.respond: Callable[[dict[str, Any]], Reply] | None = None
        self.requests: list[dict[str, Any]] = []
        self.keep_requests = True  # soak tests turn this off: the server then keeps nothing
        self.disconnects: list[float] = []
        self.lock: threading.Lock = threading.Lock()
        self.httpd: _Server = _Server(("127.0.0.1", port), _Handler)
        self.httpd.owner = self
        self.httpd.daemon_threads = True
        self.port: int = self.httpd.server_address[1]
        self.url: str = f"http://127.0.0.1:{self.port}"
        self.thread: threading.Thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _reply_for(self, request: dict[str, Any]) -> Reply:
        """The next scripted reply, else ``respond``'s answer; a 400 when its check fails."""
        with self.lock:
            if self.keep_requests:
                self.requests.append(request)
            if self.replies:
                reply: Reply | None = self.replies.pop(0)
            elif self.respond is not None:
                reply = None
            else:
                reply = error_reply(500, {"error": {"message": "no reply scripted"}})
        if reply is None:
            reply = self.respond(request)  # type: ignore[misc]
        if reply.check is not None:
            try:
                reply.check(request)
            except Exception as exc:  # noqa: BLE001 - tell the client what was wrong
                reply = error_reply(
                    400, {"error": {"type": "invalid_request_error", "message": f"server check failed: {exc}"}}
                )
        return reply

    def __enter__(self) -> "ProviderServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def script(self, *replies: Reply) -> None:
        with self.lock:
            self.replies.extend(replies)

    def model(self, protocol: str, name: str = "test-model", *, preset: str | None = None, **options: Any) -> Any:
        """A model of ``protocol`` that calls this server: its first preset (or ``preset``),
        model ``name``, a test key, no capability lookup and no retries unless ``options``
        say otherwise. What a test of every registered protocol loads, so that a plugin's
        protocol is loaded the way a built-in one is."""
        from ..models import load_model
        from ..models.transport import RetryPolicy

        options.setdefault("api_key", "sk-test")
        options.setdefault("capability_lookup", False)
        options.setdefault("retry", RetryPolicy(max_retries=0))
        return load_model(f"{preset or first_preset(protocol)}:{name}", base_url=self.url, **options)
