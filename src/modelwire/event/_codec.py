"""JSON encoding and decoding of events, one at a time or as JSON lines."""

from __future__ import annotations

from typing import IO, Any, Iterable, Iterator

from pydantic import TypeAdapter, ValidationError

from ..errors import EventDecodeError
from ._events import AgentEvent, EventBase

__all__ = ["parse_event", "event_to_json", "event_from_json", "dumps_jsonl", "write_jsonl", "iter_jsonl", "loads_jsonl"]

_ADAPTER: TypeAdapter[Any] = TypeAdapter(AgentEvent)


def parse_event(data: dict[str, Any] | EventBase) -> EventBase:
    """Build the typed event for a JSON-ready dict (dispatching on its ``type``)."""
    if isinstance(data, EventBase):
        return data
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise EventDecodeError(_describe(exc, data)) from exc


def event_to_json(event: EventBase) -> str:
    """One event as a compact JSON string."""
    return event.model_dump_json()


def event_from_json(text: str | bytes, *, line: int | None = None) -> EventBase:
    """Decode one event from its JSON text."""
    try:
        return _ADAPTER.validate_json(text)
    except ValidationError as exc:
        raise EventDecodeError(_describe(exc, None), line=line) from exc


def dumps_jsonl(events: Iterable[EventBase]) -> str:
    """Events as JSON lines (one event per line, each line ending in a newline)."""
    return "".join(e.model_dump_json() + "\n" for e in events)


def write_jsonl(events: Iterable[EventBase], fp: IO[str]) -> int:
    """Write events to a text file as JSON lines; returns how many were written."""
    n = 0
    for e in events:
        fp.write(e.model_dump_json())
        fp.write("\n")
        n += 1
    return n


def iter_jsonl(lines: Iterable[str | bytes]) -> Iterator[EventBase]:
    """Decode JSON lines lazily; blank lines are skipped, errors name the line number."""
    for number, line in enumerate(lines, 1):
        if line.strip():
            yield event_from_json(line, line=number)


def loads_jsonl(text: str | bytes) -> list[EventBase]:
    """Decode a whole JSON-lines document."""
    # Split on "\n" only: str.splitlines() also splits on U+0085, U+2028 ..., which
    # JSON writes unescaped inside strings.
    return list(iter_jsonl(text.split(b"\n" if isinstance(text, bytes) else "\n")))


def _describe(exc: ValidationError, data: Any) -> str:
    errors = exc.errors(include_url=False)
    etype = data.get("type") if isinstance(data, dict) else None
    parts = []
    for err in errors[:5]:
        loc = ".".join(str(x) for x in err["loc"])
        parts.append(f"{loc}: {err['msg']}" if loc else err["msg"])
    head = f"invalid {etype} event" if etype else "invalid event"
    return f"{head}: " + "; ".join(parts)
