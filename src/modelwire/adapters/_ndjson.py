"""Newline-delimited JSON framing (``application/x-ndjson``: Ollama's native API), sans-I/O:
one JSON object per line, each fed to the adapter with no event name. The same contract as
:class:`~modelwire.adapters.StreamDecoder`: feed bytes split anywhere, get events; an
error keeps what came before it."""

from __future__ import annotations

from typing import Any

from msgspec.json import decode as from_json

from .. import event as E
from ..errors import ProviderError, StreamProtocolError
from ._adapter import BaseAdapter
from ._decoders import StreamDecoder, _refuse, short_path
from ._sse import LF

__all__ = ["NDJSONDecoder", "MAX_LINE"]

MAX_LINE = 16 * 1024 * 1024  # a line longer than this is not an answer chunk


class NDJSONDecoder(StreamDecoder):
    """Newline-delimited JSON (Ollama's native stream) into an adapter: one object per line, a line
    split across reads joined, one longer than ``max_line`` refused."""

    def __init__(self, adapter: BaseAdapter, *, keep: bool = False, max_line: int = MAX_LINE) -> None:
        self.adapter = adapter
        self.keep = keep
        self.events: list[E.AgentEvent] = []
        self._buffer = bytearray()
        self._max = max_line
        self._quick = short_path(adapter)

    def feed(self, chunk: bytes) -> list[E.AgentEvent]:
        if chunk and not self._buffer and chunk.find(LF) == len(chunk) - 1:  # the usual piece: one whole line
            try:
                out = self._quick(chunk, None) if self._quick is not None else None
                if out is None:
                    try:
                        obj = from_json(chunk)  # JSON allows the newline after it
                    except (ValueError, RecursionError):
                        obj = None
                    out = (
                        self.adapter.feed(obj, None) if type(obj) is dict else self._line(chunk)
                    )  # else refused as the line says
            except ProviderError as err:
                self._failed([], err)
                raise
            if self.keep:
                self.events += out
            return out
        return self._lines(chunk, end=False)

    def close(self) -> list[E.AgentEvent]:
        return self._lines(b"", end=True)

    def _lines(self, chunk: bytes, end: bool) -> list[E.AgentEvent]:
        adapter = self.adapter
        out: list[E.AgentEvent] = []
        try:
            buffer = self._buffer
            lines = chunk.split(b"\n")  # only the new bytes are searched: a line across many reads costs its length
            if len(lines) == 1:  # no newline: the line goes on
                buffer += chunk
                lines = []
            else:
                if buffer:  # the line the last read left open ends here
                    buffer += lines[0]
                    lines[0] = bytes(buffer)
                    buffer.clear()
                buffer += lines.pop()
            if end and buffer.strip():
                lines.append(bytes(buffer))  # a last line without its newline
                buffer.clear()
            quick = self._quick
            for line in lines:
                line = line.strip()
                if line:
                    got = quick(line, None) if quick is not None else None
                    out += got if got is not None else self._parsed(line)
            if len(buffer) > self._max:
                buffer.clear()
                _refuse(adapter, StreamProtocolError(f"an NDJSON line longer than {self._max} bytes"))
            if end:
                out += adapter.close()
        except ProviderError as err:
            self._failed(out, err)
            raise
        if self.keep:
            self.events += out
        return out

    def _line(self, line: bytes) -> list[E.AgentEvent]:
        line = line.strip()
        if not line:
            return []
        if self._quick is not None:
            out = self._quick(line, None)
            if out is not None:
                return out
        return self._parsed(line)

    def _parsed(self, line: bytes) -> list[E.AgentEvent]:
        """A stripped line the short path did not take: parsed, and fed or refused."""
        try:
            obj: Any = from_json(line)
        except (ValueError, RecursionError) as exc:
            _refuse(
                self.adapter,
                StreamProtocolError(
                    f"invalid JSON in an NDJSON line: {exc}", body=line[:200].decode("utf-8", "replace")
                ),
            )
            return []
        if not isinstance(obj, dict):
            _refuse(
                self.adapter,
                StreamProtocolError(
                    f"an NDJSON line holds {type(obj).__name__}, not an object",
                    body=line[:200].decode("utf-8", "replace"),
                ),
            )
            return []
        return self.adapter.feed(obj, None)


def split_lines(body: bytes) -> list[bytes]:
    """A body in the pieces a server sends it in: one line each."""
    return [line + b"\n" for line in body.split(b"\n") if line.strip()]
