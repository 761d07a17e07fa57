"""Every refusal rule a protocol knows, tested with the provider's real words (each text as
users reported it, named beside it), and the rules those words make: what is learned, and
what the next request does with it. A rule no text here reads fails the suite, so no
pattern goes untested; a text that reads as no rule (or as two) fails it too."""

from __future__ import annotations

import pytest

from modelwire.errors import UnsupportedOptionError
from modelwire.formatters._toolids import IdRules
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.models._learned import refusal_in
from modelwire.protocols import get_protocol, protocol_names

# (protocol the words come back on, the provider's words, the option named, what is learned)
WORDS = [
    # Anthropic, 2026-11 (the issue's report)
    (
        "anthropic",
        (
            '"thinking.type.disabled" is not supported for this model. Use "thinking.type.adaptive" '
            'and "output_config.effort"'
        ),
        "thinking",
        {"thinking_off": False},
    ),
    # Anthropic: thinking.type.enabled on an adaptive-only model
    (
        "anthropic",
        (
            '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" '
            'and "output_config.effort"'
        ),
        "thinking_budget",
        {"thinking": ("adaptive",)},
    ),
    # anthropics/claude-code#29531, 2026-02-28 (Qwen behind an Anthropic route)
    (
        "anthropic",
        "Only 'enabled' and 'disabled' are supported for thinking; 'adaptive' is not supported.",
        "thinking",
        {"thinking": ("budget",)},
    ),
    # run-llama/llama_index#19641, 2025-08-11
    (
        "anthropic",
        "Thinking may not be enabled when tool_choice forces tool use.",
        "tool_choice",
        {"forced_tool_thinking": False},
    ),
    # a recorded claude-opus-4-6 400
    (
        "anthropic",
        "output_config.effort: Supported levels: high, low, max, medium",
        "reasoning_effort",
        {"effort": ("low", "medium", "high", "max")},
    ),
    # anthropics/claude-code#81084, 2026-07-25
    (
        "anthropic",
        (
            "output_config.effort 'xhigh' is not supported when thinking is disabled on this model. "
            "Use effort 'high' or below, or enable thinking."
        ),
        "reasoning_effort",
        {"thinking_off_effort": ("minimal", "low", "medium", "high")},
    ),
    # UKGovernmentBEIS/inspect_ai#3721, 2026-04-20
    ("anthropic", "`temperature` is deprecated for this model.", "temperature", {"sampling": False}),
    # on Bedrock, DayuanJiang/next-ai-draw-io#861, 2026-06-06
    (
        "bedrock",
        "The model returned the following errors: temperature is deprecated for this model.",
        "temperature",
        {"sampling": False},
    ),
    # through Bedrock, danny-avila/LibreChat#8346, 2025-07-09
    (
        "bedrock",
        (
            "The model returned the following errors: thinking.enabled.budget_tokens: Input should "
            "be greater than or equal to 1024"
        ),
        "thinking_budget",
        {"budget_min": 1024},
    ),
    # ding113/claude-code-hub#662, 2026-01-27; caozhiyuan/copilot-api#305, 2026-07-02
    (
        "anthropic",
        "output_config: Extra inputs are not permitted",
        "output_config",
        {"refused_fields": ("output_config",)},
    ),
    (
        "anthropic",
        "context_management: Extra inputs are not permitted",
        "context_management",
        {"refused_fields": ("context_management",)},
    ),
    # CommandCodeAI/command-code#323, 2026-05-06
    (
        "anthropic",
        "messages.1.content.1.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
        "tool_id",
        {"tool_id_pattern": "^[a-zA-Z0-9_-]+$"},
    ),
    # apify/tester-mcp-client#11, 2025-03-07
    (
        "anthropic",
        "tools.7.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'",
        "tool_name",
        {"tool_name_pattern": "^[a-zA-Z0-9_-]{1,64}$"},
    ),
    # owndev/Open-WebUI-Functions#98, 2025-11-20
    (
        "openai-chat",
        (
            "Unsupported value: 'temperature' does not support 0.01 with this model. Only the "
            "default (1) value is supported."
        ),
        "temperature",
        {"sampling": False},
    ),
    (
        "openai-responses",
        "Unsupported parameter: 'temperature' is not supported with this model.",
        "temperature",
        {"sampling": False},
    ),
    # XCNXNXNX/dsh-portable-tavern#1, 2026-08-25
    ("openai-chat", "invalid temperature: only 1 is allowed for this model", "temperature", {"sampling": False}),
    # Kilo-Org/cloud#3807, 2026-06-08
    (
        "openai-chat",
        (
            "Unsupported value: 'reasoning_effort' does not support 'none' with this model. "
            "Supported values are: 'minimal', 'low', 'medium', and 'high'."
        ),
        "reasoning_effort",
        {"effort": ("minimal", "low", "medium", "high")},
    ),
    # formulahendry/wechat-acp#16, 2026-03-30; nashsu/llm_wiki#336, 2026-06-04
    (
        "openai-chat",
        "Unrecognized request argument supplied: reasoning_effort",
        "reasoning_effort",
        {"refused_fields": ("reasoning_effort",)},
    ),
    ("openai-chat", "Unrecognized request argument supplied: thinking", "thinking", {"refused_fields": ("thinking",)}),
    # danishjsheikh/swagger-mcp#13, 2025-06-11; nikkigallery/Whimbox#61, 2026-05-04 (DeepSeek)
    (
        "openai-chat",
        (
            "Invalid 'tools[0].function.name': string does not match pattern. Expected a string that "
            "matches the pattern '^[a-zA-Z0-9_\\.-]+$'."
        ),
        "tool_name",
        {"tool_name_pattern": "^[a-zA-Z0-9_\\.-]+$"},
    ),
    (
        "openai-chat",
        (
            "Invalid 'messages[9].tool_calls[0].function.name': string does not match pattern. "
            "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
        ),
        "tool_name",
        {"tool_name_pattern": "^[a-zA-Z0-9_-]+$"},
    ),
    # Portkey-AI/gateway#1062, 2025-04-24
    (
        "openai-chat",
        (
            "'messages[2].tool_calls[0].id': string too long. Expected a string with maximum length "
            "40, but got a string with length 44 instead."
        ),
        "tool_id",
        {"tool_id_pattern": "maximum length 40"},
    ),
    # jackmpcollins/magentic#276, 2024-07-25; editor-code-assistant/eca#233, 2025-12-13
    (
        "openai-chat",
        "Tool call id was 2968-LWy3uasib but must be a-z, A-Z, 0-9, with a length of 9.",
        "tool_id",
        {"tool_id_pattern": "must be a-z, A-Z, 0-9, with a length of 9"},
    ),
    # deepseek-ai/awesome-deepseek-integration#598, 2026-04-29
    ("openai-chat", "deepseek-reasoner does not support this tool_choice", "tool_choice", {"forced_tool": False}),
    # vishalmysore/Tools4AI#16, 2024-05-15 (param tools, code array_above_max_length)
    (
        "openai-chat",
        "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length "
        "325 instead.",
        "tools",
        {"max_tools": 128},
    ),
    # microsoft/foundry-dev-tools#779, 2026-09-13 (the same for gpt-5.6-sol: TheR1D/shell_gpt#801, 2026-09-01)
    (
        "openai-chat",
        (
            "Function tools with reasoning_effort are not supported for gpt-6-astra in /v1/chat/completions. "
            "To use function tools, use /v1/responses or set reasoning_effort to 'none'."
        ),
        "tools",
        {"tool_use_thinking": False},
    ),
    # dotnet/extensions#6196, 2025-03-26
    (
        "openai-chat",
        "Invalid schema for function 'GetLogs': In context=('properties', 'name'), 'default' is not permitted.",
        "tools",
        {"strict_refused": ("default",)},
    ),
    # snailyp/gemini-balance#206, 2025-07-14; GewoonJaap/gemini-cli-openai#22, 2025-07-06
    ("gemini", "Budget 0 is invalid. This model only works in thinking mode.", "thinking", {"thinking_off": False}),
    ("gemini", "The model does not support setting thinking_budget to 0.", "thinking", {"thinking_off": False}),
    # Alishahryar1/free-claude-code#542, 2026-05-24; sourcegraph/cody#4566, 2024-06-14
    (
        "gemini",
        'Invalid JSON payload received. Unknown name "google": Cannot find field.',
        "google",
        {"refused_fields": ("google",)},
    ),
    (
        "gemini",
        'Invalid JSON payload received. Unknown name \\"stream\\": Cannot find field.',
        "stream",
        {"refused_fields": ("stream",)},
    ),
    # strands-agents/harness-sdk#1887, 2026-03-13
    (
        "bedrock",
        (
            "This model doesn't support the toolConfig.toolChoice.any field. Remove "
            "toolConfig.toolChoice.any and try again."
        ),
        "tool_choice",
        {"forced_tool": False},
    ),
    # sigoden/aichat#543, 2024-05-25
    (
        "bedrock",
        (
            "Malformed input request: #: subject must not be valid against schema "
            '{"required":["messages"]}#: extraneous key [stream] is not permitted, please reformat '
            "your input and try again."
        ),
        "stream",
        {"refused_fields": ("stream",)},
    ),
]

