"""What a stream carried that its adapter did not read, looked at once the call ended.

An adapter notes a field or an event type it does not read (:meth:`BaseAdapter.note_unread`)
only where its dispatch falls to its "unknown" branch, so the usual stream pays nothing. At
the end of a call, two outcomes make those notes worth a look:

- the reply decoded to nothing (no text, thinking or call had any content) while an unread
  field or event carried text: the provider most likely renamed the field the text now
  travels in;
- the usage decoded to zero while the body had fields that look like token counts (unread,
  or kept in the raw usage under names the adapter does not read).

Either one logs a warning, once per (protocol, field) in a process, and puts the names with
how often they came in ``MODEL_CALL_END.metadata["unread_fields"]``. Nothing here runs for a
call that decoded content and counted tokens.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

__all__ = ["UnreadField", "review", "carries_text"]

_log = logging.getLogger("modelwire.drift")

# Names of fields that say which thing something is, not what it holds.
_LABELS = frozenset({"type", "id", "object", "role", "index", "model", "status", "name", "event", "item_id"})
_USAGE_NAME = re.compile(r"usage|tok", re.IGNORECASE)
_DEPTH = 6

_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


class UnreadField:
    """One field or event type an adapter met and did not read: how often, whether any of
    it carried text, and its last value (usage repeats and grows: the last one counts)."""

    __slots__ = ("count", "text", "value")

    def __init__(self, value: Any) -> None:
        self.count = 1
        self.text = carries_text(value)
        self.value = value

    def again(self, value: Any) -> None:
        self.count += 1
        self.text = self.text or carries_text(value)
        self.value = value


def carries_text(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` holds a non-empty string anywhere but in a label (a type, an id)."""
    if isinstance(value, str):
        return bool(value)
    if depth >= _DEPTH:
        return False
    if isinstance(value, dict):
        return any(k not in _LABELS and carries_text(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return any(carries_text(v, depth + 1) for v in value)
    return False


def _counts(value: Any, path: str, depth: int = 0) -> list[str]:
    """The paths under ``value`` that hold a positive number named like a token count."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [path] if value > 0 and _USAGE_NAME.search(path) else []
    if depth >= _DEPTH or not isinstance(value, dict):
        return []
    out: list[str] = []
    for key, item in value.items():
        out += _counts(item, f"{path}.{key}" if path else str(key), depth + 1)
    return out


def review(
    protocol: str,
    unread: dict[str, UnreadField] | None,
    decoded: bool,
    counted: bool,
    usage: Any,
) -> dict[str, int]:
    """The unread fields that explain a call that decoded to nothing (``decoded`` False) or
    counted no tokens (``counted`` False), each with how often it came; each one warned of
    the first time in this process. ``usage`` is the raw usage the adapter kept, or None."""
    unread = unread or {}
    found: dict[str, int] = {}
    if not decoded:
        found.update((name, field.count) for name, field in unread.items() if field.text)
    if not counted:
        for name, field in unread.items():
            if _USAGE_NAME.search(name) and _counts(field.value, name):
                found[name] = field.count
        if isinstance(usage, dict):
            found.update((path, 1) for path in _counts(usage, "usage"))
    for name in found:
        _warn(protocol, name, decoded)
    return found


def _warn(protocol: str, name: str, decoded: bool) -> None:
    with _warned_lock:
        if (protocol, name) in _warned:
            return
        _warned.add((protocol, name))
    what = "counted no tokens" if decoded else "decoded to nothing"
    _log.warning(
        "the %s reply %s while the stream carried %r, which modelwire does not read: the provider may have "
        "changed its format (the names are in MODEL_CALL_END.metadata['unread_fields']; `modelwire cassette "
        "recheck` compares a recording with the live answer)",
        protocol,
        what,
        name,
    )
