"""One meaning for usage: ``input_tokens`` counts every prompt token on every protocol,
cache reads and writes being parts of it. The same cached call, as each provider reports it
(Anthropic and Bedrock leave the cache out of their input count; OpenAI and Gemini include
it), gives the same counts and the same cost; the provider's own figures stay in
``metadata["usage"]``."""

from __future__ import annotations

import json

import pytest

from decoding import decode
from modelwire import cost
from modelwire.adapters import encode_frame, encode_sse

# One call: 957 prompt tokens, 900 read from the cache, 50 written to it; 3 output tokens.
PROMPT, READ, WRITTEN, OUTPUT = 957, 900, 50, 3


def anthropic() -> bytes:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [],
            "stop_reason": None,
            "usage": {
                "input_tokens": PROMPT - READ - WRITTEN,
                "cache_read_input_tokens": READ,
                "cache_creation_input_tokens": WRITTEN,
                "output_tokens": 1,
            },
        },
    }
    return encode_sse(
        [
            ("message_start", start),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi."}},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": OUTPUT},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


def bedrock() -> bytes:
    def frame(event, payload):
        return encode_frame(
            {":event-type": event, ":content-type": "application/json", ":message-type": "event"},
            json.dumps(payload).encode(),
        )

    return b"".join(
        [
            frame("messageStart", {"role": "assistant"}),
            frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hi."}}),
            frame("contentBlockStop", {"contentBlockIndex": 0}),
            frame("messageStop", {"stopReason": "end_turn"}),
            frame(
                "metadata",
                {
                    "usage": {
                        "inputTokens": PROMPT - READ - WRITTEN,
                        "outputTokens": OUTPUT,
                        "cacheReadInputTokens": READ,
                        "cacheWriteInputTokens": WRITTEN,
                    },
                    "metrics": {"latencyMs": 5},
                },
            ),
        ]
    )


def openai_chat() -> bytes:
    chunk = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4.1",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi."}, "finish_reason": None}],
    }
    last = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4.1",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    }
    usage = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4.1",
        "choices": [],
        "usage": {
            "prompt_tokens": PROMPT,
            "completion_tokens": OUTPUT,
            "total_tokens": PROMPT + OUTPUT,
            "prompt_tokens_details": {"cached_tokens": READ},
        },
    }
    return encode_sse([(None, chunk), (None, last), (None, usage), (None, "[DONE]")])


def gemini() -> bytes:
    chunk = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Hi."}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {
            "promptTokenCount": PROMPT,
            "candidatesTokenCount": OUTPUT,
            "totalTokenCount": PROMPT + OUTPUT,
            "cachedContentTokenCount": READ,
        },
        "modelVersion": "gemini-2.5-flash",
    }
    return encode_sse([(None, chunk)])


@pytest.mark.parametrize("protocol,body", [("anthropic", anthropic), ("bedrock-converse", bedrock)])
def test_a_provider_that_leaves_the_cache_out_gets_it_counted_in(protocol, body):
    msg, events, error = decode(protocol, [body()])
    assert error is None
    (end,) = [e for e in events if e.type == "MODEL_CALL_END"]
    assert (end.input_tokens, end.cache_input_tokens, end.cache_creation_input_tokens, end.output_tokens) == (
        PROMPT,
        READ,
        WRITTEN,
        OUTPUT,
    )
    raw = end.metadata["usage"]
    assert raw.get("input_tokens", raw.get("inputTokens")) == PROMPT - READ - WRITTEN  # the provider's own figure, kept
    assert msg.usage.input_tokens == PROMPT


@pytest.mark.parametrize("protocol,body", [("openai-chat", openai_chat), ("gemini", gemini)])
def test_a_provider_that_counts_the_cache_in_is_unchanged(protocol, body):
    _, events, error = decode(protocol, [body()])
    assert error is None
    (end,) = [e for e in events if e.type == "MODEL_CALL_END"]
    assert (end.input_tokens, end.cache_input_tokens, end.output_tokens) == (PROMPT, READ, OUTPUT)


def test_the_cost_of_a_cached_call_is_what_it_was():
    if not cost.available():
        pytest.skip("needs genai-prices")
    from types import SimpleNamespace

    _, events, _ = decode("anthropic", [anthropic()])
    (end,) = [e for e in events if e.type == "MODEL_CALL_END"]
    now = cost.price(end, provider="anthropic", model="claude-sonnet-4-5")
    # The provider's own figures, priced as before the change (input without the cache).
    raw = SimpleNamespace(
        input_tokens=PROMPT - READ - WRITTEN,
        output_tokens=OUTPUT,
        cache_input_tokens=READ,
        cache_creation_input_tokens=WRITTEN,
    )
    before = cost.price(raw, provider="anthropic", model="claude-sonnet-4-5", input_includes_cache=False)
    assert now["total"] == pytest.approx(before["total"]) and now["total"] > 0
