"""Rows for the newest models of each family (to December 2026), each request built from its
source and checked against the SDK's own request types."""

from __future__ import annotations

import pytest

import sdk_params
from modelwire.errors import UnsupportedOptionError
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.models.capabilities import assumed_from


def build(spec: str, **options) -> dict:
    payload, _ = load_model(spec, api_key="sk-test", **options).build_request([UserMsg("user", "hi")])
    return payload


def refused(spec: str, option: str, **options) -> str:
    with pytest.raises(UnsupportedOptionError) as info:
        build(spec, **options)
    assert info.value.option == option and info.value.model == spec.split(":", 1)[1]
    return str(info.value)


# -- GPT-6.2 Sol (https://runware.ai/docs/models/openai-gpt-6-2-sol: reasoning low through max,
# 1,050,000 context, 128,000 output) ----------------------------------------------------------


def test_gpt_6_2_sol_has_a_row_of_its_own():
    assert assumed_from("gpt-6.2-sol") is None
    assert assumed_from("gpt-6.3-sol") == "GPT-6 (other models of the family)"  # the next one, assumed
    caps = load_model("openai-responses:gpt-6.2-sol", api_key="sk-test").capabilities
    assert (caps.context_window, caps.max_output_tokens) == (1_050_000, 128_000)
    assert "runware.ai" in caps.sources["effort"]


@pytest.mark.parametrize("level", ["low", "medium", "high", "xhigh", "max"])
def test_gpt_6_2_sol_takes_efforts_low_through_max(level):
    payload = build("openai-responses:gpt-6.2-sol", reasoning_effort=level)
    assert payload["reasoning"]["effort"] == level
    sdk_params.streaming_request("openai-responses", payload)


def test_gpt_6_2_sol_cannot_stop_reasoning_nor_take_sampling():
    assert "always reasons" in refused("openai:gpt-6.2-sol", "thinking", thinking=False)
    refused("openai-responses:gpt-6.2-sol", "reasoning_effort", reasoning_effort="minimal")
    refused("openai-responses:gpt-6.2-sol", "temperature", temperature=0.2)
    refused("openai-responses:gpt-6.2-sol", "max_tokens", max_tokens=200_000)


# -- Gemini 4 Argon (https://ai.google.dev/gemini-api/docs/generate-content/latest-model: thinking
# levels low, medium, high; a 1,048,576-token window; 65,536 output tokens a request) ----------


@pytest.mark.parametrize("level", ["low", "medium", "high"])
def test_gemini_4_argon_takes_its_three_thinking_levels(level):
    payload = build("google:gemini-4-argon", reasoning_effort=level)
    assert payload["generationConfig"]["thinkingConfig"] == {"thinkingLevel": level.upper()}
    sdk_params.streaming_request("gemini", payload)


def test_gemini_4_argon_refuses_what_its_page_does_not_list():
    assert "low, medium, high" in refused("google:gemini-4-argon", "reasoning_effort", reasoning_effort="minimal")
    refused("google:gemini-4-argon", "thinking", thinking=False)
    refused("google:gemini-4-argon", "thinking_budget", thinking_budget=2048)
    assert "65536" in refused("google:gemini-4-argon", "max_tokens", max_tokens=100_000)


def test_gemini_4_has_rows_and_a_newer_version_is_assumed():
    assert assumed_from("gemini-4-argon") is None
    assert assumed_from("gemini-4.1-argon") == "Gemini 4 (other models of the family)"


# -- GPT-6.1 Terra (https://developers.openai.com/api/docs/models/gpt-6.1-terra: effort none to max,
# medium by default; 1,050,000 context, 128,000 output; cache writes kept 30 minutes or 12 hours) --


def test_gpt_6_1_terra_has_a_row_of_its_own():
    assert assumed_from("gpt-6.1-terra") is None
    caps = load_model("openai-responses:gpt-6.1-terra", api_key="sk-test").capabilities
    assert (caps.context_window, caps.max_output_tokens, caps.cache_ttls) == (1_050_000, 128_000, ("30m", "12h"))


@pytest.mark.parametrize("level", ["low", "medium", "high", "xhigh", "max"])
def test_gpt_6_1_terra_takes_efforts_low_through_max(level):
    payload = build("openai-responses:gpt-6.1-terra", reasoning_effort=level)
    assert payload["reasoning"]["effort"] == level
    sdk_params.streaming_request("openai-responses", payload)


def test_gpt_6_1_terra_takes_sampling_only_with_reasoning_off():
    payload = build("openai-responses:gpt-6.1-terra", thinking=False, temperature=0.2)
    assert payload["reasoning"]["effort"] == "none" and payload["temperature"] == 0.2
    sdk_params.streaming_request("openai-responses", payload)
    refused("openai-responses:gpt-6.1-terra", "temperature", temperature=0.2)
