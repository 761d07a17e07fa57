"""Prompt caching as one option, ``cache=True | "5m" | "1h" | {...}``, mapped per provider
(the payloads checked by the SDKs' own request types), refused where a provider has none,
and the cache report of ``modelwire cassette show --cache``."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

import sdk_params
from modelwire.errors import ConfigError, FormatError, UnsupportedOptionError
from modelwire.message import AssistantMsg, SystemMsg, TextBlock, ThinkingBlock, ToolCallBlock, ToolResultBlock, UserMsg
from modelwire.models import load_model
from modelwire.testing import ProviderServer, Reply, sse_reply
from modelwire.testing import sse as fake
from paths import PA

TOOL = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
CONVERSATION = [
    SystemMsg("system", "You are a weather bot. " * 50),
    UserMsg("user", "Weather in Paris?"),
    AssistantMsg(
        "bot",
        [
            ThinkingBlock(thinking="look it up", signature="sig"),
            ToolCallBlock(id="toolu_1", name="get_weather", input='{"city": "Paris"}'),
            ToolResultBlock(id="toolu_1", name="get_weather", output="sunny", state="success"),
        ],
    ),
]


def sent(spec, cache, messages=CONVERSATION, tools=(TOOL,), **options):
    model = load_model(spec, api_key="k", base_url="http://127.0.0.1:9", cache=cache, **options)
    return model.build_request(messages, list(tools))[0]


def marks(body):
    found = []
    for where, items in (("tools", body.get("tools") or []), ("system", body.get("system") or [])):
        found += [(where, i.get("cache_control")) for i in items if "cache_control" in i]
    for n, turn in enumerate(body["messages"]):
        found += [
            (f"messages[{n}].{b['type']}", b["cache_control"])
            for b in turn["content"]
            if isinstance(b, dict) and "cache_control" in b
        ]
    return found


def test_anthropic_marks_the_tools_the_system_prompt_and_the_rolling_end():
    body = sent("anthropic:claude-sonnet-4-5", True)
    assert marks(body) == [
        ("tools", {"type": "ephemeral"}),
        ("system", {"type": "ephemeral"}),
        ("messages[2].tool_result", {"type": "ephemeral"}),
    ]
    sdk_params.streaming_request("anthropic", body)
    hour = sent("anthropic:claude-sonnet-4-5", "1h")
    assert {json.dumps(m) for _, m in marks(hour)} == {json.dumps({"type": "ephemeral", "ttl": "1h"})}
    sdk_params.streaming_request("anthropic", hour)
    only_history = sent("anthropic:claude-sonnet-4-5", {"system": False, "tools": False})
    assert [w for w, _ in marks(only_history)] == ["messages[2].tool_result"]


def test_anthropic_never_marks_a_thinking_block():
    ends_with_thinking = CONVERSATION[:2] + [
        AssistantMsg("bot", [TextBlock(text="Let me think."), ThinkingBlock(thinking="hm", signature="sig")])
    ]
    body = sent("anthropic:claude-sonnet-4-5", {"system": False, "tools": False}, messages=ends_with_thinking)
    assert marks(body) == [("messages[1].text", {"type": "ephemeral"})]


def test_anthropic_breakpoint_rules_are_checked_before_sending():
    longer = CONVERSATION + [AssistantMsg("bot", "Sunny."), UserMsg("user", "And tomorrow?")]
    with pytest.raises(FormatError, match="5 cache breakpoints.*allows 4") as info:
        sent("anthropic:claude-sonnet-4-5", True, messages=longer, formatter={"cache_last_turns": 3})
    assert info.value.code == "cache-breakpoints"
    # The formatter's own 5-minute breakpoint on the system prompt, then 1-hour ones after it.
    with pytest.raises(FormatError, match="1-hour cache breakpoint comes after a 5-minute one") as info:
        sent("anthropic:claude-sonnet-4-5", {"ttl": "1h", "tools": False}, formatter={"cache_system": True})
    assert info.value.code == "cache-ttl-order"


def test_anthropic_automatic_placement_is_its_top_level_cache_control():
    body = sent("anthropic:claude-sonnet-4-5", {"placement": "provider", "ttl": "1h"})
    assert body["cache_control"] == {"type": "ephemeral", "ttl": "1h"} and marks(body) == []
    sdk_params.streaming_request("anthropic", body)


def test_bedrock_gets_cache_points_in_the_tools_the_system_and_the_messages():
    body = sent("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", "1h")
    point = {"cachePoint": {"type": "default", "ttl": "1h"}}
    assert (
        body["toolConfig"]["tools"][-1] == point
        and body["system"][-1] == point
        and body["messages"][-1]["content"][-1] == point
    )
    sdk_params.bedrock_request(body)
    five = sent("bedrock:us.amazon.nova-pro-v1:0", True)
    assert five["system"][-1] == {"cachePoint": {"type": "default"}}
    sdk_params.bedrock_request(five)


def test_openai_takes_a_key_and_a_lifetime_per_model():
    body = sent("openai:gpt-4.1", {"key": "tenant-42", "ttl": "1h"})
    assert body["prompt_cache_key"] == "tenant-42" and body["prompt_cache_retention"] == "24h"
    sdk_params.streaming_request("openai-chat", body)
    newer = sent("openai-responses:gpt-5.6", {"key": "tenant-42", "ttl": "1h"})
    assert (
        newer["prompt_cache_options"] == {"ttl": "12h"} and "prompt_cache_retention" not in newer
    )  # the model's own lifetimes
    sdk_params.streaming_request("openai-responses", newer)
    plain = sent("openai:gpt-4.1", True)
    assert not {k for k in plain if k.startswith("prompt_cache")}  # OpenAI caches every prefix by itself


def test_a_server_that_caches_on_its_own_takes_cache_true_only():
    body = sent("deepseek:deepseek-chat", True)
    assert not {k for k in body if "cache" in k}
    with pytest.raises(UnsupportedOptionError, match="caches on its own"):
        sent("deepseek:deepseek-chat", "1h")


@pytest.mark.parametrize("spec", ["ollama:qwen3", "groq:openai/gpt-oss-120b", "mistral:mistral-large-latest"])
def test_a_provider_without_prompt_caching_refuses_the_option(spec):
    with pytest.raises(UnsupportedOptionError) as info:
        sent(spec, True)
    assert info.value.option == "cache"


@pytest.mark.parametrize("value", ["2h", 3, {"ttl": "1d"}, {"nope": True}, {"key": ""}])
def test_a_wrong_cache_value_is_a_config_error(value):
    with pytest.raises(ConfigError, match="option cache="):
        load_model("anthropic:claude-sonnet-4-5", api_key="k", cache=value)


def test_a_per_call_false_turns_the_profiles_cache_off():
    model = load_model("anthropic:claude-sonnet-4-5", api_key="k", base_url="http://127.0.0.1:9", cache=True)
    assert marks(model.build_request(CONVERSATION, [TOOL])[0])
    assert marks(model.build_request(CONVERSATION, [TOOL], options={"cache": False})[0]) == []


# -- Gemini: a cachedContent created first ------------------------------------------------------


def cached_content(request):
    if request["path"].endswith("/cachedContents"):
        return Reply(
            body=json.dumps({"name": "cachedContents/abc123", "model": request["json"]["model"]}).encode(),
            headers={"content-type": "application/json"},
        )
    return sse_reply(fake.body("gemini", ("text", "Sunny.")))


def test_gemini_creates_a_cached_content_once_and_names_it():
    with ProviderServer() as server:
        server.respond = cached_content
        model = load_model("google:gemini-2.5-flash", api_key="k", base_url=server.url, cache=True)

        async def twice():
            for _ in range(2):
                await model.complete(CONVERSATION[:2], tools=[TOOL])

        asyncio.run(twice())
        requests = server.requests
    create, first, second = requests
    assert create["path"] == "/v1beta/cachedContents" and create["headers"]["x-goog-api-key"] == "k"
    assert create["json"]["model"] == "models/gemini-2.5-flash" and create["json"]["ttl"] == "300s"
    assert set(create["json"]) == {"model", "systemInstruction", "tools", "ttl"}
    for call in (first, second):  # the fields the cache holds are left out (sent with it, the API answers 400)
        assert call["json"]["cachedContent"] == "cachedContents/abc123"
        assert not {"systemInstruction", "tools", "toolConfig"} & set(call["json"])
        assert call["json"]["contents"][0]["parts"][0]["text"] == "Weather in Paris?"
    _same_as_google_genai(create["json"])


def _same_as_google_genai(body: dict) -> None:
    """The create body equals what google-genai's caches.create sends for the same content."""
    from google import genai
    from google.genai import caches, types

    client = genai.Client(api_key="k")
    config = types.CreateCachedContentConfig(
        system_instruction=types.Content.model_validate(body["systemInstruction"]),
        tools=[types.Tool.model_validate(t) for t in body["tools"]],
        ttl=body["ttl"],
    )
    theirs = caches._CreateCachedContentParameters_to_mldev(
        client._api_client, {"model": "gemini-2.5-flash", "config": config}
    )
    plain = json.loads(
        json.dumps(theirs, default=lambda o: o.model_dump(mode="json", by_alias=True, exclude_none=True))
    )
    assert plain == body


