"""The command line, run as a user runs it: a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from modelwire import event as E
from modelwire.message import Msg

ROOT = Path(__file__).resolve().parents[1].parent / "shared" / "recorded-streams"


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "modelwire.cli", *args], input=stdin, capture_output=True, timeout=60
    )


def test_demo_streams_a_tool_call_and_an_answer():
    out = run("demo")
    assert out.returncode == 0, out.stderr
    text = out.stdout.decode()
    assert "scripted" in text  # it says plainly what it is
    assert "TOOL_CALL_START" in text and "tool_call_name='calculate'" in text
    assert "7006694" in text  # (1234 * 5678) + 42, computed by the real tool
    assert text.rstrip().endswith("(1234 × 5678) + 42 = 7006694.")


@pytest.mark.skipif(not ROOT.is_dir(), reason="../shared/recorded-streams is not present")
def test_decode_prints_the_rebuilt_message():
    path = ROOT / "anthropic-sdk-python" / "tool_use_response.txt"
    out = run("decode", "--protocol", "anthropic", str(path))
    assert out.returncode == 0, out.stderr
    msg = Msg.model_validate_json(out.stdout)
    assert msg.role == "assistant" and msg.finished_reason == "completed"
    text, call = msg.content
    assert text.text == "I'll check the current weather in Paris for you."
    assert (call.name, json.loads(call.input)) == ("get_weather", {"location": "Paris"})
    assert msg.usage.input_tokens == 377


@pytest.mark.skipif(not ROOT.is_dir(), reason="../shared/recorded-streams is not present")
def test_decode_events_from_stdin_are_a_valid_stream():
    body = (ROOT / "openai-python" / "f82268f2fefd5cfbc7eeb59c297688be2f6ca0849a6e4f17851b517310841d9b.bin").read_bytes()
    out = run("decode", "--protocol", "openai-chat", "--events", "-", stdin=body)
    assert out.returncode == 0, out.stderr
    events = E.loads_jsonl(out.stdout)
    assert E.check_stream(events) == len(events)
    assert [e.tool_call_name for e in events if e.type == "TOOL_CALL_START"] == ["GetWeatherArgs", "get_stock_price"]


def test_decode_of_a_broken_stream_prints_what_it_could_and_fails():
    body = (
        b'data: {"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1}}}\n\n'
        b'data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Par"}}\n\n'
        b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tial"}}\n\n'
        b"data: {broken\n\n"
    )
    out = run("decode", "--protocol", "anthropic", "-", stdin=body)
    assert out.returncode == 1
    msg = Msg.model_validate_json(out.stdout)
    assert msg.get_text_content() == "Partial" and msg.finished_reason == "error"
    assert msg.error.type == "upstream"
    assert b"StreamProtocolError" in out.stderr and b"invalid JSON" in out.stderr


def test_decode_usage_errors():
    assert run("decode", "--protocol", "nope", "-").returncode == 2
    missing = run("decode", "--protocol", "anthropic", "/nonexistent/file.sse")
    assert missing.returncode == 2 and b"cannot read" in missing.stderr


def test_format_prints_the_payload(tmp_path):
    from modelwire.message import AssistantMsg, ToolCallBlock, ToolResultBlock, UserMsg

    conv = [
        UserMsg("u", "Weather?"),
        AssistantMsg("a", [ToolCallBlock(id="c1", name="get_weather", input='{"city": "Oslo"}'), ToolResultBlock(id="c1", name="get_weather", output="snow", state="success")]),
    ]
    msgs = tmp_path / "conv.json"
    msgs.write_text(json.dumps([m.to_dict() for m in conv]))
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "get_weather", "description": "w", "parameters": {"type": "object"}}]))
    out = run("format", "--protocol", "anthropic", "--tools", str(tools), "--tool-choice", "auto", str(msgs))
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert payload["messages"][1]["content"] == [{"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Oslo"}}]
    assert payload["messages"][2]["content"] == [{"type": "tool_result", "tool_use_id": "c1", "content": "snow"}]
    assert payload["tool_choice"] == {"type": "auto"}
    chat = json.loads(run("format", "--protocol", "openai-chat", "-", stdin=msgs.read_bytes()).stdout)
    assert chat["messages"][2] == {"role": "tool", "tool_call_id": "c1", "content": "snow"}


def test_format_errors_name_the_message(tmp_path):
    from modelwire.message import AssistantMsg, ToolResultBlock, UserMsg

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([UserMsg("u", "x").to_dict(), AssistantMsg("a", [ToolResultBlock(id="ghost", name="f", output="", state="success")]).to_dict()]))
    out = run("format", "--protocol", "openai-responses", str(bad))
    assert out.returncode == 2 and b"message [1]" in out.stderr and b"ghost" in out.stderr
    notjson = tmp_path / "x.json"
    notjson.write_text("{")
    assert b"is not JSON" in run("format", "--protocol", "anthropic", str(notjson)).stderr
