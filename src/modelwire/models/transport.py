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
from typing import Any, AsyncIterator

from .. import errors as E

__all__ = ["Timeouts", "RetryPolicy", "HTTPTransport", "retry_after_seconds", "transport_error"]


@dataclass
class Timeouts:
    """Seconds. ``first_byte``: from sending the request to the first byte of the body;
    ``chunk``: the longest gap between two pieces of the body; ``total``: the whole call."""

    connect: float = 10.0
    first_byte: float = 120.0
    chunk: float = 120.0
    total: float | None = 900.0


@dataclass
class RetryPolicy:
    """Exponential backoff with jitter, honouring ``retry-after`` / ``retry-after-ms``.

    Retried: connection errors and timeouts before any response, HTTP 408 / 409 / 429 /
    5xx, and provider errors of the same kinds (Anthropic ``overloaded_error``) that arrive
    before any output was passed on. Never retried once output was passed on.
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
        base = min(self.max_delay, self.initial_delay * (2**attempt))
        return base * (1 - self.jitter * random.random())

    def retryable(self, err: E.ProviderError) -> bool:
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


def transport_error(exc: BaseException) -> E.ProviderError:
    """Map an httpx / httpx2 exception (or an asyncio timeout) to a modelwire error."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    text = str(exc) or type(exc).__name__
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or "TimeoutException" in names:
        return E.TimeoutError(f"timed out: {text}")
    if names & {"RemoteProtocolError", "ReadError", "WriteError", "ConnectError", "NetworkError", "ProtocolError"}:
        return E.ConnectionError(f"connection failed: {text}")
    if names & {"TransportError", "RequestError"} or isinstance(exc, OSError):
        return E.ConnectionError(f"connection failed: {text}")
    return E.ConnectionError(f"{type(exc).__name__}: {text}")


def _is_transport_exception(exc: BaseException) -> bool:
    if isinstance(exc, E.ModelwireError):
        return False  # ours already (our ConnectionError is an OSError too)
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"TransportError", "RequestError", "TimeoutException"}) or isinstance(exc, (OSError, asyncio.TimeoutError))


class HTTPTransport:
    """One connection pool; ``open()`` sends a request and returns the streaming response."""

    def __init__(self, client: Any = None, *, timeouts: Timeouts | None = None, max_connections: int = 20) -> None:
        self.timeouts = timeouts or Timeouts()
        self._client = client
        self._owned = client is None
        self._max_connections = max_connections
        self._loop: Any = None

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
                self._client = None
        if self._client is None:
            import httpx2

            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:
                self._loop = None

            t = self.timeouts
            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(connect=t.connect, read=t.chunk, write=t.connect, pool=t.connect),
                limits=httpx2.Limits(max_connections=self._max_connections, max_keepalive_connections=self._max_connections),
            )
        return self._client

    async def open(self, method: str, url: str, headers: dict[str, str], content: bytes, timeout: float) -> Any:
        """Send the request; return the response once its headers arrived (body not read)."""
        client = self.client
        request = client.build_request(method, url, headers=headers, content=content)
        try:
            async with asyncio.timeout(timeout):
                return await client.send(request, stream=True)
        except Exception as exc:
            if _is_transport_exception(exc):
                raise transport_error(exc) from exc
            raise

    async def aclose(self) -> None:
        if self._owned and self._client is not None:
            await self._client.aclose()
            self._client = None


async def read_chunks(response: Any, timeouts: Timeouts, deadline: float | None, first_deadline: float) -> AsyncIterator[bytes]:
    """The response body piece by piece, with the first-byte, gap and total timeouts."""
    loop = asyncio.get_running_loop()
    iterator = response.aiter_bytes().__aiter__()
    limit = first_deadline
    while True:
        now = loop.time()
        wait = limit - now
        if deadline is not None:
            wait = min(wait, deadline - now)
        if wait <= 0:
            raise E.TimeoutError("timed out waiting for the response body")
        try:
            async with asyncio.timeout(wait):
                chunk = await iterator.__anext__()
        except StopAsyncIteration:
            return
        except TimeoutError as exc:
            what = "the first byte of the response" if limit == first_deadline else "the next piece of the response"
            raise E.TimeoutError(f"timed out after {wait:.1f}s waiting for {what}") from exc
        except Exception as exc:
            if _is_transport_exception(exc):
                raise transport_error(exc) from exc
            raise
        limit = loop.time() + timeouts.chunk
        if chunk:
            yield chunk