def test_gemini_goes_on_without_a_cache_the_api_refuses(caplog):
    def too_small(request):
        if request["path"].endswith("/cachedContents"):
            error = {
                "error": {
                    "code": 400,
                    "message": "Cached content is too small. total_token_count=12, min_total_token_count=1024",
                    "status": "INVALID_ARGUMENT",
                }
            }
            return Reply(status=400, body=json.dumps(error).encode(), headers={"content-type": "application/json"})
        return sse_reply(fake.body("gemini", ("text", "Sunny.")))

    with ProviderServer() as server:
        server.respond = too_small
        model = load_model("google:gemini-2.5-flash", api_key="k", base_url=server.url, cache="1h")

        async def twice():
            return [await model.complete(CONVERSATION[:2], tools=[TOOL]) for _ in range(2)]

        with caplog.at_level(logging.WARNING, logger="modelwire.models"):
            replies = asyncio.run(twice())
        paths = [r["path"] for r in server.requests]
        calls = [r["json"] for r in server.requests if not r["path"].endswith("/cachedContents")]
    assert paths.count("/v1beta/cachedContents") == 1  # refused once, not asked again
    assert all(r.get_text_content() == "Sunny." for r in replies)
    assert all("systemInstruction" in c and "cachedContent" not in c for c in calls)
    assert "too small" in caplog.text and "goes on without it" in caplog.text


