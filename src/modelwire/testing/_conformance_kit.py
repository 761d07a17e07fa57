"""What the conformance suite's checks share: the error they raise, production mode, the
values and tools they send, and decoding and folding a protocol's generated streams."""

from __future__ import annotations

import contextlib
import functools
import os
from typing import Any, Callable, Iterator


Check = Callable[[str], None]  # one check: a protocol's name in, ConformanceError out when it fails


class ConformanceError(AssertionError):
    """A protocol does not do what every protocol must."""

    __module__ = "modelwire.testing.conformance"  # its public home, which repr, pickles and the reference name


# One value per option, each one a request must show (or refuse). stateless and chain
# are left out: on a provider that keeps no state they are what happens anyway.
OPTION_VALUES: dict[str, Any] = {
    "max_tokens": 1000,
    "temperature": 0.3,
    "top_p": 0.8,
    "stop": ["END"],
    "thinking": True,
    "thinking_budget": 2000,
    "reasoning_effort": "low",
    "reasoning_summary": "concise",
    "thinking_display": "summarized",
    "parallel_tool_calls": False,
    "json_schema": {"type": "object", "properties": {"x": {"type": "integer"}}},
    "json_schema_name": "answer",
    "cache": {"key": "tenant-1", "ttl": "1h"},
    "background": True,
    "extra_headers": {"x-trace": "1"},
    "extra_body": {"seed": 7},
}
_TOOLS = [
    {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


def _fail(protocol: str, what: str) -> ConformanceError:
    return ConformanceError(f"{protocol}: {what}")


@contextlib.contextmanager
def production() -> Iterator[None]:
    """``MODELWIRE_DEBUG`` off while a check runs, whatever the environment says: a check
    runs what production runs (with it on, a bug in an adapter surfaces as itself, and an
    adapter that turns a provider's fault into ``InternalError`` would pass unseen)."""
    saved = os.environ.get("MODELWIRE_DEBUG")
    os.environ["MODELWIRE_DEBUG"] = "0"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("MODELWIRE_DEBUG", None)
        else:
            os.environ["MODELWIRE_DEBUG"] = saved


def _check(check: Callable[..., None]) -> Callable[..., None]:
    """A check that runs in production mode (see :func:`production`)."""

    @functools.wraps(check)
    def run_it(protocol: str, *args: Any, **kwargs: Any) -> None:
        with production():
            check(protocol, *args, **kwargs)

    return run_it


def _wire(protocol: str) -> Any:
    from ..protocols import get_protocol

    return get_protocol(protocol)


def _preset(protocol: str) -> Any:
    from ..protocols import all_presets
    from .server import first_preset

    try:
        return all_presets()[first_preset(protocol)]
    except LookupError as err:
        raise _fail(protocol, str(err)) from None


def _decode(protocol: str, pieces: list[bytes], reply_id: str = "r") -> tuple[list[Any], Any]:
    """Feed ``pieces`` to a fresh decoder; the events, and the error that ended it (or None)."""
    from ..errors import ProviderError

    wire, preset = _wire(protocol), _preset(protocol)
    decoder = wire.decoder_for(wire.new_adapter(reply_id, preset, model_name="conformance"), preset)
    events: list[Any] = []
    try:
        for piece in pieces:
            events += decoder.feed(piece)
        events += decoder.close()
    except ProviderError as err:
        return events + list(err.events), err
    return events, None


def _framed(events: list[Any]) -> list[Any]:
    from .. import event as E

    return [
        E.ReplyStartEvent(session_id="s", reply_id="r", name="a"),
        *events,
        E.ReplyEndEvent(session_id="s", reply_id="r"),
    ]


def _folded(events: list[Any]) -> Any:
    from ..message import AssistantMsg

    reply = AssistantMsg("a", [], id="r")
    for event in events:
        reply.append_event(event, strict=True)
    return reply


def _scripts(protocol: str) -> list[tuple[Any, ...]]:
    wire = _wire(protocol)
    scripts: list[tuple[Any, ...]] = [
        (("text", "It is sunny in Paris."),),
        (("tool", "call_1", "get_weather", '{"city": "Paris"}'),),
        (("text", "Let me check."), ("tool", "call_2", "get_weather", '{"city": "Rome"}')),
    ]
    if wire.capabilities.parallel_tool_calls:
        scripts.append(
            (
                ("tool", "call_3", "get_weather", '{"city": "Oslo"}'),
                ("tool", "call_4", "get_weather", '{"city": "Lima"}'),
            )
        )
    if wire.capabilities.thinking:
        scripts.append((("think", "They want the weather."), ("text", "Sunny.")))
    return scripts
