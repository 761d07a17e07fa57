"""Seeded random streams for each protocol, written from the documented wire formats,
checked against the official SDK accumulators, whole and re-split at random bytes.

Each generator draws: block order, parallel tool calls interleaved across chunks, JSON
arguments split inside strings and escapes, CJK and emoji, pings, empty deltas, and
every stop reason.
"""

from __future__ import annotations

import json
import random

import pytest
import sdk_oracle as oracle
from decoding import decode, ends

WORDS = [
    "hello",
    " 世界",
    " 🙂",
    " naïve",
    ' "quoted"',
    " back\\slash",
    " line\nbreak",
    " 👍🏽",
    " ",
    "",
    " tab\t",
    " 漢字かな",
]
SEEDS = range(40)


def text(rnd: random.Random, n: int | None = None) -> str:
    return "".join(rnd.choice(WORDS) for _ in range(n if n is not None else rnd.randint(0, 8)))


def pieces(rnd: random.Random, s: str) -> list[str]:
    """Cut a string anywhere (inside JSON strings and escapes too), empty pieces allowed."""
    cuts = sorted(rnd.sample(range(len(s) + 1), k=min(len(s) + 1, rnd.randint(0, 6))))
    edges = [0, *cuts, len(s)]
    out = [s[a:b] for a, b in zip(edges, edges[1:])]
    if rnd.random() < 0.3:
        out.insert(rnd.randint(0, len(out)), "")
    return out


def args(rnd: random.Random) -> dict:
    return rnd.choice(
        [
            {},
            {"city": text(rnd, 2), "n": rnd.randint(-5, 500)},
            {"q": text(rnd, 3), "tags": [text(rnd, 1), "x"], "nested": {"ok": True, "v": None, "f": 1.5}},
        ]
    )


def sse(events: list[tuple[str | None, dict | str]]) -> bytes:
    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        out.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(out).encode()


# -- Anthropic -------------------------------------------------------------------------------


