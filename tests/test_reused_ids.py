"""Tool-call ids that providers give again: the conversation goes on, whatever the ids.

Providers mint ids per turn or per response, not per conversation (Kimi on Fireworks
answers ``list_dir:0`` again on the next turn, llama.cpp set-ups one constant id, LiteLLM's
mock provider ``call_lm_1`` every time). Anthropic answers ``400: tool_use ids must be
unique`` to a history that repeats one, so the local server here refuses the same. Each test
runs the real agent, formatter, transport and adapter against a real server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json

import pytest

import sdk_oracle
from modelwire import event as E
from modelwire.agent import Agent
from modelwire.message import AssistantMsg, ToolCallBlock, ToolResultBlock, UserMsg
from modelwire.models import load_model
from modelwire.protocols import get_protocol
from modelwire.testing import ProviderServer
from modelwire.testing.sse import body as sse_body, stream_reply


def _pairs(protocol: str, payload: dict) -> tuple[list[str], list[str]]:
    """The call ids and the result ids of a request, in order, as the provider reads them."""
    calls, results = [], []
    if protocol == "anthropic":
        for m in payload["messages"]:
            for c in m["content"] if isinstance(m["content"], list) else ():
                if c["type"] == "tool_use":
                    calls.append(c["id"])
                elif c["type"] == "tool_result":
                    results.append(c["tool_use_id"])
    elif protocol == "openai-chat":
        for m in payload["messages"]:
            calls += [c["id"] for c in m.get("tool_calls") or ()]
            if m["role"] == "tool":
                results.append(m["tool_call_id"])
    elif protocol == "openai-responses":
        for item in payload["input"]:
            if item.get("type") == "function_call":
                calls.append(item["call_id"])
            elif item.get("type") == "function_call_output":
                results.append(item["call_id"])
    elif protocol == "bedrock-converse":
        for m in payload["messages"]:
            for c in m["content"]:
                if "toolUse" in c:
                    calls.append(c["toolUse"]["toolUseId"])
                elif "toolResult" in c:
                    results.append(c["toolResult"]["toolUseId"])
    return calls, results


def _unique_ids(protocol: str):
    """The provider's rule, as Anthropic states it (``tool_use ids must be unique``), and
    every result answering a call made before it."""

    def check(request: dict) -> None:
        calls, results = _pairs(protocol, request["json"])
        if len(set(calls)) != len(calls):
            raise ValueError(f"tool_use ids must be unique: {calls}")
        if set(results) - set(calls):
            raise ValueError(f"unexpected tool_use_id in tool_result: {sorted(set(results) - set(calls))}")

    return check


PROTOCOLS = ["anthropic", "openai-chat", "openai-responses", "bedrock-converse"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_provider_that_numbers_its_calls_per_response_keeps_a_conversation_going(protocol):
    """``call_0`` in two model calls of one reply, then again in the next reply: every
    request is one the provider takes, every reply's events keep the grammar, each result
    answers its own call, and a plain "Hello?" after it all is sent."""
    ran: list[str] = []

    def list_dir(path: str) -> str:
        """List a folder."""
        ran.append(path)
        return f"files of {path}"

    script = [
        sse_body(protocol, ("tool", "call_0", "list_dir", '{"path": "a"}')),
        sse_body(protocol, ("tool", "call_0", "list_dir", '{"path": "b"}')),
        sse_body(protocol, ("text", "Two folders.")),
        sse_body(protocol, ("tool", "call_0", "list_dir", '{"path": "c"}')),
        sse_body(protocol, ("text", "A third.")),
        sse_body(protocol, ("text", "Hello!")),
    ]
    with ProviderServer() as server:
        check = _unique_ids(protocol)
        server.script(*(stream_reply(protocol, raw, check=check) for raw in script))
        agent = Agent("a", server.model(protocol), tools=[list_dir])

        async def run(prompt: str) -> list:
            return [ev async for ev in agent.reply_stream(prompt)]

        first = asyncio.run(run("List a and b"))
        second = asyncio.run(run("And c?"))
        third = asyncio.run(run("Hello?"))
        requests = [r["json"] for r in server.requests]
    assert ran == ["a", "b", "c"]
    for events in (first, second, third):
        E.check_stream(events)
        assert events[-1].finished_reason == "completed", events[-1]
    assert [m.get_text_content() for m in agent.context if m.role == "assistant"][-1].strip() == "Hello!"
    # Each result went to its own call: the model read "files of a" for the first, "b" for the second.
    calls, results = _pairs(protocol, requests[-1])
    assert len(calls) == 3 and calls == results
    first_reply = agent.context[1]
    ids = [b.id for b in first_reply.get_content_blocks("tool_call")]
    assert ids[0] == "call_0" and ids[1] != "call_0"  # the first as the provider named it
    outputs = {b.id: b.output[0].text for b in first_reply.get_content_blocks("tool_result")}
    assert outputs == {ids[0]: "files of a", ids[1]: "files of b"}


@pytest.mark.parametrize("protocol", PROTOCOLS + ["gemini", "ollama"])
def test_a_history_that_repeats_an_id_is_sent_with_each_call_its_own(protocol):
    """A stored history where two turns (and two parallel calls of one turn) have one id:
    sent with the repeats made unique, deterministic, each result with its call, the history
    itself unchanged, and what did not repeat sent as it was."""
    history = [
        UserMsg("user", "a"),
        AssistantMsg(
            "agent",
            [
                ToolCallBlock(id="list_dir:0", name="list_dir", input='{"path": "a"}'),
                ToolResultBlock(id="list_dir:0", name="list_dir", output="A", state="success"),
            ],
        ),
        UserMsg("user", "b"),
        AssistantMsg(
            "agent",
            [
                ToolCallBlock(id="list_dir:0", name="list_dir", input='{"path": "b"}'),
                ToolCallBlock(id="list_dir:0", name="list_dir", input='{"path": "c"}'),
                ToolResultBlock(id="list_dir:0", name="list_dir", output="B", state="success"),
                ToolResultBlock(id="list_dir:0", name="list_dir", output="C", state="success"),
            ],
        ),
        UserMsg("user", "Hello?"),
    ]
    model = load_model(f"{_preset(protocol)}:m", api_key="k", base_url="http://127.0.0.1:9")
    tools = [{"name": "list_dir", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]
    payload = model.build_request(history, tools)[0]
    assert model.build_request(history, tools)[0] == payload
    assert [b.id for m in history[1::2] for b in m.content] == ["list_dir:0"] * 6  # untouched
    if protocol in ("gemini", "ollama"):
        return  # pairs calls and results by order, not by id: built without error is the case
    calls, results = _pairs(protocol, payload)
    assert len(set(calls)) == 3 and calls == results
    answers = _answers(protocol, payload)
    assert [answers[c] for c in calls] == ["A", "B", "C"]
    # The first call keeps the id the provider gave it, as it would without a repeat.
    alone = model.build_request(history[:2] + [UserMsg("user", "x")], tools)[0]
    assert _pairs(protocol, alone)[0] == calls[:1]


def _answers(protocol: str, payload: dict) -> dict[str, str]:
    text = json.dumps(payload)
    out = {}
    for letter in "ABC":
        # the result's id is the nearest id before its output text
        at = text.index(f'"{letter}"')
        head = text[:at]
        key = {
            "anthropic": '"tool_use_id": "',
            "openai-chat": '"tool_call_id": "',
            "openai-responses": '"call_id": "',
            "bedrock-converse": '"toolUseId": "',
        }[protocol]
        start = head.rindex(key) + len(key)
        out[head[start : head.index('"', start)]] = letter
    return out


def _preset(protocol: str) -> str:
    from modelwire.testing.server import first_preset

    return first_preset(protocol)


def test_two_parallel_calls_with_one_id_stay_two_calls_as_the_sdk_reads_them():
    """Chat chunks of two calls ``edit:22`` at indexes 0 and 1 (seen in the wild): two calls,
    each with its own arguments, as the openai SDK's accumulator reads the same bytes."""
    chunks = [
        {"index": 0, "id": "edit:22", "type": "function", "function": {"name": "edit", "arguments": ""}},
        {"index": 0, "function": {"arguments": '{"line": 1}'}},
        {"index": 1, "id": "edit:22", "type": "function", "function": {"name": "edit", "arguments": ""}},
        {"index": 1, "function": {"arguments": '{"line": 2}'}},
    ]
    frames = [
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "delta": {"tool_calls": [tc]}, "finish_reason": None}],
        }
        for tc in chunks
    ]
    frames.append(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
        }
    )
    raw = b"".join(b"data: " + json.dumps(f).encode() + b"\n\n" for f in frames) + b"data: [DONE]\n\n"
    final = sdk_oracle.chat_final(raw)
    oracle = [json.loads(c.function.arguments) for c in final.choices[0].message.tool_calls]
    assert oracle == [{"line": 1}, {"line": 2}]

    with ProviderServer() as server:
        server.script(stream_reply("openai-chat", raw))
        msg = asyncio.run(server.model("openai-chat").complete([UserMsg("user", "edit")]))
    calls = msg.get_content_blocks("tool_call")
    assert [json.loads(c.input) for c in calls] == oracle
    assert len({c.id for c in calls}) == 2 and calls[0].id == "edit:22"


