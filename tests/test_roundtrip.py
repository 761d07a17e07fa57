"""Round trips with real traffic: where ../shared/recorded-streams has a stream followed by
the real next request, decode the stream with the adapters, add the tool results, format,
and compare with the request the real client (pydantic-ai) sent. Fields the caller sets
(model, sampling options, stream flags, tool definitions and choice) are left out."""

from __future__ import annotations

import json

import pytest
import sdk_params
from decoding import decode
from paths import HAVE_SHARED, PA

from modelwire.protocols import get_formatter
from modelwire.message import (
    AssistantMsg,
    Msg,
    SystemMsg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    UserMsg,
)

if not HAVE_SHARED:  # pragma: no cover - the shared folder sits beside the repository
    pytest.skip("../shared/recorded-streams is not present", allow_module_level=True)


def request(name: str, n: int) -> dict:
    return json.loads((PA / f"{name}.{n}.request.json").read_text())


def body(name: str, n: int) -> bytes:
    return (PA / f"{name}.{n}.sse").read_bytes()


def typographic_to_ascii(text: str) -> str:
    """The recorder normalized typographic quotes and dashes in request bodies (see the
    cassettes' INDEX.md); do the same to ours before comparing."""
    return text.translate(
        str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '\\"', "\u201d": '\\"', "\u2013": "-", "\u2014": "-"})
    )


def strip_none(value):
    if isinstance(value, dict):
        return {k: strip_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [strip_none(v) for v in value]
    return value


def chat_prefix(messages: list[dict]) -> list[Msg]:
    """The part of a recorded Chat request that came before the stream we decode, as Msgs."""
    out: list[Msg] = []
    for m in messages:
        if m["role"] == "system":
            out.append(SystemMsg("system", m["content"]))
        elif m["role"] == "user":
            out.append(UserMsg("user", m["content"]))
        elif m["role"] == "assistant":
            blocks = []
            content = m.get("content") or ""
            if content.startswith("<think>\n") and content.endswith("\n</think>"):
                blocks.append(
                    ThinkingBlock(thinking=content[8:-9], provider="openai-chat", reasoning_field="reasoning")
                )
            elif content:
                blocks.append(TextBlock(text=content))
            for tc in m.get("tool_calls") or ():
                blocks.append(
                    ToolCallBlock(id=tc["id"], name=tc["function"]["name"], input=tc["function"]["arguments"])
                )
            out.append(AssistantMsg("assistant", blocks))
        elif m["role"] == "tool":
            out[-1].content.append(_result(out[-1], m["tool_call_id"], m["content"]))
    return out


def _result(reply: Msg, call_id: str, output: str) -> ToolResultBlock:
    name = next(b.name for b in reply.content if b.type == "tool_call" and b.id == call_id)
    return ToolResultBlock(id=call_id, name=name, output=output, state="success")


def add_results(reply: Msg, tool_messages: list[dict]) -> None:
    for m in tool_messages:
        reply.content.append(_result(reply, m["tool_call_id"], m["content"]))


@pytest.mark.parametrize(
    "name,steps",
    [("test_run_stream_sync_streams_real_model", [0]), ("test_complex_agent_run_in_flow", [0, 1])],
)
def test_chat_next_request_is_what_the_client_sent(name, steps):
    first = request(name, 0)
    conversation = chat_prefix(first["messages"])
    for n in steps:
        reply, _, error = decode("openai-chat", [body(name, n)])
        assert error is None
        sent = request(name, n + 1)["messages"]
        # The tool results the client ran, as they appear in its next request.
        add_results(
            reply,
            [
                m
                for m in sent[len(sent) - sum(1 for m in sent if m["role"] == "tool") :]
                if m["role"] == "tool"
                and any(b.id == m["tool_call_id"] for b in reply.content if b.type == "tool_call")
            ],
        )
        conversation.append(reply)
        payload = get_formatter("openai-chat")().format(conversation)
        sdk_params.chat_request(payload)
        assert payload["messages"] == sent


def test_groq_reasoning_rendered_as_text_matches_the_client():
    name = "test_tool_use_failed_error_streaming"
    sent = request(name, 2)["messages"]
    conversation = chat_prefix(sent[:4])  # system, user, the failed first call and its error result
    reply, _, error = decode("openai-chat", [body(name, 1)])
    assert error is None
    add_results(reply, sent[5:])
    conversation.append(reply)
    payload = get_formatter("openai-chat")(thinking_as_text=True).format(conversation)
    assert payload["messages"] == sent


def test_responses_next_request_is_what_the_client_sent():
    name = "test_openai_responses_stream"
    sent = request(name, 1)["input"]
    reply, _, error = decode("openai-responses", [body(name, 0)])
    assert error is None
    (call,) = reply.get_content_blocks("tool_call")
    reply.content.append(ToolResultBlock(id=call.id, name=call.name, output=sent[2]["output"], state="success"))
    payload = get_formatter("openai-responses")(item_ids=False).format([UserMsg("user", sent[0]["content"]), reply])
    sdk_params.responses_request(payload)
    ours = payload["input"]
    # The user message: the client used the short form {"role", "content": str}.
    assert ours[0] == {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": sent[0]["content"]}],
    }
    # The client (this cassette's pydantic-ai version) sent the function call's item id
    # (fc_...) as its call_id; the stream's call_id is call_..., which is what we send,
    # and what the API matches function_call_output against.
    assert call.id.startswith("call_") and sent[1]["call_id"] == call.item_id
    fix = {call.id: sent[1]["call_id"]}
    for item in ours[1:]:
        item["call_id"] = fix[item["call_id"]]
    assert ours[1:] == sent[1:]


def test_anthropic_pause_turn_continuation_is_what_the_client_sent():
    name = "test_pause_turn_web_search_streaming_vcr"
    sent = request(name, 1)["messages"]
    reply, _, error = decode("anthropic", [body(name, 0)])
    assert error is None
    user = UserMsg("user", [TextBlock(text=b["text"]) for b in sent[0]["content"]])
    payload = get_formatter("anthropic")().format([user, reply])
    sdk_params.anthropic_request(payload)
    ours = json.loads(typographic_to_ascii(json.dumps(payload["messages"], ensure_ascii=False)))
    for block in ours[1]["content"]:
        if block["type"] == "web_search_tool_result":
            # We replay the block exactly as the stream gave it, `caller` included (the
            # SDK's request type has the field); this client dropped it.
            assert block.pop("caller") == {"type": "direct"}
    assert strip_none(ours) == strip_none(sent)
    # The paused server tool call is sent without a result: the API runs it on resume.
    assert payload["messages"][1]["content"][-1]["type"] == "server_tool_use"