WORDS += [
    # the kinds of refusal issue #68 counted among real error texts, each with its source
    # Vali-98/ChatterUI#564, 2026-05-16 (Sonnet 4.6)
    (
        "anthropic",
        "`temperature` and `top_p` cannot both be specified for this model. Please use only one.",
        "top_p",
        {"sampling_one_of": True},
    ),
    # on Bedrock: skydiscover-ai/skydiscover#15, 2026-03-10
    (
        "bedrock",
        (
            "The model returned the following errors: `temperature` and `top_p` cannot both be specified for "
            "this model. Please use only one."
        ),
        "top_p",
        {"sampling_one_of": True},
    ),
    # on Vertex, BerriAI/litellm#15715, 2025-10-19
    (
        "anthropic",
        (
            "max_tokens: 200000 > 64000, which is the maximum allowed number of output tokens for "
            "claude-sonnet-4-5-20250929"
        ),
        "max_tokens",
        {"max_output_tokens": 64000},
    ),
    # enoch3712/ExtractThinker#346, 2025-06-24
    (
        "openai-chat",
        (
            "max_tokens is too large: 32000. This model supports at most 16384 completion tokens, whereas you "
            "provided 32000."
        ),
        "max_tokens",
        {"max_output_tokens": 16384},
    ),
    # griptape-ai/ComfyUI-Griptape#312, 2025-08-22
    (
        "openai-chat",
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        "max_tokens",
        {"refused_fields": ("max_tokens",)},
    ),
    # ollama/ollama#17301, 2026-07-22
    ("anthropic", "this model does not support image input (ref: b8bd630e)", "image", {"image_input": False}),
    # ollama/ollama#11131, 2025-06-19; on its OpenAI route, FoundationAgents/OpenManus#220, 2025-03-08
    ("ollama", "registry.ollama.ai/library/deepseek-r1:14b does not support tools", "tools", {"tool_use": False}),
    ("openai-chat", "registry.ollama.ai/library/qwen:4b does not support tools", "tools", {"tool_use": False}),
    # Gitlawb/openclaude#1371, 2026-05-26; taketwo/llm-ollama#54, 2025-07-27
    ("openai-chat", '"llama3.1:8b" does not support thinking', "thinking", {"thinking": ()}),
    (
        "ollama",
        "registry.ollama.ai/library/gemma3n:e4b-it-q8_0 does not support thinking",
        "thinking",
        {"thinking": ()},
    ),
    # earendil-works/pi#3739, 2026-04-26
    ("bedrock", "This model doesn't support tool use in streaming mode.", "stream", {"streamed_tool_use": False}),
    # RooCodeInc/Roo-Code#10700, 2026-01-13
    ("gemini", "Thinking level is not supported for this model.", "reasoning_effort", {"thinking": ("budget",)}),
    # googleapis/js-genai#681, 2025-06-12; lobehub/lobehub#7985, 2025-05-27
    (
        "gemini",
        "Unable to submit request because thinking is not supported by this model. Learn more: "
        "https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini",
        "thinking",
        {"thinking": ()},
    ),
    (
        "gemini",
        "Thinking is not enabled for models/gemini-2.0-flash-preview-image-generation",
        "thinking",
        {"thinking": ()},
    ),
    # pydantic/pydantic-ai#1967, 2025-06-12
    (
        "gemini",
        "Unable to submit request because Thinking can't be disabled for this model. Remove 'thinking_budget'",
        "thinking",
        {"thinking_off": False},
    ),
]

