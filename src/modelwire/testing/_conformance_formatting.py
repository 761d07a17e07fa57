"""The conformance checks of what a protocol's formatter must keep: tool choice, media it
cannot take, thinking to replay, drafts, speaker names."""

from __future__ import annotations

import json
from typing import Any

from ._conformance_kit import _TOOLS, _fail, _check, _wire, _preset, _folded


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
