"""Never a silent wrong answer: every way a server says "error", odd servers, strictness,
validation at the edges, timeouts that name themselves, concurrency, keys.

Everything here runs against the local provider server or plain data; nothing needs the
shared recordings.
"""

from __future__ import annotations

import asyncio
import builtins
import gc
import json
import warnings

import pytest

from modelwire import errors as E
from modelwire import event as Ev
from modelwire.adapters import SSEDecoder
from modelwire.protocols import decode_sse
from modelwire.adapters._sse import SSELineTooLongError
from modelwire.agent import Agent
from modelwire.message import AssistantMsg, Msg, TextBlock, ThinkingBlock, ToolCallBlock, UserMsg
from modelwire.models import load_model
from modelwire.errors import ConfigError
from modelwire.protocols import get_protocol, protocol_names
from modelwire.models.transport import RetryPolicy
from modelwire.testing import Reply, sse_reply
from modelwire.testing.sse import body

NO_RETRY = RetryPolicy(max_retries=0)
RETRY = RetryPolicy(max_retries=2, initial_delay=0.01, max_delay=0.02)
PRESETS = {
    "anthropic": "anthropic:claude-test",
    "openai-chat": "openai:gpt-test",
    "openai-responses": "openai-responses:resp-test",
}


def model(server, protocol, **kw):
    spec = PRESETS[protocol]
    kw.setdefault("retry", NO_RETRY)
    return load_model(spec, api_key="sk-test", base_url=server.url + ("" if protocol == "anthropic" else "/v1"), **kw)


async def collect(m, **kw):
    events = []
    try:
        async for ev in m.stream([UserMsg("u", "hi")], reply_id="r", **kw):
            events.append(ev)
    except E.ProviderError as err:
        return events, err
    return events, None


def valid(events) -> None:
    """The events of one model call, wrapped in a reply, pass check_stream."""
    Ev.check_stream(
        [
            Ev.ReplyStartEvent(session_id="s", reply_id="r", name="a"),
            *events,
            Ev.ReplyEndEvent(session_id="s", reply_id="r"),
        ]
    )


def raw(text: str, content_type: str = "text/event-stream", status: int = 200) -> Reply:
    return Reply(status=status, body=text.encode(), headers={"content-type": content_type})


LITELLM_ERROR = (
    ': ping\n\n: ping\n\ndata: {"error": {"message": "litellm.RateLimitError: too many '
    'requests", "type": "throttling_error", "code": "429"}}\n\ndata: [DONE]\n\n'
)


# -- every way a server says "error" --------------------------------------------------------------


@pytest.mark.parametrize("protocol", list(PRESETS))
def test_an_openai_style_error_frame_in_a_200_stream_is_the_servers_error(server, protocol):
    """What LiteLLM's proxy sends on every route: the message and the kind survive."""
    server.script(raw(LITELLM_ERROR))
    events, err = asyncio.run(collect(model(server, protocol)))
    assert isinstance(err, E.RateLimitError) and "too many requests" in err.message and err.status_code == 429
    assert not isinstance(err, E.ConnectionError)
    valid(events)


@pytest.mark.parametrize("protocol", ["anthropic", "openai-chat"])
def test_a_stream_of_only_done_is_an_error_not_an_empty_reply(server, protocol):
    server.script(raw("data: [DONE]\n\n"))
    events, err = asyncio.run(collect(model(server, protocol)))
    assert isinstance(err, (E.IncompleteStreamError, E.StreamProtocolError))
    valid(events)


