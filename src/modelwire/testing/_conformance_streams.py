"""The conformance checks of what a protocol's streams and requests do: decoding, extras,
broken streams, tool pairing, options, switching in, cassettes, whole answers, sources."""

from __future__ import annotations

import asyncio
import copy
import json
import os
from typing import Any

from ._conformance_kit import OPTION_VALUES, _TOOLS, _fail, _check, _wire, _preset, _decode, _framed, _folded, _scripts


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
