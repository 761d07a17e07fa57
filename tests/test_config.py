"""Model strings, profiles, environment variables, presets and option mapping."""

from __future__ import annotations

import pytest

from modelwire.formatters import ToolSpec
from modelwire.message import UserMsg
from modelwire.models import all_presets, resolve
from modelwire.errors import ConfigError, UnsupportedOptionError

TOML = """
default = "fast"

[profiles.fast]
model = "openai:gpt-4.1-mini"
temperature = 0.2

[profiles.deep]
model = "anthropic:claude-sonnet-4-5"
max_tokens = 8000
thinking = true

[profiles.alias]
model = "deep"
temperature = 0.5
"""


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "modelwire.toml"
    path.write_text(TOML)
    return path


ENV = {"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a"}


def test_model_strings():
    spec = resolve("anthropic:claude-sonnet-4-5", env=ENV, config_path=None)
    assert (spec.preset.name, spec.protocol, spec.model, spec.api_key, spec.base_url) == (
        "anthropic",
        "anthropic",
        "claude-sonnet-4-5",
        "sk-a",
        "https://api.anthropic.com",
    )
    spec = resolve("openai-responses:o4-mini", env=ENV)
    assert spec.protocol == "openai-responses" and spec.base_url == "https://api.openai.com/v1"
    with pytest.raises(ConfigError, match="unknown provider 'nope'"):
        resolve("nope:x", env=ENV)
    with pytest.raises(ConfigError, match="PROVIDER:MODEL"):
        resolve("anthropic:", env=ENV)


def test_sdk_environment_conventions():
    env = {
        "OPENAI_API_KEY": "k1",
        "OPENAI_BASE_URL": "http://proxy.local/v1/",
        "ANTHROPIC_API_KEY": "k2",
        "ANTHROPIC_BASE_URL": "http://a.local",
    }
    assert resolve("openai:gpt-4.1", env=env).base_url == "http://proxy.local/v1"
    spec = resolve("anthropic:c", env=env)
    assert (spec.api_key, spec.base_url) == ("k2", "http://a.local")
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        resolve("anthropic:c", env={})
    # an explicit key and base URL win
    spec = resolve("anthropic:c", env=env, api_key="mine", base_url="http://x")
    assert (spec.api_key, spec.base_url) == ("mine", "http://x")


def test_profiles_default_and_modelwire_model(config):
    spec = resolve(None, env=ENV, config_path=config)
    assert (spec.preset.name, spec.model, spec.options) == ("openai", "gpt-4.1-mini", {"temperature": 0.2})
    spec = resolve("alias", env=ENV, config_path=config)
    assert spec.model == "claude-sonnet-4-5" and spec.options == {
        "max_tokens": 8000,
        "thinking": True,
        "temperature": 0.5,
    }
    spec = resolve(None, env={**ENV, "MODELWIRE_MODEL": "deep"}, config_path=config)
    assert spec.preset.name == "anthropic"
    spec = resolve(None, env={**ENV, "MODELWIRE_MODEL": "groq:llama-3.3-70b", "GROQ_API_KEY": "g"}, config_path=config)
    assert spec.preset.name == "groq" and spec.base_url == "https://api.groq.com/openai/v1"
    # call options override the profile's
    assert resolve("fast", env=ENV, config_path=config, temperature=0.9).options == {"temperature": 0.9}
    with pytest.raises(ConfigError, match="'missing' is neither"):
        resolve("missing", env=ENV, config_path=config)


def test_pyproject_tool_table(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.modelwire]\ndefault = "deepseek:deepseek-chat"\n'
    )
    from modelwire.models.config import find_config

    (tmp_path / "sub").mkdir()
    found = find_config(tmp_path / "sub")
    assert found == tmp_path / "pyproject.toml"
    spec = resolve(None, env={"DEEPSEEK_API_KEY": "d"}, config_path=found)
    assert spec.preset.dialect["reasoning_field"] == "reasoning_content" and spec.model == "deepseek-chat"


