"""Broken streams: each gives a typed error, and what arrived before it still folds.

Bodies here are written by hand from the documented wire formats.
"""

from __future__ import annotations

import json

import pytest

from modelwire.protocols import protocol_names

from modelwire import event as E
from modelwire.protocols import decode_sse
from modelwire.adapters._sse import SSEDecoder
from modelwire.errors import (
    IncompleteStreamError,
    InvalidRequestError,
    OverloadedError,
    ProviderError,
    RateLimitError,
    StreamProtocolError,
    UpstreamError,
)
from modelwire.message import AssistantMsg


def sse(*events: dict | str, named: bool = False) -> bytes:
    out = []
    for ev in events:
        if isinstance(ev, str):
            out.append(f"data: {ev}\n\n")
        elif named:
            out.append(f"event: {ev['type']}\ndata: {json.dumps(ev)}\n\n")
        else:
            out.append(f"data: {json.dumps(ev)}\n\n")
    return "".join(out).encode()


def fold_error(protocol: str, body: bytes) -> tuple[ProviderError, AssistantMsg]:
    with pytest.raises(ProviderError) as info:
        decode_sse(protocol, body, "r")
    err = info.value
    events = [E.ReplyStartEvent(session_id="s", reply_id="r", name="a"), *err.events]
    events.append(E.ReplyEndEvent(session_id="s", reply_id="r", finished_reason="error", error=err.to_error_info()))
    E.check_stream(events)
    msg = AssistantMsg("a", [], id="r")
    for ev in events:
        msg.append_event(ev)
    assert msg.error.type == err.error_type and msg.finished_reason == "error"
    end = [e for e in events if e.type == "MODEL_CALL_END"][-1]
    assert end.stop_reason == "error"
    return err, msg


# -- Anthropic -------------------------------------------------------------------------------

A_START = {
    "type": "message_start",
    "message": {"id": "msg_1", "model": "claude-x", "content": [], "usage": {"input_tokens": 5, "output_tokens": 1}},
}
A_TEXT = [
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Partial ans"}},
]


def test_anthropic_error_event_is_typed_and_keeps_the_text():
    body = sse(
        A_START, *A_TEXT, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, named=True
    )
    err, msg = fold_error("anthropic", body)
    assert isinstance(err, OverloadedError) and err.provider_type == "overloaded_error" and err.message == "Overloaded"
    assert err.error_type == "upstream"
    assert msg.get_text_content() == "Partial ans" and msg.content[0].finished_at


@pytest.mark.parametrize(
    "etype,cls",
    [
        ("rate_limit_error", RateLimitError),
        ("invalid_request_error", InvalidRequestError),
        ("api_error", UpstreamError),
    ],
)
def test_anthropic_error_types(etype, cls):
    err, _ = fold_error(
        "anthropic", sse(A_START, {"type": "error", "error": {"type": etype, "message": "m"}}, named=True)
    )
    assert type(err) is cls


def test_anthropic_stream_cut_off_is_incomplete():
    err, msg = fold_error(
        "anthropic", sse(A_START, *A_TEXT) + b'event: content_block_delta\ndata: {"type":"content_blo'
    )
    assert isinstance(err, IncompleteStreamError) and err.error_type == "connection"
    assert msg.get_text_content() == "Partial ans"


