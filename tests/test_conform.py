"""``modelwire conform``: the probe against a scripted server with known quirks (each quirk
row checked, and the profile it writes), against CopilotKit's aimock (an independent
server), and bad input getting one clear line. The written profile makes a tool round
trip through ``modelwire.Agent`` pass where the preset's own defaults fail."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from modelwire.adapters import encode_sse
from modelwire.conform import probe
from modelwire.errors import InvalidRequestError
from modelwire.message import UserMsg
from modelwire.testing import ProviderServer, error_reply
from modelwire.testing.server import Reply
from test_recheck import Aimock


# aimock's answers, by what the user asked (its fixture format): a call, then the answer to its result.
AIMOCK_FIXTURES = [
    {
        "match": {"userMessage": "weather", "hasToolResult": False},
        "response": {"toolCalls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
    },
    {"match": {"userMessage": "weather", "hasToolResult": True}, "response": {"content": "It is sunny in Paris."}},
    {"match": {"userMessage": "Note the time"}, "response": {"toolCalls": [{"name": "note_time", "arguments": {}}]}},
    {"match": {"userMessage": "JSON object"}, "response": {"content": '{"answer": "OK"}'}},
    {"match": {}, "response": {"content": "OK"}},
]


def _sse(chunks):
    return Reply(
        body=encode_sse([(None, c) for c in chunks] + [(None, "[DONE]")]), headers={"content-type": "text/event-stream"}
    )


def _chunk(delta, finish=None):
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "quirky-1",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def quirky(request):
    """llama.cpp-like quirks: it ignores max_completion_tokens (max_tokens is honoured), refuses
    stream_options, ``content: null``, the developer role, json_schema and images, sends no
    usage, ignores a forced tool choice and ``json_object`` (it answers in prose), and gives every
    call the id ``call_0``."""
    body = request["json"] or {}
    if request["method"] == "GET":
        return Reply(
            body=json.dumps({"object": "list", "data": [{"id": "quirky-1"}]}).encode(),
            headers={"content-type": "application/json"},
        )
    if not isinstance(body.get("messages"), list):
        return error_reply(400, {"error": {"message": "messages must be a list", "type": "invalid_request_error"}})
    if body.get("model") != "quirky-1":
        return error_reply(
            404, {"error": {"message": f"model {body.get('model')!r} not found", "type": "not_found_error"}}
        )
    for name in ("stream_options",):
        if name in body:
            return error_reply(
                400,
                {
                    "error": {
                        "message": f"Unrecognized request argument supplied: {name}",
                        "type": "invalid_request_error",
                    }
                },
            )
    messages = body["messages"]
    refused = (
        ("developer", any(m.get("role") == "developer" for m in messages)),
        ("content null", any(m.get("role") == "assistant" and m.get("content") is None for m in messages)),
        (
            "image",
            any(
                isinstance(m.get("content"), list) and any(p.get("type") == "image_url" for p in m["content"])
                for m in messages
            ),
        ),
        ("json_schema", (body.get("response_format") or {}).get("type") == "json_schema"),
    )
    for what, hit in refused:
        if hit:
            return error_reply(
                400, {"error": {"message": f"this server does not support {what}", "type": "invalid_request_error"}}
            )
    last = messages[-1]
    if body.get("tools") and last.get("role") == "user":
        tool = body["tools"][0]["function"]["name"]
        if "Count" not in str(last.get("content")) and (
            "weather" in str(last.get("content")).lower() or "time" in str(last.get("content")).lower()
        ):
            args = '{"city": "Paris"}' if tool == "get_weather" else ""
            return _sse(
                [
                    _chunk(
                        {
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "call_0",
                                    "type": "function",
                                    "function": {"name": tool, "arguments": ""},
                                }
                            ],
                        }
                    ),
                    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": args}}]}),
                    _chunk({}, "tool_calls"),
                ]
            )
    limit = body.get("max_tokens", 48)  # max_completion_tokens is ignored
    words = (
        ["It", "is", "sunny."]
        if last.get("role") == "tool"
        else [str(n) for n in range(1, 61)]
        if "Count" in str(last.get("content"))
        else ["OK"]
    )
    words = words[:limit]
    if body.get("stream") is False:
        whole = {
            "id": "c1",
            "object": "chat.completion",
            "model": "quirky-1",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": " ".join(words)}, "finish_reason": "stop"}
            ],
        }
        return Reply(body=json.dumps(whole).encode(), headers={"content-type": "application/json"})
    return _sse(
        [_chunk({"role": "assistant", "content": ""})]
        + [_chunk({"content": w + " "}) for w in words]
        + [_chunk({}, "stop")]
    )


def test_each_quirk_is_a_row_and_the_profile_sends_what_the_server_takes():
    with ProviderServer() as server:
        server.respond = quirky
        report = probe(server.url + "/v1", "quirky-1")
    rows = {r.check: r for r in report.rows}
    status = {check: r.status for check, r in rows.items()}
    assert status["model list"] == "ok" and status["streaming"] == "ok"
    # No usage unless asked is what OpenAI does; refusing to be asked is this server's own.
    assert status["usage in the stream"] == "ok" and "unless asked" in rows["usage in the stream"].evidence
    assert status["stream_options.include_usage"] == "unsupported"
    assert "Unrecognized request argument supplied: stream_options" in rows["stream_options.include_usage"].evidence
    assert (
        status["max_completion_tokens"] == "quirk"
        and "max_tokens is honoured" in rows["max_completion_tokens"].evidence
    )
    assert (status["system role"], status["developer role"], status["content as parts"], status["image part"]) == (
        "ok",
        "unsupported",
        "ok",
        "unsupported",
    )
    assert (status["tool definitions"], status["forced call (required)"], status["streamed arguments"]) == (
        "ok",
        "ok",
        "ok",
    )
    assert status["ids unique per call"] == "quirk" and "call_0" in rows["ids unique per call"].evidence
    assert status["a call with no arguments"] == "ok" and "read as {}" in rows["a call with no arguments"].evidence
    assert (
        status["tool-result turn (content: null)"] == "quirk"
        and "does not support content null" in rows["tool-result turn (content: null)"].evidence
    )
    assert (
        status["json_schema (strict)"],
        status["json_object"],
        status["non-streamed answer"],
        status["error shape (4xx)"],
    ) == ("unsupported", "quirk", "ok", "ok")
    assert "not a JSON object: 'OK" in rows["json_object"].evidence
    assert report.requests <= 40
    profile = report.profile()
    assert profile["model"] == "openai-compatible:quirky-1" and profile["base_url"] == report.base_url
    assert profile["dialect"] == {
        "stream_usage": False,
        "max_tokens_field": "max_tokens",
        "empty_content_null": False,
        "json_schema": False,
    }
    assert profile["capabilities"] == {"image_input": False}


def weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


def test_the_written_profile_makes_an_agent_tool_round_trip_pass(tmp_path, monkeypatch):
    """``--write-profile`` writes the profile; the agent with it runs a tool round trip on the
    quirky server, which refuses what the preset's defaults send."""
    from modelwire.agent import Agent
    from modelwire.models import load_model

    monkeypatch.chdir(tmp_path)
    env = {**os.environ, "MODELWIRE_DEBUG": "0"}
    with ProviderServer() as server:
        server.respond = quirky
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "modelwire",
                "conform",
                "--base-url",
                server.url + "/v1",
                "-m",
                "quirky-1",
                "--write-profile",
                "quirky",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            cwd=tmp_path,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert "wrote the profile 'quirky'" in run.stderr and "unsupported" in run.stdout
        written = (tmp_path / "modelwire.toml").read_text()
        assert "[profiles.quirky]" in written and 'max_tokens_field = "max_tokens"' in written
        reply = asyncio.run(
            Agent("Buddy", load_model("quirky"), tools=[weather]).reply(UserMsg("me", "What is the weather in Paris?"))
        )
        assert reply.get_text_content().strip() == "It is sunny.", reply.get_text_content()
        assert [b.type for b in reply.content if b.type in ("tool_call", "tool_result")] == ["tool_call", "tool_result"]
        sent = [r["json"] for r in server.requests if r["method"] == "POST"][-2:]
        assert all("stream_options" not in b and "max_completion_tokens" not in b for b in sent)
        assert sent[1]["messages"][-2]["content"] == ""  # not null
        # Probing again through the profile: what it handles is ok, and modelwire's own requests pass.
        through = subprocess.run(
            [sys.executable, "-m", "modelwire", "conform", "--profile", "quirky", "--json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            cwd=tmp_path,
        )
        assert through.returncode == 0, through.stderr
        rows = {r["check"]: r for r in json.loads(through.stdout)["rows"]}
        for check, key in (
            ("stream_options.include_usage", "stream_usage = False"),
            ("max_completion_tokens", "max_tokens_field = 'max_tokens'"),
            ("image part", "image_input = False"),
            ("tool-result turn (content: null)", "empty_content_null = False"),
            ("json_schema (strict)", "json_schema = False"),
        ):
            assert rows[check]["status"] == "ok" and f"(the profile sets {key})" in rows[check]["evidence"], rows[check]
        assert rows["modelwire: streamed reply"]["status"] == rows["modelwire: tool round trip"]["status"] == "ok"
        # What no profile can change stays as it was: the developer role refused, one call at a time, ids
        # repeated, prose for json_object; and no structured output either way (no json_schema, and a forced
        # final-answer tool is ignored: the agent gets prose).
        assert [c for c, r in rows.items() if r["status"] != "ok"] == [
            "developer role",
            "two parallel calls",
            "ids unique per call",
            "json_object",
            "modelwire: structured output",
        ]
        assert "with a final-answer tool" in rows["modelwire: structured output"]["evidence"]
        # Without the profile, the preset's defaults send content: null, which this server refuses.
        plain = load_model("openai-compatible:quirky-1", base_url=server.url + "/v1", dialect={"stream_usage": False})
        with pytest.raises(InvalidRequestError, match="does not support content null"):
            asyncio.run(Agent("Buddy", plain, tools=[weather]).reply(UserMsg("me", "What is the weather in Paris?")))
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "modelwire",
            "conform",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "-m",
            "x",
            "--write-profile",
            "quirky",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=tmp_path,
    )
    assert again.returncode != 0


