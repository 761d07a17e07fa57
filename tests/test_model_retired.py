"""A model its provider retired: the table's endpoint entries say when, on that provider's own
API, and which model the provider names in its place (Magistral on Mistral's API:
https://docs.mistral.ai/resources/deprecated, retired 2026-07-31; Claude Sonnet 4 and Opus 4 on
Anthropic's, 2026-06-15), ``check`` reports it, the first call logs it, and a refusal of the
retired id names the successor."""

from __future__ import annotations

import asyncio
import logging

import pytest

from modelwire import errors as E
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.models.capabilities import TODAY, from_table
from modelwire.protocols import ModelCapabilities
from modelwire.testing import sse_reply
from modelwire.testing.server import json_reply
from modelwire.testing.sse import body as sse_body

# Mistral's answer to a model id it does not serve (tmc/langchaingo#1233, 2025-04-23;
# mistralai/mistral-vibe#617, 2026-04-21).
INVALID = {
    "object": "error",
    "message": "Invalid model: magistral-medium-2509",
    "type": "invalid_model",
    "param": None,
    "code": "1500",
}


@pytest.mark.parametrize(
    "spec,retired,successor",
    [
        ("mistral:magistral-medium-2509", "2026-07-31", "mistral-medium-3-5"),
        ("mistral:magistral-medium-latest", "2026-07-31", "mistral-medium-3-5"),
        ("mistral:magistral-small-2509", "2026-07-31", "mistral-small-latest"),
        ("mistral:magistral-small-latest", "2026-07-31", "mistral-small-latest"),
        ("mistral:magistral-medium-2506", "2025-11-30", "mistral-medium-3-5"),
        ("mistral:magistral-small-2507", "2025-11-30", "mistral-small-latest"),
        ("anthropic:claude-sonnet-4-20250514", "2026-06-15", "claude-sonnet-4-6"),
        ("anthropic:claude-sonnet-4-0", "2026-06-15", "claude-sonnet-4-6"),
        ("anthropic:claude-opus-4-20250514", "2026-06-15", "claude-opus-4-8"),
        ("anthropic:claude-opus-4-1-20250805", "2026-08-05", None),
    ],
)
def test_the_table_says_when_the_provider_retired_a_model_and_what_replaces_it(spec, retired, successor):
    caps = load_model(spec, api_key="sk-test").capabilities
    assert (caps.retired, caps.successor) == (retired, successor)
    assert caps.sources["retired"].startswith("table: ")
    if successor is not None:
        provider = spec.split(":", 1)[0]
        assert load_model(f"{provider}:{successor}", api_key="sk-test").capabilities.retired is None
        assert from_table(successor) is not None  # the successor has a row of its own


def test_a_retirement_is_the_providers_own_not_the_clouds():
    # Mistral's API retired Magistral; Bedrock keeps its own calendar, which the table does not state.
    bedrock = load_model(
        "bedrock:mistral.magistral-small-2509-v1:0",
        api_key="sk-test",
        base_url="https://bedrock-runtime.us-east-1.amazonaws.com",
    )
    assert bedrock.capabilities.retired is None
    assert from_table("magistral-medium-2509").retired is None  # the model's row: no endpoint's dates


def test_a_retirement_is_the_providers_own_endpoints_not_a_proxys():
    # An Anthropic-compatible proxy may serve claude-sonnet-4-0 still: Anthropic's date is its API's.
    proxy = load_model("anthropic:claude-sonnet-4-0", api_key="sk-test", base_url="http://127.0.0.1:9")
    assert proxy.capabilities.retired is None
    assert proxy.preflight([UserMsg("user", "hi")]) == []
    declared = load_model(
        "anthropic:claude-sonnet-4-0", api_key="sk-test", base_url="http://127.0.0.1:9", endpoint_family="anthropic"
    )
    assert declared.capabilities.retired == "2026-06-15"  # a proxy a profile counts as Anthropic's own


def test_a_model_in_service_is_not_retired():
    for spec in ("mistral:mistral-medium-3-5", "mistral:mistral-small-latest", "openai:gpt-6-sol"):
        assert load_model(spec, api_key="sk-test").capabilities.retired is None
    assert load_model("anthropic:claude-sonnet-5-5", api_key="sk-test").capabilities.retired is None


@pytest.mark.parametrize("value", ["2026-7-31", "31/07/2026", "2026-07-31T00:00", 20260731])
def test_a_retirement_day_is_written_as_a_day(value):
    with pytest.raises(E.ConfigError, match="YYYY-MM-DD"):
        ModelCapabilities.from_mapping({"retired": value}, "override")


def test_check_names_the_successor():
    model = load_model("mistral:magistral-medium-2509", api_key="sk-test")
    findings = model.preflight([UserMsg("user", "hi")])
    assert [f.rule for f in findings] == ["retired"]
    assert "2026-07-31" in findings[0].message and "mistral:mistral-medium-3-5" in findings[0].message
    assert load_model("mistral:mistral-medium-3-5", api_key="sk-test").preflight([UserMsg("user", "hi")]) == []


def test_a_day_to_come_is_a_deprecation():
    model = load_model("mistral:my-model", api_key="sk-test", capabilities={"retired": "2999-01-01"})
    (finding,) = model.preflight([UserMsg("user", "hi")])
    assert finding.rule == "retired" and "retires it on 2999-01-01" in finding.message


