"""Server tools in one vocabulary: ``ServerTool("web_search")`` beside the function tools,
mapped per protocol (validated by the SDK types), refused by name where a protocol runs none,
and a recorded web-search conversation run by the agent end to end."""

from __future__ import annotations

import asyncio
import json

import pytest

import sdk_params
from modelwire.agent import Agent, ServerTool
from modelwire.errors import FormatError
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.testing import ProviderServer, sse_reply
from paths import PA

FUNCTION = {"name": "get_weather", "description": "w", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}


def tools_sent(spec, tools):
    model = load_model(spec, api_key="k", base_url="http://127.0.0.1:9")
    return model.build_request([UserMsg("u", "Search the news")], tools)[0]


def test_anthropic_gets_its_server_tools_beside_the_functions():
    body = tools_sent("anthropic:claude-sonnet-4-5", [FUNCTION, ServerTool("web_search", max_uses=3, allowed_domains=["example.com"]), ServerTool("code_execution"), ServerTool("web_fetch")])
    names = [t["name"] for t in body["tools"]]
    assert names == ["get_weather", "web_search", "code_execution", "web_fetch"]  # never replacing the functions
    assert body["tools"][1] == {"type": "web_search_20250305", "name": "web_search", "max_uses": 3, "allowed_domains": ["example.com"]}
    sdk_params.streaming_request("anthropic", body)


def test_responses_gets_web_search_and_the_code_interpreter():
    body = tools_sent("openai-responses:gpt-4.1", [FUNCTION, ServerTool("web_search", allowed_domains=["example.com"]), ServerTool("code_execution")])
    assert body["tools"][1:] == [{"type": "web_search", "filters": {"allowed_domains": ["example.com"]}}, {"type": "code_interpreter", "container": {"type": "auto"}}]
    sdk_params.streaming_request("openai-responses", body)
    with pytest.raises(FormatError, match="web_fetch"):
        tools_sent("openai-responses:gpt-4.1", [ServerTool("web_fetch")])


def test_gemini_gets_its_own_tools():
    body = tools_sent("google:gemini-2.5-flash", [FUNCTION, ServerTool("web_search"), ServerTool("code_execution"), ServerTool("web_fetch")])
    assert body["tools"][1:] == [{"googleSearch": {}}, {"codeExecution": {}}, {"urlContext": {}}]
    sdk_params.gemini_request(body)


@pytest.mark.parametrize("spec", ["openai:gpt-4.1", "bedrock:us.amazon.nova-pro-v1:0", "ollama:qwen3"])
def test_a_protocol_without_server_tools_refuses_them_by_name(spec):
    with pytest.raises(FormatError, match="runs no server tool 'web_search'") as info:
        tools_sent(spec, [FUNCTION, ServerTool("web_search")])
    assert info.value.code == "unsupported-option"


def test_a_providers_own_definition_goes_as_given():
    nova = {"systemTool": {"name": "nova_grounding"}}
    body = tools_sent("bedrock:us.amazon.nova-pro-v1:0", [FUNCTION, ServerTool(raw=nova)])
    assert body["toolConfig"]["tools"][-1] == nova
    newer = {"type": "web_search_20260209", "name": "web_search"}
    assert tools_sent("anthropic:claude-opus-4-6", [ServerTool(raw=newer)])["tools"] == [newer]


def test_the_agent_runs_a_recorded_web_search_conversation():
    path = PA / "test_anthropic_model_web_search_tool_stream.0.sse"
    if not path.is_file():
        pytest.skip("needs ../shared/recorded-streams")

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    with ProviderServer() as server:
        server.script(sse_reply(path.read_bytes()))
        agent = Agent("a", load_model("anthropic:claude-sonnet-4-5", api_key="k", base_url=server.url), tools=[get_weather, ServerTool("web_search")])
        reply = asyncio.run(agent.reply("What is the weather in San Francisco today?"))
        sent = server.requests[0]["json"]
    assert [t["name"] for t in sent["tools"]] == ["get_weather", "web_search"]
    calls = reply.get_content_blocks("tool_call")
    assert calls and all(getattr(c, "server_side", False) for c in calls)  # the provider ran them, not the agent
    assert reply.get_text_content() and len(server.requests) == 1