def test_no_model_anywhere_is_a_clear_error():
    with pytest.raises(ConfigError, match="MODELWIRE_MODEL"):
        resolve(None, env={}, config_path=None)


EXPECTED_URLS = {
    "anthropic": ("https://api.anthropic.com", "ANTHROPIC_API_KEY"),
    "openai": ("https://api.openai.com/v1", "OPENAI_API_KEY"),
    "openai-responses": ("https://api.openai.com/v1", "OPENAI_API_KEY"),
    "azure": ("", "AZURE_OPENAI_API_KEY"),
    "deepseek": ("https://api.deepseek.com", "DEEPSEEK_API_KEY"),
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "groq": ("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "together": ("https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "mistral": ("https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "xai": ("https://api.x.ai/v1", "XAI_API_KEY"),
    "moonshot": ("https://api.moonshot.ai/v1", "MOONSHOT_API_KEY"),
    "dashscope": ("https://dashscope.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY"),
    "ollama": ("http://localhost:11434", "OLLAMA_API_KEY"),
    "ollama-openai": ("http://localhost:11434/v1", "OLLAMA_API_KEY"),
    "vllm": ("http://localhost:8000/v1", "VLLM_API_KEY"),
    "lmstudio": ("http://localhost:1234/v1", "LMSTUDIO_API_KEY"),
    "llamacpp": ("http://localhost:8080/v1", "LLAMACPP_API_KEY"),
}


@pytest.mark.parametrize("name", sorted(EXPECTED_URLS))
def test_every_preset(name):
    preset = all_presets()[name]
    assert (preset.base_url, preset.key_env) == EXPECTED_URLS[name]
    env = {preset.key_env: "key-" + name, "AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com"}
    from modelwire.models._http import HTTPModel

    spec = resolve(f"{name}:m1", env=env)
    http = HTTPModel(spec)
    headers = http.headers({})
    if preset.auth == "x-api-key":
        assert headers["x-api-key"] == "key-" + name
    elif preset.auth == "api-key":
        assert headers["api-key"] == "key-" + name
    else:
        assert headers["authorization"] == "Bearer key-" + name
    url = http.url()
    if name == "azure":
        assert url.startswith("https://res.openai.azure.com/openai/deployments/m1/chat/completions?api-version=")
    else:
        assert url.startswith(preset.base_url) and url.endswith(
            {"anthropic": "/v1/messages", "openai-responses": "/responses", "ollama": "/api/chat"}.get(
                preset.protocol, "/chat/completions"
            )
        )
    if not preset.key_required:
        assert resolve(f"{name}:m", env={}).api_key is None  # local servers need no key


def build(spec, options=None, tools=(ToolSpec("f", "", {"type": "object"}),), env=None):
    from modelwire.models._http import HTTPModel

    model = HTTPModel(resolve(spec, env=env or {**ENV, "DEEPSEEK_API_KEY": "d"}))
    payload, _ = model.build_request([UserMsg("u", "hi")], list(tools), None, options)
    return payload


def test_options_mapped_per_provider():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    common = {"max_tokens": 1000, "temperature": 0.1, "top_p": 0.9, "parallel_tool_calls": False}
    a = build("anthropic:c", {**common, "max_tokens": 2000, "stop": ["END"], "thinking_budget": 1024})
    assert (a["max_tokens"], a["temperature"], a["top_p"], a["stop_sequences"]) == (2000, 0.1, 0.9, ["END"])
    assert a["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert a["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert build("anthropic:c")["max_tokens"] == 4096  # Anthropic requires it: a default is sent
    c = build("openai:gpt-5.1", {**common, "stop": "END", "reasoning_effort": "low", "json_schema": schema})
    assert (c["max_completion_tokens"], c["stop"], c["reasoning_effort"], c["parallel_tool_calls"]) == (
        1000,
        ["END"],
        "low",
        False,
    )
    strict = {
        **schema,
        "additionalProperties": False,
        "required": ["a"],
    }  # strict mode: closed, every property required
    assert c["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": strict, "strict": True},
    }
    assert build("deepseek:deepseek-chat", {"max_tokens": 5})["max_tokens"] == 5  # compatible servers use max_tokens
    reasoning = {"max_tokens": 1000, "parallel_tool_calls": False}  # o-series: no sampling parameters
    r = build(
        "openai-responses:o4-mini",
        {**reasoning, "reasoning_effort": "high", "reasoning_summary": "auto", "json_schema": schema},
    )
    assert (r["max_output_tokens"], r["reasoning"], r["parallel_tool_calls"]) == (
        1000,
        {"effort": "high", "summary": "auto"},
        False,
    )
    assert r["text"] == {"format": {"type": "json_schema", "name": "output", "schema": strict, "strict": True}}
    extra = build(
        "openai:gpt-4.1", {"extra_body": {"service_tier": "flex", "stream_options": {"include_obfuscation": False}}}
    )
    assert extra["service_tier"] == "flex" and extra["stream_options"] == {
        "include_usage": True,
        "include_obfuscation": False,
    }


@pytest.mark.parametrize(
    "spec,options,word",
    [
        ("anthropic:c", {"json_schema": {"type": "object"}}, "json_schema"),
        ("anthropic:claude-sonnet-4-5", {"reasoning_effort": "low"}, "reasoning_effort"),
        ("openai:gpt-4.1", {"reasoning_effort": "low"}, "reasoning_effort"),
        ("openai-responses:o4-mini", {"temperature": 0.2}, "temperature"),
        ("anthropic:c", {"max_tokens": 1000, "thinking_budget": 2000}, "thinking_budget"),
        ("openai-responses:o4", {"stop": ["x"]}, "stop"),
        ("openai:gpt-4.1", {"thinking_budget": 100}, "thinking_budget"),
        ("openai:gpt-4.1", {"temprature": 0.1}, "temprature"),
    ],
)
def test_options_a_provider_cannot_honour_are_errors(spec, options, word):
    with pytest.raises(UnsupportedOptionError, match=word):
        build(spec, options)


@pytest.mark.parametrize(
    "options,words",
    [
        ({"temperature": "hot"}, "temperature='hot' must be a number"),
        ({"temperature": 7}, "between 0 and 2"),
        ({"top_p": 1.5}, "between 0 and 1"),
        ({"temperature": float("nan")}, "finite number"),
        ({"top_p": float("inf")}, "finite number"),
        ({"max_tokens": 0}, "at least 1"),
        ({"max_tokens": 2.5}, "whole number"),
        ({"thinking": "yes"}, "must be bool"),
        ({"stop": [1]}, "only str"),
        ({"extra_headers": {"x": 1}}, "only str"),
    ],
)
def test_option_values_are_checked_before_anything_is_sent(options, words):
    from modelwire.errors import ConfigError
    from modelwire.models import load_model

    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        load_model("openai:gpt-4o", api_key="k", **options)
    model = load_model("openai:gpt-4o", api_key="k")
    with pytest.raises(ConfigError, match="must "):
        model.build_request([], options=options)  # per call too


def test_a_misspelt_profile_or_table_gets_a_suggestion(tmp_path):
    from modelwire.errors import ConfigError

    config = tmp_path / "modelwire.toml"
    config.write_text('[profiles.fast]\nmodel = "openai:gpt-4o-mini"\n')
    with pytest.raises(ConfigError, match="did you mean the profile 'fast'"):
        resolve("fsat", config_path=config, env={"OPENAI_API_KEY": "k"})
    config.write_text('[profile.fast]\nmodel = "openai:gpt-4o-mini"\n')
    with pytest.raises(ConfigError, match="unknown key 'profile'; did you mean 'profiles'"):
        resolve("fast", config_path=config, env={"OPENAI_API_KEY": "k"})
