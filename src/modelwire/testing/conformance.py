"""The conformance suite: what every wire protocol must do, checked on any registered one,
built in or from a plugin. A plugin author runs the same checks modelwire runs on its own:

    import pytest
    from modelwire.testing import conformance

    @pytest.mark.parametrize("check", conformance.CHECKS, ids=conformance.check_names())
    def test_conformance(check):
        check("my-protocol")

Each check takes a protocol's name and raises :class:`ConformanceError` (an
``AssertionError``) saying what the protocol did wrong and how to put it right;
``conformance.run(name)`` runs them all and returns the failures. Every check runs in
production mode (``MODELWIRE_DEBUG`` off, whatever the environment says; see
:func:`production`), so what it accepts is what a user's program gets. The checks use only
the protocol's declared parts (its ``fake_stream``, framing, formatter, presets and
options), so they need no network and no recording:

- ``required_parts_are_written`` (first): its ``answer_events`` and ``fake_stream`` (which
  reports the ``usage`` it is given, ``(10, 5)`` by default), its adapter's ``handle`` and
  ``is_error_frame`` and none of the names the adapter kit used to keep private (``_on_close`` ...), a formatter that
  keeps drafts; each missing piece named with its fix;
- ``presets_declare_their_dialects``: the protocol's presets use only the dialect keys it
  declares (``dialect_keys``), with values it takes;
- ``streams_decode``: generated streams (text, tool calls, thinking where the protocol
  has it) decode to grammar-valid events that fold into the blocks that were sent, the
  same whether the body comes whole, event by event or byte by byte;
- ``extras_are_declared``: the extras on the blocks its generated streams decode to are
  its declared ``extras_keys`` or the shared kit's (``COMMON_EXTRAS``), and its
  ``replay_keys`` are among them;
- ``broken_streams_are_typed``: a body cut short, or garbage, ends with a typed
  :class:`~modelwire.errors.ProviderError` (never ``InternalError``) whose closing events keep
  the stream valid; one cut between two events, in ``IncompleteStreamError``;
- ``formatter_pairs_calls``: a conversation with a tool round formats, and a tool call
  with no result (or a result with no call) is refused with a ``FormatError``;
- ``options_mapped_or_refused``: every option changes the request or is refused with an
  ``UnsupportedOptionError`` naming it (never dropped);
- ``switches_in``: replies made by every other registered protocol (thinking, calls,
  results) format for this one;
- ``cassettes_replay``: a call recorded against a local server replays with the server
  gone, giving the same events;
- ``extras_in_code_are_declared``: every extra the adapter's code can write on a block (read
  from its source, not only what generated streams reach) is declared;
- ``whole_answers_decode``: it reads a whole (not streamed) answer, and where it gives a
  ``fake_answer``, that answer folds to the reply its stream of the same blocks folds to;
- ``sources_it_cannot_send_are_refused``: a media source no provider fetches (``ftp:``) is
  refused with a ``FormatError`` naming it;
- ``short_path_agrees``: its ``deltas`` table decodes its fake streams as its ``handle`` does;
- ``mutated_bodies_are_typed`` (``seed=0, count=200``): its fake streams mutated the ways
  real ones go wrong (a field missing or of another type, an event lost, repeated or out of
  place, bytes changed) end in a typed error that is not ``InternalError``, or decode, to
  events that keep the grammar; a failure names the seed and the mutation;
- ``tool_choice_is_kept``: ``"none"`` changes the request against ``"auto"``, and a choice
  naming no tool given is refused naming it;
- ``media_it_cannot_take_is_refused``: media of a type it has no field for is sent or
  refused with a ``FormatError`` naming the type, never dropped;
- ``thinking_replays``: where it declares thinking, a reply's own thinking goes back;
- ``drafts_go_on``: a draft extended turn after turn gives what a full format gives;
- ``speaker_names_are_kept``: ``speaker_names`` puts each speaker's name on their words.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import json
import os
from typing import Any, Callable, Iterator

__all__ = ["CHECKS", "Check", "ConformanceError", "check_names", "run", "production", "OPTION_VALUES"]

Check = Callable[[str], None]  # one check: a protocol's name in, ConformanceError out when it fails


class ConformanceError(AssertionError):
    """A protocol does not do what every protocol must."""


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


# -- the checks ------------------------------------------------------------------------------


@_check
def presets_declare_their_dialects(protocol: str) -> None:
    """Every preset of the protocol uses only dialect keys the protocol declares, with
    values it takes (``dialect_keys``)."""
    from ..errors import ConfigError
    from ..protocols import all_presets

    wire = _wire(protocol)
    for preset in all_presets().values():
        if preset.protocol != protocol:
            continue
        try:
            wire.check_dialect(preset)
        except ConfigError as exc:
            raise _fail(protocol, str(exc)) from None


@_check
def streams_decode(protocol: str) -> None:
    from ..event import check_stream

    wire = _wire(protocol)
    for blocks in _scripts(protocol):
        body = wire.fake_stream(*blocks)
        ways = {
            "whole": [body],
            "event by event": wire.split_stream(body),
            "byte by byte": [body[i : i + 1] for i in range(len(body))],
        }
        folded: dict[str, Any] = {}
        for way, pieces in ways.items():
            events, error = _decode(protocol, pieces)
            if error is not None:
                raise _fail(
                    protocol, f"its own fake_stream{blocks!r}, fed {way}, failed: {type(error).__name__}: {error}"
                )
            try:
                check_stream(_framed(events))
            except Exception as exc:
                raise _fail(protocol, f"the events of fake_stream{blocks!r} ({way}) break the grammar: {exc}") from None
            if [e.type for e in events].count("MODEL_CALL_END") != 1:
                raise _fail(protocol, f"fake_stream{blocks!r} ({way}) does not end its call exactly once")
            folded[way] = _folded(events)
        _holds_what_was_sent(protocol, folded["whole"], blocks)
        dumps = {
            way: [
                {k: v for k, v in b.to_dict().items() if k not in ("id", "created_at", "finished_at")}
                for b in msg.content
            ]
            for way, msg in folded.items()
        }
        if not (dumps["whole"] == dumps["event by event"] == dumps["byte by byte"]):
            raise _fail(protocol, f"fake_stream{blocks!r} folds differently depending on how the body is split")


def _holds_what_was_sent(protocol: str, reply: Any, blocks: tuple[Any, ...]) -> None:
    """The folded reply holds each text, tool call and thinking the stream was made from."""
    for kind, *rest in blocks:
        if kind == "text" and rest[0].strip() not in reply.get_text_content():
            raise _fail(protocol, f"the text {rest[0]!r} is not in the folded reply")
        if kind == "tool":
            calls = reply.get_content_blocks("tool_call")
            if not any(c.name == rest[1] and json.loads(c.input or "{}") == json.loads(rest[2]) for c in calls):
                raise _fail(protocol, f"the tool call {rest[1]}({rest[2]}) did not fold into the reply")
        if kind == "think" and not reply.get_content_blocks("thinking"):
            raise _fail(protocol, "the thinking did not fold into the reply")


@_check
def extras_are_declared(protocol: str) -> None:
    from .._record import extras_of
    from ..adapters import COMMON_EXTRAS

    wire = _wire(protocol)
    declared = COMMON_EXTRAS | set(wire.extras_keys)
    if not set(wire.replay_keys) <= declared:
        raise _fail(protocol, f"replay_keys {sorted(set(wire.replay_keys) - declared)} are not among its extras_keys")
    for blocks in _scripts(protocol):
        events, _ = _decode(protocol, [wire.fake_stream(*blocks)])
        for block in _folded(events).content:
            unknown = set(extras_of(block) or ()) - declared
            if unknown:
                raise _fail(
                    protocol,
                    f"its adapter writes {sorted(unknown)} on a {block.type} block, which extras_keys does not declare",
                )


@_check
def broken_streams_are_typed(protocol: str) -> None:
    """A body cut short, or garbage, ends in a typed error (never ``InternalError``) whose
    closing events keep the stream valid; one cut between two events, halfway, in
    :class:`~modelwire.errors.IncompleteStreamError`, so retry and fallback apply."""
    from ..errors import IncompleteStreamError, InternalError, ProviderError
    from ..event import check_stream

    wire = _wire(protocol)
    body = wire.fake_stream(
        ("text", "It is sunny in Paris, and warm."), ("tool", "call_1", "get_weather", '{"city": "Paris"}')
    )
    events_of = wire.split_stream(body)
    for label, pieces in (
        ("cut in half", [body[: len(body) // 2]]),
        ("cut after half its events", events_of[: len(events_of) // 2]),
        ("garbage", [b"\x00\xffnot a stream\n\n" * 3]),
        ("empty", []),
    ):
        try:
            events, error = _decode(protocol, pieces)
        except Exception as exc:
            raise _fail(protocol, f"a body {label} raised {type(exc).__name__}, not a ProviderError: {exc}") from None
        if error is None:
            raise _fail(
                protocol,
                f"a body {label} decoded without an error: a stream that stops before its terminal event ends "
                "in IncompleteStreamError (BaseAdapter.on_close raises it; an adapter's own on_close finishes "
                "only a call that is whole, and calls super().on_close() otherwise)",
            )
        if not isinstance(error, ProviderError):  # pragma: no cover - _decode catches only these
            raise _fail(protocol, f"a body {label} raised {type(error).__name__}")
        if isinstance(error, InternalError) or (
            label == "cut after half its events" and not isinstance(error, IncompleteStreamError)
        ):
            raise _fail(
                protocol,
                f"a body {label} ended in {type(error).__name__} ({error}), not IncompleteStreamError: the end "
                "of its stream went wrong. BaseAdapter.on_close raises IncompleteStreamError; an adapter's own "
                "on_close finishes a call that is whole and calls super().on_close() otherwise",
            )
        if events:
            try:
                check_stream(_framed(events))
            except Exception as exc:
                raise _fail(
                    protocol, f"the events of a body {label}, closed by its error, break the grammar: {exc}"
                ) from None


@_check
def formatter_pairs_calls(protocol: str) -> None:
    from ..errors import FormatError
    from ..message import AssistantMsg, SystemMsg, TextBlock, ToolCallBlock, ToolResultBlock, UserMsg

    wire, preset = _wire(protocol), _preset(protocol)
    formatter = wire.new_formatter(preset, "conformance")
    call = ToolCallBlock(id="call_1", name="get_weather", input='{"city": "Paris"}')
    result = ToolResultBlock(id="call_1", name="get_weather", output="sunny", state="success")
    good = [
        SystemMsg("s", "Be brief."),
        UserMsg("u", "Weather in Paris?"),
        AssistantMsg("a", [call, result, TextBlock(text="Sunny.")]),
        UserMsg("u", "Thanks"),
    ]
    try:
        payload = formatter.format(good, _TOOLS)
    except Exception as exc:
        raise _fail(protocol, f"a plain tool round does not format: {type(exc).__name__}: {exc}") from None
    if (
        not isinstance(payload, dict)
        or "call_1" not in json.dumps(payload)
        and "get_weather" not in json.dumps(payload)
    ):
        raise _fail(protocol, "the formatted tool round lost its call")
    bad = {
        "a tool call with no result": [UserMsg("u", "x"), AssistantMsg("a", [copy.copy(call)]), UserMsg("u", "and?")],
        "a result with no call": [UserMsg("u", "x"), AssistantMsg("a", [copy.copy(result)]), UserMsg("u", "and?")],
    }
    for label, messages in bad.items():
        try:
            formatter.format(messages, _TOOLS)
        except FormatError:
            continue
        except Exception as exc:
            raise _fail(protocol, f"{label} raised {type(exc).__name__}, not a FormatError: {exc}") from None
        raise _fail(protocol, f"{label} was formatted; the provider would refuse it (or lose it)")


@_check
def options_mapped_or_refused(protocol: str) -> None:
    from ..errors import UnsupportedOptionError
    from ..message import UserMsg
    from ..models import load_model

    preset = _preset(protocol)

    def request(**options: Any) -> tuple[Any, Any]:
        model = load_model(
            f"{preset.name}:conformance-model",
            api_key="k",
            base_url="http://127.0.0.1:9",
            capability_lookup=False,
            **options,
        )
        body, opts = model.build_request([UserMsg("u", "hi")], _TOOLS)
        return body, model.wire.request_headers(body, model.headers(opts.extra_headers), preset)

    base = request()
    for option, value in OPTION_VALUES.items():
        try:
            changed = request(**{option: value})
        except UnsupportedOptionError as err:
            if err.option != option:
                raise _fail(protocol, f"refusing {option}={value!r} names {err.option!r} instead") from None
            continue
        if changed == base:
            raise _fail(protocol, f"the option {option}={value!r} changed nothing in the request: dropped, not refused")


@_check
def switches_in(protocol: str) -> None:
    """Replies other protocols made (decoded by their own adapters) format for this one."""
    from ..errors import FormatError
    from ..message import UserMsg
    from ..protocols import protocol_names
    from .fake import FakeModel

    wire, preset = _wire(protocol), _preset(protocol)
    formatter = wire.new_formatter(preset, "conformance")
    for other in protocol_names():
        try:
            source = FakeModel(
                [[("think", "Checking."), ("tool", "call_9", "get_weather", '{"city": "Paris"}')]], protocol=other
            )
        except ValueError:
            continue  # a protocol no preset speaks cannot make a reply
        if not _wire(other).capabilities.thinking:
            source = FakeModel([[("tool", "call_9", "get_weather", '{"city": "Paris"}')]], protocol=other)
        reply = source.complete_sync([UserMsg("u", "Weather in Paris?")], tools=_TOOLS)
        from ..message import ToolResultBlock

        (call,) = reply.get_content_blocks("tool_call")
        reply.content.append(ToolResultBlock(id=call.id, name=call.name, output="sunny", state="success"))
        history = [UserMsg("u", "Weather in Paris?"), reply, UserMsg("u", "Thanks")]
        try:
            formatter.format(history, _TOOLS)
        except FormatError as exc:
            raise _fail(protocol, f"a reply made by {other} does not format here: {exc}") from None


@_check
def cassettes_replay(protocol: str) -> None:
    """A call recorded against a local server replays with the server gone."""
    import os
    import tempfile
    from pathlib import Path

    from ..cassettes import use_cassette
    from ..message import UserMsg
    from ..models import load_model
    from ..protocols import environ_prefixes
    from .server import ProviderServer, Reply

    wire, preset = _wire(protocol), _preset(protocol)
    body = wire.fake_stream(("text", "Recorded answer."))
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith(environ_prefixes())}
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "call.json"
            with ProviderServer() as server:
                server.script(Reply(body=body, headers={"content-type": wire.stream_content_type(preset)}))
                model = load_model(
                    f"{preset.name}:conformance-model", api_key="k", base_url=server.url, capability_lookup=False
                )
                with use_cassette(path, "once"):
                    recorded = asyncio.run(model.complete([UserMsg("u", "hi")]))
                url = server.url
            replayer = load_model(
                f"{preset.name}:conformance-model", api_key="k", base_url=url, capability_lookup=False
            )
            with use_cassette(path, "none"):
                replayed = asyncio.run(replayer.complete([UserMsg("u", "hi")]))
    finally:
        os.environ.update(saved)
    if (
        recorded.get_text_content() or ""
    ).strip() != "Recorded answer." or replayed.get_text_content() != recorded.get_text_content():
        raise _fail(
            protocol,
            f"a recorded call replayed as {replayed.get_text_content()!r}, not {recorded.get_text_content()!r}",
        )


@_check
def extras_in_code_are_declared(protocol: str) -> None:
    """Every extra its adapter's code can write on a block (``extras["k"]``,
    ``extras.setdefault("k", ...)``, ``extras.update(k=...)`` or ``extras.update({"k": ...})``)
    is declared: a generated stream reaches only some of them."""
    import ast
    import inspect

    from ..adapters import COMMON_EXTRAS

    wire = _wire(protocol)
    declared = COMMON_EXTRAS | set(wire.extras_keys)
    adapter = wire.adapter_class()
    source = inspect.getsource(inspect.getmodule(adapter) or adapter)
    written: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        written |= _extras_written(node)
    undeclared = sorted(written - declared)
    if undeclared:
        raise _fail(protocol, f"its adapter can write {undeclared} on a block, which extras_keys does not declare")


def _extras_written(node: Any) -> set[str]:
    """The extras keys one syntax node writes, where it writes them to something named extras."""
    import ast

    def on_extras(target: Any) -> bool:
        return isinstance(target, ast.Attribute) and target.attr == "extras"

    def named(key: Any) -> set[str]:
        return {key.value} if isinstance(key, ast.Constant) and isinstance(key.value, str) else set()

    keys: set[str] = set()
    if isinstance(node, (ast.Assign, ast.AugAssign)):
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            if isinstance(target, ast.Subscript) and on_extras(target.value):
                keys |= named(target.slice)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and on_extras(node.func.value):
        if node.func.attr == "setdefault" and node.args:
            keys |= named(node.args[0])
        elif node.func.attr == "update":
            keys |= {k.arg for k in node.keywords if k.arg}
            for arg in node.args:
                if isinstance(arg, ast.Dict):
                    keys |= {name for k in arg.keys for name in named(k)}
    return keys


@_check
def whole_answers_decode(protocol: str) -> None:
    """The protocol reads a whole, non-streamed answer (``stream=False``, and a server that
    answers JSON where a stream was asked for): it gives ``answer_events``."""
    from ..protocols import WireProtocol

    from ..adapters import decode_answer

    wire, preset = _wire(protocol), _preset(protocol)
    if type(wire).answer_events is WireProtocol.answer_events:
        raise _fail(protocol, "it gives no answer_events: stream=False, and a whole JSON answer, cannot be read")
    if type(wire).fake_answer is WireProtocol.fake_answer:
        return  # optional: without one, only its streams are checked
    for blocks in _scripts(protocol):
        streamed = _folded(_decode(protocol, [wire.fake_stream(*blocks)])[0])
        adapter = wire.new_adapter("r", preset, model_name="conformance")
        try:
            whole = _folded(decode_answer(adapter, wire.answer_events(wire.fake_answer(*blocks))))
        except Exception as exc:
            raise _fail(
                protocol, f"its whole answer of {blocks} does not decode: {type(exc).__name__}: {exc}"
            ) from None
        if _shape(whole) != _shape(streamed):
            raise _fail(
                protocol, f"its whole answer of {blocks} folds to {_shape(whole)}, its stream to {_shape(streamed)}"
            )


def _shape(reply: Any) -> list[tuple[Any, ...]]:
    """What a reply holds, ids of the provider's own making and times aside."""
    out = []
    for block in reply.content:
        text = getattr(block, "text", None) or getattr(block, "thinking", None) or ""
        out.append((block.type, text, getattr(block, "name", None), getattr(block, "input", None)))
    return out


