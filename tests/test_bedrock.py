"""AWS Bedrock Converse: the binary event-stream decoder, the adapter on real bodies, the
requests pydantic-ai really sent next, generated and broken streams, SigV4 against botocore
and AWS's published test vectors, and the agent and cassettes end to end."""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import random
import struct
import zlib

import pytest

from decoding import decode

from modelwire import event as E
from modelwire.adapters import EventStreamDecoder, encode_frame
from modelwire.errors import EventStreamError
from modelwire.protocols import decode_sse as decode_body
from modelwire.agent import Agent
from modelwire.errors import (
    IncompleteStreamError,
    OverloadedError,
    ProviderError,
    RateLimitError,
    StreamProtocolError,
    UpstreamError,
)
from modelwire.protocols import get_formatter
from modelwire.message import AssistantMsg, TextBlock, ThinkingBlock, ToolCallBlock, ToolResultBlock, UserMsg
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy
from modelwire.protocols import get_protocol
from modelwire.testing import stream_reply

from paths import HAVE_SHARED, ROOT

BEDROCK = ROOT / "bedrock"
BODIES = sorted(BEDROCK.glob("*.eventstream")) if HAVE_SHARED else []
VERCEL = sorted(BEDROCK.glob("vercel-ai__*.decoded.jsonl")) if HAVE_SHARED else []
needs_shared = pytest.mark.skipif(not HAVE_SHARED, reason="../shared/recorded-streams is not present")


def frame(event: str, payload: dict, kind: str = "event") -> bytes:
    headers = {":event-type": event, ":content-type": "application/json", ":message-type": kind}
    if kind == "exception":
        headers = {":exception-type": event, ":content-type": "application/json", ":message-type": "exception"}
    return encode_frame(headers, json.dumps(payload).encode())


def reply_from(raw: bytes, **kw) -> AssistantMsg:
    msg, _, error = decode("bedrock-converse", [raw], **kw)
    assert error is None, error
    return msg


# -- the frame decoder -----------------------------------------------------------------------------


@needs_shared
@pytest.mark.parametrize("path", BODIES, ids=lambda p: p.name)
def test_frames_decode_to_the_recorded_jsonl_split_anywhere(path):
    raw = path.read_bytes()
    expected = [
        json.loads(line)
        for line in (path.parent / (path.name[: -len(".eventstream")] + ".decoded.jsonl")).read_text().splitlines()
    ]
    for seed in (None, 1, 2):
        parser = EventStreamDecoder()
        frames = []
        if seed is None:
            frames = parser.feed(raw)
        else:
            rnd, i = random.Random(seed), 0
            while i < len(raw):
                n = rnd.choice([1, 3, 12, 13, 100, 4096])
                frames += parser.feed(raw[i : i + n])
                i += n
        parser.close()
        assert [{"headers": f.headers, "payload": json.loads(f.payload)} for f in frames] == expected


def test_a_frame_is_checked_and_every_corruption_is_a_typed_error():
    good = encode_frame({":event-type": "messageStart", ":message-type": "event"}, b'{"role":"assistant"}')
    assert EventStreamDecoder().feed(good)[0].headers[":event-type"] == "messageStart"
    flipped_prelude = bytearray(good)
    flipped_prelude[5] ^= 1
    flipped_payload = bytearray(good)
    flipped_payload[-6] ^= 1
    huge = struct.pack(">II", 2**31, 0)
    huge += struct.pack(">I", zlib.crc32(huge))
    for bad, words in [(flipped_prelude, "prelude CRC"), (flipped_payload, "message CRC"), (huge, "impossible length")]:
        with pytest.raises(EventStreamError, match=words):
            EventStreamDecoder().feed(bytes(bad))
    parser = EventStreamDecoder()
    parser.feed(good[:-3])
    with pytest.raises(EventStreamError, match="ended inside a frame"):
        parser.close()


