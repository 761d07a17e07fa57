"""The connection pool's sockets on asyncio's own transports.

httpcore2 reads a socket through a network backend, by default anyio's. Each of anyio's
reads that has to wait switches the socket's reading on and off in the selector (two system
calls), waits on a new ``asyncio.Event``, and enters a cancel scope and an exception map:
for a model that sends one token per read, that was most of what a read cost modelwire.

:class:`AsyncioBackend` is httpcore2's documented network backend interface on an
``asyncio.Protocol``: the socket is read whenever data comes (paused only while more than
``HIGH_WATER`` bytes wait unread), and a read that has to wait waits on one future. Errors
are httpcore2's own (``ConnectError``, ``ReadError``, ``WriteTimeout`` ...), raised where
anyio's would be, so httpx2 maps them as before; TLS is ``loop.start_tls``. Timeouts that
httpcore2 passes (connect, write) are one timer each; a read's is one timer per connection,
re-armed lazily (see :meth:`_Protocol.wait`), since a stream makes a read per token.

:func:`use_asyncio_streams` gives the pools of a client modelwire made itself this backend;
a client the user passes is left as it is.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Any

import httpcore2
from httpcore2._utils import is_socket_readable

_RESOLUTION = time.get_clock_info("monotonic").resolution

__all__ = ["AsyncioBackend", "use_asyncio_streams"]

HIGH_WATER = 1 << 20  # bytes received and not yet read before the socket is paused
LOW_WATER = 1 << 18  # ... and resumed once reads bring it below this


class _Protocol(asyncio.Protocol):
    """What a connection received and not yet read, and the one read waiting for more."""

    def __init__(self) -> None:
        self.transport: Any = None
        self.chunks: list[bytes] = []  # mostly one: a deque's 600 bytes per connection buy nothing
        self.size = 0
        self.waiter: asyncio.Future[None] | None = None
        self.drained: asyncio.Future[None] | None = None
        self.eof = False
        self.error: BaseException | None = None
        self.lost = False
        self.paused = False
        self.deadline: float | None = None  # when the read waiting now times out (None: never)
        self.timer: asyncio.TimerHandle | None = None  # the read timeout's one timer, if armed

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.chunks.append(bytes(data))
        self.size += len(data)
        waiter = self.waiter  # _wake, written out: this runs once per read
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        if self.size > HIGH_WATER and not self.paused:
            self.paused = True
            self.transport.pause_reading()

    def eof_received(self) -> None:
        self.eof = True
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.eof = True
        if exc is not None:
            self.error = exc
        self._wake()
        self.stop_timer()
        drained = self.drained
        if drained is not None and not drained.done():
            drained.set_result(None)

    def pause_writing(self) -> None:
        self.drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        drained, self.drained = self.drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def read_now(self, max_bytes: int) -> bytes | None:
        """What a read returns without waiting: up to ``max_bytes`` received, ``b""`` where
        the peer closed the connection (``ReadError`` where it failed); None where a read must
        wait (:meth:`wait`) first."""
        if self.chunks:
            return self.take(max_bytes)
        if not self.eof:
            return None
        if self.error is not None:
            raise httpcore2.ReadError(str(self.error) or type(self.error).__name__) from self.error
        return b""

    def wait(self, timeout: float | None) -> asyncio.Future[None]:
        """The future a read awaits until data, the peer's close or an error comes; it fails
        with ``ReadTimeout`` after ``timeout`` seconds. A timer per read (``call_later`` and
        its ``cancel``: a handle and a heap push each) is paid per token by a model that sends
        a token per read: the deadline is noted here, and the connection's one timer is set
        only where none runs or it would fire too late; firing early, it re-arms itself at the
        deadline (:meth:`_expire`)."""
        loop = asyncio.get_running_loop()
        waiter = self.waiter = loop.create_future()
        if timeout is None:
            self.deadline = None
            return waiter
        deadline = self.deadline = loop.time() + timeout
        timer = self.timer
        if timer is None or timer.when() > deadline:
            if timer is not None:
                timer.cancel()
            self.timer = loop.call_at(deadline, self._expire)
        return waiter

    def _expire(self) -> None:
        self.timer = None
        waiter, deadline = self.waiter, self.deadline
        if waiter is None or waiter.done() or deadline is None:
            return  # no timed read waits: the next one arms the timer again
        loop = waiter.get_loop()
        if loop.time() + _RESOLUTION >= deadline:  # the loop runs a timer up to a clock tick early
            waiter.set_exception(httpcore2.ReadTimeout())
        else:
            self.timer = loop.call_at(deadline, self._expire)

    def stop_timer(self) -> None:
        timer, self.timer = self.timer, None
        if timer is not None:
            timer.cancel()

    def take(self, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` of what was received, in one piece."""
        chunks = self.chunks
        if len(chunks) == 1 and len(chunks[0]) <= max_bytes:
            first = chunks.pop()
        else:
            size = count = 0
            while count < len(chunks) and size + len(chunks[count]) <= max_bytes:
                size += len(chunks[count])
                count += 1
            if count:
                first = b"".join(chunks[:count])
                del chunks[:count]
            else:  # the first alone is more than asked for
                first, chunks[0] = chunks[0][:max_bytes], chunks[0][max_bytes:]
        self.size -= len(first)
        if self.paused and self.size < LOW_WATER and not self.lost:
            self.paused = False
            self.transport.resume_reading()
        return first


