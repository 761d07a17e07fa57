"""A provider-run tool's result must answer a call that is open: one this answer made and
ended, or one the request left without its result (a paused turn goes on in a new call). A
result naming any other call (Anthropic ``web_search_tool_result`` / ``mcp_tool_result``,
Bedrock's code interpreter ``toolResult``), or arriving before its call ended, is a typed
``StreamProtocolError`` whose events close what was open: what came before is kept and the
events keep the grammar. Each test streams from the local provider server through the real
transport, decoder (and its short path) and adapter; the adapter fed dicts (the full path)
answers the same."""

from __future__ import annotations

import asyncio
import json

import pytest

from modelwire import event as E
from modelwire.adapters import encode_frame, encode_sse
from modelwire.errors import StreamProtocolError
from modelwire.message import AssistantMsg, TextBlock, ToolCallBlock, UserMsg
from modelwire.protocols import get_protocol
from modelwire.testing import ProviderServer
from modelwire.testing.sse import stream_reply

_START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "usage": {"input_tokens": 10, "output_tokens": 0},
    },
}


def _anthropic(*blocks: dict, stop: bool = True) -> list[dict]:
    """message_start, each content block started (a text block with two deltas) and stopped,
    then the end; ``{"open": True}`` in a block leaves it without its stop."""
    events = [_START]
    for index, block in enumerate(blocks):
        block = dict(block)
        left_open = block.pop("open", False)
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        if block["type"] == "text":
            for piece in ("Searching ", "now."):
                delta = {"type": "text_delta", "text": piece}
                events.append({"type": "content_block_delta", "index": index, "delta": delta})
        if not left_open:
            events.append({"type": "content_block_stop", "index": index})
    if stop:
        events.append({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}})
        events.append({"type": "message_stop"})
    return events


TEXT = {"type": "text", "text": ""}
SEARCH = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "news"}}
RESULTS = [{"type": "web_search_result", "url": "https://example.com/", "title": "Example"}]


def _result(call_id: str, kind: str = "web_search_tool_result") -> dict:
    return {"type": kind, "tool_use_id": call_id, "content": RESULTS}


async def _streamed(server: ProviderServer, protocol: str, raw: bytes, history: list | None = None):
    server.script(stream_reply(protocol, raw))
    model = server.model(protocol)
    events: list = []
    try:
        async for event in model.stream(history or [UserMsg("user", "What is new?")], reply_id="r"):
            events.append(event)
    except StreamProtocolError as err:
        assert not err.events  # the model passes the closing events on before it raises
        return events, err
    return events, None


def _grammar(events: list) -> None:
    E.check_stream(
        [
            E.ReplyStartEvent(session_id="s", reply_id="r", name="a"),
            *events,
            E.ReplyEndEvent(session_id="s", reply_id="r"),
        ]
    )


def _fed(protocol: str, frames: list[tuple[str | None, dict]], carried: frozenset[str] | None):
    """The adapter fed decoded events one by one (the full path): its events and its error."""
    adapter = get_protocol(protocol).adapter_class()("r")
    adapter.carried_calls = carried
    events: list = []
    for name, data in frames:
        try:
            events += adapter.feed(data, name)
        except StreamProtocolError as err:
            return events + err.events, err
    return events, None


NO_CALL = [
    pytest.param(_result("srvtoolu_9"), id="web_search_result_for_no_call"),
    pytest.param(_result("mcptoolu_9", "mcp_tool_result"), id="mcp_result_for_no_call"),
    pytest.param(_result("toolu_text"), id="result_for_an_id_no_block_has"),
]


@pytest.mark.parametrize("result", NO_CALL)
def test_an_anthropic_result_for_no_open_call_is_a_typed_error_with_the_answer_so_far(server, result):
    frames = [(e["type"], e) for e in _anthropic(TEXT, SEARCH, result, TEXT)]
    events, err = asyncio.run(_streamed(server, "anthropic", encode_sse(frames)))
    assert isinstance(err, StreamProtocolError) and result["tool_use_id"] in str(err)
    _grammar(events)
    text = "".join(e.delta for e in events if e.type == "TEXT_BLOCK_DELTA")
    assert text == "Searching now."  # the first text block, whole
    assert [e.type for e in events if e.type.startswith("TOOL_")] == [
        "TOOL_CALL_START",
        "TOOL_CALL_DELTA",
        "TOOL_CALL_END",
    ]
    assert events[-1].type == "MODEL_CALL_END" and events[-1].stop_reason == "error"
    full, full_err = _fed("anthropic", frames, frozenset())
    assert type(full_err) is type(err) and [e.type for e in full] == [e.type for e in events]


