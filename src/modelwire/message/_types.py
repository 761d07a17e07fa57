"""Small types shared by messages and the fold: usage, errors, reasons, role rules."""

from __future__ import annotations

from typing import Any, Iterable, Literal

from .._record import PlainStrEnum, Record
from ..errors import RoleError

_ALLOWED: dict[str, frozenset[str] | None] = {
    "user": frozenset({"text", "data"}),
    "system": frozenset({"text"}),
    "assistant": None,  # every block type
}


class ReplyFinishedReason(PlainStrEnum):
    """How a reply ended: completed, interrupted (by the user), exceed_max_iters, or error."""

    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    EXCEED_MAX_ITERS = "exceed_max_iters"
    ERROR = "error"


ReplyFinishedReasonValue = Literal["completed", "interrupted", "exceed_max_iters", "error"]


class ErrorType(PlainStrEnum):
    """The kind of error that ended a reply (``ErrorInfo.type``), for a UI to word it."""

    AUTHENTICATION = "authentication"
    PERMISSION = "permission"
    RATE_LIMIT = "rate_limit"
    INVALID_REQUEST = "invalid_request"
    UPSTREAM = "upstream"
    CONNECTION = "connection"
    INTERNAL = "internal"
    SETUP = "setup"
    UNKNOWN = "unknown"


ErrorTypeValue = Literal[
    "authentication",
    "permission",
    "rate_limit",
    "invalid_request",
    "upstream",
    "connection",
    "internal",
    "setup",
    "unknown",
]


class ErrorInfo(Record):
    """A short, UI-facing description of the error that ended a reply."""

    type: ErrorType | ErrorTypeValue = ErrorType.UNKNOWN
    message: str


class Usage(Record):
    """Token usage of an assistant message, summed over its model calls.

    ``reasoning_tokens`` is a modelwire addition (part of ``output_tokens`` where the
    provider reports it).
    """

    input_tokens: int
    output_tokens: int
    cache_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    reasoning_tokens: int = 0


def check_role(role: str, blocks: Iterable[Any], start: int = 0) -> None:
    """Raise :class:`RoleError` if a block in ``blocks`` is not allowed for ``role``."""
    allowed = _ALLOWED.get(role)
    if allowed is None:
        return
    for i, block in enumerate(blocks, start):
        btype = getattr(block, "type", None)
        if btype not in allowed:
            raise RoleError(role, str(btype if btype is not None else type(block).__name__), f"content[{i}]")


def add_costs(total: dict[str, Any] | None, call: dict[str, Any]) -> dict[str, Any]:
    """The cost of a message after one more model call. A call without a price is listed
    (``unpriced``), never guessed: the total then covers the priced calls only and
    ``complete`` is false."""
    out = (
        dict(total)
        if total
        else {
            "currency": call.get("currency", "USD"),
            "total": None,
            "input": None,
            "output": None,
            "calls": 0,
            "unpriced": [],
        }
    )
    out["calls"] = out.get("calls", 0) + 1
    if call.get("total") is None:
        out["unpriced"] = [*out.get("unpriced", []), call.get("unknown") or "no price"]
    else:
        for key in ("total", "input", "output"):
            if call.get(key) is not None:
                out[key] = round((out.get(key) or 0.0) + call[key], 12)
    if call.get("source"):
        out["source"] = call["source"]
    out["complete"] = not out.get("unpriced")
    return out


Usage.__record_added__ = frozenset({"reasoning_tokens"})  # modelwire's addition (see Record.model_dump)
