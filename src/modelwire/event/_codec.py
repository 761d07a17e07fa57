"""JSON encoding and decoding of events, one at a time or as JSON lines."""

from __future__ import annotations

from typing import IO, Any, Iterable, Iterator

from ..errors import EventDecodeError, ValidationError
from ._events import EVENT_CLASSES, AgentEvent, EventBase

__all__ = ["parse_event", "event_to_json", "event_from_json", "dumps_jsonl", "write_jsonl", "iter_jsonl", "loads_jsonl"]


def parse_event(data: dict[str, Any] | EventBase) -> AgentEvent:
    """Build the typed event for a JSON-ready dict (dispatching on its ``type``)."""
    if isinstance(data, EventBase):
        return data  # type: ignore[return-value]  # every event class is one of AgentEvent's
    if not isinstance(data, dict):
        raise EventDecodeError(f"invalid event: expected a JSON object, got {type(data).__name__}")
    etype = data.get("type")
    cls = EVENT_CLASSES.get(etype) if isinstance(etype, str) else None
    if cls is None:
        known = "no 'type'" if etype is None else f"an unknown type {etype!r:.60}"
        raise EventDecodeError(f"invalid event: it has {known} (one of {', '.join(EVENT_CLASSES)})")
    try:
        return cls.from_dict(data)  # type: ignore[no-any-return]
    except ValidationError as exc:
        raise EventDecodeError(_describe(exc, data)) from exc


def event_to_json(event: EventBase) -> str:
    """One event as a compact JSON string."""
    return event.to_json()


def event_from_json(text: str | bytes, *, line: int | None = None) -> AgentEvent:
    """Decode one event from its JSON text."""
    import json  # here, not at import: a program that only makes events needs no decoder

    try:
        data = json.loads(text)
    except (ValueError, TypeError) as exc:
        raise EventDecodeError(f"invalid event: not JSON ({exc})", line=line) from exc
    try:
        return parse_event(data)
    except EventDecodeError as exc:
        if line is None:
            raise
        raise EventDecodeError(exc.args[0], line=line) from exc.__cause__


def dumps_jsonl(events: Iterable[EventBase]) -> str:
    """Events as JSON lines (one event per line, each line ending in a newline)."""
    return "".join(e.to_json() + "\n" for e in events)


def write_jsonl(events: Iterable[EventBase], fp: IO[str]) -> int:
    """Write events to a text file as JSON lines; returns how many were written."""
    n = 0
    for e in events:
        fp.write(e.to_json())
        fp.write("\n")
        n += 1
    return n


def iter_jsonl(lines: Iterable[str | bytes]) -> Iterator[AgentEvent]:
    """Decode JSON lines lazily; blank lines are skipped, errors name the line number."""
    for number, line in enumerate(lines, 1):
        if line.strip():
            yield event_from_json(line, line=number)


def loads_jsonl(text: str | bytes) -> list[AgentEvent]:
    """Decode a whole JSON-lines document."""
    # Split on "\n" only: str.splitlines() also splits on U+0085, U+2028 ..., which
    # JSON writes unescaped inside strings.
    return list(iter_jsonl(text.split(b"\n") if isinstance(text, bytes) else text.split("\n")))


def _describe(exc: ValidationError, data: Any) -> str:
    errors = exc.errors()
    etype = data.get("type") if isinstance(data, dict) else None
    parts = []
    for err in errors[:5]:
        loc = ".".join(str(x) for x in err["loc"])
        parts.append(f"{loc}: {err['msg']}" if loc else err["msg"])
    head = f"invalid {etype} event" if etype else "invalid event"
    return f"{head}: " + "; ".join(parts)
