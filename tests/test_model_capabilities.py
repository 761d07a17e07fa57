"""Per-model capabilities: the shipped table, and requests shaped for today's models.

Each request is checked against the official SDKs' own request types (``sdk_params``),
against real recorded requests of current models where ``../shared`` has them, and
against the SDKs' strict-schema helpers; what a model refuses is refused before sending,
with the option and the model named.
"""

from __future__ import annotations

import json
from typing import Optional

import pytest
from pydantic import BaseModel, Field

import sdk_params
from modelwire.errors import ConfigError
from modelwire.formatters import ToolSpec
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.errors import UnsupportedOptionError
from modelwire.models.capabilities import from_table, normalize, table_entries
from paths import ROOT

KEYS = {"api_key": "sk-test"}
TOOLS = [
    ToolSpec(
        "get_weather",
        "The weather.",
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )
]
BEDROCK = "https://bedrock-runtime.us-east-1.amazonaws.com"


def body(spec: str, tools=None, tool_choice=None, capabilities=None, **options):
    base = {"base_url": BEDROCK} if spec.startswith("bedrock:") else {}
    model = load_model(spec, **KEYS, **base, **({"capabilities": capabilities} if capabilities else {}), **options)
    payload, _ = model.build_request([UserMsg("user", "What is 2+2?")], tools, tool_choice)
    return payload


def refused(spec: str, option: str, **kw) -> str:
    with pytest.raises(UnsupportedOptionError) as info:
        body(spec, **kw)
    assert info.value.option == option
    assert spec.split(":", 1)[1] in str(info.value)  # the model is named
    return str(info.value)


def recorded(name: str) -> dict:
    path = ROOT / name
    if not path.is_file():
        pytest.skip("needs ../shared/recorded-streams")
    return json.loads(path.read_text())


# -- the table ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model,family",
    [
        ("claude-opus-4-7", "Claude Opus 4.8, Opus 4.7"),
        ("us.anthropic.claude-opus-4-7-v1:0", "Claude Opus 4.8, Opus 4.7"),  # Bedrock
        ("claude-opus-4-7@20260416", "Claude Opus 4.8, Opus 4.7"),  # Vertex
        ("anthropic/claude-opus-4.7", "Claude Opus 4.8, Opus 4.7"),  # OpenRouter
        ("claude-opus-4-6", "Claude Opus 4.6"),
        ("global.anthropic.claude-sonnet-4-6", "Claude Sonnet 4.6"),
        ("claude-opus-4-5-20251101", "Claude Opus 4.5"),
        ("claude-haiku-4-5-20251001", "Claude Sonnet 4.5, Haiku 4.5"),
        ("claude-opus-4-1-20250805", "Claude Opus 4.1"),
        ("claude-sonnet-4-20250514", "Claude Opus 4, Sonnet 4, Sonnet 3.7"),
        ("claude-3-7-sonnet-20250219", "Claude Opus 4, Sonnet 4, Sonnet 3.7"),
        ("claude-3-5-haiku-latest", "Claude 3 / 3.5"),
        ("claude-fable-5-1", "Claude Fable 5.1"),
        ("claude-fable-5", "Claude Fable 5 / Mythos 5"),
        ("claude-opus-5-5", "Claude Opus 5.5"),
        ("us.anthropic.claude-opus-5-5-v1:0", "Claude Opus 5.5"),
        ("claude-opus-5", "Claude Opus 5"),
        ("claude-sonnet-5", "Claude Sonnet 5"),
        ("mistral.mistral-large-2407-v1:0", "Mistral Large, Medium, Small, Pixtral"),  # Bedrock
        ("mistral-medium-3-5@2604", "Mistral Medium 3.5"),  # Vertex
        ("magistral-medium-latest", "Magistral"),
        ("us.amazon.nova-micro-v1:0", "Amazon Nova Micro"),
        ("amazon.nova-2-lite-v1:0", "Amazon Nova Lite, Pro, Premier"),
        ("us.meta.llama4-maverick-17b-instruct-v1:0", "Meta Llama 4"),
        ("openai.gpt-oss-120b-1:0", "gpt-oss"),
        ("gemini-2.5-flash-lite", "Gemini 2.5 Flash-Lite"),
        ("gpt-5-2025-08-07", "GPT-5"),
        ("gpt-5.2-2025-12-11", "GPT-5.2 to 5.5"),
        ("gpt-5.1", "GPT-5.1"),
        ("gpt-5.1-chat-latest", "GPT-5.x chat variants (fixed reasoning)"),
        ("o4-mini", "OpenAI o-series"),
        ("gpt-4.1-mini", "GPT-4.1, GPT-4o"),
        ("gemini-3-pro-preview", "Gemini 3 Pro"),
        ("deepseek-reasoner", "DeepSeek reasoner"),
        ("deepseek-v3.2", "DeepSeek chat and others"),
    ],
)
def test_a_model_id_in_any_clouds_spelling_finds_its_family(model, family):
    record = from_table(model)
    assert record is not None, normalize(model)
    assert record.sources and all(source.startswith(f"table: {family}: ") for source in record.sources.values())


