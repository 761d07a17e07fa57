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
:func:`read_directly` goes one step further: the body is read by the loop httpcore2's own
receive loop runs (h11's events, the socket read when h11 needs data), without the
generators, exception maps and trace scope of the response stream's four layers on every
read, which a model sending a token per read pays once per token. Errors are raised as the
client raises them; closing the response closes or returns the connection, as before.

The reader lives below the public interfaces of httpx2, httpcore2 and h11 (the response
stream's layers, h11's reader and receive buffer), so it is installed only where every layer
is exactly what it expects, and otherwise the body is read as before.
"""

from __future__ import annotations

from typing import Any

__all__ = ["read_directly", "take_whole_chunks"]

_READER: Any = None  # the reader class, made on first use
_HEADER: Any = None  # h11's chunk header pattern, found with it


def _whole_chunks(reader: Any, buf: Any) -> bytes | None:
    """Every whole chunk at the start of h11's receive buffer, taken out of it as one piece,
    where h11's chunked ``reader`` stands at a chunk boundary; None where there is none
    (then h11's own reader decides: more bytes needed, the last chunk, an error)."""
    if reader._reading_trailer or reader._bytes_in_chunk:
        return None
    data = buf._data
    pos = 0
    footer = reader._bytes_to_discard  # the end of a chunk h11 read
    if footer:
        if data[: len(footer)] != footer:
            return None  # not here yet, or malformed
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
        return None
    reader._bytes_to_discard = b""
    buf._extract(pos)
    return bytes(parts[0]) if len(parts) == 1 else b"".join(parts)


def _reader_class() -> Any:
    global _READER, _HEADER
    if _READER is None:
        from h11._events import Data
        from h11._readers import ChunkedReader, chunk_header_re

        _HEADER = chunk_header_re

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


def read_directly(stream: Any) -> Any:
    """The body of a response whose connection reads through modelwire's own socket
    stream (:mod:`._netio`), as an async iterator that asks h11 and the socket directly:
    the same pieces, errors and connection state as iterating the stream itself, without
    the four layers of generators, the exception maps and the trace scope between them
    on every read. None where the layers are not the expected ones (then iterate the
    stream). Closing the response closes or returns the connection, as before."""
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
        return _direct(h11, network, timeout, connection.READ_NUM_BYTES)
    except AttributeError:  # pragma: no cover - a version that moved its parts
        return None


async def _direct(h11: Any, network: Any, timeout: float | None, size: int) -> Any:
    """The loop of httpcore2's ``_receive_response_body``: h11's events, the socket read
    when h11 needs data; every whole chunk in the buffer taken at once."""
    import h11 as H

    whole = _reader_class()
    data: Any
    try:
        while True:
            reader = h11._reader
            if type(reader) is whole:
                buf = h11._receive_buffer
                if not buf._data and not h11._receive_buffer_closed:  # h11 would say NEED_DATA
                    h11.receive_data(await network.read(size, timeout))
                data = _whole_chunks(reader, buf)
                if data is not None:
                    yield data
                    continue
            event = h11.next_event()
            if event is H.NEED_DATA:
                h11.receive_data(await network.read(size, timeout))
            elif type(event) is H.Data:
                yield bytes(event.data)
            else:  # EndOfMessage (or PAUSED): the body is over
                return
    except H.RemoteProtocolError as exc:
        import httpcore2

        _client_error(httpcore2.RemoteProtocolError(exc))
    except Exception as exc:
        _client_error(exc)


def _client_error(exc: Exception) -> None:
    """Raise ``exc`` as the client (httpx2) raises it from a response's stream."""
    from httpx2._transports.default import map_httpcore_exceptions

    with map_httpcore_exceptions():
        raise exc


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
