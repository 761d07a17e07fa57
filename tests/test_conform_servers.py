"""``modelwire conform`` against servers nobody here wrote: LiteLLM's proxy (from pip, in its
own environment, in front of a local custom provider: ``tests/litellm/``) on its Chat
Completions and Anthropic routes, and CopilotKit's aimock on its Responses and Ollama routes.
Each report is checked against what the server really does, the written profile is probed
again through itself, and a tool round trip through ``modelwire.Agent`` passes on it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from modelwire.conform import probe, probe_profile, profile_toml
from modelwire.errors import ProviderError
from test_conform import AIMOCK_FIXTURES
from test_recheck import Aimock

LITELLM = Path(__file__).parent / "litellm"
KEY = "sk-local-conform"  # the proxy's master key: it refuses every request without it


@pytest.fixture(scope="module")
def litellm_proxy():
    exe = LITELLM / ".venv" / "bin" / "litellm"
    if not exe.is_file():
        pytest.skip(
            (
                "needs tests/litellm/.venv (python3 -m venv tests/litellm/.venv && "
                "tests/litellm/.venv/bin/pip install -r tests/litellm/requirements.txt)"
            )
        )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "LITELLM_MASTER_KEY": KEY,
        "PYTHONPATH": str(LITELLM),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "NO_DOCS": "True",
    }
    log = open(LITELLM / ".venv" / f"proxy-{port}.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [str(exe), "--config", "config.yaml", "--host", "127.0.0.1", "--port", str(port)],
        cwd=LITELLM,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 120
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"LiteLLM's proxy did not start: {Path(log.name).read_text()[-2000:]}") from None
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(20)
        log.close()


def _status(report):
    return {row.check: row.status for row in report.rows}


def _write(tmp_path, monkeypatch, name, report):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "modelwire.toml").write_text(profile_toml(name, report.profile()))


def test_litellm_chat_route_its_profile_and_a_probe_through_it(litellm_proxy, tmp_path, monkeypatch):
    monkeypatch.setenv("LITELLM_PROBE_KEY", KEY)
    report = probe(litellm_proxy + "/v1", "echo", api_key_env="LITELLM_PROBE_KEY")
    rows = {row.check: row for row in report.rows}
    status = _status(report)
    assert status["model list"] == status["streaming"] == status["stream_options.include_usage"] == "ok"
    assert "[DONE] at the end" in rows["streaming"].evidence
    # The proxy sends usage only when asked, as OpenAI does: the profile asks.
    assert status["usage in the stream"] == "ok" and rows["stream_options.include_usage"].dialect == {
        "stream_usage": True
    }
    assert "none unless asked, as OpenAI" in rows["usage in the stream"].evidence
    for check in (
        "tool definitions",
        "forced call (required)",
        "forced call (named tool)",
        "streamed arguments",
        "ids unique per call",
        "tool-result turn (content: null)",
    ):
        assert status[check] == "ok", (check, rows[check].evidence)
    assert rows["a call with no arguments"].evidence == "arguments '{}'"
    assert status["json_schema (strict)"] == status["json_object"] == status["non-streamed answer"] == "ok"
    assert rows["json_schema (strict)"].evidence == 'the answer is JSON in the schema: \'{"answer": "OK"}\''
    assert status["error shape (4xx)"] == "ok" and rows["error shape (4xx)"].evidence.startswith("HTTP 400")
    assert rows["stop reasons"].evidence == "stop, tool_calls"
    profile = report.profile()
    assert profile["model"] == "openai-compatible:echo" and profile["dialect"] == {
        "stream_usage": True,
        "key_envs": ["LITELLM_PROXY_KEY".replace("PROXY", "PROBE")],
    }
    assert KEY not in profile_toml("lite", profile)  # the key stays in its variable

    _write(tmp_path, monkeypatch, "lite", report)
    again = probe_profile("lite")
    status = _status(again)
    assert status["usage in the stream"] == "ok"
    assert (
        status["modelwire: streamed reply"]
        == status["modelwire: tool round trip"]
        == status["modelwire: structured output"]
        == "ok"
    )
    assert "'It is sunny.'" in {r.check: r for r in again.rows}["modelwire: tool round trip"].evidence
    # Every row is ok but what the model does (one call where two were asked for).
    assert [c for c, s in status.items() if s != "ok"] == ["two parallel calls"]


def test_litellm_anthropic_route(litellm_proxy, tmp_path, monkeypatch):
    report = probe(litellm_proxy, "echo", protocol="anthropic", api_key=KEY)
    rows = {row.check: row for row in report.rows}
    status = _status(report)
    assert (
        status["streaming"]
        == status["usage in the stream"]
        == status["tool definitions"]
        == status["forced call (any)"]
        == "ok"
    )
    assert status["tool-result turn"] == status["non-streamed answer"] == status["a call with no input"] == "ok"
    assert rows["stop reasons"].evidence == "end_turn, tool_use"
    # What LiteLLM does with Anthropic's thinking for a provider that has none: a 400 in its words.
    assert status["thinking (adaptive)"] == status["thinking (budget)"] == "unsupported"
    assert "UnsupportedParamsError" in rows["thinking (budget)"].evidence
    # A malformed request is answered 500, not 4xx, with its traceback cut to one line.
    assert status["error shape (4xx)"] == "quirk" and rows["error shape (4xx)"].evidence.startswith(
        "a malformed request was answered HTTP 500"
    )
    assert "\n" not in rows["error shape (4xx)"].evidence
    assert report.profile() == {
        "model": "anthropic-compatible:echo",
        "base_url": litellm_proxy,
        "capabilities": {"thinking": []},
    }
    monkeypatch.setenv("ANTHROPIC_COMPATIBLE_API_KEY", KEY)
    _write(tmp_path, monkeypatch, "lite-anthropic", report)
    again = {row.check: row for row in probe_profile("lite-anthropic").rows}
    assert (
        again["thinking (budget)"].status == "ok"
        and "(the profile sets thinking = [])" in again["thinking (budget)"].evidence
    )
    for check in (
        "modelwire: streamed reply",
        "modelwire: tool round trip",
        "modelwire: tool-result turn",
        "modelwire: structured output",
    ):
        assert again[check].status == "ok", again[check].evidence
    # No output_config.format for this model: the agent asks through a final-answer tool, which works.
    assert again["modelwire: structured output"].evidence.startswith("asked with a final-answer tool: {'answer':")
    assert "'It is sunny.'" in again["modelwire: tool round trip"].evidence


def test_litellm_responses_route_fails_in_one_line(litellm_proxy):
    """LiteLLM's Responses bridge cannot route a custom provider: the probe says so at once."""
    with pytest.raises(ProviderError, match="a plain streamed request failed: HTTP 400: .*GetLLMProvider") as caught:
        probe(litellm_proxy + "/v1", "echo", protocol="openai-responses", api_key=KEY)
    assert "\n" not in str(caught.value)


