"""Deferred tools and the providers' own tool search: ``ToolSpec(defer=True)`` (and
``Tool(defer=True)``, ``MCPServer(defer=...)``) sent with ``defer_loading`` and the
provider's search tool, checked against the SDKs' request types; the search and the calls
of the tools it loads decoded like any other; sent as usual, with a note, elsewhere."""

from __future__ import annotations

import asyncio
import json

import pytest

import sdk_params
from modelwire.adapters import encode_sse
from modelwire.agent import Agent, MCPServer, Tool
from modelwire.formatters import ServerTool, ToolSpec
from modelwire.message import UserMsg
from modelwire.testing import FakeModel, sse_reply
from modelwire.testing import sse as fake

WEATHER = ToolSpec(
    "get_weather", "The weather in a city.", {"type": "object", "properties": {"city": {"type": "string"}}}
)
TIME = ToolSpec("get_time", "The time now.", defer=False)
DEFERRED = [ToolSpec(f"crm_{n}", f"CRM action {n}.", defer=True) for n in range(3)] + [
    ToolSpec(WEATHER.name, WEATHER.description, WEATHER.parameters, defer=True)
]


def sent(server, protocol, model, tools):
    server.script(sse_reply(fake.body(protocol, ("text", "ok"))))
    asyncio.run(server.model(protocol, model).complete([UserMsg("user", "hi")], tools=tools))
    return server.requests[-1]["json"]


def test_anthropic_sends_deferred_tools_with_defer_loading_and_adds_its_search_tool(server):
    body = sent(server, "anthropic", "claude-sonnet-4-6", [TIME, *DEFERRED])
    tools = body["tools"]
    assert [t.get("defer_loading") for t in tools[:5]] == [None, True, True, True, True]
    assert tools[5] == {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}
    sdk_params.streaming_request("anthropic", body)
    bm25 = sent(server, "anthropic", "claude-sonnet-4-6", [*DEFERRED, ServerTool("tool_search", variant="bm25")])
    assert [t for t in bm25["tools"] if "type" in t] == [
        {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    ]
    sdk_params.streaming_request("anthropic", bm25)


def test_openai_responses_sends_deferred_functions_and_its_hosted_tool_search(server):
    body = sent(server, "openai-responses", "gpt-5.5", [TIME, *DEFERRED])
    assert [t.get("defer_loading") for t in body["tools"][:5]] == [None, True, True, True, True]
    assert body["tools"][5] == {"type": "tool_search"}
    sdk_params.streaming_request("openai-responses", body)


def test_a_provider_without_tool_search_gets_deferred_tools_as_usual_with_a_note(server, caplog):
    with caplog.at_level("INFO", logger="modelwire.formatters"):
        body = sent(server, "openai-chat", "gpt-4.1", [TIME, *DEFERRED])
    assert [t["function"]["name"] for t in body["tools"]] == ["get_time", "crm_0", "crm_1", "crm_2", "get_weather"]
    assert "no tool search: 4 deferred tool(s) sent as usual" in caplog.text
    sdk_params.streaming_request("openai-chat", body)


def test_a_tool_definition_with_defer_loading_is_a_deferred_spec():
    assert ToolSpec.coerce({"name": "x", "defer_loading": True}).defer is True
    assert ToolSpec.coerce({"type": "function", "function": {"name": "x"}}).defer is False


def anthropic_search_then_call() -> bytes:
    """Claude searching its deferred tools, then calling the one the search loaded (the
    anthropic SDK's ServerToolUseBlock, ToolSearchToolResultBlock with tool_reference)."""
    ev: list[tuple[str, dict]] = []

    def add(kind: str, **data) -> None:
        ev.append((kind, {"type": kind, **data}))

    message = {"id": "msg_s", "type": "message", "role": "assistant", "model": "claude-test", "content": []}
    add("message_start", message={**message, "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 1}})
    call = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_regex", "input": {}}
    add("content_block_start", index=0, content_block=call)
    add("content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": '{"query": "weather"}'})
    add("content_block_stop", index=0)
    result = {
        "type": "tool_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}],
        },
    }
    add("content_block_start", index=1, content_block=result)
    add("content_block_stop", index=1)
    add(
        "content_block_start",
        index=2,
        content_block={"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
    )
    add("content_block_delta", index=2, delta={"type": "input_json_delta", "partial_json": '{"city": "Paris"}'})
    add("content_block_stop", index=2)
    add("message_delta", delta={"stop_reason": "tool_use", "stop_sequence": None}, usage={"output_tokens": 30})
    add("message_stop")
    return encode_sse(ev)


def test_an_agent_runs_a_tool_the_search_loaded_and_sends_the_search_back(server):
    from anthropic.types import ToolSearchToolResultBlock

    ran = []

    def get_weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return "sunny"

    server.script(sse_reply(anthropic_search_then_call()), sse_reply(fake.body("anthropic", ("text", "Sunny."))))
    agent = Agent("bot", model=server.model("anthropic", "claude-sonnet-4-6"), tools=[Tool(get_weather, defer=True)])
    reply = asyncio.run(agent.reply(UserMsg("user", "weather in Paris?")))
    assert ran == ["Paris"] and reply.get_text_content() == "Sunny."
    first = server.requests[0]["json"]
    assert first["tools"][0]["defer_loading"] is True and first["tools"][1]["name"] == "tool_search_tool_regex"
    search_call, search_result, call = [b for b in reply.content if b.type in ("tool_call", "tool_result")][:3]
    assert search_call.server_side and search_call.name == "tool_search_tool_regex"
    ToolSearchToolResultBlock.model_validate(search_result.metadata["provider_block"])
    assert call.name == "get_weather" and json.loads(call.input) == {"city": "Paris"}
    second = server.requests[1]["json"]
    assert [b["type"] for b in second["messages"][1]["content"]] == [
        "server_tool_use",
        "tool_search_tool_result",
        "tool_use",
    ]
    sdk_params.streaming_request("anthropic", second)


def test_an_mcp_servers_tools_can_be_deferred():
    pytest.importorskip("mcp")
    from mcp.server.mcpserver import MCPServer as SDKServer

    notes = SDKServer("notes")

    @notes.tool()
    def add_note(text: str) -> str:
        """Keep a note."""
        return f"kept: {text}"

    @notes.tool()
    def list_notes() -> str:
        """The notes kept."""
        return ""

    model = FakeModel([[("text", "ok")]], protocol="anthropic")

    async def main():
        async with Agent("a", model, tools=[MCPServer(notes, name="notes", defer={"add_note"})]) as agent:
            return await agent.reply("hi")

    asyncio.run(main())
    tools = {t.get("name"): t for t in model.requests[0]["tools"]}
    assert tools["add_note"]["defer_loading"] is True and "defer_loading" not in tools["list_notes"]
    assert "tool_search_tool_regex" in tools
