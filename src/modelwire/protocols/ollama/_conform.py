"""``modelwire conform`` for a server that says it speaks Ollama's own API (``/api/chat``,
NDJSON streams: Ollama itself, and the servers and gateways that copy it): the checks, in
order, each a few small requests. Answers are read by modelwire's own Ollama adapter, so a
stream it cannot decode is itself a finding."""

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
    ids_row,
    json_object_row,
    length,
    read_answer,
    said,
    server_words,
    stops_row,
    structured_row,
    taken_row,
    within,
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
_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
_ASK = [{"role": "user", "content": "What is the weather in Paris? Use the tool."}]


async def _ask(
    server: Server, messages: list[dict[str, Any]], *, stream: bool = True, num_predict: int = 48, **extra: Any
) -> Answer:
    body = {
        "model": server.model,
        "messages": messages,
        "stream": stream,
        "options": {"num_predict": num_predict},
        **extra,
    }
    answer = read_answer("ollama", *await server.send("POST", "/api/chat", body))
    server.answers.append(answer)
    return answer


async def _models(server: Server) -> list[Row]:
    status, _, raw = await server.send("GET", "/api/tags")
    if status >= 400:
        return [Row("model list", "unsupported", f"GET /api/tags: HTTP {status}: {server_words(raw)}")]
    try:
        names = {m.get("name") for m in json.loads(raw).get("models", [])} | {
            m.get("model") for m in json.loads(raw).get("models", [])
        }
    except (ValueError, AttributeError):
        return [Row("model list", "quirk", f"GET /api/tags answered, but not a list of models: {raw[:80]!r}")]
    names.discard(None)
    wanted = {server.model, f"{server.model}:latest"}
    if names & wanted:
        return [Row("model list", "ok", f"{len(names)} name(s), {server.model} among them")]
    return [Row("model list", "quirk", f"{server.model} is not among: {', '.join(sorted(map(str, names))[:5])}")]


async def _streaming(server: Server) -> list[Row]:
    answer = await _ask(server, [{"role": "user", "content": "Say OK."}])
    if not answer.good:
        raise ProbeFailed(f"a plain streamed request failed: {said(answer)}")
    rows = [
        Row(
            "streaming",
            "ok" if answer.streamed else "quirk",
            f"{answer.content_type or 'no content type'}; text {answer.text[:40]!r}; stop {answer.stop}",
        )
    ]
    usage = answer.usage
    rows.append(
        Row("usage in the stream", "ok", f"prompt {usage[0]}, output {usage[1]}")
        if usage
        else Row("usage in the stream", "quirk", "no prompt_eval_count / eval_count in the last line")
    )
    return rows


async def _num_predict(server: Server) -> list[Row]:
    prompt = [{"role": "user", "content": "Count from 1 to 60, one number a word."}]
    control = await _ask(server, prompt)
    if control.good and within(control, 4):
        return [
            Row(
                "options.num_predict",
                "ok",
                f"cannot be measured: the answer is short without a limit ({length(control)})",
            )
        ]
    limited = await _ask(server, prompt, num_predict=4)
    if not limited.good:
        return [Row("options.num_predict", "unsupported", said(limited))]
    return [
        Row(
            "options.num_predict",
            "ok" if within(limited, 4) else "quirk",
            f"{length(limited)} with a limit of 4" + ("" if within(limited, 4) else ": ignored"),
        )
    ]


async def _roles_and_media(server: Server) -> list[Row]:
    rows = []
    for check, messages, caps in (
        ("system role", [{"role": "system", "content": "Answer in one word."}, {"role": "user", "content": "Hi."}], {}),
        ("images", [{"role": "user", "content": "What colour?", "images": [ONE_PIXEL_PNG]}], {"image_input": False}),
    ):
        answer = await _ask(server, messages)
        rows.append(taken_row(check, answer, caps))
    return rows


async def _tools(server: Server) -> list[Row]:
    auto = await _ask(server, _ASK, tools=[_TOOL])
    rows = [definitions_row(auto)]
    if not auto.good:
        return rows
    empty = await _ask(server, [{"role": "user", "content": "Note the time."}], tools=[_NOTE])
    calls = auto.calls + empty.calls
    rows += [
        arguments_row("tool arguments", auto.calls),
        empty_arguments_row("a call with no arguments", empty),
        ids_row(calls),
    ]
    turn: list[dict[str, Any]] = _ASK + [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
        },
        {"role": "tool", "content": "sunny, 21 C", "tool_name": "get_weather"},
    ]
    answer = await _ask(server, turn, tools=[_TOOL])
    rows.append(
        Row("tool-result turn", "ok", f"answered: {len(answer.calls)} call(s), text {answer.text[:40]!r}")
        if answer.good
        else Row("tool-result turn", "unsupported", said(answer))
    )
    return rows


async def _format_and_think(server: Server) -> list[Row]:
    ask = [{"role": "user", "content": "Reply with a JSON object whose answer is OK."}]
    schema = await _ask(server, ask, format=_SCHEMA)
    rows = [structured_row("format (a schema)", schema, _SCHEMA, {"capabilities": {"structured_output": False}})]
    obj = await _ask(server, ask, format="json")
    rows.append(json_object_row("format: json", obj))
    think = await _ask(server, [{"role": "user", "content": "Say OK."}], think=True)
    if think.good:
        rows.append(Row("think", "ok", f"taken; thinking {'came' if think.thinking else 'did not come'}"))
    else:
        rows.append(Row("think", "unsupported", said(think), capabilities={"thinking": []}))
    return rows


async def _whole_and_errors(server: Server) -> list[Row]:
    whole = await _ask(server, [{"role": "user", "content": "Say OK."}], stream=False)
    rows = [
        Row("non-streamed answer", "ok", f"{whole.content_type}; text {whole.text[:30]!r}")
        if whole.good
        else Row("non-streamed answer", "unsupported", said(whole))
    ]
    rows.append(await error_shape(server, "/api/chat", {"model": server.model, "messages": "not a list"}))
    return rows + [stops_row(server, "done_reason")]


CHECKS = Checks(
    (_models, _streaming, _num_predict, _roles_and_media, _tools, _format_and_think, _whole_and_errors),
    preset="ollama",
    protocol="ollama",
)
