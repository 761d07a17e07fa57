"""``model.count_tokens``: the provider's own count of the exact request a call would send,
on a local server answering with each provider's count shape. Each counting request is
checked against the SDK's own request type (Anthropic ``MessageCountTokensParams``, OpenAI
``InputTokenCountParams``, botocore's ``CountTokens``, google-genai's types), and carries the
same messages, system prompt and tools as the request it counts."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys

import pytest
import sdk_params

from modelwire.agent import Agent, UsageLimits
from modelwire.errors import AuthenticationError, TokenCountUnavailableError, UpstreamError, UsageLimitExceeded
from modelwire.message import SystemMsg, UserMsg
from modelwire.models import load_model
from modelwire.testing import ProviderServer, error_reply
from modelwire.testing.server import Reply
from modelwire.testing.sse import body as sse_body

TOOLS = [
    {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]
HISTORY = [SystemMsg("system", "Answer briefly."), UserMsg("u", "What is the weather in Paris?")]

# (preset, model, the count's path, the answer's field, environment)
CASES = [
    ("anthropic", "claude-sonnet-4-5", "/v1/messages/count_tokens", "input_tokens", {"ANTHROPIC_API_KEY": "sk-test"}),
    ("openai-responses", "gpt-4.1", "/v1/responses/input_tokens", "input_tokens", {"OPENAI_API_KEY": "sk-test"}),
    (
        "google",
        "gemini-2.5-flash",
        "/v1beta/models/gemini-2.5-flash:countTokens",
        "totalTokens",
        {"GEMINI_API_KEY": "k"},
    ),
    (
        "vertex",
        "gemini-2.5-flash",
        "/v1/projects/p1/locations/global/publishers/google/models/gemini-2.5-flash:countTokens",
        "totalTokens",
        {"GOOGLE_ACCESS_TOKEN": "t", "GOOGLE_CLOUD_PROJECT": "p1"},
    ),
    (
        "bedrock",
        "amazon.nova-pro-v1:0",
        "/model/amazon.nova-pro-v1%3A0/count-tokens",
        "inputTokens",
        {"AWS_BEARER_TOKEN_BEDROCK": "k"},
    ),
    (
        "bedrock-anthropic",
        "anthropic.claude-sonnet-4-5-v1:0",
        "/model/anthropic.claude-sonnet-4-5-v1%3A0/count-tokens",
        "inputTokens",
        {"AWS_BEARER_TOKEN_BEDROCK": "k"},
    ),
    (
        "vertex-anthropic",
        "claude-sonnet-4-5@20250929",
        "/v1/projects/p1/locations/global/publishers/anthropic/models/count-tokens:rawPredict",
        "input_tokens",
        {"GOOGLE_ACCESS_TOKEN": "t", "GOOGLE_CLOUD_PROJECT": "p1"},
    ),
]


def _counting(field: str, counts: list[int]):
    def respond(request):
        if (
            request["path"]
            .split("?")[0]
            .endswith(("count_tokens", "input_tokens", ":countTokens", "/count-tokens", "count-tokens:rawPredict"))
        ):
            return Reply(
                body=json.dumps(
                    {field: counts[0], **({"object": "response.input_tokens"} if field == "input_tokens" else {})}
                ).encode(),
                headers={"content-type": "application/json"},
            )
        return Reply(body=sse_body("anthropic", ("text", "OK")), headers={"content-type": "text/event-stream"})

    return respond


def _model(preset, name, server, monkeypatch, env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return load_model(f"{preset}:{name}", base_url=server.url + ("/v1" if preset == "openai-responses" else ""))


def _check_count_request(preset: str, name: str, body: dict) -> None:
    """The counting request, by the SDK's own request type."""
    import botocore.session
    from botocore.validate import ParamValidator

    if preset == "anthropic":
        from anthropic.types.message_count_tokens_params import MessageCountTokensParams

        sdk_params.check(body, MessageCountTokensParams)
    elif preset == "vertex-anthropic":
        from anthropic.types.message_count_tokens_params import MessageCountTokensParams

        sdk_params.check(body, MessageCountTokensParams)
    elif preset == "openai-responses":
        from openai.types.responses.input_token_count_params import InputTokenCountParams

        sdk_params.check(body, InputTokenCountParams)
    elif preset == "google":
        assert (
            set(body) == {"generateContentRequest"} and body["generateContentRequest"].pop("model") == f"models/{name}"
        )
        sdk_params.gemini_request(body["generateContentRequest"])
    elif preset == "vertex":
        sdk_params.gemini_request(body)
    else:
        shape = (
            botocore.session.Session().get_service_model("bedrock-runtime").operation_model("CountTokens").input_shape
        )
        blobbed = json.loads(json.dumps(body))
        if "invokeModel" in blobbed["input"]:
            blobbed["input"]["invokeModel"]["body"] = base64.b64decode(blobbed["input"]["invokeModel"]["body"])
        report = ParamValidator().validate({"modelId": name, **blobbed}, shape)
        assert not report.has_errors(), report.generate_report()


