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
from paths import PA, ROOT

FUNCTION = {
    "name": "get_weather",
    "description": "w",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def tools_sent(spec, tools):
    model = load_model(spec, api_key="k", base_url="http://127.0.0.1:9")
    return model.build_request([UserMsg("u", "Search the news")], tools)[0]


def test_anthropic_gets_its_server_tools_beside_the_functions():
    body = tools_sent(
        "anthropic:claude-sonnet-4-5",
        [
            FUNCTION,
            ServerTool("web_search", max_uses=3, allowed_domains=["example.com"]),
            ServerTool("code_execution"),
            ServerTool("web_fetch"),
        ],
    )
    names = [t["name"] for t in body["tools"]]
    assert names == ["get_weather", "web_search", "code_execution", "web_fetch"]  # never replacing the functions
    assert body["tools"][1] == {
        "type": "web_search_20250305",
        "name": "web_search",
        "max_uses": 3,
        "allowed_domains": ["example.com"],
    }
    sdk_params.streaming_request("anthropic", body)


def test_responses_gets_web_search_and_the_code_interpreter():
    body = tools_sent(
        "openai-responses:gpt-4.1",
        [FUNCTION, ServerTool("web_search", allowed_domains=["example.com"]), ServerTool("code_execution")],
    )
    assert body["tools"][1:] == [
        {"type": "web_search", "filters": {"allowed_domains": ["example.com"]}},
        {"type": "code_interpreter", "container": {"type": "auto"}},
    ]
    sdk_params.streaming_request("openai-responses", body)
    with pytest.raises(FormatError, match="web_fetch"):
        tools_sent("openai-responses:gpt-4.1", [ServerTool("web_fetch")])


def test_gemini_gets_its_own_tools():
    body = tools_sent(
        "google:gemini-2.5-flash",
        [FUNCTION, ServerTool("web_search"), ServerTool("code_execution"), ServerTool("web_fetch")],
    )
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
        agent = Agent(
            "a",
            load_model("anthropic:claude-sonnet-4-5", api_key="k", base_url=server.url),
            tools=[get_weather, ServerTool("web_search")],
        )
        reply = asyncio.run(agent.reply("What is the weather in San Francisco today?"))
        sent = server.requests[0]["json"]
    assert [t["name"] for t in sent["tools"]] == ["get_weather", "web_search"]
    calls = reply.get_content_blocks("tool_call")
    assert calls and all(getattr(c, "server_side", False) for c in calls)  # the provider ran them, not the agent
    assert reply.get_text_content() and len(server.requests) == 1


# -- MCP through the provider ------------------------------------------------------------------

MCP = ROOT / "mcp" / "pydantic-ai"


def test_anthropic_gets_an_mcp_server_as_the_connector_with_its_beta():
    from modelwire.agent import MCPServer

    server = MCPServer.http(
        "https://mcp.deepwiki.com/mcp",
        name="deepwiki",
        headers={"Authorization": "Bearer tok"},
        allowed_tools=["ask_question"],
    )
    body = tools_sent("anthropic:claude-sonnet-4-5", [FUNCTION, server.via_provider()])
    assert body["mcp_servers"] == [
        {"type": "url", "name": "deepwiki", "url": "https://mcp.deepwiki.com/mcp", "authorization_token": "tok"}
    ]
    assert body["tools"][0]["name"] == "get_weather"  # the functions stay
    assert body["tools"][1] == {
        "type": "mcp_toolset",
        "mcp_server_name": "deepwiki",
        "default_config": {"enabled": False},
        "configs": {"ask_question": {"enabled": True}},
    }
    body.pop("stream")
    sdk_params.anthropic_beta_request(body)
    with pytest.raises(FormatError, match="no headers but an Authorization bearer token"):
        tools_sent(
            "anthropic:claude-sonnet-4-5",
            [ServerTool("mcp", url="https://x.example/mcp", name="x", headers={"X-Key": "k"})],
        )
    with pytest.raises(FormatError, match="url and name required"):
        tools_sent("anthropic:claude-sonnet-4-5", [ServerTool("mcp", url="https://x.example/mcp")])


def test_responses_gets_an_mcp_server_as_its_mcp_tool():
    tool = ServerTool(
        "mcp",
        url="https://mcp.deepwiki.com/mcp",
        name="deepwiki",
        allowed_tools=["ask_question"],
        headers={"X-Key": "k"},
        authorization_token="tok",
    )
    body = tools_sent("openai-responses:gpt-4.1", [FUNCTION, tool])
    assert body["tools"][1] == {
        "type": "mcp",
        "server_label": "deepwiki",
        "server_url": "https://mcp.deepwiki.com/mcp",
        "require_approval": "never",
        "allowed_tools": ["ask_question"],
        "headers": {"X-Key": "k"},
        "authorization": "tok",
    }
    sdk_params.streaming_request("openai-responses", body)


@pytest.mark.parametrize(
    "spec", ["google:gemini-2.5-flash", "openai:gpt-4.1", "bedrock:us.amazon.nova-pro-v1:0", "ollama:qwen3"]
)
def test_a_protocol_without_a_connector_refuses_mcp_and_names_the_client(spec):
    with pytest.raises(FormatError, match="runs no server tool 'mcp'.*MCPServer") as info:
        tools_sent(spec, [FUNCTION, ServerTool("mcp", url="https://x.example/mcp", name="x")])
    assert info.value.code == "unsupported-option"


@pytest.mark.parametrize(
    "spec",
    ["bedrock-anthropic:anthropic.claude-sonnet-4-5-20250929-v1:0", "vertex-anthropic:claude-sonnet-4-5@20250929"],
)
def test_claude_on_a_cloud_refuses_the_connector(spec, monkeypatch):
    from modelwire.errors import UnsupportedOptionError

    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    with pytest.raises(UnsupportedOptionError, match="no MCP connector"):
        tools_sent(spec, [ServerTool("mcp", url="https://x.example/mcp", name="x")])


def test_the_agent_runs_a_recorded_anthropic_mcp_conversation():
    path = MCP / "test_anthropic_mcp_servers_stream.0.sse"
    if not path.is_file():
        pytest.skip("needs ../shared/recorded-streams")
    from modelwire.agent import MCPServer

    recorded = json.loads((MCP / "test_anthropic_mcp_servers_stream.0.request.json").read_text())
    deepwiki = MCPServer.http("https://mcp.deepwiki.com/mcp", name="deepwiki", allowed_tools=["ask_question"])
    with ProviderServer() as server:
        server.script(sse_reply(path.read_bytes()))
        model = load_model(
            "anthropic:claude-sonnet-4-5",
            api_key="k",
            base_url=server.url,
            thinking=True,
            thinking_budget=3000,
            max_tokens=4096,
        )
        agent = Agent("a", model, tools=[deepwiki.via_provider()])
        reply = asyncio.run(agent.reply(recorded["messages"][0]["content"][0]["text"]))
        sent = server.requests[0]
    assert sent["headers"]["anthropic-beta"] == "mcp-client-2025-11-20"
    assert sent["json"]["thinking"] == recorded["thinking"] and sent["json"]["max_tokens"] == recorded["max_tokens"]
    assert sent["json"]["mcp_servers"] == [
        {k: v for k, v in recorded["mcp_servers"][0].items() if k != "tool_configuration"}
    ]
    assert sent["json"]["tools"] == [
        {
            "type": "mcp_toolset",
            "mcp_server_name": "deepwiki",
            "default_config": {"enabled": False},
            "configs": {"ask_question": {"enabled": True}},
        }
    ]
    calls = reply.get_content_blocks("tool_call")
    assert [c.name for c in calls] == ["ask_question"] and all(c.server_side for c in calls)
    assert reply.get_content_blocks("tool_result") and reply.get_text_content()
    assert reply.finished_reason in (None, "completed") and len(server.requests) == 1  # the provider ran the tool


def test_the_agent_runs_a_recorded_responses_mcp_conversation():
    path = MCP / "test_openai_responses_model_mcp_list_tools_stream_backfills_missing_results.0.sse"
    if not path.is_file():
        pytest.skip("needs ../shared/recorded-streams")
    recorded = json.loads(path.with_name(path.name.replace(".sse", ".request.json")).read_text())
    tools = [ServerTool("mcp", url=t["server_url"], name=t["server_label"]) for t in recorded["tools"]]
    with ProviderServer() as server:
        server.script(sse_reply(path.read_bytes()))
        agent = Agent(
            "a",
            load_model("openai-responses:gpt-4.1", api_key="k", base_url=server.url),
            system_prompt=recorded["instructions"],
            tools=tools,
        )
        reply = asyncio.run(agent.reply(recorded["input"][0]["content"]))
        sent = server.requests[0]["json"]
    assert sent["tools"] == recorded["tools"]  # what the recorded request sent, key for key
    assert reply.get_text_content() and len(server.requests) == 1
