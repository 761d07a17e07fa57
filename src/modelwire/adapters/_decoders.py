"""Bytes of one response in, modelwire events out: :class:`StreamDecoder` puts the SSE
decoder, JSON decoding and an adapter together (:class:`AWSStreamDecoder` the same for AWS's
binary event stream), and :func:`decode_answer` feeds a whole answer through an adapter.
The errors and their closing events are the adapter's (see :class:`BaseAdapter`)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from msgspec.json import decode as from_json

from ..errors import EventStreamError, ProviderError, StreamProtocolError, error_from_body

from .. import event as E
from ._adapter import BaseAdapter
from ._eventstream import EventStreamDecoder as FrameParser
from ._sse import _LINE_NAMES, CR, SSEDecoder, _line_name
from ._state import _ENDED

__all__ = ["StreamDecoder", "AWSStreamDecoder", "decode_answer", "short_path"]


class StreamDecoder:
    """Bytes of one SSE response in, modelwire events out.

    ``feed(bytes)`` and ``close()`` return events; on an error they raise a
    :class:`~modelwire.errors.ProviderError` whose ``events`` close the call (see
    :class:`BaseAdapter`). ``events`` collects everything produced, closing events
    included.
    """

    def __init__(self, adapter: BaseAdapter, *, keep: bool = False) -> None:
        self.adapter = adapter
        self.sse = SSEDecoder()
        self.keep = keep
        self._quick = short_path(adapter)
        self.events: list[E.AgentEvent] = []
        # Whether the full decoder holds nothing (no partial line, event or data, no CR to
        # pair, the BOM check done): then a piece that is one whole event is taken apart here.
        self._idle = False

    def feed(self, chunk: bytes) -> list[E.AgentEvent]:
        # The usual piece, one whole event as providers flush them ("data: X\n\n" or
        # "event: N\ndata: X\n\n"), is taken apart here in one split and its data handed to
        # the adapter's short path; any other piece goes through the full decoder.
        if self._idle and CR not in chunk:
            lines = chunk.split(b"\n", 4)  # at most five parts, however long the piece
            count = len(lines)
            if count == 3:
                line, name = lines[0], "message"
            elif count == 4 and lines[0][:7] == b"event: ":
                line = lines[1]
                name = _LINE_NAMES.get(lines[0]) or _line_name(lines[0])
            else:
                line, name = b"", ""
            if line[:6] == b"data: " and not lines[-1] and not lines[-2] and len(line) <= self.sse.max_line:
                return self._whole(name, line[6:])
        return self._run(self._decode(chunk), end=False)

    def _whole(self, name: str, data: bytes) -> list[E.AgentEvent]:
        """One SSE event, a piece of its own, as :meth:`_run` takes each; the adapter's short
        path called from here (most events of a stream take it), not one call further down."""
        try:
            out = self._quick(data, name) if self._quick is not None and data != b"[DONE]" else None
            if out is None:
                out = self._event_data(name, data, quick=False)
        except ProviderError as err:
            self._failed([], err)
            raise
        if self.keep:
            self.events += out
        return out

    def _decode(self, chunk: bytes) -> list[Any]:
        """A piece through the full decoder, noting whether it is left holding nothing."""
        sse = self.sse
        self._idle = False  # (until it returned)
        events = sse.feed_raw(chunk)
        self._idle = not (sse._rest or sse._data or sse._skip_lf or sse._first or sse._event)
        return events

    def _event_data(self, name: str, data: bytes, quick: bool = True) -> list[E.AgentEvent]:
        """One SSE event's data to the adapter: its own short path first, if it has one
        (and ``quick``: not tried yet)."""
        adapter = self.adapter
        if data == b"[DONE]":
            return adapter.done()
        if quick and self._quick is not None:
            out = self._quick(data, name)
            if out is not None:
                return out
        try:
            obj = from_json(data)
        except (ValueError, RecursionError):
            obj = _json_replaced(data)
        if isinstance(obj, dict):
            return adapter.feed(obj, name)
        _refuse(
            adapter,
            obj
            if isinstance(obj, ProviderError)
            else StreamProtocolError(
                f"a data line holds {type(obj).__name__}, not an object", body=data[:200].decode("utf-8", "replace")
            ),
        )
        return []

    def close(self) -> list[E.AgentEvent]:
        return self._run(self.sse.close_raw(), end=True)

    def _failed(self, out: list[E.AgentEvent], err: ProviderError) -> None:
        """An error keeps what came before it: the events of this piece go in front of the
        error's own, and (with ``keep``) into what the decoder kept."""
        err.events = out + err.events
        if self.keep:
            self.events += err.events

    def _run(self, sse_events: list[Any], end: bool) -> list[E.AgentEvent]:
        """Hand decoded SSE events to the adapter (JSON-decoding their data), then, at the
        end of input, close the adapter. Keeps what was produced if ``keep`` is set."""
        adapter = self.adapter
        out: list[E.AgentEvent] = []
        try:
            for name, data, _id, _retry in sse_events:
                out += self._event_data(name, data)
            if end:
                out += adapter.close()
        except ProviderError as err:
            self._failed(out, err)
            raise
        if self.keep:
            self.events += out
        return out


