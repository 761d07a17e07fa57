"""AWS's binary event-stream framing (``application/vnd.amazon.eventstream``), sans-I/O.

A frame is a 12-byte prelude (total length, headers length, CRC32 of those 8 bytes, all
big-endian), the headers, the payload and a CRC32 of everything before it. A header is a
1-byte name length, the name, a 1-byte value type and the value. Feed bytes split
anywhere; get whole frames. Every CRC is checked: a bad frame is an
:class:`EventStreamError`, never a crash, and nothing after it is trusted.

:func:`encode_frame` writes frames (for the test server and generated streams).
"""

from __future__ import annotations

import struct
import uuid
import zlib
from dataclasses import dataclass, field
from typing import Any

from ..errors import EventStreamError

__all__ = ["Frame", "EventStreamDecoder", "EventStreamError", "encode_frame", "MAX_FRAME"]

MAX_FRAME = 16 * 1024 * 1024  # AWS caps a message at 16 MiB
_PRELUDE = 12
_unpack_prelude = struct.Struct(">III").unpack_from


@dataclass(slots=True)
class Frame:
    headers: dict[str, Any] = field(default_factory=dict)
    payload: bytes = b""

    @property
    def message_type(self) -> str:
        return str(self.headers.get(":message-type", "event"))

    @property
    def event_type(self) -> str | None:
        value = self.headers.get(":event-type")
        return value if isinstance(value, str) else None


class EventStreamDecoder:
    """Bytes in, :class:`Frame` objects out. ``close()`` raises if a frame was cut off."""

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self._buffer = bytearray()
        self._max = max_frame
        self._seen: dict[bytes, dict[str, Any]] = {}

    def feed(self, data: bytes) -> list[Frame]:
        """The frames completed by ``data``. A broken frame raises :class:`EventStreamError`
        carrying the whole frames read before it (``frames``)."""
        frame = self.whole_frame(data)
        if frame is not None:
            return [frame]
        try:
            parts = self.feed_parts(data)
        except EventStreamError as err:
            err.frames = [Frame(dict(headers), payload) for headers, payload in err.frames]
            raise
        return [Frame(dict(headers), payload) for headers, payload in parts]

    def feed_parts(self, data: bytes) -> list[tuple[dict[str, Any], bytes]]:
        """Like :meth:`feed`, each frame as its headers and payload, the headers being the
        parsed block this decoder keeps for every frame that has them: read them, never
        change them. A broken frame's error carries the parts before it (``frames``)."""
        self._buffer += data
        parts: list[tuple[dict[str, Any], bytes]] = []
        try:
            self._read(parts)
        except EventStreamError as err:
            err.frames = parts
            raise
        return parts

    def _read(self, parts: list[tuple[dict[str, Any], bytes]]) -> None:
        # The frames are read where they lie in the buffer, which drops them all at once:
        # a piece holding many frames (a socket read) costs one move of what is left.
        buf = self._buffer
        size, pos = len(buf), 0
        try:
            while size - pos >= _PRELUDE:
                total, headers_length, prelude_crc = _unpack_prelude(buf, pos)
                if zlib.crc32(buf[pos : pos + 8]) != prelude_crc:
                    raise EventStreamError("event-stream prelude CRC mismatch (the frame is corrupt)")
                if total < _PRELUDE + 4 + headers_length or total > self._max:
                    raise EventStreamError(
                        f"event-stream frame of impossible length {total} (headers {headers_length})"
                    )
                if size - pos < total:
                    break
                frame = bytes(buf[pos : pos + total])
                pos += total
                if zlib.crc32(frame[:-4]) != int.from_bytes(frame[-4:], "big"):
                    raise EventStreamError("event-stream message CRC mismatch (the frame is corrupt)")
                raw_headers = frame[_PRELUDE : _PRELUDE + headers_length]
                headers = self._seen.get(raw_headers)
                if headers is None:
                    # The same few header blocks repeat on every frame: parse each once.
                    headers = _headers(raw_headers)
                    if len(self._seen) < 64:
                        self._seen[raw_headers] = headers
                parts.append((headers, frame[_PRELUDE + headers_length : -4]))
        finally:
            if pos:
                del buf[:pos]

    def whole_frame(self, frame: bytes) -> Frame | None:
        """The usual piece, exactly one sound frame with nothing buffered before it, read
        where it lies (no buffer copies) and checked as :meth:`_read` checks it; None for
        any other piece, which :meth:`feed` reads (and refuses) the general way."""
        whole = self.whole_parts(frame)
        return None if whole is None else Frame(dict(whole[0]), whole[1])

    def whole_parts(self, frame: bytes) -> tuple[dict[str, Any], bytes] | None:
        """Like :meth:`whole_frame`, as the frame's headers and payload, the headers being
        the parsed block this decoder keeps for every frame that has them: read them, never
        change them."""
        if self._buffer or len(frame) < _PRELUDE + 4:
            return None
        total, headers_length, prelude_crc = _unpack_prelude(frame)
        if total != len(frame) or total > self._max or total < _PRELUDE + 4 + headers_length:
            return None
        if zlib.crc32(frame[:8]) != prelude_crc or zlib.crc32(frame[:-4]) != int.from_bytes(frame[-4:], "big"):
            return None
        headers = self._seen.get(frame[_PRELUDE : _PRELUDE + headers_length])
        if headers is None:
            return None
        return headers, frame[_PRELUDE + headers_length : -4]

    def close(self) -> None:
        if self._buffer:
            raise EventStreamError(f"the event stream ended inside a frame ({len(self._buffer)} bytes left over)")


def _headers(raw: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    i = 0
    try:
        while i < len(raw):
            name_length = raw[i]
            name = raw[i + 1 : i + 1 + name_length].decode("utf-8")
            i += 1 + name_length
            kind = raw[i]
            i += 1
            if kind in (0, 1):  # bool true / false
                value: Any = kind == 0
            elif kind == 2:
                (value,) = struct.unpack_from(">b", raw, i)
                i += 1
            elif kind == 3:
                (value,) = struct.unpack_from(">h", raw, i)
                i += 2
            elif kind == 4:
                (value,) = struct.unpack_from(">i", raw, i)
                i += 4
            elif kind in (5, 8):  # long, timestamp (ms)
                (value,) = struct.unpack_from(">q", raw, i)
                i += 8
            elif kind in (6, 7):  # bytes, string
                (length,) = struct.unpack_from(">H", raw, i)
                value = raw[i + 2 : i + 2 + length]
                if len(value) != length:
                    raise EventStreamError("an event-stream header value runs past the headers")
                value = value.decode("utf-8") if kind == 7 else bytes(value)
                i += 2 + length
            elif kind == 9:
                value = str(uuid.UUID(bytes=bytes(raw[i : i + 16])))
                i += 16
            else:
                raise EventStreamError(f"unknown event-stream header type {kind}")
            out[name] = value
    except (struct.error, IndexError, UnicodeDecodeError, ValueError) as exc:
        raise EventStreamError(f"unreadable event-stream headers: {exc}") from None
    return out


def encode_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One frame with string headers (what AWS sends for events and exceptions)."""
    raw = b""
    for name, value in headers.items():
        name_bytes, value_bytes = name.encode(), value.encode()
        raw += bytes([len(name_bytes)]) + name_bytes + b"\x07" + struct.pack(">H", len(value_bytes)) + value_bytes
    total = _PRELUDE + len(raw) + len(payload) + 4
    prelude = struct.pack(">II", total, len(raw))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + raw + payload
    return body + struct.pack(">I", zlib.crc32(body))
