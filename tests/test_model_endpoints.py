"""What a model takes on one endpoint only: the table's ``[[endpoint]]`` entries, laid over the
model's row when it is reached through the providers they name.

GPT-6 and GPT-5.6 take function tools with reasoning on OpenAI's Responses API, and on its Chat
Completions only with ``reasoning_effort: "none"``: OpenAI's own 400 says so ("Function tools
with reasoning_effort are not supported for gpt-6-astra in /v1/chat/completions. To use
function tools, use /v1/responses or set reasoning_effort to 'none'.",
microsoft/foundry-dev-tools#779, 2026-09-13). Each request that goes is checked against the
OpenAI SDK's own request types; each that would break the rule is refused before it is sent,
naming the model and the endpoint, and ``check`` reports it.
"""

from __future__ import annotations

import asyncio

import pytest

import sdk_params
from modelwire.errors import UnsupportedOptionError
from modelwire.formatters import ToolSpec
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.models.capabilities import endpoint_entries, endpoint_rules
from modelwire.testing import sse_reply
from modelwire.testing.sse import body as sse_body

TOOLS = [
    ToolSpec(
        "get_weather",
        "The weather.",
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )
]
AZURE = {"base_url": "https://example-resource.openai.azure.com"}


def build(spec: str, tools=TOOLS, **options) -> dict:
    model = load_model(spec, api_key="sk-test", **options)
    payload, _ = model.build_request([UserMsg("user", "Weather in Paris?")], tools, None)
    return payload


def refused(spec: str, **options) -> str:
    with pytest.raises(UnsupportedOptionError) as info:
        build(spec, **options)
    assert info.value.option == "tools"
    assert info.value.model == spec.split(":", 1)[1]
    assert str(info.value).startswith(spec)  # the endpoint (provider) and the model, named
    return str(info.value)


def check(spec: str, **options) -> list:
    model = load_model(spec, api_key="sk-test", **options)
    return model.preflight([UserMsg("user", "Weather in Paris?")], TOOLS)


def test_every_endpoint_entry_names_its_providers_and_a_source_for_each_field():
    entries = endpoint_entries()
    assert entries
    for providers, patterns, record, family in entries:
        assert providers and patterns and family
        assert set(record.sources) == set(record.known())  # every field backed by a source


@pytest.mark.parametrize("spec", ["openai:gpt-6-sol", "openai:gpt-6-luna", "openai:gpt-5.6-sol"])
def test_tools_while_reasoning_on_chat_completions_are_refused_naming_the_other_endpoint(spec):
    said = refused(spec)
    model = spec.split(":", 1)[1]
    assert f"openai-responses:{model}" in said
    assert "thinking=False" in said  # these models can stop reasoning
    said = refused(spec, reasoning_effort="high")
    assert f"openai-responses:{model}" in said


@pytest.mark.parametrize("spec", ["openai:gpt-6-astra", "openai:gpt-6.1-sol"])
def test_a_model_that_cannot_stop_reasoning_takes_no_tools_on_chat_completions(spec):
    said = refused(spec)
    assert "cannot turn off" in said and "thinking=False" not in said
    assert f"openai-responses:{spec.split(':', 1)[1]}" in said


def test_with_reasoning_off_the_tools_go_on_chat_completions():
    payload = build("openai:gpt-6-sol", thinking=False)
    assert payload["reasoning_effort"] == "none"  # what OpenAI's 400 asks for
    assert payload["tools"][0]["function"]["name"] == "get_weather"
    sdk_params.streaming_request("openai-chat", payload)


@pytest.mark.parametrize(
    "spec", ["openai-responses:gpt-6-sol", "openai-responses:gpt-6-astra", "openai-responses:gpt-5.6-sol"]
)
def test_on_the_responses_api_tools_and_reasoning_go_together(spec):
    payload = build(spec, reasoning_effort="high")
    assert payload["reasoning"]["effort"] == "high"
    assert payload["tools"][0]["name"] == "get_weather"
    sdk_params.streaming_request("openai-responses", payload)
    assert check(spec, reasoning_effort="high") == []