# Words that state no model rule: nothing is learned from them.
NOT_RULES = [
    "messages: at least one message is required",
    "messages.65.content.1.tool_use.text: Extra inputs are not permitted",  # a block's field, not the request's
    "Malformed input request: #/messages/0/content/0: extraneous key [type] is not permitted",  # a nested key
    (
        'Invalid JSON payload received. Unknown name "const" at '
        "'tools[0].function_declarations[5].parameters.properties[8].value.any_of[0]': Cannot "
        "find field."
    ),
    "The thinking budget (52428) is invalid.",  # says no range to learn
]


@pytest.mark.parametrize("protocol, said, option, fields", WORDS, ids=[w[1][:60] for w in WORDS])
def test_each_refusal_is_read_from_the_providers_own_words(protocol, said, option, fields):
    found = refusal_in(protocol, said)
    assert found is not None, said
    named, learned = found
    assert named == option
    assert learned.known() == fields


@pytest.mark.parametrize("said", NOT_RULES)
def test_words_that_state_no_rule_teach_nothing(said):
    assert refusal_in("openai-chat", said) is None


def test_every_rule_a_protocol_knows_is_read_by_one_of_the_texts_above():
    untested = []
    for name in protocol_names():
        for refusal in get_protocol(name).refusals:
            if not any(refusal.learned(said) is not None for _protocol, said, _option, _fields in WORDS):
                untested.append((name, refusal.pattern))
    assert not untested


