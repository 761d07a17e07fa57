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
This one takes raw bytes, has no dependency and is measured in
``benchmarks/stream.py``.
"""

from __future__ import annotations

__all__ = ["SSEEvent", "SSEDecoder"]


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

    def __init__(self) -> None:
        self._rest = b""  # bytes after the last complete line
        self._skip_lf = False
        self._first = True  # the BOM may only appear at the very start
        self._event = ""
        self._data: list[str] = []
        self.last_id: str | None = None
        self.retry: int | None = None
        self.comments = 0
        self.pending = False  # set by close(): an event was cut off at end of input

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        if not chunk:
            return []
        if self._skip_lf:
            # The previous piece ended with a CR, already taken as a line end; an LF
            # right after it belongs to the same CRLF.
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        data = self._rest + chunk if self._rest else chunk
        if self._first:
            if len(data) < 3 and b"\xef\xbb\xbf".startswith(data):
                self._rest = data
                return []
            self._first = False
            if data.startswith(b"\xef\xbb\xbf"):
                data = data[3:]
        if b"\r" in data:
            if data[-1:] == b"\r":
                self._skip_lf = True
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        cut = data.rfind(b"\n")
        if cut < 0:
            self._rest = data
            return []
        self._rest = data[cut + 1 :]
        return self._lines(data[:cut].decode("utf-8", "replace").split("\n"))

    def _lines(self, lines: list[str]) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        data = self._data
        for line in lines:
            if line[:6] == "data: ":  # by far the most common line
                data.append(line[6:])
                continue
            if not line:
                if data:
                    payload = data[0] if len(data) == 1 else "\n".join(data)
                    out.append(SSEEvent(self._event or "message", payload, self.last_id, self.retry))
                    self._data = data = []
                self._event = ""
                continue
            if line[:7] == "event: ":
                self._event = line[7:]
                continue
            if line[0] == ":":
                self.comments += 1
                continue
            colon = line.find(":")
            if colon < 0:
                field, value = line, ""
            else:
                field = line[:colon]
                value = line[colon + 2 :] if line[colon + 1 : colon + 2] == " " else line[colon + 1 :]
            if field == "data":
                data.append(value)
            elif field == "event":
                self._event = value
            elif field == "id":
                if "\x00" not in value:
                    self.last_id = value
            elif field == "retry":
                if value.isdigit():
                    self.retry = int(value)
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
        rest = self._rest
        self._rest = b""
        out: list[SSEEvent] = []
        if rest:
            self._data = []
            self.pending = True
        elif self._data:
            out.append(SSEEvent(self._event or "message", "\n".join(self._data), self.last_id, self.retry))
            self._data = []
        self._event = ""
        return out
