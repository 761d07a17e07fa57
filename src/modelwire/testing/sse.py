"""Small SSE response bodies for each protocol, written from the documented wire formats,
for scripting the local provider server."""

from __future__ import annotations

import json
from typing import Any


def _sse(events: list[tuple[str | None, Any]]) -> bytes:
    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(out).encode()


def anthropic(*blocks: tuple, stop: str | None = None, msg_id: str = "msg_1", usage: tuple[int, int] = (10, 5)) -> bytes:
    """blocks: ("thinking", text, signature) | ("text", text) | ("tool", id, name, args_json)."""
    ev: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": {"id": msg_id, "type": "message", "role": "assistant", "model": "claude-test", "content": [], "stop_reason": None, "usage": {"input_tokens": usage[0], "output_tokens": 1}}})
    ]
    for i, block in enumerate(blocks):
        kind = block[0]
        if kind == "thinking":
            ev.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}))
            for piece in (block[1][: len(block[1]) // 2], block[1][len(block[1]) // 2 :]):
                ev.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "thinking_delta", "thinking": piece}}))
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "signature_delta", "signature": block[2]}}))
        elif kind == "text":
            ev.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}))
            for word in block[1].split(" "):
                ev.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": word + " "}}))
        else:
            ev.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": block[1], "name": block[2], "input": {}}}))
            args = block[3]
            for piece in ("", args[: len(args) // 2], args[len(args) // 2 :]):
                ev.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": piece}}))
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    if stop is None:
        stop = "tool_use" if any(b[0] == "tool" for b in blocks) else "end_turn"
    ev.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": usage[1]}}))
    ev.append(("message_stop", {"type": "message_stop"}))
    return _sse(ev)


def chat(*blocks: tuple, finish: str | None = None, reasoning_field: str = "reasoning_content", usage: tuple[int, int] = (10, 5)) -> bytes:
    """blocks: ("reasoning", text) | ("text", text) | ("tool", id, name, args_json) -- tool
    calls are streamed in parallel, their fragments interleaved."""

    def chunk(delta: dict | None, fin: str | None = None, **extra: Any) -> tuple[None, dict]:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": fin}]
        return (None, {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "chat-test", "choices": choices, **extra})

    ev: list[tuple[None, Any]] = [chunk({"role": "assistant", "content": ""})]
    tools = [b for b in blocks if b[0] == "tool"]
    for block in blocks:
        if block[0] == "reasoning":
            for word in block[1].split(" "):
                ev.append(chunk({reasoning_field: word + " "}))
        elif block[0] == "text":
            for word in block[1].split(" "):
                ev.append(chunk({"content": word + " "}))
    for k, (_, cid, name, _args) in enumerate(tools):
        ev.append(chunk({"tool_calls": [{"index": k, "id": cid, "type": "function", "function": {"name": name, "arguments": ""}}]}))
    halves = [(k, t[3][: len(t[3]) // 2], t[3][len(t[3]) // 2 :]) for k, t in enumerate(tools)]
    for k, first, _ in halves:
        ev.append(chunk({"tool_calls": [{"index": k, "function": {"arguments": first}}]}))
    for k, _, second in halves:
        ev.append(chunk({"tool_calls": [{"index": k, "function": {"arguments": second}}]}))
    ev.append(chunk({}, finish or ("tool_calls" if tools else "stop")))
    ev.append(chunk(None, usage={"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}))
    ev.append((None, "[DONE]"))
    return _sse(ev)


def responses(*blocks: tuple, resp_id: str = "resp_1", usage: tuple[int, int] = (10, 5)) -> bytes:
    """blocks: ("reasoning", item_id, summary_text, encrypted) | ("text", text) | ("tool", call_id, name, args_json)."""
    ev: list[tuple[str | None, Any]] = []
    seq = iter(range(10**6))

    def add(data: dict) -> None:
        data["sequence_number"] = next(seq)
        ev.append((data["type"], data))

    base = {"id": resp_id, "object": "response", "model": "resp-test", "output": [], "status": "in_progress"}
    add({"type": "response.created", "response": dict(base)})
    output = []
    for oi, block in enumerate(blocks):
        if block[0] == "reasoning":
            _, rid, text, enc = block
            item = {"id": rid, "type": "reasoning", "summary": [{"type": "summary_text", "text": text}], "encrypted_content": enc}
            add({"type": "response.output_item.added", "output_index": oi, "item": {"id": rid, "type": "reasoning", "summary": []}})
            add({"type": "response.reasoning_summary_part.added", "item_id": rid, "output_index": oi, "summary_index": 0, "part": {"type": "summary_text", "text": ""}})
            add({"type": "response.reasoning_summary_text.delta", "item_id": rid, "output_index": oi, "summary_index": 0, "delta": text})
            add({"type": "response.reasoning_summary_part.done", "item_id": rid, "output_index": oi, "summary_index": 0, "part": {"type": "summary_text", "text": text}})
        elif block[0] == "text":
            mid = f"msg_{oi}"
            item = {"id": mid, "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": block[1], "annotations": []}]}
            add({"type": "response.output_item.added", "output_index": oi, "item": {"id": mid, "type": "message", "status": "in_progress", "role": "assistant", "content": []}})
            add({"type": "response.content_part.added", "item_id": mid, "output_index": oi, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})
            for word in block[1].split(" "):
                add({"type": "response.output_text.delta", "item_id": mid, "output_index": oi, "content_index": 0, "delta": word + " "})
            item["content"][0]["text"] = "".join(w + " " for w in block[1].split(" "))  # as streamed
            add({"type": "response.content_part.done", "item_id": mid, "output_index": oi, "content_index": 0, "part": item["content"][0]})
        else:
            _, cid, name, args = block
            fid = f"fc_{oi}"
            item = {"id": fid, "type": "function_call", "status": "completed", "call_id": cid, "name": name, "arguments": args}
            add({"type": "response.output_item.added", "output_index": oi, "item": dict(item, arguments="", status="in_progress")})
            add({"type": "response.function_call_arguments.delta", "item_id": fid, "output_index": oi, "delta": args})
            add({"type": "response.function_call_arguments.done", "item_id": fid, "output_index": oi, "arguments": args})
        add({"type": "response.output_item.done", "output_index": oi, "item": item})
        output.append(item)
    add({"type": "response.completed", "response": dict(base, status="completed", output=output, usage={"input_tokens": usage[0], "output_tokens": usage[1], "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}})})
    return _sse(ev)


def body(protocol: str, *blocks: tuple, **kw: Any) -> bytes:
    """One body for any protocol from neutral blocks: ("think", text), ("text", text), ("tool", id, name, args)."""
    if protocol == "anthropic":
        return anthropic(*[("thinking", b[1], f"sig-{b[1][:8]}") if b[0] == "think" else b for b in blocks], **kw)
    if protocol == "openai-chat":
        return chat(*[("reasoning", b[1]) if b[0] == "think" else b for b in blocks], **kw)
    return responses(*[("reasoning", f"rs_{i}", b[1], f"enc-{i}") if b[0] == "think" else b for i, b in enumerate(blocks)], **kw)