def test_against_aimock_and_its_profile(tmp_path, monkeypatch):
    from modelwire.agent import Agent
    from modelwire.models import load_model

    with Aimock(tmp_path, AIMOCK_FIXTURES) as server:
        report = probe(server.url + "/v1", "gpt-4o")
        status = {r.check: r.status for r in report.rows}
        assert (
            status["model list"] == "ok"
            and status["streaming"] == "ok"
            and status["stream_options.include_usage"] == "ok"
        )
        assert (
            status["tool definitions"] == status["forced call (required)"] == status["forced call (named tool)"] == "ok"
        )
        assert status["json_object"] == status["non-streamed answer"] == status["error shape (4xx)"] == "ok"
        assert status["json_schema (strict)"] == "ok"  # the answer parsed, and in the schema
        assert status["tool-result turn (content: null)"] == "ok"
        profile = report.profile()
        monkeypatch.chdir(tmp_path)
        from modelwire.conform import profile_toml

        (tmp_path / "modelwire.toml").write_text(profile_toml("aimock", profile))
        reply = asyncio.run(
            Agent("Buddy", load_model("aimock"), tools=[weather]).reply(UserMsg("me", "What is the weather in Paris?"))
        )
    assert reply.error is None and "sunny" in reply.get_text_content()
    assert [b.type for b in reply.content if b.type in ("tool_call", "tool_result")] == ["tool_call", "tool_result"]