def anthropic_stream(seed: int) -> bytes:
    rnd = random.Random(seed)
    ev: list[tuple[str | None, dict]] = []

    def add(data: dict) -> None:
        ev.append((data["type"], data))
        if rnd.random() < 0.15:
            ev.append(("ping", {"type": "ping"}))

    usage = {
        "input_tokens": rnd.randint(1, 999),
        "output_tokens": 1,
        "cache_read_input_tokens": rnd.randint(0, 50),
        "cache_creation_input_tokens": rnd.randint(0, 50),
    }
    add(
        {
            "type": "message_start",
            "message": {
                "id": f"msg_{seed}",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        }
    )
    kinds = [rnd.choice(["text", "thinking", "redacted", "tool"]) for _ in range(rnd.randint(0, 5))]
    for i, kind in enumerate(kinds):
        if kind == "text":
            add({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
            for p in pieces(rnd, text(rnd)):
                add({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": p}})
        elif kind == "thinking":
            add(
                {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                }
            )
            for p in pieces(rnd, text(rnd)):
                add({"type": "content_block_delta", "index": i, "delta": {"type": "thinking_delta", "thinking": p}})
            add(
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {"type": "signature_delta", "signature": f"Sig{seed}x{i}=="},
                }
            )
        elif kind == "redacted":
            add(
                {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {"type": "redacted_thinking", "data": f"EmwK{seed}{i}"},
                }
            )
        else:
            add(
                {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {
                        "type": "tool_use",
                        "id": f"toolu_{seed}_{i}",
                        "name": rnd.choice(["get_weather", "search"]),
                        "input": {},
                    },
                }
            )
            a = args(rnd)
            encoded = json.dumps(a, ensure_ascii=rnd.random() < 0.5) if a or rnd.random() < 0.5 else ""
            for p in [""] + pieces(rnd, encoded):
                add(
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": p},
                    }
                )
        add({"type": "content_block_stop", "index": i})
    stop = rnd.choice(["end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal"])
    delta = {"stop_reason": stop, "stop_sequence": "###" if stop == "stop_sequence" else None}
    add({"type": "message_delta", "delta": delta, "usage": {"output_tokens": rnd.randint(1, 999)}})
    add({"type": "message_stop"})
    return sse(ev)


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_anthropic_streams_match_the_sdk(seed):
    body = anthropic_stream(seed)
    msg, events, error = decode("anthropic", [body])
    assert error is None
    oracle.compare_anthropic(msg, oracle.anthropic_final(body), ends(events))
    for split in (seed, seed + 1000):
        assert decode("anthropic", [body], split_seed=split)[0] == msg
    assert decode("anthropic", [body.replace(b"\n", b"\r\n")], split_seed=seed)[0] == msg  # CRLF line ends


# -- Chat Completions ------------------------------------------------------------------------


def chat_stream(seed: int) -> bytes:
    rnd = random.Random(seed)
    chunks: list[dict] = []

    def chunk(delta: dict | None, finish: str | None = None, **extra) -> None:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        chunks.append(
            {
                "id": f"chatcmpl-{seed}",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "gpt-test",
                "choices": choices,
                **extra,
            }
        )

    chunk({"role": "assistant", "content": ""})
    reasoning_field = rnd.choice([None, "reasoning_content", "reasoning"])
    if reasoning_field:
        for p in pieces(rnd, text(rnd, 4)):
            chunk({reasoning_field: p})
    mode = rnd.choice(["text", "refusal", "tools", "text+tools"])
    if mode in ("text", "text+tools"):
        for p in pieces(rnd, text(rnd)):
            chunk({"content": p})
    if mode == "refusal":
        for p in pieces(rnd, "I can't help with " + text(rnd, 2)):
            chunk({"refusal": p})
    if "tools" in mode:
        n = rnd.randint(1, 3)
        lanes = []
        for k in range(n):
            encoded = json.dumps(args(rnd), ensure_ascii=rnd.random() < 0.5)
            first = {
                "index": k,
                "id": f"call_{seed}_{k}",
                "type": "function",
                "function": {"name": f"tool{k}", "arguments": ""},
            }
            rest = [{"index": k, "function": {"arguments": p}} for p in pieces(rnd, encoded)]
            lanes.append([first, *rest])
        started = 0
        while any(lanes):
            # Parallel calls: fragments interleave across chunks; calls start in index
            # order, as OpenAI sends them (the SDK's accumulator relies on it).
            eligible = [i for i, lane in enumerate(lanes[:started]) if lane] + ([started] if started < n else [])
            k = rnd.choice(eligible)
            started += k == started
            chunk({"tool_calls": [lanes[k].pop(0)]})
    finish = {"text": rnd.choice(["stop", "length", "content_filter"]), "refusal": "stop"}.get(mode, "tool_calls")
    chunk({}, finish)
    usage = {"prompt_tokens": rnd.randint(1, 999), "completion_tokens": rnd.randint(1, 99), "total_tokens": 0}
    usage["prompt_tokens_details"] = {"cached_tokens": rnd.randint(0, usage["prompt_tokens"])}
    usage["completion_tokens_details"] = {"reasoning_tokens": rnd.randint(0, 9)}
    chunk(None, usage=usage)
    return sse([(None, c) for c in chunks] + [(None, "[DONE]")])


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_chat_streams_match_the_sdk(seed):
    body = chat_stream(seed)
    msg, events, error = decode("openai-chat", [body])
    assert error is None
    (end,) = ends(events)
    oracle.compare_chat(msg, oracle.chat_final(body), end)
    assert (
        end.cache_input_tokens
        == json.loads(body.split(b"data: ")[-2])["usage"]["prompt_tokens_details"]["cached_tokens"]
    )
    for split in (seed, seed + 1000):
        assert decode("openai-chat", [body], split_seed=split)[0] == msg
    assert decode("openai-chat", [body.replace(b"\n", b"\r\n")], split_seed=seed)[0] == msg  # CRLF line ends


# -- Responses -------------------------------------------------------------------------------


def responses_stream(seed: int) -> bytes:
    rnd = random.Random(seed)
    ev: list[tuple[str | None, dict]] = []
    seq = iter(range(10**6))

    def add(data: dict) -> None:
        data["sequence_number"] = next(seq)
        ev.append((data["type"], data))

    base = {
        "id": f"resp_{seed}",
        "object": "response",
        "created_at": 1,
        "model": "gpt-test",
        "output": [],
        "status": "in_progress",
    }
    add({"type": "response.created", "response": dict(base)})
    add({"type": "response.in_progress", "response": dict(base)})
    output: list[dict] = []
    calls = 0
    for oi, kind in enumerate(rnd.choice(["reasoning", "message", "function_call"]) for _ in range(rnd.randint(1, 5))):
        item_id = f"{kind[:2]}_{seed}_{oi}"
        if kind == "reasoning":
            item = {"id": item_id, "type": "reasoning", "summary": [], "encrypted_content": f"gAAA{seed}{oi}"}
            add({"type": "response.output_item.added", "output_index": oi, "item": dict(item, summary=[])})
            for si in range(rnd.randint(0, 3)):
                part = text(rnd, 3)
                add(
                    {
                        "type": "response.reasoning_summary_part.added",
                        "item_id": item_id,
                        "output_index": oi,
                        "summary_index": si,
                        "part": {"type": "summary_text", "text": ""},
                    }
                )
                for p in pieces(rnd, part):
                    add(
                        {
                            "type": "response.reasoning_summary_text.delta",
                            "item_id": item_id,
                            "output_index": oi,
                            "summary_index": si,
                            "delta": p,
                        }
                    )
                add(
                    {
                        "type": "response.reasoning_summary_text.done",
                        "item_id": item_id,
                        "output_index": oi,
                        "summary_index": si,
                        "text": part,
                    }
                )
                add(
                    {
                        "type": "response.reasoning_summary_part.done",
                        "item_id": item_id,
                        "output_index": oi,
                        "summary_index": si,
                        "part": {"type": "summary_text", "text": part},
                    }
                )
                item["summary"].append({"type": "summary_text", "text": part})
        elif kind == "message":
            item = {"id": item_id, "type": "message", "status": "completed", "role": "assistant", "content": []}
            add(
                {
                    "type": "response.output_item.added",
                    "output_index": oi,
                    "item": dict(item, content=[], status="in_progress"),
                }
            )
            body_text = text(rnd)
            add(
                {
                    "type": "response.content_part.added",
                    "item_id": item_id,
                    "output_index": oi,
                    "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []},
                }
            )
            for p in pieces(rnd, body_text):
                add(
                    {
                        "type": "response.output_text.delta",
                        "item_id": item_id,
                        "output_index": oi,
                        "content_index": 0,
                        "delta": p,
                        "logprobs": [],
                    }
                )
            add(
                {
                    "type": "response.output_text.done",
                    "item_id": item_id,
                    "output_index": oi,
                    "content_index": 0,
                    "text": body_text,
                    "logprobs": [],
                }
            )
            part = {"type": "output_text", "text": body_text, "annotations": []}
            add(
                {
                    "type": "response.content_part.done",
                    "item_id": item_id,
                    "output_index": oi,
                    "content_index": 0,
                    "part": part,
                }
            )
            item["content"].append(part)
        else:
            calls += 1
            encoded = json.dumps(args(rnd), ensure_ascii=rnd.random() < 0.5)
            item = {
                "id": item_id,
                "type": "function_call",
                "status": "completed",
                "call_id": f"call_{seed}_{oi}",
                "name": f"tool{oi}",
                "arguments": encoded,
            }
            add(
                {
                    "type": "response.output_item.added",
                    "output_index": oi,
                    "item": dict(item, arguments="", status="in_progress"),
                }
            )
            if rnd.random() < 0.7:  # otherwise the arguments arrive only in .done
                for p in pieces(rnd, encoded):
                    add(
                        {
                            "type": "response.function_call_arguments.delta",
                            "item_id": item_id,
                            "output_index": oi,
                            "delta": p,
                        }
                    )
            add(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item_id,
                    "output_index": oi,
                    "arguments": encoded,
                }
            )
        add({"type": "response.output_item.done", "output_index": oi, "item": item})
        output.append(item)
    usage = {
        "input_tokens": rnd.randint(1, 999),
        "input_tokens_details": {"cached_tokens": rnd.randint(0, 9)},
        "output_tokens": rnd.randint(1, 99),
        "output_tokens_details": {"reasoning_tokens": rnd.randint(0, 9)},
        "total_tokens": 0,
    }
    if rnd.random() < 0.25:
        final = dict(
            base,
            status="incomplete",
            incomplete_details={"reason": rnd.choice(["max_output_tokens", "content_filter"])},
            output=output,
            usage=usage,
        )
        add({"type": "response.incomplete", "response": final})
    else:
        add({"type": "response.completed", "response": dict(base, status="completed", output=output, usage=usage)})
    return sse(ev)


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_responses_streams_match_the_sdk(seed):
    body = responses_stream(seed)
    msg, events, error = decode("openai-responses", [body])
    assert error is None
    (end,) = ends(events)
    oracle.compare_responses(msg, oracle.responses_final(body), end)
    for split in (seed, seed + 1000):
        assert decode("openai-responses", [body], split_seed=split)[0] == msg
    assert decode("openai-responses", [body.replace(b"\n", b"\r\n")], split_seed=seed)[0] == msg  # CRLF line ends


def test_the_generators_cover_what_they_claim():
    anthropic = b"".join(anthropic_stream(s) for s in SEEDS)
    for needle in (
        b"redacted_thinking",
        b"signature_delta",
        b'"partial_json": ""',
        b"ping",
        b"pause_turn",
        b"refusal",
        b"stop_sequence",
        "🙂".encode(),
        b"\\\\",
    ):
        assert needle in anthropic, needle
    chat = b"".join(chat_stream(s) for s in SEEDS)
    for needle in (b"reasoning_content", b'"reasoning"', b"refusal", b'"index": 2', b"content_filter", b"length"):
        assert needle in chat, needle
    interleaved = 0
    for s in SEEDS:
        indexes = [
            c["choices"][0]["delta"]["tool_calls"][0]["index"]
            for c in (json.loads(x) for x in chat_stream(s).split(b"data: ")[1:-1])
            if c["choices"] and "tool_calls" in c["choices"][0]["delta"]
        ]
        interleaved += indexes != sorted(indexes)
    assert interleaved > 3
    responses = b"".join(responses_stream(s) for s in SEEDS)
    for needle in (
        b"response.incomplete",
        b"max_output_tokens",
        b"reasoning_summary_text.delta",
        b"function_call_arguments.delta",
    ):
        assert needle in responses, needle