@pytest.mark.parametrize("protocol", protocol_names())
def test_a_whole_json_answer_to_a_streaming_request_is_the_same_reply(server, protocol):
    # each built-in protocol's non-streaming answer, written as its provider documents it
    answers = {
        "anthropic": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [
                {"type": "thinking", "thinking": "Hm.", "signature": "c2ln"},
                {"type": "text", "text": "Hello!"},
                {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 7, "output_tokens": 3},
        },
        "openai-chat": {
            "id": "c1",
            "object": "chat.completion",
            "model": "gpt-x",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": "Hello!",
                        "tool_calls": [
                            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3},
        },
        "openai-responses": {
            "id": "resp_1",
            "object": "response",
            "model": "gpt-x",
            "status": "completed",
            "output": [
                {
                    "id": "rs_1",
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": "Hm."}],
                    "encrypted_content": "enc",
                },
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "Hello!", "annotations": []}],
                },
                {
                    "id": "fc_1",
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "f",
                    "arguments": '{"a": 1}',
                    "status": "completed",
                },
            ],
            "usage": {"input_tokens": 7, "output_tokens": 3},
        },
        "gemini": {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"text": "Hm.", "thought": True},
                            {"text": "Hello!"},
                            {"functionCall": {"id": "call_1", "name": "f", "args": {"a": 1}}},
                        ],
                    },
                    "finishReason": "STOP",
                }
            ],
            "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3},
            "modelVersion": "gemini-x",
        },
        "bedrock-converse": {
            "output": {
                "message": {
                    "role": "assistant",
                    "content": [
                        {"reasoningContent": {"reasoningText": {"text": "Hm.", "signature": "c2ln"}}},
                        {"text": "Hello!"},
                        {"toolUse": {"toolUseId": "call_1", "name": "f", "input": {"a": 1}}},
                    ],
                }
            },
            "stopReason": "tool_use",
            "usage": {"inputTokens": 7, "outputTokens": 3, "totalTokens": 10},
        },
        "ollama": {
            "model": "m",
            "created_at": "2026-01-01T00:00:00Z",
            "message": {
                "role": "assistant",
                "content": "Hello!",
                "thinking": "Hm.",
                "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}],
            },
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 7,
            "eval_count": 3,
        },
    }
    # A protocol without a written answer here gives its own (its conformance suite checks it
    # folds as its stream does); the blocks are the written answers'.
    wire = get_protocol(protocol)
    answer = answers.get(protocol) or wire.fake_answer(
        ("think", "Hm."), ("text", "Hello!"), ("tool", "call_1", "f", '{"a": 1}'), usage=(7, 3)
    )
    server.script(raw(json.dumps(answer), "application/json"))
    events, err = asyncio.run(collect(server.model(protocol, retry=RETRY)))
    assert err is None and len(server.requests) == 1
    valid(events)
    msg = AssistantMsg("a", [], id="r")
    for ev in [Ev.ReplyStartEvent(session_id="s", reply_id="r", name="a"), *events]:
        msg.append_event(ev)
    assert msg.get_text_content() == "Hello!"
    (call,) = msg.get_content_blocks("tool_call")
    given = {"anthropic": "toolu_1", "ollama": call.id}.get(protocol, "call_1")  # Ollama gives no ids: one is made
    assert (call.id, call.name, json.loads(call.input)) == (given, "f", {"a": 1})
    expected = (
        ["text", "tool_call"] if protocol == "openai-chat" else ["thinking", "text", "tool_call"]
    )  # Chat's answer has no reasoning
    assert [b.type for b in msg.content] == expected
    assert msg.usage.input_tokens == 7 and msg.usage.output_tokens == 3
    end = [e for e in events if e.type == "MODEL_CALL_END"][0]
    assert end.stop_reason == "tool_use"


@pytest.mark.parametrize("protocol", protocol_names())
def test_a_json_error_with_status_200_is_typed_and_not_retried(server, protocol):
    server.script(
        raw(
            (
                '{"error": {"message": "Rate limit reached for gpt-x", "type": "rate_limit_exceeded", '
                '"code": "rate_limit_exceeded"}}'
            ),
            "application/json",
        )
    )
    events, err = asyncio.run(collect(server.model(protocol, retry=RETRY)))
    assert isinstance(err, E.RateLimitError) and "Rate limit reached" in err.message
    assert len(server.requests) == 1  # a 200 answer is never retried


def test_an_html_page_with_status_200_is_an_upstream_error_quoting_it(server):
    server.script(raw("<html><body>Bad gateway: upstream unreachable</body></html>", "text/html"))
    _, err = asyncio.run(collect(model(server, "openai-chat", retry=RETRY)))
    assert type(err) is E.UpstreamError and "text/html" in err.message and "upstream unreachable" in err.message
    assert len(server.requests) == 1


def test_an_sse_error_frame_as_the_body_of_a_500_gives_its_message(server):
    server.script(
        raw(
            (
                'event: error\ndata: {"type": "error", "error": {"type": "api_error", "message": '
                '"Internal server error"}}\n\n'
            ),
            status=500,
        )
    )
    _, err = asyncio.run(collect(model(server, "anthropic")))
    assert isinstance(err, E.UpstreamError) and err.message == "Internal server error" and err.status_code == 500


