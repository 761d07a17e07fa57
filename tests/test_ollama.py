"""Ollama's native API (``/api/chat``, NDJSON): real recordings (../shared, skipped without
it) decoded and checked against the official ``ollama`` client's types, requests checked
against its ``ChatRequest``, the context length taken from ``/api/show``, and the agent end
to end against a local server speaking NDJSON."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from modelwire.errors import IncompleteStreamError, ProviderError, StreamProtocolError
from modelwire.message import (
    AssistantMsg,
    Base64Source,
    DataBlock,
    SystemMsg,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    UserMsg,
)
from modelwire.models import load_model
from modelwire.protocols import get_protocol
from modelwire.testing import ProviderServer, Reply
from modelwire.testing.server import error_reply
from paths import ROOT

# How long a call here waits for the provider's published capabilities: long enough for a
# loaded machine, so that a test of what the answer does never depends on how fast it came.
WAIT = 30.0

OLLAMA = ROOT / "ollama"
NDJSON = "application/x-ndjson"
WIRE = get_protocol("ollama")


def recordings(pattern: str):
    found = sorted(OLLAMA.rglob(pattern)) if OLLAMA.is_dir() else []
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="needs ../shared/recorded-streams"))]


def ndjson(raw: bytes, **kw) -> Reply:
    return Reply(body=raw, headers={"content-type": NDJSON}, pieces=WIRE.split_stream(raw), **kw)


def show(context_length: int = 40960, capabilities=("completion", "tools", "thinking")) -> Reply:
    """An /api/show answer, checked by the ollama client's own ShowResponse type."""
    from ollama._types import ShowResponse

    info = {"general.architecture": "qwen3", "qwen3.context_length": context_length, "qwen3.embedding_length": 4096}
    data = {
        "modelfile": "FROM qwen3",
        "template": "{{ .Prompt }}",
        "details": {"family": "qwen3", "parameter_size": "8.2B"},
        "model_info": info,
        "capabilities": list(capabilities),
    }
    ShowResponse.model_validate(data)
    return Reply(
        body=json.dumps(data).encode(),
        headers={"content-type": "application/json"},
        pieces=[json.dumps(data).encode()],
        check=_is_show,
    )


def _is_show(request: dict) -> None:
    assert request["path"] == "/api/show", f"the /api/show answer was scripted, but {request['path']} was asked"


def reference(raw: bytes) -> dict:
    """What the ollama client's own ChatResponse objects say, accumulated line by line."""
    from ollama._types import ChatResponse

    text, thinking, calls, last = "", "", [], None
    for line in raw.splitlines():
        if not line.strip():
            continue
        chunk = ChatResponse.model_validate_json(line)
        text += chunk.message.content or ""
        thinking += chunk.message.thinking or ""
        calls += [(c.function.name, dict(c.function.arguments)) for c in chunk.message.tool_calls or []]
        last = chunk
    return {
        "text": text,
        "thinking": thinking,
        "calls": calls,
        "input": last.prompt_eval_count,
        "output": last.eval_count,
        "done_reason": last.done_reason,
    }


def decoded(raw: bytes) -> tuple[AssistantMsg, list]:
    adapter = WIRE.new_adapter("r")
    decoder = WIRE.decoder(adapter, keep=True)
    for piece in (raw[i : i + 37] for i in range(0, len(raw), 37)):  # split anywhere
        decoder.feed(piece)
    decoder.close()
    msg = AssistantMsg("a", [], id="r")
    for event in decoder.events:
        msg.append_event(event)
    return msg, decoder.events


@pytest.mark.parametrize("path", recordings("*.ndjson"), ids=lambda p: getattr(p, "name", "none"))
def test_recorded_streams_decode_as_the_ollama_client_reads_them(path):
    raw = path.read_bytes()
    msg, events = decoded(raw)
    want = reference(raw)
    got_calls = [(c.name, json.loads(c.input)) for c in msg.get_content_blocks("tool_call")]
    thinking = "".join(b.thinking for b in msg.get_content_blocks("thinking"))
    assert ((msg.get_text_content() or ""), thinking, got_calls) == (want["text"], want["thinking"], want["calls"])
    end = events[-1]
    assert (end.type, end.input_tokens, end.output_tokens, end.provider_stop_reason) == (
        "MODEL_CALL_END",
        want["input"],
        want["output"],
        want["done_reason"],
    )
    assert end.stop_reason == ("tool_use" if got_calls else "end_turn")
    assert len({c.id for c in msg.get_content_blocks("tool_call")}) == len(got_calls)  # each call its own id


