"""The pre-flight check (``model.preflight`` and ``modelwire check``): conversations made to
break each rule, and clean ones (every recorded conversation, sent back to its maker)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from modelwire.message import (
    AssistantMsg,
    Base64Source,
    DataBlock,
    SystemMsg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    UserMsg,
)
from modelwire.models import load_model
from paths import HAVE_SHARED

STRICT_DEFAULT = {
    "type": "object",
    "properties": {"city": {"type": "string", "default": "Paris"}},
    "required": ["city"],
    "additionalProperties": False,
}
TOOL = {
    "name": "get_weather",
    "description": "w",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def call_turn(call_id="call_1", name="get_weather"):
    return AssistantMsg(
        "a",
        [
            ToolCallBlock(id=call_id, name=name, input='{"city": "Paris"}'),
            ToolResultBlock(id=call_id, name=name, output="sunny", state="success"),
        ],
    )


def rules(spec, messages, tools=None, tool_choice=None, **options):
    model = load_model(spec, api_key="k", capability_lookup=False, **options)
    return [(f.rule, f.index) for f in model.preflight(messages, tools, tool_choice)]


CLEAN = [UserMsg("u", "Weather in Paris?"), call_turn(), UserMsg("u", "Thanks")]


@pytest.mark.parametrize(
    "spec,messages,tools,tool_choice,options,expected",
    [
        (
            "anthropic:claude-sonnet-4-5",
            [UserMsg("u", "x"), call_turn("functions.get_weather:0")],
            [TOOL],
            None,
            {},
            [("tool-id", 1)],
        ),
        (
            "openai:gpt-4.1",
            [UserMsg("u", "x"), call_turn(name="fs/read")],
            [{**TOOL, "name": "fs/read"}],
            None,
            {},
            [("tool-name", 1)],
        ),
        (
            "anthropic:claude-sonnet-4-5",
            [
                UserMsg("u", "x"),
                AssistantMsg(
                    "a",
                    [
                        ThinkingBlock(
                            thinking="hm",
                            signature="sig-M",
                            provider_metadata={"minimax": {"protocol": "anthropic", "endpoint": "minimax"}},
                        ),
                        TextBlock(text="hi"),
                    ],
                ),
            ],
            None,
            None,
            {},
            [("foreign-thinking", 1)],
        ),
        (
            "anthropic:claude-sonnet-4-5",
            CLEAN,
            [TOOL],
            "required",
            {"thinking": True},
            [("forced-tool-with-thinking", None)],
        ),
        (
            "deepseek:deepseek-chat",
            [
                UserMsg(
                    "u",
                    [
                        TextBlock(text="see"),
                        DataBlock(source=Base64Source(data="iVBORw0KGgo=", media_type="image/png")),
                    ],
                )
            ],
            None,
            None,
            {},
            [("unsupported-media", 0)],
        ),
        (
            "openai:gpt-4.1",
            CLEAN,
            [TOOL],
            None,
            {
                "json_schema": {
                    "type": "object",
                    "properties": {"m": {"type": "object", "additionalProperties": {"type": "integer"}}},
                }
            },
            [("non-strict-schema", None)],
        ),
        (
            "anthropic:claude-sonnet-4-5",
            [SystemMsg("s", "Be brief."), *CLEAN, AssistantMsg("a", [TextBlock(text="Welcome.")]), UserMsg("u", "Bye")],
            [TOOL],
            None,
            {"formatter": {"cache_system": True, "cache_tools": True, "cache_last_turns": 3}},
            [("cache-breakpoints", None)],
        ),
        (
            "openai:gpt-4.1",
            [UserMsg("u", [TextBlock(text="")]), AssistantMsg("a", [TextBlock(text="hi")]), UserMsg("u", "ok")],
            None,
            None,
            {},
            [("empty-text", 0)],
        ),
        (
            "openai:gpt-4.1",
            [
                UserMsg("u", "x"),
                AssistantMsg("a", [ToolResultBlock(id="nowhere", name="get_weather", output="?", state="success")]),
            ],
            None,
            None,
            {},
            [("orphan-result", 1)],
        ),
        (
            "openai:gpt-4.1",
            [
                UserMsg("u", "x"),
                AssistantMsg("a", [ToolCallBlock(id="c9", name="get_weather", input="{}")]),
                UserMsg("u", "and?"),
            ],
            None,
            None,
            {},
            [("unanswered-call", 1)],
        ),
        (
            "anthropic:claude-sonnet-4-5",
            CLEAN,
            [TOOL],
            None,
            {"reasoning_effort": "high"},
            [("unsupported-option", None)],
        ),
        ("anthropic:claude-sonnet-4-5", CLEAN, [TOOL], None, {}, []),
        ("mistral:mistral-large-latest", CLEAN, [TOOL], None, {}, [("tool-id", 1)]),
        (
            "anthropic:claude-opus-5",
            CLEAN,
            [TOOL],
            None,
            {"thinking": False, "reasoning_effort": "xhigh"},
            [("unsupported-option", None)],
        ),
        ("anthropic:claude-opus-4-7", CLEAN, [TOOL], None, {"temperature": 0.2}, [("unsupported-option", None)]),
        (
            "anthropic:claude-opus-5-5",
            CLEAN,
            [TOOL],
            "required",
            {"thinking": False},
            [("forced-tool-with-thinking", None), ("unsupported-option", None)],
        ),
        (
            "openai:gpt-4.1",
            CLEAN,
            [{**TOOL, "strict": True, "parameters": STRICT_DEFAULT}],
            None,
            {"capabilities": {"strict_refused": ["default"]}},
            [("strict-schema", None)],
        ),
        (
            "openai:gpt-4.1",
            [UserMsg("u", "word " * 80_000)],
            None,
            None,
            {"capabilities": {"context_window": 50_000}},
            [("context-window", None)],
        ),
        (
            "openai:gpt-4.1",
            [UserMsg("u", "word " * 8_000)],
            None,
            None,
            {"capabilities": {"context_window": 50_000}},
            [],
        ),
        (
            "anthropic:claude-sonnet-4-5",
            [UserMsg("u", [DataBlock(source=Base64Source(data="not base64!", media_type="image/png"))])],
            None,
            None,
            {},
            [("bad-data", 0)],
        ),
    ],
    ids=[
        "tool-id",
        "tool-name",
        "foreign-thinking",
        "forced-tool",
        "media",
        "schema",
        "cache",
        "empty-text",
        "orphan",
        "unanswered",
        "option",
        "clean",
        "mistral-id",
        "effort-with-thinking-off",
        "sampling",
        "thinking-off-always-thinks",
        "strict-keyword",
        "context-window",
        "fits-the-window",
        "bad-data",
    ],
)
def test_each_rule(spec, messages, tools, tool_choice, options, expected):
    assert rules(spec, messages, tools, tool_choice, **options) == expected


def test_no_false_findings_on_the_recorded_conversations_sent_back_to_their_maker():
    if not HAVE_SHARED:
        pytest.skip("needs ../shared/recorded-streams")
    from test_switch_matrix import SOURCES, conversation

    checked = 0
    for protocol, provider, path in SOURCES:
        if protocol == "openai-responses" and provider != "openai-responses":
            continue  # a Responses recording from a provider without a preset of its own
        target = {"bedrock-converse": "bedrock"}.get(protocol, provider)
        findings = load_model(f"{target}:some-model", api_key="k", capability_lookup=False).preflight(
            conversation(protocol, provider, path)
        )
        assert findings == [], (path.name, [str(f) for f in findings])
        checked += 1
    assert checked > 50


def run_check(*args, stdin=None):
    import os

    env = {k: v for k, v in os.environ.items() if k != "MODELWIRE_DEBUG"}  # as a person runs it
    return subprocess.run(
        [sys.executable, "-m", "modelwire.cli", "check", *args], capture_output=True, timeout=60, input=stdin, env=env
    )


def test_the_command_exits_0_1_2_and_fix_writes_a_conversation_that_checks_clean(tmp_path):
    history = tmp_path / "chat.json"
    history.write_text(
        json.dumps(
            [
                m.to_dict()
                for m in [
                    UserMsg("u", [TextBlock(text="")]),
                    AssistantMsg("a", [TextBlock(text="ok")]),
                    UserMsg("u", "Weather?"),
                    call_turn("functions.get_weather:0", "fs/read"),
                ]
            ]
        )
    )
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps([m.to_dict() for m in CLEAN]))
    out = run_check(str(clean), "--model", "anthropic:claude-sonnet-4-5")
    assert out.returncode == 0 and out.stdout == b"" and b"clean" in out.stderr, out.stderr
    fixed = tmp_path / "fixed.json"
    out = run_check(str(history), "--model", "anthropic:claude-sonnet-4-5", "--json", "--fix", str(fixed))
    assert out.returncode == 0, out.stderr  # with --fix: what the fixed conversation meets
    found = json.loads(out.stdout)
    assert [(f["rule"], f["index"]) for f in found] == [("empty-text", 0), ("tool-id", 3), ("tool-name", 3)]
    assert all(f["fix"] for f in found)
    again = run_check(str(fixed), "--model", "anthropic:claude-sonnet-4-5")
    assert again.returncode == 0, again.stdout
    # Options, and bad input.
    out = run_check(str(clean), "--model", "anthropic:claude-opus-4-7", "--option", "thinking_budget=2000")
    assert out.returncode == 1 and b"[unsupported-option]" in out.stdout
    assert run_check(str(tmp_path / "missing.json"), "--model", "anthropic:c").returncode == 2
    (tmp_path / "bad.json").write_text("{not json")
    assert run_check(str(tmp_path / "bad.json"), "--model", "anthropic:c").returncode == 2
    assert run_check(str(clean), "--model", "nonsense").returncode == 2
    assert run_check("-", "--model", "openai:gpt-4.1", stdin=clean.read_bytes()).returncode == 0


def test_a_plugin_protocols_replay_keys_are_checked_too(monkeypatch):
    """Which block fields only their maker can check is declared by each protocol
    (``replay_keys``): a registered protocol's own key marks foreign thinking as well."""
    from modelwire import protocols
    from modelwire.protocols import WireProtocol, replay_keys

    from modelwire.protocols import get_protocol, protocol_names

    assert replay_keys() == {key for name in protocol_names() for key in get_protocol(name).replay_keys}
    assert {"signature", "encrypted_content", "thought_signature"} <= replay_keys()  # Claude's, OpenAI's, Gemini's
    signed = [
        UserMsg("u", "x"),
        AssistantMsg(
            "a",
            [
                ThinkingBlock(thinking="hm", toy_seal="s", provider_metadata={"toy": {"protocol": "toy"}}),
                TextBlock(text="hi"),
            ],
        ),
    ]
    assert rules("anthropic:claude-sonnet-4-5", signed) == []  # nothing says toy_seal is a seal

    class Toy(WireProtocol):
        name = "toy"
        replay_keys = ("toy_seal",)

        def apply_options(self, body, options, /, preset, model="", caps=None):
            raise NotImplementedError  # a toy: it builds no request

    monkeypatch.setattr(protocols, "_registered", {**protocols._registered, "toy": Toy()})
    assert "toy_seal" in replay_keys()
    assert rules("anthropic:claude-sonnet-4-5", signed) == [("foreign-thinking", 1)]