@_check
def sources_it_cannot_send_are_refused(protocol: str) -> None:
    """A media source no provider fetches (an ``ftp:`` URL) is refused with a FormatError
    naming it, never sent for the provider to refuse (or to drop)."""
    from ..errors import FormatError
    from ..message import DataBlock, TextBlock, URLSource, UserMsg

    wire, preset = _wire(protocol), _preset(protocol)
    image = DataBlock(source=URLSource(url="ftp://example.com/cat.png", media_type="image/png"))
    messages = [UserMsg("u", [TextBlock(text="What is this?"), image])]
    try:
        wire.new_formatter(preset, "conformance").format(messages)
    except FormatError as exc:
        if "ftp" not in str(exc):
            raise _fail(protocol, f"an ftp: source is refused without naming it: {exc}") from None
        return
    except Exception as exc:
        raise _fail(protocol, f"an ftp: source raised {type(exc).__name__}, not a FormatError: {exc}") from None
    raise _fail(protocol, "an ftp: source was formatted; no provider fetches one")


@_check
def short_path_agrees(protocol: str) -> None:
    """The events its ``deltas`` table makes are the ones its full path makes, on its own
    fake streams fed event by event (a table row that reads a field wrong shows here)."""
    from ..adapters import BaseAdapter

    wire, preset = _wire(protocol), _preset(protocol)
    table = wire.adapter_class()
    table.fast_path()  # a table that cannot be read is refused here, with its reason
    full = type(table.__name__, (table,), {"feed": BaseAdapter.feed, "deltas": ()})
    for blocks in _scripts(protocol):
        pieces = wire.split_stream(wire.fake_stream(*blocks))
        made = []
        for cls in (table, full):
            count = iter(range(10**6))
            adapter = cls("r", model_name="conformance", provider=preset.name, new_id=lambda: f"i{next(count)}")
            decoder = wire.decoder_for(adapter, preset)
            events = [e for piece in pieces for e in decoder.feed(piece)] + decoder.close()
            made.append([{k: v for k, v in e.to_dict().items() if k != "created_at"} for e in events])
        if made[0] != made[1]:
            raise _fail(protocol, f"fake_stream{blocks!r} decodes differently through its deltas table")


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


