"""Faults that once crashed a call or lost part of a reply, each reproduced: bytes after a
stream's end, provider fields of the wrong type, event lists that broke the grammar. The
network ones run on a real local socket."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from modelwire import errors as E
from modelwire import event as Ev
from modelwire.adapters import encode_frame
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy
from modelwire.protocols import get_protocol, protocol_names
from modelwire.testing.server import Reply
from modelwire.testing.sse import body as fake_body
from modelwire.message import UserMsg

QUESTION = [UserMsg("user", "Hi")]


def checked(events):
    wrapped = [
        Ev.ReplyStartEvent(session_id="s", reply_id="r", name="a"),
        *events,
        Ev.ReplyEndEvent(session_id="s", reply_id="r"),
    ]
    Ev.check_stream(wrapped)
    return events


def decode(protocol, pieces):
    wire = get_protocol(protocol)
    decoder = wire.decoder(wire.adapter_class()("r"), keep=True)
    try:
        for piece in pieces:
            decoder.feed(piece)
        decoder.close()
    except E.ProviderError as err:
        return decoder.events, err
    return decoder.events, None


# Bytes that are not an event, after a stream's end, in each framing's own shape (a framing
# not listed here fails at collection: say what garbage looks like in it).
TRAILING = {
    "sse": [b"event: ping\ndata: {not json\n\n", b"data: }}}\n\n", b"data: [1, 2\n\n", b"data: <html>\n\n"],
    "ndjson": [b"{not json\n", b"<html>\n", b"[1, 2"],
    "aws-eventstream": [b"\x00\x00\x00\x20 not a frame at all, really not"],
}
AFTER_THE_END = [
    pytest.param(p, garbage, id=f"{p}-{i}")
    for p in protocol_names()
    for i, garbage in enumerate(TRAILING[get_protocol(p).framing])
]


# -- 1: bytes after the end ---------------------------------------------------------------


@pytest.mark.parametrize("protocol,garbage", AFTER_THE_END)
def test_bytes_that_are_not_json_after_the_end_are_ignored_in_a_later_read(protocol, garbage):
    whole = fake_body(protocol, ("text", "Hello there."))
    alone, _ = decode(protocol, [whole])
    events, err = decode(protocol, [whole, garbage])
    assert err is None
    assert checked(events)[-1].type == "MODEL_CALL_END" and events[-1].stop_reason != "error"
    text = lambda evs: "".join(e.delta for e in evs if e.type == "TEXT_BLOCK_DELTA")  # noqa: E731
    assert text(events) == text(alone) and "Hello there." in text(events)


@pytest.mark.parametrize("protocol,garbage", AFTER_THE_END)
def test_trailing_garbage_on_a_real_socket_keeps_the_reply(server, protocol, garbage):
    whole = fake_body(protocol, ("text", "Hello there."))
    wire = get_protocol(protocol)
    server.script(
        Reply(body=whole, pieces=[*wire.split_stream(whole), garbage], headers={"content-type": wire.content_type})
    )
    reply = asyncio.run(server.model(protocol).complete(QUESTION))
    assert reply.get_text_content().strip() == "Hello there."


def test_a_corrupt_bedrock_frame_after_the_end_is_ignored(server):
    whole = fake_body("bedrock-converse", ("text", "Hello there."))
    wire = get_protocol("bedrock-converse")
    bad = bytearray(encode_frame({":message-type": "event", ":event-type": "metadata"}, b"{}"))
    bad[-1] ^= 0xFF  # message CRC broken
    server.script(
        Reply(body=whole, pieces=[*wire.split_stream(whole), bytes(bad)], headers={"content-type": wire.content_type})
    )
    model = server.model("bedrock-converse")
    assert asyncio.run(model.complete(QUESTION)).get_text_content().strip() == "Hello there."


def test_a_broken_frame_before_the_end_still_fails_with_the_events_so_far():
    whole = fake_body("bedrock-converse", ("text", "Hello there."))
    events, err = decode("bedrock-converse", [whole[: len(whole) // 2], b"\x00" * 40])
    assert isinstance(err, E.StreamProtocolError)
    assert checked(events)[-1].type == "MODEL_CALL_END" and events[-1].stop_reason == "error"


# -- 2 and 3: fields of the wrong type are the provider's fault, never a crash ---------------


@pytest.mark.parametrize(
    "protocol,events",
    [
        # an output_index that is a string: once raised TypeError from close()
        (
            "openai-responses",
            [
                {"type": "response.created", "response": {"id": "r1", "model": "gpt-5"}},
                {
                    "type": "response.output_item.added",
                    "output_index": "0",
                    "item": {"type": "reasoning", "id": "rs_1"},
                },
                {"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1"}},
                {"type": "response.completed", "response": {"id": "r1", "status": "completed", "output": []}},
            ],
        ),
        (
            "openai-responses",
            [
                {"type": "response.created", "response": {"id": "r1", "model": "gpt-5"}},
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {"type": "function_call", "id": "fc_1", "call_id": {"x": 1}, "name": "f"},
                },
            ],
        ),
        (
            "openai-responses",
            [
                {"type": "response.created", "response": {"id": "r1", "model": "gpt-5"}},
                {
                    "type": "response.completed",
                    "response": {
                        "id": "r1",
                        "status": "completed",
                        "output": [],
                        "usage": {"output_tokens_details": [1]},
                    },
                },
            ],
        ),
        (
            "anthropic",
            [
                {"type": "message_start", "message": {"id": "m", "model": "claude", "usage": {"input_tokens": 1}}},
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta"}},
            ],
        ),
        (
            "anthropic",
            [
                {"type": "message_start", "message": {"id": "m", "model": "claude", "usage": {"input_tokens": 1}}},
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "thinking", "thinking": "", "signature": 5},
                },
            ],
        ),
    ],
)
def test_fields_of_the_wrong_type_are_a_stream_protocol_error(protocol, events, monkeypatch):
    monkeypatch.setenv("MODELWIRE_DEBUG", "1")  # a bug would be raised as itself
    from modelwire.adapters import encode_sse

    got, err = decode(protocol, [encode_sse([(e["type"], e) for e in events])])
    assert isinstance(err, E.StreamProtocolError) and not isinstance(err, E.InternalError), err
    checked(got)


@pytest.mark.parametrize(
    "delta",
    [
        {"reasoningContent": {"redactedContent": True}},
        {"reasoningContent": {"text": "a", "signature": 3}},
        {"toolResult": [{"text": 1}]},
    ],
)
def test_bedrock_fields_of_the_wrong_type_are_a_stream_protocol_error(delta, monkeypatch):
    monkeypatch.setenv("MODELWIRE_DEBUG", "1")
    frames = [
        encode_frame({":message-type": "event", ":event-type": "messageStart"}, b'{"role": "assistant"}'),
        encode_frame(
            {":message-type": "event", ":event-type": "contentBlockDelta"},
            json.dumps({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "x"}}}).encode(),
        ),
        encode_frame(
            {":message-type": "event", ":event-type": "contentBlockDelta"},
            json.dumps({"contentBlockIndex": 0, "delta": delta}).encode(),
        ),
    ]
    got, err = decode("bedrock-converse", [b"".join(frames)])
    assert isinstance(err, E.StreamProtocolError) and not isinstance(err, E.InternalError), err
    checked(got)


def test_a_non_object_bedrock_delta_is_a_stream_protocol_error():
    frames = [
        encode_frame({":message-type": "event", ":event-type": "messageStart"}, b'{"role": "assistant"}'),
        encode_frame(
            {":message-type": "event", ":event-type": "contentBlockDelta"}, b'{"contentBlockIndex": 0, "delta": [1]}'
        ),
    ]
    got, err = decode("bedrock-converse", [b"".join(frames)])
    assert isinstance(err, E.StreamProtocolError)
    checked(got)


# -- 4: the grammar holds on every error path -----------------------------------------------


def test_a_server_tool_result_while_its_call_is_open_is_refused_and_the_events_are_valid():
    from modelwire.adapters import encode_sse

    events = [
        {"type": "message_start", "message": {"id": "m", "model": "claude", "usage": {"input_tokens": 1}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"query": "x"}'},
        },
        # the call's content_block_stop is missing (or misspelled)
        {"type": "content_block_stopp", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        },
    ]
    got, err = decode("anthropic", [encode_sse([(e["type"], e) for e in events])])
    assert isinstance(err, E.StreamProtocolError) and "before that call ended" in err.message
    checked(got)


def test_chat_whose_first_chunk_fails_still_opens_and_closes_the_call():
    from modelwire.adapters import encode_sse

    chunk = {"id": "c", "model": {"a": 1}, "choices": [{"index": 0, "delta": {"content": "hi"}}]}
    got, err = decode("openai-chat", [encode_sse([(None, chunk)])])
    assert isinstance(err, E.StreamProtocolError) and "model is dict" in err.message  # the field at fault
    assert [e.type for e in checked(got)] == ["MODEL_CALL_START", "MODEL_CALL_END"]


def test_chat_tool_call_that_never_got_a_name_closes_the_model_call():
    from modelwire.adapters import encode_sse

    chunks = [
        {
            "id": "c",
            "model": "m",
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "function": {"arguments": "{}"}}]}}
            ],
        },
        {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    got, err = decode("openai-chat", [encode_sse([(None, c) for c in chunks]) + b"data: [DONE]\n\n"])
    assert isinstance(err, E.StreamProtocolError) and "never got a name" in err.message
    assert checked(got)[-1].type == "MODEL_CALL_END"


def test_a_failed_call_does_not_say_it_completed():
    got, err = decode("anthropic", [fake_body("anthropic", ("text", "Hello there."))[:-60]])
    assert isinstance(err, E.IncompleteStreamError)
    end = checked(got)[-1]
    assert (end.stop_reason, end.finished_reason) == ("error", "interrupted")


def test_the_adapter_state_is_named():
    from modelwire.adapters._base import DONE, FAILED, IDLE, STREAMING

    adapter = get_protocol("anthropic").adapter_class()("r")
    assert adapter.state is IDLE
    decoder = get_protocol("anthropic").decoder(adapter)
    whole = fake_body("anthropic", ("text", "Hi."))
    decoder.feed(whole[:40])
    assert adapter.state in (IDLE, STREAMING)
    decoder.feed(whole[40:])
    assert adapter.state is DONE
    broken = get_protocol("anthropic").adapter_class()("r")
    with pytest.raises(E.IncompleteStreamError):
        get_protocol("anthropic").decoder(broken).close()
    assert broken.state is FAILED and broken.feed({"type": "ping"}) == []


# -- 6: one deadline for a call ---------------------------------------------------------------


@pytest.fixture
def silent_server():
    """Accepts connections and reads requests, and never answers."""
    import socket
    import threading

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    accepted = []

    def accept():
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            accepted.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1", accepted
    sock.close()
    for conn in accepted:
        conn.close()


def _timed(coro):
    import time

    started = time.monotonic()
    try:
        asyncio.run(coro)
    except E.ProviderError as err:
        return err, time.monotonic() - started
    raise AssertionError("the call did not fail")


def test_total_bounds_the_call_across_retries(silent_server):
    url, accepted = silent_server
    model = load_model(
        "openai:gpt-4o",
        api_key="k",
        base_url=url,
        timeouts={"total": 1.0, "first_byte": 60},
        retry=RetryPolicy(max_retries=3, initial_delay=0.01),
    )
    err, took = _timed(model.complete(QUESTION))
    assert isinstance(err, E.TimeoutError) and (err.which, err.seconds) == ("total", 1.0)
    assert "(1 s)" in err.message and "-" not in err.message.split("fired")[0]
    assert took < 30 and len(accepted) == 1  # not the first byte's 60 s, nor a retry's


def test_first_byte_is_counted_from_sending_not_from_the_pool_wait(silent_server):
    url, _ = silent_server
    model = load_model(
        "openai:gpt-4o",
        api_key="k",
        base_url=url,
        timeouts={"first_byte": 0.4, "pool": 30},
        retry=RetryPolicy(max_retries=0),
    )
    err, took = _timed(model.complete(QUESTION))
    assert isinstance(err, E.TimeoutError) and (err.which, err.seconds) == ("first_byte", 0.4)
    # The time it says is the time it fired: 0.4 s, or more on a loaded machine; never the pool's 30 s more.
    after = re.search(r"([\d.]+) s after the request was sent", err.message)
    assert after is not None and 0.4 <= float(after.group(1)) < 20, err.message
    assert took < 20  # first_byte + pool would be 30.4 s


def test_a_retry_after_longer_than_what_is_left_raises_the_rate_limit_error(server):
    from modelwire.testing.server import error_reply

    server.script(
        error_reply(429, {"error": {"type": "rate_limit_error", "message": "slow down"}}, {"retry-after": "50"})
    )
    model = load_model(
        "openai:gpt-4o",
        api_key="k",
        base_url=server.url + "/v1",
        timeouts={"total": 30.0},
        retry=RetryPolicy(max_retries=2),
    )
    err, took = _timed(model.complete(QUESTION))
    assert isinstance(err, E.RateLimitError) and err.message == (
        "slow down (the provider asks to wait 50 s; not waited: that would pass the call's total timeout (30 s))"
    )
    assert took < 25 and len(server.requests) == 1  # raised at once, not after waiting into the total (30 s)


def test_a_total_timeout_while_the_body_streams_says_so(server):
    whole = fake_body("openai-chat", ("text", "one two three four five six seven eight"))
    # The headers and the first piece at once, then a piece every 2 s: the total fires mid-body
    # (and leaves a loaded machine seconds to send the headers).
    server.script(Reply(body=whole, headers={"content-type": "text/event-stream"}, delay=2.0))
    model = load_model(
        "openai:gpt-4o",
        api_key="k",
        base_url=server.url + "/v1",
        timeouts={"total": 4.0},
        retry=RetryPolicy(max_retries=0),
    )
    err, _ = _timed(model.complete(QUESTION))
    assert isinstance(err, E.TimeoutError) and err.which == "total" and "while reading the body" in err.message
    assert "no response headers" not in err.message


# -- 7: error bodies keep what they say ------------------------------------------------------


def test_an_error_that_is_a_plain_string_keeps_its_text(server):
    from modelwire.testing.server import error_reply

    server.script(error_reply(404, {"error": 'model "llama9" not found, try pulling it first'}))
    err, _ = _timed(
        load_model(
            "openai:gpt-4o", api_key="k", base_url=server.url + "/v1", retry=RetryPolicy(max_retries=0)
        ).complete(QUESTION)
    )
    assert isinstance(err, E.InvalidRequestError) and err.message == 'model "llama9" not found, try pulling it first'


def test_a_proxy_that_wants_credentials_says_so(server):
    server.script(
        Reply(
            status=407,
            body=b"<html>Proxy Authentication Required</html>",
            headers={"content-type": "text/html", "proxy-authenticate": "Basic"},
        )
    )
    err, _ = _timed(
        load_model(
            "openai:gpt-4o", api_key="k", base_url=server.url + "/v1", retry=RetryPolicy(max_retries=0)
        ).complete(QUESTION)
    )
    assert isinstance(err, E.AuthenticationError) and err.status_code == 407
    assert (
        "proxy wants credentials" in err.message
        and "HTTPS_PROXY" in err.message
        and "Proxy Authentication Required" in err.message
    )


# -- 10: what independent servers really send --------------------------------------------------


def test_a_whole_responses_object_answered_to_a_stream_request_is_the_reply(server):
    answer = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "gpt-5",
        "error": None,
        "incomplete_details": None,
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Hello there.", "annotations": []}],
            }
        ],
        "usage": {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8},
    }
    server.script(Reply(body=json.dumps(answer).encode(), headers={"content-type": "application/json"}))
    reply = asyncio.run(server.model("openai-responses").complete(QUESTION))
    assert reply.get_text_content() == "Hello there." and reply.usage.output_tokens == 3


def test_chat_deltas_with_both_function_call_and_tool_calls_give_one_valid_call():
    from modelwire.adapters import encode_sse

    # llama.cpp's server: every fragment carries the legacy function_call beside tool_calls
    pieces = ['{"city"', ': "Paris"}']
    chunks = [
        {
            "id": "c",
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "function_call": {"name": "get_weather", "arguments": pieces[0]},
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_abc",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": pieces[0]},
                            }
                        ],
                    },
                }
            ],
        },
        {
            "id": "c",
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "function_call": {"arguments": pieces[1]},
                        "tool_calls": [{"index": 0, "function": {"arguments": pieces[1]}}],
                    },
                }
            ],
        },
        {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    events, err = decode("openai-chat", [encode_sse([(None, c) for c in chunks]) + b"data: [DONE]\n\n"])
    assert err is None
    starts = [e for e in checked(events) if e.type == "TOOL_CALL_START"]
    assert [(s.tool_call_id, s.tool_call_name) for s in starts] == [("call_abc", "get_weather")]
    args = "".join(e.delta for e in events if e.type == "TOOL_CALL_DELTA")
    assert json.loads(args) == {"city": "Paris"}


def test_llamacpp_gets_an_empty_string_where_openai_gets_null():
    from modelwire.message import AssistantMsg, ToolCallBlock

    history = [
        UserMsg("u", "Weather?"),
        AssistantMsg("a", [ToolCallBlock(id="call_1", name="get_weather", input='{"city": "Paris"}')]),
    ]
    for spec, expected in (("llamacpp:qwen3-8b", ""), ("openai:gpt-4o", None)):
        body, _ = load_model(spec, api_key="k").build_request(history)
        (turn,) = [m for m in body["messages"] if m["role"] == "assistant"]
        assert turn["content"] == expected and turn["tool_calls"][0]["id"] == "call_1"


# -- 5: the agent always ends a reply, and can reply again ---------------------------------------


def _agent_on(server, *tools):
    from modelwire.agent import Agent

    model = load_model("anthropic:claude-test", api_key="k", base_url=server.url, retry=RetryPolicy(max_retries=0))
    return Agent("a", model, tools=list(tools))


async def _reply(agent, text):
    events = [e async for e in agent.reply_stream(UserMsg("u", text))]
    Ev.check_stream(events)
    assert events[-1].type == "REPLY_END"
    assert agent.context[-1].to_dict() == _folded(events, agent.context[-1].created_at).to_dict()
    return events


def _folded(events, created_at):
    from modelwire.message import AssistantMsg

    msg = AssistantMsg("a", [], id=events[0].reply_id, created_at=created_at)
    for e in events:
        msg.append_event(e)
    return msg


def f(x: int = 0) -> str:
    """A tool."""
    return "ok"


def svg() -> object:
    """A picture."""
    from modelwire.message import Base64Source, DataBlock

    return DataBlock(source=Base64Source(data="PHN2Zy8+", media_type="image/svg+xml"))


def test_arguments_nested_absurdly_deep_are_an_error_result_and_the_agent_goes_on(server):
    from modelwire.testing.server import sse_reply

    deep = '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    server.script(
        sse_reply(fake_body("anthropic", ("tool", "toolu_1", "f", deep))),
        sse_reply(fake_body("anthropic", ("text", "Sorry."))),
        sse_reply(fake_body("anthropic", ("text", "Hello."))),
    )
    agent = _agent_on(server, f)
    events = asyncio.run(_reply(agent, "go"))
    (result,) = [b for b in agent.context[-1].content if b.type == "tool_result"]
    text = (
        result.output if isinstance(result.output, str) else "".join(b.text for b in result.output if b.type == "text")
    )
    assert result.state == "error" and "nested too deeply" in text
    assert events[-1].finished_reason == "completed"
    assert asyncio.run(_reply(agent, "again"))[-1].finished_reason == "completed"


def test_tool_data_the_model_cannot_take_is_said_in_words_and_kept_aside(server):
    from modelwire.testing.server import sse_reply

    server.script(
        sse_reply(fake_body("anthropic", ("tool", "toolu_1", "svg", "{}"))),
        sse_reply(fake_body("anthropic", ("text", "I see."))),
        sse_reply(fake_body("anthropic", ("text", "Hello."))),
    )
    agent = _agent_on(server, svg)
    events = asyncio.run(_reply(agent, "draw"))
    assert events[-1].finished_reason == "completed"
    (result,) = [b for b in agent.context[-1].content if b.type == "tool_result"]
    assert result.state == "error" and result.metadata["unsent_output"][0]["media_type"] == "image/svg+xml"
    sent = server.requests[1]["json"]["messages"][-1]["content"][0]
    assert (
        sent["type"] == "tool_result"
        and "image/svg+xml" in json.dumps(sent["content"])
        and "cannot take" in json.dumps(sent["content"])
    )
    assert asyncio.run(_reply(agent, "again"))[-1].finished_reason == "completed"


def test_a_request_that_cannot_be_formatted_ends_the_reply_with_its_error(server):
    from modelwire.message import Base64Source, DataBlock

    agent = _agent_on(server)
    bad = UserMsg("u", [DataBlock(source=Base64Source(data="PHN2Zy8+", media_type="image/svg+xml"))])
    events = asyncio.run(_collect(agent.reply_stream(bad, raise_errors=False)))
    Ev.check_stream(events)
    assert events[-1].type == "REPLY_END" and events[-1].finished_reason == "error"
    assert events[-1].error.type == "invalid_request" and "image/svg+xml" in events[-1].error.message
    assert agent._states == {}  # nothing left parked or running


async def _collect(stream):
    return [e async for e in stream]


def test_a_lone_surrogate_is_refused_when_the_message_is_built():
    from modelwire.message import AssistantMsg, TextBlock

    for build in (
        lambda: UserMsg("u", "x\ud800y"),
        lambda: UserMsg("u", [TextBlock(text="\udfff")]),
        lambda: AssistantMsg("a", "ok", metadata={"k": "\ud800"}),
    ):
        with pytest.raises(E.InvalidMessageError, match="lone surrogate"):
            build()
    msg = UserMsg("u", "fine")
    with pytest.raises(E.InvalidMessageError):
        msg.content.append(TextBlock(text="\ud800"))
    assert msg.get_text_content() == "fine"


def test_absurd_nesting_is_refused_when_the_message_is_built():
    deep: dict = {}
    node = deep
    for _ in range(100_000):
        node["a"] = {}
        node = node["a"]
    with pytest.raises(E.InvalidMessageError, match="nested more than"):
        UserMsg("u", "hi", metadata=deep)


# -- 11: serving answers a bad body with 400 ------------------------------------------------------


@pytest.mark.parametrize(
    "body,words",
    [
        (b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
        (
            json.dumps(
                {
                    "threadId": "t",
                    "runId": "r",
                    "messages": [{"id": "m1", "role": "assistant", "content": "", "toolCalls": [None]}],
                }
            ).encode(),
            "ag-ui",
        ),
        (
            json.dumps(
                {"threadId": "t", "runId": "r", "messages": [{"id": True, "role": "user", "content": "hi"}]}
            ).encode(),
            "ag-ui",
        ),
        (
            json.dumps(
                {
                    "messages": [
                        {
                            "id": "u1",
                            "role": "user",
                            "parts": [{"type": "file", "mediaType": "image/png", "url": ["x"]}],
                        }
                    ]
                }
            ).encode(),
            "ui-message",
        ),
    ],
)
def test_a_malformed_body_is_a_400_that_says_why(body, words):
    import httpx2

    from modelwire.serve import EventStreamApp
    from test_serve import Served

    made = []
    with Served(EventStreamApp(lambda: made.append(1))) as url:
        response = httpx2.post(url + "/reply", content=body, headers={"content-type": "application/json"}, timeout=30)
    assert response.status_code == 400, response.text
    assert words in response.json()["error"] and not made


@pytest.mark.parametrize("protocol", protocol_names())
def test_a_compressed_stream_is_decoded_before_the_adapter_reads_it(server, protocol):
    """A proxy may gzip a stream (content-encoding: gzip): the body is read through the
    client's decoder then, and a plain one without it."""
    import gzip

    whole = fake_body(protocol, ("text", "Hello there, through a proxy."))
    packed = gzip.compress(whole)
    wire = get_protocol(protocol)
    pieces = [packed[i : i + 40] for i in range(0, len(packed), 40)]
    server.script(
        Reply(body=packed, pieces=pieces, headers={"content-type": wire.content_type, "content-encoding": "gzip"})
    )
    server.script(Reply(body=whole, pieces=wire.split_stream(whole), headers={"content-type": wire.content_type}))
    model = server.model(protocol)
    for _ in range(2):
        assert asyncio.run(model.complete(QUESTION)).get_text_content().strip() == "Hello there, through a proxy."
