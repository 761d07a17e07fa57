"""``modelwire conform`` for a server that says it speaks Anthropic's Messages API (the
Anthropic routes of DeepSeek, MiniMax, Moonshot, llama.cpp, LiteLLM ...): the checks, in
order, each a few small requests. Answers are read by modelwire's own Anthropic adapter, so
a stream it cannot decode is itself a finding. A profile sets capabilities (this protocol
has no dialect a server can differ in that the probe could find)."""

from __future__ import annotations

from typing import Any

from .._probe import (
    ONE_PIXEL_PNG,
    Answer,
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
    model_list,
    read_answer,
    said,
    stops_row,
    taken_row,
)

__all__ = ["CHECKS"]

_TOOL = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
_NOTE = {
    "name": "note_time",
    "description": "Note the time. Takes nothing.",
    "input_schema": {"type": "object", "properties": {}},
}
_ASK = [{"role": "user", "content": "What is the weather in Paris? Use the tool."}]


async def _ask(server: Server, messages: list[dict[str, Any]], *, stream: bool = True, **extra: Any) -> Answer:
    body = {"model": server.model, "messages": messages, "max_tokens": 48, "stream": stream, **extra}
    answer = read_answer("anthropic", *await server.send("POST", "/v1/messages", body))
    server.answers.append(answer)
    return answer


async def _streaming(server: Server) -> list[Row]:
    answer = await _ask(server, [{"role": "user", "content": "Say OK."}])
    if not answer.good:
        raise ProbeFailed(f"a plain streamed request failed: {said(answer)}")
    rows = [
        Row(
            "streaming",
            "ok" if "event-stream" in answer.content_type else "quirk",
            f"{answer.content_type}; text {answer.text[:40]!r}; stop {answer.stop}",
        )
    ]
    rows.append(
        Row("usage in the stream", "ok", f"input {answer.usage[0]}, output {answer.usage[1]}")
        if answer.usage and any(answer.usage)
        else Row("usage in the stream", "quirk", "no token counts in message_start / message_delta")
    )
    return rows


async def _system_and_media(server: Server) -> list[Row]:
    rows = []
    for check, extra, messages, caps in (
        ("system (a string)", {"system": "Answer in one word."}, [{"role": "user", "content": "Hi."}], {}),
        (
            "system (blocks)",
            {"system": [{"type": "text", "text": "Answer in one word."}]},
            [{"role": "user", "content": "Hi."}],
            {},
        ),
        ("content as blocks", {}, [{"role": "user", "content": [{"type": "text", "text": "Say OK."}]}], {}),
        (
            "image block",
            {},
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What colour?"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": ONE_PIXEL_PNG},
                        },
                    ],
                }
            ],
            {"image_input": False},
        ),
    ):
        fields: dict[str, Any] = dict(extra)
        rows.append(taken_row(check, await _ask(server, messages, **fields), caps))
    return rows


async def _tools(server: Server) -> list[Row]:
    auto = await _ask(server, _ASK, tools=[_TOOL])
    rows = [definitions_row(auto)]
    if not auto.good:
        return rows
    forced_rows, forced = await _forced(server)
    rows += forced_rows
    calls = [c for a in (auto, *forced) for c in a.calls]
    empty = await _ask(
        server, [{"role": "user", "content": "Note the time."}], tools=[_NOTE], tool_choice={"type": "any"}
    )
    rows += [arguments_row("streamed input", calls), empty_arguments_row("a call with no input", empty), ids_row(calls)]
    return rows + await _tool_turn(server, calls[0][0] if calls and calls[0][0] else "toolu_probe01")


async def _forced(server: Server) -> tuple[list[Row], list[Answer]]:
    rows, answers = [], []
    for check, choice in (
        ("forced call (any)", {"type": "any"}),
        ("forced call (named tool)", {"type": "tool", "name": "get_weather"}),
    ):
        answer = await _ask(server, _ASK, tools=[_TOOL], tool_choice=choice)
        answers.append(answer)
        rows.append(forced_row(check, answer))
    return rows, answers


async def _tool_turn(server: Server, call_id: str) -> list[Row]:
    turn = _ASK + [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": call_id, "name": "get_weather", "input": {"city": "Paris"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "sunny, 21 C"}]},
    ]
    answer = await _ask(server, turn, tools=[_TOOL])
    return [
        Row("tool-result turn", "ok", f"answered: {len(answer.calls)} call(s), text {answer.text[:40]!r}")
        if answer.good
        else Row("tool-result turn", "unsupported", said(answer))
    ]


async def _thinking(server: Server) -> list[Row]:
    """Which form of thinking the server takes: adaptive, a budget, or neither."""
    taken = []
    rows = []
    for check, thinking, mode in (
        ("thinking (adaptive)", {"type": "adaptive"}, "adaptive"),
        ("thinking (budget)", {"type": "enabled", "budget_tokens": 1024}, "budget"),
    ):
        answer = await _ask(server, [{"role": "user", "content": "Say OK."}], thinking=thinking, max_tokens=2048)
        if answer.good:
            taken.append(mode)
            rows.append(Row(check, "ok", f"taken; thinking {'came' if answer.thinking else 'did not come'}"))
        else:
            rows.append(Row(check, "unsupported", said(answer)))
    if rows:
        rows[-1].capabilities["thinking"] = taken
    return rows


async def _whole_and_errors(server: Server) -> list[Row]:
    whole = await _ask(server, [{"role": "user", "content": "Say OK."}], stream=False)
    rows = [
        Row("non-streamed answer", "ok", f"{whole.content_type}; text {whole.text[:30]!r}")
        if whole.good
        else Row("non-streamed answer", "unsupported", said(whole))
    ]
    rows.append(
        await error_shape(server, "/v1/messages", {"model": server.model, "messages": "not a list", "max_tokens": 8})
    )
    rows.append(stops_row(server, "stop_reason"))
    return rows


async def _models(server: Server) -> list[Row]:
    return await model_list(server, "/v1/models")


CHECKS = Checks(
    (_models, _streaming, _system_and_media, _tools, _thinking, _whole_and_errors),
    preset="anthropic-compatible",
    protocol="anthropic",
    auth=lambda key: {"x-api-key": key},
    headers={"anthropic-version": "2023-06-01"},
)