def test_fix_answers_an_unanswered_call_and_the_fixed_file_checks_clean(tmp_path):
    """A call with no result before the conversation goes on: ``check`` reports it, and
    ``--fix`` answers it with an ``interrupted`` result right after its calls (before the text
    that follows them), so the fixed file passes and ``--fix`` exits 0."""
    history = tmp_path / "chat.json"
    turn = AssistantMsg(
        "a", [ToolCallBlock(id="call_1", name="get_weather", input="{}"), TextBlock(text="Let me see.")]
    )
    history.write_text(json.dumps([m.to_dict() for m in [UserMsg("u", "Weather?"), turn, UserMsg("u", "Well?")]]))
    found = run_check(str(history), "--model", "anthropic:claude-sonnet-4-5")
    assert found.returncode == 1 and b"[unanswered-call]" in found.stdout and b"interrupted result" in found.stdout
    fixed = tmp_path / "fixed.json"
    out = run_check(str(history), "--model", "anthropic:claude-sonnet-4-5", "--fix", str(fixed))
    assert out.returncode == 0, out.stdout + out.stderr
    blocks = json.loads(fixed.read_text())[1]["content"]
    assert [b["type"] for b in blocks] == ["tool_call", "tool_result", "text"] and blocks[1]["state"] == "interrupted"
    assert run_check(str(fixed), "--model", "anthropic:claude-sonnet-4-5").returncode == 0