def _one_line(*args, **env):
    run = subprocess.run(
        [sys.executable, "-m", "modelwire", "conform", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "MODELWIRE_DEBUG": "0", **env},
        timeout=60,
    )
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert run.returncode != 0 and len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    return lines[0]


def test_bad_input_gets_one_clear_line():
    with ProviderServer() as server:
        gone = server.url
    assert "nothing answers at" in _one_line("--base-url", gone + "/v1", "-m", "x")
    assert "not an http(s) URL" in _one_line("--base-url", "localhost:8080/v1", "-m", "x")
    with ProviderServer() as server:
        server.respond = lambda request: Reply(
            body=b"<html><body>Welcome to nginx!</body></html>", headers={"content-type": "text/html"}
        )
        assert "not JSON and not SSE" in _one_line("--base-url", server.url + "/v1", "-m", "x")
    with ProviderServer() as server:
        server.respond = quirky
        assert "model 'nope' not found" in _one_line("--base-url", server.url + "/v1", "-m", "nope")
    with ProviderServer() as server:
        server.respond = lambda request: error_reply(
            401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
        )
        line = _one_line(
            "--base-url", server.url + "/v1", "-m", "x", "--api-key-env", "PROBE_KEY", PROBE_KEY="sk-wrong"
        )
        assert "HTTP 401" in line and "Incorrect API key" in line
    assert "PROBE_KEY" in _one_line(
        "--base-url", "http://127.0.0.1:9/v1", "-m", "x", "--api-key-env", "PROBE_KEY", PROBE_KEY=""
    )


