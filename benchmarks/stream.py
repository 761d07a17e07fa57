"""Per-chunk cost of a streamed response, like for like.

For each protocol, a 4,000-chunk text stream and a tool-call-heavy stream (4 calls, 4,000
argument fragments; Ollama, which sends calls whole, 4,000 reasoning deltas and the four
calls; Gemini's fragments are Vertex's partialArgs), and for Gemini a stream of 4,000 whole
``functionCall`` parts (the Gemini API sends a call whole), the same pieces for every
contender (one provider event per piece, as a server flushes them), in interleaved rounds,
each run's output checked before its time counts:

1. The real path. modelwire: ``load_model(..., client=AsyncClient(MockTransport))`` and
   ``complete()``: the HTTP body through the async transport, the decoder, the adapter and
   the fold into a ``Msg``. Beside it, the official SDK's async client iterating
   ``stream=True`` over the same pieces through the same kind of transport (it builds typed
   events and folds nothing), and the SDK's accumulating helper where it has one
   (``messages.stream().get_final_message()``, ``chat.completions.stream()``,
   ``responses.stream()``). Gemini: google-genai's ``generate_content_stream`` (on httpx);
   Bedrock: botocore's own event-stream parser (what boto3's ``converse_stream`` iterates);
   Ollama: ollama-python's ``AsyncClient.chat(stream=True)`` (on httpx).
   Target: at most 0.5x the SDK's plain iteration.
2. The sans-I/O adapter (bytes -> events, no transport, no fold) beside a floor that
   splits the body into lines (SSE data lines, NDJSON lines, or AWS frames, CRCs checked) and
   parses each with the fastest JSON parser here (pydantic_core, orjson, msgspec or json,
   measured). Target: at most 2.5x.

    python benchmarks/stream.py [--rounds N] [--check]

``--check`` runs every contender once, checks its output and exits (what CI runs: the
correctness of the benchmark, not its timings).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from typing import Any  # noqa: E402

from modelwire.message import UserMsg  # noqa: E402
from modelwire.models import load_model  # noqa: E402
from modelwire.protocols import get_protocol  # noqa: E402

N = 4000
WORDS = ["The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", "."]


def sse(events: list[tuple[str | None, dict | str]]) -> list[bytes]:
    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        out.append(((f"event: {name}\n" if name else "") + f"data: {payload}\n\n").encode())
    return out


def anthropic_stream(tools: bool) -> list[bytes]:
    ev: list[tuple[str | None, dict | str]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-bench",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
        )
    ]
    if not tools:
        ev.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            )
        )
        ev += [
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": WORDS[i % 10]}},
            )
            for i in range(N)
        ]
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    else:
        # Anthropic streams tool calls one after another (no interleaving).
        for k in range(4):
            ev.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": k,
                        "content_block": {"type": "tool_use", "id": f"toolu_{k}", "name": "write", "input": {}},
                    },
                )
            )
            first = '{"text": "'
            ev += [
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": k,
                        "delta": {"type": "input_json_delta", "partial_json": first if i == 0 else WORDS[i % 10]},
                    },
                )
                for i in range(N // 4)
            ]
            ev.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": k,
                        "delta": {"type": "input_json_delta", "partial_json": '"}'},
                    },
                )
            )
            ev.append(("content_block_stop", {"type": "content_block_stop", "index": k}))
    ev.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use" if tools else "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": N},
            },
        )
    )
    ev.append(("message_stop", {"type": "message_stop"}))
    return sse(ev)


def chat_stream(tools: bool) -> list[bytes]:
    def chunk(delta: dict | None, finish: str | None = None, **extra) -> tuple[None, dict]:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        return (
            None,
            {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 1727346142,
                "model": "gpt-bench",
                "system_fingerprint": "fp_1",
                "choices": choices,
                **extra,
            },
        )

    ev: list[tuple[None, dict | str]] = [chunk({"role": "assistant", "content": ""})]
    if not tools:
        ev += [chunk({"content": WORDS[i % 10]}) for i in range(N)]
        finish = "stop"
    else:
        for k in range(4):
            ev.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": k,
                                "id": f"call_{k}",
                                "type": "function",
                                "function": {"name": "write", "arguments": ""},
                            }
                        ]
                    }
                )
            )
        # Parallel calls: the fragments of the four calls interleave.
        ev += [chunk({"tool_calls": [{"index": i % 4, "function": {"arguments": WORDS[i % 10]}}]}) for i in range(N)]
        finish = "tool_calls"
    ev.append(chunk({}, finish))
    ev.append(chunk(None, usage={"prompt_tokens": 10, "completion_tokens": N, "total_tokens": N + 10}))
    ev.append((None, "[DONE]"))
    return sse(ev)


def responses_stream(tools: bool) -> list[bytes]:
    seq = iter(range(10**6))
    ev: list[tuple[str | None, dict | str]] = []

    def add(data: dict) -> None:
        data["sequence_number"] = next(seq)
        ev.append((data["type"], data))

    base = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "gpt-bench",
        "output": [],
        "status": "in_progress",
    }
    add({"type": "response.created", "response": dict(base)})
    output = []
    if not tools:
        add(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []},
            }
        )
        add(
            {
                "type": "response.content_part.added",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []},
            }
        )
        for i in range(N):
            add(
                {
                    "type": "response.output_text.delta",
                    "item_id": "msg_1",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": WORDS[i % 10],
                    "logprobs": [],
                }
            )
        full = "".join(WORDS[i % 10] for i in range(N))
        add(
            {
                "type": "response.output_text.done",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "text": full,
                "logprobs": [],
            }
        )
        item = {
            "id": "msg_1",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": full, "annotations": []}],
        }
        add({"type": "response.output_item.done", "output_index": 0, "item": item})
        output.append(item)
    else:
        for k in range(4):
            fid = f"fc_{k}"
            add(
                {
                    "type": "response.output_item.added",
                    "output_index": k,
                    "item": {
                        "id": fid,
                        "type": "function_call",
                        "status": "in_progress",
                        "call_id": f"call_{k}",
                        "name": "write",
                        "arguments": "",
                    },
                }
            )
            args = "".join(WORDS[i % 10] for i in range(N // 4))
            for i in range(N // 4):
                add(
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": fid,
                        "output_index": k,
                        "delta": WORDS[i % 10],
                    }
                )
            add({"type": "response.function_call_arguments.done", "item_id": fid, "output_index": k, "arguments": args})
            item = {
                "id": fid,
                "type": "function_call",
                "status": "completed",
                "call_id": f"call_{k}",
                "name": "write",
                "arguments": args,
            }
            add({"type": "response.output_item.done", "output_index": k, "item": item})
            output.append(item)
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": N,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": N + 10,
    }
    add({"type": "response.completed", "response": dict(base, status="completed", output=output, usage=usage)})
    return sse(ev)


def gemini_stream(tools: bool) -> list[bytes]:
    """Every chunk a whole GenerateContentResponse; tool calls streamed as partialArgs
    (Vertex's streamFunctionCallArguments), one call after another."""

    def chunk(parts: list[dict], finish: str | None = None) -> tuple[None, dict]:
        candidate: dict = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return (
            None,
            {
                "candidates": [candidate],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1},
                "modelVersion": "gemini-bench",
                "responseId": "r1",
            },
        )

    ev: list[tuple[None, dict | str]] = []
    if not tools:
        ev += [chunk([{"text": WORDS[i % 10]}]) for i in range(N)]
    else:
        for k in range(4):
            ev.append(chunk([{"functionCall": {"name": "write", "willContinue": True}}]))
            ev += [
                chunk(
                    [
                        {
                            "functionCall": {
                                "partialArgs": [
                                    {"jsonPath": "$.text", "stringValue": WORDS[i % 10], "willContinue": True}
                                ],
                                "willContinue": True,
                            }
                        }
                    ]
                )
                for i in range(N // 4)
            ]
            ev.append(chunk([{"functionCall": {}}]))
    ev.append(chunk([{"text": ""}], "STOP"))
    return sse(ev)


def gemini_whole_calls() -> list[bytes]:
    """The Gemini API's own way with calls: each chunk one whole ``functionCall`` part (name
    and arguments together), many calls one after another, as parallel calls arrive."""
    ev: list[tuple[None, dict | str]] = [
        (
            None,
            {
                "candidates": [
                    {
                        "content": {
                            "role": "model",
                            "parts": [{"functionCall": {"name": "write", "args": {"text": WORDS[i % 10]}}}],
                        },
                        "index": 0,
                    }
                ],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1},
                "modelVersion": "gemini-bench",
                "responseId": "r1",
            },
        )
        for i in range(N)
    ]
    ev.append((None, {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}]}))
    return sse(ev)


