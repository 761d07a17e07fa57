"""Signed thinking is bound to the endpoint family that minted it: a conversation that goes
Anthropic -> MiniMax -> Anthropic sends Anthropic only its own signatures."""

from __future__ import annotations

import asyncio
import json

import sdk_params
from modelwire.agent import Agent
from modelwire.message import AssistantMsg, TextBlock, ThinkingBlock, UserMsg, origin
from modelwire.models import load_model
from modelwire.models._http import endpoint_family
from modelwire.models import all_presets
from modelwire.testing import ProviderServer, sse_reply
from modelwire.testing.sse import body as sse_body


def test_each_provider_is_its_own_family_and_any_other_base_url_is_its_host():
    assert endpoint_family(all_presets()["anthropic"], "https://api.anthropic.com") == "anthropic"
    assert endpoint_family(all_presets()["minimax"], "https://api.minimax.io/anthropic/") == "minimax"
    assert endpoint_family(all_presets()["anthropic"], "https://llm-proxy.example.com/v1") == "llm-proxy.example.com"
    model = load_model(
        "anthropic:claude-sonnet-4-5",
        api_key="k",
        base_url="https://llm-proxy.example.com",
        endpoint_family="anthropic",
    )
    assert model.endpoint == "anthropic"  # a proxy in front of Anthropic, declared as such


def test_anthropic_then_minimax_then_anthropic_keeps_each_signature_with_its_maker():
    def turn(server, spec, family, sig, words, agent=None):
        server.script(
            sse_reply(
                sse_body(
                    "anthropic", ("think", f"{family} thinks about {words}.", sig), ("text", f"{family}: {words}.")
                )
            )
        )
        model = load_model(spec, api_key="k", base_url=server.url, endpoint_family=family)
        if agent is None:
            agent = Agent("a", model)
        agent.model = model
        asyncio.run(agent.reply(words))
        return agent, server.requests[-1]["json"]

    with ProviderServer() as anthropic, ProviderServer() as minimax:
        agent, _ = turn(anthropic, "anthropic:claude-sonnet-4-5", "anthropic", "sig-ANTHROPIC-1", "one")
        agent, to_minimax = turn(minimax, "minimax:MiniMax-M2", "minimax", "sig-MINIMAX-1", "two", agent)
        agent, to_anthropic = turn(
            anthropic, "anthropic:claude-sonnet-4-5", "anthropic", "sig-ANTHROPIC-2", "three", agent
        )
        agent, back_to_minimax = turn(minimax, "minimax:MiniMax-M2", "minimax", "sig-MINIMAX-2", "four", agent)
    sent = json.dumps(to_anthropic)
    assert "sig-ANTHROPIC-1" in sent and "sig-MINIMAX-1" not in sent  # its own only
    assert "sig-ANTHROPIC-1" not in json.dumps(to_minimax)
    assert "sig-MINIMAX-1" in json.dumps(back_to_minimax) and "sig-ANTHROPIC-2" not in json.dumps(back_to_minimax)
    for payload in (to_minimax, to_anthropic, back_to_minimax):
        sdk_params.streaming_request("anthropic", payload)
    # The history says where each thinking block was minted.
    thinking = [b for m in agent.context for b in m.content if b.type == "thinking"]
    assert [origin(b).endpoint for b in thinking] == ["anthropic", "minimax", "anthropic", "minimax"]


def test_blocks_without_an_endpoint_keep_the_protocol_rule():
    """History written before endpoints were recorded (or by AgentScope): an Anthropic
    signature goes to any server speaking the protocol, as it always did."""
    legacy = ThinkingBlock(
        thinking="old", signature="sig-OLD", provider_metadata={"anthropic": {"protocol": "anthropic"}}
    )
    messages = [UserMsg("u", "hi"), AssistantMsg("a", [legacy, TextBlock(text="hello")]), UserMsg("u", "again")]
    for spec in ("anthropic:claude-sonnet-4-5", "minimax:MiniMax-M2"):
        body = load_model(spec, api_key="k").build_request(messages)[0]
        assert "sig-OLD" in json.dumps(body), spec


# -- what AgentScope wrote: its Responses reasoning after the output, its Gemini signatures in ids --


def _from_agentscope(*blocks):
    """An assistant turn as AgentScope 2.0.11 stores it, read back through its JSON."""
    from agentscope.message import Msg as ASMsg

    from modelwire.message import Msg

    stored = json.loads(ASMsg(name="agent", role="assistant", content=list(blocks)).model_dump_json())
    return Msg.from_dict(stored)