def test_anthropic_delta_for_a_block_never_started():
    body = sse(A_START, {"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "x"}})
    err, msg = fold_error("anthropic", body)
    assert isinstance(err, StreamProtocolError) and "never started" in err.message


def test_invalid_json_in_a_data_line():
    body = sse(A_START, *A_TEXT) + b"data: {not json}\n\n"
    err, msg = fold_error("anthropic", body)
    assert isinstance(err, StreamProtocolError) and "invalid JSON" in err.message
    assert msg.get_text_content() == "Partial ans"


def test_a_data_line_that_is_not_an_object():
    err, _ = fold_error("openai-chat", b"data: [1, 2]\n\n")
    assert isinstance(err, StreamProtocolError)


def test_malformed_event_fields_give_a_typed_error_not_a_key_error():
    body = sse(A_START, {"type": "content_block_start", "index": 0})  # no content_block
    err, _ = fold_error("anthropic", body)
    assert isinstance(err, StreamProtocolError) and "content_block" in err.message


# -- Chat Completions ------------------------------------------------------------------------


def chunk(delta: dict | None = None, finish: str | None = None, **extra) -> dict:
    choices = [] if delta is None and finish is None else [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    return {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-x", "choices": choices, **extra}


def test_chat_error_object_in_a_chunk():
    body = sse(
        chunk({"role": "assistant", "content": "Hi"}),
        chunk(error={"message": "Rate limit reached", "type": "rate_limit_exceeded", "code": "rate_limit_exceeded"}),
    )
    err, msg = fold_error("openai-chat", body)
    assert isinstance(err, RateLimitError) and err.message == "Rate limit reached"
    assert msg.get_text_content() == "Hi"


def test_chat_stream_without_finish_or_done_is_incomplete():
    body = sse(chunk({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": '{"a"'}}]}))
    err, msg = fold_error("openai-chat", body)
    assert isinstance(err, IncompleteStreamError)
    (call,) = msg.content
    assert (call.id, call.input) == ("call_1", '{"a"')  # what arrived is kept, raw


def test_chat_stream_with_finish_but_no_done_is_accepted_and_noted():
    events = decode_sse("openai-chat", sse(chunk({"content": "ok"}), chunk(finish="stop")), "r")
    end = events[-1]
    assert end.type == "MODEL_CALL_END" and end.stop_reason == "end_turn" and end.metadata["terminal_event_missing"]


# -- Responses -------------------------------------------------------------------------------

R_HEAD = [
    {"type": "response.created", "response": {"id": "resp_1", "model": "gpt-x", "status": "in_progress", "output": []}},
    {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {"type": "message", "id": "msg_1", "content": [], "role": "assistant"},
    },
    {
        "type": "response.content_part.added",
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": 0,
        "part": {"type": "output_text", "text": ""},
    },
    {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Half"},
]


@pytest.mark.parametrize("bad_type", [None, 0, False, ""])
def test_a_responses_event_whose_type_is_not_a_name_is_a_typed_error_not_a_skipped_delta(bad_type):
    """A text delta whose ``type`` is null (or 0, or false, or empty) next to its SSE event
    line: the event cannot be read, and skipping it would lose its text."""
    delta = {"type": bad_type, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": " and lost"}
    body = sse(*R_HEAD, named=True) + f"event: response.output_text.delta\ndata: {json.dumps(delta)}\n\n".encode()
    err, msg = fold_error("openai-responses", body)
    assert isinstance(err, StreamProtocolError) and "type" in str(err)
    assert msg.get_text_content() == "Half"  # what came before it is kept


def test_responses_error_event():
    body = sse(*R_HEAD, {"type": "error", "code": "server_error", "message": "The server had an error", "param": None})
    err, msg = fold_error("openai-responses", body)
    assert isinstance(err, UpstreamError) and err.provider_type == "server_error"
    assert msg.get_text_content() == "Half"


def test_responses_failed():
    failed = {
        "type": "response.failed",
        "response": {
            "id": "resp_1",
            "status": "failed",
            "error": {"code": "rate_limit_exceeded", "message": "slow down"},
            "usage": None,
        },
    }
    err, msg = fold_error("openai-responses", sse(*R_HEAD, failed))
    assert isinstance(err, RateLimitError) and err.message == "slow down"


def test_responses_incomplete_is_a_stop_reason_not_an_error():
    incomplete = {
        "type": "response.incomplete",
        "response": {
            "id": "resp_1",
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "usage": {
                "input_tokens": 3,
                "output_tokens": 7,
                "input_tokens_details": {"cached_tokens": 1},
                "output_tokens_details": {"reasoning_tokens": 2},
            },
            "output": [],
        },
    }
    events = decode_sse("openai-responses", sse(*R_HEAD, incomplete), "r")
    end = events[-1]
    assert (end.stop_reason, end.provider_stop_reason) == ("max_tokens", "max_output_tokens")
    assert (end.input_tokens, end.output_tokens, end.cache_input_tokens, end.reasoning_tokens) == (3, 7, 1, 2)


def test_responses_done_marker_before_completion_is_incomplete():
    err, msg = fold_error("openai-responses", sse(*R_HEAD, "[DONE]"))
    assert isinstance(err, IncompleteStreamError)


def test_responses_delta_for_an_item_never_added():
    body = sse(
        R_HEAD[0],
        {"type": "response.output_text.delta", "item_id": "ghost", "output_index": 5, "content_index": 0, "delta": "x"},
    )
    err, _ = fold_error("openai-responses", body)
    assert isinstance(err, StreamProtocolError) and "never added" in err.message


# -- SSE decoder -----------------------------------------------------------------------------


def test_sse_decoder_rules():
    body = (
        b"\xef\xbb\xbf: a comment\r\n"
        b"retry: 1500\r\nid: 42\r\nevent: update\r\ndata:no-space\r\ndata: second line\r\n\r\n"
        b"data\n\n"  # a field name alone: empty data, still an event
        b"id\n\n"  # an id line alone resets nothing visible and dispatches nothing
        b"event: lonely\n\n"  # no data: not dispatched
        b"data: \xe2\x82\xac\rdata: x\r\r"
    )
    dec = SSEDecoder()
    events = dec.feed(body) + dec.close()
    assert [(e.event, e.data, e.id, e.retry) for e in events] == [
        ("update", "no-space\nsecond line", "42", 1500),
        ("message", "", "42", 1500),
        ("message", "€\nx", "", 1500),
    ]
    assert dec.comments == 1 and not dec.pending


def test_sse_decoder_splits_anywhere_including_inside_utf8_and_crlf():
    body = "data: 漢字🙂\r\n\r\ndata: b\r\n\r\n".encode()
    expected = SSEDecoder().feed(body)
    for cut in range(1, len(body)):
        dec = SSEDecoder()
        assert dec.feed(body[:cut]) + dec.feed(body[cut:]) + dec.close() == expected, cut


def test_sse_cut_mid_line_is_pending():
    dec = SSEDecoder()
    assert dec.feed(b'data: {"a": 1}\n\ndata: {"b"') != []
    assert dec.close() == [] and dec.pending


# -- Chat tool-call tracking (hand-written from the documented format) --------------------------


def fold_ok(protocol: str, body: bytes) -> AssistantMsg:
    events = [E.ReplyStartEvent(session_id="s", reply_id="r", name="a"), *decode_sse(protocol, body, "r")]
    events.append(E.ReplyEndEvent(session_id="s", reply_id="r"))
    E.check_stream(events)
    msg = AssistantMsg("a", [], id="r")
    for ev in events:
        msg.append_event(ev)
    return msg


def test_chat_tool_fragments_are_matched_by_id_then_index_and_tolerate_missing_index():
    body = sse(
        chunk({"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "f", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "g", "arguments": '{"y":'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"x":'}}]}),
        # Some servers repeat the id on every fragment (and may drop the index).
        chunk({"tool_calls": [{"id": "call_b", "function": {"arguments": " 2}"}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": " 1}"}}]}),
        # No id and no index: continues the last call that was named.
        chunk({"tool_calls": [{"function": {"arguments": ""}}]}),
        chunk({}, "tool_calls"),
        "[DONE]",
    )
    msg = fold_ok("openai-chat", body)
    assert [(c.id, c.name, c.input) for c in msg.content] == [("call_a", "f", '{"x": 1}'), ("call_b", "g", '{"y": 2}')]


def test_chat_tool_call_without_id_gets_one_and_a_name_that_comes_late_is_used():
    body = sse(
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"q": '}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"name": "search", "arguments": '"x"}'}}]}),
        chunk({"tool_calls": [{"index": 1, "function": {"name": "noargs"}}]}),
        chunk({}, "tool_calls"),
        "[DONE]",
    )
    msg = fold_ok("openai-chat", body)
    assert [(c.id, c.name, c.input) for c in msg.content] == [
        ("call_0", "search", '{"q": "x"}'),
        ("call_1", "noargs", "{}"),
    ]


def test_anthropic_tool_without_argument_pieces_gets_its_start_input_or_empty_object():
    body = sse(
        A_START,
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t0", "name": "now", "input": {}},
        },
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ""}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}},
        },
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    )
    msg = fold_ok("anthropic", body)
    assert [(c.id, c.input) for c in msg.content] == [("t0", "{}"), ("t1", '{"a": 1}')]


@pytest.mark.parametrize("protocol", protocol_names())
def test_an_event_nested_too_deeply_to_read_is_the_streams_fault(protocol):
    """JSON nested thousands deep cannot be parsed; that is a malformed stream (typed, with
    what came before kept), never a RecursionError out of the decoder, on every framing."""
    from modelwire.adapters import encode_frame, framing_decoder
    from modelwire.protocols import get_protocol
    from modelwire.testing.sse import body

    wire = get_protocol(protocol)
    deep = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
    pieces = wire.split_stream(body(protocol, ("text", "Partial answer")))
    good = pieces[: len(pieces) // 2]  # mid-answer
    if wire.framing == "sse":
        bad = b"data: " + deep + b"\n\n"
    elif wire.framing == "ndjson":
        bad = deep + b"\n"
    else:
        bad = encode_frame(
            {":message-type": "event", ":event-type": "contentBlockDelta", ":content-type": "application/json"}, deep
        )
    decoder = framing_decoder(wire.framing, wire.adapter_class()("r"))
    events = []
    with pytest.raises(StreamProtocolError) as info:
        for piece in [*good, bad]:
            events += decoder.feed(piece)
    assert "JSON" in info.value.message
    events += info.value.events
    assert any(e.type == "TEXT_BLOCK_DELTA" for e in events) and events[-1].type == "MODEL_CALL_END"


# -- context overflows from compatible servers -------------------------------------------------

LLAMA_CPP_OVERFLOW = {  # llama.cpp's llama-server, format_error_response + n_prompt_tokens / n_ctx
    "error": {
        "code": 400,
        "message": "request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 5000,
        "n_ctx": 4096,
    }
}
OVERFLOWS = {
    "llama.cpp": LLAMA_CPP_OVERFLOW,
    "llama.cpp behind a proxy that drops the type": {
        "error": {"message": LLAMA_CPP_OVERFLOW["error"]["message"], "type": None, "code": "400"}
    },
    "vLLM": {
        "object": "error",
        "message": (
            "The decoder prompt (length 5951) is longer than the maximum model length of 4096. Make "
            "sure that `max_model_len` is no smaller than the number of text tokens."
        ),
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    },
    "vLLM, OpenAI's words": {
        "error": {
            "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",
            "type": "BadRequestError",
            "code": 400,
        }
    },
    "LM Studio": {
        "error": (
            "The number of tokens to keep from the initial prompt is greater than the context "
            "length. Try to load the model with a larger context length."
        )
    },
    "Ollama": {"error": "the input length exceeds the context length"},
    "LiteLLM": {
        "error": {
            "message": "litellm.ContextWindowExceededError: litellm.BadRequestError: upstream said no",
            "type": None,
            "param": None,
            "code": "400",
        }
    },
}


# Each server's words on the Chat route, and llama.cpp's (which serves the Anthropic route
# too) on all five presets pointed at it.
CASES = [(server, "openai") for server in OVERFLOWS] + [
    ("llama.cpp", preset) for preset in ("anthropic", "openai-responses", "ollama", "deepseek")
]


@pytest.mark.parametrize("server, preset", CASES)
def test_a_context_overflow_from_a_compatible_server_is_a_context_too_long_error(server, preset):
    """What each compatible server answers to a prompt over its context, sent by a real
    server on 127.0.0.1 to each preset pointed at it: a ``ContextTooLongError``, so an agent
    that trims its history on it does so there too."""
    import asyncio

    from modelwire.errors import ContextTooLongError
    from modelwire.message import UserMsg
    from modelwire.models import load_model
    from modelwire.models.transport import RetryPolicy
    from modelwire.testing import ProviderServer, error_reply

    with ProviderServer() as srv:
        srv.script(error_reply(400, OVERFLOWS[server]))
        model = load_model(
            f"{preset}:m",
            api_key="k",
            base_url=srv.url,
            retry=RetryPolicy(max_retries=0),
            capability_lookup=False,
            capabilities={"context_window": 4096},
        )
        with pytest.raises(ProviderError) as raised:
            asyncio.run(model.complete([UserMsg("u", "a long prompt")]))
    assert isinstance(raised.value, ContextTooLongError), (type(raised.value).__name__, str(raised.value))