def bedrock_stream(tools: bool) -> list[bytes]:
    """AWS event-stream frames (binary), one frame per piece."""
    from modelwire.adapters import encode_frame

    def frame(event: str, payload: dict) -> bytes:
        payload = {**payload, "p": "abcdef"}
        return encode_frame(
            {":event-type": event, ":content-type": "application/json", ":message-type": "event"},
            json.dumps(payload, separators=(",", ":")).encode(),
        )

    out = [frame("messageStart", {"role": "assistant"})]
    if not tools:
        out += [
            frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": WORDS[i % 10]}}) for i in range(N)
        ]
        out.append(frame("contentBlockStop", {"contentBlockIndex": 0}))
    else:
        for k in range(4):
            out.append(
                frame(
                    "contentBlockStart",
                    {"contentBlockIndex": k, "start": {"toolUse": {"toolUseId": f"tooluse_{k}", "name": "write"}}},
                )
            )
            first = '{"text": "'
            out += [
                frame(
                    "contentBlockDelta",
                    {"contentBlockIndex": k, "delta": {"toolUse": {"input": first if i == 0 else WORDS[i % 10]}}},
                )
                for i in range(N // 4)
            ]
            out.append(frame("contentBlockDelta", {"contentBlockIndex": k, "delta": {"toolUse": {"input": '"}'}}}))
            out.append(frame("contentBlockStop", {"contentBlockIndex": k}))
    out.append(frame("messageStop", {"stopReason": "tool_use" if tools else "end_turn"}))
    out.append(
        frame(
            "metadata",
            {"usage": {"inputTokens": 10, "outputTokens": N, "totalTokens": N + 10}, "metrics": {"latencyMs": 1}},
        )
    )
    return out


def ollama_stream(tools: bool) -> list[bytes]:
    """Ollama's native NDJSON, one line per piece. Ollama sends a tool call whole, never its
    arguments in pieces: its tool stream is the reasoning before the calls (``thinking``
    deltas) and then the four calls in one line."""

    def line(message: dict, **extra: Any) -> bytes:
        item = {
            "model": "llama-bench",
            "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": "", **message},
            "done": False,
            **extra,
        }
        return json.dumps(item, separators=(",", ":")).encode() + b"\n"

    field = "thinking" if tools else "content"
    out = [line({field: WORDS[i % 10]}) for i in range(N)]
    if tools:
        quarter = "".join(WORDS[i % 10] for i in range(N // 4))
        out.append(
            line({"tool_calls": [{"function": {"name": "write", "arguments": {"text": quarter}}} for _ in range(4)]})
        )
    out.append(line({}, done=True, done_reason="stop", total_duration=1000, prompt_eval_count=10, eval_count=N))
    return out


# -- contenders --------------------------------------------------------------------------------

EXPECTED_TEXT = "".join(WORDS[i % 10] for i in range(N))
EXPECTED_ARGS = {"text": "".join(WORDS[i % 10] for i in range(1, N // 4))}


def use_events(n: int) -> None:
    """The streams made from now on, and their checks, of ``n`` events (``N`` by default)."""
    global N, EXPECTED_TEXT, EXPECTED_ARGS
    N = n
    EXPECTED_TEXT = "".join(WORDS[i % 10] for i in range(N))
    EXPECTED_ARGS = {"text": "".join(WORDS[i % 10] for i in range(1, N // 4))}


SPECS = {
    "anthropic": "anthropic:claude-bench",
    "openai-chat": "openai:gpt-bench",
    "openai-responses": "openai-responses:gpt-bench",
    "gemini": "google:gemini-bench",
    "bedrock-converse": "bedrock:nova-bench",
    "ollama": "ollama:llama-bench",
}
MAKERS = {
    "anthropic": anthropic_stream,
    "openai-chat": chat_stream,
    "openai-responses": responses_stream,
    "gemini": gemini_stream,
    "bedrock-converse": bedrock_stream,
    "ollama": ollama_stream,
}


# Every stream measured: (protocol, its label, its pieces' maker, whether it carries calls).
STREAMS: list[tuple[str, str, Any, Any]] = [
    *((p, "text", lambda make=make: make(False), False) for p, make in MAKERS.items()),
    *((p, "tool calls", lambda make=make: make(True), True) for p, make in MAKERS.items()),
    ("gemini", "whole calls", gemini_whole_calls, "whole"),
]
STREAMS.sort(key=lambda s: list(MAKERS).index(s[0]))


def check_message(protocol: str, tools: Any, msg: Any) -> None:
    """The folded message is exactly what the stream carried."""
    if tools == "whole":
        calls = [json.loads(c.input) for c in msg.get_content_blocks("tool_call")]
        assert calls == [{"text": WORDS[i % 10]} for i in range(N)], f"{protocol}: whole calls differ"
        return
    if not tools:
        assert msg.get_text_content() == EXPECTED_TEXT, f"{protocol}: text differs"
        return
    calls = [c.input for c in msg.get_content_blocks("tool_call")]
    quarter = "".join(WORDS[i % 10] for i in range(N // 4))
    expected = {
        "anthropic": ['{"text": "' + quarter[len(WORDS[0]) :] + '"}'] * 4,
        "bedrock-converse": ['{"text": "' + quarter[len(WORDS[0]) :] + '"}'] * 4,
        "openai-responses": [quarter] * 4,
        "openai-chat": ["".join(WORDS[i % 10] for i in range(k, N, 4)) for k in range(4)],
        "gemini": [json.dumps({"text": quarter})] * 4,
    }.get(protocol)
    if protocol == "ollama":  # whole calls after the reasoning: their arguments as JSON
        assert [json.loads(c) for c in calls] == [{"text": quarter}] * 4, "ollama: tool-call arguments differ"
        assert "".join(b.thinking for b in msg.get_content_blocks("thinking")) == EXPECTED_TEXT, (
            "ollama: thinking differs"
        )
        return
    assert calls == expected, f"{protocol}: tool-call arguments differ"


def _handler(pieces: list[bytes], kind: str) -> Any:
    import httpx2

    async def body():
        for piece in pieces:
            yield piece

    return lambda request: httpx2.Response(200, content=body(), headers={"content-type": kind})


def ours(protocol: str, pieces: list[bytes]) -> Any:
    import httpx2

    client = httpx2.AsyncClient(transport=httpx2.MockTransport(_handler(pieces, get_protocol(protocol).content_type)))
    base = "http://bench/v1" if protocol in ("openai-chat", "openai-responses") else "http://bench"
    known = {"capabilities": {"context_window": 8192}} if protocol == "ollama" else {}  # a local server says no limits
    model = load_model(SPECS[protocol], api_key="k", base_url=base, client=client, **known)

    async def run() -> Any:
        return await model.complete([UserMsg("u", "x")])

    return run


def sdk_iteration(protocol: str, pieces: list[bytes]) -> Any:
    """The SDK's plain iteration over the same pieces; returns the number of events."""
    import httpx2

    if protocol == "bedrock-converse":
        import botocore.session
        from botocore.eventstream import EventStream
        from botocore.parsers import EventStreamJSONParser

        shape = (
            botocore.session.Session()
            .get_service_model("bedrock-runtime")
            .operation_model("ConverseStream")
            .output_shape.members["stream"]
        )

        class Body:
            def stream(self):
                yield from pieces

        async def run() -> int:
            return sum(1 for _ in EventStream(Body(), shape, EventStreamJSONParser(), "ConverseStream"))

        return run
    if protocol == "ollama":
        import httpx
        import ollama

        async def lines():
            for piece in pieces:
                yield piece

        client = ollama.AsyncClient(
            host="http://bench",
            transport=httpx.MockTransport(
                lambda r: httpx.Response(200, content=lines(), headers={"content-type": "application/x-ndjson"})
            ),
        )
        return sdk_iterate(protocol, client)
    if protocol == "gemini":
        import httpx
        from google import genai
        from google.genai import types

        async def body():
            for piece in pieces:
                yield piece

        client = genai.Client(
            api_key="k",
            http_options=types.HttpOptions(
                base_url="http://bench",
                async_client_args={
                    "transport": httpx.MockTransport(
                        lambda r: httpx.Response(200, content=body(), headers={"content-type": "text/event-stream"})
                    )
                },
            ),
        )
        return sdk_iterate(protocol, client)
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(_handler(pieces, "text/event-stream")))
    if protocol == "anthropic":
        import anthropic

        client = anthropic.AsyncAnthropic(api_key="k", base_url="http://bench", http_client=http, max_retries=0)
    else:
        import openai

        client = openai.AsyncOpenAI(api_key="k", base_url="http://bench/v1", http_client=http, max_retries=0)
    return sdk_iterate(protocol, client)


def sdk_iterate(protocol: str, client: Any) -> Any:
    """The SDK's plain iteration of one streamed call on ``client`` (anthropic, openai or
    google-genai, however it reaches the bytes); returns the number of events."""

    async def run() -> int:
        if protocol == "gemini":
            stream = await client.aio.models.generate_content_stream(model="m", contents="x")
        elif protocol == "ollama":
            stream = await client.chat(model="m", messages=[{"role": "user", "content": "x"}], stream=True)
        elif protocol == "anthropic":
            stream = await client.messages.create(
                model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}], stream=True
            )
        elif protocol == "openai-chat":
            stream = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}], stream=True
            )
        else:
            stream = await client.responses.create(model="m", input="x", stream=True)
        n = 0
        async for _ in stream:
            n += 1
        return n

    return run


def sdk_accumulator(protocol: str, pieces: list[bytes]) -> Any:
    """The SDK's own helper that folds the stream into its final object (where it has one)."""
    import httpx2

    if protocol not in ("anthropic", "openai-chat", "openai-responses"):
        return None
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(_handler(pieces, "text/event-stream")))
    if protocol == "anthropic":
        import anthropic

        client = anthropic.AsyncAnthropic(api_key="k", base_url="http://bench", http_client=http, max_retries=0)

        async def run() -> Any:
            async with client.messages.stream(
                model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}]
            ) as stream:
                return await stream.get_final_message()

        return run
    import openai

    client = openai.AsyncOpenAI(api_key="k", base_url="http://bench/v1", http_client=http, max_retries=0)
    if protocol == "openai-chat":

        async def run() -> Any:
            async with client.chat.completions.stream(model="m", messages=[{"role": "user", "content": "x"}]) as stream:
                return await stream.get_final_completion()

        return run

    async def run() -> Any:
        async with client.responses.stream(model="m", input="x") as stream:
            return await stream.get_final_response()

    return run


def fastest_parser() -> tuple[str, Any]:
    """The fastest JSON parser installed, measured on a typical event."""
    sample = b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" quick"}}'
    candidates = [("json", json.loads)]
    from pydantic_core import from_json

    candidates.append(("pydantic_core", from_json))
    for name in ("orjson", "msgspec"):
        try:
            module = __import__(name)
            candidates.append((name, module.loads if name == "orjson" else module.json.decode))
        except ImportError:
            pass
    best = []
    for name, parse in candidates:
        t0 = time.perf_counter()
        for _ in range(20000):
            parse(sample)
        best.append((time.perf_counter() - t0, name, parse))
    _, name, parse = min(best)
    return name, parse


