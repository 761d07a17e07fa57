"""Models end to end against a real local HTTP server (tests/provider_server.py): requests,
recorded SSE bodies replayed in pieces with delays, retries, typed errors, timeouts and
cancellation."""

from __future__ import annotations

import asyncio
import base64
import time

import pytest
from modelwire.testing.server import Reply, error_reply, sse_reply
from paths import HAVE_SHARED, PA, ROOT

from modelwire import errors as E
from modelwire import event as Ev
from modelwire.protocols import decode_sse
from modelwire.message import AssistantMsg, DataBlock, URLSource, UserMsg
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy

from modelwire.testing.sse import body as fake_body  # noqa: E402

# Transport, retry, timeout and cancellation tests need only small bodies, which
# modelwire.testing writes from the documented formats; the real recordings are used
# as well when ../shared is there.
ANTHROPIC_BODY = fake_body(
    "anthropic",
    ("think", "The user asks about the weather in Paris."),
    ("text", "It is sunny in Paris today, with a light breeze."),
)
CHAT_BODY = fake_body(
    "openai-chat",
    ("tool", "call_1", "get_weather", '{"city": "Paris", "unit": "celsius"}'),
    ("tool", "call_2", "get_time", '{"city": "Paris"}'),
)
RESPONSES_BODY = fake_body("openai-responses", ("think", "Plan the answer."), ("text", "It is sunny in Paris today."))
RECORDED = (
    [
        (
            "anthropic:claude-sonnet-4-0",
            (PA / "test_anthropic_model_thinking_part_stream.0.sse").read_bytes(),
            "/v1/messages",
            ("x-api-key", "sk-test-123"),
        ),
        (
            "openai:gpt-4o",
            (
                ROOT / "openai-python" / "f82268f2fefd5cfbc7eeb59c297688be2f6ca0849a6e4f17851b517310841d9b.bin"
            ).read_bytes(),
            "/v1/chat/completions",
            ("authorization", "Bearer sk-test-123"),
        ),
        (
            "openai-responses:gpt-4.1",
            (PA / "test_openai_responses_streaming_usage.0.sse").read_bytes(),
            "/v1/responses",
            ("authorization", "Bearer sk-test-123"),
        ),
    ]
    if HAVE_SHARED
    else []
)
QUESTION = [UserMsg("user", "What is the weather in Paris?")]


def run(coro):
    return asyncio.run(coro)


def model_for(server, spec, **kw):
    provider = spec.split(":")[0]
    base = server.url if provider == "anthropic" else server.url + "/v1"
    kw.setdefault("retry", RetryPolicy(max_retries=2, initial_delay=0.01, max_delay=0.05))
    return load_model(spec, api_key="sk-test-123", base_url=base, **kw)


async def collect(model, messages=QUESTION, **kw):
    events = []
    try:
        async for event in model.stream(messages, reply_id="r", **kw):
            events.append(event)
    except E.ProviderError as err:
        return events, err
    return events, None


def fold(events):
    msg = AssistantMsg("a", [], id="r")
    wrapped = [
        Ev.ReplyStartEvent(session_id="s", reply_id="r", name="a"),
        *events,
        Ev.ReplyEndEvent(session_id="s", reply_id="r"),
    ]
    Ev.check_stream(wrapped)
    for e in wrapped:
        msg.append_event(e)
    return msg


def same_content(a, b):
    strip = lambda m: [
        {k: v for k, v in blk.items() if k not in ("id", "created_at", "finished_at")} for blk in m.to_dict()["content"]
    ]  # noqa: E731
    assert strip(a) == strip(b)


