"""``modelwire conform`` for a server that says it speaks OpenAI's Responses API (LiteLLM's
proxy, vLLM, llama.cpp, LM Studio and Ollama's ``/v1/responses``, gateways ...): the checks,
in order, each a few small requests. Answers are read by modelwire's own Responses adapter,
so a stream it cannot decode is itself a finding. Where a server keeps no responses
(``previous_response_id``, ``store``), the rows say so: modelwire continues a stored
response only when asked (``chain``), and a stateless call needs ``store: false`` taken."""

from __future__ import annotations

import json
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
    json_object_row,
    length,
    model_list,
    read_answer,
    said,
    stops_row,
    structured_row,
    taken_row,
    within,
)

__all__ = ["CHECKS"]

_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
_NOTE = {
    "type": "function",
    "name": "note_time",
    "description": "Note the time. Takes nothing.",
    "parameters": {"type": "object", "properties": {}},
}
_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}
_ASK = "What is the weather in Paris? Use the tool."


def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


async def _ask(server: Server, input: Any, *, stream: bool = True, **extra: Any) -> Answer:
    body: dict[str, Any] = {"model": server.model, "input": input, "stream": stream, "max_output_tokens": 48, **extra}
    answer = read_answer(
        "openai-responses", *await server.send("POST", "/responses", {k: v for k, v in body.items() if v is not None})
    )
    server.answers.append(answer)
    return answer


async def _streaming(server: Server) -> list[Row]:
    answer = await _ask(server, "Say OK.")
    if not answer.good:
        raise ProbeFailed(f"a plain streamed request failed: {said(answer)}")
    form = (
        "typed SSE events"
        if answer.streamed and "event-stream" in answer.content_type
        else f"{answer.content_type or 'no content type'} (a whole answer, read as one)"
    )
    rows = [
        Row("streaming", "ok" if answer.streamed else "quirk", f"{form}; text {answer.text[:40]!r}; stop {answer.stop}")
    ]
    usage = answer.usage
    rows.append(
        Row("usage in the stream", "ok", f"input {usage[0]}, output {usage[1]}")
        if usage
        else Row("usage in the stream", "quirk", "no token counts in response.completed")
    )
    return rows


async def _max_output_tokens(server: Server) -> list[Row]:
    prompt = "Count from 1 to 60, one number a word."
    control = await _ask(server, prompt)
    if control.good and within(control, 16):
        return [
            Row(
                "max_output_tokens",
                "ok",
                f"cannot be measured: the answer is short without a limit ({length(control)})",
            )
        ]
    limited = await _ask(server, prompt, max_output_tokens=16)  # the API's own floor is 16
    if not limited.good:
        return [Row("max_output_tokens", "unsupported", said(limited))]
    return [
        Row(
            "max_output_tokens",
            "ok" if within(limited, 16) else "quirk",
            f"{length(limited)} with a limit of 16" + ("" if within(limited, 16) else ": ignored"),
        )
    ]


