"""Streaming HTTP for model calls: pooling, timeouts, retry policy, error mapping.

modelwire talks HTTP through ``httpx2``, the fork of ``httpx`` the official ``openai``
(3.x) and ``anthropic`` (2.x) SDKs run on. One stack means an SDK client a user already
configured can lend us its connection pool, and one transport hook (see
``modelwire.cassettes``) records and replays both our calls and the SDKs'. A plain
``httpx.AsyncClient`` works too: the transport only uses the API the two share.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from dataclasses import dataclass, field
from typing import Any, AsyncGenerator, AsyncIterator

from .. import errors as E
from ._chunks import DirectBody, client_error, direct_body, take_whole_chunks
from ._logmask import SENDING, install as install_log_filter

__all__ = ["Timeouts", "RetryPolicy", "HTTPTransport", "retry_after_seconds", "transport_error"]


@dataclass
class Timeouts:
    """Seconds. ``connect``: opening the connection; ``pool``: waiting for a free connection
    of the pool (``max_connections``); ``first_byte``: from sending the request to the
    response headers and then to the first byte of the body; ``chunk``: the longest gap
    between two pieces of the body; ``total``: the whole call. Each timeout error says which
    fired and its value (``err.which``, ``err.seconds``)."""

    connect: float = 10.0
    first_byte: float = 120.0
    chunk: float = 120.0
    total: float | None = 900.0
    pool: float = 30.0


@dataclass
class RetryPolicy:
    """Exponential backoff with jitter, honouring ``retry-after`` / ``retry-after-ms``.

    Retried: connection errors and timeouts before any response, HTTP 408 / 409 / 429 /
    5xx, and provider errors of the same kinds (Anthropic ``overloaded_error``) that arrive
    before the answer began. Never retried once it began (a block of it came, passed on or not),
    nor a :class:`~modelwire.errors.QuotaExceededError` (a 429 no wait lifts).
    """

    max_retries: int = 2
    initial_delay: float = 0.5
    max_delay: float = 16.0
    jitter: float = 0.25  # up to this fraction is taken off each delay, at random
    max_retry_after: float = 60.0  # a longer retry-after is not waited for: the error is raised
    statuses: frozenset[int] = field(default_factory=lambda: frozenset({408, 409, 429, 500, 502, 503, 504, 529}))

    def delay(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before retry number ``attempt`` (0-based), or None to give up."""
        if attempt >= self.max_retries:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        base: float = min(self.max_delay, self.initial_delay * (2**attempt))  # (int ** int is Any to mypy)
        return base * (1 - self.jitter * random.random())

    def retryable(self, err: E.ProviderError) -> bool:
        if isinstance(err, E.QuotaExceededError):
            return False  # a 429 no wait lifts (a request over the per-minute budget, a daily quota)
        if isinstance(err, (E.ConnectionError, E.IncompleteStreamError, E.OverloadedError, E.RateLimitError)):
            return True
        if err.status_code is not None:
            return err.status_code in self.statuses or err.status_code >= 500
        return isinstance(err, E.UpstreamError) and not isinstance(err, E.StreamProtocolError)


def retry_after_seconds(headers: Any) -> float | None:
    """``retry-after-ms`` (milliseconds), or ``retry-after`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


_HTTPX_TIMEOUTS = {
    "ConnectTimeout": "connect",
    "PoolTimeout": "pool",
    "ReadTimeout": "chunk",
    "WriteTimeout": "connect",
}


def transport_error(exc: BaseException, timeouts: "Timeouts | None" = None) -> E.ProviderError:
    """Map an httpx / httpx2 exception (or an asyncio timeout) to a modelwire error."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    text = str(exc) or type(exc).__name__
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or "TimeoutException" in names:
        which = next((w for n, w in _HTTPX_TIMEOUTS.items() if n in names), None)
        seconds = getattr(timeouts, which, None) if timeouts is not None and which else None
        label = (
            f"the {which} timeout ({seconds:g} s)"
            if which and seconds is not None
            else (f"the {which} timeout" if which else "a timeout")
        )
        return E.TimeoutError(f"{label} fired: {text}", which=which, seconds=seconds)
    if names & {"RemoteProtocolError", "ReadError", "WriteError", "ConnectError", "NetworkError", "ProtocolError"}:
        return E.ConnectionError(f"connection failed: {text}")
    if names & {"TransportError", "RequestError"} or isinstance(exc, OSError):
        return E.ConnectionError(f"connection failed: {text}")
    return E.ConnectionError(f"{type(exc).__name__}: {text}")