def test_every_table_entry_names_its_sources_and_is_reachable():
    from modelwire.models import capabilities

    entries = table_entries()
    data = __import__("tomllib").loads(capabilities._TABLE.read_text())["model"]
    assert len(data) == len(entries)
    for raw, (patterns, _record, family) in zip(data, entries):
        assert raw["source"] and all(s["says"] and s["backs"] for s in raw["source"]), family
        # An entry the ones before it shadow entirely would never be used.
        literal = next((p for p in patterns if "*" not in p), patterns[0].replace("*", "x"))
        assert all(s.startswith(f"table: {family}: ") for s in from_table(literal).sources.values()), (family, literal)
    assert from_table("kimi-k2-thinking") is None and from_table("my-own-model") is None


def test_the_compiled_table_is_the_written_one():
    """``capabilities.json`` (what a first call reads) holds exactly ``capabilities.toml``'s
    entries; after an edit of the TOML, ``python -m modelwire.models.capabilities`` writes it."""
    import json
    import tomllib

    from modelwire.models import capabilities

    written = tomllib.loads(capabilities._TABLE.read_text(encoding="utf-8"))
    compiled = json.loads(capabilities._COMPILED.read_text(encoding="utf-8"))
    assert compiled == written, "capabilities.json is stale: run python -m modelwire.models.capabilities"
    assert capabilities.compile_table() == capabilities._COMPILED.read_bytes()


def test_overrides_are_checked_and_win(server):
    with pytest.raises(ConfigError, match="did you mean 'structured_output'"):
        load_model("anthropic:claude-test", **KEYS, capabilities={"structured_outputs": True})
    with pytest.raises(ConfigError, match="effort"):
        load_model("anthropic:claude-test", **KEYS, capabilities={"effort": ["loud"]})
    caps = load_model("anthropic:claude-opus-4-7", **KEYS, capabilities={"sampling": True}).capabilities
    assert caps.sampling is True and caps.sources["sampling"] == "capabilities of anthropic:claude-opus-4-7"
    assert caps.thinking == ("adaptive",) and caps.sources["thinking"].startswith("table:")


# -- Claude: thinking, effort, display ---------------------------------------------------------


def test_opus_47_request_is_the_one_recorded_against_the_real_api():
    sent = recorded("anthropic-adaptive/pydantic-ai/test_anthropic_opus_47_features.0.request.json")
    mine = body("anthropic:claude-opus-4-7", thinking=True, reasoning_effort="xhigh", max_tokens=4096)
    # display "summarized" is asked for by modelwire itself: Opus 4.7 omits thinking by default.
    assert (mine["thinking"], mine["output_config"], mine["max_tokens"]) == (
        sent["thinking"],
        sent["output_config"],
        sent["max_tokens"],
    )
    sdk_params.streaming_request("anthropic", mine)


def test_opus_46_takes_adaptive_thinking_and_shows_it_by_default():
    sent = recorded("anthropic-adaptive/pydantic-ai/test_anthropic_opus_46_features_adaptive-thinking.0.request.json")
    mine = body("anthropic:claude-opus-4-6", thinking=True, max_tokens=4096)
    assert mine["thinking"] == sent["thinking"] == {"type": "adaptive"}
    sdk_params.streaming_request("anthropic", mine)
    # And a forced tool goes with adaptive thinking, as the recorded request did.
    forced = recorded(
        "anthropic-adaptive/pydantic-ai/test_anthropic_opus_46_adaptive_thinking_accepts_tool_output_unified.0.request.json"
    )
    mine = body("anthropic:claude-opus-4-6", TOOLS, "required", thinking=True, reasoning_effort="high")
    assert (mine["thinking"], mine["output_config"], mine["tool_choice"]) == (
        forced["thinking"],
        forced["output_config"],
        forced["tool_choice"],
    )


def test_effort_levels_a_model_lacks_are_refused_before_sending():
    error = recorded(
        "anthropic-adaptive/pydantic-ai/test_anthropic_explicit_effort_xhigh_unsupported_model_errors.0.error.json"
    )
    message = refused("anthropic:claude-opus-4-6", "reasoning_effort", reasoning_effort="xhigh")
    # The levels named are the ones the real API listed when it refused the same request.
    api_levels = set(error["error"]["message"].split("Supported levels: ")[1].rstrip(".").split(", "))
    assert set(message.split("it takes ")[1].split(", ")) == api_levels
    assert "xhigh" in body("anthropic:claude-opus-4-7", reasoning_effort="xhigh")["output_config"]["effort"]
    refused("anthropic:claude-sonnet-4-5", "reasoning_effort", reasoning_effort="high")  # no effort on Sonnet 4.5
    refused("anthropic:claude-opus-4-5", "reasoning_effort", reasoning_effort="max")
    assert body("anthropic:claude-opus-4-5", reasoning_effort="high")["output_config"] == {"effort": "high"}