# -- what its formatter must keep ----------------------------------------------------------------


@_check
def tool_choice_is_kept(protocol: str) -> None:
    """A tool choice of ``none`` changes the request (outside its turns) against ``auto``,
    the way a last request asks for no more calls; one that names no tool given is refused
    with a ``FormatError`` naming it."""
    from ..errors import FormatError
    from ..message import AssistantMsg, ToolCallBlock, ToolResultBlock, UserMsg

    wire, preset = _wire(protocol), _preset(protocol)
    formatter = wire.new_formatter(preset, "conformance")
    call = ToolCallBlock(id="call_0", name="get_weather", input='{"city": "Oslo"}')
    result = ToolResultBlock(id="call_0", name="get_weather", output="sunny", state="success")
    history = [UserMsg("u", "Weather?"), AssistantMsg("a", [call, result])]
    payloads = {choice: formatter.format(history, _TOOLS, choice) for choice in ("none", "auto")}
    turns = formatter.payload_turns
    if {k: v for k, v in payloads["none"].items() if k != turns} == {
        k: v for k, v in payloads["auto"].items() if k != turns
    }:
        raise _fail(
            protocol,
            "tool_choice='none' changes nothing in the request against 'auto': send the provider's 'none', or "
            "leave the tools out (tool_choice_name(choice, specs) gives the mode)",
        )
    try:
        formatter.format(history, _TOOLS, "no_such_tool")
    except FormatError as exc:
        if "no_such_tool" not in str(exc):
            raise _fail(protocol, f"an unknown tool_choice is refused without naming it: {exc}") from None
        return
    raise _fail(
        protocol, "tool_choice='no_such_tool' (no tool of that name) was formatted: refuse it (tool_choice_name does)"
    )