def _refused(exc: BaseException) -> bool:
    """A connection nobody accepted (no server on that port)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError) or "ConnectError" in {c.__name__ for c in type(seen).__mro__}:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _is_transport_exception(exc: BaseException) -> bool:
    if isinstance(exc, E.ModelwireError):
        return False  # ours already (our ConnectionError is an OSError too)
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"TransportError", "RequestError", "TimeoutException"}) or isinstance(
        exc, (OSError, asyncio.TimeoutError)
    )


class HTTPTransport:
    """One connection pool; ``open()`` sends a request and returns the streaming response."""

    def __init__(self, client: Any = None, *, timeouts: Timeouts | None = None, max_connections: int = 20) -> None:
        self.timeouts: Timeouts = timeouts or Timeouts()
        self._client = client
        self._owned = client is None
        self._max_connections = max_connections
        self._loop: Any = None
        self._keepers: Any = None  # per event loop: closes that loop's pool when the loop shuts down
        install_log_filter()  # the HTTP stack's log lines never show the request's credentials

    @property
    def client(self) -> Any:
        if self._owned and self._client is not None:
            # A pool is tied to the event loop it was made on: scripts that call
            # asyncio.run() once per reply get a fresh pool on each new loop.
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            if loop is not None and self._loop is not None and loop is not self._loop:
                self._client = None  # the old loop's pool was closed at its shutdown (see _keep)
        if self._client is None:
            import httpx2

            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:
                self._loop = None

            t = self.timeouts
            # No read timeout here: first_byte (headers, then the first byte) and chunk (each
            # gap after it) are measured by open() and read_chunks(), which know which fired.
            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(connect=t.connect, read=None, write=t.connect, pool=t.pool),
                limits=httpx2.Limits(
                    max_connections=self._max_connections, max_keepalive_connections=self._max_connections
                ),
            )
            from ._netio import use_asyncio_streams

            use_asyncio_streams(self._client)  # sockets on asyncio's transports (see _netio)
        return self._client

    async def _keep(self, client: Any) -> None:
        """Close this loop's pool when the loop shuts down: ``asyncio.run()`` (and
        ``asyncio.Runner``) finalize async generators before closing the loop, so a
        suspended one is the hook. Scripts that call ``asyncio.run()`` per reply (the
        chat CLI does) leave no pool behind."""
        import weakref

        if self._keepers is None:
            self._keepers = weakref.WeakKeyDictionary()
        loop = asyncio.get_running_loop()
        if loop in self._keepers:
            return

        async def keeper() -> AsyncGenerator[None, None]:
            try:
                yield
            finally:
                if self._client is client:
                    self._client = None
                await client.aclose()

        generator = keeper()
        await generator.__anext__()
        self._keepers[loop] = generator

    async def open(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        content: bytes,
        first_byte: float,
        deadline: float | None = None,
    ) -> Any:
        """Send the request; return the response once its headers arrived (body not read).

        Each phase has its own bound: waiting for a pooled connection (``pool``) and
        connecting (``connect``) are the HTTP client's; from the moment the request is
        sent, the headers must come within ``first_byte``; and nothing runs past
        ``deadline`` (a ``loop.time()``, the call's ``total``). A timeout error names the
        phase that was running and the seconds it waited."""
        client = self.client
        if self._owned:
            await self._keep(client)
        loop = asyncio.get_running_loop()
        begun = loop.time()
        t = self.timeouts
        sent: list[float] = []
        # Until the request is sent only a safety net applies (the client bounds pool and
        # connect itself); a client whose transport reports no trace (a replaying one)
        # keeps it.
        limit = begun + t.pool + t.connect + first_byte
        timer = asyncio.timeout(_earliest(limit, deadline))

        async def trace(name: str, info: Any) -> None:
            if not sent and name.endswith("send_request_headers.started"):
                sent.append(loop.time())
                timer.reschedule(_earliest(sent[0] + first_byte, deadline))

        SENDING.set((url, headers))  # for the log filter, while this task sends and reads the answer
        request = client.build_request(method, url, headers=headers, content=content, extensions={"trace": trace})
        try:
            async with timer:
                return await client.send(request, stream=True)
        except TimeoutError as exc:  # ours (asyncio.timeout) or httpx's: name the one that fired
            if "TimeoutException" in {c.__name__ for c in type(exc).__mro__}:
                raise transport_error(exc, self.timeouts) from exc
            started = sent[0] if sent else None
            raise self._timed_out(request.url.host, started, begun, limit, first_byte, deadline) from exc
        except Exception as exc:
            if _is_transport_exception(exc):
                raise self._unreached(exc, method, url, request) from exc
            raise

    def _timed_out(
        self, host: str, sent: float | None, begun: float, limit: float, first_byte: float, deadline: float | None
    ) -> E.TimeoutError:
        """Which of modelwire's own bounds fired while waiting for the headers: the call's
        ``total``, or ``first_byte`` counted from the moment the request was sent."""
        t = self.timeouts
        if deadline is not None and deadline <= (sent + first_byte if sent is not None else limit):
            return E.TimeoutError(
                f"the total timeout ({t.total:g} s) fired while waiting for the response headers from {host}",
                which="total",
                seconds=t.total,
            )
        waited = asyncio.get_running_loop().time() - (sent if sent is not None else begun)
        return E.TimeoutError(
            f"the first_byte timeout ({first_byte:g} s) fired: no response headers from {host} "
            f"{waited:.1f} s after the request was sent",
            which="first_byte",
            seconds=first_byte,
        )

    def _unreached(self, exc: BaseException, method: str, url: str, request: Any) -> E.ProviderError:
        """The HTTP client's own failure as modelwire's error, naming the request (and, for a
        local server that refused the connection, that it may not be running)."""
        err = transport_error(exc, self.timeouts)
        err.message = f"{err.message} ({method} {url.split('?')[0]})"
        if _refused(exc) and request.url.host in ("localhost", "127.0.0.1", "::1", "[::1]"):
            # A local server (Ollama, LM Studio, llama.cpp ...) that is not running.
            origin = f"{request.url.scheme}://{request.url.netloc.decode('ascii', 'replace')}"
            err.message = f"nothing answers at {origin}: is the server running there? ({err.message})"
        return err

    async def aclose(self) -> None:
        if self._owned and self._client is not None:
            client, self._client = self._client, None
            try:
                if self._loop is None or self._loop is asyncio.get_running_loop():
                    await client.aclose()
            except RuntimeError:  # a pool of a loop that is gone: nothing left to close here
                pass


def _earliest(limit: float, deadline: float | None) -> float:
    return limit if deadline is None or limit < deadline else deadline


class _Watchdog:
    """The first-byte, gap and total timeouts of one body, with one timer instead of one
    ``asyncio.timeout()`` per piece (which cost a quarter of the per-chunk time). The timer
    only ever cancels the task while it waits for the next piece of this body, so a slow
    consumer between pieces is never interrupted."""

    __slots__ = (
        "loop",
        "task",
        "timeouts",
        "deadline",
        "first_deadline",
        "started",
        "reading",
        "first",
        "fired",
        "handle",
        "armed",
    )

    def __init__(self, timeouts: Timeouts, deadline: float | None, first_deadline: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.task = asyncio.current_task()
        self.timeouts = timeouts
        self.deadline = deadline
        self.first_deadline = first_deadline
        self.started = self.loop.time()
        self.reading = False
        self.first = True
        self.fired: tuple[str, float | None] | None = None
        self.handle: Any = None
        self._arm()

    def limit(self) -> tuple[float, str, float | None]:
        if self.first:
            limit, which, seconds = self.first_deadline, "first_byte", self.timeouts.first_byte
        else:
            limit, which, seconds = self.started + self.timeouts.chunk, "chunk", self.timeouts.chunk
        if self.deadline is not None and self.deadline < limit:
            return self.deadline, "total", self.timeouts.total
        return limit, which, seconds

    def _arm(self) -> None:
        self.armed = self.limit()[0]
        self.handle = self.loop.call_at(self.armed, self._check)

    def first_piece(self) -> None:
        """The first piece came: from now on the gap limit applies, which may come sooner
        than the first-byte limit the timer was set for."""
        self.first = False
        self.started = self.loop.time()
        if self.limit()[0] < self.armed:
            self.handle.cancel()
            self._arm()

    def begin_read(self) -> None:
        """The task waits for the next piece. A timer that went idle while the consumer was
        busy is set again; the gap counts from now, since only waiting counts."""
        self.reading = True
        if self.handle is None:
            if not self.first:
                self.started = self.loop.time()
            self._arm()

    def _check(self) -> None:
        if not self.reading:
            # The consumer holds the task between pieces: no timeout applies, and the timer
            # stays idle (re-arming a past limit would spin) until the next wait begins.
            self.handle = None
            return
        limit, which, seconds = self.limit()
        if self.loop.time() >= limit and self.task is not None:
            self.fired = (which, seconds)
            self.task.cancel()
        else:
            self._arm()

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.cancel()


def _pieces(response: Any) -> tuple[DirectBody | None, Any]:
    """The body's pieces as they come: on modelwire's own sockets a :class:`DirectBody`
    (h11 and the socket asked directly, see ``_chunks``); else, where the body is not
    content-encoded, the client's own byte stream (which maps the connection's errors to the
    client's), without the two generators and the chunkers that ``aiter_bytes`` puts around
    it for every piece; else ``aiter_bytes``, which decodes."""
    stream: Any = getattr(response, "stream", None)
    encoding = response.headers.get("content-encoding", "")
    if (
        encoding.strip().lower() in ("", "identity")
        and hasattr(stream, "__aiter__")
        and not hasattr(response, "_content")
        and not response.is_stream_consumed
    ):
        response.is_stream_consumed = True  # as aiter_raw marks it: a second read is refused
        take_whole_chunks(stream)  # a chunked body a socket read at a time (see _chunks)
        body = direct_body(stream)  # on modelwire's own sockets, without the layers between
        return body, None if body is not None else stream.__aiter__()
    return None, response.aiter_bytes().__aiter__()


def _timed_out(watch: _Watchdog) -> E.TimeoutError | None:
    """The timeout the watchdog fired (its cancel taken back), or None where the task was
    cancelled by someone else."""
    if watch.fired is None:
        return None
    if watch.task is not None:
        watch.task.uncancel()
    which, seconds = watch.fired
    what = {
        "first_byte": "nothing came for the first byte of the body",
        "chunk": "nothing came between two pieces of the body",
        "total": "while reading the body",
    }[which]
    return E.TimeoutError(f"the {which} timeout ({seconds:g} s) fired: {what}", which=which, seconds=seconds)


async def read_chunks(
    response: Any, timeouts: Timeouts, deadline: float | None, first_deadline: float
) -> AsyncIterator[bytes]:
    """The response body piece by piece, with the first-byte, gap and total timeouts. On a
    :class:`DirectBody` this generator awaits the socket's own future: a paced stream's read
    goes through no other frame of modelwire's."""
    body, iterator = _pieces(response)
    watch = _Watchdog(timeouts, deadline, first_deadline)
    loop = watch.loop
    try:
        while True:
            watch.begin_read()
            try:
                if body is not None:
                    chunk = body.take()
                    while not chunk:
                        if chunk is None:
                            return
                        await body.wait()
                        chunk = body.take()
                else:
                    chunk = await iterator.__anext__()
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                fired = _timed_out(watch)
                if fired is None:
                    raise
                raise fired from None
            except Exception as exc:
                if body is not None:
                    exc = client_error(exc)  # what the socket's future raised, as httpx2 raises it
                if _is_transport_exception(exc):
                    raise transport_error(exc, timeouts) from exc
                raise exc  # noqa: TRY201 - the client's form of it
            finally:
                watch.reading = False
            if watch.first:
                watch.first_piece()
            else:
                watch.started = loop.time()
            if chunk:
                yield chunk
    finally:
        watch.stop()
