"""The conformance checks of what a protocol must write (its required parts, none under a
name the adapter kit used to keep private) and of the bodies a provider sends wrong."""

from __future__ import annotations

from ._conformance_kit import _fail, _check, _wire, _decode, _framed, _folded, _scripts


# -- what a protocol must write ----------------------------------------------------------------

# Names BaseAdapter's kit used to call (or keep) under private names, and what took their place:
# an adapter that defines one now defines a method of its own that the kit never calls.
FORMER_ADAPTER_NAMES: dict[str, str] = {
    "_handle": "handle",
    "_check_first": "check_first",
    "_model_from": "model_from",
    "_on_done": "on_done",
    "_on_close": "on_close",
    "_count_usage": "count_usage",
    "_fail": "on_fail (or raise a ProviderError)",
    "_finish": "finish",
    "_emit": "emit",
    "_new_id": "new_id",
    "_now": "begin_feed()",
    "_out": "begin_feed()",
}


# The error object a proxy or gateway (LiteLLM ...) sends in place of an event on any route:
# every protocol's is_error_frame says yes to it.
PROXY_ERROR = {"error": {"message": "upstream overloaded", "type": "overloaded_error"}}


def _missing_parts(protocol: str) -> list[str]:
    """Each part the protocol must write and does not, with the fix."""
    from ..adapters import BaseAdapter
    from ..formatters import Formatter
    from ..protocols import WireProtocol

    wire = _wire(protocol)
    missing = [
        f"WireProtocol.{name}: {fix}"
        for name, fix in (
            ("answer_events", "write answer_events(answer): a whole (not streamed) answer as its stream's events"),
            ("fake_stream", "write fake_stream(*blocks, usage=(10, 5)): the body the test server sends"),
        )
        if getattr(type(wire), name) is getattr(WireProtocol, name)
    ]
    adapter = wire.adapter_class()
    if adapter.handle is BaseAdapter.handle:
        missing.append("its adapter: write handle(self, data, event), the one hook every adapter fills")
    if adapter.is_error_frame is BaseAdapter.is_error_frame:
        missing.append(
            "its adapter: write is_error_frame(data) (a staticmethod), whether a frame (or a whole answer) is an error "
            "object rather than an event; `is_error_frame = staticmethod(error_object)` (from "
            'modelwire.adapters) when a proxy\'s {"error": ...} is the only one it has'
        )
    for cls in adapter.__mro__[: adapter.__mro__.index(BaseAdapter)]:
        for old in sorted(FORMER_ADAPTER_NAMES.keys() & vars(cls).keys()):
            missing.append(
                f"its adapter {cls.__name__} defines {old}, which BaseAdapter no longer calls nor reads: "
                f"use {FORMER_ADAPTER_NAMES[old]} if it is meant as the kit's, or give it a name of its own"
            )
    formatter = wire.formatter_class()
    if not issubclass(formatter, Formatter):
        missing.append("its formatter: subclass modelwire.formatters.MessagesFormatter (or Formatter)")
    elif formatter.payload_turns is None:
        missing.append(
            f"its formatter {formatter.__name__} writes format() itself and keeps no drafts: build it on "
            "modelwire.formatters.MessagesFormatter (write _user, _assistant, _result and finish), or set "
            "payload_turns and write take and finish"
        )
    return missing


@_check
def required_parts_are_written(protocol: str) -> None:
    """The parts every protocol writes, each named with its fix when missing: the
    protocol's ``apply_options`` (abstract), ``answer_events`` and ``fake_stream``; its
    adapter's ``handle`` and ``is_error_frame`` (and none of the names the adapter kit used to keep private, such
    as ``_on_close``); a formatter built on the shared walk, which keeps drafts."""
    missing = _missing_parts(protocol)
    if missing:
        raise _fail(protocol, "it must still write:\n- " + "\n- ".join(missing))
    wire = _wire(protocol)
    if not wire.adapter_class()("r").is_error_frame(PROXY_ERROR):
        raise _fail(
            protocol,
            f"its adapter's is_error_frame({PROXY_ERROR}) is false: a proxy sends that object on any route, "
            "and it would reach handle as an event; return modelwire.adapters.error_object(data) for it",
        )
    for usage, given in (((7, 3), {"usage": (7, 3)}), ((10, 5), {})):
        events, error = _decode(protocol, [wire.fake_stream(("text", "Hi."), **given)])
        end = [e for e in events if e.type == "MODEL_CALL_END"]
        counts = (end[-1].input_tokens, end[-1].output_tokens) if end and error is None else None
        if counts != usage:
            raise _fail(
                protocol,
                f"fake_stream(('text', 'Hi.'){', usage=(7, 3)' if given else ''}) reports the tokens {counts}, "
                f"not {usage}: it takes usage=(input, output), (10, 5) when not given, as every protocol's does",
            )


# -- bodies a provider sends wrong -------------------------------------------------------------


@_check
def mutated_bodies_are_typed(protocol: str, seed: int = 0, count: int = 200) -> None:
    """``count`` mutations (seeded by ``seed``) of its own fake streams, the ways real
    streams go wrong (a field missing or of another type, an event lost, repeated or out of
    place, bytes changed), fed in random pieces, each end in a typed error that is not
    ``InternalError``, or decode; either way to events that keep the grammar and fold."""
    import random

    from ._mutate import mutations, split_at_random

    wire, rnd = _wire(protocol), random.Random(seed)
    structured = wire.framing != "aws-eventstream"
    bodies = [wire.split_stream(wire.fake_stream(*blocks)) for blocks in _scripts(protocol)]
    for number, (label, raw) in enumerate(mutations(bodies[seed % len(bodies)], rnd, count, structured)):
        if number and number % 25 == 0:
            bodies.append(bodies.pop(0))
        _mutated_body_is_typed(protocol, raw, split_at_random(raw, rnd), f"{label}; seed {seed}, mutation {number}")


def _mutated_body_is_typed(protocol: str, raw: bytes, pieces: list[bytes], label: str) -> None:
    from ..errors import InternalError
    from ..event import check_stream

    try:
        events, error = _decode(protocol, pieces)
    except Exception as exc:
        raise _fail(
            protocol, f"a mutated body ({label}) raised {type(exc).__name__}, not a ProviderError: {exc}"
        ) from None
    if isinstance(error, InternalError):
        raise _fail(
            protocol,
            f"a mutated body ({label}) ended in InternalError, which says the bug is modelwire's: {error.message}. "
            "Its adapter read a field the event lacks, or one of another type: give shape_problem(data, event) "
            "the event's shape (modelwire.adapters.shape_problem) or raise StreamProtocolError itself. "
            f"The body: {raw[:300]!r}",
        )
    try:
        check_stream(_framed(events))
        _folded(events)
    except Exception as exc:
        raise _fail(protocol, f"the events of a mutated body ({label}) break the grammar: {exc}") from None