# -- strict where the protocol is strict ---------------------------------------------------------


def test_an_anthropic_stream_without_message_start_is_refused():
    text = body("anthropic", ("text", "hi")).split(b"\n\n", 2)[2]  # drop message_start
    with pytest.raises(E.StreamProtocolError, match="must begin with message_start") as info:
        decode_sse("anthropic", text, "r")
    valid(info.value.events)


def test_a_second_message_start_is_refused():
    one = body("anthropic", ("text", "hi"))
    start = one.split(b"\n\n")[0] + b"\n\n"
    with pytest.raises(E.StreamProtocolError, match="second message_start") as info:
        decode_sse("anthropic", start + start, "r")
    valid(info.value.events)


def test_a_chat_tool_call_that_never_gets_a_name_is_an_error():
    chunk = {
        "id": "c",
        "choices": [
            {
                "index": 0,
                "delta": {"tool_calls": [{"index": 7, "function": {"arguments": '{"a": 1}'}}]},
                "finish_reason": None,
            }
        ],
    }
    end = {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    text = f"data: {json.dumps(chunk)}\n\ndata: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode()
    with pytest.raises(E.StreamProtocolError, match="never got a name") as info:
        decode_sse("openai-chat", text, "r")
    valid(info.value.events)
    assert not [e for e in info.value.events if e.type == "TOOL_CALL_START"]


@pytest.mark.parametrize(
    "protocol, mutate",
    [
        (
            "anthropic",
            lambda b: b.replace(b'"message": {', b'"message": "oops", "x": {', 1),
        ),  # message_start.message a string
        ("openai-chat", lambda b: b.replace(b'"finish_reason": "tool_calls"', b'"finish_reason": ["tool_calls"]')),
        ("openai-responses", lambda b: b.replace(b'"output_index": 0', b'"output_index": "0"', 1)),
        (
            "anthropic",
            lambda b: b + b'data: {"type": "content_block_delta", "index": 9, "delta": {}}\n\n',
        ),  # after the end
        ("anthropic", lambda b: b.replace(b'"name": "f"', b'"name": 5')),  # a tool_use named 5
    ],
)
def test_malformed_fields_are_typed_errors_and_the_events_stay_valid(protocol, mutate, monkeypatch):
    monkeypatch.setenv("MODELWIRE_DEBUG", "0")
    good = body(protocol, ("text", "hello there"), ("tool", "c1", "f", '{"a": 1}'))
    bad = mutate(good)
    assert bad != good
    try:
        events = decode_sse(protocol, bad, "r")
    except E.ProviderError as err:
        assert isinstance(err, E.StreamProtocolError), err
        events = err.events
    valid(events)
    assert len([e for e in events if e.type == "MODEL_CALL_END"]) == 1


def test_a_bug_in_an_adapter_is_an_internal_error_or_itself_in_debug(monkeypatch):
    from modelwire.protocols.openai_chat.adapter import OpenAIChatAdapter

    def broken(self, usage):
        raise KeyError("oops, a bug")

    monkeypatch.setattr(OpenAIChatAdapter, "_set_usage", broken)
    text = body("openai-chat", ("text", "hi"))
    monkeypatch.setenv("MODELWIRE_DEBUG", "0")
    with pytest.raises(E.InternalError, match="bug in modelwire") as info:
        decode_sse("openai-chat", text, "r")
    assert info.value.error_type == "internal"
    valid(info.value.events)
    monkeypatch.setenv("MODELWIRE_DEBUG", "1")
    with pytest.raises(KeyError, match="oops"):
        decode_sse("openai-chat", text, "r")


# -- errors ---------------------------------------------------------------------------------------


def test_modelwires_timeout_and_connection_errors_are_the_builtins_too():
    assert issubclass(E.TimeoutError, builtins.TimeoutError) and issubclass(E.ConnectionError, builtins.ConnectionError)
    try:
        raise E.TimeoutError("x", which="chunk", seconds=1.0)
    except TimeoutError as caught:  # the built-in name
        assert caught.which == "chunk"


# -- validation at the edges ----------------------------------------------------------------------


def test_extras_never_overwrite_a_blocks_own_fields():
    msg = AssistantMsg("a", [], id="r")
    msg.append_event(Ev.ReplyStartEvent(session_id="s", reply_id="r", name="a"))
    msg.append_event(Ev.ToolCallStartEvent(reply_id="r", tool_call_id="c1", tool_call_name="f"))
    msg.append_event(Ev.ToolCallDeltaEvent(reply_id="r", tool_call_id="c1", delta="{}"))
    before = msg.to_dict()
    for extras in ({"type": "text"}, {"id": "other"}, {"name": "g"}):
        with pytest.raises(E.EventApplyError, match="overwrite"):
            msg.append_event(Ev.ToolCallEndEvent(reply_id="r", tool_call_id="c1", extras=extras))
        assert msg.to_dict() == before
    msg.append_event(Ev.ToolCallEndEvent(reply_id="r", tool_call_id="c1", extras={"signature": "s"}))
    assert msg.content[0].signature == "s" and msg.content[0].type == "tool_call"


def test_messages_refuse_what_they_could_not_send_later():
    with pytest.raises(ValueError, match="lone surrogate"):
        Msg.from_dict({"name": "u", "role": "user", "content": [{"type": "text", "text": "bad \ud800 text"}]})
    deep: dict = {}
    node = deep
    for _ in range(100):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(ValueError, match="nested more than"):
        Msg.from_dict({"name": "u", "role": "user", "content": "hi", "metadata": deep})
    msg = AssistantMsg("a", [])
    with pytest.raises(E.InvalidMessageError, match="not object"):
        msg.content.append(object())
    msg.content.append({"type": "text", "text": "a dict becomes a block"})
    assert isinstance(msg.content[0], TextBlock)


def test_copies_keep_the_role_rules():
    msg = AssistantMsg("a", [ToolCallBlock(id="c", name="f", input="{}")])
    with pytest.raises(E.RoleError):
        msg.replace(role="user")
    copy = msg.replace()
    with pytest.raises(E.RoleError):
        copy.role = "user"
    copy.content.append(TextBlock(text="x"))
    assert len(msg.content) == 1  # the copy owns its list


def test_formatters_raise_only_format_errors(monkeypatch):
    from modelwire.protocols import get_formatter

    monkeypatch.setenv("MODELWIRE_DEBUG", "0")
    bad_tools = [[{"description": "no name"}], ["not a dict"], [{"name": "f", "parameters": "not a schema"}]]
    for protocol in protocol_names():
        for tools in bad_tools:
            with pytest.raises(E.FormatError):
                get_formatter(protocol)().format([UserMsg("u", "hi")], tools)
        weird = AssistantMsg(
            "a",
            [
                ThinkingBlock(
                    thinking="t", signature=5, reasoning_item_id=7, provider_metadata={"x": {"protocol": protocol}}
                )
            ],
        )
        try:
            get_formatter(protocol)().format([UserMsg("u", "hi"), weird])
        except E.FormatError:
            pass


def test_the_sse_decoder_limits_a_line_and_buffers_it_linearly():
    decoder = SSEDecoder(max_line=1000)
    decoder.feed(b"data: ")
    for _ in range(9):
        assert decoder.feed(b"x" * 100) == []
    with pytest.raises(SSELineTooLongError):
        decoder.feed(b"x" * 100)

    # Many small pieces of one long line make the same event as one piece (what it costs per
    # piece, linear or not, is benchmarks/sse.py's: no timing here).
    d = SSEDecoder(max_line=64 * 1024 * 1024)
    d.feed(b"data: ")
    for _ in range(2048):
        assert d.feed(b"x" * 1024) == []
    (event,) = d.feed(b"\n\n")
    assert event.data == "x" * (2 * 1024 * 1024)


@pytest.mark.parametrize("key", ["sk-abc\n", " sk-abc", "sk-ab\u00e7", "sk-a\x00b"])
def test_keys_that_cannot_go_in_a_header_are_refused_without_being_shown(key):
    with pytest.raises(ConfigError) as info:
        load_model("openai:gpt-x", api_key=key)
    assert key.strip() not in str(info.value) and "OPENAI_API_KEY" in str(info.value)


def test_the_key_is_in_no_repr():
    m = load_model("openai:gpt-x", api_key="sk-secret-value-123")
    assert "sk-secret" not in repr(m) and "sk-secret" not in repr(m.spec)


# -- timeouts ------------------------------------------------------------------------------------------


def test_first_byte_is_honoured_and_named(server):
    server.script(sse_reply(body("openai-chat", ("text", "hi")), stall_after=0, stall=30))
    m = model(server, "openai-chat", timeouts={"first_byte": 0.3, "chunk": 30})
    _, err = asyncio.run(collect(m))
    assert isinstance(err, E.TimeoutError) and err.which == "first_byte" and "first_byte timeout (0.3 s)" in err.message
    assert not server.disconnects  # the server is still in its 30 s stall: it notes the close at its next write


def test_the_total_timeout_ends_a_never_ending_stream_of_keepalives(server):
    keepalives = [b": keep-alive\n\n"] * 400
    server.script(
        Reply(
            pieces=[body("openai-chat", ("text", "hi")).split(b"\n\n")[0] + b"\n\n", *keepalives],
            delay=0.01,
            headers={"content-type": "text/event-stream"},
        )
    )
    m = model(server, "openai-chat", timeouts={"total": 0.6, "chunk": 5})
    _, err = asyncio.run(collect(m))
    assert isinstance(err, E.TimeoutError) and err.which == "total"


def test_the_pool_size_is_an_option_and_a_full_pool_is_a_named_timeout(server):
    server.script(
        sse_reply(body("openai-chat", ("text", "slow")), stall_after=1, stall=1.5),
        sse_reply(body("openai-chat", ("text", "second"))),
    )
    m = model(server, "openai-chat", max_connections=1, timeouts={"pool": 0.2, "first_byte": 5})

    async def both():
        return await asyncio.gather(collect(m), collect(m))

    results = asyncio.run(both())
    errors = [err for _, err in results if err is not None]
    assert len(errors) == 1 and isinstance(errors[0], E.TimeoutError) and errors[0].which == "pool"


def test_one_model_across_event_loops_works_and_leaves_nothing_open(server):
    server.script(*[sse_reply(body("openai-chat", ("text", f"answer {i}"))) for i in range(3)])
    m = model(server, "openai-chat")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        for _ in range(3):
            events, err = asyncio.run(collect(m))
            assert err is None
        gc.collect()
        asyncio.run(m.aclose())


# -- concurrency -----------------------------------------------------------------------------------------


def test_an_agent_refuses_a_second_concurrent_reply(server):
    server.script(
        sse_reply(body("openai-chat", ("text", "one two three four")), delay=0.2),
        sse_reply(body("openai-chat", ("text", "x"))),
    )
    agent = Agent("a", model(server, "openai-chat"))

    async def both():
        first = asyncio.create_task(agent.reply(UserMsg("u", "first")))
        while not agent.context:  # the first reply has begun (its input is kept)
            await asyncio.sleep(0.005)
        with pytest.raises(E.AgentBusyError, match="already replying"):
            await agent.reply(UserMsg("u", "second"))
        return await first

    reply = asyncio.run(both())
    assert reply.get_text_content().strip() == "one two three four"


def test_cassettes_in_concurrent_tasks_do_not_see_each_other(tmp_path):
    from modelwire.cassettes import use_cassette
    from modelwire.testing import ProviderServer

    paths = {name: tmp_path / f"{name}.json" for name in ("a", "b")}
    with ProviderServer() as srv:
        srv.script(sse_reply(body("openai-chat", ("text", "for a"))), sse_reply(body("openai-chat", ("text", "for b"))))
        for name in ("a", "b"):
            with use_cassette(paths[name], "once"):
                asyncio.run(collect(model(srv, "openai-chat")))
        url = srv.url

    async def replay(name, inside):
        with use_cassette(paths[name]) as session:
            await inside.wait()  # the other task is in its own cassette too
            events, err = await collect(
                load_model("openai:gpt-test", api_key="k", base_url=url + "/v1", retry=NO_RETRY)
            )
            await inside.wait()  # and still is
        return session.replayed, "".join(e.delta for e in events if e.type == "TEXT_BLOCK_DELTA")

    async def both():
        inside = asyncio.Barrier(2)
        return await asyncio.gather(replay("a", inside), replay("b", inside))

    assert asyncio.run(both()) == [(1, "for a"), (1, "for b")]
