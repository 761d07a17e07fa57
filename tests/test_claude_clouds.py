"""Claude on Vertex AI (``:streamRawPredict``) and on Bedrock's Anthropic API
(``invoke-with-response-stream``): the anthropic protocol's formatter and adapter, each
cloud's own URL, body and framing. Real recordings (../shared, skipped without it) are
served by a local server; the official SDK's own cloud clients (``AnthropicVertex``,
``AnthropicBedrock``) decode the same bytes as the oracle."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx2
import pytest

import sdk_params
from modelwire.errors import RateLimitError
from modelwire.message import AssistantMsg, UserMsg
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy
from modelwire.protocols.anthropic._invoke import wrap_event
from modelwire.testing import ProviderServer, Reply
from paths import ROOT
from sdk_oracle import compare_anthropic

INVOKE = ROOT / "bedrock-invoke" / "fantasy"
VERTEX = ROOT / "vertex-anthropic" / "fantasy"
EVENTSTREAM = "application/vnd.amazon.eventstream"
ENV = {"AWS_REGION": "us-east-1", "GOOGLE_CLOUD_PROJECT": "proj", "GOOGLE_CLOUD_LOCATION": "us-east5"}


@pytest.fixture(autouse=True)
def cloud_env(monkeypatch):
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)


def recordings(folder: Path, pattern: str) -> list[Path]:
    found = sorted(folder.glob(pattern)) if folder.is_dir() else []
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="needs ../shared/recorded-streams"))]


def sdk_bedrock_final(raw: bytes):
    import anthropic

    def handler(request):
        return httpx2.Response(200, content=raw, headers={"content-type": EVENTSTREAM})

    client = anthropic.AnthropicBedrock(
        api_key="bedrock-api-key",
        aws_region="us-east-1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )
    with client.messages.stream(
        model="us.anthropic.claude-opus-4-6-v1", max_tokens=16, messages=[{"role": "user", "content": "x"}]
    ) as stream:
        return stream.get_final_message()


def sdk_vertex_final(raw: bytes):
    import anthropic

    def handler(request):
        return httpx2.Response(200, content=raw, headers={"content-type": "text/event-stream"})

    client = anthropic.AnthropicVertex(
        region="us-east5",
        project_id="proj",
        access_token="tok",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )
    with client.messages.stream(
        model="claude-3-7-sonnet@20250219", max_tokens=16, messages=[{"role": "user", "content": "x"}]
    ) as stream:
        return stream.get_final_message()


def complete(spec: str, server, raw: bytes, content_type: str, messages=None, **kw):
    server.script(
        Reply(
            body=raw, headers={"content-type": content_type}, pieces=[raw[i : i + 97] for i in range(0, len(raw), 97)]
        )
    )
    model = load_model(spec, api_key="k", base_url=server.url, **kw)
    events = []

    async def go():
        async for event in model.stream(messages or [UserMsg("u", "Say hi in Portuguese")]):
            events.append(event)

    asyncio.run(go())
    reply = AssistantMsg("a", [], id=events[0].reply_id)
    for event in events:
        reply.append_event(event)
    return reply, events, model


@pytest.mark.parametrize("path", recordings(INVOKE, "*.eventstream"), ids=lambda p: getattr(p, "name", "none"))
def test_bedrock_invoke_recordings_decode_as_the_sdks_bedrock_client_reads_them(path):
    raw = path.read_bytes()
    with ProviderServer() as server:
        reply, events, model = complete("bedrock-anthropic:us.anthropic.claude-opus-4-6-v1", server, raw, EVENTSTREAM)
        (request,) = server.requests
    assert request["path"] == "/model/us.anthropic.claude-opus-4-6-v1/invoke-with-response-stream"
    assert request["headers"]["accept"] == EVENTSTREAM
    end = [e for e in events if e.type == "MODEL_CALL_END"]
    assert compare_anthropic(reply, sdk_bedrock_final(raw), end) == []


@pytest.mark.parametrize("path", recordings(VERTEX, "*.sse"), ids=lambda p: getattr(p, "name", "none"))
def test_vertex_recordings_decode_as_the_sdks_vertex_client_reads_them(path):
    raw = path.read_bytes()
    with ProviderServer() as server:
        reply, events, model = complete("vertex-anthropic:claude-3-7-sonnet@20250219", server, raw, "text/event-stream")
        (request,) = server.requests
    where = "/v1/projects/proj/locations/us-east5/publishers/anthropic/models"
    assert request["path"] == where + "/claude-3-7-sonnet@20250219:streamRawPredict"
    end = [e for e in events if e.type == "MODEL_CALL_END"]
    assert compare_anthropic(reply, sdk_vertex_final(raw), end) == []


@pytest.mark.parametrize(
    "spec,recorded",
    [
        (
            "bedrock-anthropic:us.anthropic.claude-opus-4-6-v1",
            INVOKE / "TestBedrockCommon__bedrock-anthropic-claude-opus-4-6__simple_streaming.0.request.json",
        ),
        (
            "vertex-anthropic:claude-3-7-sonnet@20250219",
            VERTEX / "TestGoogleCommon__vertex-claude-3-7-sonnet__simple_streaming.0.request.json",
        ),
    ],
)
def test_the_request_body_is_the_one_the_cloud_took(spec, recorded):
    if not recorded.is_file():
        pytest.skip("needs ../shared/recorded-streams")
    from modelwire.message import SystemMsg

    sent = json.loads(recorded.read_text())
    model = load_model(spec, api_key="k", max_tokens=4000)
    body = model.build_request([SystemMsg("s", "You are a helpful assistant"), UserMsg("u", "Say hi in Portuguese")])[0]
    assert body == sent
    sdk_params.anthropic_request({k: v for k, v in body.items() if k not in ("anthropic_version", "stream")})


def test_a_throttling_frame_is_a_rate_limit_error_and_keeps_what_came():
    from modelwire.adapters import encode_frame
    from modelwire.testing.sse import body as sse_body

    events = [
        json.loads(line[6:])
        for line in sse_body("anthropic", ("text", "Olá! Tudo bem")).decode().splitlines()
        if line.startswith("data: ")
    ]
    raw = b"".join(wrap_event(e) for e in events[:4])
    raw += encode_frame(
        {":exception-type": "throttlingException", ":content-type": "application/json", ":message-type": "exception"},
        b'{"message": "Too many requests, please wait."}',
    )
    with ProviderServer() as server:
        server.script(Reply(body=raw, headers={"content-type": EVENTSTREAM}, pieces=[raw]))
        model = load_model(
            "bedrock-anthropic:us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            api_key="k",
            base_url=server.url,
            retry=RetryPolicy(max_retries=0),
        )
        with pytest.raises(RateLimitError, match="Too many requests") as info:
            asyncio.run(model.complete("hi"))
    assert info.value.partial is not None and "Olá" in info.value.partial.get_text_content()


def test_bad_chunks_are_typed_errors():
    from modelwire.adapters import encode_frame
    from modelwire.errors import StreamProtocolError

    frame = encode_frame(
        {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"},
        b'{"bytes": "not base64 !!"}',
    )
    with ProviderServer() as server:
        server.script(Reply(body=frame, headers={"content-type": EVENTSTREAM}, pieces=[frame]))
        model = load_model(
            "bedrock-anthropic:us.anthropic.claude-sonnet-4-5-20250929-v1:0", api_key="k", base_url=server.url
        )
        with pytest.raises(StreamProtocolError, match="base64"):
            asyncio.run(model.complete("hi"))


def test_an_agent_runs_a_tool_through_bedrock_and_its_thinking_replays_to_the_anthropic_api():
    from modelwire.agent import Agent
    from modelwire.testing.sse import body as sse_body

    def invoke(*blocks):
        events = [
            json.loads(line[6:])
            for line in sse_body("anthropic", *blocks).decode().splitlines()
            if line.startswith("data: ")
        ]
        raw = b"".join(wrap_event(e) for e in events)
        return Reply(
            body=raw, headers={"content-type": EVENTSTREAM}, pieces=[raw[i : i + 64] for i in range(0, len(raw), 64)]
        )

    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    with ProviderServer() as server:
        server.script(
            invoke(
                ("think", "I should look it up.", "sig-BEDROCK"),
                ("tool", "toolu_bdrk_1", "weather", '{"city": "Lisbon"}'),
            ),
            invoke(("text", "It is sunny.")),
        )
        # At its own base URL the preset is of the Anthropic family; a local server is its own
        # host, so the test says which family it stands for.
        agent = Agent(
            "a",
            load_model(
                "bedrock-anthropic:us.anthropic.claude-sonnet-4-5-20250929-v1:0",
                api_key="k",
                base_url=server.url,
                endpoint_family="anthropic",
            ),
            tools=[weather],
        )
        reply = asyncio.run(agent.reply("Weather in Lisbon?"))
        second = server.requests[1]["json"]
    from modelwire.models._http import endpoint_family
    from modelwire.models import all_presets

    for name in ("bedrock-anthropic", "vertex-anthropic", "anthropic"):
        assert endpoint_family(all_presets()[name], all_presets()[name].base_url) == "anthropic"
    assert reply.get_text_content().strip() == "It is sunny."
    assert "sig-BEDROCK" in json.dumps(second) and "model" not in second and "stream" not in second
    # The same family as the Anthropic API (signatures are valid across Claude's platforms) ...
    to_anthropic = load_model("anthropic:claude-sonnet-4-5", api_key="k").build_request(agent.context)[0]
    assert "sig-BEDROCK" in json.dumps(to_anthropic)
    # ... but not a compatible server's.
    assert "sig-BEDROCK" not in json.dumps(
        load_model("minimax:MiniMax-M2", api_key="k").build_request(agent.context)[0]
    )


def test_a_cassette_replays_a_bedrock_invoke_call(tmp_path):
    from modelwire.cassettes import use_cassette
    from modelwire.testing.sse import body as sse_body

    events = [
        json.loads(line[6:])
        for line in sse_body("anthropic", ("text", "Recorded words.")).decode().splitlines()
        if line.startswith("data: ")
    ]
    raw = b"".join(wrap_event(e) for e in events)
    path = tmp_path / "invoke.json"
    with ProviderServer() as server:
        server.script(Reply(body=raw, headers={"content-type": EVENTSTREAM}, pieces=[raw]))
        with use_cassette(path, "all"):
            first = asyncio.run(
                load_model(
                    "bedrock-anthropic:us.anthropic.claude-sonnet-4-5-20250929-v1:0", api_key="k", base_url=server.url
                ).complete("hi")
            )
        url = server.url
    with use_cassette(path, "none"):  # the server is gone: the cassette answers
        again = asyncio.run(
            load_model(
                "bedrock-anthropic:us.anthropic.claude-sonnet-4-5-20250929-v1:0", api_key="k", base_url=url
            ).complete("hi")
        )
    assert first.get_text_content() == again.get_text_content() == "Recorded words."


def test_betas_go_in_the_body_on_bedrock_and_in_the_header_elsewhere():
    beta = {"anthropic-beta": "context-1m-2025-08-07, interleaved-thinking-2025-05-14"}
    bedrock = load_model(
        "bedrock-anthropic:us.anthropic.claude-sonnet-4-5-20250929-v1:0", api_key="k", extra_headers=beta
    )
    body = bedrock.build_request([UserMsg("u", "hi")])[0]
    assert body["anthropic_beta"] == ["context-1m-2025-08-07", "interleaved-thinking-2025-05-14"]
    assert "anthropic-beta" not in bedrock.headers(bedrock.options.extra_headers)
    vertex = load_model("vertex-anthropic:claude-sonnet-4-5@20250929", api_key="k", extra_headers=beta)
    assert "anthropic_beta" not in vertex.build_request([UserMsg("u", "hi")])[0]
    assert vertex.headers(vertex.options.extra_headers)["anthropic-beta"] == beta["anthropic-beta"]


def test_an_agent_on_vertex_runs_a_tool_and_a_cassette_replays_it(tmp_path):
    from modelwire.agent import Agent
    from modelwire.cassettes import use_cassette
    from modelwire.testing import sse_reply
    from modelwire.testing.sse import body as sse_body

    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    path = tmp_path / "vertex.json"
    with ProviderServer() as server:
        server.script(
            sse_reply(sse_body("anthropic", ("tool", "toolu_vrtx_1", "weather", '{"city": "Rome"}'))),
            sse_reply(sse_body("anthropic", ("text", "Sunny in Rome."))),
        )
        with use_cassette(path, "all"):
            agent = Agent(
                "a",
                load_model("vertex-anthropic:claude-sonnet-4-5@20250929", api_key="k", base_url=server.url),
                tools=[weather],
            )
            reply = asyncio.run(agent.reply("Weather in Rome?"))
        second = server.requests[1]
        url = server.url
    assert reply.get_text_content().strip() == "Sunny in Rome."
    assert second["path"].endswith("/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict")
    assert second["json"]["anthropic_version"] == "vertex-2023-10-16" and "model" not in second["json"]
    with use_cassette(path, "none"):  # the server is gone
        again = Agent(
            "a", load_model("vertex-anthropic:claude-sonnet-4-5@20250929", api_key="k", base_url=url), tools=[weather]
        )
        assert asyncio.run(again.reply("Weather in Rome?")).get_text_content() == reply.get_text_content()


def test_modelwire_decode_reads_a_claude_on_bedrock_body(tmp_path):
    """``modelwire decode --protocol anthropic`` on what Bedrock's invoke endpoint sends
    (Anthropic's events in AWS event-stream frames): found from the body, or named with
    ``--preset bedrock-anthropic``; the SSE form still decodes as before."""
    import os
    import subprocess
    import sys

    from modelwire.testing.sse import body as sse_body

    sse = sse_body("anthropic", ("text", "Framed words."))
    events = [json.loads(line[6:]) for line in sse.decode().splitlines() if line.startswith("data: ")]
    (tmp_path / "invoke.bin").write_bytes(b"".join(wrap_event(e) for e in events))
    (tmp_path / "plain.sse").write_bytes(sse)
    env = {**os.environ, "MODELWIRE_DEBUG": "0"}

    def decode(*args):
        done = subprocess.run(
            [sys.executable, "-m", "modelwire", "decode", "--protocol", "anthropic", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        from modelwire.message import Msg

        return Msg.from_dict(json.loads(done.stdout)).get_text_content()

    assert (
        decode(str(tmp_path / "invoke.bin"))
        == decode("--preset", "bedrock-anthropic", str(tmp_path / "invoke.bin"))
        == "Framed words."
    )
    assert decode(str(tmp_path / "plain.sse")) == "Framed words."