def test_a_refused_key_on_the_proxy_is_one_line(litellm_proxy):
    """Without a database LiteLLM checks no other key than its master key: it answers 400 in
    its own words, which the one line carries."""
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "modelwire",
            "conform",
            "--base-url",
            litellm_proxy + "/v1",
            "-m",
            "echo",
            "--api-key-env",
            "PROBE_KEY",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PROBE_KEY": "sk-wrong", "MODELWIRE_DEBUG": "0"},
        timeout=120,
    )
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert run.returncode != 0 and len(lines) == 1 and "HTTP 400: No connected db." in lines[0], run.stderr


def test_aimock_responses_route_and_its_profile(tmp_path, monkeypatch):
    with Aimock(tmp_path, AIMOCK_FIXTURES) as server:
        report = probe(server.url + "/v1", "gpt-4o", protocol="openai-responses")
        rows = {row.check: row for row in report.rows}
        status = _status(report)
        for check in (
            "model list",
            "streaming",
            "instructions",
            "input as items",
            "developer role",
            "image input",
            "tool definitions",
            "forced call (required)",
            "forced call (named tool)",
            "streamed arguments",
            "a call with no arguments",
            "ids unique per call",
            "tool-result turn",
            "json_schema (strict)",
            "json_object",
            "store: false",
            "non-streamed answer",
            "previous_response_id",
            "stop reasons",
        ):
            assert status[check] == "ok", (check, rows[check].evidence)
        assert (
            "It is sunny in Paris." in rows["tool-result turn"].evidence
            and rows["a call with no arguments"].evidence == "arguments '{}'"
        )
        # What aimock does that OpenAI does not: no token counts, a malformed input answered 500.
        assert status["usage in the stream"] == "quirk" and status["error shape (4xx)"] == "quirk"
        assert report.profile() == {"model": "responses-compatible:gpt-4o", "base_url": server.url + "/v1"}
        _write(tmp_path, monkeypatch, "aimock-responses", report)
        again = _status(probe_profile("aimock-responses"))
    assert again["modelwire: streamed reply"] == again["modelwire: tool round trip"] == "ok"


def test_aimock_ollama_route_and_its_profile(tmp_path, monkeypatch):
    with Aimock(tmp_path, AIMOCK_FIXTURES) as server:
        report = probe(server.url, "gpt-4o", protocol="ollama")
        rows = {row.check: row for row in report.rows}
        status = _status(report)
        for check in (
            "model list",
            "streaming",
            "system role",
            "images",
            "tool definitions",
            "tool arguments",
            "a call with no arguments",
            "tool-result turn",
            "format (a schema)",
            "format: json",
            "think",
            "non-streamed answer",
            "error shape (4xx)",
            "stop reasons",
        ):
            assert status[check] == "ok", (check, rows[check].evidence)
        assert "x-ndjson" in rows["streaming"].evidence and "It is sunny in Paris." in rows["tool-result turn"].evidence
        assert status["usage in the stream"] == "quirk"  # aimock counts no tokens
        assert report.profile() == {"model": "ollama:gpt-4o", "base_url": server.url}
        _write(tmp_path, monkeypatch, "aimock-ollama", report)
        again = _status(probe_profile("aimock-ollama"))
    assert (
        again["modelwire: streamed reply"]
        == again["modelwire: tool round trip"]
        == again["modelwire: structured output"]
        == "ok"
    )