@pytest.mark.parametrize("path", recordings("*.response.json"), ids=lambda p: getattr(p, "name", "none"))
def test_a_whole_answer_reads_like_the_stream(path):
    raw = path.read_bytes()
    want = reference(raw)
    with ProviderServer() as server:
        server.script(Reply(body=raw, headers={"content-type": "application/json; charset=utf-8"}, pieces=[raw]))
        reply = asyncio.run(load_model("ollama:m", base_url=server.url, capability_lookup=False).complete("hi"))
    assert (reply.get_text_content() or "") == want["text"]
    assert [(c.name, json.loads(c.input)) for c in reply.get_content_blocks("tool_call")] == want["calls"]


def check_request(body: dict) -> None:
    """The ollama client's ChatRequest takes it, and it holds no field that type lacks."""
    from ollama._types import ChatRequest, Message

    ChatRequest.model_validate(body)
    assert set(body) <= set(ChatRequest.model_fields), set(body) - set(ChatRequest.model_fields)
    for message in body["messages"]:
        assert set(message) <= set(Message.model_fields), set(message) - set(Message.model_fields)


def test_the_request_has_options_think_format_tools_images_and_results():
    history = [
        SystemMsg("s", "Be brief."),
        UserMsg(
            "u",
            [
                TextBlock(text="What is this?"),
                DataBlock(source=Base64Source(data="iVBORw0KGgo=", media_type="image/png")),
            ],
        ),
        AssistantMsg(
            "a",
            [
                ToolCallBlock(id="call_1", name="weather", input='{"city": "Oslo"}'),
                ToolResultBlock(id="call_1", name="weather", output="rain", state="success"),
            ],
        ),
        UserMsg("u", "And tomorrow?"),
    ]
    tools = [
        {
            "name": "weather",
            "description": "w",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ]
    model = load_model(
        "ollama:qwen3:8b",
        max_tokens=256,
        temperature=0.2,
        top_p=0.9,
        stop=["END"],
        reasoning_effort="high",
        json_schema={"type": "object"},
        capabilities={"context_window": 32768},
    )
    body = model.build_request(history, tools)[0]
    check_request(body)
    assert body["options"] == {"num_ctx": 32768, "num_predict": 256, "temperature": 0.2, "top_p": 0.9, "stop": ["END"]}
    assert (body["think"], body["format"], body["stream"], body["model"]) == (
        "high",
        {"type": "object"},
        True,
        "qwen3:8b",
    )
    assert body["messages"][1]["images"] == ["iVBORw0KGgo="]
    assert body["messages"][2]["tool_calls"] == [{"function": {"name": "weather", "arguments": {"city": "Oslo"}}}]
    assert body["messages"][3] == {"role": "tool", "content": "rain", "tool_name": "weather"}
    assert body["tools"][0]["function"]["name"] == "weather"
    assert load_model("ollama:m", thinking=False).build_request([UserMsg("u", "x")])[0]["think"] is False
    with pytest.raises(Exception, match="thinking_budget"):
        load_model("ollama:m", thinking_budget=100).build_request([UserMsg("u", "x")])
    with pytest.raises(Exception, match="tool_choice"):
        model.build_request(history, tools, "required")
    # keep_alive and anything else go through extra_body.
    assert (
        load_model("ollama:m", extra_body={"keep_alive": "10m"}).build_request([UserMsg("u", "x")])[0]["keep_alive"]
        == "10m"
    )


def test_the_recorded_request_is_what_modelwire_sends():
    path = OLLAMA / "langchaingo" / "TestClient_GenerateChatStream.0.request.json"
    if not path.is_file():
        pytest.skip("needs ../shared/recorded-streams")
    sent = json.loads(path.read_text())
    body = load_model(
        "ollama:gemma3:1b", max_tokens=50, temperature=0, capabilities={"context_window": 32768}
    ).build_request([UserMsg("u", "Count from 1 to 5")])[0]
    assert (body["model"], body["messages"], body["stream"]) == (sent["model"], sent["messages"], sent["stream"])
    assert {k: body["options"][k] for k in sent["options"]} == sent["options"]


def test_num_ctx_comes_from_api_show_and_an_unknown_one_is_said(caplog):
    body = WIRE.fake_stream(("text", "Hi there."))
    with ProviderServer() as server:
        server.script(show(40960), ndjson(body), ndjson(body))
        model = load_model(
            "ollama:qwen3:8b", base_url=server.url, capability_lookup=True, capability_lookup_seconds=WAIT
        )
        asyncio.run(model.complete("hi"))
        asyncio.run(model.complete("again"))
        lookup, first, second = server.requests
    assert (lookup["method"], lookup["path"], lookup["json"]) == ("POST", "/api/show", {"model": "qwen3:8b"})
    assert first["json"]["options"]["num_ctx"] == second["json"]["options"]["num_ctx"] == 40960
    with ProviderServer() as server, caplog.at_level(logging.WARNING, logger="modelwire.protocols.ollama"):
        silent = json.dumps(
            {"modelfile": "FROM x", "capabilities": ["completion"]}
        ).encode()  # an answer with no context length
        server.script(Reply(body=silent, headers={"content-type": "application/json"}), ndjson(body))
        model = load_model(
            "ollama:never-seen-model", base_url=server.url, capability_lookup=True, capability_lookup_seconds=WAIT
        )
        asyncio.run(model.complete("hi"))
        sent = server.requests[-1]["json"]
    assert "num_ctx" not in sent.get("options", {})
    assert any(
        "context length is not known" in r.getMessage() and "never-seen-model" in r.getMessage() for r in caplog.records
    )


def test_a_server_that_is_not_running_is_said_first(caplog):
    """No server: the first thing said is that nothing answers there, not a warning about a
    context length the server was never asked for."""
    import socket

    from modelwire.errors import ConnectionError as MWConnectionError
    from modelwire.models.transport import RetryPolicy

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = load_model(
        "ollama:not-running-model",
        base_url=f"http://127.0.0.1:{port}",
        capability_lookup=True,
        capability_lookup_seconds=WAIT,
        retry=RetryPolicy(max_retries=0),
    )
    with (
        caplog.at_level(logging.WARNING, logger="modelwire.protocols.ollama"),
        pytest.raises(MWConnectionError, match="is the server running there"),
    ):
        asyncio.run(model.complete("hi"))
    assert not any("context length" in r.getMessage() for r in caplog.records)


def test_errors_carry_ollamas_text():
    with ProviderServer() as server:
        server.script(error_reply(404, {"error": "model 'llama9' not found, try pulling it first"}))
        with pytest.raises(ProviderError, match="try pulling it first") as info:
            asyncio.run(load_model("ollama:llama9", base_url=server.url, capability_lookup=False).complete("hi"))
    assert info.value.status_code == 404
    half = WIRE.fake_stream(("text", "Half an answer")).split(b"\n")[:2]
    raw = b"\n".join(half) + b'\n{"error": "an unexpected error occurred while loading the model"}\n'
    with ProviderServer() as server:
        server.script(ndjson(raw))
        with pytest.raises(ProviderError, match="while loading the model") as info:
            asyncio.run(load_model("ollama:m", base_url=server.url, capability_lookup=False).complete("hi"))
    assert "Half" in info.value.partial.get_text_content()


def test_broken_streams_are_typed_and_keep_what_came():
    good = WIRE.fake_stream(("text", "one two three"))
    with pytest.raises(StreamProtocolError, match="NDJSON") as info:
        decoded(good.split(b"\n")[0] + b"\n{not json\n")
    assert any(e.type == "TEXT_BLOCK_DELTA" for e in info.value.events)
    with pytest.raises(IncompleteStreamError):
        decoded(b"\n".join(good.split(b"\n")[:2]) + b"\n")  # no done line
    msg, _ = decoded(good.rstrip(b"\n"))  # the last line without its newline still counts
    assert msg.get_text_content().strip() == "one two three"


@pytest.mark.parametrize("size", [1, 2, 5, 37, 16384])
def test_lines_split_anywhere_with_crlf_and_blank_lines_read_as_whole_lines(size):
    words = " ".join(f"w{i}" for i in range(300))
    good = WIRE.fake_stream(("text", words))
    raw = good.replace(b"\n", b"\r\n\n").rstrip(b"\n")  # CRLF, a blank line after each, no last newline
    adapter = WIRE.new_adapter("r")
    decoder = WIRE.decoder(adapter, keep=True)
    for i in range(0, len(raw), size):
        decoder.feed(raw[i : i + size])
    decoder.close()
    msg = AssistantMsg("a", [], id="r")
    for event in decoder.events:
        msg.append_event(event)
    assert msg.get_text_content().strip() == words
    whole = WIRE.decoder(WIRE.new_adapter("r"), keep=True)
    whole.feed(good)
    whole.close()
    shape = lambda events: [(e.type, getattr(e, "delta", None)) for e in events]  # noqa: E731
    assert shape(decoder.events) == shape(whole.events)
    assert decoder.events[-1].type == whole.events[-1].type != "TEXT_BLOCK_DELTA"  # its end came


def test_a_line_longer_than_the_limit_is_refused_and_what_came_before_is_kept():
    from modelwire.adapters._ndjson import NDJSONDecoder

    first = WIRE.fake_stream(("text", "kept"))
    decoder = NDJSONDecoder(WIRE.new_adapter("r"), max_line=1000)
    events = decoder.feed(first.split(b"\n")[0] + b"\n" + b'{"message": "')
    for _ in range(9):
        assert decoder.feed(b"x" * 100) == []  # 9 pieces in: 913 bytes held, under the limit
    with pytest.raises(StreamProtocolError, match="longer than 1000") as info:
        decoder.feed(b"x" * 100)
    assert any(e.type == "TEXT_BLOCK_DELTA" and e.delta == "kept" for e in events + info.value.events)


def test_an_agent_runs_a_tool_and_answers():
    from modelwire.agent import Agent

    def weather(city: str) -> str:
        """The weather in a city."""
        return f"rain in {city}"

    with ProviderServer() as server:
        server.script(
            show(),
            ndjson(WIRE.fake_stream(("think", "I need the weather."), ("tool", "", "weather", '{"city": "Oslo"}'))),
            ndjson(WIRE.fake_stream(("text", "It rains in Oslo."))),
        )
        agent = Agent(
            "a",
            load_model(
                "ollama:qwen3:8b",
                base_url=server.url,
                capability_lookup=True,
                capability_lookup_seconds=WAIT,
                thinking=True,
            ),
            tools=[weather],
        )
        reply = asyncio.run(agent.reply("Weather in Oslo?"))
        second = server.requests[2]["json"]
    assert reply.get_text_content().strip() == "It rains in Oslo."
    assert second["messages"][-1] == {"role": "tool", "content": "rain in Oslo", "tool_name": "weather"}
    assert second["messages"][-2]["thinking"].strip() == "I need the weather." and second["think"] is True
    check_request(second)


def test_a_cassette_replays_an_ollama_call(tmp_path):
    from modelwire.cassettes import use_cassette

    raw = WIRE.fake_stream(("text", "Recorded words."))
    path = tmp_path / "ollama.json"
    with ProviderServer() as server:
        server.script(ndjson(raw))
        with use_cassette(path, "all"):
            first = asyncio.run(
                load_model(
                    "ollama:m", base_url=server.url, capability_lookup=True, capability_lookup_seconds=WAIT
                ).complete("hi")
            )
        url = server.url
    with use_cassette(path, "none"):
        again = asyncio.run(load_model("ollama:m", base_url=url).complete("hi"))
    assert first.get_text_content() == again.get_text_content() == "Recorded words."


def test_a_local_server_that_is_not_running_is_said_so():
    """Nothing listens on the port: the error asks whether the server runs there (it said only
    "connection failed: All connection attempts failed")."""
    import socket

    from modelwire.errors import ConnectionError as MWConnectionError
    from modelwire.models.transport import RetryPolicy

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # free, and nothing listens once closed
    model = load_model(
        "ollama:llama3",
        base_url=f"http://127.0.0.1:{port}",
        capability_lookup=False,
        retry=RetryPolicy(max_retries=0),
        capabilities={"context_window": 8192},
    )
    with pytest.raises(
        MWConnectionError, match=rf"nothing answers at http://127.0.0.1:{port}: is the server running there\?"
    ):
        asyncio.run(model.complete("hi"))