def test_azure_names_its_own_responses_provider():
    said = refused("azure:gpt-6-sol", **AZURE)
    assert "azure-responses:gpt-6-sol" in said


def test_a_gateway_is_not_given_openais_endpoint_rule():
    # OpenRouter's Chat Completions route GPT-6 on their own: the rule is OpenAI's endpoint's.
    assert endpoint_rules("openai/gpt-6-sol", "openrouter") is None
    payload = build("openrouter:openai/gpt-6-sol")
    assert payload["tools"][0]["function"]["name"] == "get_weather"


def test_without_tools_chat_completions_takes_any_effort_the_model_has():
    payload = build("openai:gpt-6-sol", tools=None, reasoning_effort="high")
    assert payload["reasoning_effort"] == "high"
    sdk_params.streaming_request("openai-chat", payload)


def test_gpt_6_1_sol_reaches_max_effort_only_on_the_responses_api():
    with pytest.raises(UnsupportedOptionError) as info:
        build("openai:gpt-6.1-sol", tools=None, reasoning_effort="max")
    assert info.value.option == "reasoning_effort" and "xhigh" in str(info.value)
    payload = build("openai-responses:gpt-6.1-sol", tools=None, reasoning_effort="max")
    assert payload["reasoning"]["effort"] == "max"
    sdk_params.streaming_request("openai-responses", payload)


def test_check_reports_the_tools_once_as_a_tool_use_finding():
    findings = check("openai:gpt-6-sol")
    assert [f.rule for f in findings] == ["tool-use"]
    assert "openai-responses:gpt-6-sol" in findings[0].message
    assert check("openai:gpt-6-sol", thinking=False) == []


def test_a_model_before_the_rule_is_not_given_it():
    # GPT-4.1 takes tools with sampling on Chat Completions; GPT-5.5's row says nothing of it.
    for spec in ("openai:gpt-4.1", "openai:gpt-5.5"):
        payload = build(spec)
        assert payload["tools"][0]["function"]["name"] == "get_weather"


def many_tools(n: int) -> list:
    return [ToolSpec(f"tool_{i}", "A tool.", {"type": "object", "properties": {}}) for i in range(n)]


def test_chat_completions_takes_at_most_128_tools():
    # OpenAI's 400: "Invalid 'tools': array too long. Expected an array with maximum length 128, but got
    # an array with length 325 instead." (param tools; vishalmysore/Tools4AI#16, 2024-05-15)
    payload = build("openai:gpt-4.1", tools=many_tools(128))
    assert len(payload["tools"]) == 128
    sdk_params.streaming_request("openai-chat", payload)
    said = refused("openai:gpt-4.1", tools=many_tools(129))
    assert "at most 128 tools" in said and "129" in said
    findings = load_model("openai:gpt-4.1", api_key="sk-test").preflight([UserMsg("user", "hi")], many_tools(129))
    assert [f.rule for f in findings] == ["tool-use"]


def test_every_endpoint_entry_that_matches_adds_its_fields():
    # GPT-6 Sol on Chat Completions: its own entry (tools only with reasoning off) and the one for any model.
    caps = endpoint_rules("gpt-6-sol", "openai")
    assert caps is not None and (caps.tool_use_thinking, caps.max_tools) == (False, 128)
    caps = endpoint_rules("gpt-6.1-sol", "openai")
    assert caps is not None and caps.effort == ("low", "medium", "high", "xhigh") and caps.max_tools == 128
    assert endpoint_rules("gpt-6-sol", "openai-responses").max_tools is None  # not stated there


# -- the provider's own endpoint only ------------------------------------------------------------
#
# An [[endpoint]] entry states what the provider's own endpoint does: a proxy, a gateway or a local
# server named by base_url (vLLM, an Anthropic-compatible proxy) keeps the model's row without them.


def stream(model, tools) -> None:
    async def call():
        async for _ in model.stream([UserMsg("user", "Weather in Paris?")], tools=tools):
            pass

    asyncio.run(call())