def test_each_text_is_read_by_exactly_one_rule():
    for _protocol, said, _option, _fields in WORDS:
        readers = [
            r.pattern for name in protocol_names() for r in get_protocol(name).refusals if r.learned(said) is not None
        ]
        assert len(readers) == 1, (said, readers)


def test_every_rule_names_its_source_with_a_date():
    import re

    for name in protocol_names():
        for refusal in get_protocol(name).refusals:
            assert re.search(r"20\d\d-\d\d", refusal.source) or "recorded" in refusal.source, (name, refusal.source)


@pytest.mark.parametrize(
    "said, fits, refused",
    [
        ("^[a-zA-Z0-9_-]+$", "call_01-x", "functions.get:0"),
        ("^[a-zA-Z0-9_\\.-]+$", "fs.read", "fs/read"),
        ("^[a-zA-Z0-9_-]{1,64}$", "a" * 64, "a" * 65),
        ("must be a-z, A-Z, 0-9, with a length of 9", "abcDEF123", "call_0fypS1hVX"),
        ("maximum length 40", "c" * 40, "c" * 41),
    ],
)
def test_a_stated_pattern_becomes_the_rules_ids_and_names_are_rewritten_to(said, fits, refused):
    rules = IdRules.from_pattern(said)
    assert rules is not None and rules.fits(fits) and not rules.fits(refused)
    assert rules.fits(rules.rewrite(refused))


def test_words_that_state_no_pattern_give_no_rules():
    assert IdRules.from_pattern("the id is wrong") is None


HI = [UserMsg("user", "hi")]


def _model(spec, **caps):
    return load_model(spec, api_key="k", capability_lookup=False, capabilities=caps)


