"""Why an adapter failed: an exception that is not a provider error is the provider's
malformed event where the event's shape says so (:func:`shape_problem` checks a shape, the
adapter's :meth:`~modelwire.adapters.BaseAdapter.shape_problem` hook names what is wrong),
else a bug in modelwire. Shapes are checked only when an adapter failed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InternalError, ProviderError, StreamProtocolError, ValidationError, debug_enabled

if TYPE_CHECKING:
    from ._adapter import BaseAdapter

__all__ = ["OPTIONAL", "shape_problem", "unexpected_error"]

_MISSING = object()
OPTIONAL = type(None)
"""In a shape, a field that may be missing or null (``"usage": (dict, OPTIONAL)``)."""


def shape_problem(data: Any, spec: dict[str, tuple[type, ...]]) -> str | None:
    """The first field of ``data`` that is not of the types ``spec`` names, or None.

    ``spec`` maps a path (``message.usage``, ``choices[].delta.tool_calls[].index``) to the
    types allowed there; ``OPTIONAL`` among them allows the field to be missing or null.
    """
    for path, types in spec.items():
        for where, value in _walk(data, path.split("."), ""):
            if value is _MISSING or value is None:
                if OPTIONAL not in types:
                    return f"{where or path} is missing"
                continue
            if isinstance(value, bool) and bool not in types:
                return f"{where} is a boolean"
            if not isinstance(value, tuple(t for t in types if t is not OPTIONAL)):
                return (
                    f"{where} is {type(value).__name__}, not "
                    f"{' or '.join(t.__name__ for t in types if t is not OPTIONAL)}"
                )
    return None


def _walk(value: Any, steps: list[str], where: str) -> Any:
    if not steps:
        yield where, value
        return
    step, rest = steps[0], steps[1:]
    each = step.endswith("[]")
    name = step[:-2] if each else step
    child = value.get(name, _MISSING) if isinstance(value, dict) else _MISSING
    here = f"{where}.{name}" if where else name
    if child is _MISSING or child is None:
        if not rest and not each:
            yield here, child
        return  # an absent parent (or list) has no children to check
    if not each:
        yield from _walk(child, rest, here) if rest else [(here, child)]
        return
    if not isinstance(child, list):
        return  # the spec's own entry for the list reports its type
    for i, item in enumerate(child):
        yield from _walk(item, rest, f"{here}[{i}]")


def unexpected_error(adapter: BaseAdapter, exc: Exception, data: dict[str, Any], event: str | None) -> ProviderError:
    """An exception that is not a provider error: the provider's malformed event
    (:class:`StreamProtocolError`) or a bug here (:class:`InternalError`; with
    ``MODELWIRE_DEBUG=1`` the exception itself is raised, so tests see bugs as bugs).
    :class:`~modelwire.adapters.BaseAdapter` calls it from ``feed`` and its end-of-input
    steps; a function of its own, so no name a subclass defines changes it."""
    try:
        problem = adapter.shape_problem(data, event)
    except Exception:  # noqa: BLE001 - a checker that fails says the shape is off
        problem = "an event this adapter cannot read"
    if problem is None and isinstance(exc, ValidationError):
        problem = "a value of the wrong type: " + "; ".join(e["msg"] for e in exc.errors()[:3])
    if problem is not None:
        return StreamProtocolError(f"malformed {adapter.protocol} stream event: {problem}", body=data)
    if debug_enabled():
        raise exc
    return InternalError(
        (
            f"modelwire could not handle a {adapter.protocol} event ({type(exc).__name__}: {exc}); this "
            "is a bug in modelwire"
        ),
        body=data,
    )