def test_the_probe_stops_at_its_request_budget():
    with ProviderServer() as server:
        server.respond = quirky
        report = probe(server.url + "/v1", "quirky-1", max_requests=5)
    assert report.requests == 5 and report.stopped == "5 requests sent"


def test_a_dialect_in_a_profile_is_checked_like_a_presets():
    from modelwire.errors import ConfigError
    from modelwire.models import load_model

    with pytest.raises(ConfigError, match="max_token_field"):
        load_model("openai-compatible:m", base_url="http://127.0.0.1:9/v1", dialect={"max_token_field": "max_tokens"})
    model = load_model(
        "openai-compatible:m",
        base_url="http://127.0.0.1:9/v1",
        dialect={"max_tokens_field": "max_completion_tokens", "stream_usage": False},
    )
    body, _ = model.build_request([UserMsg("u", "hi")], options={"max_tokens": 9})
    assert body["max_completion_tokens"] == 9 and "stream_options" not in body


def thinking_server(request):
    """DeepSeek's thinking mode: reasoning arrives in ``reasoning_content``, and a tool-call
    turn without it is refused with DeepSeek's own words (JohnnyZ93/oai-compatible-copilot#202,
    2026-04-24)."""
    body = request["json"] or {}
    if request["method"] == "POST" and isinstance(body.get("messages"), list):
        for m in body["messages"]:
            if m.get("role") == "assistant" and m.get("tool_calls") and not m.get("reasoning_content"):
                return error_reply(
                    400,
                    {
                        "error": {
                            "message": "The reasoning_content in the thinking mode must be passed back to the API.",
                            "type": "invalid_request_error",
                        }
                    },
                )
        if body.get("model") == "quirky-1" and not body.get("tools") and body.get("stream", True):
            return _sse(
                [
                    _chunk({"role": "assistant", "reasoning_content": "Let me think."}),
                    _chunk({"content": "OK"}),
                    _chunk({}, "stop"),
                ]
            )
    return quirky(request)


def test_reasoning_that_must_go_back_and_the_stop_reasons():
    with ProviderServer() as server:
        server.respond = thinking_server
        report = probe(server.url + "/v1", "quirky-1")
    rows = {r.check: r for r in report.rows}
    assert rows["reasoning fields"].dialect == {"reasoning_field": "reasoning_content", "reasoning_on_tool_calls": True}
    assert "must be passed back" in rows["reasoning fields"].evidence
    assert (
        rows["stop reasons"].status == "ok"
        and "tool_calls" in rows["stop reasons"].evidence
        and "stop" in rows["stop reasons"].evidence
    )
    with ProviderServer() as server:
        server.respond = quirky
        plain = {r.check: r for r in probe(server.url + "/v1", "quirky-1").rows}
    assert plain["reasoning fields"].dialect == {} and "no reasoning arrived" in plain["reasoning fields"].evidence