def test_vertex_caches_are_created_under_the_project():
    from modelwire.protocols import get_protocol
    from modelwire.protocols._protocol import CachePlan

    url = "https://aiplatform.googleapis.com/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    where, create = get_protocol("gemini").cache_resource(
        {"systemInstruction": {"parts": [{"text": "s"}]}, "contents": []}, CachePlan(ttl="1h"), url
    )
    assert where == "https://aiplatform.googleapis.com/v1/projects/p/locations/us-central1/cachedContents"
    assert create == {
        "model": "projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro",
        "systemInstruction": {"parts": [{"text": "s"}]},
        "ttl": "3600s",
    }


# -- the cache report -------------------------------------------------------------------------


def anthropic_answer(text, read, written):
    raw = fake.body("anthropic", ("text", text), usage=(7, 3))
    assert b'"input_tokens": 7,' in raw
    return sse_reply(
        raw.replace(
            b'"input_tokens": 7,',
            f'"input_tokens": 7, "cache_read_input_tokens": {read}, "cache_creation_input_tokens": {written},'.encode(),
            1,
        )
    )


def test_the_report_names_what_broke_the_prefix(tmp_path, monkeypatch):
    from modelwire.cassettes import Cassette, use_cassette
    from modelwire.cassettes._show import cache_report

    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    weather, clock = (
        TOOL,
        {"name": "get_time", "description": "The time.", "parameters": {"type": "object", "properties": {}}},
    )
    system = SystemMsg("system", "Be brief.")
    history = [UserMsg("user", "Hi")]
    path = tmp_path / "calls.json"
    with ProviderServer() as server:
        server.script(
            anthropic_answer("one", 0, 900),
            anthropic_answer("two", 900, 50),
            anthropic_answer("three", 0, 950),
            anthropic_answer("four", 0, 950),
            anthropic_answer("five", 0, 950),
        )
        model = load_model("anthropic:claude-sonnet-4-5", base_url=server.url, cache=True)

        async def calls():
            first = await model.complete([system, *history], tools=[weather, clock])
            longer = [*history, first, UserMsg("user", "And now?")]
            await model.complete([system, *longer], tools=[weather, clock])  # the prefix grows: kept
            await model.complete(
                [SystemMsg("system", "Be very brief."), *longer], tools=[weather, clock]
            )  # system changed
            await model.complete(
                [SystemMsg("system", "Be very brief."), *longer], tools=[clock, weather]
            )  # tools reordered
            await model.complete(
                [SystemMsg("system", "Be very brief."), UserMsg("user", "Hello"), *longer[1:]], tools=[clock, weather]
            )  # history rewritten

        with use_cassette(path, "once"):
            asyncio.run(calls())
    lines = cache_report(Cassette.load(path))
    assert (
        lines[1].startswith("[0] anthropic claude-sonnet-4-5: cache read 0, written 900") and "first call" in lines[1]
    )
    assert (
        "cache read 900 (94% of the input), written 50" in lines[2] and "prefix kept (3 parts, 2 new)" in lines[2]
    )  # 900 of 7 + 900 + 50
    import re

    costs = re.search(r"cost \$([0-9.]+), \$([0-9.]+) without the cache", lines[2])
    assert costs and float(costs[1]) < float(costs[2])  # reading 900 tokens from the cache costs less than sending them
    assert "prefix broken at system: the system prompt changed ([0].text changed)" in lines[3]
    assert (
        "prefix broken at tools: the tools were reordered (get_weather, get_time -> get_time, get_weather)" in lines[4]
    )
    assert "prefix broken at messages[0]: the history was rewritten there" in lines[5]


