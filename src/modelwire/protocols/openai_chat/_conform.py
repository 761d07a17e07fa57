"""``modelwire conform`` for a server that says it speaks OpenAI's Chat Completions: the
checks, in order, each a few small requests, each row with its evidence and what a profile
sets because of it (the dialect keys of this protocol, and capabilities)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .._probe import (
    ONE_PIXEL_PNG,
    Checks,
    ProbeFailed,
    Row,
    Server,
    arguments_row,
    definitions_row,
    empty_arguments_row,
    error_shape,
    forced_row,
    ids_row,
    json_object_row,
    model_list,
    said,
    server_words,
    structured_row,
    taken_row,
)

__all__ = ["CHECKS"]

_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
_NOTE = {
    "type": "function",
    "function": {
        "name": "note_time",
        "description": "Note the time. Takes nothing.",
        "parameters": {"type": "object", "properties": {}},
    },
}
_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


async def _ask(server: Server, messages: list[dict[str, Any]], *, stream: bool = True, **extra: Any) -> "_Answer":
    """One chat request; its answer read (and kept on the server, for the rows about every answer)."""
    body: dict[str, Any] = {"model": server.model, "messages": messages, "stream": stream, "max_tokens": 48, **extra}
    answer = _read(*await server.send("POST", "/chat/completions", {k: v for k, v in body.items() if v is not None}))
    server.answers.append(answer)
    return answer


@dataclass
class _Answer:
    """What one streamed (or whole) chat answer held."""

    status: int
    content_type: str
    raw: bytes
    text: str = ""
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # (id, name, arguments)
    usage: dict[str, Any] | None = None
    finish: list[str] = field(default_factory=list)
    reasoning: set[str] = field(default_factory=set)
    done: bool = False
    error: str = ""

    @property
    def good(self) -> bool:
        return self.status < 400 and not self.error


def _read(status: int, content_type: str, raw: bytes) -> _Answer:
    """A chat answer's parts, from SSE chunks or from a whole JSON answer."""
    answer = _Answer(status, content_type, raw)
    if status >= 400:
        answer.error = server_words(raw)
        return answer
    text = raw.decode("utf-8", "replace")
    if "data:" not in text[:2000]:
        try:
            whole = json.loads(text)
        except ValueError:
            answer.error = f"not JSON and not SSE: {text[:120]!r}"
            return answer
        _take_whole(answer, whole)
        return answer
    from ...adapters._sse import SSEDecoder

    calls: dict[int, dict[str, Any]] = {}
    decoder = SSEDecoder()
    for event in decoder.feed(raw) + decoder.close():
        data = event.data.strip()
        if data == "[DONE]":
            answer.done = True
            continue
        try:
            chunk = json.loads(data)
        except ValueError:
            answer.error = f"a data line that is not JSON: {data[:80]!r}"
            continue
        _take_chunk(answer, chunk, calls)
    answer.calls = [(calls[k]["id"] or "", calls[k]["name"], calls[k]["arguments"]) for k in sorted(calls)]
    return answer


def _take_chunk(answer: _Answer, chunk: Any, calls: dict[int, dict[str, Any]]) -> None:
    if not isinstance(chunk, dict):
        return
    if isinstance(chunk.get("usage"), dict):
        answer.usage = chunk["usage"]
    if "error" in chunk:
        answer.error = server_words(json.dumps(chunk).encode())
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta") or {}
        answer.text += delta.get("content") or ""
        answer.reasoning |= {k for k in ("reasoning_content", "reasoning") if delta.get(k)}
        for piece in delta.get("tool_calls") or ():
            call = calls.setdefault(piece.get("index", 0), {"id": None, "name": "", "arguments": ""})
            call["id"] = call["id"] or piece.get("id")
            function = piece.get("function") or {}
            call["name"] += function.get("name") or ""
            call["arguments"] += function.get("arguments") or ""
        if choice.get("finish_reason"):
            answer.finish.append(choice["finish_reason"])


def _take_whole(answer: _Answer, whole: Any) -> None:
    if not isinstance(whole, dict):
        answer.error = "a JSON answer that is not an object"
        return
    answer.usage = whole.get("usage") if isinstance(whole.get("usage"), dict) else None
    for choice in whole.get("choices") or ():
        message = choice.get("message") or {}
        answer.text += message.get("content") or ""
        answer.reasoning |= {k for k in ("reasoning_content", "reasoning") if message.get(k)}
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            answer.calls.append((call.get("id") or "", function.get("name", ""), function.get("arguments") or ""))
        if choice.get("finish_reason"):
            answer.finish.append(choice["finish_reason"])


# -- the checks ----------------------------------------------------------------------------


