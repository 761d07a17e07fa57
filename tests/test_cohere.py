"""Cohere v2 Chat: real recordings (../shared, skipped without it) decoded and checked against
what the official ``cohere`` SDK's own types read from the same events; requests checked
against the SDK's request types and its ``chat_stream`` parameters; the agent end to end
against a local server."""

from __future__ import annotations

import asyncio
import inspect
import json

import pytest

from modelwire.agent import Agent
from modelwire.errors import FormatError, IncompleteStreamError, ProviderError
from modelwire.message import AssistantMsg, TextBlock, ThinkingBlock, ToolCallBlock, ToolResultBlock, UserMsg
from modelwire.formatters import extra
from modelwire.models import load_model
from modelwire.protocols import decode_sse, get_formatter, get_protocol
from modelwire.testing import ProviderServer, Reply
from helpers import fold
from paths import ROOT

COHERE = ROOT / "cohere"
WIRE = get_protocol("cohere")
cohere = pytest.importorskip("cohere", reason="the dev extra installs the cohere SDK")


def recordings():
    found = sorted(COHERE.glob("*.sse")) if COHERE.is_dir() else []
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="needs ../shared/recorded-streams"))]


def sdk_events(raw: bytes) -> list:
    """The stream's events as the SDK reads them (its discriminated union, from its own parser)."""
    from cohere.core.unchecked_base_model import construct_type
    from cohere.v2.types import V2ChatStreamResponse

    out = []
    for piece in raw.decode().split("\n\n"):
        data = next((line[6:] for line in piece.splitlines() if line.startswith("data: ")), None)
        if data is not None:
            out.append(construct_type(type_=V2ChatStreamResponse, object_=json.loads(data)))
    return out


def sdk_reading(events: list) -> dict:
    """What the SDK's typed events say the answer is: text, thinking, tool plan, calls, reason."""
    seen: dict = {"text": "", "thinking": "", "plan": "", "calls": {}, "reason": None, "tokens": None}
    for event in events:
        if event.type == "content-delta":
            content = event.delta.message.content
            seen["text"] += getattr(content, "text", None) or ""
            seen["thinking"] += getattr(content, "thinking", None) or ""
        elif event.type == "tool-plan-delta":
            seen["plan"] += event.delta.message.tool_plan
        elif event.type == "tool-call-start":
            call = event.delta.message.tool_calls
            seen["calls"][event.index] = [call.id, call.function.name, call.function.arguments or ""]
        elif event.type == "tool-call-delta":
            seen["calls"][event.index][2] += event.delta.message.tool_calls.function.arguments
        elif event.type == "message-end":
            seen["reason"] = event.delta.finish_reason
            tokens = event.delta.usage.tokens
            seen["tokens"] = (int(tokens.input_tokens), int(tokens.output_tokens))
    return seen


@pytest.mark.parametrize("path", recordings(), ids=lambda p: getattr(p, "stem", "skip"))
def test_a_recording_decodes_to_what_the_sdk_reads(path):
    raw = path.read_bytes()
    seen = sdk_reading(sdk_events(raw))
    events = decode_sse("cohere", raw, "r")
    reply = fold(events)
    text = "".join(b.text for b in reply.content if b.type == "text")
    plans = [b for b in reply.content if b.type == "thinking" and extra(b, "tool_plan", False)]
    thoughts = [b for b in reply.content if b.type == "thinking" and b not in plans]
    calls = [b for b in reply.content if b.type == "tool_call"]
    assert text == seen["text"]
    assert "".join(b.thinking for b in thoughts) == seen["thinking"]
    assert "".join(b.thinking for b in plans) == seen["plan"]
    expected = [[i, n, a or "{}"] for i, n, a in seen["calls"].values()]  # no arguments: streamed as {}
    assert [[b.id, b.name, b.input] for b in calls] == expected
    end = next(e for e in reversed(events) if e.type == "MODEL_CALL_END")
    assert end.provider_stop_reason == seen["reason"]
    assert (end.input_tokens, end.output_tokens) == seen["tokens"]
    assert end.stop_reason == ("tool_use" if seen["calls"] else "end_turn")


def test_a_stream_cut_short_is_an_incomplete_stream():
    raw = WIRE.fake_stream(("text", "Hello there."))
    with pytest.raises(IncompleteStreamError) as caught:
        decode_sse("cohere", raw[: raw.index(b"event: message-end")], "r")
    assert [e.type for e in caught.value.events][:2] == ["MODEL_CALL_START", "TEXT_BLOCK_START"]


def _conversation():
    return [
        UserMsg("u", "What is the weather in Paris?"),
        AssistantMsg(
            "a",
            [
                ThinkingBlock(thinking="I will look it up.", tool_plan=True),
                ToolCallBlock(id="weather_1", name="get_weather", input='{"city": "Paris"}'),
                ToolResultBlock(id="weather_1", name="get_weather", output="18 C, light rain", state="success"),
                TextBlock(text="It is 18 C with light rain."),
            ],
        ),
        UserMsg("u", "Thanks."),
    ]