def test_budget_and_adaptive_forms_follow_the_model():
    assert "adaptive thinking only" in refused("anthropic:claude-opus-4-7", "thinking_budget", thinking_budget=2000)
    assert body("anthropic:claude-opus-4-6", thinking_budget=2000)["thinking"] == {
        "type": "enabled",
        "budget_tokens": 2000,
    }  # still taken
    assert body("anthropic:claude-sonnet-4-5", thinking=True)["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert (
        body("anthropic:claude-test", thinking=True)["thinking"]["type"] == "enabled"
    )  # an unknown model: the protocol's form
    assert "does not think" in refused("anthropic:claude-3-5-haiku-latest", "thinking", thinking=True)
    refused("anthropic:claude-sonnet-4-5", "thinking_budget", thinking_budget=512)  # below the least Claude takes
    for spec, kw in [
        ("anthropic:claude-opus-4-7", {"thinking": True}),
        ("anthropic:claude-sonnet-4-5", {"thinking": True}),
        ("anthropic:claude-opus-4-6", {"thinking_budget": 2000}),
    ]:
        sdk_params.streaming_request("anthropic", body(spec, **kw))


def test_thinking_display():
    assert body("anthropic:claude-opus-4-6", thinking=True, thinking_display="omitted")["thinking"] == {
        "type": "adaptive",
        "display": "omitted",
    }
    assert body("anthropic:claude-opus-4-7", thinking=True, thinking_display="omitted")["thinking"] == {
        "type": "adaptive",
        "display": "omitted",
    }
    sdk_params.streaming_request(
        "anthropic", body("anthropic:claude-sonnet-4-5", thinking=True, thinking_display="summarized")
    )
    refused("anthropic:claude-opus-4-7", "thinking_display", thinking_display="summarized")  # thinking is off
    with pytest.raises(ConfigError, match="thinking_display"):
        load_model("anthropic:claude-opus-4-7", **KEYS, thinking_display="full")


def test_sampling_parameters_are_refused_where_the_model_dropped_them():
    refused("anthropic:claude-opus-4-7", "temperature", temperature=0.5)
    refused("anthropic:claude-fable-5", "top_p", top_p=0.9)
    refused("openai:o4-mini", "temperature", temperature=0.5)
    assert body("anthropic:claude-opus-4-6", temperature=0.5)["temperature"] == 0.5


def test_the_claude_5_rules_users_met_are_refused_before_sending():
    """What Claude Opus 5.5 and Fable 5.1 answered 400 to, as users reported it: thinking off,
    and on Opus 5.5 a forced tool; on the Opus 4.7-and-later family, a forced tool while it
    thinks (Anthropic's extended-thinking docs). Each refused before sending, naming option and model."""
    assert "always thinks" in refused("anthropic:claude-opus-5-5", "thinking", thinking=False)
    assert "always thinks" in refused("anthropic:claude-fable-5-1", "thinking", thinking=False)
    assert "cannot be made to call a tool" in refused(
        "anthropic:claude-opus-5-5", "tool_choice", tools=TOOLS, tool_choice="required"
    )
    assert "while it thinks" in refused(
        "anthropic:claude-opus-5", "tool_choice", tools=TOOLS, tool_choice="required", thinking=True
    )
    assert body("anthropic:claude-opus-5", thinking=False)["thinking"] == {
        "type": "disabled"
    }  # Opus 5 itself takes it off
    assert body("anthropic:claude-opus-5", TOOLS, "required")["tool_choice"] == {
        "type": "any"
    }  # and a forced tool without thinking
    # Opus 5 and Sonnet 5 think unasked: how they show it can be asked alone (it was refused),
    # as a model that always thinks can be.
    assert body("anthropic:claude-sonnet-5", thinking_display="summarized")["thinking"] == {
        "type": "adaptive",
        "display": "summarized",
    }
    refused("anthropic:claude-opus-4-7", "thinking_display", thinking_display="summarized")  # it thinks only when asked
    # A model that always thinks shows its thinking when asked, without thinking=True (refused before).
    shown = body("anthropic:claude-opus-5-5", thinking_display="summarized")
    assert shown["thinking"] == {"type": "adaptive", "display": "summarized"}
    sdk_params.streaming_request("anthropic", shown)


def test_a_forced_tool_with_thinking_is_refused_where_the_model_refuses_it():
    assert "while it thinks" in refused(
        "anthropic:claude-sonnet-4-5", "tool_choice", tools=TOOLS, tool_choice="required", thinking=True
    )
    # A Claude model the table does not know: the protocol's own rule (no forcing on a budget).
    assert "on a budget" in refused(
        "anthropic:claude-test", "tool_choice", tools=TOOLS, tool_choice="required", thinking=True
    )
    refused("anthropic:claude-sonnet-4-5", "tool_choice", tools=TOOLS, tool_choice="get_weather", thinking_budget=2000)
    refused("anthropic:claude-fable-5-1", "tool_choice", tools=TOOLS, tool_choice="required")  # never forced
    refused("deepseek:deepseek-reasoner", "tool_choice", tools=TOOLS, tool_choice="required")  # it always thinks
    refused("deepseek:deepseek-chat", "tool_choice", tools=TOOLS, tool_choice="required", thinking=True)
    assert body("deepseek:deepseek-chat", TOOLS, "required")["tool_choice"] == "required"  # fine without thinking
    assert body("anthropic:claude-sonnet-4-5", TOOLS, "required")["tool_choice"] == {"type": "any"}
    refused(
        "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "tool_choice",
        tools=TOOLS,
        tool_choice="required",
        thinking=True,
    )