async def _streaming(server: Server) -> list[Row]:
    answer = await _ask(server, [{"role": "user", "content": "Say OK."}])
    if not answer.good:
        raise ProbeFailed(f"a plain streamed request failed: {said(answer)}")
    rows = []
    if "event-stream" in answer.content_type:
        framing = ["[DONE] at the end" if answer.done else "no [DONE] (the stream just ends)"]
        if b"\r\n" in answer.raw:
            framing.append("CRLF line ends")
        if any(line.startswith(b":") for line in answer.raw.splitlines()):
            framing.append("comment lines")
        rows.append(Row("streaming", "ok", f"SSE; {', '.join(framing)}; text {answer.text[:40]!r}"))
    else:
        rows.append(
            Row(
                "streaming",
                "quirk",
                f"answered {answer.content_type or 'no content type'} to stream: true (a whole answer, read as one)",
            )
        )
    # OpenAI sends usage in a stream only when asked: "If set, an additional chunk will be
    # streamed before the `data: [DONE]` message. The `usage` field on this chunk shows the token
    # usage statistics for the entire request" (stream_options.include_usage,
    # https://platform.openai.com/docs/api-reference/chat/create; the openai SDK 3.63.0's
    # types/chat/chat_completion_stream_options_param.py says the same). A server that does the
    # same is as OpenAI is; whether it answers the asking is the next row's.
    rows.append(
        Row("usage in the stream", "ok", f"usage {answer.usage}")
        if answer.usage
        else Row(
            "usage in the stream",
            "ok",
            "none unless asked, as OpenAI (stream_options.include_usage)",
            dialect={"stream_usage": True},
        )
    )
    return rows


async def _stream_usage(server: Server) -> list[Row]:
    answer = await _ask(server, [{"role": "user", "content": "Say OK."}], stream_options={"include_usage": True})
    if not answer.good:
        return [
            Row(
                "stream_options.include_usage",
                "unsupported",
                f"refused: {said(answer)}",
                dialect={"stream_usage": False},
            )
        ]
    if answer.usage is None:
        return [
            Row(
                "stream_options.include_usage",
                "quirk",
                "taken, but no usage came (tokens will read 0)",
                dialect={"stream_usage": False},
            )
        ]
    return [Row("stream_options.include_usage", "ok", f"usage {answer.usage}", dialect={"stream_usage": True})]


async def _max_tokens(server: Server) -> list[Row]:
    prompt = [{"role": "user", "content": "Count from 1 to 60, one number a word."}]
    # Counted in tokens where the server counts them in a stream (words are no measure of a small model's noise).
    counted: dict[str, Any] = (
        {"stream_options": {"include_usage": True}} if any(a.usage for a in server.answers) else {}
    )
    control = await _ask(server, prompt, **counted)
    if control.good and _within(control, 4):
        return [
            Row(
                "max_completion_tokens",
                "ok",
                f"cannot be measured: the answer is short without a limit ({_length(control)})",
            )
        ]
    limited = await _ask(server, prompt, max_tokens=None, max_completion_tokens=4, **counted)
    if limited.good and _within(limited, 4):
        return [
            Row(
                "max_completion_tokens",
                "ok",
                f"honoured ({_length(limited)})",
                dialect={"max_tokens_field": "max_completion_tokens"},
            )
        ]
    old = await _ask(server, prompt, max_tokens=4, **counted)
    if old.good and _within(old, 4):
        why = f"refused: {said(limited)}" if not limited.good else f"ignored ({_length(limited)} with a limit of 4)"
        return [
            Row(
                "max_completion_tokens",
                "quirk",
                f"{why}; max_tokens is honoured ({_length(old)})",
                dialect={"max_tokens_field": "max_tokens"},
            )
        ]
    return [
        Row(
            "max_completion_tokens",
            "unsupported",
            f"neither limit is honoured: {_length(limited)}, then {_length(old)} with max_tokens=4",
        )
    ]


def _within(answer: _Answer, limit: int) -> bool:
    used = (answer.usage or {}).get("completion_tokens")
    if isinstance(used, int):
        return used <= limit
    return len(answer.text.split()) <= limit + 1


def _length(answer: _Answer) -> str:
    used = (answer.usage or {}).get("completion_tokens")
    return f"{used} completion tokens" if isinstance(used, int) else f"{len(answer.text.split())} words"


async def _roles_and_parts(server: Server) -> list[Row]:
    rows = []
    for check, messages, caps in (
        ("system role", [{"role": "system", "content": "Answer in one word."}, {"role": "user", "content": "Hi."}], {}),
        (
            "developer role",
            [{"role": "developer", "content": "Answer in one word."}, {"role": "user", "content": "Hi."}],
            {},
        ),
        ("content as parts", [{"role": "user", "content": [{"type": "text", "text": "Say OK."}]}], {}),
        (
            "image part",
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What colour?"},
                        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{ONE_PIXEL_PNG}"}},
                    ],
                }
            ],
            {"image_input": False},
        ),
    ):
        rows.append(taken_row(check, await _ask(server, messages), caps))
    return rows


