"""AgentScope 2.0.11's own Agent (from the dev extra, not a copy) running on modelwire models
against the local provider server: every protocol, parallel tool calls, thinking kept across
turns, a tool error, an interrupted reply, cassettes, who retries, and the same bytes through
AgentScope's own model classes."""

from __future__ import annotations

import asyncio
import json
import warnings

import pytest

pytest.importorskip("agentscope", reason="the dev extra installs agentscope==2.0.11")

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from agentscope.agent import Agent
    from agentscope.message import UserMsg as ASUserMsg
    from agentscope.permission import PermissionBehavior, PermissionDecision
    from agentscope.tool import FunctionTool, Toolkit

from modelwire import event as Ev
from modelwire.errors import RateLimitError
from modelwire.integrations.agentscope import ModelwireChatModel
from modelwire.testing import ProviderServer, Reply, error_reply, sse_reply
from modelwire.testing import stream_reply as framed_reply
from modelwire.testing.sse import body

ALLOW = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="allowed in tests")
PRESETS = {
    "anthropic": "anthropic:claude-test",
    "openai-chat": "deepseek:deepseek-chat",
    "openai-responses": "openai-responses:resp-test",
    "gemini": "google:gemini-test",
    "bedrock-converse": "bedrock:us.anthropic.claude-sonnet-4-5-v1:0",
}


def weather(city: str) -> str:
    """Weather for a city.

    Args:
        city: the city
    """
    return f"{city}: sunny"


def local_time(city: str) -> str:
    """Local time in a city.

    Args:
        city: the city
    """
    if city == "Atlantis":
        raise ValueError("no such city")
    return f"{city}: noon"


def toolkit() -> Toolkit:
    return Toolkit(tools=[FunctionTool(weather, permission=ALLOW), FunctionTool(local_time, permission=ALLOW)])


def stream_reply(protocol: str, *blocks, **kw) -> Reply:
    return framed_reply(protocol, body(protocol, *blocks), **kw)


def chat_model(server, protocol: str, **kw) -> ModelwireChatModel:
    base = server.url + ("/v1" if protocol in ("openai-chat", "openai-responses") else "")
    return ModelwireChatModel(PRESETS[protocol], api_key="sk-test", base_url=base, **kw)


def as_modelwire_events(events) -> list:
    """AgentScope's events, through JSON, as modelwire's: the same vocabulary."""
    return [
        Ev.parse_event(json.loads(e.model_dump_json()))
        for e in events
        if hasattr(e, "model_dump_json") and getattr(e, "type", None)
    ]


def thinking_sent(protocol: str, request: dict) -> bool:
    sent = json.dumps(request["json"])
    marker = {
        "anthropic": '"signature": "sig-Two tool"',
        "openai-chat": '"reasoning_content": "Two tools."',
        "openai-responses": '"encrypted_content": "enc-0"',
        "gemini": '"thoughtSignature": "sig-Two tool"',
        "bedrock-converse": '"signature": "sig-Two tool"',
    }[protocol]
    return marker in sent