def anthropic_quirky(request):
    """An Anthropic route of a compatible server: no adaptive thinking (Qwen's words,
    anthropics/claude-code#29531, 2026-02-28), no forced tool choice, no images."""
    from modelwire.testing.sse import body as sse_body

    data = request["json"] or {}
    if request["method"] == "GET":
        return Reply(
            body=json.dumps({"data": [{"id": "qwen-next", "type": "model"}], "has_more": False}).encode(),
            headers={"content-type": "application/json"},
        )
    if not isinstance(data.get("messages"), list):
        return error_reply(
            400,
            {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": "messages: Input should be a valid list"},
            },
        )
    refused = (
        (
            (data.get("thinking") or {}).get("type") == "adaptive",
            "Only 'enabled' and 'disabled' are supported for thinking; 'adaptive' is not supported.",
        ),
        ((data.get("tool_choice") or {}).get("type") in ("any", "tool"), "tool_choice any and tool are not supported"),
        (
            any(
                isinstance(m.get("content"), list) and any(b.get("type") == "image" for b in m["content"])
                for m in data["messages"]
            ),
            "image input is not supported",
        ),
    )
    for hit, words in refused:
        if hit:
            return error_reply(400, {"type": "error", "error": {"type": "invalid_request_error", "message": words}})
    last = data["messages"][-1]
    answered = isinstance(last.get("content"), list) and any(b.get("type") == "tool_result" for b in last["content"])
    named = [t["name"] for t in data.get("tools") or () if t["name"] in json.dumps(last)]
    if named:  # a tool the user names is called (the final answer the agent asks for, in its schema)
        raw = sse_body("anthropic", ("tool", "toolu_q2", named[0], '{"answer": "OK"}'))
    elif data.get("tools") and "weather" in json.dumps(data["messages"][0]).lower() and not answered:
        raw = sse_body("anthropic", ("tool", "toolu_q1", data["tools"][0]["name"], '{"city": "Paris"}'))
    else:
        raw = sse_body("anthropic", ("text", "It is sunny." if answered else "OK"))
    if data.get("stream") is False:
        whole = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "qwen-next",
            "content": [{"type": "text", "text": "OK"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 1},
        }
        return Reply(body=json.dumps(whole).encode(), headers={"content-type": "application/json"})
    return Reply(body=raw, headers={"content-type": "text/event-stream"})


def test_an_anthropic_route_its_quirks_and_the_profile_they_make(tmp_path, monkeypatch):
    from modelwire.agent import Agent
    from modelwire.conform import profile_toml
    from modelwire.models import load_model

    monkeypatch.setenv("QWEN_KEY", "sk-probe")
    with ProviderServer() as server:
        server.respond = anthropic_quirky
        report = probe(server.url, "qwen-next", protocol="anthropic", api_key_env="QWEN_KEY")
        rows = {r.check: r for r in report.rows}
        status = {check: r.status for check, r in rows.items()}
        assert (status["model list"], status["streaming"], status["usage in the stream"]) == ("ok", "ok", "ok")
        assert (status["thinking (adaptive)"], status["thinking (budget)"]) == ("unsupported", "ok")
        assert "'adaptive' is not supported" in rows["thinking (adaptive)"].evidence
        assert (
            status["forced call (any)"] == status["forced call (named tool)"] == status["image block"] == "unsupported"
        )
        assert (
            status["tool definitions"],
            status["tool-result turn"],
            status["non-streamed answer"],
            status["error shape (4xx)"],
        ) == ("ok", "ok", "ok", "ok")
        assert all(
            r["headers"].get("x-api-key") == "sk-probe" and r["headers"].get("anthropic-version")
            for r in server.requests
        )
        profile = report.profile()
        assert profile["model"] == "anthropic-compatible:qwen-next" and profile["dialect"] == {"key_envs": ["QWEN_KEY"]}
        assert profile["capabilities"] == {"image_input": False, "forced_tool": False, "thinking": ["budget"]}
        monkeypatch.chdir(tmp_path)
        (tmp_path / "modelwire.toml").write_text(profile_toml("qwen", profile))
        model = load_model("qwen")
        reply = asyncio.run(
            Agent("Buddy", model, tools=[weather]).reply(UserMsg("me", "What is the weather in Paris?"))
        )
        assert reply.get_text_content().strip() == "It is sunny."
        assert server.requests[-1]["headers"].get("x-api-key") == "sk-probe"  # read from QWEN_KEY, as the probe did
        # The profile's capabilities: thinking goes on a budget, and forcing is refused before sending.
        body, _ = model.build_request([UserMsg("u", "hi")], options={"thinking": True, "max_tokens": 4096})
        assert body["thinking"]["type"] == "enabled"
        with pytest.raises(Exception, match="tool_choice"):
            model.build_request([UserMsg("u", "hi")], tools=[weather], tool_choice="required")


