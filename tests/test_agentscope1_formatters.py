"""A 1.x history (system prompt, an image, thinking with its signature, a tool round with
results in 1.x's ``system`` messages, parallel calls) as modelwire sends it for OpenAI Chat,
Anthropic and Gemini, beside what AgentScope 1.0.21's own chat formatters (and, where it
changes them, its model) send. Every difference is one rule below, judged against the
provider's API; the test fails on any difference no rule accounts for."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

import agentscope1_env
from modelwire.message import from_agentscope1_history
from modelwire.protocols import get_formatter

PNG = base64.b64encode(bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000")).decode()


def _msg(msg_id: str, name: str, role: str, content: Any) -> dict[str, Any]:
    return {
        "id": msg_id,
        "name": name,
        "role": role,
        "content": content,
        "metadata": {},
        "timestamp": "2025-08-27 03:47:11.741",
    }


def _result(call_id: str, name: str, text: str) -> dict[str, Any]:
    output = [{"type": "text", "text": text}]
    return _msg(
        f"r-{call_id}", "system", "system", [{"type": "tool_result", "id": call_id, "name": name, "output": output}]
    )


HISTORY = [
    _msg("s", "system", "system", "You are Friday."),
    _msg(
        "u1",
        "user",
        "user",
        [
            {"type": "text", "text": "What is in this picture, and the weather in Paris?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ],
    ),
    _msg(
        "a1",
        "Friday",
        "assistant",
        [
            {"type": "thinking", "thinking": "Look, then call.", "signature": "sig-1"},
            {"type": "text", "text": "A pixel. Checking the weather."},
            {
                "type": "tool_use",
                "id": "call_1",
                "name": "weather",
                "input": {"city": "Paris"},
                "raw_input": '{"city": "Paris"}',
            },
        ],
    ),
    _result("call_1", "weather", "Paris: sunny"),
    _msg(
        "a2",
        "Friday",
        "assistant",
        [
            {"type": "tool_use", "id": "call_2", "name": "weather", "input": {"city": "Oslo"}},
            {"type": "tool_use", "id": "call_3", "name": "local_time", "input": {"city": "Oslo"}},
        ],
    ),
    _result("call_2", "weather", "Oslo: snow"),
    _result("call_3", "local_time", "Oslo: noon"),
    _msg("a3", "Friday", "assistant", [{"type": "text", "text": "Sunny in Paris; snow at noon in Oslo."}]),
    _msg("u2", "user", "user", "Thanks!"),
]


# -- OpenAI Chat (https://platform.openai.com/docs/api-reference/chat/create) ----------------


def _openai(theirs: list[dict[str, Any]]) -> dict[str, Any]:
    out = []
    for message in copy.deepcopy(theirs):
        # 1. 1.x sends each speaker's `name` (an optional "participant name" in the API); a
        #    tool message has no `name` field in the API reference at all. modelwire sends
        #    neither: one user and one assistant, the same conversation.
        message.pop("name", None)
        # 2. content as one string where 1.x sends a list of text parts: the API takes
        #    "string or array" for system, user and assistant content, with the same meaning.
        content = message.get("content")
        if isinstance(content, list) and all(p.get("type") == "text" for p in content):
            message["content"] = "\n".join(p["text"] for p in content) if content else None
        out.append(message)
    return {"messages": out}


# -- Anthropic (https://docs.anthropic.com/en/api/messages) ------------------------------------


def _anthropic(theirs: list[dict[str, Any]]) -> dict[str, Any]:
    # 1. 1.x's formatter puts the system prompt first in `messages` as role "system", and its
    #    AnthropicChatModel moves it to the top-level `system` before sending (the API has no
    #    "system" role in `messages`): the request is the same.
    messages = copy.deepcopy(theirs)
    return {
        "system": messages[0]["content"],
        "messages": _joined(messages[1:], "content", lambda part: part.get("type") == "tool_result"),
    }


def _joined(turns: list[dict[str, Any]], field: str, is_result: Any) -> list[dict[str, Any]]:
    """2. 1.x sends each parallel call's result in a user turn of its own (one per 1.x
    ``system`` message); modelwire sends the results of one step's calls in one user turn.
    Anthropic: a ``tool_result`` for each ``tool_use``, "all in the next user message"
    (https://platform.claude.com/docs/en/agents-and-tools/tool-use/parallel-tool-use, whose
    troubleshooting says separate messages teach the model to stop calling in parallel);
    Gemini: the responses to parallel calls go back together in one turn
    (https://ai.google.dev/gemini-api/docs/function-calling, parallel function calling)."""
    out: list[dict[str, Any]] = []
    for turn in turns:
        results = bool(turn[field]) and all(is_result(part) for part in turn[field])
        if results and out and all(is_result(part) for part in out[-1][field]):
            out[-1][field].extend(turn[field])
        else:
            out.append(turn)
    return out


# -- Gemini (https://ai.google.dev/api/generate-content) ---------------------------------------

_CAMEL = {
    "inline_data": "inlineData",
    "mime_type": "mimeType",
    "function_call": "functionCall",
    "function_response": "functionResponse",
}


def _camel(value: Any) -> Any:
    # 1. 1.x writes the google-genai SDK's snake_case field names, which the SDK sends as the
    #    REST API's camelCase ones (its own serialisation); modelwire writes the REST names.
    if isinstance(value, dict):
        return {_CAMEL.get(k, k): _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def _gemini(theirs: list[dict[str, Any]]) -> dict[str, Any]:
    contents = _camel(copy.deepcopy(theirs))
    # 2. 1.x sends the system prompt as a first "user" turn; modelwire sends it as the
    #    request's `systemInstruction`, the API's field for it (and no second user turn).
    system = contents.pop(0)
    contents = _joined(contents, "parts", lambda part: "functionResponse" in part)
    for content in contents:
        first_call = True
        for part in content["parts"]:
            call, response = part.get("functionCall"), part.get("functionResponse")
            if call is not None:
                # 3. 1.x sends `"id": null` in a functionCall and the call's id from another
                #    provider ("call_1") in its functionResponse: the two do not match. Both
                #    ids are optional ("populated by the client to match"); modelwire sends none.
                call.pop("id", None)
                # 4. A call that carries no Gemini thought signature (this one came from another
                #    provider) gets Google's documented placeholder on the first call of a
                #    step: Gemini 3 refuses a current-turn function call without one (4xx),
                #    https://ai.google.dev/gemini-api/docs/thought-signatures. 1.x sends none.
                if first_call:
                    part["thoughtSignature"] = "skip_thought_signature_validator"
                first_call = False
            if response is not None:
                response.pop("id", None)
                # 5. The result under "result" where 1.x puts it under "output": the API takes
                #    the response object "in JSON object format", any keys of the caller's
                #    choice ("output", "result" ...), the whole object being the output when
                #    there is no "output" key (FunctionResponse.response in the reference).
                response["response"] = {"result": response["response"]["output"]}
    return {"contents": contents, "systemInstruction": {"parts": system["parts"]}}


NORMALISED = {"openai-chat": _openai, "anthropic": _anthropic, "gemini": _gemini}


@pytest.fixture(scope="module")
def theirs():
    return agentscope1_env.run("formatters.py", {"history": HISTORY})


@pytest.mark.parametrize("protocol", list(NORMALISED))
def test_modelwire_sends_what_agentscope1_sends_but_for_the_judged_differences(theirs, protocol):
    ours = get_formatter(protocol)().format(from_agentscope1_history(HISTORY), None)
    expected = NORMALISED[protocol](theirs[protocol])
    assert json.loads(json.dumps(ours)) == expected


def test_a_gemini_thought_signature_1x_stored_goes_back_to_gemini():
    # 1.0.21's GeminiChatModel keeps a call's signature (base64, as the REST API writes it) under
    # "thought_signature" on the tool_use block and uses it as the call's id too
    # (model/_gemini_model.py); a text part's the same way.
    signature = base64.b64encode(b"opaque signature bytes").decode()
    history = [
        _msg("u", "user", "user", "Weather in Oslo?"),
        _msg(
            "a",
            "Friday",
            "assistant",
            [
                {"type": "text", "text": "Checking.", "thought_signature": signature},
                {
                    "type": "tool_use",
                    "id": signature,
                    "name": "weather",
                    "input": {"city": "Oslo"},
                    "raw_input": '{"city": "Oslo"}',
                    "thought_signature": signature,
                },
            ],
        ),
        _result(signature, "weather", "Oslo: snow"),
    ]
    sent = get_formatter("gemini")().format(from_agentscope1_history(history), None)
    parts = sent["contents"][1]["parts"]
    # the call's signature goes back (Gemini 3 refuses a current-turn call without it); the
    # text part's is not required and is sent only where a block says it came from Gemini
    assert parts[1]["thoughtSignature"] == signature
    assert parts[1]["functionCall"] == {"name": "weather", "args": {"city": "Oslo"}}
    assert sent["contents"][2]["parts"][0]["functionResponse"]["response"] == {"result": "Oslo: snow"}