def test_the_refusal_of_a_retired_id_names_the_successor_and_the_first_call_logs_it(server, caplog):
    server.script(json_reply(INVALID, status=400))
    model = server.model("openai-chat", "magistral-medium-2509", preset="mistral", endpoint_family="mistral")

    async def call():
        async for _ in model.stream([UserMsg("user", "hi")]):
            pass

    with caplog.at_level(logging.WARNING, logger="modelwire.models"):
        with pytest.raises(E.ProviderError) as info:
            asyncio.run(call())
    said = str(info.value)
    assert "Invalid model: magistral-medium-2509" in said  # the provider's words, kept
    assert "retired on 2026-07-31" in said and "mistral:mistral-medium-3-5" in said
    assert any("was retired on 2026-07-31" in r.getMessage() for r in caplog.records)


# Anthropic's answers on its own API: a model id it no longer serves (browser-use/browser-use#5085,
# 2026-06-26) and a tool schema it cannot read (anthropics/claude-code#86665, 2026-08-14).
NOT_FOUND = {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-sonnet-4-0"}}
BAD_SCHEMA = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "tools.0.custom.input_schema: JSON schema is invalid. It must match JSON Schema draft 2020-12 "
        "(https://json-schema.org/draft/2020-12). Learn more about tool use at "
        "https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview.",
    },
}


@pytest.fixture
def today():
    """The day the table's retirements are read against, set by the test."""
    tokens = []
    yield lambda day: tokens.append(TODAY.set(day))
    for token in reversed(tokens):
        TODAY.reset(token)


def call(model) -> None:
    async def run():
        async for _ in model.stream([UserMsg("user", "hi")]):
            pass

    asyncio.run(run())


def anthropics(server, name: str = "claude-sonnet-4-0", **options):
    return server.model("anthropic", name, preset="anthropic", endpoint_family="anthropic", **options)


def test_a_day_to_come_is_logged_as_a_deprecation_and_kept_off_a_refusal(server, caplog, today):
    today("2026-07-30")  # the day before Mistral retires Magistral Medium 1.2
    model = server.model("openai-chat", "magistral-medium-2509", preset="mistral", endpoint_family="mistral")
    (finding,) = model.preflight([UserMsg("user", "hi")])
    server.script(sse_reply(sse_body("openai-chat", ("text", "Hello."))), json_reply(INVALID, status=400))
    with caplog.at_level(logging.WARNING, logger="modelwire.models"):
        call(model)
        with pytest.raises(E.ProviderError) as info:
            call(model)
    said = [r.getMessage() for r in caplog.records if "magistral-medium-2509" in r.getMessage()]
    assert said == [finding.message]  # what check says, logged once
    assert "is deprecated: its provider retires it on 2026-07-31" in said[0] and "was retired" not in said[0]
    assert "retired" not in str(info.value)  # not retired yet: the refusal is the provider's words alone
    today("2026-07-31")
    assert "was retired on 2026-07-31" in model.preflight([UserMsg("user", "hi")])[0].message


def test_a_bad_schema_refusal_of_a_retired_model_carries_no_retirement_note(server):
    server.script(json_reply(BAD_SCHEMA, status=400))
    with pytest.raises(E.InvalidRequestError) as info:
        call(anthropics(server))
    said = str(info.value)
    assert "JSON schema is invalid" in said
    assert "retired" not in said and "claude-sonnet-4-6" not in said


def test_a_not_found_of_a_retired_model_names_the_successor(server):
    server.script(json_reply(NOT_FOUND, status=404))
    with pytest.raises(E.InvalidRequestError) as info:
        call(anthropics(server))
    said = str(info.value)
    assert "model: claude-sonnet-4-0" in said  # the provider's words, kept
    assert "was retired on 2026-06-15" in said and "anthropic:claude-sonnet-4-6 in its place" in said


def test_a_not_found_of_a_model_retiring_later_keeps_the_near_names_hint(server):
    # A misspelt id a profile says retires on a day to come: no retirement note, the hint still given.
    server.script(json_reply(NOT_FOUND, status=404))
    with pytest.raises(E.InvalidRequestError) as info:
        call(anthropics(server, "claude-sonet-4-6", capabilities={"retired": "2999-01-01"}))
    said = str(info.value)
    assert "did you mean anthropic:claude-sonnet-4-6?" in said and "retired" not in said


# DeepSeek's 400s, one to a model id it does not serve (langbot-app/LangBot#1643, 2025-09-02), one to
# a request it cannot take (JohnnyZ93/oai-compatible-copilot#202, 2026-04-24): the same type and code.
@pytest.mark.parametrize(
    "words,told",
    [
        ("Model Not Exist", True),
        ("The model `deepseek-v3.1` does not exist or you do not have access to it.", True),
        ("The reasoning_content in the thinking mode must be passed back to the API.", False),
    ],
)
def test_a_400_is_told_of_the_retirement_by_its_words_when_its_type_says_nothing(server, words, told):
    body = {
        "error": {"message": words, "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}
    }
    server.script(json_reply(body, status=400))
    retired = {"retired": "2026-01-01", "successor": "deepseek-chat"}
    model = server.model("openai-chat", "deepseek-v3.1", preset="deepseek", capabilities=retired)
    with pytest.raises(E.InvalidRequestError) as info:
        call(model)
    said = str(info.value)
    assert words in said
    assert ("was retired on 2026-01-01" in said and "deepseek:deepseek-chat in its place" in said) is told