@pytest.mark.parametrize("protocol", list(PRESETS))
def test_agentscopes_agent_runs_parallel_tools_on_every_protocol(protocol, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    calls = [
        ("tool", "fc_1" if protocol == "gemini" else "call_1", "weather", '{"city": "Paris"}'),
        ("tool", "fc_2" if protocol == "gemini" else "call_2", "local_time", '{"city": "Paris"}'),
    ]
    with ProviderServer() as server:
        server.script(
            stream_reply(protocol, ("think", "Two tools."), *calls), stream_reply(protocol, ("text", "Sunny at noon."))
        )
        agent = Agent(name="Friday", system_prompt="Be brief.", model=chat_model(server, protocol), toolkit=toolkit())

        async def run():
            return [ev async for ev in agent.reply_stream(ASUserMsg(name="user", content="Weather and time in Paris?"))]

        events = asyncio.run(run())
        assert len(server.requests) == 2
        # thinking (with its signature, reasoning item or reasoning field) went back to the provider
        assert thinking_sent(protocol, server.requests[1])
        sent = json.dumps(server.requests[1]["json"])
        assert "Paris: sunny" in sent and "Paris: noon" in sent
    converted = as_modelwire_events(events)
    Ev.check_stream(converted)
    starts = [e for e in converted if e.type == "TOOL_CALL_START"]
    assert [e.tool_call_name for e in starts] == ["weather", "local_time"]
    deltas = "".join(e.delta for e in converted if e.type == "TEXT_BLOCK_DELTA")
    assert deltas.strip() == "Sunny at noon."


def test_a_tool_error_reaches_the_model_as_an_error_result():
    with ProviderServer() as server:
        server.script(
            stream_reply("anthropic", ("tool", "toolu_1", "local_time", '{"city": "Atlantis"}')),
            stream_reply("anthropic", ("text", "No such city.")),
        )
        agent = Agent(
            name="Friday", system_prompt="Be brief.", model=chat_model(server, "anthropic"), toolkit=toolkit()
        )
        asyncio.run(agent.reply(ASUserMsg(name="user", content="Time in Atlantis?")))
        results = [
            c
            for m in server.requests[1]["json"]["messages"]
            for c in m["content"]
            if isinstance(c, dict) and c.get("type") == "tool_result"
        ]
        assert results and results[0]["tool_use_id"] == "toolu_1" and "no such city" in json.dumps(results[0])


def test_cancelling_agentscopes_reply_closes_the_http_stream():
    words = " ".join(["word"] * 400)
    with ProviderServer() as server:
        server.script(sse_reply(body("anthropic", ("text", words)), delay=0.01))
        agent = Agent(
            name="Friday", system_prompt="Be brief.", model=chat_model(server, "anthropic"), toolkit=toolkit()
        )

        async def run():
            seen = 0

            async def consume():
                nonlocal seen
                async for ev in agent.reply_stream(ASUserMsg(name="user", content="Talk")):
                    if getattr(ev, "type", "") == "TEXT_BLOCK_DELTA":
                        seen += 1

            task = asyncio.create_task(consume())
            while seen < 5:
                await asyncio.sleep(0.01)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

        asyncio.run(run())
        import time

        t0 = time.monotonic()
        while not server.disconnects and time.monotonic() - t0 < 30:
            time.sleep(0.02)
        assert server.disconnects, "the provider connection stayed open"


def test_an_agentscope_agent_with_a_cassette_replays_with_the_server_stopped(tmp_path):
    """AgentScope injects the current time into the context: a recorded request would never
    match again. Turn the injection off for recorded tests (InjectionConfig)."""
    from agentscope.agent import InjectionConfig

    from modelwire.cassettes import use_cassette

    def make_agent(url):
        return Agent(
            name="Friday",
            system_prompt="Be brief.",
            model=ModelwireChatModel("anthropic:claude-test", api_key="sk-test", base_url=url),
            toolkit=toolkit(),
            injection_config=InjectionConfig(inject_runtime_state=False),
        )

    path = tmp_path / "agentscope.json"
    with ProviderServer() as server:
        server.script(
            stream_reply("anthropic", ("tool", "toolu_1", "weather", '{"city": "Rome"}')),
            stream_reply("anthropic", ("text", "Sunny in Rome.")),
        )
        url = server.url
        with use_cassette(path, "once"):
            first = asyncio.run(make_agent(url).reply(ASUserMsg(name="user", content="Weather in Rome?")))
    with use_cassette(path) as session:
        again = asyncio.run(make_agent(url).reply(ASUserMsg(name="user", content="Weather in Rome?")))
    assert session.replayed == 2
    assert again.get_text_content() == first.get_text_content() and "Sunny in Rome" in again.get_text_content()


@pytest.mark.parametrize("who", ["modelwire", "agentscope"])
def test_one_switch_decides_who_retries(who):
    with ProviderServer() as server:
        server.script(
            error_reply(429, {"error": {"type": "rate_limit_error", "message": "slow down"}}, {"retry-after": "0"}),
            sse_reply(body("anthropic", ("text", "ok"))),
        )
        model = chat_model(server, "anthropic", retries=who, max_retries=1, retry_delay=0.01)
        assert (model.max_retries, model._get_retryable_exceptions() != ()) == (
            (0, False) if who == "modelwire" else (1, True)
        )

        async def call():
            result = await model([ASUserMsg(name="user", content="hi")])
            return [chunk async for chunk in result][-1]

        final = asyncio.run(call())
        assert [b.text for b in final.content] == ["ok"] and len(server.requests) == 2
    with ProviderServer() as server:
        server.script(
            *[error_reply(429, {"error": {"type": "rate_limit_error", "message": "slow down"}}, {"retry-after": "0"})]
            * 3
        )
        model = chat_model(server, "anthropic", retries=who, max_retries=1, retry_delay=0.01)

        async def call_and_read():
            result = await model([ASUserMsg(name="user", content="hi")])
            return [chunk async for chunk in result]

        with pytest.raises(RateLimitError):
            asyncio.run(call_and_read())
        assert len(server.requests) == 2  # one retry in all, whoever makes it


def test_the_final_response_carries_usage_and_stop_reasons():
    with ProviderServer() as server:
        server.script(sse_reply(body("anthropic", ("text", "done"), usage=(12, 4))))
        model = chat_model(server, "anthropic")

        async def call():
            result = await model([ASUserMsg(name="user", content="hi")])
            return [chunk async for chunk in result][-1]

        final = asyncio.run(call())
    assert final.is_last and (final.usage.input_tokens, final.usage.output_tokens) == (12, 4)
    assert final.metadata["stop_reason"] == "end_turn" and final.metadata["provider_stop_reason"] == "end_turn"


# -- the same bytes through AgentScope's own model classes ----------------------------------------


def _their_model(protocol: str, url: str):
    from agentscope.credential import AnthropicCredential, OpenAICredential
    from agentscope.model import AnthropicChatModel, OpenAIChatModel

    if protocol == "anthropic":
        return AnthropicChatModel(
            credential=AnthropicCredential(api_key="sk-test", base_url=url), model="claude-test", max_retries=0
        )
    return OpenAIChatModel(
        credential=OpenAICredential(api_key="sk-test", base_url=url + "/v1"), model="gpt-test", max_retries=0
    )


@pytest.mark.parametrize("protocol", ["anthropic", "openai-chat"])
def test_the_same_bytes_give_the_same_response_as_agentscopes_own_models(protocol):
    blocks = (
        ("think", "Consider it."),
        ("text", "Here is the answer."),
        ("tool", "call_9", "weather", '{"city": "Oslo"}'),
    )
    raw = body(protocol, *blocks, usage=(21, 8))
    finals = {}
    for who in ("modelwire", "agentscope"):
        with ProviderServer() as server:
            server.script(sse_reply(raw))
            model = chat_model(server, protocol) if who == "modelwire" else _their_model(protocol, server.url)

            async def call():
                result = await model(
                    [ASUserMsg(name="user", content="hi")],
                    tools=[
                        {
                            "type": "function",
                            "function": {
                                "name": "weather",
                                "description": "w",
                                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                            },
                        }
                    ],
                )
                return [chunk async for chunk in result][-1]

            finals[who] = asyncio.run(call())
    ours, theirs = finals["modelwire"], finals["agentscope"]

    def view(response):
        out = []
        for b in response.content:
            if b.type == "text":
                out.append(("text", b.text))
            elif b.type == "thinking":
                out.append(("thinking", b.thinking, getattr(b, "signature", None)))
            elif b.type == "tool_call":
                out.append(("tool_call", b.id, b.name, json.loads(b.input)))
        return out

    if protocol == "anthropic":
        assert view(ours) == view(theirs)
    else:
        # AgentScope's OpenAI model keeps no reasoning from a plain Chat Completions server
        # (no reasoning field in OpenAI's dialect): we keep the reasoning_content we got.
        assert [v for v in view(ours) if v[0] != "thinking"] == [v for v in view(theirs) if v[0] != "thinking"]
        assert view(ours)[0] == ("thinking", "Consider it.", None)
    assert (
        (ours.usage.input_tokens, ours.usage.output_tokens)
        == (theirs.usage.input_tokens, theirs.usage.output_tokens)
        == (21, 8)
    )


def test_agentscopes_structured_output_and_parameters_map_onto_modelwire():
    from pydantic import BaseModel

    from modelwire.errors import UnsupportedOptionError

    class City(BaseModel):
        name: str

    with ProviderServer() as server:
        server.script(
            sse_reply(body("anthropic", ("tool", "toolu_1", "generate_structured_output", '{"name": "Oslo"}')))
        )
        model = chat_model(server, "anthropic")
        result = asyncio.run(
            model.generate_structured_output([ASUserMsg(name="user", content="A city?")], structured_model=City)
        )
        sent = server.requests[0]["json"]
    assert result.content == {"name": "Oslo"}
    assert sent["tool_choice"] == {"type": "tool", "name": "generate_structured_output"}
    with ProviderServer() as server:
        server.script(sse_reply(body("anthropic", ("text", "Hi."))))
        model = chat_model(server, "anthropic")
        model.parameters = model.Parameters(temperature=0.2, reasoning_effort="high")
        asyncio.run(model([ASUserMsg(name="user", content="hi")]))
        sent = server.requests[0]["json"]
    assert sent["temperature"] == 0.2 and sent["output_config"] == {"effort": "high"}  # Claude's effort
    with ProviderServer() as server:
        model = ModelwireChatModel("anthropic:claude-haiku-4-5", api_key="sk-test", base_url=server.url)
        model.parameters = model.Parameters(reasoning_effort="high")
        with pytest.raises(UnsupportedOptionError, match="reasoning_effort"):  # a model with no effort levels
            asyncio.run(model([ASUserMsg(name="user", content="hi")]))


# -- what AgentScope's own models send for thinking, effort and display, modelwire sends too ----


def _agentscope_request(protocol: str, model: str, params: dict) -> dict:
    from agentscope.credential import AnthropicCredential, OpenAICredential
    from agentscope.model import AnthropicChatModel, OpenAIChatModel, OpenAIResponseModel

    with ProviderServer() as server:
        server.script(sse_reply(body(protocol, ("text", "Four."))))
        if protocol == "anthropic":
            theirs = AnthropicChatModel(
                credential=AnthropicCredential(api_key="sk-test", base_url=server.url), model=model, max_retries=0
            )
        elif protocol == "openai-chat":
            theirs = OpenAIChatModel(
                credential=OpenAICredential(api_key="sk-test", base_url=server.url + "/v1"), model=model, max_retries=0
            )
        else:
            theirs = OpenAIResponseModel(
                credential=OpenAICredential(api_key="sk-test", base_url=server.url + "/v1"), model=model, max_retries=0
            )
        theirs.parameters = theirs.Parameters(**params)

        async def go():
            result = await theirs([ASUserMsg(name="user", content="2+2?")])
            if hasattr(result, "__aiter__"):
                async for _ in result:
                    pass

        asyncio.run(go())
        return server.requests[0]["json"]


def _modelwire_request(spec: str, options: dict) -> dict:
    from modelwire.message import UserMsg

    from modelwire.models import load_model

    model = load_model(spec, api_key="sk-test", base_url="http://127.0.0.1:9", **options)
    return model.build_request([UserMsg("user", "2+2?")])[0]


@pytest.mark.parametrize(
    "protocol,model,theirs,ours,fields",
    [
        # Opus 4.7: adaptive, summarized (AgentScope's users set it; modelwire asks for it itself), xhigh.
        (
            "anthropic",
            "claude-opus-4-7",
            {
                "max_tokens": 4096,
                "thinking_mode": "adaptive",
                "thinking_display": "summarized",
                "reasoning_effort": "xhigh",
            },
            {"max_tokens": 4096, "thinking": True, "reasoning_effort": "xhigh"},
            ("thinking", "output_config", "max_tokens"),
        ),
        (
            "anthropic",
            "claude-opus-4-6",
            {"max_tokens": 4096, "thinking_mode": "adaptive", "thinking_display": "omitted", "reasoning_effort": "max"},
            {"max_tokens": 4096, "thinking": True, "thinking_display": "omitted", "reasoning_effort": "max"},
            ("thinking", "output_config"),
        ),
        (
            "anthropic",
            "claude-sonnet-4-5",
            {"max_tokens": 4096, "thinking_enable": True, "thinking_budget": 2048},
            {"max_tokens": 4096, "thinking_budget": 2048},
            ("thinking", "max_tokens"),
        ),
        (
            "anthropic",
            "claude-opus-4-6",
            {"max_tokens": 4096, "thinking_mode": "disabled"},
            {"max_tokens": 4096, "thinking": False},
            ("thinking",),
        ),
        (
            "openai-chat",
            "gpt-5.2",
            {"thinking_enable": True, "reasoning_effort": "xhigh"},
            {"reasoning_effort": "xhigh"},
            ("reasoning_effort",),
        ),
        (
            "openai-chat",
            "gpt-5.1",
            {"thinking_enable": True, "reasoning_effort": "none"},
            {"thinking": False},
            ("reasoning_effort",),
        ),
        (
            "openai-responses",
            "o4-mini",
            {"thinking_enable": True, "reasoning_effort": "high"},
            {"reasoning_effort": "high"},
            ("reasoning",),
        ),
    ],
)
def test_modelwire_sends_what_agentscopes_own_models_send(protocol, model, theirs, ours, fields):
    sent = _agentscope_request(protocol, model, theirs)
    prefix = {"anthropic": "anthropic", "openai-chat": "openai", "openai-responses": "openai-responses"}[protocol]
    mine = _modelwire_request(f"{prefix}:{model}", ours)
    assert {f: mine.get(f) for f in fields} == {f: sent.get(f) for f in fields}


def test_a_gemini_signature_survives_agentscopes_storage_in_the_call_id():
    """AgentScope keeps no extra field of a tool call; its own Gemini model puts the thought
    signature into the call's id (``gemini_ts:``). ModelwireChatModel does the same, so a
    session AgentScope stored and reloaded gives Gemini its signature back."""
    from agentscope.message import Msg as ASMsg
    from agentscope.message import ToolResultBlock as ASResult

    with ProviderServer() as server:
        server.script(
            sse_reply(body("gemini", ("think", "Weather first."), ("tool", "c1", "weather", '{"city": "Oslo"}')))
        )
        model = chat_model(server, "gemini")

        async def call():
            result = await model(
                [ASUserMsg(name="user", content="Weather?")],
                tools=[
                    {
                        "type": "function",
                        "function": {
                            "name": "weather",
                            "description": "w",
                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                        },
                    }
                ],
            )
            return [chunk async for chunk in result]

        chunks = asyncio.run(call())
    ids = {b.id for c in chunks for b in c.content if b.type == "tool_call"}
    (call_id,) = ids  # one id, streamed and final alike
    assert call_id == "gemini_ts:sig-Weather "
    # AgentScope stores the turn (its JSON), loads it, and sends it again with the result.
    stored = ASMsg(
        name="assistant",
        role="assistant",
        content=[b for b in chunks[-1].content if b.type == "tool_call"]
        + [ASResult(id=call_id, name="weather", output="rain", state="success")],
    )
    reloaded = ASMsg.model_validate_json(stored.model_dump_json())
    with ProviderServer() as server:
        server.script(sse_reply(body("gemini", ("text", "It rains."))))
        asyncio.run(_drain(chat_model(server, "gemini")([ASUserMsg(name="user", content="Weather?"), reloaded])))
        sent = server.requests[0]["json"]
    (part,) = [p for c in sent["contents"] for p in c["parts"] if "functionCall" in p]
    assert part["thoughtSignature"] == "sig-Weather "  # its own, not the placeholder


async def _drain(pending):
    result = await pending
    if hasattr(result, "__aiter__"):
        async for _ in result:
            pass


# -- what AgentScope keeps, and what it is told ---------------------------------------------------


def _gemini_signed_text(text: str, signature: str) -> bytes:
    chunk = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": text, "thoughtSignature": signature}]},
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2},
    }
    return f"data: {json.dumps(chunk)}\r\n\r\n".encode()


