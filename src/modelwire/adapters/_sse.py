"""A small, fast, incremental ``text/event-stream`` decoder (WHATWG rules).

Feed it bytes as they arrive, in pieces of any size; it returns the events completed
so far. It handles LF, CRLF and CR line ends (a CR at the end of one piece and an LF at
the start of the next are one line end), comment lines (``: OPENROUTER PROCESSING``),
``field:value`` with or without the space, payloads spread over several ``data:``
lines, ``id:`` and ``retry:``, a leading UTF-8 BOM, and UTF-8 characters split across
pieces (lines are cut on bytes, and CR / LF never occur inside a UTF-8 sequence).

An event is dispatched at a blank line. At end of input, see :meth:`SSEDecoder.close`:
a final event missing only its blank line is dispatched; one cut off in the middle of a
line is not, and ``pending`` tells the caller the stream was cut off.

Why not a library: the maintained ones either work on lines an HTTP client already
split (``httpx-sse``), are blocking iterators (``sseclient``) or are private to an SDK.
This one takes raw bytes, has no dependency, and is measured against them in
``benchmarks/sse.py``.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import SSELineTooLongError

__all__ = ["SSEEvent", "SSEDecoder", "SSELineTooLongError", "MAX_LINE"]

MAX_LINE = 64 * 1024 * 1024  # bytes in one line (and one event's data) before the stream is refused

# CR and LF as the ints a bytes object holds: ``13 in chunk`` is one memchr, where
# ``b"\r" in chunk`` goes through a substring search (about 20 against 140 ns per piece).
CR, LF = 13, 10


_NAMES: dict[bytes, str] = {}  # event names seen, decoded once (providers use a handful)


def _name(raw: bytes) -> str:
    name = raw.decode("utf-8", "replace")
    if len(_NAMES) < 256:
        _NAMES[raw] = name
    return name


_LINE_NAMES: dict[bytes, str] = {}  # whole "event: NAME" lines seen, for a piece taken apart whole


def _line_name(line: bytes) -> str:
    name = _NAMES.get(line[7:]) or _name(line[7:])
    if len(_LINE_NAMES) < 256:
        _LINE_NAMES[line] = name
    return name


class SSEEvent:
    """One dispatched event: ``event`` name (``"message"`` when none was given), ``data``,
    and the last ``id`` / ``retry`` seen."""

    __slots__ = ("event", "data", "id", "retry")

    def __init__(self, event: str, data: str, id: str | None = None, retry: int | None = None) -> None:  # noqa: A002
        self.event = event
        self.data = data
        self.id = id
        self.retry = retry

    def __repr__(self) -> str:
        return f"SSEEvent(event={self.event!r}, data={self.data[:60]!r}, id={self.id!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SSEEvent) and (self.event, self.data, self.id, self.retry) == (
            other.event,
            other.data,
            other.id,
            other.retry,
        )


class SSEDecoder:
    """Incremental decoder: ``feed(bytes) -> list[SSEEvent]``, then ``close()``."""

    def __init__(self, max_line: int = MAX_LINE) -> None:
        self.max_line = max_line
        self._rest: bytes | bytearray = b""  # bytes after the last complete line
        self._skip_lf = False
        self._first = True  # the BOM may only appear at the very start
        self._event = ""
        self._data: list[bytes] = []
        self.last_id: str | None = None
        self.retry: int | None = None
        self.comments = 0
        self.pending = False  # set by close(): an event was cut off at end of input

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Events completed by this piece of input."""
        return [SSEEvent(e, d.decode("utf-8", "replace"), i, r) for e, d, i, r in self.feed_raw(chunk)]

    def feed_raw(self, chunk: bytes) -> list[tuple[str, bytes, str | None, int | None]]:
        """Like :meth:`feed`, with each event as ``(event, data bytes, id, retry)``: the
        data stays undecoded, for a JSON parser that reads UTF-8 bytes itself."""
        if self._rest or self._skip_lf or self._first or CR in chunk or len(chunk) > self.max_line:
            return self._feed_general(chunk)
        # The usual piece: LF line ends, nothing left over from the previous piece.
        lines = chunk.split(b"\n")
        self._rest = lines.pop()  # after the last line end: an incomplete line (or b"")
        return self._lines(lines)

    def _feed_general(self, chunk: bytes) -> list[tuple[str, bytes, str | None, int | None]]:
        if not chunk:
            return []
        if self._skip_lf:
            # The previous piece ended with a CR, already taken as a line end; an LF
            # right after it belongs to the same CRLF.
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if self._rest and LF not in chunk and CR not in chunk:
            # A long line arriving in pieces: grow one buffer (linear), join once at its end.
            if not isinstance(self._rest, bytearray):
                self._rest = bytearray(self._rest)
            self._rest += chunk
            if len(self._rest) > self.max_line:
                raise SSELineTooLongError(f"an SSE line longer than {self.max_line} bytes")
            return []
        data = bytes(self._rest) + chunk if self._rest else chunk
        if self._first:
            if len(data) < 3 and b"\xef\xbb\xbf".startswith(data):
                self._rest = data
                return []
            self._first = False
            if data.startswith(b"\xef\xbb\xbf"):
                data = data[3:]
        if CR in data:
            if data[-1:] == b"\r":
                self._skip_lf = True
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = data.split(b"\n")
        self._rest = lines.pop()
        if len(data) > self.max_line and (
            len(self._rest) > self.max_line or any(len(line) > self.max_line for line in lines)
        ):
            raise SSELineTooLongError(f"an SSE line longer than {self.max_line} bytes")
        return self._lines(lines)

    def _lines(self, lines: list[bytes]) -> list[tuple[str, bytes, str | None, int | None]]:
        # The hot loop of every stream: state lives in locals and is stored back once.
        out: list[tuple[str, bytes, str | None, int | None]] = []
        data = self._data
        event = self._event
        for line in lines:
            if line[:6] == b"data: ":  # by far the most common line
                data.append(line[6:])
                if len(data) > 1 and sum(map(len, data)) > self.max_line:
                    raise SSELineTooLongError(f"an SSE event whose data is longer than {self.max_line} bytes")
                continue
            if not line:
                if data:
                    out.append(
                        (event or "message", data[0] if len(data) == 1 else b"\n".join(data), self.last_id, self.retry)
                    )
                    data = []
                event = ""
                continue
            if line[:7] == b"event: ":
                name = line[7:]
                event = _NAMES.get(name) or _name(name)
                continue
            if line[:1] == b":":
                self.comments += 1
                continue
            colon = line.find(b":")
            if colon < 0:
                field, value = line, b""
            else:
                field = line[:colon]
                value = line[colon + 2 :] if line[colon + 1 : colon + 2] == b" " else line[colon + 1 :]
            if field == b"data":
                data.append(value)
            elif field == b"event":
                event = value.decode("utf-8", "replace")
            elif field == b"id":
                if b"\x00" not in value:
                    self.last_id = value.decode("utf-8", "replace")
            elif field == b"retry":
                if value.isdigit():
                    self.retry = int(value)
        self._data = data
        self._event = event
        return out

    def close(self) -> list[SSEEvent]:
        """End of input.

        If the input ended right after a complete line, an event still waiting for its
        blank line is dispatched: the body ended cleanly, only the last separator is
        missing (some servers and many test fixtures end this way; the SDKs accept it).
        If the input ended in the middle of a line, that line and its event are
        discarded, as the standard says, and ``pending`` is set so the caller can
        report a cut-off stream.
        """
        return [SSEEvent(e, d.decode("utf-8", "replace"), i, r) for e, d, i, r in self.close_raw()]

    def close_raw(self) -> list[tuple[str, bytes, str | None, int | None]]:
        """:meth:`close`, with undecoded data (see :meth:`feed_raw`)."""
        rest = self._rest
        self._rest = b""
        out: list[tuple[str, bytes, str | None, int | None]] = []
        if rest:
            self._data = []
            self.pending = True
        elif self._data:
            out.append((self._event or "message", b"\n".join(self._data), self.last_id, self.retry))
            self._data = []
        self._event = ""
        return out


def split_sse(body: bytes) -> list[bytes]:
    """An SSE body in the pieces a server sends it in, one event each (for test servers)."""
    parts = body.split(b"\n\n")
    return [p + b"\n\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def encode_sse(events: Sequence[tuple[str | None, Any]]) -> bytes:
    """Encode ``(event name or None, data)`` pairs as an SSE body; data that is not a
    string is written as JSON (for test servers and generated streams)."""
    import json

    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(out).encode()