def _request_part(preset: str, body: dict) -> dict:
    """What of a request is counted: its messages, system prompt and tools."""
    if preset == "google":
        body = body["generateContentRequest"]
    if preset == "bedrock":
        body = body["input"]["converse"]
    if preset == "bedrock-anthropic":
        body = json.loads(base64.b64decode(body["input"]["invokeModel"]["body"]))
    keys = ("messages", "system", "tools", "input", "instructions", "contents", "systemInstruction", "toolConfig")
    return {k: body[k] for k in keys if k in body}


@pytest.mark.parametrize("preset,name,path,field,env", CASES, ids=[c[0] for c in CASES])
def test_the_count_is_the_providers_for_the_exact_request(preset, name, path, field, env, monkeypatch):
    with ProviderServer() as server:
        server.respond = _counting(field, [1234])
        model = _model(preset, name, server, monkeypatch, env)
        counted = asyncio.run(model.count_tokens(HISTORY, tools=TOOLS, options={"max_tokens": 256, "temperature": 0.5}))
        (sent,) = server.requests
        request, _ = model.build_request(HISTORY, TOOLS, None, {"max_tokens": 256, "temperature": 0.5})
    assert counted.input_tokens == 1234 and not counted.estimated and counted.source.endswith(path)
    assert sent["path"].split("?")[0] == path
    body = sent["json"]
    _check_count_request(preset, name, json.loads(json.dumps(body)))
    # The same messages, system prompt and tools as the request it counts; no sampling or limits.
    assert _request_part(preset, body) == _request_part(
        preset, model.wire.count_request(model.url(), request, model.name, model.spec.preset)[1]
    )
    shared = _request_part(preset, body)
    assert (
        shared
        and "Paris" in json.dumps(shared)
        and "get_weather" in json.dumps(shared)
        and "Answer briefly." in json.dumps(shared)
    )
    assert "temperature" not in json.dumps(body) or preset in (
        "bedrock-anthropic",
        "google",
        "vertex",
    )  # there the generation config goes too