def test_a_local_server_at_openais_preset_is_not_given_openais_tool_limit(server):
    local = load_model("openai:my-local-model", api_key="sk-test", base_url="http://127.0.0.1:8000/v1")
    assert local.capabilities.max_tools is None
    assert len(local.build_request([UserMsg("user", "hi")], many_tools(130), None)[0]["tools"]) == 130
    server.script(sse_reply(sse_body("openai-chat", ("text", "Sunny."))))
    stream(server.model("openai-chat", "my-local-model", preset="openai"), many_tools(130))
    assert len(server.requests[-1]["json"]["tools"]) == 130  # all of them reached the server
    # The same server standing for OpenAI's own endpoint (a profile says so): OpenAI's limit holds.
    own = server.model("openai-chat", "my-local-model", preset="openai", endpoint_family="openai")
    assert own.capabilities.max_tools == 128
    with pytest.raises(UnsupportedOptionError, match="at most 128 tools"):
        stream(own, many_tools(130))
    assert len(server.requests) == 1  # refused before it was sent


def test_a_local_server_is_not_given_openais_rule_on_tools_while_reasoning(server):
    local = load_model("openai:gpt-6-sol", api_key="sk-test", base_url="http://127.0.0.1:8000/v1")
    assert local.capabilities.tool_use_thinking is not False
    server.script(sse_reply(sse_body("openai-chat", ("text", "Sunny."))))
    stream(server.model("openai-chat", "gpt-6-sol", preset="openai", reasoning_effort="high"), TOOLS)
    sent = server.requests[-1]["json"]
    assert sent["reasoning_effort"] == "high" and sent["tools"][0]["function"]["name"] == "get_weather"
    own = server.model("openai-chat", "gpt-6-sol", preset="openai", endpoint_family="openai")
    with pytest.raises(UnsupportedOptionError, match="openai-responses:gpt-6-sol"):
        stream(own, TOOLS)
    assert len(server.requests) == 1


def test_the_presets_own_url_keeps_the_rule_and_azure_its_resource():
    own = load_model("openai:gpt-4.1", api_key="sk-test", base_url="https://api.openai.com/v1/")
    assert own.capabilities.max_tools == 128
    # Azure has no URL of its own: the resource the user names is Azure's endpoint.
    assert load_model("azure:gpt-6-sol", api_key="sk-test", **AZURE).capabilities.tool_use_thinking is False


def test_claude_5_5_on_its_own_endpoint_refuses_the_old_computer_tool_naming_the_toolset(server):
    """The Claude API answers Claude 5.5 with a 400 for ``computer_20251124`` (its computer use
    is the ``computer_toolset_20260801`` toolset): refused before sending, saying which to send;
    the toolset goes, an earlier model takes the old tool, and Bedrock's copy keeps it."""
    from modelwire.formatters import ServerTool

    old = ServerTool(raw={"type": "computer_20251124", "name": "computer", "display_width_px": 1024})
    toolset = ServerTool(raw={"type": "computer_toolset_20260801"})
    own = server.model("anthropic", "claude-sonnet-5-5", endpoint_family="anthropic")
    with pytest.raises(UnsupportedOptionError, match="computer_20251124") as info:
        stream(own, [old])
    assert "computer_toolset_20260801" in str(info.value) and "claude-sonnet-5-5" in str(info.value)
    assert server.requests == []  # refused before it was sent
    server.script(sse_reply(sse_body("anthropic", ("text", "Done."))))
    stream(own, [toolset])
    assert server.requests[-1]["json"]["tools"] == [{"type": "computer_toolset_20260801"}]
    server.script(sse_reply(sse_body("anthropic", ("text", "Done."))))
    stream(server.model("anthropic", "claude-sonnet-4-6", endpoint_family="anthropic"), [old])
    assert server.requests[-1]["json"]["tools"][0]["type"] == "computer_20251124"
    assert load_model("bedrock-anthropic:claude-sonnet-5-5").capabilities.refused_tool_types is None
    (finding,) = [f for f in own.preflight([UserMsg("user", "click OK")], [old]) if f.rule == "tool-use"]
    assert "computer_toolset_20260801" in finding.message
