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

The reader lives below the public interfaces of httpx2, httpcore2 and h11 (the response
stream's layers, h11's reader and receive buffer), so it is installed only where every layer
is exactly what it expects, and otherwise the body is read as before.
"""

from __future__ import annotations

from typing import Any

__all__ = ["take_whole_chunks"]

_READER: Any = None  # the reader class, made on first use


def _reader_class() -> Any:
    global _READER
    if _READER is None:
        from h11._events import Data
        from h11._readers import ChunkedReader, chunk_header_re

        fullmatch = chunk_header_re.fullmatch

        class WholeChunks(ChunkedReader):  # type: ignore[misc]
            """h11's chunked reader, taking every whole chunk in the buffer at once."""

            def __call__(self, buf: Any) -> Any:
                if self._reading_trailer or self._bytes_in_chunk:
                    return ChunkedReader.__call__(self, buf)  # within a chunk: h11's own steps
                data = buf._data
                pos = 0
                footer = self._bytes_to_discard  # the end of a chunk h11 read
                if footer:
                    if data[: len(footer)] != footer:
                        return ChunkedReader.__call__(self, buf)  # not here yet, or malformed
                    pos = len(footer)
                size_all = len(data)
                parts = []
                while True:
                    eol = data.find(b"\r\n", pos)
                    if eol < 0:
                        break
                    header = fullmatch(data, pos, eol + 2)
                    if header is None:
                        break  # h11 refuses it, below
                    start = eol + 2
                    stop = start + int(header["chunk_size"], 16)
                    if stop == start or stop + 2 > size_all or data[stop : stop + 2] != b"\r\n":
                        break  # the last chunk, one not whole yet, or a bad footer: h11's
                    parts.append(data[start:stop])
                    pos = stop + 2
                if not parts:
                    return ChunkedReader.__call__(self, buf)
                self._bytes_to_discard = b""
                buf._extract(pos)
                return Data(data=parts[0] if len(parts) == 1 else b"".join(parts), chunk_start=True, chunk_end=True)

        _READER = WholeChunks
    return _READER


def _h11_of(stream: Any) -> Any:
    """The h11 connection a response's stream reads from, or None where any layer is not
    the one expected (another transport, HTTP/2, a cassette's, a version that moved them)."""
    from h11 import Connection

    for layer, attribute in (
        ("BoundAsyncStream", "_stream"),
        ("AsyncResponseStream", "_httpcore_stream"),
        ("PoolByteStream", "_stream"),
        ("HTTP11ConnectionByteStream", "_connection"),
        ("AsyncHTTP11Connection", "_h11_state"),
    ):
        if type(stream).__name__ != layer:
            return None
        stream = getattr(stream, attribute, None)
    return stream if type(stream) is Connection else None


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
