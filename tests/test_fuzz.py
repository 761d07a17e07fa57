"""Fuzzing the edges (hypothesis, bounded): the only exceptions allowed out are modelwire's
typed errors, and ValidationError where documented (``Msg.from_dict``,
``parse_event``). MODELWIRE_DEBUG=1 is on, so a bug inside modelwire fails these tests as
itself instead of hiding behind a typed error."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from modelwire.errors import ValidationError

from modelwire import errors as E
from modelwire import event as Ev
from modelwire.protocols import decode_sse
from modelwire.protocols import get_formatter
from modelwire.message import AssistantMsg, Msg
from modelwire.protocols import get_protocol, protocol_names
from modelwire.testing.sse import body

from paths import HAVE_SHARED, PA

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROTOCOLS = protocol_names()  # every registered protocol (the registry decides, not this file)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False, width=16) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
block_types = st.sampled_from(["text", "thinking", "data", "tool_call", "tool_result", "hint", "bogus", None])


@st.composite
def message_dicts(draw):
    content = draw(
        st.lists(
            st.fixed_dictionaries(
                {"type": block_types},
                optional={
                    "text": json_values,
                    "thinking": json_values,
                    "id": st.text(max_size=4),
                    "name": json_values,
                    "input": json_values,
                    "output": json_values,
                    "state": st.sampled_from(["success", "error", "running", "bogus"]),
                    "hint": json_values,
                    "source": json_values,
                    "signature": json_values,
                    "provider_metadata": json_values,
                },
            ),
            max_size=4,
        )
        | json_values
    )
    return draw(
        st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "assistant", "system", "robot"]), "content": st.just(content)},
            optional={"name": json_values, "metadata": json_values, "usage": json_values},
        )
    )


@FAST
@given(message_dicts())
def test_msg_from_dict_takes_anything_and_raises_only_typed_errors(data):
    try:
        msg = Msg.from_dict(data)
    except (ValidationError, E.ModelwireError):
        return
    # what loads, dumps and loads again the same
    assert Msg.from_dict(json.loads(json.dumps(msg.to_dict()))) == msg


@FAST
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "type",
                "reply_id",
                "block_id",
                "delta",
                "tool_call_id",
                "tool_call_name",
                "extras",
                "data",
                "media_type",
                "input_tokens",
            ]
        ),
        json_values,
        max_size=6,
    )
)
def test_parse_event_raises_only_typed_errors(data):
    if "type" in data and not isinstance(data["type"], str):
        data["type"] = "TEXT_BLOCK_DELTA"
    try:
        Ev.parse_event(data)
    except (ValidationError, E.ModelwireError):
        pass


EVENT_KINDS = [
    lambda r, i: Ev.TextBlockStartEvent(reply_id=r, block_id=i),
    lambda r, i: Ev.TextBlockDeltaEvent(reply_id=r, block_id=i, delta="x"),
    lambda r, i: Ev.TextBlockEndEvent(reply_id=r, block_id=i),
    lambda r, i: Ev.ToolCallStartEvent(reply_id=r, tool_call_id=i, tool_call_name="f"),
    lambda r, i: Ev.ToolCallDeltaEvent(reply_id=r, tool_call_id=i, delta="{"),
    lambda r, i: Ev.ToolCallEndEvent(reply_id=r, tool_call_id=i, extras={"type": "text"} if i == "b" else None),
    lambda r, i: Ev.ToolResultStartEvent(reply_id=r, tool_call_id=i, tool_call_name="f"),
    lambda r, i: Ev.ToolResultTextDeltaEvent(reply_id=r, tool_call_id=i, delta="out"),
    lambda r, i: Ev.ToolResultEndEvent(reply_id=r, tool_call_id=i, state="success"),
    lambda r, i: Ev.ThinkingBlockDeltaEvent(reply_id=r, block_id=i, delta="t"),
    lambda r, i: Ev.DataBlockDeltaEvent(reply_id=r, block_id=i, media_type="image/png", data="QUJD"),
]


@FAST
@given(
    st.lists(
        st.tuples(
            st.integers(0, len(EVENT_KINDS) - 1), st.sampled_from(["a", "b"]), st.sampled_from(["r", "r", "other"])
        ),
        max_size=25,
    )
)
def test_out_of_order_events_are_refused_and_change_nothing(steps):
    msg = AssistantMsg("a", [], id="r")
    for kind, block_id, reply_id in steps:
        event = EVENT_KINDS[kind](reply_id, block_id)
        before = msg.to_dict()
        try:
            msg.append_event(event, strict=True)
        except E.EventApplyError:
            assert msg.to_dict() == before


@st.composite
def conversations(draw):
    ids = ["c1", "c2", "c3"]
    out = []
    for _ in range(draw(st.integers(0, 4))):
        role = draw(st.sampled_from(["user", "assistant", "system"]))
        if role == "user":
            out.append(
                {
                    "role": "user",
                    "name": "u",
                    "content": draw(
                        st.sampled_from(
                            [
                                "hi",
                                "",
                                [
                                    {
                                        "type": "data",
                                        "source": {
                                            "type": "base64",
                                            "data": "iVBORw0KGgo=",
                                            "media_type": draw(
                                                st.sampled_from(
                                                    [
                                                        "image/png",
                                                        "application/pdf",
                                                        "text/plain",
                                                        "audio/wav",
                                                        "video/mp4",
                                                    ]
                                                )
                                            ),
                                        },
                                    }
                                ],
                            ]
                        )
                    ),
                }
            )
        elif role == "system":
            out.append({"role": "system", "name": "s", "content": draw(st.text(max_size=5))})
        else:
            blocks = []
            for _ in range(draw(st.integers(0, 4))):
                kind = draw(st.sampled_from(["text", "thinking", "tool_call", "tool_result", "hint"]))
                extras = draw(
                    st.dictionaries(
                        st.sampled_from(
                            [
                                "signature",
                                "provider_metadata",
                                "reasoning_item_id",
                                "reasoning_item_raw",
                                "thought_signature",
                                "server_side",
                                "redacted_thinking_data",
                                "citations",
                            ]
                        ),
                        json_values,
                        max_size=2,
                    )
                )
                cid = draw(st.sampled_from(ids))
                if kind == "text":
                    blocks.append({"type": "text", "text": draw(st.text(max_size=5)), **extras})
                elif kind == "thinking":
                    blocks.append({"type": "thinking", "thinking": draw(st.text(max_size=5)), **extras})
                elif kind == "tool_call":
                    blocks.append(
                        {
                            "type": "tool_call",
                            "id": cid,
                            "name": "f",
                            "input": draw(st.sampled_from(["{}", '{"a": 1}', "{bad", "", "[1]"])),
                            **extras,
                        }
                    )
                elif kind == "tool_result":
                    blocks.append(
                        {
                            "type": "tool_result",
                            "id": cid,
                            "name": "f",
                            "output": draw(st.sampled_from(["ok", "", []])),
                            "state": draw(st.sampled_from(["success", "error", "running", "denied"])),
                        }
                    )
                else:
                    blocks.append({"type": "hint", "hint": "look"})
            out.append({"role": "assistant", "name": "a", "content": blocks})
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.sampled_from(PROTOCOLS), st.sampled_from([None, "auto", "required", "none", "f", "g"]))
def test_formatters_raise_only_format_errors_on_odd_conversations(data, protocol, choice):
    try:
        messages = [Msg.from_dict(m) for m in data]
    except (ValidationError, E.ModelwireError):
        return
    try:
        payload = get_formatter(protocol)().format(
            messages, [{"name": "f", "description": "d", "parameters": {"type": "object"}}], choice
        )
    except E.FormatError:
        return
    json.dumps(payload)  # whatever is produced can be sent


def _bodies():
    out = [
        (p, body(p, ("think", "Let me see."), ("text", "The answer is 42."), ("tool", "call_1", "f", '{"a": [1, 2]}')))
        for p in PROTOCOLS
    ]
    if HAVE_SHARED:
        for name in ("test_anthropic_model_thinking_part_stream.0.sse", "test_openai_responses_streaming_usage.0.sse"):
            out.append(("anthropic" if "anthropic" in name else "openai-responses", (PA / name).read_bytes()))
    return out


BODIES = _bodies()


def _mutate(raw: bytes, rnd: random.Random, protocol: str) -> bytes:
    data = bytearray(raw)
    choice = rnd.randrange(6)
    if choice == 0 and data:  # flip bytes
        for _ in range(rnd.randint(1, 4)):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
    elif choice == 1 and data:  # cut
        del data[rnd.randrange(len(data)) :]
    elif choice == 2 and data:  # drop a slice
        i = rnd.randrange(len(data))
        del data[i : i + rnd.randint(1, 40)]
    elif choice == 3 and protocol != "bedrock-converse":  # swap a JSON value's type
        text = data.decode("utf-8", "replace")
        for old, new in [
            ('": "', '": ['),
            ('": 0', '": "0"'),
            ('": {', '": "'),
            ('": true', '": 7'),
            ('": [', '": {"x": '),
        ]:
            if old in text:
                k = rnd.randrange(text.count(old))
                parts = text.split(old)
                text = old.join(parts[: k + 1]) + new + old.join(parts[k + 1 :])
                break
        data = bytearray(text.encode())
    elif choice == 4 and data:  # duplicate a slice
        i = rnd.randrange(len(data))
        data[i:i] = data[i : i + rnd.randint(1, 200)]
    else:  # append garbage
        data += bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 30)))
    return bytes(data)


@pytest.mark.parametrize("seed", range(40))
def test_mutated_bodies_give_typed_errors_and_valid_event_streams(seed):
    rnd = random.Random(seed)
    for protocol, raw in BODIES:
        for _ in range(25):
            bad = _mutate(raw, rnd, protocol)
            try:
                events = decode_sse(protocol, bad, "r")
            except E.ProviderError as err:
                events = err.events
            Ev.check_stream(
                [
                    Ev.ReplyStartEvent(session_id="s", reply_id="r", name="a"),
                    *events,
                    Ev.ReplyEndEvent(session_id="s", reply_id="r"),
                ]
            )
            msg = AssistantMsg("a", [], id="r")
            for event in [Ev.ReplyStartEvent(session_id="s", reply_id="r", name="a"), *events]:
                msg.append_event(event, strict=True)
            json.dumps(msg.to_dict())
            assert get_protocol(protocol)  # the registry is untouched by any of it