def test_frames_read_intact_before_a_corrupt_one_in_the_same_read_are_kept():
    """A network read holding good frames and then a corrupt one: the good frames' events
    are passed on (in the error's events) before the error, not dropped with it."""
    start = frame("messageStart", {"role": "assistant"})
    block = frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hello"}})
    corrupt = bytearray(frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": " world"}}))
    corrupt[-6] ^= 1
    with pytest.raises(EventStreamError, match="message CRC") as caught:
        EventStreamDecoder().feed(start + block + bytes(corrupt))
    assert [f.event_type for f in caught.value.frames] == ["messageStart", "contentBlockDelta"]
    wire = get_protocol("bedrock-converse")
    with pytest.raises(EventStreamError) as caught:
        wire.decoder(wire.adapter_class()("r")).feed(start + block + bytes(corrupt))
    events = caught.value.events
    assert [e.type for e in events] == [
        "MODEL_CALL_START",
        "TEXT_BLOCK_START",
        "TEXT_BLOCK_DELTA",
        "TEXT_BLOCK_END",
        "MODEL_CALL_END",
    ]
    reply = AssistantMsg("agent", [], id="r")
    for event in events:
        reply.append_event(event)
    assert reply.get_text_content() == "hello"


# -- the adapter on real bodies -------------------------------------------------------------------


def expected_from_frames(payloads: list[tuple[str, dict]]) -> dict:
    """What the frames say, read the simple way."""
    texts, reasoning, signatures, redacted, calls, usage, stop = {}, {}, {}, {}, {}, None, None
    for event, data in payloads:
        if event == "contentBlockStart" and "toolUse" in data["start"]:
            tool = data["start"]["toolUse"]
            calls[data["contentBlockIndex"]] = [tool["toolUseId"], tool["name"], ""]
        elif event == "contentBlockDelta":
            i, delta = data["contentBlockIndex"], data["delta"]
            if "text" in delta:
                texts[i] = texts.get(i, "") + delta["text"]
            elif "toolUse" in delta:
                calls[i][2] += delta["toolUse"]["input"]
            elif "reasoningContent" in delta:
                r = delta["reasoningContent"]
                reasoning[i] = reasoning.get(i, "") + r.get("text", "")
                if "signature" in r:
                    signatures[i] = r["signature"]
                if "redactedContent" in r:
                    redacted[i] = r["redactedContent"]
        elif event == "messageStop":
            stop = data["stopReason"]
        elif event == "metadata":
            usage = data["usage"]
    return {
        "texts": texts,
        "reasoning": reasoning,
        "signatures": signatures,
        "redacted": redacted,
        "calls": calls,
        "usage": usage,
        "stop": stop,
    }


def check_against_frames(msg, events, payloads):
    want = expected_from_frames(payloads)
    assert "".join(b.text for b in msg.content if b.type == "text") == "".join(
        want["texts"][i] for i in sorted(want["texts"])
    )
    thinking = [b for b in msg.content if b.type == "thinking"]
    assert [b.thinking for b in thinking] == [want["reasoning"][i] for i in sorted(want["reasoning"])]
    assert [getattr(b, "signature", None) for b in thinking] == [
        want["signatures"].get(i) for i in sorted(want["reasoning"])
    ]
    assert [getattr(b, "redacted_thinking_data", None) for b in thinking] == [
        want["redacted"].get(i) for i in sorted(want["reasoning"])
    ]
    calls = [b for b in msg.content if b.type == "tool_call"]
    assert [(b.id, b.name, json.loads(b.input)) for b in calls] == [
        (c[0], c[1], json.loads(c[2] or "{}")) for _, c in sorted(want["calls"].items())
    ]
    (end,) = [e for e in events if e.type == "MODEL_CALL_END"]
    u = want["usage"]
    assert (end.input_tokens, end.output_tokens, end.cache_input_tokens, end.cache_creation_input_tokens) == (
        u["inputTokens"] + u.get("cacheReadInputTokens", 0) + u.get("cacheWriteInputTokens", 0),
        u["outputTokens"],
        u.get("cacheReadInputTokens", 0),
        u.get("cacheWriteInputTokens", 0),
    )
    assert end.provider_stop_reason == want["stop"]


@needs_shared
@pytest.mark.parametrize("path", BODIES, ids=lambda p: p.name)
def test_recorded_bodies_decode_to_what_their_frames_say(path):
    raw = path.read_bytes()
    payloads = [(f.event_type, json.loads(f.payload)) for f in EventStreamDecoder().feed(raw)]
    for seed in (None, 7):
        msg, events, error = decode("bedrock-converse", [raw], split_seed=seed)
        assert error is None
        check_against_frames(msg, events, payloads)


@needs_shared
@pytest.mark.parametrize("path", VERCEL, ids=lambda p: p.name)
def test_vercel_shapes_reframed_by_our_encoder(path):
    """Mostly hand-written fixtures: used only as extra shapes, framed into binary here."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    payloads = [next(iter(line.items())) for line in lines]
    raw = b"".join(frame(event, data) for event, data in payloads)
    msg, events, error = decode("bedrock-converse", [raw])
    assert error is None
    if any(event == "metadata" for event, _ in payloads):
        check_against_frames(msg, events, payloads)


def test_a_tool_with_no_arguments_gets_an_empty_object_and_the_padding_is_ignored():
    raw = b"".join(
        [
            frame("messageStart", {"role": "assistant", "p": "abc"}),
            frame(
                "contentBlockStart",
                {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "now"}}, "p": "x"},
            ),
            frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": ""}}}),
            frame("contentBlockStop", {"contentBlockIndex": 0}),
            frame("messageStop", {"stopReason": "tool_use"}),
            frame(
                "metadata",
                {
                    "usage": {
                        "inputTokens": 5,
                        "outputTokens": 2,
                        "cacheReadInputTokens": 3,
                        "cacheWriteInputTokens": 4,
                    },
                    "p": "qq",
                },
            ),
        ]
    )
    msg, events, _ = decode("bedrock-converse", [raw])
    (call,) = msg.content
    assert (call.id, call.name, call.input) == ("t1", "now", "{}")
    assert msg.usage.cache_input_tokens == 3 and msg.usage.cache_creation_input_tokens == 4
    assert [e for e in events if e.type == "MODEL_CALL_END"][0].stop_reason == "tool_use"


def test_server_side_tools_stay_server_side_with_their_results():
    raw = b"".join(
        [
            frame("messageStart", {"role": "assistant"}),
            frame(
                "contentBlockStart",
                {
                    "contentBlockIndex": 0,
                    "start": {
                        "toolUse": {"toolUseId": "s1", "name": "nova_code_interpreter", "type": "server_tool_use"}
                    },
                },
            ),
            frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"code": "1+1"}'}}}),
            frame("contentBlockStop", {"contentBlockIndex": 0}),
            frame(
                "contentBlockStart",
                {"contentBlockIndex": 1, "start": {"toolResult": {"toolUseId": "s1", "status": "success"}}},
            ),
            frame("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolResult": [{"text": "2"}]}}),
            frame("contentBlockStop", {"contentBlockIndex": 1}),
            frame("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"text": "It is 2."}}),
            frame("contentBlockStop", {"contentBlockIndex": 2}),
            frame("messageStop", {"stopReason": "end_turn"}),
            frame("metadata", {"usage": {"inputTokens": 1, "outputTokens": 1}}),
        ]
    )
    msg = reply_from(raw)
    call, result, text = msg.content
    assert call.server_side and call.name == "nova_code_interpreter" and json.loads(call.input) == {"code": "1+1"}
    assert (result.id, result.state) == ("s1", "success") and [b.text for b in result.output] == ["2"]
    assert text.text == "It is 2."


@pytest.mark.parametrize(
    "exception, cls",
    [
        ("throttlingException", RateLimitError),
        ("modelStreamErrorException", UpstreamError),
        ("validationException", ProviderError),
        ("serviceUnavailableException", OverloadedError),
        ("internalServerException", UpstreamError),
    ],
)
def test_exception_frames_inside_a_200_stream_are_typed_errors(exception, cls):
    raw = frame("messageStart", {"role": "assistant"}) + frame(
        "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hel"}}
    )
    raw += frame(exception, {"message": f"{exception} happened"}, kind="exception")
    msg, events, error = decode("bedrock-converse", [raw])
    assert isinstance(error, cls) and error.message == f"{exception} happened" and error.provider_type == exception
    assert msg.get_text_content() == "Hel"  # what came before is kept, closed


# -- generated and broken streams ------------------------------------------------------------------


def generated(seed: int) -> tuple[bytes, list]:
    rnd = random.Random(seed)
    out = [frame("messageStart", {"role": "assistant", "p": "a" * rnd.randint(0, 9)})]
    payloads = []
    index = 0
    if rnd.random() < 0.5:
        for piece in ["Thinking ", "about it."][: rnd.randint(1, 2)]:
            payloads.append(
                ("contentBlockDelta", {"contentBlockIndex": index, "delta": {"reasoningContent": {"text": piece}}})
            )
        payloads.append(
            (
                "contentBlockDelta",
                {
                    "contentBlockIndex": index,
                    "delta": {"reasoningContent": {"signature": base64.b64encode(rnd.randbytes(24)).decode()}},
                },
            )
        )
        payloads.append(("contentBlockStop", {"contentBlockIndex": index}))
        index += 1
    for _ in range(rnd.randint(0, 2)):
        for word in rnd.sample(["Hello", " naïve", " wörld", " 日本", "!"], rnd.randint(1, 4)):
            payloads.append(("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": word}}))
        payloads.append(("contentBlockStop", {"contentBlockIndex": index}))
        index += 1
    for n in range(rnd.randint(0, 3)):
        payloads.append(
            (
                "contentBlockStart",
                {
                    "contentBlockIndex": index,
                    "start": {"toolUse": {"toolUseId": f"tooluse_{seed}_{n}", "name": "weather"}},
                },
            )
        )
        args = json.dumps({"city": rnd.choice(["Paris", "Köln"]), "days": n}) if rnd.random() < 0.8 else ""
        cut = rnd.randint(0, len(args))
        for piece in (args[:cut], args[cut:]):
            payloads.append(("contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": piece}}}))
        payloads.append(("contentBlockStop", {"contentBlockIndex": index}))
        index += 1
    payloads.append(
        ("messageStop", {"stopReason": rnd.choice(["end_turn", "tool_use", "max_tokens", "guardrail_intervened"])})
    )
    payloads.append(
        (
            "metadata",
            {
                "usage": {
                    "inputTokens": rnd.randint(1, 99),
                    "outputTokens": rnd.randint(1, 99),
                    "cacheReadInputTokens": rnd.randint(0, 9),
                },
                "metrics": {"latencyMs": 5},
            },
        )
    )
    out += [frame(e, {**d, "p": "x" * rnd.randint(0, 5)}) for e, d in payloads]
    return b"".join(out), payloads


@pytest.mark.parametrize("seed", range(60))
def test_generated_streams_split_at_random(seed):
    raw, payloads = generated(seed)
    for split in (None, seed):
        msg, events, error = decode("bedrock-converse", [raw], split_seed=split)
        assert error is None
        check_against_frames(msg, events, payloads)


@pytest.mark.parametrize("seed", range(40))
def test_broken_streams_end_in_a_typed_error_and_a_valid_event_stream(seed):
    raw, _ = generated(seed)
    rnd = random.Random(seed)
    cut = rnd.randint(1, len(raw) - 1)
    kind = seed % 4
    if kind == 0:
        broken = raw[:cut]  # cut inside a frame (or at a boundary: then the call never ended)
        expected = (EventStreamError, IncompleteStreamError)
    elif kind == 1:
        corrupt = bytearray(raw)
        corrupt[cut] ^= 0x40
        broken = bytes(corrupt)
        expected = (EventStreamError, StreamProtocolError, IncompleteStreamError)
    elif kind == 2:
        frames = EventStreamDecoder().feed(raw)
        keep = rnd.randint(1, len(frames) - 2)
        broken = b"".join(encode_frame(f.headers, f.payload) for f in frames[:keep]) + frame(
            "throttlingException", {"message": "Too many requests"}, kind="exception"
        )
        expected = (RateLimitError,)
    else:
        frames = EventStreamDecoder().feed(raw)
        keep = rnd.randint(1, len(frames) - 2)
        broken = b"".join(encode_frame(f.headers, f.payload) for f in frames[:keep]) + encode_frame(
            {":event-type": "contentBlockDelta", ":message-type": "event"}, b"{not json"
        )
        expected = (StreamProtocolError,)
    _, events, error = decode("bedrock-converse", [broken], split_seed=seed)  # check_stream runs inside
    if kind == 1 and error is None:
        # The corrupt byte is in the metadata frame, after messageStop: the answer was whole,
        # so the frame is ignored, and the call says its metadata is missing.
        assert cut >= len(raw) - len(frame("metadata", {})) - 200
        assert events[-2].type == "MODEL_CALL_END" and events[-2].metadata["metadata_missing"] is True
        return
    assert isinstance(error, expected), (kind, error)


# -- the next request, as pydantic-ai really sent it ---------------------------------------------


@needs_shared
def test_the_next_request_is_rebuilt_from_the_decoded_reply():
    sent = json.loads((BEDROCK / "pydantic-ai__test_bedrock_model_iter_stream.1.request.json").read_text())
    first = json.loads((BEDROCK / "pydantic-ai__test_bedrock_model_iter_stream.0.request.json").read_text())
    reply = AssistantMsg("agent", [], id="r")
    for event in decode_body(
        "bedrock-converse",
        (BEDROCK / "pydantic-ai__test_bedrock_model_iter_stream.0.eventstream").read_bytes(),
        "r",
        provider="bedrock",
    ):
        reply.append_event(event)
    (call,) = [b for b in reply.content if b.type == "tool_call"]
    reply.content.append(ToolResultBlock(id=call.id, name=call.name, output="30°C", state="success"))
    tools = [
        {
            "name": t["toolSpec"]["name"],
            "description": t["toolSpec"]["description"],
            "parameters": t["toolSpec"]["inputSchema"]["json"],
        }
        for t in first["toolConfig"]["tools"]
    ]
    messages = [TextBlock(text=first["system"][0]["text"])]
    from modelwire.message import SystemMsg

    conversation = [
        SystemMsg("s", first["system"][0]["text"]),
        UserMsg("user", first["messages"][0]["content"][0]["text"]),
        reply,
    ]
    body = load_model(
        "bedrock:us.amazon.nova-micro-v1:0",
        api_key="k",
        top_p=0.5,
        base_url="https://bedrock-runtime.us-east-1.amazonaws.com",
    ).build_request(conversation, tools)[0]
    assert body == sent
    assert messages  # the system prompt came from the recorded request


@needs_shared
@pytest.mark.parametrize(
    "name, options",
    [
        ("pydantic-ai__test_bedrock_model_thinking_part_redacted_stream", {"thinking_budget": 1024}),
        ("pydantic-ai__test_bedrock_native_output_stream", {"json_schema_name": "CityInfo"}),
    ],
)
def test_options_make_the_recorded_request_fields(name, options):
    sent = json.loads((BEDROCK / f"{name}.0.request.json").read_text())
    if "outputConfig" in sent:
        structure = sent["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
        options = {**options, "json_schema": json.loads(structure["schema"])}
    model = load_model(
        "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", api_key="k", base_url="https://x", **options
    )
    body = model.build_request([UserMsg("user", sent["messages"][0]["content"][0]["text"])])[0]
    assert body["messages"] == sent["messages"]
    if "additionalModelRequestFields" in sent:
        assert body["additionalModelRequestFields"] == sent["additionalModelRequestFields"]
    if "outputConfig" in sent:
        ours = body["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
        theirs = sent["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
        assert (ours["name"], json.loads(ours["schema"])) == (theirs["name"], json.loads(theirs["schema"]))


def test_the_formatter_keeps_the_services_rules():
    bedrock = {"provider_metadata": {"bedrock": {"protocol": "bedrock-converse"}}}
    reply = AssistantMsg(
        "agent",
        [
            ThinkingBlock(thinking="signed", signature="c2ln", **bedrock),
            ThinkingBlock(thinking="", redacted_thinking_data="cmVk", **bedrock),
            ThinkingBlock(thinking="unsigned", **bedrock),
            ThinkingBlock(
                thinking="claude api", signature="YW50aA==", provider_metadata={"anthropic": {"protocol": "anthropic"}}
            ),
            TextBlock(text="   "),
            ToolCallBlock(id="call_abc-123_long", name="f", input=""),
            ToolResultBlock(id="call_abc-123_long", name="f", output="", state="denied"),
        ],
    )
    png = {
        "type": "data",
        "source": {"type": "base64", "data": "iVBORw0KGgo=", "media_type": "image/png"},
        "name": "x.png",
    }
    doc = {
        "type": "data",
        "source": {"type": "base64", "data": "JVBERg==", "media_type": "application/pdf"},
        "name": "report v2.pdf",
    }
    messages = [UserMsg("u", [TextBlock(text="look"), png, doc]), reply, AssistantMsg("agent", [TextBlock(text="")])]
    payload = get_formatter("bedrock-converse")(provider="bedrock", tool_id_style="mistral").format(
        messages, [{"name": "f"}], tool_choice="required"
    )
    short = payload["messages"][1]["content"][-1]["toolUse"]["toolUseId"]
    assert payload == {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"text": "look"},
                    {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}},
                    {"document": {"format": "pdf", "name": "report v2", "source": {"bytes": "JVBERg=="}}},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"reasoningContent": {"reasoningText": {"text": "signed", "signature": "c2ln"}}},
                    {"reasoningContent": {"redactedContent": "cmVk"}},
                    {"toolUse": {"toolUseId": short, "name": "f", "input": {}}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": short,
                            "content": [{"text": "The tool call was denied."}],
                            "status": "error",
                        }
                    }
                ],
            },
        ],
        "toolConfig": {
            "tools": [{"toolSpec": {"name": "f", "inputSchema": {"json": {"type": "object", "properties": {}}}}}],
            "toolChoice": {"any": {}},
        },
    }
    assert len(short) == 9 and short.isalnum()


def test_a_history_with_tool_blocks_keeps_a_tool_config_when_no_tool_may_be_called():
    """Converse answers 400 ("The toolConfig field must be defined when using toolUse and
    toolResult content blocks") without a toolConfig once the history holds tool blocks, and
    has no tool choice "none": an agent out of iterations asked it for "none" and crashed."""
    from sdk_params import bedrock_request

    weather = {"name": "weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
    history = [
        UserMsg("u", "Weather?"),
        AssistantMsg(
            "a",
            [
                ToolCallBlock(id="c1", name="weather", input='{"city": "Oslo"}'),
                ToolResultBlock(id="c1", name="weather", output="sunny", state="success"),
            ],
        ),
    ]
    fmt = get_formatter("bedrock-converse")(provider="bedrock")
    for payload in (fmt.format(history, [weather], tool_choice="none"), fmt.format(history)):
        bedrock_request(payload)
        (tool,) = payload["toolConfig"]["tools"]
        assert tool["toolSpec"]["name"] != "weather" and "toolChoice" not in payload["toolConfig"]
    plain = [UserMsg("u", "Weather?")]
    assert "toolConfig" not in fmt.format(plain, [weather], tool_choice="none") and "toolConfig" not in fmt.format(
        plain
    )
    assert fmt.format(history, [weather], tool_choice="auto")["toolConfig"]["tools"][0]["toolSpec"]["name"] == "weather"


# -- SigV4 -------------------------------------------------------------------------------------------

botocore = pytest.importorskip("botocore", reason="the dev extra installs botocore")


def test_sigv4_matches_awss_published_test_vectors():
    from botocore.credentials import Credentials

    from modelwire.protocols.bedrock._credentials import AWSCredentials

    signer = AWSCredentials(
        service="service",
        region="us-east-1",
        credentials=Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
    )
    at = datetime.datetime(2015, 8, 30, 12, 36, 0)
    # get-vanilla and post-vanilla from AWS's Signature Version 4 test suite
    for method, signature in [
        ("GET", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
        ("POST", "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"),
    ]:
        headers = signer.apply(method, "https://example.amazonaws.com/", {}, b"", timestamp=at)
        assert headers["authorization"] == (
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            f"SignedHeaders=host;x-amz-date, Signature={signature}"
        )


def test_sigv4_matches_botocores_own_client_for_the_same_request(monkeypatch):
    """botocore's bedrock-runtime client signs a ConverseStream request; we sign the same
    bytes to the same URL at the same time with the same credentials."""
    import botocore.auth
    import botocore.session
    from botocore.credentials import Credentials

    from modelwire.protocols.bedrock._credentials import AWSCredentials

    at = datetime.datetime(2026, 11, 30, 8, 0, 0)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: at)
    captured = {}

    class Sent(Exception):
        pass

    def before_send(request, **_):
        captured.update(url=request.url, headers=dict(request.headers), body=request.body)
        raise Sent

    session = botocore.session.Session()
    client = session.create_client(
        "bedrock-runtime",
        region_name="eu-west-1",
        aws_access_key_id="AKIDTEST",
        aws_secret_access_key="secret/key",
        aws_session_token="token-1",
    )
    client.meta.events.register("before-send", before_send)
    with pytest.raises(Sent):
        client.converse_stream(
            modelId="us.amazon.nova-micro-v1:0", messages=[{"role": "user", "content": [{"text": "Hi"}]}]
        )
    model = load_model("bedrock:us.amazon.nova-micro-v1:0", base_url="https://bedrock-runtime.eu-west-1.amazonaws.com")
    assert model.url() == captured["url"]
    ours = AWSCredentials(region="eu-west-1", credentials=Credentials("AKIDTEST", "secret/key", "token-1"))
    theirs = {k.lower(): (v.decode() if isinstance(v, bytes) else v) for k, v in captured["headers"].items()}
    # the headers botocore signed (it adds amz-sdk-* and content-length after signing)
    signed = theirs["authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
    unsigned = {
        k: v for k, v in theirs.items() if k in signed and k not in ("host", "x-amz-date", "x-amz-security-token")
    }
    assert unsigned == {"content-type": "application/json"}
    headers = ours.apply("POST", captured["url"], unsigned, captured["body"], timestamp=at)
    assert headers["authorization"] == theirs["authorization"]
    assert headers["x-amz-security-token"] == "token-1"


# -- end to end -------------------------------------------------------------------------------------


def weather(city: str) -> str:
    """Weather for a city."""
    return f"{city}: sunny"


@pytest.mark.parametrize("auth", ["api-key", "sigv4"])
def test_the_agent_runs_tools_on_bedrock(server, auth, monkeypatch):
    from modelwire.testing.sse import body

    monkeypatch.setenv("AWS_REGION", "us-west-2")
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    if auth == "sigv4":
        pytest.importorskip("botocore")
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
        monkeypatch.setenv("AWS_SESSION_TOKEN", "session-token")
        monkeypatch.delenv("AWS_PROFILE", raising=False)

    def check(request):
        messages = request["json"]["messages"]
        assert messages[1]["content"][0] == {
            "reasoningContent": {"reasoningText": {"text": "Use the tool.", "signature": "sig-Use the "}}
        }
        assert messages[2]["content"] == [
            {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "Paris: sunny"}], "status": "success"}},
            {"toolResult": {"toolUseId": "tooluse_2", "content": [{"text": "Rome: sunny"}], "status": "success"}},
        ]

    server.script(
        stream_reply(
            "bedrock-converse",
            body(
                "bedrock-converse",
                ("think", "Use the tool."),
                ("tool", "tooluse_1", "weather", '{"city": "Paris"}'),
                ("tool", "tooluse_2", "weather", '{"city": "Rome"}'),
            ),
        ),
        stream_reply("bedrock-converse", body("bedrock-converse", ("text", "Both sunny.")), check=check),
    )
    model = load_model(
        "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        api_key="brk-key" if auth == "api-key" else None,
        base_url=server.url,
        retry=RetryPolicy(max_retries=0),
    )
    agent = Agent("Buddy", model, tools=[weather])

    async def run():
        return [e async for e in agent.reply_stream(UserMsg("user", "Weather in Paris and Rome?"))]

    events = asyncio.run(run())
    E.check_stream(events)
    assert agent.context[-1].get_text_content().strip() == "Both sunny."
    request = server.requests[0]
    assert request["path"] == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    if auth == "api-key":
        assert request["headers"]["authorization"] == "Bearer brk-key"
    else:
        assert request["headers"]["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDTEST/")
        assert "/us-west-2/bedrock/aws4_request" in request["headers"]["authorization"]
        assert request["headers"]["x-amz-security-token"] == "session-token"


def test_a_bedrock_cassette_keeps_the_binary_body_and_no_secret(tmp_path, monkeypatch):
    from modelwire.cassettes import Cassette, use_cassette
    from modelwire.cassettes._show import summarize
    from modelwire.testing import ProviderServer
    from modelwire.testing.sse import body

    pytest.importorskip("botocore")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDSENTINEL")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-sentinel")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "session-sentinel")
    monkeypatch.setenv("MODELWIRE_SECRETS", "secret-sentinel,session-sentinel")
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    raw = body("bedrock-converse", ("text", "Hello from Bedrock"))
    path = tmp_path / "bedrock.json"

    async def call(url):
        model = load_model("bedrock:us.amazon.nova-micro-v1:0", base_url=url)
        return [e async for e in model.stream([UserMsg("u", "Hi")], reply_id="r")]

    with ProviderServer() as srv:
        srv.script(stream_reply("bedrock-converse", raw))
        with use_cassette(path, "once"):
            recorded = asyncio.run(call(srv.url))
        url = srv.url
    text = path.read_text()
    for secret in ("AKIDSENTINEL", "secret-sentinel", "session-sentinel", "AWS4-HMAC"):
        assert secret not in text
    assert Cassette.load(path).interactions[0].body_bytes() == raw
    with use_cassette(path):
        replayed = asyncio.run(call(url))
    assert [(e.type, getattr(e, "delta", None)) for e in replayed] == [
        (e.type, getattr(e, "delta", None)) for e in recorded
    ]
    shown = "\n".join(summarize(Cassette.load(path)))
    assert "TEXT_BLOCK_DELTA x3" in shown and "stop: end_turn (end_turn)" in shown


def botocore_events(raw: bytes, pieces: int = 1) -> list[dict]:
    """botocore's own event-stream parser, as boto3's converse_stream() iterates it."""
    import botocore.session
    from botocore.eventstream import EventStream
    from botocore.parsers import EventStreamJSONParser

    shape = (
        botocore.session.Session()
        .get_service_model("bedrock-runtime")
        .operation_model("ConverseStream")
        .output_shape.members["stream"]
    )
    size = max(1, len(raw) // pieces)

    class Body:
        def stream(self):
            for i in range(0, len(raw), size):
                yield raw[i : i + size]

    def wire(value):  # botocore hands blobs over as bytes; on the wire they are base64
        if isinstance(value, dict):
            return {k: wire(v) for k, v in value.items()}
        if isinstance(value, list):
            return [wire(v) for v in value]
        return base64.b64encode(value).decode() if isinstance(value, bytes) else value

    return [wire(event) for event in EventStream(Body(), shape, EventStreamJSONParser(), "ConverseStream")]


def _drop_padding(value):
    """Without AWS's random padding, and without empty objects, which botocore's parser drops."""
    if isinstance(value, dict):
        return {k: _drop_padding(v) for k, v in value.items() if k != "p" and v != {}}
    if isinstance(value, list):
        return [_drop_padding(v) for v in value]
    return value


@pytest.mark.parametrize("seed", range(20))
def test_our_frames_are_botocores_events(seed):
    """botocore is an independent reader of the same bytes: recorded bodies and generated ones."""
    bodies = [p.read_bytes() for p in BODIES] if seed == 0 else [generated(seed)[0]]
    for raw in bodies:
        ours = [{f.event_type: _drop_padding(json.loads(f.payload))} for f in EventStreamDecoder().feed(raw)]
        assert ours == botocore_events(raw, pieces=1 + seed % 5)