def _expire(future: asyncio.Future[None], error: type[Exception]) -> None:
    if not future.done():
        future.set_exception(error())


def _closed(protocol: _Protocol) -> Exception:
    return httpcore2.WriteError(str(protocol.error) if protocol.error else "the connection is closed")


class AsyncioStream(httpcore2.AsyncNetworkStream):
    """One connection: httpcore2's network stream interface on an asyncio transport."""

    def __init__(self, transport: asyncio.Transport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        protocol = self._protocol
        data = protocol.read_now(max_bytes)
        while data is None:
            try:
                await protocol.wait(timeout)
            finally:
                protocol.waiter = None
            data = protocol.read_now(max_bytes)
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        protocol = self._protocol
        if protocol.lost or self._transport.is_closing():
            raise _closed(protocol)
        self._transport.write(buffer)
        drained = protocol.drained
        if drained is None:
            return
        timer = None
        if timeout is not None:
            timer = asyncio.get_running_loop().call_later(timeout, _expire, drained, httpcore2.WriteTimeout)
        try:
            await asyncio.shield(drained)
        finally:
            if timer is not None:
                timer.cancel()
        if protocol.lost:
            raise _closed(protocol)

    async def aclose(self) -> None:
        self._protocol.stop_timer()
        self._transport.close()

    async def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore2.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport = await loop.start_tls(
                    self._transport, self._protocol, ssl_context, server_hostname=server_hostname
                )
        except TimeoutError as exc:
            self._transport.abort()
            raise httpcore2.ConnectTimeout(str(exc)) from exc
        except (OSError, ConnectionError) as exc:  # ssl.SSLError is an OSError
            self._transport.abort()
            raise httpcore2.ConnectError(str(exc)) from exc
        if transport is None:  # pragma: no cover - the connection closed during the handshake
            raise httpcore2.ConnectError("the connection closed during the TLS handshake")
        return AsyncioStream(transport, self._protocol)

    def get_extra_info(self, info: str) -> Any:
        transport = self._transport
        if info == "ssl_object":
            return transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return transport.get_extra_info("sockname")
        if info == "server_addr":
            return transport.get_extra_info("peername")
        if info == "socket":
            return transport.get_extra_info("socket")
        if info == "is_readable":
            # An idle connection with anything to read (bytes, the peer's close) is not
            # reusable; this socket is read as data comes, so look at what it holds first.
            protocol = self._protocol
            return bool(protocol.chunks) or protocol.eof or is_socket_readable(transport.get_extra_info("socket"))
        return None


class AsyncioBackend(httpcore2.AsyncNetworkBackend):
    """httpcore2's network backend on asyncio's transports (see the module's docstring)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        local = None if local_address is None else (local_address, 0)
        return await self._connect(
            lambda: loop.create_connection(_Protocol, host, port, local_addr=local), timeout, socket_options
        )

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        return await self._connect(lambda: loop.create_unix_connection(_Protocol, path), timeout, socket_options)

    async def _connect(self, make: Any, timeout: float | None, socket_options: Iterable[Any] | None) -> AsyncioStream:
        try:
            async with asyncio.timeout(timeout):
                transport, protocol = await make()
        except TimeoutError as exc:
            raise httpcore2.ConnectTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore2.ConnectError(str(exc)) from exc
        for option in socket_options or ():  # asyncio sets TCP_NODELAY itself
            transport.get_extra_info("socket").setsockopt(*option)
        return AsyncioStream(transport, protocol)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def use_asyncio_streams(client: Any) -> bool:
    """Give the connection pools of an httpx2 client (its own transport and any proxy's)
    :class:`AsyncioBackend` where they have httpcore2's default backend; whether any had."""
    from httpcore2._backends.auto import AutoBackend

    transports = [getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()]
    changed = False
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        if pool is not None and type(getattr(pool, "_network_backend", None)) is AutoBackend:
            pool._network_backend = AsyncioBackend()
            changed = True
    return changed