@_check
def media_it_cannot_take_is_refused(protocol: str) -> None:
    """Media of a type it has no field for (``video/mp4``, ``application/x-conformance``)
    is sent or refused with a ``FormatError`` naming the type and the message, never dropped."""
    from ..errors import FormatError
    from ..message import Base64Source, DataBlock, UserMsg

    wire, preset = _wire(protocol), _preset(protocol)
    formatter = wire.new_formatter(preset, "conformance")
    for media_type in ("video/mp4", "application/x-conformance"):
        block = DataBlock(source=Base64Source(data="AAAA", media_type=media_type))
        messages = [UserMsg("u", "What is this?"), UserMsg("u", [block])]
        try:
            payload = formatter.format(messages)
        except FormatError as exc:
            if media_type not in str(exc) or exc.index != 1:
                raise _fail(protocol, f"{media_type} is refused without naming the type and message 1: {exc}") from None
            continue
        if "AAAA" not in json.dumps(payload):
            raise _fail(
                protocol,
                f"a {media_type} block was dropped from the request: refuse it with "
                f"FormatError(index, 'takes ... not {media_type}', protocol)",
            )


@_check
def thinking_replays(protocol: str) -> None:
    """Where the protocol declares thinking, a reply's thinking (decoded by its own adapter)
    goes back in the next request to one of its presets: its text, or what it replays of it
    (its ``replay_keys``)."""
    from .._record import extras_of
    from ..message import ToolResultBlock, UserMsg
    from ..models import load_model
    from ..protocols import decode_sse

    wire = _wire(protocol)
    if not wire.capabilities.thinking:
        return
    script = (("think", "I need the weather first."), ("tool", "call_1", "get_weather", '{"city": "Paris"}'))
    for preset in wire.presets or (_preset(protocol),):
        reply = _folded(decode_sse(protocol, wire.fake_stream(*script), "r", provider=preset.name))
        (thinking,) = reply.get_content_blocks("thinking") or [None]
        if thinking is None:
            raise _fail(protocol, "its fake stream of a thought folds to no thinking block")
        evidence = [thinking.thinking] + [
            str(v) for k, v in (extras_of(thinking) or {}).items() if k in wire.replay_keys and v
        ]
        for call in reply.get_content_blocks("tool_call"):
            reply.content.append(ToolResultBlock(id=call.id, name=call.name, output="sunny", state="success"))
        model = load_model(f"{preset.name}:m", api_key="k", base_url="http://127.0.0.1:9", capability_lookup=False)
        body = json.dumps(model.build_request([UserMsg("u", "Weather in Paris?"), reply], _TOOLS)[0])
        if any(e in body for e in evidence):
            return
    raise _fail(
        protocol,
        "it declares thinking, but no preset of it sends its own thinking back: its adapter marks a thinking "
        "block as its own (block.extras['provider_metadata'] = self.origin) and its formatter sends back those "
        "origin_replays() accepts",
    )