@pytest.mark.parametrize(
    "spec,body,path,auth",
    [
        ("anthropic:claude-sonnet-4-0", ANTHROPIC_BODY, "/v1/messages", ("x-api-key", "sk-test-123")),
        ("openai:gpt-4o", CHAT_BODY, "/v1/chat/completions", ("authorization", "Bearer sk-test-123")),
        ("openai-responses:gpt-4.1", RESPONSES_BODY, "/v1/responses", ("authorization", "Bearer sk-test-123")),
        *RECORDED,
    ],
)
def test_each_protocol_end_to_end(server, spec, body, path, auth):
    server.script(sse_reply(body, delay=0.001))
    model = model_for(server, spec, max_tokens=512, temperature=0.3)
    events, err = run(collect(model))
    assert err is None
    (request,) = server.requests
    assert request["method"] == "POST" and request["path"] == path
    assert request["headers"][auth[0]] == auth[1]
    sent = request["json"]
    assert sent["model"] == spec.split(":")[1] and sent["stream"] is True and sent["temperature"] == 0.3
    if spec.startswith("anthropic"):
        assert sent["max_tokens"] == 512 and sent["messages"] == [
            {"role": "user", "content": [{"type": "text", "text": "What is the weather in Paris?"}]}
        ]
        assert request["headers"]["anthropic-version"] == "2023-06-01"
    elif spec.startswith("openai:"):
        assert sent["max_completion_tokens"] == 512 and sent["stream_options"] == {"include_usage": True}
    else:
        assert sent["max_output_tokens"] == 512 and sent["input"][0]["content"][0]["text"].startswith("What")
    got = fold(events)
    expected = fold(
        decode_sse(
            spec.split(":")[0]
            if spec.startswith("anthropic")
            else ("openai-chat" if spec.startswith("openai:") else "openai-responses"),
            body,
            "r",
        )
    )
    # The model records the endpoint that minted each block (its base URL's host and port
    # here); the bare adapter knows none.
    for block in got.content:
        for meta in (getattr(block, "provider_metadata", None) or {}).values():
            assert meta.pop("endpoint") == server.url.split("://", 1)[1].rstrip("/")
    same_content(got, expected)


def test_complete_folds_the_stream(server):
    server.script(sse_reply(ANTHROPIC_BODY))
    reply = run(model_for(server, "anthropic:claude").complete(QUESTION, name="agent"))
    assert reply.role == "assistant" and reply.name == "agent"
    assert [b.type for b in reply.content] == ["thinking", "text"] and reply.content[0].signature
    assert reply.usage.input_tokens == 10  # as the body says (usage=(10, 5))


def test_authentication_error_is_typed_and_not_retried(server):
    server.script(
        error_reply(
            401,
            {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}},
            {"request-id": "req_abc"},
        )
    )
    events, err = run(collect(model_for(server, "anthropic:claude")))
    assert isinstance(err, E.AuthenticationError) and err.error_type == "authentication"
    assert err.message == "invalid x-api-key" and err.request_id == "req_abc" and err.status_code == 401
    assert events == [] and len(server.requests) == 1


def test_rate_limit_is_retried_honouring_retry_after(server):
    server.script(
        error_reply(429, {"error": {"message": "slow down", "type": "rate_limit_exceeded"}}, {"retry-after-ms": "120"}),
        error_reply(429, {"error": {"message": "slow down", "type": "rate_limit_exceeded"}}, {"retry-after": "0"}),
        sse_reply(CHAT_BODY),
    )
    model = model_for(server, "openai:gpt-4o")
    waits = []

    async def sleep(seconds):
        waits.append(seconds)

    model._sleep = sleep
    events, err = run(collect(model))
    assert err is None and len(server.requests) == 3
    assert waits == [0.12, 0.0]
    assert [e.tool_call_name for e in events if e.type == "TOOL_CALL_START"] == ["get_weather", "get_time"]


def test_server_errors_retry_with_backoff_then_give_up(server):
    for _ in range(3):
        server.script(error_reply(500, {"error": {"message": "boom", "type": "server_error"}}))
    model = model_for(
        server, "openai-responses:gpt-5", retry=RetryPolicy(max_retries=2, initial_delay=0.2, jitter=0.25)
    )
    waits = []

    async def sleep(seconds):
        waits.append(seconds)

    model._sleep = sleep
    events, err = run(collect(model))
    assert isinstance(err, E.UpstreamError) and err.status_code == 500 and len(server.requests) == 3
    assert 0.15 <= waits[0] <= 0.2 and 0.3 <= waits[1] <= 0.4  # exponential, jittered down by at most 25%