async def _tools(server: Server) -> list[Row]:
    ask = [{"role": "user", "content": "What is the weather in Paris? Use the tool."}]
    auto = await _ask(server, ask, tools=[_TOOL])
    rows = [definitions_row(auto)]
    if not auto.good:
        return rows
    forced = await _ask(server, ask, tools=[_TOOL], tool_choice="required")
    rows.append(forced_row("forced call (required)", forced))
    named = await _ask(
        server, ask, tools=[_TOOL], tool_choice={"type": "function", "function": {"name": "get_weather"}}
    )
    rows.append(forced_row("forced call (named tool)", named))
    calls = [c for a in (auto, forced, named) for c in a.calls]
    rows.append(arguments_row("streamed arguments", calls))
    two = await _ask(
        server,
        [{"role": "user", "content": "Weather in Paris and in Rome? Call the tool once for each, at once."}],
        tools=[_TOOL],
        parallel_tool_calls=True,
    )
    rows.append(
        Row(
            "two parallel calls",
            "ok" if len(two.calls) >= 2 else "quirk",
            f"{len(two.calls)} call(s) in one answer" if two.good else said(two),
        )
    )
    empty = await _ask(server, [{"role": "user", "content": "Note the time."}], tools=[_NOTE], tool_choice="required")
    rows.append(empty_arguments_row("a call with no arguments", empty))
    rows += await _tool_turn(server, calls, ask)
    return rows


async def _tool_turn(server: Server, calls: list[tuple[str, str, str]], ask: list[dict[str, Any]]) -> list[Row]:
    ids = [c[0] for c in calls if c[0]]
    rows = [ids_row(calls)]
    call_id = ids[0] if ids else "call_probe0001"
    turn = ask + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": "sunny, 21 C"},
    ]
    answer = await _ask(server, turn, tools=[_TOOL])
    if answer.good:
        rows.append(
            Row(
                "tool-result turn (content: null)",
                "ok",
                f"answered: {len(answer.calls)} call(s), text {answer.text[:40]!r}",
            )
        )
    else:
        turn[1] = {**turn[1], "content": ""}
        again = await _ask(server, turn, tools=[_TOOL])
        if again.good:
            rows.append(
                Row(
                    "tool-result turn (content: null)",
                    "quirk",
                    f'null refused ({said(answer)}); content "" is taken',
                    dialect={"empty_content_null": False},
                )
            )
        else:
            rows.append(Row("tool-result turn (content: null)", "unsupported", said(again)))
    later = [c[0] for c in answer.calls if c[0]]
    if later and set(later) & set(ids):
        rows.append(
            Row(
                "ids unique across turns",
                "quirk",
                f"an id of the first turn came again: {sorted(set(later) & set(ids))}; modelwire renames repeats",
            )
        )
    return rows


async def _structured(server: Server) -> list[Row]:
    ask = [{"role": "user", "content": "Reply with a JSON object whose answer is OK."}]
    schema = await _ask(
        server,
        ask,
        response_format={"type": "json_schema", "json_schema": {"name": "reply", "schema": _SCHEMA, "strict": True}},
    )
    rows = [structured_row("json_schema (strict)", schema, _SCHEMA, {"dialect": {"json_schema": False}})]
    obj = await _ask(server, ask, response_format={"type": "json_object"})
    rows.append(json_object_row("json_object", obj))
    return rows


async def _whole_and_errors(server: Server) -> list[Row]:
    whole = await _ask(server, [{"role": "user", "content": "Say OK."}], stream=False)
    rows = [
        Row("non-streamed answer", "ok", f"{whole.content_type}; text {whole.text[:30]!r}")
        if whole.good
        else Row("non-streamed answer", "unsupported", said(whole))
    ]
    rows.append(
        await error_shape(
            server, "/chat/completions", {"model": server.model, "messages": "not a list", "stream": True}
        )
    )
    return rows


async def _reasoning_and_stops(server: Server) -> list[Row]:
    """Where reasoning arrived in the answers so far, whether it must go back with a tool-call
    turn, and the stop reasons seen."""
    fields = sorted({f for a in server.answers for f in a.reasoning})
    stops = sorted({f for a in server.answers for f in a.finish})
    rows = [
        Row("stop reasons", "ok" if stops else "quirk", ", ".join(stops) if stops else "no finish_reason in any answer")
    ]
    if not fields:
        return rows + [
            Row("reasoning fields", "ok", "no reasoning arrived (the model does not think, or does not show it)")
        ]
    row = Row(
        "reasoning fields", "ok", f"reasoning arrives in {', '.join(fields)}", dialect={"reasoning_field": fields[0]}
    )
    turn: list[dict[str, Any]] = [
        {"role": "user", "content": "What is the weather in Paris? Use the tool."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_probe0001",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_probe0001", "content": "sunny, 21 C"},
    ]
    without = await _ask(server, turn, tools=[_TOOL])
    if not without.good and "reason" in without.error.lower():
        row.dialect["reasoning_on_tool_calls"] = True
        row.evidence += f"; a tool-call turn without it is refused ({said(without)}): it is sent back"
    return rows + [row]


async def _models(server: Server) -> list[Row]:
    return await model_list(server, "/models")


CHECKS = Checks(
    (
        _models,
        _streaming,
        _stream_usage,
        _max_tokens,
        _roles_and_parts,
        _tools,
        _structured,
        _whole_and_errors,
        _reasoning_and_stops,
    ),
    preset="openai-compatible",
    rank=0,  # most compatible servers speak it: probed when no protocol is named
)