def _draft_turns(i: int) -> list[Any]:
    """The messages one round of an agent adds, now and then with thinking and an image."""
    from ..message import AssistantMsg, Base64Source, DataBlock, TextBlock, ThinkingBlock, ToolCallBlock
    from ..message import ToolResultBlock, UserMsg

    user: list[Any] = [TextBlock(text=f"Question {i}?")]
    if i % 3 == 0:
        user.append(DataBlock(source=Base64Source(data=_PNG, media_type="image/png")))
    answer = [
        ThinkingBlock(thinking=f"Thinking {i}."),
        TextBlock(text="I'll check."),
        ToolCallBlock(id=f"call_{i}", name="get_weather", input=f'{{"city": "c{i}"}}'),
        ToolResultBlock(id=f"call_{i}", name="get_weather", output="sunny", state="success"),
    ]
    return [UserMsg("user", user), AssistantMsg("agent", answer)]


_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


@_check
def drafts_go_on(protocol: str) -> None:
    """Its formatter keeps drafts (the shared walk's): a draft extended turn after turn
    gives the payload, and the bytes, a full format of the same conversation gives."""
    from ..message import SystemMsg
    from ..models._body import encode_body

    wire, preset = _wire(protocol), _preset(protocol)
    formatter = wire.new_formatter(preset, "conformance")
    if formatter.payload_turns is None:
        raise _fail(protocol, f"{type(formatter).__name__} keeps no drafts: build it on MessagesFormatter")
    messages: list[Any] = [SystemMsg("system", "Be careful.")]
    draft = formatter.draft(_TOOLS, "auto")
    for i in range(6):
        messages += _draft_turns(i)
        payload = draft.extend(messages).payload()
        expected = formatter.format(messages, _TOOLS, "auto")
        key = formatter.payload_turns
        if payload != expected or encode_body({**payload, key: draft.turns_encoded(payload[key])}) != encode_body(
            expected
        ):
            raise _fail(
                protocol,
                f"a draft extended to turn {i} gives another payload than a full format: its take() must not "
                "change a finished turn, and its finish() must build the payload from a copy (Turns.fork)",
            )