def test_bedrock_claude_gets_the_same_thinking_as_the_recorded_request():
    sent = recorded(
        "anthropic-adaptive/pydantic-ai/test_bedrock_model_thinking_part_anthropic_adaptive_effort.0.request.json"
    )
    mine = body("bedrock:us.anthropic.claude-sonnet-4-6", thinking=True, reasoning_effort="high")
    assert mine["additionalModelRequestFields"] == sent["additionalModelRequestFields"]
    sdk_params.bedrock_request(mine)
    opus = body("bedrock:global.anthropic.claude-opus-4-7", thinking=True)["additionalModelRequestFields"]
    assert opus == {"thinking": {"type": "adaptive", "display": "summarized"}}
    assert "adaptive thinking only" in refused(
        "bedrock:global.anthropic.claude-opus-4-7", "thinking_budget", thinking_budget=2000
    )
    refused("bedrock:us.amazon.nova-micro-v1:0", "thinking_display", thinking_display="summarized")


# -- structured output ------------------------------------------------------------------------


class Address(BaseModel):
    street: str
    city: str = "Paris"


class Person(BaseModel):
    """Someone."""

    name: str = Field(description="full name")
    age: Optional[int] = None
    tags: list[str] = []
    home: Address
    others: list[Address] = Field(default_factory=list)


def test_openai_gets_the_strict_schema_the_sdk_would_write():
    from openai.lib._pydantic import to_strict_json_schema

    schema = Person.model_json_schema()
    chat = body("openai:gpt-4.1", json_schema=schema)["response_format"]["json_schema"]
    assert chat["strict"] is True and chat["schema"] == to_strict_json_schema(Person)
    responses = body("openai-responses:gpt-5.1", json_schema=schema)
    assert (
        responses["text"]["format"]["schema"] == to_strict_json_schema(Person)
        and responses["text"]["format"]["strict"] is True
    )
    sdk_params.streaming_request("openai-chat", body("openai:gpt-4.1", json_schema=schema))
    sdk_params.streaming_request("openai-responses", responses)
    assert schema == Person.model_json_schema()  # the user's schema is not changed


def test_a_schema_strict_mode_cannot_express_goes_unenforced():
    class Scores(BaseModel):
        by_name: dict[str, int]

    sent = body("openai:gpt-4.1", json_schema=Scores.model_json_schema())["response_format"]["json_schema"]
    assert sent["strict"] is False and sent["schema"] == Scores.model_json_schema()


def test_claude_gets_native_structured_output_with_the_schema_the_sdk_would_write():
    from anthropic.lib._parse._transform import transform_schema

    sent = body("anthropic:claude-opus-4-7", json_schema=Person.model_json_schema())
    assert sent["output_config"] == {"format": {"type": "json_schema", "schema": transform_schema(Person)}}
    sdk_params.streaming_request("anthropic", sent)
    both = body("anthropic:claude-opus-4-6", json_schema=Person.model_json_schema(), reasoning_effort="low")
    assert set(both["output_config"]) == {"format", "effort"}
    refused("anthropic:claude-sonnet-4-20250514", "json_schema", json_schema={"type": "object"})  # not on Sonnet 4
    refused("anthropic:minimax-m2", "json_schema", json_schema={"type": "object"})  # not known: not sent
    said = body(
        "anthropic:minimax-m2",
        json_schema={"type": "object", "properties": {}},
        capabilities={"structured_output": True},
    )
    assert said["output_config"]["format"]["schema"] == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


