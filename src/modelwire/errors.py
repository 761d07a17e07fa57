"""Typed errors raised by modelwire.

Every error modelwire raises on purpose derives from :class:`ModelwireError`.
Errors about bad data also derive from :class:`ValueError`, so code that already
catches ``ValueError`` keeps working.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ModelwireError",
    "RoleError",
    "EventApplyError",
    "StreamGrammarError",
    "EventDecodeError",
]


class ModelwireError(Exception):
    """Base class of every error modelwire raises on purpose."""


class RoleError(ModelwireError, ValueError):
    """A message holds a block its role does not allow.

    Raised when a message is built and on every later change of its role or content.
    """

    def __init__(self, role: str, block_type: str, where: str = "") -> None:
        self.role = role
        self.block_type = block_type
        self.where = where
        allowed = _ROLE_HELP.get(role, "")
        loc = f" ({where})" if where else ""
        super().__init__(
            f"a {role!r} message cannot hold a {block_type!r} block{loc}; {allowed}"
        )


_ROLE_HELP = {
    "user": "user messages take only 'text' and 'data' blocks",
    "system": "system messages take only 'text' blocks",
    "assistant": "assistant messages take every block type",
}


class EventApplyError(ModelwireError, ValueError):
    """``Msg.append_event`` was given an event it cannot fold into the message.

    The message is left exactly as it was before the call.
    """

    def __init__(self, event: Any, reason: str) -> None:
        self.event = event
        self.reason = reason
        etype = getattr(event, "type", type(event).__name__)
        super().__init__(f"cannot apply {etype} event: {reason}")


class StreamGrammarError(ModelwireError, ValueError):
    """An event stream breaks the grammar of one reply (see ``check_stream``)."""

    def __init__(self, index: int, event_type: str, rule: str) -> None:
        self.index = index
        self.event_type = event_type
        self.rule = rule
        super().__init__(f"event [{index}] {event_type}: {rule}")


class EventDecodeError(ModelwireError, ValueError):
    """A JSON (or JSON-lines) event could not be decoded."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        prefix = f"line {line}: " if line is not None else ""
        super().__init__(prefix + message)