def floor(protocol: str, pieces: list[bytes], parse: Any) -> int:
    n = 0
    if protocol == "bedrock-converse":
        import zlib

        for piece in pieces:
            assert zlib.crc32(piece[:8]) == int.from_bytes(piece[8:12], "big")
            assert zlib.crc32(piece[:-4]) == int.from_bytes(piece[-4:], "big")
            headers_length = int.from_bytes(piece[4:8], "big")
            parse(piece[12 + headers_length : -4])
            n += 1
        return n
    if protocol == "ollama":  # NDJSON: every line one JSON object
        for piece in pieces:
            for line in piece.split(b"\n"):
                if line:
                    parse(line)
                    n += 1
        return n
    for piece in pieces:
        for line in piece.split(b"\n"):
            if line.startswith(b"data: ") and line != b"data: [DONE]":
                parse(line[6:])
                n += 1
    return n


def floor_carried(protocol: str, pieces: list[bytes], parse: Any) -> int:
    """The floor for pieces that cut events anywhere (``--piece-size``): the same split and
    parse, with what a piece leaves unfinished carried into the next (AWS frames by their
    length prefix, CRCs checked)."""
    n = 0
    if protocol == "bedrock-converse":
        import zlib

        buffer = bytearray()
        for piece in pieces:
            buffer += piece
            while len(buffer) >= 12 and len(buffer) >= int.from_bytes(buffer[:4], "big"):
                total = int.from_bytes(buffer[:4], "big")
                frame = bytes(buffer[:total])
                del buffer[:total]
                assert zlib.crc32(frame[:8]) == int.from_bytes(frame[8:12], "big")
                assert zlib.crc32(frame[:-4]) == int.from_bytes(frame[-4:], "big")
                parse(frame[12 + int.from_bytes(frame[4:8], "big") : -4])
                n += 1
        return n
    carry = b""
    for piece in pieces:
        lines = (carry + piece).split(b"\n")
        carry = lines.pop()
        for line in lines:
            if protocol == "ollama":
                if line:
                    parse(line)
                    n += 1
            elif line.startswith(b"data: ") and line != b"data: [DONE]":
                parse(line[6:])
                n += 1
    return n