def _json_replaced(data: bytes) -> Any:
    """A data line that is not valid JSON as bytes: invalid UTF-8 is replaced, as the
    event-stream standard says, and only then is a parse failure the stream's fault."""
    text = data.decode("utf-8", "replace")
    try:
        return from_json(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply to read
        return StreamProtocolError(f"invalid JSON in a data line: {exc}", body=text[:200])


def short_path(adapter: BaseAdapter) -> Callable[[bytes, str | None], list[E.AgentEvent] | None] | None:
    """The adapter's short path (its :attr:`~BaseAdapter.deltas` compiled), bound to it, or
    None where it declares none (then a decoder does not pay a call per event to learn it)."""
    fast = type(adapter).fast_path()
    return fast.feed_raw.__get__(adapter) if fast is not None else None


def _refuse(adapter: BaseAdapter, err: ProviderError) -> None:
    """Bad input found by a decoder: once the answer is whole it is ignored (the one rule),
    before that it fails the call, raising ``err`` with the closing events."""
    if adapter.answered():
        adapter.ignore(err.message)
    else:
        adapter.fail(err)


def decode_answer(adapter: BaseAdapter, events: list[tuple[str | None, Any]]) -> list[E.AgentEvent]:
    """Feed a whole answer, already turned into the protocol's events (see
    ``WireProtocol.answer_events``), through ``adapter``; the same errors as a stream."""
    out: list[E.AgentEvent] = []
    try:
        for name, data in events:
            out += adapter.done() if data == "[DONE]" else adapter.feed(data, name)
        out += adapter.close()
    except ProviderError as err:
        err.events = out + err.events
        raise
    return out


class AWSStreamDecoder(StreamDecoder):
    """Bytes of one AWS event-stream response (``application/vnd.amazon.eventstream``) in,
    modelwire events out; the same contract as :class:`StreamDecoder`.

    ``event`` frames carry the provider's events as JSON (the ``:event-type`` header names
    them); ``exception`` frames (``:exception-type``) and ``error`` frames
    (``:error-code``) inside a 200 response become typed errors with their message.
    """

    def __init__(self, adapter: BaseAdapter, *, keep: bool = False) -> None:
        super().__init__(adapter, keep=keep)
        self.frames = FrameParser()
        if type(self)._event is not AWSStreamDecoder._event:
            self._quick = None  # its frames wrap the events: _event unwraps them first

    def feed(self, chunk: bytes) -> list[E.AgentEvent]:
        whole = self.frames.whole_parts(chunk)
        if whole is not None:  # the usual piece, one whole sound frame: straight to the adapter
            try:
                out = self._frame_parts(*whole)
            except ProviderError as err:
                self._failed([], err)
                raise
            if self.keep:
                self.events += out
            return out
        return self._frames(chunk, end=False)

    def close(self) -> list[E.AgentEvent]:
        return self._frames(b"", end=True)

    def _frames(self, chunk: bytes, end: bool) -> list[E.AgentEvent]:
        adapter = self.adapter
        out: list[E.AgentEvent] = []
        try:
            broken: EventStreamError | None = None
            frames: Sequence[tuple[dict[str, Any], bytes]]
            try:
                frames = self.frames.feed_parts(chunk)
            except EventStreamError as err:
                frames, broken = err.frames, err  # the whole frames before the broken one count
            if end and broken is None:
                try:
                    self.frames.close()
                except EventStreamError as err:
                    broken = err
            for headers, payload in frames:
                out += self._frame_parts(headers, payload)
            if broken is not None:
                _refuse(adapter, broken)
            if end:
                out += adapter.close()
        except ProviderError as err:
            self._failed(out, err)
            raise
        if self.keep:
            self.events += out
        return out

    def _frame_parts(self, headers: dict[str, Any], payload: bytes) -> list[E.AgentEvent]:
        """One whole frame, as its headers (read, never changed) and payload."""
        adapter = self.adapter
        if adapter.state in _ENDED:
            adapter.ignore(f"an event-stream frame ({headers.get(':message-type', 'event')})")
            return []
        out = self._short(headers, payload) if self._quick is not None else None
        if out is not None:
            return out
        try:
            obj = from_json(payload) if payload else {}
        except (ValueError, RecursionError) as exc:
            adapter.fail(
                StreamProtocolError(
                    f"invalid JSON in an event-stream frame: {exc}", body=payload[:200].decode("utf-8", "replace")
                )
            )
            return []  # not reached: fail() raises while the call is open
        kind = headers.get(":message-type", "event")
        event_type = headers.get(":event-type")
        if type(event_type) is not str:
            event_type = None
        if kind == "event" and type(obj) is dict:
            return self._event(obj, event_type)
        kind = str(kind)
        if kind == "exception":
            message = obj.get("message") or obj.get("Message") if isinstance(obj, dict) else None
            exception = str(headers.get(":exception-type") or "exception")
            adapter.fail(error_from_body({"type": exception, "message": str(message or exception)}, adapter.protocol))
        elif kind == "error":
            code = str(headers.get(":error-code") or "error")
            adapter.fail(
                error_from_body({"type": code, "message": str(headers.get(":error-message") or code)}, adapter.protocol)
            )
        elif not isinstance(obj, dict):
            adapter.fail(StreamProtocolError(f"an event-stream frame holds {type(obj).__name__}, not an object"))
        return self._event(obj, event_type)

    def _short(self, headers: dict[str, Any], payload: bytes) -> list[E.AgentEvent] | None:
        """An event frame through the adapter's short path (None: it takes the full one)."""
        if not payload or headers.get(":message-type", "event") != "event" or self._quick is None:
            return None
        name = headers.get(":event-type")
        return self._quick(payload, name if type(name) is str else None)

    def _event(self, obj: dict[str, Any], event_type: str | None) -> list[E.AgentEvent]:
        """One event frame's JSON to the adapter (an endpoint that wraps its protocol's
        events in frames unwraps them here)."""
        return self.adapter.feed(obj, event_type)