def test_a_budget_outside_the_range_is_refused_before_sending():
    model = _model("google:gemini-next", budget_min=128, budget_max=32768)
    for budget in (64, 40000):
        with pytest.raises(UnsupportedOptionError) as raised:
            model.build_request(HI, options={"thinking_budget": budget})
        assert raised.value.option == "thinking_budget" and raised.value.model == "gemini-next"
    model.build_request(HI, options={"thinking_budget": 1024})


def test_effort_with_thinking_off_is_refused_above_the_levels_the_model_takes_so():
    model = _model("anthropic:claude-next", thinking_off_effort=["low", "medium", "high"])
    with pytest.raises(UnsupportedOptionError) as raised:
        model.build_request(HI, options={"thinking": False, "reasoning_effort": "max"})
    assert raised.value.option == "reasoning_effort" and "low, medium, high" in str(raised.value)
    body, _ = model.build_request(HI, options={"thinking": False, "reasoning_effort": "high"})
    assert body["thinking"] == {"type": "disabled"} and body["output_config"] == {"effort": "high"}
    body, _ = model.build_request(HI, options={"thinking": True, "reasoning_effort": "max"})
    assert body["output_config"] == {"effort": "max"}  # with thinking on, every level


def test_a_refused_strict_keyword_moves_out_of_a_json_schema_and_refuses_a_strict_tool():
    model = _model("openai:gpt-next", strict_refused=["default"])
    schema = {
        "type": "object",
        "properties": {"limit": {"type": "integer", "default": 10}},
        "required": ["limit"],
        "additionalProperties": False,
    }
    body, _ = model.build_request(HI, options={"json_schema": schema})
    sent = body["response_format"]["json_schema"]
    assert sent["strict"] is True and "default" not in sent["schema"]["properties"]["limit"]
    tool = {"name": "lookup", "parameters": schema, "strict": True}
    with pytest.raises(UnsupportedOptionError) as raised:
        model.build_request(HI, tools=[tool])
    assert raised.value.option == "tools" and "'default' at parameters.properties.limit" in str(raised.value)
    # A property named like the keyword is not the keyword; a tool that is not strict is the caller's.
    named = {
        "type": "object",
        "properties": {"default": {"type": "string"}},
        "required": ["default"],
        "additionalProperties": False,
    }
    model.build_request(HI, tools=[{**tool, "parameters": named}])
    model.build_request(HI, tools=[{**tool, "strict": False}])


def test_what_the_new_refusals_teach_is_refused_before_the_next_request():
    """Each rule learned from those words refuses the next request before it is sent."""
    tools = [{"name": "lookup", "parameters": {"type": "object", "properties": {}}}]
    cases = [
        ("anthropic:claude-next", {"sampling_one_of": True}, {"temperature": 0.5, "top_p": 0.9}, None, "top_p"),
        ("anthropic:claude-next", {"max_output_tokens": 64000}, {"max_tokens": 200000}, None, "max_tokens"),
        ("ollama:llama2", {"tool_use": False}, {}, tools, "tools"),
        ("bedrock:us.meta.llama4-maverick-17b-instruct-v1:0", {"streamed_tool_use": False}, {}, tools, "stream"),
        ("google:gemini-next", {"thinking": []}, {"thinking": True}, None, "thinking"),
    ]
    for spec, caps, options, given, option in cases:
        base = {"base_url": "https://bedrock-runtime.us-east-1.amazonaws.com"} if spec.startswith("bedrock:") else {}
        model = load_model(spec, api_key="k", capability_lookup=False, capabilities=caps, **base)
        with pytest.raises(UnsupportedOptionError) as raised:
            model.build_request(HI, tools=given, options=options)
        assert raised.value.option == option, (spec, raised.value)
    # The same tools go in a request that is not streamed.
    model = load_model(
        "bedrock:us.meta.llama4-maverick-17b-instruct-v1:0",
        api_key="k",
        base_url="https://bedrock-runtime.us-east-1.amazonaws.com",
        capability_lookup=False,
        capabilities={"streamed_tool_use": False},
    )
    body, _ = model.build_request(HI, tools=tools, options={"stream": False})
    assert body["toolConfig"]["tools"][0]["toolSpec"]["name"] == "lookup"