def test_agentscopes_trailing_reasoning_goes_before_its_output_on_responses():
    from agentscope.message import TextBlock as ASText, ThinkingBlock as ASThinking, ToolCallBlock as ASCall

    from modelwire.message import ToolResultBlock

    raw = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "enc-1"}
    turn = _from_agentscope(
        ASText(text="Checking."),
        ASCall(id="call_1", name="get_weather", input='{"city": "Paris"}'),
        ASThinking(
            thinking="", reasoning_item_id="rs_1", reasoning_item_raw=raw
        ),  # written last, at response.completed
    )
    turn.content.append(ToolResultBlock(id="call_1", name="get_weather", output="sunny", state="success"))
    body = load_model("openai-responses:o4-mini", api_key="k").build_request([UserMsg("u", "Weather?"), turn])[0]
    kinds = [item.get("type") for item in body["input"]]
    assert kinds == ["message", "reasoning", "message", "function_call", "function_call_output"], kinds
    assert body["input"][1]["encrypted_content"] == "enc-1"
    sdk_params.streaming_request("openai-responses", body)


def test_agentscopes_gemini_signature_in_the_call_id_is_sent_as_the_calls_signature():
    import base64

    from agentscope.message import ToolCallBlock as ASCall

    from modelwire.message import ToolResultBlock

    signature = base64.b64encode(b"\x12\x34 real thought signature").decode()
    turn = _from_agentscope(ASCall(id="gemini_ts:" + signature, name="get_weather", input='{"city": "Paris"}'))
    turn.content.append(
        ToolResultBlock(id="gemini_ts:" + signature, name="get_weather", output="sunny", state="success")
    )
    history = [UserMsg("u", "Weather?"), turn]
    body = load_model("google:gemini-2.5-flash", api_key="k").build_request(history)[0]
    (call,) = [p for c in body["contents"] for p in c["parts"] if "functionCall" in p]
    assert call["thoughtSignature"] == signature  # not the placeholder
    sdk_params.gemini_request(body)
    # Elsewhere the id is an id: rewritten where the target refuses its characters.
    anthropic = load_model("anthropic:claude-sonnet-4-5", api_key="k").build_request(history)[0]
    sdk_params.streaming_request("anthropic", anthropic)
    assert signature not in json.dumps(anthropic)


def test_a_base_urls_family_is_its_host_and_port_with_default_ports_left_out():
    anthropic = all_presets()["anthropic"]
    assert endpoint_family(anthropic, "http://127.0.0.1:4000") != endpoint_family(anthropic, "http://127.0.0.1:8000")
    assert endpoint_family(anthropic, "http://127.0.0.1:4000/v1") == endpoint_family(
        anthropic, "http://127.0.0.1:4000/anthropic/"
    )  # path ignored
    assert (
        endpoint_family(anthropic, "https://gw.example.com:443/v1")
        == endpoint_family(anthropic, "https://GW.example.com")
        == "gw.example.com"
    )
    assert endpoint_family(anthropic, "http://gw.example.com:80") == "gw.example.com"
    assert endpoint_family(anthropic, "http://gw.example.com:443") == "gw.example.com:443"  # not http's default
    assert endpoint_family(anthropic, "http://[::1]:4000") == "[::1]:4000"


def test_a_signature_made_at_one_gateway_is_not_replayed_to_another_on_the_same_host():
    """Two local servers on 127.0.0.1 (two ports) stand for two gateways: the thinking
    signature the first minted goes back to the first only."""
    with ProviderServer() as first, ProviderServer() as second:
        first.script(
            sse_reply(sse_body("anthropic", ("think", "Let me see.", "sig-GATEWAY-ONE"), ("text", "One."))),
            sse_reply(sse_body("anthropic", ("text", "Again."))),
        )
        second.script(sse_reply(sse_body("anthropic", ("text", "Two."))))
        agent = Agent("a", load_model("anthropic:claude-sonnet-4-5", api_key="k", base_url=first.url))
        asyncio.run(agent.reply("one"))
        agent.model = load_model("anthropic:claude-sonnet-4-5", api_key="k", base_url=second.url)
        asyncio.run(agent.reply("two"))
        agent.model = load_model("anthropic:claude-sonnet-4-5", api_key="k", base_url=first.url)
        asyncio.run(agent.reply("three"))
        to_second, back_to_first = second.requests[0]["json"], first.requests[1]["json"]
    assert "sig-GATEWAY-ONE" not in json.dumps(to_second)
    assert "sig-GATEWAY-ONE" in json.dumps(back_to_first)