def test_a_text_parts_signature_survives_agentscopes_saved_state():
    """AgentScope's text blocks keep no extra field, and its saved state is all a reloaded
    agent has: the text's Gemini signature rides in the block's id and goes back to Gemini
    from a new agent on a new model."""
    from agentscope.state import AgentState

    with ProviderServer() as server:
        server.script(
            framed_reply("gemini", _gemini_signed_text("It rains.", "c2lnLXRleHQ=")),
            framed_reply("gemini", _gemini_signed_text("Yes.", "c2lnLTI=")),
        )
        first = Agent(name="Friday", system_prompt="Be brief.", model=chat_model(server, "gemini"), toolkit=toolkit())
        asyncio.run(first.reply(ASUserMsg(name="user", content="Weather?")))
        saved = first.state.model_dump_json()
        again = Agent(
            name="Friday",
            system_prompt="Be brief.",
            model=chat_model(server, "gemini"),
            toolkit=toolkit(),
            state=AgentState.model_validate_json(saved),
        )
        asyncio.run(again.reply(ASUserMsg(name="user", content="Sure?")))
        sent = server.requests[1]["json"]
    (part,) = [p for c in sent["contents"] if c["role"] == "model" for p in c["parts"]]
    assert part == {"text": "It rains.", "thoughtSignature": "c2lnLXRleHQ="}