def test_overloaded_at_the_start_of_a_stream_is_retried(server):
    overloaded = (
        b"event: message_start\ndata: "
        b'{"type":"message_start","message":{"id":"m","model":"claude","content":[],"usage":{"input_tokens":3,"output_tokens":0}}}\n\n'
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    )
    server.script(
        sse_reply(overloaded),
        error_reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        sse_reply(ANTHROPIC_BODY),
    )
    events, err = run(collect(model_for(server, "anthropic:claude")))
    assert err is None and len(server.requests) == 3
    assert [e.type for e in events].count("MODEL_CALL_START") == 1


def test_nothing_is_retried_after_output_was_passed_on(server):
    server.script(sse_reply(ANTHROPIC_BODY, drop_after=6), sse_reply(ANTHROPIC_BODY))
    events, err = run(collect(model_for(server, "anthropic:claude")))
    assert isinstance(err, E.ConnectionError) and len(server.requests) == 1
    msg = fold(events)  # what arrived is kept, closed, and folds
    assert msg.content[0].type == "thinking" and msg.content[0].thinking.startswith("The user asks")
    assert events[-1].type == "MODEL_CALL_END" and events[-1].stop_reason == "error"


def test_a_stalled_stream_times_out(server):
    server.script(sse_reply(CHAT_BODY, stall_after=5, stall=30))
    # The five pieces before the stall come at once: a second between two is room for a loaded machine.
    model = model_for(server, "openai:gpt-4o", timeouts={"chunk": 1.0, "first_byte": 5})
    events, err = run(collect(model))
    assert (
        isinstance(err, E.TimeoutError)
        and (err.which, err.seconds) == ("chunk", 1.0)
        and "chunk timeout (1 s)" in err.message
    )
    assert not server.disconnects  # the server is still in its 30 s stall: it notes the close at its next write
    assert fold(events).content[0].type == "tool_call"


def test_a_consumer_slower_than_the_chunk_timeout_is_not_cut_and_no_timer_spins(server):
    server.script(sse_reply(CHAT_BODY))
    model = model_for(server, "openai:gpt-4o", timeouts={"chunk": 1.0})

    async def go():
        events, spent = [], None
        async for event in model.stream(QUESTION, reply_id="r"):
            events.append(event)
            if len(events) == 3:
                cpu = time.process_time()
                await asyncio.sleep(4.0)  # the consumer works four times the gap limit
                spent = time.process_time() - cpu
        return events, spent

    events, spent = run(go())
    assert events[-1].type == "MODEL_CALL_END" and events[-1].stop_reason != "error"
    # only waiting for the server counts; a timer re-armed in the past would burn the 4 s
    assert spent < 0.25, f"{spent:.2f} s of CPU while the consumer slept"


def test_first_byte_timeout_before_any_output_is_retried(server):
    server.script(sse_reply(CHAT_BODY, stall_after=0, stall=30), sse_reply(CHAT_BODY))
    model = model_for(server, "openai:gpt-4o", timeouts={"first_byte": 3.0})  # the retry's must come in time
    events, err = run(collect(model))
    assert err is None and len(server.requests) == 2


def test_total_timeout(server):
    server.script(sse_reply(CHAT_BODY, delay=0.05))
    model = model_for(server, "openai:gpt-4o", timeouts={"total": 0.3}, retry=RetryPolicy(max_retries=0))
    events, err = run(collect(model))
    assert isinstance(err, E.TimeoutError)


def test_cancelling_the_consumer_closes_the_connection(server):
    # 20 pieces, 0.25 s apart: each stream would take 5 s to its end.
    server.script(sse_reply(ANTHROPIC_BODY, delay=0.25))
    model = model_for(server, "anthropic:claude")

    async def consume_some():
        seen = 0
        async for _ in model.stream(QUESTION):
            seen += 1
            if seen == 5:
                break  # closing the stream (aclose) ...
        return seen

    async def cancel_task():
        seen = []

        async def forever():
            async for event in model.stream(QUESTION):
                seen.append(event)

        task = asyncio.create_task(forever())
        while len(seen) < 3:  # the stream has begun
            await asyncio.sleep(0.005)
        task.cancel()  # ... or cancelling the task
        with pytest.raises(asyncio.CancelledError):
            await task

    assert run(consume_some()) == 5
    server.script(sse_reply(ANTHROPIC_BODY, delay=0.25))
    run(cancel_task())
    deadline = time.monotonic() + 30
    while len(server.disconnects) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    # The server notes a disconnect only when one of its writes fails: each connection was
    # closed while pieces were still to come, not drained or kept to its stream's end.
    assert len(server.disconnects) == 2