@_check
def speaker_names_are_kept(protocol: str) -> None:
    """With ``speaker_names``, each speaker's words go out as ``name: words``, another
    agent's as user content, and the assistant's own unprefixed; without, no name."""
    from ..message import AssistantMsg, UserMsg

    wire, preset = _wire(protocol), _preset(protocol)
    messages = [
        UserMsg("alice", "I like tea."),
        UserMsg("bob", "I like coffee."),
        AssistantMsg("critic", "Both fine."),
        AssistantMsg("me", "Tea!"),
    ]
    try:
        named = wire.new_formatter(preset, "conformance", speaker_names=True, assistant_name="me").format(messages)
    except TypeError as exc:
        raise _fail(
            protocol,
            f"its formatter does not take speaker_names ({exc}): take speaker_names and assistant_name and pass "
            "them to Formatter.__init__, or take no __init__ of its own",
        ) from None
    named = str(named)
    for line in ("alice: I like tea.", "bob: I like coffee.", "critic: Both fine."):
        if line not in named:
            raise _fail(
                protocol,
                f"with speaker_names=True, {line!r} is not in the request: its formatter takes speaker_names and "
                "assistant_name and passes them to Formatter.__init__ (the shared walk prefixes the names)",
            )
    if "me: Tea!" in named or "Tea!" not in named:
        raise _fail(protocol, "with speaker_names=True, the assistant's own words must go out as they are")
    if "alice:" in str(wire.new_formatter(preset, "conformance").format(messages)):
        raise _fail(protocol, "without speaker_names, a speaker's name went out")


CHECKS: list[Check] = [
    required_parts_are_written,
    presets_declare_their_dialects,
    streams_decode,
    extras_are_declared,
    broken_streams_are_typed,
    formatter_pairs_calls,
    options_mapped_or_refused,
    switches_in,
    cassettes_replay,
    extras_in_code_are_declared,
    whole_answers_decode,
    sources_it_cannot_send_are_refused,
    short_path_agrees,
    mutated_bodies_are_typed,
    tool_choice_is_kept,
    media_it_cannot_take_is_refused,
    thinking_replays,
    drafts_go_on,
    speaker_names_are_kept,
]


def check_names() -> list[str]:
    return [check.__name__ for check in CHECKS]


def run(protocol: str) -> list[str]:
    """Every check on ``protocol``: the failures, as sentences (empty when it conforms)."""
    failures = []
    for check in CHECKS:
        try:
            check(protocol)
        except ConformanceError as exc:
            failures.append(str(exc))
    return failures