async def _input_forms(server: Server) -> list[Row]:
    image = {"type": "input_image", "image_url": f"data:image/png;base64,{ONE_PIXEL_PNG}"}
    rows = []
    forms: tuple[tuple[str, Any, dict[str, Any], dict[str, Any]], ...] = (
        ("instructions", "Hi.", {"instructions": "Answer in one word."}, {}),
        ("input as items", [_user("Say OK.")], {}, {}),
        (
            "developer role",
            [{"type": "message", "role": "developer", "content": "Answer in one word."}, _user("Hi.")],
            {},
            {},
        ),
        (
            "image input",
            [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What colour?"}, image]}],
            {},
            {"image_input": False},
        ),
    )
    for check, input, extra, caps in forms:
        answer = await _ask(server, input, **extra)
        rows.append(taken_row(check, answer, caps))
    return rows


async def _tools(server: Server) -> list[Row]:
    auto = await _ask(server, _ASK, tools=[_TOOL])
    rows = [definitions_row(auto)]
    if not auto.good:
        return rows
    forced = await _ask(server, _ASK, tools=[_TOOL], tool_choice="required")
    named = await _ask(server, _ASK, tools=[_TOOL], tool_choice={"type": "function", "name": "get_weather"})
    rows += [forced_row("forced call (required)", forced), forced_row("forced call (named tool)", named)]
    calls = auto.calls + forced.calls + named.calls
    empty = await _ask(server, "Note the time.", tools=[_NOTE], tool_choice="required")
    rows += [
        arguments_row("streamed arguments", calls),
        empty_arguments_row("a call with no arguments", empty),
        ids_row(calls),
    ]
    call_id = calls[0][0] if calls and calls[0][0] else "call_probe0001"
    turn = [
        _user(_ASK),
        {"type": "function_call", "call_id": call_id, "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": call_id, "output": "sunny, 21 C"},
    ]
    answer = await _ask(server, turn, tools=[_TOOL])
    rows.append(
        Row("tool-result turn", "ok", f"answered: {len(answer.calls)} call(s), text {answer.text[:40]!r}")
        if answer.good
        else Row("tool-result turn", "unsupported", said(answer))
    )
    return rows


async def _structured(server: Server) -> list[Row]:
    ask = "Reply with a JSON object whose answer is OK."
    schema = await _ask(
        server, ask, text={"format": {"type": "json_schema", "name": "reply", "schema": _SCHEMA, "strict": True}}
    )
    rows = [structured_row("json_schema (strict)", schema, _SCHEMA, {"capabilities": {"structured_output": False}})]
    obj = await _ask(server, ask, text={"format": {"type": "json_object"}})
    rows.append(json_object_row("json_object", obj))
    return rows


async def _reasoning(server: Server) -> list[Row]:
    answer = await _ask(server, "Say OK.", reasoning={"effort": "low", "summary": "auto"})
    if not answer.good:
        return [Row("reasoning (effort)", "unsupported", said(answer), capabilities={"thinking": []})]
    return [Row("reasoning (effort)", "ok", f"taken; reasoning {'came' if answer.thinking else 'did not come'}")]


async def _state(server: Server) -> list[Row]:
    """Whether the server keeps responses: ``store: false`` taken, and a stored answer continued
    by ``previous_response_id``."""
    stateless = await _ask(server, "Say OK.", store=False, include=["reasoning.encrypted_content"])
    rows = [
        Row("store: false", "ok", "taken")
        if stateless.good
        else Row("store: false", "unsupported", f"{said(stateless)}: leave stateless off")
    ]
    status, content_type, raw = await server.send(
        "POST", "/responses", {"model": server.model, "input": "Say OK.", "max_output_tokens": 48, "store": True}
    )
    first = read_answer("openai-responses", status, content_type, raw)
    server.answers.append(first)
    response_id = _id_of(raw) if first.good else None
    if response_id is None:
        return rows + [
            Row("non-streamed answer", "unsupported", said(first) if not first.good else "no response id in the answer")
        ]
    rows.append(Row("non-streamed answer", "ok", f"{content_type}; text {first.text[:30]!r}"))
    again = await _ask(server, "Say it again.", previous_response_id=response_id)
    if again.good:
        rows.append(
            Row(
                "previous_response_id",
                "ok",
                f"taken with the id of a stored answer ({response_id[:24]}): chain=True can be tried",
            )
        )
    else:
        rows.append(
            Row("previous_response_id", "unsupported", f"{said(again)}: keeps no responses, so leave chain off")
        )
    return rows


def _id_of(raw: bytes) -> str | None:
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data.get("id") if isinstance(data, dict) and isinstance(data.get("id"), str) else None


async def _errors_and_stops(server: Server) -> list[Row]:
    return [
        await error_shape(
            server, "/responses", {"model": server.model, "input": {"not": "an input"}, "max_output_tokens": 16}
        ),
        stops_row(server, "status"),
    ]


async def _models(server: Server) -> list[Row]:
    return await model_list(server, "/models")


CHECKS = Checks(
    (_models, _streaming, _max_output_tokens, _input_forms, _tools, _structured, _reasoning, _state, _errors_and_stops),
    preset="responses-compatible",
    protocol="openai-responses",
)