def test_usage_is_none_where_the_provider_sent_none():
    """A server that sends no usage in its stream (llama.cpp without include_usage): AgentScope
    is told None, as its own models tell it, not zero tokens."""
    chunks = [
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}, "finish_reason": None}],
        },
        {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    raw = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"
    finals = []
    for sent in (raw, body("openai-chat", ("text", "hi"), usage=(7, 1))):
        with ProviderServer() as server:
            server.script(framed_reply("openai-chat", sent), framed_reply("openai-chat", sent))
            for stream in (True, False):  # AgentScope's streamed and whole calls
                model = chat_model(server, "openai-chat", stream=stream)

                async def call(model=model):
                    result = await model([ASUserMsg(name="user", content="hi")])
                    return [chunk async for chunk in result][-1] if hasattr(result, "__aiter__") else result

                finals.append(asyncio.run(call()))
    assert [f.usage is None for f in finals] == [True, True, False, False]
    assert (finals[2].usage.input_tokens, finals[2].usage.output_tokens) == (7, 1) and finals[0].content[0].text == "hi"


def test_agentscope_is_told_the_media_the_model_takes():
    """AgentScope strips from its input the media a model's formatter does not list: the
    list is the model's capabilities, so an image never reaches a text-only model."""
    text_only = ModelwireChatModel("deepseek:deepseek-chat", api_key="k")
    assert text_only.wire_model.capabilities.image_input is False
    assert "image/*" not in text_only.formatter.supported_input_media_types
    assert "text/*" in text_only.formatter.supported_input_media_types
    seeing = ModelwireChatModel("openai:gpt-4.1", api_key="k")
    assert "image/*" in seeing.formatter.supported_input_media_types
    told = ModelwireChatModel("openai:gpt-4.1", api_key="k", capabilities={"image_input": False, "pdf_input": False})
    assert {"image/*", "application/pdf"}.isdisjoint(told.formatter.supported_input_media_types)


def test_a_thinking_block_keeps_agentscopes_fields_visible_and_modelwires_in_its_id():
    """AgentScope's formatters replay a thinking block's signature: it stays a field. What
    only modelwire reads (where the reasoning came from) rides in the id, so AgentScope's
    saved thinking block is its own shape, and the origin comes back."""
    from agentscope.message import Msg as ASMsg

    from modelwire.integrations.agentscope import to_agentscope_blocks, to_modelwire
    from modelwire.message import AssistantMsg, ThinkingBlock, extras_of, provenance

    block = ThinkingBlock(
        thinking="Two tools.", signature="sig-1", provider_metadata=provenance("anthropic", "anthropic", "anthropic")
    )
    (theirs,), _ = to_agentscope_blocks(AssistantMsg("a", [block]))
    dumped = theirs.model_dump(mode="json")
    assert dumped["signature"] == "sig-1" and "provider_metadata" not in dumped and dumped["id"].startswith("mw1.")
    saved = ASMsg.model_validate_json(ASMsg(name="a", role="assistant", content=[theirs]).model_dump_json())
    (back,) = to_modelwire(saved).content
    assert back.id == block.id and extras_of(back) == extras_of(block)


def test_what_agentscope_saves_names_no_host_or_port_and_the_thinking_still_goes_back():
    """A thinking block's origin rides in its AgentScope id; for a base URL of the
    deployment's own, the endpoint family is that URL's host and port, which must not end
    up in every saved session. It is kept by reference, and the same deployment's model
    reads it back as its own: the signed thinking is replayed to it."""
    import base64

    from agentscope.state import AgentState

    with ProviderServer() as server:
        host = server.url.split("://", 1)[1]  # 127.0.0.1:<port>
        server.script(
            sse_reply(body("anthropic", ("think", "Short.", "sig-keep"), ("text", "It rains."))),
            sse_reply(body("anthropic", ("text", "Yes."))),
        )
        first = Agent(
            name="Friday", system_prompt="Be brief.", model=chat_model(server, "anthropic"), toolkit=toolkit()
        )
        asyncio.run(first.reply(ASUserMsg(name="user", content="Weather?")))
        saved = first.state.model_dump_json()
        ids = [b["id"] for m in json.loads(saved)["context"] for b in m.get("content", []) if isinstance(b, dict)]
        kept = [base64.urlsafe_b64decode(i[4:] + "=" * (-len(i[4:]) % 4)).decode() for i in ids if i.startswith("mw1.")]
        assert kept and not [k for k in kept if host in k or host.split(":")[1] in k]
        assert host not in saved
        again = Agent(
            name="Friday",
            system_prompt="Be brief.",
            model=chat_model(server, "anthropic"),
            toolkit=toolkit(),
            state=AgentState.model_validate_json(saved),
        )
        asyncio.run(again.reply(ASUserMsg(name="user", content="Sure?")))
        sent = server.requests[1]["json"]
    replayed = [
        b for m in sent["messages"] if m["role"] == "assistant" for b in m["content"] if b["type"] == "thinking"
    ]
    assert replayed == [{"type": "thinking", "thinking": "Short.", "signature": "sig-keep"}]