def repieced(pieces: list[bytes], size: int) -> list[bytes]:
    """The same bytes in pieces of ``size`` (the last shorter), cut wherever they fall."""
    body = b"".join(pieces)
    return [body[k : k + size] for k in range(0, len(body), size)]


def _event_makers() -> tuple[Any, Any, Any, Any]:
    """The cheapest way the record kit makes the events a delta and a whole call are: a
    positional constructor each, the id left to its first read, the stamp and the ids
    stored as given, the delta checked (what the adapters use)."""
    from modelwire._record import maker
    from modelwire.event import TextBlockDeltaEvent, ToolCallDeltaEvent, ToolCallEndEvent, ToolCallStartEvent

    own = ("id", "created_at", "reply_id")
    return (
        maker(TextBlockDeltaEvent, *own, "block_id", "delta", trusted=(*own, "block_id")),
        maker(
            ToolCallStartEvent, *own, "tool_call_id", "tool_call_name", trusted=(*own, "tool_call_id", "tool_call_name")
        ),
        maker(ToolCallDeltaEvent, *own, "tool_call_id", "delta", trusted=(*own, "tool_call_id")),
        maker(ToolCallEndEvent, *own, "tool_call_id", "extras", trusted=(*own, "tool_call_id", "extras")),
    )


def event_floor(protocol: str, pieces: list[bytes], parse: Any, whole: bool = False, carried: bool = False) -> int:
    """The floor plus the least the event contract asks of any adapter: for each parsed
    provider event, one validated event (a record) stamped with the time, or, where each
    provider event is a whole tool call (``whole``), the three a call is in the contract (its
    start with its name, its arguments as JSON text, its end, under an id made for it: the
    Gemini API sends the arguments as an object and the call without an id), made as cheaply
    as the record kit makes them (:func:`_event_makers`). What an adapter spends beyond this is its own. The loop is
    the floor's, written out again so no extra call is timed (the events are made in it, not
    in a helper); like the adapter's, each event is dropped after its piece, and the count
    and the last event are checked. With ``carried`` (pieces cut anywhere), the lines and frames
    are found as :func:`floor_carried` finds them."""
    from msgspec.json import encode as to_json

    from modelwire._ids import coarse_now_iso, new_id
    from modelwire._record import MISSING

    text, start, arguments, end = _event_makers()
    n, event = 0, None
    if protocol == "bedrock-converse":  # (its streams have no whole calls)
        import zlib

        if carried:  # the frames found as floor_carried finds them
            buffer = bytearray()
            frames = []
            for piece in pieces:
                buffer += piece
                while len(buffer) >= 12 and len(buffer) >= int.from_bytes(buffer[:4], "big"):
                    total = int.from_bytes(buffer[:4], "big")
                    frames.append(bytes(buffer[:total]))
                    del buffer[:total]
                for frame in frames:
                    assert zlib.crc32(frame[:8]) == int.from_bytes(frame[8:12], "big")
                    assert zlib.crc32(frame[:-4]) == int.from_bytes(frame[-4:], "big")
                    parse(frame[12 + int.from_bytes(frame[4:8], "big") : -4])
                    event = text(MISSING, coarse_now_iso(), "r", "b", "x")
                    n += 1
                frames.clear()
            assert event is not None and event.delta == "x"
            return n
        for piece in pieces:
            assert zlib.crc32(piece[:8]) == int.from_bytes(piece[8:12], "big")
            assert zlib.crc32(piece[:-4]) == int.from_bytes(piece[-4:], "big")
            headers_length = int.from_bytes(piece[4:8], "big")
            parse(piece[12 + headers_length : -4])
            event = text(MISSING, coarse_now_iso(), "r", "b", "x")
            n += 1
        assert event is not None and event.delta == "x"
        return n
    ndjson = protocol == "ollama"
    carry = b""
    for piece in pieces:
        if carried:
            lines = (carry + piece).split(b"\n")
            carry = lines.pop()
        else:
            lines = piece.split(b"\n")
        for line in lines:
            if line if ndjson else line.startswith(b"data: ") and line != b"data: [DONE]":
                obj = parse(line if ndjson else line[6:])
                if whole:  # (Gemini's: the arguments an object, the call without an id)
                    call = obj["candidates"][0]["content"]["parts"][0].get("functionCall")
                    if call is not None:
                        now, call_id = coarse_now_iso(), new_id()
                        start(MISSING, now, "r", call_id, call["name"])
                        arguments(MISSING, now, "r", call_id, to_json(call["args"]).decode())
                        event = end(MISSING, now, "r", call_id, None)
                else:
                    event = text(MISSING, coarse_now_iso(), "r", "b", "x")
                n += 1
    assert event is not None and event.type == ("TOOL_CALL_END" if whole else "TEXT_BLOCK_DELTA")
    return n


