"""A chunked body read a socket read at a time, not a chunk at a time.

A provider flushes one event per HTTP chunk, and a socket read holds many of them when the
stream runs faster than the client reads it (which is when the client's CPU matters). h11
makes one ``Data`` event of each chunk, and every event goes up through h11's state
machine, httpcore2's receive loop and three async generators before the decoder sees it:
over a real socket that was more than half of modelwire's CPU per chunk.

:func:`take_whole_chunks` gives the h11 connection behind one response a reader that makes
one ``Data`` event of every whole chunk the receive buffer holds. The bytes are the same and
nothing waits for more of them: what is received is handed on as before, only in fewer
pieces. Anything but whole chunks at a chunk boundary (a chunk split across reads, the last
chunk and its trailer, a malformed chunk) goes through h11's own reader, which raises its
own errors, in the same place. Timeouts, cancellation, closing and the connection's reuse
are httpcore2's, untouched.

Where the connection reads through modelwire's own socket stream (:mod:`._netio`),
:class:`DirectBody` goes one step further: the body is read by the loop httpcore2's own
receive loop runs (h11's events, the socket read when h11 needs data), without the
generators, exception maps and trace scope of the response stream's four layers on every
read, which a model sending a token per read pays once per token; the transport's reader
awaits the socket's own future (no frame between them). Errors are raised as the client
raises them; closing the response closes or returns the connection, as before.

The reader lives below the public interfaces of httpx2, httpcore2 and h11 (the response
stream's layers, h11's reader and receive buffer), so it is installed only where every layer
is exactly what it expects, and otherwise the body is read as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any

__all__ = ["DirectBody", "client_error", "direct_body", "read_directly", "take_whole_chunks"]

_READER: Any = None  # the reader class, made on first use
_HEADER: Any = None  # h11's chunk header pattern, found with it
_H11: Any = None  # the h11 module, imported with it


def _scan(reader: Any, data: Any) -> tuple[bytes | None, int]:
    """Every whole chunk at the start of ``data`` (the bytes after where h11's chunked
    ``reader`` stands at a chunk boundary) as one piece, and where they end; None where there
    is none (then h11's own reader decides: more bytes needed, the last chunk, an error)."""
    if reader._reading_trailer or reader._bytes_in_chunk:
        return None, 0
    pos = 0
    footer = reader._bytes_to_discard  # the end of a chunk h11 read
    if footer:
        if data[: len(footer)] != footer:
            return None, 0  # not here yet, or malformed
        pos = len(footer)
    size_all = len(data)
    parts = []
    fullmatch = _HEADER.fullmatch
    while True:
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            break
        header = fullmatch(data, pos, eol + 2)
        if header is None:
            break  # h11 refuses it
        start = eol + 2
        stop = start + int(header["chunk_size"], 16)
        if stop == start or stop + 2 > size_all or data[stop : stop + 2] != b"\r\n":
            break  # the last chunk, one not whole yet, or a bad footer: h11's
        parts.append(data[start:stop])
        pos = stop + 2
    if not parts:
        return None, 0
    reader._bytes_to_discard = b""
    return bytes(parts[0]) if len(parts) == 1 else b"".join(parts), pos


def _whole_chunks(reader: Any, buf: Any) -> bytes | None:
    """Every whole chunk at the start of h11's receive buffer, taken out of it as one piece
    (see :func:`_scan`)."""
    piece, end = _scan(reader, buf._data)
    if piece is not None:
        buf._extract(end)
    return piece


def _reader_class() -> Any:
    global _READER, _HEADER, _H11
    if _READER is None:
        import h11
        from h11._events import Data
        from h11._readers import ChunkedReader, chunk_header_re

        _HEADER, _H11 = chunk_header_re, h11

        class WholeChunks(ChunkedReader):
            """h11's chunked reader, taking every whole chunk in the buffer at once."""

            def __call__(self, buf: Any) -> Any:
                data = _whole_chunks(self, buf)
                if data is None:
                    return ChunkedReader.__call__(self, buf)
                return Data(data=data, chunk_start=True, chunk_end=True)

        _READER = WholeChunks
    return _READER


def _connection_of(stream: Any) -> Any:
    """The HTTP/1.1 connection a response's stream reads from, and that stream's request,
    or None where any layer is not the one expected (another transport, HTTP/2, a
    cassette's, a version that moved them)."""
    for layer, attribute in (
        ("BoundAsyncStream", "_stream"),
        ("AsyncResponseStream", "_httpcore_stream"),
        ("PoolByteStream", "_stream"),
    ):
        if type(stream).__name__ != layer:
            return None
        stream = getattr(stream, attribute, None)
    if type(stream).__name__ != "HTTP11ConnectionByteStream":
        return None
    connection = getattr(stream, "_connection", None)
    if type(connection).__name__ != "AsyncHTTP11Connection":
        return None
    return connection, getattr(stream, "_request", None)


def _h11_of(stream: Any) -> Any:
    from h11 import Connection

    found = _connection_of(stream)
    conn = None if found is None else getattr(found[0], "_h11_state", None)
    return conn if type(conn) is Connection else None


def direct_body(stream: Any) -> DirectBody | None:
    """The body of a response whose connection reads through modelwire's own socket stream
    (:mod:`._netio`), read by :class:`DirectBody`; None where the layers are not the
    expected ones (then iterate the stream)."""
    try:
        found = _connection_of(stream)
        if found is None:
            return None
        from ._netio import AsyncioStream

        connection, request = found
        network = connection._network_stream
        h11 = connection._h11_state
        if type(network) is not AsyncioStream or not hasattr(h11, "_receive_buffer_closed"):
            return None
        timeout = (request.extensions.get("timeout") or {}).get("read") if request is not None else None
        return DirectBody(h11, network._protocol, timeout, connection.READ_NUM_BYTES)
    except AttributeError:  # pragma: no cover - a version that moved its parts
        return None


class DirectBody:
    """A body read by the loop httpcore2's own ``_receive_response_body`` runs (h11's events,
    the socket read when h11 needs data; every whole chunk in the buffer taken at once),
    without the generators, exception maps and trace scope of the response stream's four
    layers on every read, which a model sending a token per read pays once per token.

    It is synchronous: :meth:`take` hands on what is here, and where the socket must be
    waited on first, the reader awaits the future ``wait()`` returns itself (no frame between
    it and the socket): it is done when the socket received data or closed, and fails where
    nothing came within the read timeout (raise what it raises through :func:`client_error`).
    The pieces, errors and connection state are those of iterating the stream; closing the
    response closes or returns the connection, as before."""

    __slots__ = ("_h11", "_protocol", "_size", "_whole", "wait")

    def __init__(self, h11: Any, protocol: Any, timeout: float | None, size: int) -> None:
        self._h11, self._protocol, self._size = h11, protocol, size
        self._whole = _reader_class()
        self.wait: Callable[[], asyncio.Future[None]] = partial(protocol.wait, timeout)  # no frame of its own

    def take(self) -> bytes | None:
        """The body's next piece where it is here; ``b""`` where the socket must be waited
        on first (await ``wait()``, then take again); None at the body's end. Errors are
        raised as the client (httpx2) raises them from a response's stream."""
        h11 = self._h11
        try:
            while True:
                reader = h11._reader
                if type(reader) is self._whole:
                    buf = h11._receive_buffer
                    if not buf._data and not h11._receive_buffer_closed:  # h11 would say NEED_DATA
                        protocol = self._protocol
                        if not protocol.chunks:
                            if not protocol.eof:
                                return b""  # and the socket holds nothing yet
                        else:  # the whole chunks of this read are taken where they lie
                            data = protocol.take(self._size)
                            piece, end = _scan(reader, data)
                            if end < len(data):
                                h11.receive_data(data[end:] if end else data)
                            if piece is not None:
                                return piece
                    data = _whole_chunks(reader, buf)
                    if data is not None:
                        return data
                event = h11.next_event()
                if event is _H11.NEED_DATA:
                    if not self._received():
                        return b""
                elif type(event) is _H11.Data:
                    if event.data:
                        return bytes(event.data)
                else:  # EndOfMessage (or PAUSED): the body is over
                    return None
        except _H11.RemoteProtocolError as exc:
            import httpcore2

            raise client_error(httpcore2.RemoteProtocolError(exc))  # noqa: B904 - httpx2 sets its cause
        except Exception as exc:
            raise client_error(exc)  # noqa: B904 - httpx2 sets its cause

    def _received(self) -> bool:
        """Give h11 what the socket received (its close too); whether there was any."""
        data = self._protocol.read_now(self._size)
        if data is None:
            return False
        self._h11.receive_data(data)
        return True


async def _pieces(body: DirectBody) -> AsyncIterator[bytes]:
    while True:
        piece = body.take()
        if piece is None:
            return
        if piece:
            yield piece
            continue
        try:
            await body.wait()
        except Exception as exc:
            raise client_error(exc)  # noqa: B904 - httpx2 sets its cause


def read_directly(stream: Any) -> AsyncIterator[bytes] | None:
    """:func:`direct_body`'s body as an async iterator of its pieces (None where it is None)."""
    body = direct_body(stream)
    return None if body is None else _pieces(body)


def client_error(exc: Exception) -> Exception:
    """``exc`` as the client (httpx2) raises it from a response's stream."""
    from httpx2._transports.default import map_httpcore_exceptions

    try:
        with map_httpcore_exceptions():
            raise exc
    except Exception as mapped:  # noqa: BLE001 - the mapped one is the answer
        return mapped
    raise AssertionError("unreachable")  # pragma: no cover


def take_whole_chunks(stream: Any) -> bool:
    """Give the h11 connection behind a response's stream (before its body is read) the
    reader that takes whole chunks at once; whether it could."""
    try:
        conn = _h11_of(stream)
        if conn is None:
            return False
        from h11._readers import ChunkedReader

        reader = conn._reader
        if (
            type(reader) is not ChunkedReader
            or reader._bytes_in_chunk
            or reader._bytes_to_discard
            or reader._reading_trailer
        ):
            return False  # not chunked, or already part-read
        if not hasattr(conn._receive_buffer, "_data") or not hasattr(conn._receive_buffer, "_extract"):
            return False
        conn._reader = _reader_class()()
        return True
    except (ImportError, AttributeError):  # pragma: no cover - an h11 that moved its parts
        return False