def test_a_provider_tool_result_for_a_call_twice_or_for_no_call_is_a_stream_protocol_error():
    """A server tool's result must follow its call's end, once (the grammar): a repeated
    result block, or one naming a text block, is a typed error with what came before kept."""
    from modelwire.errors import StreamProtocolError

    wire = get_protocol("anthropic")
    start = {
        "type": "message_start",
        "message": {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "c",
            "content": [],
            "usage": {"input_tokens": 1, "output_tokens": 0},
        },
    }
    use = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
    }
    result = {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
    }
    again = {
        "type": "content_block_start",
        "index": 2,
        "content_block": {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
    }
    adapter = wire.adapter_class()("r")
    events = adapter.feed(start) + adapter.feed(use) + adapter.feed({"type": "content_block_stop", "index": 0})
    events += adapter.feed(result) + adapter.feed({"type": "content_block_stop", "index": 1})
    with pytest.raises(StreamProtocolError, match="second result") as raised:
        adapter.feed(again)
    events += raised.value.events
    E.check_stream(
        [
            E.ReplyStartEvent(session_id="s", reply_id="r", name="a"),
            *events,
            E.ReplyEndEvent(session_id="s", reply_id="r"),
        ]
    )
    assert [e.type for e in events].count("TOOL_RESULT_START") == 1


def test_an_id_the_agent_made_for_a_repeat_is_not_given_twice():
    """The reply's first call is ``c``; the next model call has ``c`` twice (the adapter
    streams the second as ``c_2``) and the agent renames the first of those to ``c_2`` too:
    the three calls keep three ids, each with its own arguments."""
    from modelwire.agent._agent import _CallIds

    reply = AssistantMsg("a", [ToolCallBlock(id="c", name="f", input="{}")], id="r")
    ids = _CallIds(reply)
    events = [
        E.ToolCallStartEvent(reply_id="r", tool_call_id="c", tool_call_name="f"),
        E.ToolCallDeltaEvent(reply_id="r", tool_call_id="c", delta='{"n": 2}'),
        E.ToolCallEndEvent(reply_id="r", tool_call_id="c"),
        E.ToolCallStartEvent(reply_id="r", tool_call_id="c_2", tool_call_name="f"),  # the adapter's own rename
        E.ToolCallDeltaEvent(reply_id="r", tool_call_id="c_2", delta='{"n": 3}'),
        E.ToolCallEndEvent(reply_id="r", tool_call_id="c_2"),
    ]
    seen = [ids.see(e) for e in events]
    starts = [e.tool_call_id for e in seen if e.type == "TOOL_CALL_START"]
    assert len(set(starts + ["c"])) == 3
    args = {e.tool_call_id: e.delta for e in seen if e.type == "TOOL_CALL_DELTA"}
    assert sorted(args.values()) == ['{"n": 2}', '{"n": 3}'] and len(args) == 2