def test_structured_output_through_a_profile_is_what_the_agent_gets(tmp_path, monkeypatch):
    """The "modelwire: structured output" row asks as the agent's ``structured_model`` does: on
    this Anthropic route (no output_config.format for the model, no forced tool) through a
    final-answer tool the model is asked to call, which works; ``ok`` only for an answer that
    parses and fits the schema."""
    from modelwire.conform import probe_profile, profile_toml

    monkeypatch.setenv("QWEN_KEY", "sk-probe")
    with ProviderServer() as server:
        server.respond = anthropic_quirky
        report = probe(server.url, "qwen-next", protocol="anthropic", api_key_env="QWEN_KEY")
        monkeypatch.chdir(tmp_path)
        (tmp_path / "modelwire.toml").write_text(profile_toml("qwen", report.profile()))
        rows = {r.check: r for r in probe_profile("qwen").rows}
    row = rows["modelwire: structured output"]
    assert row.status == "ok" and row.evidence == "asked with a final-answer tool: {'answer': 'OK'}", row


def test_aimock_on_its_anthropic_route(tmp_path, monkeypatch):
    from modelwire.conform import probe_profile, profile_toml

    with Aimock(tmp_path, AIMOCK_FIXTURES) as server:
        report = probe(server.url, "claude-sonnet-4-5", protocol="anthropic")
        monkeypatch.chdir(tmp_path)
        (tmp_path / "modelwire.toml").write_text(profile_toml("aimock-anthropic", report.profile()))
        again = {r.check: r for r in probe_profile("aimock-anthropic").rows}
    assert (
        again["modelwire: tool round trip"].status == "ok"
        and "It is sunny in Paris." in again["modelwire: tool round trip"].evidence
    )
    status = {r.check: r.status for r in report.rows}
    assert (
        status["streaming"]
        == status["tool definitions"]
        == status["forced call (any)"]
        == status["forced call (named tool)"]
        == "ok"
    )
    assert status["tool-result turn"] == status["non-streamed answer"] == status["a call with no input"] == "ok"
    # What aimock does that the real API does not, found by the probe: no token counts, and a
    # malformed request answered 200.
    assert status["usage in the stream"] == "quirk" and status["error shape (4xx)"] == "quirk"


def test_a_schema_taken_but_not_kept_is_unsupported():
    """A server that takes response_format and answers JSON outside the schema (here: the
    wrong key) gives a caller nothing a refusal would not: ``unsupported``, and the profile asks
    through a tool. The row says where the answer departs."""

    def loose(request):
        body = request["json"] or {}
        if request["method"] == "POST" and (body.get("response_format") or {}).get("type") == "json_schema":
            return _sse([_chunk({"role": "assistant", "content": '{"reply": "OK"}'}), _chunk({}, "stop")])
        return quirky(request)

    def cut(request):  # the JSON begun, and ended at the token limit: what it would have been is not known
        body = request["json"] or {}
        if request["method"] == "POST" and (body.get("response_format") or {}).get("type") == "json_schema":
            return _sse([_chunk({"role": "assistant", "content": '{"answer": "O'}), _chunk({}, "length")])
        return quirky(request)

    found = []
    for respond in (loose, cut):
        with ProviderServer() as server:
            server.respond = respond
            found.append({r.check: r for r in probe(server.url + "/v1", "quirky-1").rows}["json_schema (strict)"])
    assert (found[0].status, found[0].dialect) == ("unsupported", {"json_schema": False})
    assert found[0].evidence == 'taken, but the answer lacks answer: \'{"reply": "OK"}\''
    assert (found[1].status, found[1].dialect) == ("quirk", {})
    assert found[1].evidence == "taken, but the answer was cut at the probe's token limit: '{\"answer\": \"O'"
