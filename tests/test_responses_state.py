"""OpenAI Responses server state: ``stateless=True`` (nothing stored, reasoning replayed
encrypted), ``chain=True`` (``previous_response_id`` and only the new items, the whole
history again when the server forgot), ``background=True`` (a broken stream read again
from its cursor). Requests are checked by the SDK's own types; the background test replays
a recorded background stream and its recorded resumption."""

from __future__ import annotations

import asyncio
import json

import pytest

import sdk_params
from modelwire.agent import Agent
from modelwire.errors import UnsupportedOptionError
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.testing import ProviderServer, error_reply, sse_reply
from modelwire.testing import sse as fake
from paths import PA


HI = [UserMsg("u", "hi")]


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def answers(*bodies):
    return [sse_reply(b) for b in bodies]


def tool_turn(resp_id):
    return fake.body(
        "openai-responses",
        ("think", "They want weather."),
        ("tool", "call_1", "weather", '{"city": "Paris"}'),
        resp_id=resp_id,
    )


def text_turn(resp_id, text="Sunny."):
    return fake.body("openai-responses", ("text", text), resp_id=resp_id)


def test_stateless_stores_nothing_and_replays_reasoning_encrypted():
    with ProviderServer() as server:
        server.script(*answers(tool_turn("resp_1"), text_turn("resp_2")))
        model = load_model("openai-responses:o4-mini", api_key="k", base_url=server.url, stateless=True)
        reply = asyncio.run(Agent("a", model, tools=[weather]).reply("Weather in Paris?"))
        first, second = (r["json"] for r in server.requests)
    assert reply.get_text_content().strip() == "Sunny."
    for body in (first, second):
        assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
        sdk_params.streaming_request("openai-responses", body)
    items = second["input"]
    reasoning = [i for i in items if i["type"] == "reasoning"]
    assert reasoning and all(
        r["encrypted_content"].startswith("enc-") and r["id"].startswith("rs_") for r in reasoning
    )  # the pair the API checks
    calls = [i for i in items if i["type"] == "function_call"]
    assert calls and all("id" not in c for c in calls)  # an id the server did not store is a 400
    assert [i["type"] for i in items] == ["message", "reasoning", "function_call", "function_call_output"]


def test_stateless_leaves_out_what_only_the_store_had():
    from modelwire.message import AssistantMsg, TextBlock, ThinkingBlock

    origin = {"openai-responses": {"protocol": "openai-responses", "endpoint": "openai"}}
    stored_reasoning = ThinkingBlock(
        thinking="hm", reasoning_item_raw={"type": "reasoning", "id": "rs_9", "summary": []}, provider_metadata=origin
    )
    said = TextBlock(text="Hello.", item_id="msg_9")
    history = [UserMsg("u", "Hi"), AssistantMsg("a", [stored_reasoning, said]), UserMsg("u", "Again")]
    model = load_model("openai-responses:o4-mini", api_key="k", stateless=True)
    body = model.build_request(history)[0]
    assert [i.get("type") for i in body["input"]] == ["message", "message", "message"]
    assert body["input"][1] == {"type": "message", "role": "assistant", "content": "Hello."}
    sdk_params.streaming_request("openai-responses", body)


def test_chain_sends_only_the_new_items_after_the_stored_response():
    with ProviderServer() as server:
        server.script(*answers(tool_turn("resp_1"), text_turn("resp_2"), text_turn("resp_3", "Cloudy.")))
        model = load_model("openai-responses:o4-mini", api_key="k", base_url=server.url, chain=True)
        agent = Agent("a", model, tools=[weather])

        async def two_replies():
            await agent.reply("Weather in Paris?")
            return await agent.reply("And tomorrow?")

        reply = asyncio.run(two_replies())
        first, second, third = (r["json"] for r in server.requests)
    assert reply.get_text_content().strip() == "Cloudy."
    assert "previous_response_id" not in first and len(first["input"]) == 1
    assert second["previous_response_id"] == "resp_1"
    assert [i["type"] for i in second["input"]] == ["function_call_output"]  # the call and its reasoning are stored
    assert third["previous_response_id"] == "resp_2"
    assert [(i["type"], i.get("role")) for i in third["input"]] == [("message", "user")]
    assert third["tools"] == first["tools"]  # not carried over by the API: sent each time
    for body in (first, second, third):
        sdk_params.streaming_request("openai-responses", body)