def adapter_only(protocol: str, pieces: list[bytes]) -> int:
    wire = get_protocol(protocol)
    decoder = wire.decoder(wire.adapter_class()("r"))
    n = 0
    for piece in pieces:
        n += len(decoder.feed(piece))
    return n + len(decoder.close())


def timed(fn: Any) -> float:
    """CPU time of one run (this process's: every contender runs in it, with no thread
    of its own), so the time another guest of the machine takes is not counted."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.process_time()
        fn()
        return time.process_time() - t0
    finally:
        gc.enable()


def paired(times: dict[str, list[float]], a: str, b: str) -> float:
    """The median of a's time over b's in the same round: the two ran one after the
    other, so a slow stretch of the machine weighs on both."""
    return statistics.median(x / y for x, y in zip(times[a], times[b]))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--check", action="store_true", help="run each contender once, check outputs, no timings")
    parser.add_argument(
        "--piece-size",
        type=int,
        default=0,
        help="read every stream in pieces of this many bytes, cut anywhere (16384: a socket read's), "
        "not one event a piece",
    )
    args = parser.parse_args()
    os.environ.setdefault("MODELWIRE_TRACING", "0")
    from modelwire import telemetry

    telemetry._api = False
    parser_name, parse = fastest_parser()
    loop = asyncio.new_event_loop()
    rows, ok = [], True
    for protocol, label, make, tools in STREAMS:
        pieces = make()
        n = len(pieces)  # the stream's events: every time is per event, however the bytes come
        if args.piece_size:
            pieces = repieced(pieces, args.piece_size)
        ours_run, sdk_run, acc_run = (
            ours(protocol, pieces),
            sdk_iteration(protocol, pieces),
            sdk_accumulator(protocol, pieces),
        )
        expected_events = adapter_only(protocol, pieces)

        def run_ours() -> None:
            check_message(protocol, tools, loop.run_until_complete(ours_run()))

        def run_sdk() -> None:
            assert loop.run_until_complete(sdk_run()) >= n - 2

        def run_acc() -> None:
            assert loop.run_until_complete(acc_run()) is not None

        def run_adapter() -> None:
            assert adapter_only(protocol, pieces) == expected_events

        def run_floor() -> None:
            assert (floor_carried if args.piece_size else floor)(protocol, pieces, parse) >= n - 2

        def run_event_floor() -> None:
            assert event_floor(protocol, pieces, parse, whole=tools == "whole", carried=bool(args.piece_size)) >= n - 2

        contenders = {
            "ours": run_ours,
            "sdk": run_sdk,
            "adapter": run_adapter,
            "floor": run_floor,
        }
        contenders["event_floor"] = run_event_floor
        if acc_run is not None:
            contenders["acc"] = run_acc
        for fn in contenders.values():
            fn()  # warm up, and every output checked once
        if args.check:
            continue
        times: dict[str, list[float]] = {k: [] for k in contenders}
        for _ in range(args.rounds):  # interleaved: every contender once per round
            for name, fn in contenders.items():
                times[name].append(timed(fn) / n * 1e6)
        med = {k: statistics.median(v) for k, v in times.items()}
        low = {k: min(v) for k, v in times.items()}
        real, sans = paired(times, "ours", "sdk"), paired(times, "adapter", "floor")
        med["contract"] = paired(times, "event_floor", "floor") if "event_floor" in times else float("nan")
        ok &= real <= 0.5 and sans <= 2.5
        rows.append((f"{protocol} {label}", n, med, low, real, sans))
    loop.close()
    if args.check:
        print(f"checked: every contender on {len(STREAMS)} streams gave the expected output")
        return 0
    pieces_said = f"the bytes in {args.piece_size}-byte pieces" if args.piece_size else "one event a piece"
    print(
        f"CPU us per event ({pieces_said}), median of {args.rounds} interleaved rounds (min in brackets); "
        f"floor parser: {parser_name}"
    )
    print("ratios: the median over the rounds of each round's own ratio (the two ran one after the other)")
    print(
        "event floor: the floor plus one validated event (stamped; its id made when read) per provider event "
        "(three per whole tool call: its start, arguments and end), the least the event contract asks"
    )
    print(
        f"{'stream':<30}{'chunks':>7}{'real path':>16}{'SDK iter':>16}{'SDK fold':>16}{'vs SDK':>8}"
        f"{'adapter':>15}{'floor':>14}{'vs floor':>9}{'event floor':>15}{'vs floor':>9}"
    )
    for label, n, med, low, real, sans in rows:
        acc = f"{med['acc']:6.2f} ({low['acc']:5.2f})" if "acc" in med else "-"
        contract = med["contract"]
        events = f"{med['event_floor']:>7.2f} ({low['event_floor']:4.2f})" if "event_floor" in med else f"{'-':>14}"
        print(
            f"{label:<30}{n:>7}{med['ours']:>7.2f} ({low['ours']:5.2f}){med['sdk']:>8.2f} "
            f"({low['sdk']:5.2f}){acc:>16}{real:>7.2f}x"
            f"{med['adapter']:>7.2f} ({low['adapter']:4.2f}){med['floor']:>6.2f} ({low['floor']:4.2f}){sans:>8.2f}x"
            f"{events}{contract:>8.2f}x"
        )
    misses = [(label, real, sans, med) for label, _, med, _, real, sans in rows if real > 0.5 or sans > 2.5]
    for label, real, sans, med in misses:
        if real > 0.5:
            print(
                f"MISSED: {label}: real path {real:.2f}x the SDK's iteration (target 0.50x, over by {real - 0.5:.2f})"
            )
        if sans > 2.5:
            contract = med["contract"]
            print(
                f"MISSED: {label}: adapter {sans:.2f}x the floor (target 2.50x, over by {sans - 2.5:.2f})"
                + (
                    f"; the event floor alone is {contract:.2f}x, leaving {max(0.0, 2.5 - contract):.2f}x for "
                    "decoding SSE, state and checks"
                    if contract == contract  # (nan: not measured)
                    else ""
                )
            )
    print(f"targets (real path <= 0.5x the SDK's iteration, adapter <= 2.5x the floor) met: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
