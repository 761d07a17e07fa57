"""Per-chunk cost of a streamed response, end to end.

For each protocol, a 4,000-chunk text stream and a tool-call-heavy stream (4 parallel
calls, 4,000 argument fragments) are run through:

- modelwire: bytes -> SSE decoder -> adapter -> events -> ``Msg.append_event``;
- the official SDK iterating its own typed events over the same bytes (``stream=True``,
  through an in-process ``httpx2.MockTransport``; nothing is accumulated);
- a floor: split the bytes into lines and ``json.loads`` each data line.

All in one process, one run; the bytes arrive in the same pieces (one SSE event per
piece, as a server flushes them). Prints microseconds per chunk and the ratios.
Targets: modelwire at most 1.0x the SDK's own iteration and at most 2x the floor.

    python benchmarks/stream.py [--repeat N]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from modelwire.protocols import get_protocol  # noqa: E402
from modelwire.message import AssistantMsg  # noqa: E402

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
        ("message_start", {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-bench", "content": [], "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}})
    ]
    if not tools:
        ev.append(("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
        ev += [("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": WORDS[i % 10]}}) for i in range(N)]
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    else:
        # Anthropic streams tool calls one after another (no interleaving).
        for k in range(4):
            ev.append(("content_block_start", {"type": "content_block_start", "index": k, "content_block": {"type": "tool_use", "id": f"toolu_{k}", "name": "write", "input": {}}}))
            first = '{"text": "'
            ev += [("content_block_delta", {"type": "content_block_delta", "index": k, "delta": {"type": "input_json_delta", "partial_json": first if i == 0 else WORDS[i % 10]}}) for i in range(N // 4)]
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": k, "delta": {"type": "input_json_delta", "partial_json": '"}'}}))
            ev.append(("content_block_stop", {"type": "content_block_stop", "index": k}))
    ev.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use" if tools else "end_turn", "stop_sequence": None}, "usage": {"output_tokens": N}}))
    ev.append(("message_stop", {"type": "message_stop"}))
    return sse(ev)


def chat_stream(tools: bool) -> list[bytes]:
    def chunk(delta: dict | None, finish: str | None = None, **extra) -> tuple[None, dict]:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        return (None, {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1727346142, "model": "gpt-bench", "system_fingerprint": "fp_1", "choices": choices, **extra})

    ev: list[tuple[None, dict | str]] = [chunk({"role": "assistant", "content": ""})]
    if not tools:
        ev += [chunk({"content": WORDS[i % 10]}) for i in range(N)]
        finish = "stop"
    else:
        for k in range(4):
            ev.append(chunk({"tool_calls": [{"index": k, "id": f"call_{k}", "type": "function", "function": {"name": "write", "arguments": ""}}]}))
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

    base = {"id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-bench", "output": [], "status": "in_progress"}
    add({"type": "response.created", "response": dict(base)})
    output = []
    if not tools:
        add({"type": "response.output_item.added", "output_index": 0, "item": {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}})
        add({"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})
        for i in range(N):
            add({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": WORDS[i % 10], "logprobs": []})
        full = "".join(WORDS[i % 10] for i in range(N))
        add({"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0, "content_index": 0, "text": full, "logprobs": []})
        item = {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": full, "annotations": []}]}
        add({"type": "response.output_item.done", "output_index": 0, "item": item})
        output.append(item)
    else:
        for k in range(4):
            fid = f"fc_{k}"
            add({"type": "response.output_item.added", "output_index": k, "item": {"id": fid, "type": "function_call", "status": "in_progress", "call_id": f"call_{k}", "name": "write", "arguments": ""}})
            args = "".join(WORDS[i % 10] for i in range(N // 4))
            for i in range(N // 4):
                add({"type": "response.function_call_arguments.delta", "item_id": fid, "output_index": k, "delta": WORDS[i % 10]})
            add({"type": "response.function_call_arguments.done", "item_id": fid, "output_index": k, "arguments": args})
            item = {"id": fid, "type": "function_call", "status": "completed", "call_id": f"call_{k}", "name": "write", "arguments": args}
            add({"type": "response.output_item.done", "output_index": k, "item": item})
            output.append(item)
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": N, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": N + 10}
    add({"type": "response.completed", "response": dict(base, status="completed", output=output, usage=usage)})
    return sse(ev)


def gemini_stream(tools: bool) -> list[bytes]:
    """Every chunk a whole GenerateContentResponse; tool calls streamed as partialArgs
    (Vertex's streamFunctionCallArguments), one call after another."""

    def chunk(parts: list[dict], finish: str | None = None) -> tuple[None, dict]:
        candidate: dict = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return (None, {"candidates": [candidate], "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1}, "modelVersion": "gemini-bench", "responseId": "r1"})

    ev: list[tuple[None, dict | str]] = []
    if not tools:
        ev += [chunk([{"text": WORDS[i % 10]}]) for i in range(N)]
    else:
        for k in range(4):
            ev.append(chunk([{"functionCall": {"name": "write", "willContinue": True}}]))
            ev += [chunk([{"functionCall": {"partialArgs": [{"jsonPath": "$.text", "stringValue": WORDS[i % 10], "willContinue": True}], "willContinue": True}}]) for i in range(N // 4)]
            ev.append(chunk([{"functionCall": {}}]))
    ev.append(chunk([{"text": ""}], "STOP"))
    return sse(ev)


def bedrock_stream(tools: bool) -> list[bytes]:
    """AWS event-stream frames (binary), one frame per piece."""
    from modelwire.adapters import encode_frame

    def frame(event: str, payload: dict) -> bytes:
        payload = {**payload, "p": "abcdef"}
        return encode_frame({":event-type": event, ":content-type": "application/json", ":message-type": "event"}, json.dumps(payload, separators=(",", ":")).encode())

    out = [frame("messageStart", {"role": "assistant"})]
    if not tools:
        out += [frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": WORDS[i % 10]}}) for i in range(N)]
        out.append(frame("contentBlockStop", {"contentBlockIndex": 0}))
    else:
        for k in range(4):
            out.append(frame("contentBlockStart", {"contentBlockIndex": k, "start": {"toolUse": {"toolUseId": f"tooluse_{k}", "name": "write"}}}))
            first = '{"text": "'
            out += [frame("contentBlockDelta", {"contentBlockIndex": k, "delta": {"toolUse": {"input": first if i == 0 else WORDS[i % 10]}}}) for i in range(N // 4)]
            out.append(frame("contentBlockDelta", {"contentBlockIndex": k, "delta": {"toolUse": {"input": '"}'}}}))
            out.append(frame("contentBlockStop", {"contentBlockIndex": k}))
    out.append(frame("messageStop", {"stopReason": "tool_use" if tools else "end_turn"}))
    out.append(frame("metadata", {"usage": {"inputTokens": 10, "outputTokens": N, "totalTokens": N + 10}, "metrics": {"latencyMs": 1}}))
    return out


# -- the three contenders ----------------------------------------------------------------


def run_modelwire(protocol: str, pieces: list[bytes]) -> AssistantMsg:
    msg = AssistantMsg("a", [])
    append = msg.append_event
    wire = get_protocol(protocol)
    decoder = wire.decoder(wire.adapter_class()(msg.id))
    for piece in pieces:
        for event in decoder.feed(piece):
            append(event)
    for event in decoder.close():
        append(event)
    msg.content  # noqa: B018 - the message as a reader sees it
    return msg


def run_floor(protocol: str, pieces: list[bytes]) -> int:
    loads = json.loads
    n = 0
    if protocol == "bedrock-converse":  # each piece is one frame: both CRCs checked, as a reader must
        import zlib

        for piece in pieces:
            assert zlib.crc32(piece[:8]) == int.from_bytes(piece[8:12], "big")
            assert zlib.crc32(piece[:-4]) == int.from_bytes(piece[-4:], "big")
            headers_length = int.from_bytes(piece[4:8], "big")
            loads(piece[12 + headers_length : -4])
            n += 1
        return n
    for piece in pieces:
        for line in piece.split(b"\n"):
            if line.startswith(b"data: ") and line != b"data: [DONE]":
                loads(line[6:])
                n += 1
    return n


def sdk_client(protocol: str, pieces: list[bytes]):
    if protocol == "bedrock-converse":  # what boto3's converse_stream() iterates: botocore's EventStream
        import botocore.session

        return botocore.session.Session().get_service_model("bedrock-runtime").operation_model("ConverseStream").output_shape.members["stream"]
    if protocol == "gemini":  # google-genai runs on httpx
        import httpx
        from google import genai
        from google.genai import types

        def gemini_handler(request):
            return httpx.Response(200, content=iter(pieces), headers={"content-type": "text/event-stream"})

        http = httpx.Client(transport=httpx.MockTransport(gemini_handler))
        return genai.Client(api_key="k", http_options=types.HttpOptions(base_url="http://127.0.0.1:9", httpx_client=http))
    import httpx2

    def handler(request):
        return httpx2.Response(200, content=iter(pieces), headers={"content-type": "text/event-stream"})

    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    if protocol == "anthropic":
        import anthropic

        return anthropic.Anthropic(api_key="k", base_url="http://127.0.0.1:9", http_client=http, max_retries=0)
    import openai

    return openai.OpenAI(api_key="k", base_url="http://127.0.0.1:9", http_client=http, max_retries=0)


def run_sdk(protocol: str, pieces: list[bytes], client) -> int:
    n = 0
    if protocol == "bedrock-converse":
        from botocore.eventstream import EventStream
        from botocore.parsers import EventStreamJSONParser

        class Body:
            def stream(self):
                yield from pieces

        for _ in EventStream(Body(), client, EventStreamJSONParser(), "ConverseStream"):
            n += 1
        return n
    if protocol == "anthropic":
        stream = client.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}], stream=True)
    elif protocol == "gemini":
        stream = client.models.generate_content_stream(model="m", contents="x")
    elif protocol == "openai-chat":
        stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], stream=True)
    else:
        stream = client.responses.create(model="m", input="x", stream=True)
    for _ in stream:
        n += 1
    return n


def best(fn, repeat: int) -> float:
    """Best of ``repeat`` runs, with the garbage collector paused (for all three alike)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        finally:
            gc.enable()
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    try:
        import anthropic  # noqa: F401
        import openai  # noqa: F401
    except ImportError:
        print("the SDK comparison needs the dev extra: pip install -e '.[dev]'")
        return 2

    makers = {"anthropic": anthropic_stream, "openai-chat": chat_stream, "openai-responses": responses_stream, "gemini": gemini_stream, "bedrock-converse": bedrock_stream}
    print(f"{'stream':<28}{'chunks':>7}{'modelwire':>12}{'SDK iter':>11}{'floor':>9}{'vs SDK':>9}{'vs floor':>10}   (us per chunk)")
    ok = True
    for protocol, make in makers.items():
        for tools in (False, True):
            pieces = make(tools)
            n = len(pieces)
            client = sdk_client(protocol, pieces)
            run_modelwire(protocol, pieces)  # warm up
            run_sdk(protocol, pieces, client)
            ours = best(lambda: run_modelwire(protocol, pieces), args.repeat) / n * 1e6
            sdk = best(lambda: run_sdk(protocol, pieces, client), args.repeat) / n * 1e6
            floor = best(lambda: run_floor(protocol, pieces), args.repeat) / n * 1e6
            label = f"{protocol} {'tool calls' if tools else 'text'}"
            r_sdk, r_floor = ours / sdk, ours / floor
            ok &= r_sdk <= 1.0 and r_floor <= 2.0
            print(f"{label:<28}{n:>7}{ours:>12.2f}{sdk:>11.2f}{floor:>9.2f}{r_sdk:>8.2f}x{r_floor:>9.2f}x")
    print(f"\ntargets (<= 1.0x the SDK, <= 2x the floor) met: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