ANY_OF_TOOL = {
    "name": "lookup",
    "description": "by id or by name",
    "parameters": {
        "type": "object",
        "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
        "anyOf": [{"required": ["id"]}, {"required": ["name"]}],
    },
}


@pytest.mark.parametrize(
    "spec,tools,options,expected",
    [
        # The API's words: "`temperature` and `top_p` cannot both be specified for this model."
        ("anthropic:claude-sonnet-4-5", [TOOL], {"temperature": 0.5, "top_p": 0.9}, "top_p"),
        # Above the table's own max_output_tokens (128,000 on Claude Opus 4.6).
        ("anthropic:claude-opus-4-6", [TOOL], {"max_tokens": 200_000}, "max_tokens"),
        # Azure's strict mode refuses a non-null default (the preset's strict_default = false).
        ("azure:my-deployment", [{**TOOL, "strict": True, "parameters": STRICT_DEFAULT}], {}, "strict mode"),
        # "input_schema does not support oneOf, allOf, or anyOf at the top level"
        ("anthropic:claude-sonnet-4-5", [ANY_OF_TOOL], {}, "anyOf at the top"),
        # GPT-5.1 takes none, low, medium, high.
        ("openai:gpt-5.1", [TOOL], {"reasoning_effort": "minimal"}, "'minimal' is not a level"),
    ],
    ids=["temperature-and-top-p", "max-tokens", "azure-strict-default", "top-level-anyof", "gpt-5.1-minimal"],
)
def test_the_misconfigurations_check_missed(spec, tools, options, expected):
    """Each of the five the issue names is found offline, naming what is wrong."""
    base = {"base_url": "https://res.openai.azure.com"} if spec.startswith("azure:") else {}
    model = load_model(spec, api_key="k", capability_lookup=False, **base, **options)
    findings = model.preflight(CLEAN, tools)
    assert len(findings) == 1 and expected in findings[0].message, findings


