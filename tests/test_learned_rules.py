"""Rules learned from the provider's own refusals: a local server answers 400 with the
provider's real words; the first call fails with a ``RefusedOptionError`` that names the
option and the model and quotes the provider; the next such call is refused before anything
is sent, in this process and in a new one; ``check`` reports it; ``models --capabilities``
shows it with its date; ``models --forget`` clears it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from modelwire.errors import InvalidRequestError, RefusedOptionError, UnsupportedOptionError
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy
from modelwire.testing import ProviderServer, error_reply
from modelwire.testing.sse import body as sse_body, stream_reply

ANTHROPIC_DISABLED = (
    '"thinking.type.disabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort"'
)
TOOLS = [{"name": "lookup", "description": "d", "parameters": {"type": "object", "properties": {}}}]
STRICT_TOOL = {
    "name": "lookup",
    "description": "d",
    "parameters": {
        "type": "object",
        "properties": {"limit": {"type": "integer", "default": 10}},
        "required": ["limit"],
        "additionalProperties": False,
    },
    "strict": True,
}
OPUS5_EFFORT = (
    "output_config.effort 'xhigh' is not supported when thinking is disabled on this model. "
    "Use effort 'high' or below, or enable thinking."
)

# (preset:model, what the call asks, the provider's 400 body, the option it names, the learned field)
CASES = {
    "anthropic thinking off": (  # next month's flagship, which the table does not know yet
        "anthropic:claude-opus-5-7",
        {"options": {"thinking": False}},
        {"type": "error", "error": {"type": "invalid_request_error", "message": ANTHROPIC_DISABLED}},
        "thinking",
        ("thinking_off", False),
    ),
    "anthropic forced tool while thinking": (  # a gateway's Claude, declared adaptive, nothing said of forcing
        "anthropic:gateway-claude",
        {
            "options": {"thinking": True},
            "tools": TOOLS,
            "tool_choice": "lookup",
            "load": {"capabilities": {"thinking": ["adaptive"]}},
        },
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "Thinking may not be enabled when tool_choice forces tool use.",
            },
        },
        "tool_choice",
        ("forced_tool_thinking", False),
    ),
    "anthropic effort levels": (
        "anthropic:claude-test-model",
        {"options": {"reasoning_effort": "xhigh", "thinking": True}},
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "output_config.effort: Supported levels: high, low, max, medium",
            },
        },
        "reasoning_effort",
        ("effort", ("low", "medium", "high", "max")),
    ),
    "openai temperature": (
        "openai:gpt-test",
        {"options": {"temperature": 0.01}},
        {
            "error": {
                "message": (
                    "Unsupported value: 'temperature' does not support 0.01 with this model. Only the "
                    "default (1) value is supported."
                ),
                "type": "invalid_request_error",
                "param": "temperature",
                "code": "unsupported_value",
            }
        },
        "temperature",
        ("sampling", False),
    ),
    "openai effort levels": (
        "openai:gpt-test",
        {"options": {"reasoning_effort": "minimal"}},
        {
            "error": {
                "message": (
                    "Unsupported value: 'reasoning_effort' does not support 'minimal' with this model. "
                    "Supported values are: 'low', 'medium', and 'high'."
                ),
                "type": "invalid_request_error",
                "param": "reasoning_effort",
                "code": "unsupported_value",
            }
        },
        "reasoning_effort",
        ("effort", ("low", "medium", "high")),
    ),
    "bedrock forced tool": (
        "bedrock:us.meta.llama3-3-70b-instruct-v1:0",
        {"tools": TOOLS, "tool_choice": "required"},
        {
            "message": (
                "This model doesn't support the toolConfig.toolChoice.any field. Remove "
                "toolConfig.toolChoice.any and try again."
            )
        },
        "tool_choice",
        ("forced_tool", False),
    ),
    "anthropic effort with thinking off": (  # Opus 5's rule, on a model the table does not know yet
        "anthropic:claude-next-1",
        {"options": {"thinking": False, "reasoning_effort": "xhigh"}},
        {"type": "error", "error": {"type": "invalid_request_error", "message": OPUS5_EFFORT}},
        "reasoning_effort",
        ("thinking_off_effort", ("minimal", "low", "medium", "high")),
    ),
    "anthropic sampling deprecated": (
        "anthropic:claude-next-1",
        {"options": {"temperature": 0.2}},
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "`temperature` is deprecated for this model."},
        },
        "temperature",
        ("sampling", False),
    ),
    "a gateway's field the server does not know": (
        "anthropic:claude-test-model",
        {"options": {"thinking": True, "reasoning_effort": "high"}},
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "output_config: Extra inputs are not permitted"},
        },
        "output_config",
        ("refused_fields", ("output_config",)),
    ),
    "a budget under the floor, through a gateway to Bedrock": (
        "openrouter:anthropic/claude-next-1",
        {"options": {"thinking_budget": 512}},
        {
            "error": {
                "message": (
                    "The model returned the following errors: thinking.enabled.budget_tokens: Input should "
                    "be greater than or equal to 1024"
                ),
                "code": 400,
            }
        },
        "thinking_budget",
        ("budget_min", 1024),
    ),
    "azure unknown argument": (
        "openai:gpt-test",
        {"options": {"reasoning_effort": "low"}},
        {
            "error": {
                "message": "Unrecognized request argument supplied: reasoning_effort",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        },
        "reasoning_effort",
        ("refused_fields", ("reasoning_effort",)),
    ),
    "a strict schema keyword (Azure)": (
        "openai:gpt-test",
        {"tools": [STRICT_TOOL], "tool_choice": "auto"},
        {
            "error": {
                "message": (
                    "Invalid schema for function 'lookup': In context=('properties', 'limit'), 'default' is "
                    "not permitted."
                ),
                "type": "invalid_request_error",
                "param": "tools[0].function.parameters",
                "code": "invalid_function_parameters",
            }
        },
        "tools",
        ("strict_refused", ("default",)),
    ),
    "deepseek forced tool": (
        "openai:deepseek-next",
        {"tools": TOOLS, "tool_choice": "required"},
        {
            "error": {
                "message": "deepseek-reasoner does not support this tool_choice",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_request_error",
            }
        },
        "tool_choice",
        ("forced_tool", False),
    ),
    "gemini thinking off": (
        "google:gemini-next-pro",
        {"options": {"thinking": False}},
        {
            "error": {
                "code": 400,
                "message": "Budget 0 is invalid. This model only works in thinking mode.",
                "status": "INVALID_ARGUMENT",
            }
        },
        "thinking",
        ("thinking_off", False),
    ),
    "gemini unknown field": (
        "google:gemini-next-pro",
        {"options": {"extra_body": {"google": {"thinking_config": {"include_thoughts": True}}}}},
        {
            "error": {
                "code": 400,
                "message": 'Invalid JSON payload received. Unknown name "google": Cannot find field.',
                "status": "INVALID_ARGUMENT",
            }
        },
        "google",
        ("refused_fields", ("google",)),
    ),
    "a compatible server's words (Kimi)": (
        "openai:kimi-k3",
        {"options": {"temperature": 0.3}},
        {"message": "invalid temperature: only 1 is allowed for this model", "type": "invalid_request_error"},
        "temperature",
        ("sampling", False),
    ),
}


def _call(model, ask):
    return asyncio.run(
        model.complete(
            [UserMsg("user", "hi")],
            tools=ask.get("tools"),
            tool_choice=ask.get("tool_choice"),
            options=ask.get("options"),
        )
    )


@pytest.mark.parametrize("case", list(CASES))
def test_a_refusal_is_learned_and_the_next_call_is_refused_before_sending(case):
    spec, ask, body, option, (field, value) = CASES[case]
    with ProviderServer() as server:
        server.script(error_reply(400, body))
        base = server.url + ("" if spec.startswith(("anthropic", "google")) else "/v1")
        extra = ask.get("load", {})
        model = load_model(
            spec, api_key="sk-test", base_url=base, retry=RetryPolicy(max_retries=0), capability_lookup=False, **extra
        )
        with pytest.raises(RefusedOptionError) as first:
            _call(model, ask)
        # A new model object for the same endpoint and model (as a new agent would load it).
        again = load_model(
            spec, api_key="sk-test", base_url=base, retry=RetryPolicy(max_retries=0), capability_lookup=False, **extra
        )
        with pytest.raises(UnsupportedOptionError) as second:
            _call(again, ask)
        sent = len(server.requests)
    err = first.value
    assert (
        isinstance(err, InvalidRequestError)
        and err.status_code == 400
        and err.option == option
        and err.model == spec.split(":", 1)[1]
    )
    said = body.get("error", body)["message"] if isinstance(body.get("error", body), dict) else body["message"]
    assert said in str(err) and option in str(err)
    assert sent == 1  # the second call never left
    assert not isinstance(second.value, RefusedOptionError) and second.value.option in (
        option,
        "thinking",
        "tool_choice",
    )
    assert getattr(again.capabilities, field) == value
    assert "learned from the provider's refusal on " in again.capabilities.sources[field]


def test_an_unrelated_400_teaches_nothing():
    with ProviderServer() as server:
        server.script(
            error_reply(
                400,
                {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": "messages: at least one message is required"},
                },
            ),
            stream_reply("anthropic", sse_body("anthropic", ("text", "ok"))),
        )
        model = load_model(
            "anthropic:claude-test-model",
            api_key="sk-test",
            base_url=server.url,
            retry=RetryPolicy(max_retries=0),
            capability_lookup=False,
        )
        with pytest.raises(InvalidRequestError) as raised:
            asyncio.run(model.complete([UserMsg("user", "hi")], options={"thinking": False}))
        assert not isinstance(raised.value, RefusedOptionError)
        asyncio.run(model.complete([UserMsg("user", "hi")], options={"thinking": False}))  # sent again
        assert len(server.requests) == 2


def test_a_learned_rule_survives_a_new_process_check_reports_it_and_forget_clears_it(tmp_path):
    """Learned in one process; another process (``modelwire check``, ``models
    --capabilities``) knows it from the file; ``models --forget`` clears it and the call is
    sent again."""
    env = {**os.environ, "MODELWIRE_CACHE_DIR": str(tmp_path), "MODELWIRE_DEBUG": "0", "ANTHROPIC_API_KEY": "sk-test"}
    env.pop("ANTHROPIC_BASE_URL", None)
    conversation = tmp_path / "chat.json"
    conversation.write_text(json.dumps([{"role": "user", "name": "user", "content": [{"type": "text", "text": "hi"}]}]))
    learn = (
        "import asyncio, sys\n"
        "from modelwire.models import load_model\n"
        "from modelwire.models.transport import RetryPolicy\n"
        "from modelwire.message import UserMsg\n"
        "m = load_model('anthropic:claude-opus-5-7', retry=RetryPolicy(max_retries=0), capability_lookup=False)\n"
        "try:\n"
        "    asyncio.run(m.complete([UserMsg('u', 'hi')], options={'thinking': False}))\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__)\n"
    )
    with ProviderServer() as server:
        server.script(
            error_reply(400, CASES["anthropic thinking off"][2]), error_reply(400, CASES["anthropic thinking off"][2])
        )
        env["ANTHROPIC_BASE_URL"] = server.url  # every process, the check among them, at this endpoint

        def cli(*args):
            return subprocess.run(
                [sys.executable, "-m", "modelwire", *args], capture_output=True, text=True, env=env, timeout=60
            )

        first = subprocess.run(
            [sys.executable, "-c", learn, server.url], capture_output=True, text=True, env=env, timeout=60
        )
        second = subprocess.run(
            [sys.executable, "-c", learn, server.url], capture_output=True, text=True, env=env, timeout=60
        )
        sent_after_two = len(server.requests)
        check = cli("check", str(conversation), "--model", "anthropic:claude-opus-5-7", "--option", "thinking=false")
        shown = cli("models", "--capabilities", "anthropic:claude-opus-5-7")
        forgot = cli("models", "--forget", "anthropic:claude-opus-5-7")
        third = subprocess.run(
            [sys.executable, "-c", learn, server.url], capture_output=True, text=True, env=env, timeout=60
        )
        sent_after_forget = len(server.requests)
    assert first.stdout.strip() == "RefusedOptionError" and second.stdout.strip() == "UnsupportedOptionError", (
        first.stderr,
        second.stderr,
    )
    assert sent_after_two == 1
    assert check.returncode == 1 and "[unsupported-option]" in check.stdout and "thinking" in check.stdout, (
        check.stdout + check.stderr
    )
    assert "learned from the provider's refusal on" in shown.stdout and "thinking.type.disabled" in shown.stdout, (
        shown.stdout + shown.stderr
    )
    assert forgot.returncode == 0 and "forgot" in forgot.stdout
    assert third.stdout.strip() == "RefusedOptionError" and sent_after_forget == 2


def test_an_id_pattern_the_provider_states_is_kept_and_the_next_call_is_sent_with_ids_that_fit():
    """Mistral's words (through a compatible server): the first call fails once; the next
    is sent, its ids rewritten to nine letters and digits, each result with its call's."""
    from modelwire.message import AssistantMsg, ToolCallBlock, ToolResultBlock

    said = "Tool call id was call_PTLP8xhu3uwZk4l3nlnrrJha but must be a-z, A-Z, 0-9, with a length of 9."
    history = [
        UserMsg("user", "list a"),
        AssistantMsg(
            "agent",
            [
                ToolCallBlock(id="call_PTLP8xhu3uwZk4l3nlnrrJha", name="lookup", input="{}"),
                ToolResultBlock(id="call_PTLP8xhu3uwZk4l3nlnrrJha", name="lookup", output="A", state="success"),
            ],
        ),
        UserMsg("user", "and now?"),
    ]
    with ProviderServer() as server:
        server.script(
            error_reply(
                400,
                {"object": "error", "message": said, "type": "invalid_function_call", "param": None, "code": "3280"},
            ),
            stream_reply("openai-chat", sse_body("openai-chat", ("text", "ok"))),
        )
        model = load_model(
            "openai:devstral-next",
            api_key="sk-test",
            base_url=server.url + "/v1",
            retry=RetryPolicy(max_retries=0),
            capability_lookup=False,
        )
        with pytest.raises(RefusedOptionError) as first:
            asyncio.run(model.complete(history, tools=TOOLS))
        again = load_model(
            "openai:devstral-next",
            api_key="sk-test",
            base_url=server.url + "/v1",
            retry=RetryPolicy(max_retries=0),
            capability_lookup=False,
        )
        answer = asyncio.run(again.complete(history, tools=TOOLS))
        sent = [r["json"] for r in server.requests]
    assert first.value.option == "tool_id" and said in str(first.value)
    assert sent[0]["messages"][1]["tool_calls"][0]["id"] == "call_PTLP8xhu3uwZk4l3nlnrrJha"  # as it was, the first time
    call_id = sent[1]["messages"][1]["tool_calls"][0]["id"]
    assert len(call_id) == 9 and call_id.isalnum() and sent[1]["messages"][2]["tool_call_id"] == call_id
    assert answer.get_text_content().strip() == "ok"
    assert history[1].content[0].id == "call_PTLP8xhu3uwZk4l3nlnrrJha"  # the stored history is untouched