TOOLS = [{"name": "get_weather", "description": "The weather", "parameters": {"type": "object", "properties": {}}}]


def test_a_request_is_what_the_sdk_sends():
    """Every message validates as the SDK's own message type, with no key the type lacks, and
    every top-level field is a parameter of the SDK's chat_stream."""
    from cohere import ChatMessageV2, ToolV2
    from pydantic import TypeAdapter

    model = load_model("cohere:command-a-03-2025", api_key="k", capability_lookup=False)
    body = model.wire.body("command-a-03-2025", get_formatter("cohere")().format(_conversation(), TOOLS, "required"),
                           model.options.merged({"max_tokens": 300, "top_p": 0.5, "stop": ["END"],
                                                 "thinking": True, "thinking_budget": 1000}),
                           model.spec.preset)  # fmt: skip
    params = set(inspect.signature(cohere.ClientV2.chat_stream).parameters) | {"stream"}
    assert set(body) <= params, set(body) - params
    for message in body["messages"]:
        typed = TypeAdapter(ChatMessageV2).validate_python(message)
        assert set(message) <= set(type(typed).model_fields), message
    for tool in body["tools"]:
        assert set(tool) <= set(ToolV2.model_fields)
    assert body["tool_choice"] == "REQUIRED" and body["p"] == 0.5 and body["stop_sequences"] == ["END"]
    assert body["thinking"] == {"type": "enabled", "token_budget": 1000}
    assistant = body["messages"][1]
    assert assistant["tool_plan"] == "I will look it up."
    assert assistant["tool_calls"] == [
        {"id": "weather_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    ]
    assert body["messages"][2] == {
        "role": "tool",
        "tool_call_id": "weather_1",
        "content": [{"type": "text", "text": "18 C, light rain"}],
    }


def test_a_named_tool_cannot_be_forced():
    with pytest.raises(FormatError, match="cannot force one tool"):
        get_formatter("cohere")().format([UserMsg("u", "hi")], TOOLS, "get_weather")


def test_the_agent_calls_a_tool_and_answers_through_a_local_server():
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"18 C in {city}"

    with ProviderServer() as server:
        server.script(
            Reply(body=WIRE.fake_stream(("tool", "weather_a1", "weather", '{"city": "Paris"}'))),
            Reply(body=WIRE.fake_stream(("text", "It is 18 C in Paris."))),
        )
        model = load_model("cohere:command-a-03-2025", api_key="k", base_url=server.url, capability_lookup=False)
        reply = asyncio.run(Agent("a", model=model, tools=[weather]).reply(UserMsg("u", "Weather in Paris?")))
        sent = json.loads(server.requests[1]["body"])
    assert reply.get_text_content() == "It is 18 C in Paris."
    assert server.requests[0]["path"] == "/v2/chat"
    assert sent["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "weather_a1",
        "content": [{"type": "text", "text": "18 C in Paris"}],
    }


def test_an_error_answer_is_typed():
    with ProviderServer() as server:
        server.script(Reply(status=400, body=b'{"id":"e1","message":"invalid request: model not found"}',
                            headers={"content-type": "application/json"}))  # fmt: skip
        model = load_model("cohere:command-x", api_key="k", base_url=server.url, capability_lookup=False)
        with pytest.raises(ProviderError, match="model not found"):
            asyncio.run(model.complete([UserMsg("u", "hi")]))


SCRIPTS = [
    (("text", "It is sunny in Paris."),),
    (("think", "They want the weather."), ("text", "Sunny.")),
    (("tool", "weather_1", "get_weather", '{"city": "Paris"}'), ("tool", "time_2", "get_time", "")),
]


@pytest.mark.parametrize("blocks", SCRIPTS)
def test_the_fake_stream_and_answer_are_what_the_sdk_types_take(blocks):
    """What the local test server sends as Cohere validates as the SDK's own stream events and
    chat response (pydantic's validation of its types, not its lenient reader)."""
    from cohere import V2ChatResponse
    from cohere.v2.types import V2ChatStreamResponse
    from pydantic import TypeAdapter

    events = TypeAdapter(V2ChatStreamResponse)
    for piece in WIRE.split_stream(WIRE.fake_stream(*blocks)):
        data = json.loads(next(line[6:] for line in piece.decode().splitlines() if line.startswith("data: ")))
        assert events.validate_python(data).type == data["type"]
    answer = TypeAdapter(V2ChatResponse).validate_python(WIRE.fake_answer(*blocks))
    assert answer.finish_reason == ("TOOL_CALL" if blocks[0][0] == "tool" else "COMPLETE")
