"""AgentScope 1.0.21's own ReActAgent (in its own environment, tests/agentscope1/) on
``modelwire.integrations.agentscope1`` against modelwire's local provider server: a tool
round and a structured output on Anthropic, OpenAI Chat and Gemini, streamed and not, and
the chunks a streamed call yields, as the 1.x agent reads them (each one the whole reply so far)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import agentscope1_env
from modelwire.message import from_agentscope1_history, to_agentscope1

PRESETS = {
    "anthropic": "anthropic:claude-test",
    "openai-chat": "deepseek:deepseek-chat",
    "gemini": "google:gemini-test",
}
# What each protocol's request holds for 1.x's tool_choice "required" then "none" (the
# structured output's two calls), and for the thinking sent back with its signature
CHOICES = {
    "anthropic": lambda r: r.get("tool_choice"),
    "openai-chat": lambda r: r.get("tool_choice"),
    "gemini": lambda r: (r.get("toolConfig") or {}).get("functionCallingConfig"),
}
REQUIRED_NONE = {
    "anthropic": [{"type": "any"}, {"type": "none"}],
    "openai-chat": ["required", "none"],
    "gemini": [{"mode": "ANY"}, {"mode": "NONE"}],
}
THINKING_BACK = {
    "anthropic": '"signature": "sig-One tool"',
    "openai-chat": '"reasoning_content": "One tool."',
    "gemini": '"thoughtSignature": "sig-One tool"',
}


@pytest.fixture(scope="module")
def runs():
    return agentscope1_env.run("react_agent.py", {"protocols": PRESETS}, env={"MODELWIRE_CACHE_DIR": ""})


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("protocol", list(PRESETS))
def test_the_1x_react_agent_completes_a_tool_round_and_a_structured_output(runs, protocol, stream):
    run = runs[f"{protocol} stream={stream}"]
    assert [b["text"] for b in run["first"]["content"]] == ["Sunny in Paris."]
    assert [b["text"] for b in run["second"]["content"]] == ["Paris: sunny."]
    assert run["second"]["metadata"] == {"city": "Paris", "sky": "sunny"}
    requests = run["requests"]
    assert len(requests) == 4
    second = json.dumps(requests[1], ensure_ascii=False)
    assert "Paris: sunny" in second  # the tool's result, from 1.x's system message, went back with its call
    assert THINKING_BACK[protocol] in second
    assert [CHOICES[protocol](r) for r in requests[2:]] == REQUIRED_NONE[protocol]
    # the agent's memory (1.x JSON) is what modelwire reads and writes back unchanged
    memory = run["memory"]
    assert [m["role"] for m in memory] == ["user", "assistant", "system", "assistant"] * 2
    assert to_agentscope1(from_agentscope1_history(memory)) == memory


@pytest.mark.parametrize("protocol", list(PRESETS))
def test_a_streamed_call_yields_the_whole_reply_so_far_in_every_chunk(runs, protocol):
    run = runs[f"{protocol} chunks"]
    chunks = run["chunks"]
    assert len(chunks) > 3 and len({c["id"] for c in chunks}) == 1
    for before, after in zip(chunks, chunks[1:]):
        assert len(after["content"]) >= len(before["content"])
        for old, new in zip(before["content"], after["content"]):
            assert old["type"] == new["type"]
            for field in ("text", "thinking", "raw_input"):
                assert new.get(field, "").startswith(old.get(field, ""))
    last = chunks[-1]
    assert [b["type"] for b in last["content"]] == ["thinking", "text", "tool_use"]
    call = last["content"][2]
    assert (call["name"], call["input"], json.loads(call["raw_input"])) == (
        "weather",
        {"city": "Oslo"},
        {"city": "Oslo"},
    )
    assert last["usage"] == {"input_tokens": 10, "output_tokens": 5}
    assert all(c["usage"] is None for c in chunks[:-1])  # the providers' fakes report usage at the end only
    if protocol == "anthropic":
        assert last["content"][0]["signature"] == "sig-Hm."
        assert run["request"]["tool_choice"] == {"type": "tool", "name": "weather"}


@pytest.mark.parametrize("protocol", list(PRESETS))
def test_interrupting_the_1x_agent_closes_the_provider_connection(runs, protocol):
    run = runs[f"{protocol} interrupted"]
    assert run["disconnects"] >= 1, "the provider connection stayed open"
    assert run["reply"]["role"] == "assistant"
    # what streamed before the interrupt is in the memory (1.x keeps the partial reply)
    assert any(m["role"] == "assistant" and "word" in json.dumps(m["content"]) for m in run["memory"])


def test_a_provider_s_request_messages_are_refused_naming_the_formatter_to_use(runs):
    assert runs["refused"].startswith("InvalidMessageError: ")
    assert "ModelwireFormatter" in runs["refused"]


def test_a_structured_model_is_asked_through_a_forced_tool_and_answered_in_metadata(runs):
    run = runs["structured"]
    assert run["tools"] == ["generate_structured_output"]
    assert run["metadata"] == {"city": "Rome", "sky": "clear"}
    assert run["unanswered"] == "StructuredOutputError"


def test_an_error_before_any_output_is_raised_by_the_call_as_1x_models_raise_it(runs):
    assert runs["refused key"] == "AuthenticationError"


def test_with_agentscope_tracing_on_a_call_is_a_span_as_1x_models_calls_are(runs):
    (span,) = [s for s in runs["traced"] if s["scope"] == "agentscope"]
    assert span["name"] == "chat claude-test" and span["status"] == "OK"
    # modelwire's own GenAI span of the same call is there too (modelwire.telemetry)
    assert [s["name"] for s in runs["traced"] if s["scope"] != "agentscope"] == ["chat claude-test"]


def test_pyright_finds_no_errors_in_the_1x_integration_against_agentscope_1(tmp_path):
    """The project's pyright run leaves this one file out (it is written against AgentScope 1.x,
    not the 2.x of the project's environment); here it is checked against 1.0.21's own types."""
    agentscope1_env.python()
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent))
    if pyright is None:
        pytest.skip("the dev extra installs pyright")
    config = {
        "venvPath": str(agentscope1_env.HERE),
        "venv": ".venv",
        "pythonVersion": "3.11",
        "extraPaths": [str(agentscope1_env.SRC)],
    }
    (tmp_path / "pyrightconfig.json").write_text(json.dumps(config))
    module = agentscope1_env.SRC / "modelwire" / "integrations" / "agentscope1.py"
    done = subprocess.run(
        [pyright, "-p", str(tmp_path / "pyrightconfig.json"), "--outputjson", str(module)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(done.stdout)
    errors = [d["message"] for d in report["generalDiagnostics"] if d["severity"] == "error"]
    assert report["summary"]["filesAnalyzed"] == 1 and errors == []
