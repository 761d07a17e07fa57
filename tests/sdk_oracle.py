"""The official SDKs' stream accumulators, fed bytes offline, as an independent oracle.

Both SDKs run on ``httpx2``; a ``httpx2.MockTransport`` answers their request with the
given SSE body, so nothing leaves the process.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import anthropic
import httpx2
import openai
from pydantic_core import from_json

from modelwire.message import Msg


def _client(cls: type, body: bytes) -> Any:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=body, headers={"content-type": "text/event-stream"})

    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    return cls(api_key="test-key", base_url="http://127.0.0.1:9", http_client=http, max_retries=0)


def anthropic_final(body: bytes, *, beta: bool = False) -> Any:
    """The SDK's final message of a stream (``beta``: its beta twin, which knows the beta
    blocks and usage fields: compaction, ``usage.iterations``)."""
    client = _client(anthropic.Anthropic, body)
    messages = client.beta.messages if beta else client.messages
    with messages.stream(model="m", max_tokens=16, messages=[{"role": "user", "content": "x"}]) as stream:
        return stream.get_final_message()


def chat_final(body: bytes) -> Any:
    client = _client(openai.OpenAI, body)
    with client.chat.completions.stream(model="m", messages=[{"role": "user", "content": "x"}]) as stream:
        try:
            return stream.get_final_completion()
        except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError) as exc:
            # The helper refuses to "parse" a reply cut by max_tokens or the content
            # filter, but hands over what it accumulated.
            return exc.completion


def responses_final(body: bytes) -> Any:
    # The SDK's stream helper only accepts response.completed as the end of a stream
    # (it raises on response.incomplete). Its final object is the terminal event's
    # response either way, so it is fed the same bytes with that one event renamed.
    body = body.replace(b"event: response.incomplete\n", b"event: response.completed\n")
    body = body.replace(b'"type": "response.incomplete"', b'"type": "response.completed"')
    client = _client(openai.OpenAI, body)
    with client.responses.stream(model="m", input="x") as stream:
        return stream.get_final_response()


def dump(obj: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return obj.model_dump(mode="json", exclude_none=True)


def _args(text: str) -> Any:
    return json.loads(text) if text else {}


# -- comparisons: our folded message against the SDK's final object --------------------------


_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def compare_anthropic(msgs: list[Msg] | Msg, finals: list[Any] | Any, end_events: list[Any]) -> list[str]:
    """Field-by-field comparison. Returns notes on what the SDK drops and we keep."""
    notes: list[str] = []
    ours = [b for m in _list(msgs) for b in m.content]
    theirs = [b for f in _list(finals) for b in f.content]
    assert len(ours) == len(theirs), ([b.type for b in ours], [b.type for b in theirs])
    for o, t in zip(ours, theirs):
        if t.type == "text":
            assert o.type == "text" and o.text == t.text
            cites = [dump(c) for c in (t.citations or [])]
            assert [_strip_none(c) for c in (getattr(o, "citations", None) or [])] == cites
        elif t.type == "thinking":
            assert o.type == "thinking" and o.thinking == t.thinking and o.signature == t.signature
            assert o.provider_metadata == {"anthropic": {"protocol": "anthropic"}}
        elif t.type == "redacted_thinking":
            assert o.type == "thinking" and o.thinking == "" and o.redacted_thinking_data == t.data
        elif t.type in ("tool_use", "server_tool_use"):
            assert o.type == "tool_call" and (o.id, o.name) == (t.id, t.name)
            if getattr(o, "truncated", False):
                # Cut off by max_tokens: we keep the raw partial JSON and mark the call
                # truncated; the SDK parses the partial JSON. Same arguments either way.
                notes.append("truncated tool input kept raw")
                assert from_json(o.input, allow_partial=True) == t.input
            else:
                assert _args(o.input) == t.input
            assert bool(getattr(o, "server_side", False)) == (t.type == "server_tool_use")
        elif t.type.endswith("_tool_result"):
            assert o.type == "tool_result" and o.id == t.tool_use_id
            assert _strip_none(o.metadata["provider_block"]) == dump(t)
        else:
            assert o.type == "data"
            raw = json.loads(__import__("base64").b64decode(o.source.data))
            assert raw["type"] == t.type
            sdk = dump(t)
            for key, value in sdk.items():
                assert raw.get(key) == value, key
            lost = {k: v for k, v in raw.items() if v is not None and k not in sdk}
            if lost:
                notes.append(f"SDK drops {sorted(lost)} of a {t.type} block; modelwire keeps them")
    for end, final in zip(end_events, _list(finals), strict=True):
        u = final.usage
        # What compacting cost is left out of the top-level usage ("A `compaction` entry's
        # tokens are not included in the top-level `usage` fields": the SDK's
        # BetaUsage.iterations); modelwire counts it in.
        extra = getattr(u, "iterations", None) or []
        more = {k: sum(getattr(i, k, 0) or 0 for i in extra if i.type == "compaction") for k in _USAGE_KEYS}
        read = (u.cache_read_input_tokens or 0) + more["cache_read_input_tokens"]
        made = (u.cache_creation_input_tokens or 0) + more["cache_creation_input_tokens"]
        # modelwire's input_tokens counts every prompt token; Anthropic's leaves the cache out.
        assert end.input_tokens == u.input_tokens + more["input_tokens"] + read + made
        assert end.output_tokens == u.output_tokens + more["output_tokens"]
        assert end.metadata["usage"]["input_tokens"] == u.input_tokens
        assert end.cache_input_tokens == read
        assert end.cache_creation_input_tokens == made
        assert end.provider_stop_reason == final.stop_reason
        if final.stop_details is not None:
            assert end.metadata["stop_details"] == dump(final.stop_details)
    return notes


def compare_chat(msg: Msg, final: Any, end: Any) -> list[str]:
    notes: list[str] = []
    choice = final.choices[0]
    m = choice.message
    texts = [b for b in msg.content if b.type == "text" and not getattr(b, "refusal", False)]
    refusals = [b for b in msg.content if b.type == "text" and getattr(b, "refusal", False)]
    assert "".join(b.text for b in texts) == (m.content or "")
    assert "".join(b.text for b in refusals) == (m.refusal or "")
    calls = [b for b in msg.content if b.type == "tool_call"]
    sdk_calls = m.tool_calls or []
    assert [(c.id, c.name, c.input) for c in calls] == [
        (t.id, t.function.name, t.function.arguments) for t in sdk_calls
    ]
    thinking = [b for b in msg.content if b.type == "thinking"]
    # Nothing else, and in the order a reply has them: reasoning first, calls last.
    assert len(msg.content) == len(texts) + len(refusals) + len(calls) + len(thinking), [b.type for b in msg.content]
    assert len(thinking) <= 1 and (not thinking or msg.content[0].type == "thinking")
    assert [b.type for b in msg.content[len(msg.content) - len(calls) :]] == ["tool_call"] * len(calls)
    extra = m.model_extra or {}
    for field in ("reasoning_content", "reasoning"):
        if extra.get(field):
            assert len(thinking) == 1 and thinking[0].thinking == extra[field]
            assert thinking[0].reasoning_field == field
    if not any(extra.get(f) for f in ("reasoning_content", "reasoning")):
        assert not thinking or thinking[0].thinking == ""
    assert end.provider_stop_reason == choice.finish_reason
    if final.usage is not None:
        assert (end.input_tokens, end.output_tokens) == (final.usage.prompt_tokens, final.usage.completion_tokens)
        details = final.usage.completion_tokens_details
        assert end.reasoning_tokens == ((details.reasoning_tokens if details else 0) or 0)
    if len(final.choices) > 1:
        notes.append(f"{len(final.choices) - 1} other choices listed in metadata, not decoded")
        assert sorted(end.metadata["ignored_choices"]) == [c.index for c in final.choices[1:]]
    return notes


def compare_responses(msg: Msg, final: Any, end: Any) -> list[str]:
    notes: list[str] = []
    blocks = list(msg.content)
    pos = 0
    for item in final.output:
        if item.type == "message":
            for part in item.content:
                b = blocks[pos]
                pos += 1
                assert b.type == "text" and b.item_id == item.id
                if part.type == "output_text":
                    assert b.text == part.text
                    assert [_strip_none(a) for a in (getattr(b, "annotations", None) or [])] == [
                        dump(a) for a in part.annotations
                    ]
                else:
                    assert b.refusal and b.text == part.refusal
        elif item.type == "reasoning":
            texts = [s.text for s in item.summary] + [c.text for c in (item.content or [])]
            n = max(1, len(texts))
            group = blocks[pos : pos + n]
            pos += n
            assert all(b.type == "thinking" and b.reasoning_item_id == item.id for b in group)
            assert [b.thinking for b in group] == (texts or [""])
            assert group[0].reasoning_item_raw.get("encrypted_content") == item.encrypted_content
            assert all(not hasattr(b, "reasoning_item_raw") for b in group[1:])  # once per item
        elif item.type == "function_call":
            b = blocks[pos]
            pos += 1
            assert b.type == "tool_call" and (b.id, b.name, b.input, b.item_id) == (
                item.call_id,
                item.name,
                item.arguments,
                item.id,
            )
        else:
            call, result = blocks[pos], blocks[pos + 1]
            pos += 2
            assert call.type == "tool_call" and call.server_side and call.id == item.id
            assert result.type == "tool_result" and _strip_none(result.metadata["provider_block"]) == dump(item)
    assert pos == len(blocks)
    u = final.usage
    assert (end.input_tokens, end.output_tokens) == (u.input_tokens, u.output_tokens)
    assert end.cache_input_tokens == (u.input_tokens_details.cached_tokens or 0)
    assert end.reasoning_tokens == (u.output_tokens_details.reasoning_tokens or 0)
    if final.status == "incomplete":
        assert end.provider_stop_reason == final.incomplete_details.reason
        assert end.stop_reason in ("max_tokens", "content_filter")
    else:
        assert end.provider_stop_reason == final.status
        has_calls = any(item.type == "function_call" for item in final.output)
        assert end.stop_reason == ("tool_use" if has_calls else "end_turn")
    return notes


def _list(x: Any) -> list:
    return x if isinstance(x, list) else [x]


def _strip_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_none(v) for v in value]
    return value