def test_an_anthropic_result_before_its_call_ended_is_a_typed_error(server):
    frames = [(e["type"], e) for e in _anthropic(TEXT, {**SEARCH, "open": True}, _result("srvtoolu_1"))]
    events, err = asyncio.run(_streamed(server, "anthropic", encode_sse(frames)))
    assert isinstance(err, StreamProtocolError) and "before that call ended" in str(err)
    _grammar(events)


def test_a_paused_turn_goes_on_with_the_result_of_the_call_it_paused_in(server):
    """Anthropic's pause_turn: the continuation's first block is the result of the server
    call the paused answer ended with (as pydantic-ai's recorded
    ``test_pause_turn_web_search_streaming_vcr.1`` begins); a second result for it is not."""
    paused = AssistantMsg(
        "assistant",
        [
            TextBlock(text="Searching."),
            ToolCallBlock(id="srvtoolu_1", name="web_search", input='{"query": "news"}', server_side=True),
        ],
    )
    history = [UserMsg("user", "What is new?"), paused]
    frames = [(e["type"], e) for e in _anthropic(_result("srvtoolu_1"), TEXT)]
    events, err = asyncio.run(_streamed(server, "anthropic", encode_sse(frames), history))
    assert err is None
    assert [e.tool_call_id for e in events if e.type == "TOOL_RESULT_START"] == ["srvtoolu_1"]
    assert events[-1].type == "MODEL_CALL_END" and events[-1].stop_reason == "end_turn"

    twice = [(e["type"], e) for e in _anthropic(_result("srvtoolu_1"), _result("srvtoolu_1"))]
    events, err = asyncio.run(_streamed(server, "anthropic", encode_sse(twice), history))
    assert isinstance(err, StreamProtocolError) and "second result" in str(err)
    assert [e.type for e in events].count("TOOL_RESULT_START") == 1


def _bedrock(result_id: str, *, call_ends: bool = True) -> bytes:
    """A ConverseStream answer with Nova's code interpreter (a server_tool_use call and its
    toolResult, as in test_bedrock's recorded shape), the result naming ``result_id``."""

    def frame(event: str, payload: dict) -> bytes:
        headers = {":event-type": event, ":content-type": "application/json", ":message-type": "event"}
        return encode_frame(headers, json.dumps(payload).encode())

    call = {"toolUse": {"toolUseId": "s1", "name": "nova_code_interpreter", "type": "server_tool_use"}}
    frames = [
        frame("messageStart", {"role": "assistant"}),
        frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Running it."}}),
        frame("contentBlockStop", {"contentBlockIndex": 0}),
        frame("contentBlockStart", {"contentBlockIndex": 1, "start": call}),
        frame("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '{"code": "1+1"}'}}}),
    ]
    if call_ends:
        frames.append(frame("contentBlockStop", {"contentBlockIndex": 1}))
    frames += [
        frame("contentBlockStart", {"contentBlockIndex": 2, "start": {"toolResult": {"toolUseId": result_id}}}),
        frame("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolResult": [{"text": "2"}]}}),
        frame("contentBlockStop", {"contentBlockIndex": 2}),
        frame("messageStop", {"stopReason": "end_turn"}),
        frame("metadata", {"usage": {"inputTokens": 5, "outputTokens": 3}, "metrics": {"latencyMs": 1}}),
    ]
    return b"".join(frames)


@pytest.mark.parametrize(
    "result_id, call_ends, said",
    [("s9", True, "left open"), ("s1", False, "before that call ended")],
    ids=["result_for_no_call", "result_before_its_call_ended"],
)
def test_bedrock_code_interpreter_result_for_no_open_call_is_a_typed_error(server, result_id, call_ends, said):
    events, err = asyncio.run(_streamed(server, "bedrock-converse", _bedrock(result_id, call_ends=call_ends)))
    assert isinstance(err, StreamProtocolError) and said in str(err)
    _grammar(events)
    assert "".join(e.delta for e in events if e.type == "TEXT_BLOCK_DELTA") == "Running it."


def test_bedrock_code_interpreter_result_for_its_call_completes(server):
    events, err = asyncio.run(_streamed(server, "bedrock-converse", _bedrock("s1")))
    assert err is None
    _grammar(events)
    assert [e.tool_call_id for e in events if e.type == "TOOL_RESULT_START"] == ["s1"]