def test_chain_sends_the_whole_history_when_the_server_forgot():
    forgot = {
        "error": {
            "message": "Previous response with id 'resp_1' not found.",
            "type": "invalid_request_error",
            "param": "previous_response_id",
            "code": "previous_response_not_found",
        }
    }
    with ProviderServer() as server:
        server.script(sse_reply(tool_turn("resp_1")), error_reply(400, forgot), sse_reply(text_turn("resp_2")))
        model = load_model("openai-responses:o4-mini", api_key="k", base_url=server.url, chain=True)
        reply = asyncio.run(Agent("a", model, tools=[weather]).reply("Weather in Paris?"))
        first, chained, whole = (r["json"] for r in server.requests)
    assert reply.get_text_content().strip() == "Sunny." and reply.finished_reason in (None, "completed")
    assert chained["previous_response_id"] == "resp_1"
    assert "previous_response_id" not in whole
    assert [i["type"] for i in whole["input"]] == ["message", "reasoning", "function_call", "function_call_output"]


def test_the_options_that_need_a_store_are_refused_without_one():
    with pytest.raises(UnsupportedOptionError, match="stateless call stores no response"):
        load_model("openai-responses:o4-mini", api_key="k", stateless=True, chain=True).build_request(HI)
    with pytest.raises(UnsupportedOptionError, match="background") as info:
        load_model("anthropic:claude-sonnet-4-5", api_key="k", background=True).build_request(HI)
    assert info.value.option == "background"
    # A provider that stores nothing: stateless and chain are what happens anyway.
    plain = load_model("anthropic:claude-sonnet-4-5", api_key="k").build_request(HI)[0]
    assert (
        load_model("anthropic:claude-sonnet-4-5", api_key="k", stateless=True, chain=True).build_request(HI)[0] == plain
    )


def test_a_background_stream_that_drops_is_read_again_from_its_cursor():
    first = PA / "test_background_mode_streaming_starting_after_vcr.0.sse"
    if not first.is_file():
        pytest.skip("needs ../shared/recorded-streams")
    recorded = json.loads(first.with_name(first.name.replace(".sse", ".request.json")).read_text())
    body, resumed = first.read_bytes(), first.with_name(first.name.replace(".0.", ".1.")).read_bytes()
    with ProviderServer() as server:
        # The connection drops after the first event (sequence_number 0), as in the recording,
        # whose second interaction is GET .../responses/{id}?starting_after=0&stream=true.
        server.script(sse_reply(body, drop_after=1), sse_reply(resumed))
        model = load_model(
            "openai-responses:gpt-4o", api_key="k", base_url=server.url, background=True, stateless=False
        )
        events = asyncio.run(_events(model, recorded["input"][0]["content"]))
        post, get = server.requests
    assert post["json"]["background"] is True
    assert (
        get["method"] == "GET"
        and get["path"]
        == "/responses/resp_0850765c843cca5300699cc47d93c0819089a181f5feeff8eb?stream=true&starting_after=0"
    )
    text = "".join(e.delta for e in events if e.type == "TEXT_BLOCK_DELTA")
    assert text == "2 + 2 equals 4."
    kinds = [e.type for e in events]
    assert (
        kinds.count("MODEL_CALL_START") == 1
        and kinds[-1] == "MODEL_CALL_END"
        and events[-1].finished_reason == "completed"
    )


async def _events(model, prompt):
    return [e async for e in model.stream(prompt)]