def test_an_official_sdk_client_can_be_used(server):
    import openai

    server.script(sse_reply(CHAT_BODY))
    sdk = openai.AsyncOpenAI(api_key="sk-from-sdk", base_url=server.url + "/v1", default_headers={"x-team": "blue"})
    model = load_model("openai:gpt-4o", client=sdk)
    events, err = run(collect(model))
    assert err is None
    headers = server.requests[0]["headers"]
    assert headers["authorization"] == "Bearer sk-from-sdk" and headers["x-team"] == "blue"


def test_file_and_url_sources_are_inlined_when_the_provider_needs_it(server, tmp_path):
    png = tmp_path / "chart.png"
    png.write_bytes(b"\x89PNG fake")
    audio = Reply(body=b"RIFF fake wav", headers={"content-type": "audio/wav"})
    server.script(audio, sse_reply(CHAT_BODY))
    msg = UserMsg(
        "u",
        [
            DataBlock(source=URLSource(url=png.as_uri(), media_type="image/png")),
            DataBlock(source=URLSource(url=server.url + "/clip.wav", media_type="audio/wav")),
        ],
    )
    events, err = run(collect(model_for(server, "openai:gpt-4o"), [msg]))
    assert err is None
    get, post = server.requests
    assert get["method"] == "GET" and get["path"] == "/clip.wav"
    parts = post["json"]["messages"][0]["content"]
    assert parts[0]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(b"\x89PNG fake").decode()
    assert parts[1]["input_audio"] == {"data": base64.b64encode(b"RIFF fake wav").decode(), "format": "wav"}
    assert msg.content[0].source.type == "url"  # the caller's message is not changed


def test_inline_size_limit(server, tmp_path):
    big = tmp_path / "big.png"
    big.write_bytes(b"x" * 2000)
    model = model_for(server, "anthropic:claude")
    model.max_source_bytes = 1000
    events, err = run(
        collect(model, [UserMsg("u", [DataBlock(source=URLSource(url=big.as_uri(), media_type="image/png"))])])
    )
    assert isinstance(err, E.InvalidRequestError) and "limit" in err.message and server.requests == []


def test_check_failure_on_the_server_comes_back_as_invalid_request(server):
    def check(request):
        assert request["json"]["messages"][0]["role"] == "system"

    server.script(sse_reply(CHAT_BODY, check=check))
    events, err = run(collect(model_for(server, "openai:gpt-4o")))
    assert isinstance(err, E.InvalidRequestError) and "server check failed" in err.message


def test_a_plain_httpx_client_can_be_used(server):
    import httpx

    server.script(sse_reply(ANTHROPIC_BODY))
    model = load_model("anthropic:claude", api_key="sk-test-123", base_url=server.url, client=httpx.AsyncClient())
    reply = run(model.complete(QUESTION))
    assert [b.type for b in reply.content] == ["thinking", "text"]
    assert server.requests[0]["headers"]["x-api-key"] == "sk-test-123"


def test_the_body_sent_is_compact_utf8_json_of_the_payload(server):
    """The request body is the payload as compact JSON, characters as they are; what JSON
    cannot hold is refused before anything is sent."""
    import json

    server.script(sse_reply(ANTHROPIC_BODY))
    model = model_for(server, "anthropic:claude", extra_body={"metadata": {"user_id": "Zoë"}})
    run(model.complete(QUESTION))
    (request,) = server.requests
    raw = request["body"]
    assert json.loads(raw)["metadata"] == {"user_id": "Zoë"}
    assert "Zoë".encode() in raw and b'": ' not in raw and b'", "' not in raw  # UTF-8 as is, no padding
    with pytest.raises(E.FormatError, match="cannot be written as JSON"):
        run(model_for(server, "anthropic:claude", extra_body={"metadata": object()}).complete(QUESTION))
    assert len(server.requests) == 1  # nothing more was sent