def test_bedrock_claude_structured_output_is_the_recorded_one():
    sent = recorded("bedrock/pydantic-ai__test_bedrock_native_output_stream.0.request.json")
    recorded_format = sent["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
    schema = json.loads(recorded_format["schema"])
    loose = {k: v for k, v in schema.items() if k != "additionalProperties"}  # as a user would write it
    mine = body("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", json_schema=loose, json_schema_name="CityInfo")
    assert json.loads(mine["outputConfig"]["textFormat"]["structure"]["jsonSchema"]["schema"]) == schema
    sdk_params.bedrock_request(mine)
    refused("bedrock:us.anthropic.claude-sonnet-4-20250514-v1:0", "json_schema", json_schema=loose)


def test_recorded_structured_output_requests_are_what_modelwire_sends():
    folder = ROOT / "structured-output"
    if not folder.is_dir():
        pytest.skip("needs ../shared/recorded-streams")
    checked = 0
    for path in sorted(folder.rglob("*.request.json")):
        sent = json.loads(path.read_text())
        fmt = (
            (sent.get("output_config") or {}).get("format")
            or ((sent.get("response_format") or {}).get("json_schema"))
            or ((sent.get("text") or {}).get("format"))
        )
        if not fmt or "schema" not in fmt:
            continue
        schema = fmt["schema"]
        # The schema a real client sent (already strict) is sent unchanged by modelwire.
        if "output_config" in sent:
            mine = body("anthropic:claude-sonnet-4-5", json_schema=schema)["output_config"]["format"]["schema"]
        else:
            spec = "openai:gpt-4.1" if "response_format" in sent else "openai-responses:gpt-4.1"
            out = body(spec, json_schema=schema)
            mine = (out.get("response_format") or {}).get("json_schema", {}).get("schema") or out["text"]["format"][
                "schema"
            ]
        assert _without_descriptions(mine) == _without_descriptions(schema), path.name
        checked += 1
    assert checked >= 2


def _without_descriptions(schema):
    if isinstance(schema, dict):
        return {k: _without_descriptions(v) for k, v in schema.items() if k not in ("description", "title")}
    if isinstance(schema, list):
        return [_without_descriptions(v) for v in schema]
    return schema


# -- OpenAI and Gemini effort --------------------------------------------------------------


def test_openai_effort_and_turning_reasoning_off():
    assert body("openai:gpt-5", reasoning_effort="minimal")["reasoning_effort"] == "minimal"
    refused("openai:o4-mini", "reasoning_effort", reasoning_effort="minimal")
    refused("openai:gpt-5.1", "reasoning_effort", reasoning_effort="xhigh")
    assert body("openai:gpt-5.2", reasoning_effort="xhigh")["reasoning_effort"] == "xhigh"
    assert body("openai:gpt-5.1", thinking=False)["reasoning_effort"] == "none"
    assert body("openai:gpt-5.1", thinking=True)["reasoning_effort"] == "medium"  # off by default there: asked for
    refused("openai:gpt-5", "thinking", thinking=False)  # always reasons
    refused("openai:gpt-4.1", "thinking", thinking=True)  # never does
    assert body("openai-responses:gpt-5.1", thinking=False)["reasoning"] == {"effort": "none"}
    refused("openai-responses:o3", "thinking", thinking=False)
    assert body("openai-responses:o3", thinking=True, thinking_display="omitted")["reasoning"] == {"effort": "medium"}
    assert body("openai-responses:o3", reasoning_effort="low", thinking_display="summarized")["reasoning"] == {
        "effort": "low",
        "summary": "auto",
    }
    refused("openai:gpt-5.1", "thinking_display", thinking=True, thinking_display="summarized")  # Chat has no switch
    for spec, kw in [
        ("openai:gpt-5.1", {"thinking": False}),
        ("openai-responses:gpt-5.1", {"thinking": False}),
        ("openai-responses:o3", {"reasoning_effort": "high"}),
    ]:
        sdk_params.streaming_request(
            spec.split(":")[0].replace("openai", "openai-chat") if spec.startswith("openai:") else "openai-responses",
            body(spec, **kw),
        )


def test_gemini_levels_budgets_and_display():
    sent = body("google:gemini-3-pro-preview", reasoning_effort="low")
    assert sent["generationConfig"]["thinkingConfig"] == {"thinkingLevel": "LOW"}
    sdk_params.gemini_request(sent)  # google-genai's enum names
    refused("google:gemini-3-pro-preview", "reasoning_effort", reasoning_effort="medium")  # Pro: low or high
    assert body("google:gemini-3-flash-preview", reasoning_effort="minimal")["generationConfig"]["thinkingConfig"] == {
        "thinkingLevel": "MINIMAL"
    }
    budget = body("google:gemini-2.5-flash", reasoning_effort="medium")["generationConfig"]["thinkingConfig"]
    assert budget == {"thinkingBudget": 8192}  # 2.5 takes budgets only
    refused("google:gemini-2.5-pro", "thinking", thinking=False)  # Pro always thinks
    assert body("google:gemini-2.5-flash", thinking=False)["generationConfig"]["thinkingConfig"] == {
        "thinkingBudget": 0
    }
    assert body("google:gemini-2.5-flash", thinking=True, thinking_display="omitted")["generationConfig"][
        "thinkingConfig"
    ] == {"includeThoughts": False}
    refused("google:gemini-2.0-flash", "thinking", thinking=True)
    sdk_params.gemini_request(body("google:gemini-2.5-flash", thinking=True, thinking_budget=2048))


# -- every family of the table, every option: valid for the SDK, or refused by name ------------

_TARGETS = {  # a model id of the family -> the presets it is reached through
    "claude": ("anthropic", "bedrock"),
    "gpt": ("openai", "openai-responses"),
    "o": ("openai", "openai-responses"),
    "gemini": ("google",),
    "deepseek": ("deepseek",),
    **{kind: ("mistral", "bedrock") for kind in ("mistral", "magistral", "codestral", "devstral", "pixtral")},
    "nova": ("bedrock",),
    "llama4": ("bedrock",),
}
_BEDROCK_PREFIX = {"claude": "us.anthropic.", "nova": "us.amazon.", "llama4": "us.meta."}  # else mistral.
_VALIDATE = {
    "anthropic": "anthropic",
    "bedrock": "bedrock-converse",
    "openai": "openai-chat",
    "openai-responses": "openai-responses",
    "google": "gemini",
    "deepseek": "openai-chat",
    "mistral": "openai-chat",
}
_OPTIONS = [
    {"thinking": True},
    {"thinking": False},
    {"thinking": True, "thinking_display": "summarized"},
    {"thinking": True, "thinking_display": "omitted"},
    *({"reasoning_effort": level} for level in ("minimal", "low", "medium", "high", "xhigh", "max")),
    {"json_schema": Person.model_json_schema()},
    {"temperature": 0.5},
]


def _family_cases():
    for patterns, record, family in table_entries():
        literal = next((p for p in patterns if "*" not in p), patterns[0].replace("*", "x"))
        kind = "o" if literal[0] == "o" and literal[1].isdigit() else literal.split("-")[0]
        for preset in _TARGETS[kind]:
            name = _BEDROCK_PREFIX.get(kind, "mistral.") + literal + "-v1:0" if preset == "bedrock" else literal
            spec = f"{preset}:{name}"
            yield pytest.param(spec, record, id=f"{family}-{preset}")


@pytest.mark.parametrize("spec,record", list(_family_cases()))
def test_every_family_gets_requests_its_api_accepts_or_a_named_refusal(spec, record):
    for options in _OPTIONS:
        try:
            sent = body(spec, **options)
        except UnsupportedOptionError as exc:
            assert exc.option in options or exc.option == "thinking_budget", (options, exc)
            assert exc.model == spec.split(":", 1)[1], exc
            level = options.get("reasoning_effort")
            assert not (level and record.effort and level in record.effort), f"{spec} refused a level it has: {exc}"
            continue
        if spec.startswith("anthropic:") and record.sampling:
            # The anthropic SDK's current request type has no sampling fields (today's models
            # refuse them); the models this family covers still take them, as their docs say.
            sent = {k: v for k, v in sent.items() if k not in ("temperature", "top_p")}
        sdk_params.streaming_request(_VALIDATE[spec.split(":")[0]], sent)
        level = options.get("reasoning_effort")
        if level and record.effort is not None:
            assert level in record.effort, f"{spec} sent {level}, which it does not have"
        if options.get("temperature") is not None:
            assert record.sampling is not False


def test_azure_gets_a_strict_schema_without_a_default_and_openai_keeps_it():
    """Azure OpenAI refuses a non-null ``default`` in a strict schema (api.openai.com takes it,
    openai/openai-agents-python#4390): on Azure it goes into the description."""
    schema = {"type": "object", "properties": {"tax_type": {"type": "integer", "default": 0}}, "required": ["tax_type"]}
    openai = body("openai:gpt-4.1", json_schema=schema)["response_format"]["json_schema"]
    assert openai["strict"] is True and openai["schema"]["properties"]["tax_type"]["default"] == 0
    for spec, where in (
        ("azure:my-deployment", ("response_format", "json_schema")),
        ("azure-responses:my-deployment", ("text", "format")),
    ):
        sent = load_model(spec, api_key="k", base_url="https://res.openai.azure.com", json_schema=schema).build_request(
            [UserMsg("u", "hi")]
        )[0]
        fmt = sent[where[0]][where[1]]
        prop = fmt["schema"]["properties"]["tax_type"]
        assert fmt["strict"] is True and "default" not in prop and "default: 0" in prop["description"], spec


def test_a_table_field_without_a_source_is_refused_when_the_table_is_read():
    from modelwire.models.capabilities import entries_of

    head = '[[model]]\nfamily = "X"\nmatch = ["x-*"]\nsampling = false\nimage_input = true\n'
    backed = head + '[[model.source]]\nsays = "https://example.com/docs"\nbacks = ["sampling", "image_input"]\n'
    ((patterns, record, family),) = entries_of(backed)
    assert record.sampling is False and record.sources["image_input"] == "table: X: https://example.com/docs"
    with pytest.raises(ConfigError, match="no source backs image_input"):
        entries_of(head + '[[model.source]]\nsays = "https://example.com/docs"\nbacks = ["sampling"]\n')
    with pytest.raises(ConfigError, match="backs 'effort', which the entry does not set"):
        entries_of(backed + '[[model.source]]\nsays = "a report"\nbacks = ["effort"]\n')
    with pytest.raises(ConfigError, match="no source backs image_input, sampling"):
        entries_of(head)


def test_every_source_in_the_table_is_a_url_a_recording_an_sdk_or_profile_or_dated_words():
    import re

    from modelwire.models import capabilities

    data = __import__("tomllib").loads(capabilities._TABLE.read_text())["model"]
    for entry in data:
        for source in entry["source"]:
            says = source["says"]
            assert re.search(r"https://|recorded|profiles/|types/|\b20\d\d-\d\d\b", says), (entry["family"], says)


def test_opus_5_turns_thinking_off_only_at_effort_high_or_below():
    """Claude Opus 5 refuses disabled thinking at effort xhigh and max (the API's words:
    anthropics/claude-code#81084, 2026-07-25); at high or below it goes, in the form the
    anthropic SDK's request type describes. Opus 4.8 takes any level with thinking off."""
    for level in ("xhigh", "max"):
        message = refused("anthropic:claude-opus-5", "reasoning_effort", thinking=False, reasoning_effort=level)
        assert "low, medium, high" in message
        refused("bedrock:us.anthropic.claude-opus-5-v1:0", "reasoning_effort", thinking=False, reasoning_effort=level)
    sent = body("anthropic:claude-opus-5", thinking=False, reasoning_effort="high")
    assert sent["thinking"] == {"type": "disabled"} and sent["output_config"] == {"effort": "high"}
    sdk_params.streaming_request("anthropic", sent)
    assert body("anthropic:claude-opus-4-8", thinking=False, reasoning_effort="max")["output_config"] == {
        "effort": "max"
    }
    # Sonnet 5 is not Opus 5: nothing known refuses it.
    assert body("anthropic:claude-sonnet-5", thinking=False, reasoning_effort="xhigh")["thinking"] == {
        "type": "disabled"
    }


# -- the models of 2026-09 to 2026-12 (issue #68), each against its source and the SDK's types -----


def test_sonnet_55_turns_thinking_down_with_between_tools_and_refuses_what_its_page_says_returns_400():
    """What's new in Claude Sonnet 5.5: thinking off is ``{"type": "between_tools"}`` ("disabled"
    answers 400), at effort low to high only; a forced tool and sampling parameters answer 400."""
    sent = body("anthropic:claude-sonnet-5-5", thinking=False, reasoning_effort="medium")
    assert sent["thinking"] == {"type": "between_tools"} and sent["output_config"] == {"effort": "medium"}
    sdk_params.streaming_request("anthropic", sent)
    for level in ("xhigh", "max"):
        assert "low, medium, high" in refused(
            "anthropic:claude-sonnet-5-5", "reasoning_effort", thinking=False, reasoning_effort=level
        )
    assert body("anthropic:claude-sonnet-5-5", reasoning_effort="max")["output_config"] == {"effort": "max"}
    refused("anthropic:claude-sonnet-5-5", "tool_choice", tools=TOOLS, tool_choice="required")
    refused("anthropic:claude-sonnet-5-5", "tool_choice", tools=TOOLS, tool_choice="get_weather", thinking=False)
    refused("anthropic:claude-sonnet-5-5", "temperature", temperature=0.2)
    bedrock = body("bedrock:us.anthropic.claude-sonnet-5-5-v1:0", thinking=False)["additionalModelRequestFields"]
    assert bedrock["thinking"] == {"type": "between_tools"}
    assert from_table("claude-sonnet-5-5").context_window == 1_000_000


def test_haiku_55_takes_effort_levels_and_thinking_off_at_high_or_below():
    sent = body("anthropic:claude-haiku-5-5", reasoning_effort="max")
    assert sent["output_config"] == {"effort": "max"}
    sdk_params.streaming_request("anthropic", sent)
    off = body("anthropic:claude-haiku-5-5", thinking=False, reasoning_effort="high")
    assert off["thinking"] == {"type": "disabled"}
    sdk_params.streaming_request("anthropic", off)
    refused("anthropic:claude-haiku-5-5", "reasoning_effort", thinking=False, reasoning_effort="xhigh")
    refused("anthropic:claude-haiku-5-5", "top_p", top_p=0.9)
    assert from_table("claude-haiku-5").effort is None  # Haiku 5 keeps its own row


def test_gpt_6_efforts_and_sampling_only_with_reasoning_off():
    """GPT-6 Astra refuses none and minimal and takes max (OpenAI's 400, 2026-09-04); Sol and
    Luna stop reasoning at none; sampling parameters only at effort none (OpenAI's deployment
    checklist)."""
    sent = body("openai:gpt-6-astra", reasoning_effort="max")
    assert sent["reasoning_effort"] == "max"
    sdk_params.streaming_request("openai-chat", sent)
    refused("openai:gpt-6-astra", "reasoning_effort", reasoning_effort="minimal")
    refused("openai:gpt-6-astra", "thinking", thinking=False)
    refused("openai:gpt-6.1-sol", "thinking", thinking=False)
    assert "only with thinking off" in refused("openai:gpt-6-luna", "temperature", temperature=0.2)
    off = body("openai:gpt-6-luna", thinking=False, temperature=0.2)
    assert off["reasoning_effort"] == "none" and off["temperature"] == 0.2
    sdk_params.streaming_request("openai-chat", off)
    responses = body("openai-responses:gpt-6-sol", thinking=False, top_p=0.5)
    assert responses["reasoning"] == {"effort": "none"} and responses["top_p"] == 0.5
    sdk_params.streaming_request("openai-responses", responses)
    refused("openai-responses:gpt-6-sol", "top_p", top_p=0.5, reasoning_effort="low")
    refused("openai:gpt-6.2-sol", "temperature", temperature=0.2)  # the family's rule, for a model no row names
    assert body("openai:gpt-5.6", reasoning_effort="max")["reasoning_effort"] == "max"
    refused("openai:gpt-5.6", "temperature", temperature=0.2)
    refused("openai:gpt-5.1", "reasoning_effort", reasoning_effort="minimal")  # none, low, medium, high only


def test_deepseek_v4_thinks_unless_told_not_to_so_a_forced_tool_turns_it_off():
    """DeepSeek V4 thinks by default and answers a forced tool while thinking with 400 ("Thinking
    mode does not support this tool_choice"): the forced tool goes with thinking turned off,
    and is refused where thinking is asked for."""
    for model in ("deepseek-v4-flash", "deepseek-v4-pro"):
        sent = body(f"deepseek:{model}", TOOLS, "required")
        assert sent["tool_choice"] == "required" and sent["thinking"] == {"type": "disabled"}
        assert "while it thinks" in refused(
            f"deepseek:{model}", "tool_choice", tools=TOOLS, tool_choice="required", thinking=True
        )
    assert "thinking" not in body("deepseek:deepseek-v4-flash", TOOLS)  # unforced: its default stands
    assert "thinking" not in body("deepseek:deepseek-chat", TOOLS, "required")  # V3.2 does not think unasked


def test_mistral_medium_35_and_small_4_take_reasoning_effort_none_or_high():
    """docs.mistral.ai adjustable reasoning: reasoning_effort "high", or "none"."""
    for model in ("mistral-medium-3.5", "mistral-small-2603"):
        assert body(f"mistral:{model}", thinking=False)["reasoning_effort"] == "none"
        on = body(f"mistral:{model}", thinking=True)
        assert on["reasoning_effort"] == "high"
        sdk_params.streaming_request("openai-chat", on)
        assert body(f"mistral:{model}", reasoning_effort="high")["reasoning_effort"] == "high"
        refused(f"mistral:{model}", "reasoning_effort", reasoning_effort="low")


def test_gemini_3x_thinking_levels_per_model():
    sent = body("google:gemini-3.1-pro-preview", reasoning_effort="medium")
    assert sent["generationConfig"]["thinkingConfig"] == {"thinkingLevel": "MEDIUM"}
    sdk_params.gemini_request(sent)
    refused("google:gemini-3.1-pro-preview", "reasoning_effort", reasoning_effort="minimal")
    for model in ("gemini-3.7-flash", "gemini-3.8-flash"):
        refused(f"google:{model}", "reasoning_effort", reasoning_effort="minimal")
        assert body(f"google:{model}", reasoning_effort="low")["generationConfig"]["thinkingConfig"] == {
            "thinkingLevel": "LOW"
        }
    refused("google:gemini-3-pro-preview", "reasoning_effort", reasoning_effort="medium")  # 3 Pro: low or high


def test_the_two_wrong_facts_are_fixed():
    """Claude Opus 4.6's context window is 1M on its cited page; GPT-5.1 takes no minimal."""
    assert from_table("claude-opus-4-6").context_window == 1_000_000
    assert "minimal" not in from_table("gpt-5.1").effort


def test_claude_45_and_later_take_temperature_or_top_p_not_both():
    """The API's words: "`temperature` and `top_p` cannot both be specified for this model."""
    for spec in ("anthropic:claude-sonnet-4-5", "anthropic:claude-opus-4-6", "anthropic:claude-sonnet-4-6"):
        assert "not both" in refused(spec, "top_p", temperature=0.5, top_p=0.9)
        assert body(spec, top_p=0.9)["top_p"] == 0.9
    assert body("anthropic:claude-3-5-haiku-latest", temperature=0.5, top_p=0.9)["top_p"] == 0.9


def test_max_tokens_above_what_the_model_writes_is_refused():
    assert "128000" in refused("anthropic:claude-opus-4-6", "max_tokens", max_tokens=200_000)
    assert body("anthropic:claude-opus-4-6", max_tokens=128_000)["max_tokens"] == 128_000


@pytest.mark.parametrize(
    "model,family",
    [
        ("claude-sonnet-5-7", "Claude Sonnet 5"),  # a version the table does not name
        ("anthropic/claude-sonnet-5.7", "Claude Sonnet 5"),
        ("gpt-6.3-sol", "GPT-6 (other models of the family)"),
        ("gemini-3.9-flash", "Gemini 3 Flash"),
        ("deepseek-v4.1-pro", "DeepSeek V4"),
        ("claude-sonnet-5-20260630", None),  # a dated snapshot of a named model
        ("claude-sonnet-5-5", None),
        ("gpt-5-mini-2025-08-07", None),
        ("gemini-3-flash-preview", None),
        ("claude-3-5-haiku-latest", None),
        ("us.anthropic.claude-opus-4-7-v1:0", None),
        ("some-local-model", None),  # no row at all: the protocol's defaults, nothing assumed
    ],
)
def test_a_model_only_a_family_glob_matches_is_an_assumption(model, family):
    from modelwire.models.capabilities import assumed_from

    assert assumed_from(model) == family