def test_check_reports_every_finding_not_the_first_that_stops_the_build():
    """A conversation the format cannot express, a tool schema Claude refuses, a forced tool and
    thinking off on a model that always thinks, and a Kimi-style id: each is reported."""
    messages = [
        UserMsg("u", "x"),
        call_turn("functions.get_weather:0"),
        AssistantMsg("a", [ToolResultBlock(id="nowhere", name="get_weather", output="?", state="success")]),
    ]
    found = rules("anthropic:claude-opus-5-5", messages, [TOOL, ANY_OF_TOOL], "required", thinking=False)
    assert sorted(found, key=str) == sorted(
        [
            ("tool-id", 1),
            ("forced-tool-with-thinking", None),
            ("unsupported-option", None),
            ("tool-schema", None),
            ("orphan-result", 2),
        ],
        key=str,
    )


def test_check_says_what_it_assumed_of_a_model_no_row_names(tmp_path):
    """claude-sonnet-5-7 is newer than the table: its rules are Claude Sonnet 5's, and check
    says so (on stderr: the findings stay what they were)."""
    history = tmp_path / "chat.json"
    history.write_text(json.dumps([m.to_dict() for m in CLEAN]))
    done = run_check(str(history), "-m", "anthropic:claude-sonnet-5-7")
    assert done.returncode == 0, done.stderr
    assert b"assumed from Claude Sonnet 5" in done.stderr
    named = run_check(str(history), "-m", "anthropic:claude-sonnet-5-5")
    assert named.returncode == 0 and b"assumed" not in named.stderr


def test_a_model_that_takes_tools_only_unstreamed_is_reported_and_the_rest_still_checked():
    model = load_model(
        "bedrock:us.meta.llama4-maverick-17b-instruct-v1:0",
        api_key="k",
        base_url="https://bedrock-runtime.us-east-1.amazonaws.com",
        capability_lookup=False,
        capabilities={"streamed_tool_use": False, "forced_tool": False},
    )
    found = [(f.rule, "stream=False" in f.message) for f in model.preflight(CLEAN, [TOOL], "required")]
    assert found == [("unsupported-option", True), ("forced-tool-with-thinking", False)]