def test_counts_are_kept_per_request_body(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with ProviderServer() as server:
        server.respond = _counting("input_tokens", [10])
        model = load_model("anthropic:claude-sonnet-4-5", base_url=server.url)
        asyncio.run(model.count_tokens(HISTORY))
        asyncio.run(model.count_tokens(HISTORY))
        assert len(server.requests) == 1  # the same request: counted once
        asyncio.run(model.count_tokens([*HISTORY, UserMsg("u", "And Rome?")]))
        assert len(server.requests) == 2  # the next turn: one small request


def test_a_provider_without_a_count_says_so_or_estimates_when_asked(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    for name in ("openai:gpt-4.1", "ollama:qwen3:8b"):
        model = load_model(name, base_url="http://127.0.0.1:9/v1")
        with pytest.raises(TokenCountUnavailableError, match="no endpoint that counts"):
            asyncio.run(model.count_tokens(HISTORY))
        guess = asyncio.run(model.count_tokens(HISTORY, tools=TOOLS, estimate=True))
        assert guess.estimated and guess.input_tokens > 10 and "estimate" in guess.source


def test_count_errors_are_typed(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-wrong")
    with ProviderServer() as server:
        server.respond = lambda request: error_reply(
            401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
        )
        model = load_model("anthropic:claude-sonnet-4-5", base_url=server.url)
        with pytest.raises(AuthenticationError, match="invalid x-api-key") as caught:
            asyncio.run(model.count_tokens(HISTORY))
        assert "sk-wrong" not in str(caught.value)
        server.respond = lambda request: Reply(body=b'{"tokens": "many"}', headers={"content-type": "application/json"})
        with pytest.raises(UpstreamError, match="not a count"):
            asyncio.run(model.count_tokens(HISTORY))


def test_usage_limits_count_before_the_request(monkeypatch):
    """A request whose counted input would pass the limit is never sent; one within it is."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    counts = [150]
    with ProviderServer() as server:
        server.respond = _counting("input_tokens", counts)
        model = load_model("anthropic:claude-sonnet-4-5", base_url=server.url)
        agent = Agent("bot", model, limits=UsageLimits(input_tokens=100, count_before_request=True))
        with pytest.raises(UsageLimitExceeded, match=r"input_tokens limit \(150 of 100\)"):
            asyncio.run(agent.reply(UserMsg("u", "hi")))
        assert [r["path"] for r in server.requests] == ["/v1/messages/count_tokens"]  # nothing else was sent
        counts[0] = 50
        reply = asyncio.run(
            Agent("bot", model, limits=UsageLimits(input_tokens=100, count_before_request=True)).reply(
                UserMsg("u", "hello")
            )
        )
        assert reply.error is None and reply.get_text_content().strip() == "OK"
        assert [r["path"] for r in server.requests][-2:] == ["/v1/messages/count_tokens", "/v1/messages"]
    # A provider without a count is refused too, unless an estimate is allowed.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    chat = load_model("openai:gpt-4.1", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(TokenCountUnavailableError, match="no endpoint that counts"):
        asyncio.run(
            Agent("bot", chat, limits=UsageLimits(input_tokens=5, count_before_request=True)).reply(UserMsg("u", "hi"))
        )
    with pytest.raises(UsageLimitExceeded, match="input_tokens limit"):
        asyncio.run(
            Agent(
                "bot", chat, limits=UsageLimits(input_tokens=5, count_before_request=True, estimate_count=True)
            ).reply(UserMsg("u", "hi " * 40))
        )


def test_the_count_command(tmp_path):
    with ProviderServer() as server:
        server.respond = _counting("input_tokens", [77])
        messages = tmp_path / "messages.json"
        messages.write_text(json.dumps([m.to_dict() for m in HISTORY]))
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": server.url, "MODELWIRE_DEBUG": "0"}
        run = subprocess.run(
            [sys.executable, "-m", "modelwire", "count", "-m", "anthropic:claude-sonnet-4-5", str(messages)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
    assert run.returncode == 0 and run.stdout.strip() == "77 input tokens" and "count_tokens" in run.stderr
    run = subprocess.run(
        [sys.executable, "-m", "modelwire", "count", "-m", "openai:gpt-4.1", str(messages)],
        capture_output=True,
        text=True,
        env={**env, "OPENAI_API_KEY": "sk-test"},
        timeout=60,
    )
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert run.returncode != 0 and len(lines) == 1 and "estimate" in lines[0], run.stderr


def test_check_count_says_a_conversation_does_not_fit(tmp_path):
    """``modelwire check --count``: the provider's count against the model's context window."""
    with ProviderServer() as server:
        server.respond = _counting("input_tokens", [250_000])
        messages = tmp_path / "messages.json"
        messages.write_text(json.dumps([m.to_dict() for m in HISTORY]))
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": server.url, "MODELWIRE_DEBUG": "0"}
        args = [
            sys.executable,
            "-m",
            "modelwire",
            "check",
            str(messages),
            "-m",
            "anthropic:claude-sonnet-4-5",
            "--option",
            'capabilities={"context_window": 200000}',
            "--count",
        ]
        run = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
        assert run.returncode == 1, run.stderr
        assert (
            "does not fit anthropic:claude-sonnet-4-5's context window: 250,000 input tokens "
            "(counted by the provider) against 200,000"
        ) in run.stdout
        server.respond = _counting("input_tokens", [1_000])
        assert subprocess.run(args, capture_output=True, text=True, env=env, timeout=60).returncode == 0