def test_the_report_on_a_recorded_agent_run(tmp_path):
    yaml = PA / "test_complex_agent_run_in_flow.yaml"
    if not yaml.is_file():
        pytest.skip("needs ../shared/recorded-streams")
    from modelwire.cassettes import import_vcr
    from modelwire.cassettes._show import cache_report

    cassette = import_vcr(yaml, tmp_path / "run.json")
    lines = cache_report(cassette)
    # pydantic-ai's three calls of one run: each sends the conversation so far and adds to it.
    assert [line.split(": ", 1)[0] for line in lines[1:]] == [
        "[0] openai-chat gpt-4o",
        "[1] openai-chat gpt-4o",
        "[2] openai-chat gpt-4o",
    ]
    assert "first call (2 prompt parts)" in lines[1]
    assert "prefix kept (2 parts, 2 new)" in lines[2] and "prefix kept (4 parts, 3 new)" in lines[3]


def test_the_cli_prints_the_report(tmp_path):
    import subprocess
    import sys

    yaml = PA / "test_complex_agent_run_in_flow.yaml"
    if not yaml.is_file():
        pytest.skip("needs ../shared/recorded-streams")
    out = tmp_path / "run.json"
    subprocess.run(
        [sys.executable, "-m", "modelwire.cli", "cassette", "import", str(yaml), "-o", str(out)],
        check=True,
        capture_output=True,
    )
    shown = subprocess.run(
        [sys.executable, "-m", "modelwire.cli", "cassette", "show", "--cache", str(out)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert (
        "prompt cache:" in shown
        and "[2] openai-chat gpt-4o: cache read 0, written 0; prefix kept (4 parts, 3 new)" in shown
    )
