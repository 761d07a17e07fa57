"""Google Gemini: recorded streams against the google-genai SDK's own types, the requests
pydantic-ai really sent next rebuilt from the decoded replies, generated streams, payloads
validated against google-genai's request types, and the agent end to end on both endpoints."""

from __future__ import annotations

import asyncio
import base64
import json
import random

import pytest

from decoding import decode

from modelwire import event as E
from modelwire.protocols import decode_sse
from modelwire.agent import Agent
from modelwire.errors import IncompleteStreamError, ProviderError, RateLimitError, StreamProtocolError
from modelwire.protocols import get_formatter
from modelwire.message import (
    AssistantMsg,
    Msg,
    SystemMsg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    UserMsg,
)
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy
from modelwire.testing import sse_reply
from modelwire.testing.sse import body as fake_body

from paths import HAVE_SHARED, ROOT
from sdk_params import gemini_request

genai_types = pytest.importorskip("google.genai.types", reason="the dev extra installs google-genai")

GEMINI = ROOT / "gemini"
RECORDED = sorted(GEMINI.glob("*.sse")) if HAVE_SHARED else []
needs_shared = pytest.mark.skipif(not HAVE_SHARED, reason="../shared/recorded-streams is not present")


def sse_chunks(raw: bytes) -> list[dict]:
    return [json.loads(line[5:]) for line in raw.decode().replace("\r\n", "\n").split("\n") if line.startswith("data:")]


def sig(value) -> bytes:
    """A signature as bytes, whatever base64 alphabet it was written in."""
    if isinstance(value, bytes):
        return value
    return base64.urlsafe_b64decode(value.replace("+", "-").replace("/", "_") + "=" * (-len(value) % 4))


# -- the SDK as oracle ---------------------------------------------------------------------------


def sdk_view(raw: bytes) -> dict:
    """What google-genai's own types say the chunks hold, accumulated the simple way."""
    text, thought, signatures, calls, streamed, usage, finish, empty_signed = "", "", [], [], 0, {}, None, 0
    for chunk in sse_chunks(raw):
        response = genai_types.GenerateContentResponse._from_response(
            response=chunk, kwargs={}
        )  # as the SDK reads the wire
        if response.usage_metadata is not None:
            usage.update(response.usage_metadata.model_dump(exclude_none=True))
        for candidate in response.candidates or []:
            if candidate.finish_reason is not None:
                finish = (
                    candidate.finish_reason.value
                    if hasattr(candidate.finish_reason, "value")
                    else candidate.finish_reason
                )
            for part in (candidate.content.parts if candidate.content else None) or []:
                if part.thought_signature is not None:
                    signatures.append(part.thought_signature)
                    if part.text == "":
                        empty_signed += 1
                if part.function_call is not None:
                    fc = part.function_call
                    if fc.name and (fc.will_continue or fc.partial_args):
                        streamed += 1
                    elif fc.name:
                        calls.append((fc.name, fc.args or {}, fc.id))
                elif part.text is not None:
                    if part.thought:
                        thought += part.text
                    else:
                        text += part.text
    return {
        "text": text,
        "thought": thought,
        "signatures": signatures,
        "calls": calls,
        "streamed": streamed,
        "usage": usage,
        "finish": finish,
        "empty_signed": empty_signed,
    }


@needs_shared
@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_recorded_streams_match_the_sdk(path):
    raw = path.read_bytes()
    msg, events, error = decode("gemini", [raw])
    assert error is None
    want = sdk_view(raw)
    blocks = msg.content
    assert "".join(b.text for b in blocks if b.type == "text") == want["text"]
    assert "".join(b.thinking for b in blocks if b.type == "thinking") == want["thought"]
    ours_signatures = []
    for b in blocks:
        if getattr(b, "thought_signature", None):
            ours_signatures.append(sig(b.thought_signature))
        elif b.type == "tool_call" and getattr(b, "server_side", False) and b.provider_block.get("thoughtSignature"):
            ours_signatures.append(sig(b.provider_block["thoughtSignature"]))
        elif b.type == "tool_result" and (b.metadata.get("provider_block") or {}).get("thoughtSignature"):
            ours_signatures.append(sig(b.metadata["provider_block"]["thoughtSignature"]))
    assert ours_signatures == want["signatures"]  # every one, in order, none merged away
    assert (
        sum(1 for b in blocks if b.type == "text" and b.text == "" and getattr(b, "thought_signature", None))
        == want["empty_signed"]
    )
    client_calls = [b for b in blocks if b.type == "tool_call" and not getattr(b, "server_side", False)]
    whole = [
        (b.name, json.loads(b.input), b.id if getattr(b, "server_call_id", False) else None)
        for b in client_calls[: len(client_calls)]
    ]
    assert len(client_calls) == len(want["calls"]) + want["streamed"]
    for expected in want["calls"]:
        assert expected in whole
    (end,) = [e for e in events if e.type == "MODEL_CALL_END"]
    u = want["usage"]
    assert end.input_tokens == u.get("prompt_token_count", 0)
    assert end.output_tokens == u.get("candidates_token_count", 0) + u.get("thoughts_token_count", 0)
    assert end.reasoning_tokens == u.get("thoughts_token_count", 0)
    assert end.cache_input_tokens == u.get("cached_content_token_count", 0)
    assert end.provider_stop_reason == want["finish"]
    assert end.stop_reason == ("tool_use" if client_calls and want["finish"] == "STOP" else "end_turn")


@needs_shared
def test_streamed_arguments_rebuild_the_objects_the_stream_describes():
    """Values read off the recorded partialArgs by hand."""
    msg, _, _ = decode("gemini", [(GEMINI / "vercel-ai__google-stream-no-args-tool-call.sse").read_bytes()])
    calls = [(b.name, json.loads(b.input)) for b in msg.content if b.type == "tool_call"]
    assert calls == [
        ("read_theme", {}),
        ("read_screen", {"id": "A"}),
        ("read_screen", {"id": "B"}),
        ("read_screen", {"id": "C"}),
    ]
    msg, _, _ = decode(
        "gemini",
        [
            (
                GEMINI / "vercel-ai__google-stream-tool-call-array-arguments-missing-terminal-function-call.sse"
            ).read_bytes()
        ],
    )
    (call,) = [b for b in msg.content if b.type == "tool_call"]
    args = json.loads(call.input)
    raw = (GEMINI / "vercel-ai__google-stream-tool-call-array-arguments-missing-terminal-function-call.sse").read_text()
    # every leaf the stream sent is at its path
    for chunk in sse_chunks(raw.encode()):
        for part in chunk["candidates"][0]["content"].get("parts", []):
            for arg in (part.get("functionCall") or {}).get("partialArgs", []):
                if "numberValue" in arg:
                    node = args
                    for step in arg["jsonPath"][2:].replace("[", ".").replace("]", "").split("."):
                        node = node[int(step)] if step.isdigit() else node[step]
                    assert node == arg["numberValue"]


@needs_shared
@pytest.mark.parametrize("seed", range(5))
def test_recorded_streams_resplit_at_random_give_the_same_message(seed):
    for path in RECORDED:
        raw = path.read_bytes()
        whole, _, _ = decode("gemini", [raw])
        split, _, _ = decode("gemini", [raw], split_seed=seed)
        assert split.to_dict() == whole.to_dict(), path.name


@needs_shared
@pytest.mark.parametrize(
    "path", sorted((GEMINI / "nonstream").glob("*.response.json")) if HAVE_SHARED else [], ids=lambda p: p.name
)
def test_whole_responses_decode_as_one_chunk(path):
    """A streamed chunk has the shape of a whole response: the edge cases recorded without streaming."""
    data = json.loads(path.read_text())
    raw = f"data: {json.dumps(data)}\n\n".encode()
    msg, events, error = decode("gemini", [raw])
    assert error is None
    (end,) = [e for e in events if e.type == "MODEL_CALL_END"]
    candidates = data.get("candidates") or []
    if not candidates:
        assert end.stop_reason == "content_filter" and end.provider_stop_reason == data["promptFeedback"]["blockReason"]
        return
    reason = candidates[0].get("finishReason")
    assert end.provider_stop_reason == reason
    expected = {
        "MAX_TOKENS": "max_tokens",
        "SAFETY": "content_filter",
        "MODEL_ARMOR": "content_filter",
        "UNEXPECTED_TOOL_CALL": "error",
    }.get(reason)
    if expected:
        assert end.stop_reason == expected
    parts = (candidates[0].get("content") or {}).get("parts") or []
    calls = [p["functionCall"] for p in parts if "functionCall" in p]
    ours = [b for b in msg.content if b.type == "tool_call"]
    assert [(c["name"], c.get("args", {})) for c in calls] == [(b.name, json.loads(b.input)) for b in ours]
    signed = [sig(p["thoughtSignature"]) for p in parts if "thoughtSignature" in p]
    assert [sig(b.thought_signature) for b in msg.content if getattr(b, "thought_signature", None)] == signed


# -- the next request, as pydantic-ai really sent it ---------------------------------------------


def _normal(contents: list) -> list:
    """What may differ without the API seeing a difference: the base64 alphabet of a
    signature, pydantic-ai's client-made ids (ours are not sent), its result key."""
    out = json.loads(json.dumps(contents))
    for content in out:
        for part in content["parts"]:
            if "thoughtSignature" in part:
                part["thoughtSignature"] = base64.b64encode(sig(part["thoughtSignature"])).decode()
            for key in ("functionCall", "functionResponse"):
                if key in part and str(part[key].get("id", "")).startswith("pyd_ai_"):
                    del part[key]["id"]
            if "functionResponse" in part:
                response = part["functionResponse"]["response"]
                if "return_value" in response:
                    part["functionResponse"]["response"] = {"result": response["return_value"]}
    return out


def _continue(stream: str, results: list[str]) -> list[Msg]:
    raw = (GEMINI / stream).read_bytes()
    reply = AssistantMsg("agent", [], id="r")
    for event in decode_sse("gemini", raw, "r", provider="google"):
        reply.append_event(event)
    calls = [b for b in reply.content if b.type == "tool_call"]
    for call, output in zip(calls, results, strict=True):
        reply.content.append(ToolResultBlock(id=call.id, name=call.name, output=output, state="success"))
    return [reply]


@needs_shared
@pytest.mark.parametrize(
    "name, question",
    [
        (
            "pydantic-ai__test_google_streaming_tool_call_thought_signature",
            "What is the capital of the user country? Call the tool",
        ),
        ("pydantic-ai__test_native_output_with_function_tools_stream", "What is the largest city in the user country?"),
    ],
)
def test_the_next_request_is_rebuilt_from_the_decoded_reply(name, question):
    sent = json.loads((GEMINI / f"{name}.1.request.json").read_text())
    messages = [UserMsg("user", question), *_continue(f"{name}.0.sse", ["Mexico"])]
    payload = load_model("google:gemini-3-pro-preview", api_key="k").build_request(messages)[0]
    assert _normal(payload["contents"]) == _normal(sent["contents"])
    # the server-issued id is echoed on both sides; a signature on exactly its part
    call = payload["contents"][1]["parts"][0]
    assert ("id" in call["functionCall"]) == ("native_output" in name)


@needs_shared
def test_two_rounds_of_calls_in_one_reply_make_the_recorded_turns():
    sent = json.loads((GEMINI / "pydantic-ai__test_google_model_iter_stream.2.request.json").read_text())
    first = _continue("pydantic-ai__test_google_model_iter_stream.0.sse", ["Paris"])[0]
    second = _continue("pydantic-ai__test_google_model_iter_stream.1.sse", ["30°C"])[0]
    reply = AssistantMsg("agent", [*first.content, *second.content])
    messages = [UserMsg("user", sent["contents"][0]["parts"][0]["text"]), reply]
    payload = load_model("google:gemini-2.0-flash", api_key="k").build_request(messages)[0]
    assert _normal(payload["contents"]) == _normal(sent["contents"])


# -- formatting rules, validated by google-genai's request types --------------------------------


def gemini_call(call_id, name, args, signature=None, server_id=True):
    extras = {"provider_metadata": {"google": {"protocol": "gemini"}}}
    if signature:
        extras["thought_signature"] = signature
    if server_id:
        extras["server_call_id"] = True
    return ToolCallBlock(id=call_id, name=name, input=json.dumps(args), **extras)


def test_the_formatter_writes_each_rule_by_hand():
    gem = {"provider_metadata": {"google": {"protocol": "gemini"}}}
    png = "iVBORw0KGgo="
    messages = [
        SystemMsg("sys", "Be brief."),
        UserMsg(
            "user",
            [
                TextBlock(text="Look:"),
                {"type": "data", "source": {"type": "base64", "data": png, "media_type": "image/png"}},
            ],
        ),
        AssistantMsg(
            "agent",
            [
                ThinkingBlock(thinking="Plan.", **gem),
                TextBlock(text="Calling.", thought_signature="c2lnMQ==", **gem),
                gemini_call("fc_1", "weather", {"city": "Paris"}, server_id=True),
                gemini_call("call_local", "time", {}, server_id=False),
                ToolResultBlock(id="fc_1", name="weather", output="sunny", state="success"),
                ToolResultBlock(
                    id="call_local",
                    name="time",
                    output=[
                        TextBlock(text="noon"),
                        {"type": "data", "source": {"type": "base64", "data": png, "media_type": "image/png"}},
                    ],
                    state="error",
                ),
                TextBlock(text="", thought_signature="c2lnMg==", **gem),
            ],
        ),
    ]
    tools = [
        {
            "name": "weather",
            "description": "Weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
        {"name": "time"},
    ]
    payload = get_formatter("gemini")(provider="google").format(messages, tools, tool_choice="weather")
    gemini_request(payload)
    assert payload == {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Look:"}, {"inlineData": {"mimeType": "image/png", "data": png}}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Plan.", "thought": True},
                    {"text": "Calling.", "thoughtSignature": "c2lnMQ=="},
                    {"functionCall": {"name": "weather", "args": {"city": "Paris"}, "id": "fc_1"}},
                    {"functionCall": {"name": "time", "args": {}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "weather", "response": {"result": "sunny"}, "id": "fc_1"}},
                    {"functionResponse": {"name": "time", "response": {"error": "noon"}}},
                    {"inlineData": {"mimeType": "image/png", "data": png}},
                ],
            },
            {"role": "model", "parts": [{"text": "", "thoughtSignature": "c2lnMg=="}]},
        ],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "weather",
                        "description": "Weather",
                        "parametersJsonSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
                    },
                    {"name": "time", "parametersJsonSchema": {"type": "object", "properties": {}}},
                ]
            }
        ],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["weather"]}},
    }


def test_a_conversation_from_another_provider_continues_on_gemini():
    """Claude's thinking is not Gemini's: dropped; its tool call gets Google's documented
    placeholder signature; the history that starts with the model gets a user turn first."""
    reply = AssistantMsg(
        "agent",
        [
            ThinkingBlock(
                thinking="claude thinks", signature="EqQB", provider_metadata={"anthropic": {"protocol": "anthropic"}}
            ),
            ToolCallBlock(
                id="toolu_1", name="f", input='{"a": 1}', provider_metadata={"anthropic": {"protocol": "anthropic"}}
            ),
            ToolCallBlock(
                id="toolu_2", name="f", input='{"a": 2}', provider_metadata={"anthropic": {"protocol": "anthropic"}}
            ),
            ToolResultBlock(id="toolu_1", name="f", output="one", state="success"),
            ToolResultBlock(id="toolu_2", name="f", output="two", state="success"),
        ],
    )
    payload = get_formatter("gemini")(provider="google").format([reply])
    gemini_request(payload)
    assert payload["contents"][0] == {"role": "user", "parts": [{"text": ""}]}
    model_parts = payload["contents"][1]["parts"]
    assert model_parts == [
        {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "skip_thought_signature_validator"},
        {"functionCall": {"name": "f", "args": {"a": 2}}},
    ]
    assert "EqQB" not in json.dumps(payload) and "toolu_" not in json.dumps(payload)


def test_bare_calls_get_the_placeholder_on_the_first_of_each_turn_and_a_kept_signature_anywhere():
    """Calls with no extras (as AgentScope writes them): the first of each model turn carries
    the placeholder and the others nothing, except one whose id keeps a Gemini signature
    (AgentScope's ``gemini_ts:``), which carries that signature wherever it is, as does one
    Gemini signed."""
    bare = lambda cid: ToolCallBlock(id=cid, name="f", input="{}")  # noqa: E731
    done = lambda cid: ToolResultBlock(id=cid, name="f", output="ok", state="success")  # noqa: E731
    turns = [
        UserMsg("u", "go"),
        AssistantMsg(
            "agent", [bare("c1"), bare("gemini_ts:c2ln"), bare("c3"), done("c1"), done("gemini_ts:c2ln"), done("c3")]
        ),
        AssistantMsg(
            "agent",
            [
                bare("c4"),
                bare("c5"),
                ToolCallBlock(
                    id="c6",
                    name="f",
                    input="{}",
                    thought_signature="c2ln",
                    provider_metadata={"google": {"protocol": "gemini"}},
                ),
                done("c4"),
                done("c5"),
                done("c6"),
            ],
        ),
    ]
    contents = get_formatter("gemini")(provider="google").format(turns)["contents"]
    assert [c["parts"] for c in contents if c["role"] == "model"] == [
        [
            {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "skip_thought_signature_validator"},
            {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "c2ln"},
            {"functionCall": {"name": "f", "args": {}}},
        ],
        [
            {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "skip_thought_signature_validator"},
            {"functionCall": {"name": "f", "args": {}}},
            {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "c2ln"},  # its own, replayed
        ],
    ]


def test_vertex_signatures_are_not_replayed_to_the_gemini_api():
    reply = AssistantMsg(
        "agent", [TextBlock(text="hi", thought_signature="c2ln", provider_metadata={"vertex": {"protocol": "gemini"}})]
    )
    assert get_formatter("gemini")(provider="google").format([UserMsg("u", "x"), reply])["contents"][1]["parts"] == [
        {"text": "hi"}
    ]
    assert get_formatter("gemini")(provider="vertex").format([UserMsg("u", "x"), reply])["contents"][1]["parts"] == [
        {"text": "hi", "thoughtSignature": "c2ln"}
    ]


def test_options_map_onto_generation_config():
    model = load_model(
        "google:gemini-2.5-flash",
        api_key="k",
        max_tokens=100,
        temperature=0.5,
        top_p=0.9,
        stop=["END"],
        thinking=True,
        thinking_budget=512,
        json_schema={"type": "object"},
    )
    body = model.build_request([UserMsg("u", "hi")])[0]
    gemini_request(body)
    assert body["generationConfig"] == {
        "maxOutputTokens": 100,
        "temperature": 0.5,
        "topP": 0.9,
        "stopSequences": ["END"],
        "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 512},
        "responseMimeType": "application/json",
        "responseJsonSchema": {"type": "object"},
    }
    off = load_model("google:gemini-2.5-flash", api_key="k", thinking=False).build_request([UserMsg("u", "hi")])[0]
    assert off["generationConfig"] == {"thinkingConfig": {"thinkingBudget": 0}}
    assert "model" not in body and "stream" not in body


def test_urls_and_keys_of_both_endpoints(monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
    google = load_model("google:gemini-2.5-flash")
    assert (
        google.url()
        == "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert google.headers({})["x-goog-api-key"] == "g-key" and "authorization" not in google.headers({})
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "proj")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "europe-west4")
    monkeypatch.setenv("GOOGLE_ACCESS_TOKEN", "ya29.token")
    vertex = load_model("vertex:gemini-2.5-pro")
    assert (
        vertex.url()
        == "https://europe-west4-aiplatform.googleapis.com/v1/projects/proj/locations/europe-west4/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    )
    assert vertex.headers({})["authorization"] == "Bearer ya29.token"


# -- errors ---------------------------------------------------------------------------------------


def test_an_error_inside_the_stream_is_typed_and_closes_what_was_open():
    raw = (
        b"data: "
        b'{"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"}}]}\r\n\r\ndata: '
        b'{"error":{"code":429,"message":"Resource has been '
        b'exhausted","status":"RESOURCE_EXHAUSTED"}}\r\n\r\n'
    )
    msg, events, error = decode("gemini", [raw])
    assert (
        isinstance(error, RateLimitError)
        and error.provider_type == "RESOURCE_EXHAUSTED"
        and "exhausted" in error.message
    )
    assert msg.get_text_content() == "Hel"


def test_a_stream_cut_off_before_its_finish_reason_is_incomplete():
    raw = b'data: {"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"}}]}\n\n'
    _, _, error = decode("gemini", [raw])
    assert isinstance(error, IncompleteStreamError)


@pytest.mark.parametrize(
    "chunk",
    [
        {"candidates": "nope"},
        {"candidates": [{"content": {"parts": [{"text": 5}]}}]},
        {"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}]}}]},
        {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "willContinue": True}}]}}, {"foo": 1}]},
    ],
)
def test_malformed_chunks_are_protocol_errors_with_closing_events(chunk):
    raw = f"data: {json.dumps(chunk)}\n\n".encode()
    _, events, error = decode("gemini", [raw])  # decode() runs check_stream on what came out
    assert isinstance(error, (StreamProtocolError, IncompleteStreamError))


# -- generated streams -----------------------------------------------------------------------------


def generated(seed: int) -> tuple[bytes, dict]:
    """A random valid stream from the documented wire format, and what it must decode to."""
    rnd = random.Random(seed)
    chunks: list[dict] = []
    want: dict = {"text": "", "thought": "", "calls": [], "signatures": []}
    parts_out: list[dict] = []
    if rnd.random() < 0.5:
        for _ in range(rnd.randint(1, 3)):
            piece = rnd.choice(["Let me think. ", "Hmm, ", "Step two. "])
            parts_out.append({"text": piece, "thought": True})
            want["thought"] += piece
    for _ in range(rnd.randint(0, 4)):
        piece = rnd.choice(["Hello", " world", ", ", "naïve ", "日本 "])
        part = {"text": piece}
        if rnd.random() < 0.2:
            part["thoughtSignature"] = base64.b64encode(rnd.randbytes(12)).decode()
            want["signatures"].append(part["thoughtSignature"])
        parts_out.append(part)
        want["text"] += piece
    streamed = rnd.random() < 0.5
    for n in range(rnd.randint(0, 3)):
        args = {"city": rnd.choice(["Paris", "Köln"]), "days": rnd.randint(1, 9), "flags": [True, None]}
        want["calls"].append(("weather", args))
        if not streamed:
            part = {"functionCall": {"name": "weather", "args": args}}
            if n == 0:
                part["thoughtSignature"] = base64.b64encode(rnd.randbytes(16)).decode()
                want["signatures"].append(part["thoughtSignature"])
            parts_out.append(part)
            continue
        parts_out.append({"functionCall": {"name": "weather", "willContinue": True}})
        city = args["city"]
        cut = rnd.randint(0, len(city))
        pieces = [
            {"jsonPath": "$.city", "stringValue": city[:cut], "willContinue": True},
            {"jsonPath": "$.city", "stringValue": city[cut:]},
            {"jsonPath": "$.days", "numberValue": args["days"]},
            {"jsonPath": "$.flags[0]", "boolValue": True},
            {"jsonPath": "$.flags[1]", "nullValue": None},
        ]
        for piece in pieces:
            parts_out.append({"functionCall": {"partialArgs": [piece], "willContinue": True}})
        if rnd.random() < 0.7:
            parts_out.append({"functionCall": {}})
    if rnd.random() < 0.5:
        signature = base64.b64encode(rnd.randbytes(8)).decode()
        parts_out.append({"text": "", "thoughtSignature": signature})
        want["signatures"].append(signature)
    per = rnd.randint(1, 3)
    for i in range(0, max(1, len(parts_out)), per):
        chunks.append({"candidates": [{"content": {"role": "model", "parts": parts_out[i : i + per]}, "index": 0}]})
    prompt = rnd.randint(5, 50)
    for i, chunk in enumerate(chunks):
        usage = {"promptTokenCount": prompt + rnd.randint(-3, 3), "candidatesTokenCount": i + 1}
        if rnd.random() < 0.3:
            del usage["candidatesTokenCount"]  # fields vanish mid-stream
        chunk["usageMetadata"] = usage
    reason = rnd.choice(["STOP", "STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "MALFORMED_FUNCTION_CALL"])
    chunks[-1]["candidates"][0]["finishReason"] = reason
    chunks[-1]["usageMetadata"] = {"promptTokenCount": prompt, "candidatesTokenCount": 40, "thoughtsTokenCount": 7}
    want.update(reason=reason, usage=(prompt, 47, 7))
    sep = rnd.choice(["\n\n", "\r\n\r\n"])
    return "".join(f"data: {json.dumps(c, ensure_ascii=rnd.random() < 0.5)}{sep}" for c in chunks).encode(), want


@pytest.mark.parametrize("seed", range(60))
def test_generated_streams_decode_to_what_they_describe(seed):
    raw, want = generated(seed)
    for split in (None, seed):
        msg, events, error = decode("gemini", [raw], split_seed=split)
        assert error is None
        assert "".join(b.text for b in msg.content if b.type == "text") == want["text"]
        assert "".join(b.thinking for b in msg.content if b.type == "thinking") == want["thought"]
        assert [(b.name, json.loads(b.input)) for b in msg.content if b.type == "tool_call"] == want["calls"]
        assert [b.thought_signature for b in msg.content if getattr(b, "thought_signature", None)] == want["signatures"]
        (end,) = [e for e in events if e.type == "MODEL_CALL_END"]
        assert (end.input_tokens, end.output_tokens, end.reasoning_tokens) == want["usage"]
        assert end.provider_stop_reason == want["reason"]
        # the SDK reads the same chunks the same way
        sdk = sdk_view(raw)
        assert sdk["text"] == want["text"] and [sig(s) for s in want["signatures"]] == sdk["signatures"]


@pytest.mark.parametrize("seed", range(20))
def test_generated_streams_broken_anywhere_stay_valid_event_streams(seed):
    raw, _ = generated(seed)
    rnd = random.Random(seed)
    cut = rnd.randint(0, len(raw))
    broken = rnd.choice(
        [
            raw[:cut],  # cut off
            raw[:cut] + b'\n\ndata: {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}\n\n',
            raw[:cut] + b"\n\ndata: {not json\n\n",
        ]
    )
    msg, events, error = decode("gemini", [broken])  # check_stream runs inside decode()
    if broken != raw:
        assert error is None or isinstance(error, ProviderError)


# -- end to end ---------------------------------------------------------------------------------


def weather(city: str) -> str:
    """Weather for a city."""
    return f"{city}: sunny"


def local_time(city: str) -> str:
    """Local time in a city."""
    return f"{city}: noon"


@pytest.mark.parametrize("preset", ["google", "vertex"])
def test_the_agent_runs_parallel_tools_on_gemini(server, preset, monkeypatch):
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "proj")
    monkeypatch.setenv("GOOGLE_ACCESS_TOKEN", "ya29.test")
    first = fake_body(
        "gemini",
        ("think", "Two tools."),
        ("tool", "fc_1", "weather", '{"city": "Paris"}'),
        ("tool", "local_1", "local_time", '{"city": "Paris"}'),
    )

    def check(request):
        contents = request["json"]["contents"]
        model_turn = contents[1]["parts"]
        assert model_turn[0] == {"text": "Two tools.", "thought": True}
        assert model_turn[1]["thoughtSignature"] == "sig-Two tool"  # kept with its call
        assert model_turn[1]["functionCall"]["id"] == "fc_1" and "id" not in model_turn[2]["functionCall"]
        responses = [p["functionResponse"] for p in contents[2]["parts"]]
        assert responses == [
            {"name": "weather", "response": {"result": "Paris: sunny"}, "id": "fc_1"},
            {"name": "local_time", "response": {"result": "Paris: noon"}},
        ]
        auth = (
            request["headers"].get("x-goog-api-key") if preset == "google" else request["headers"].get("authorization")
        )
        assert auth in ("g-key", "Bearer ya29.test")

    server.script(sse_reply(first), sse_reply(fake_body("gemini", ("text", "Sunny, noon.")), check=check))
    model = load_model(
        f"{preset}:gemini-test",
        api_key="g-key" if preset == "google" else None,
        base_url=server.url,
        retry=RetryPolicy(max_retries=0),
    )
    agent = Agent("Buddy", model, tools=[weather, local_time])

    async def run():
        return [e async for e in agent.reply_stream(UserMsg("user", "Weather and time?"))]

    events = asyncio.run(run())
    E.check_stream(events)
    reply = agent.context[-1]
    assert reply.get_text_content() == "Sunny, noon." and reply.finished_reason == "completed"
    paths = [r["path"] for r in server.requests]
    if preset == "google":
        assert paths[0] == "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
    else:
        assert (
            paths[0]
            == "/v1/projects/proj/locations/global/publishers/google/models/gemini-test:streamGenerateContent?alt=sse"
        )


def test_structured_output_is_native_on_gemini(server):
    from pydantic import BaseModel

    class City(BaseModel):
        name: str

    server.script(sse_reply(fake_body("gemini", ("text", '{"name": "Paris"}'))))
    agent = Agent("Buddy", load_model("google:gemini-test", api_key="k", base_url=server.url))
    reply = asyncio.run(agent.reply(UserMsg("user", "A city?"), structured_model=City))
    assert reply.structured_output == City(name="Paris") and reply.structured_output.name == "Paris"
    assert server.requests[0]["json"]["generationConfig"]["responseMimeType"] == "application/json"


def test_a_gemini_cassette_records_replays_and_shows(tmp_path, monkeypatch):
    from modelwire.cassettes import Cassette, use_cassette
    from modelwire.cassettes._show import summarize
    from modelwire.testing import ProviderServer

    secret = "AIza-sentinel-0123456789"
    monkeypatch.setenv("GEMINI_API_KEY", secret)
    path = tmp_path / "gemini.json"

    async def call(url):
        model = load_model("google:gemini-test", base_url=url)
        return [e async for e in model.stream([UserMsg("u", "Hi")], reply_id="r")]

    with ProviderServer() as server:
        server.script(sse_reply(fake_body("gemini", ("think", "Greet."), ("text", "Hello there"))))
        with use_cassette(path, "once"):
            recorded = asyncio.run(call(server.url))
        url = server.url
    assert secret not in path.read_text()
    with use_cassette(path) as session:
        replayed = asyncio.run(call(url))
    assert session.replayed == 1
    assert [(e.type, getattr(e, "delta", None)) for e in replayed] == [
        (e.type, getattr(e, "delta", None)) for e in recorded
    ]
    shown = "\n".join(summarize(Cassette.load(path)))
    assert "TEXT_BLOCK_DELTA x2" in shown and "stop: end_turn (STOP)" in shown


def test_geminis_own_tools_go_beside_the_functions():
    payload = get_formatter("gemini")().format(
        [UserMsg("u", "search")], [{"googleSearch": {}}, {"name": "f"}, {"codeExecution": {}}]
    )
    gemini_request(payload)
    assert payload["tools"] == [
        {"functionDeclarations": [{"name": "f", "parametersJsonSchema": {"type": "object", "properties": {}}}]},
        {"googleSearch": {}},
        {"codeExecution": {}},
    ]


def test_a_string_argument_in_many_pieces_is_joined_in_order():
    """Vertex streams a long string argument in many ``partialArgs`` pieces; they are
    joined into it (the arguments keep their order), and another path ends the string."""
    text = "".join(chr(0x61 + i % 26) for i in range(5000))
    pieces = [
        {"jsonPath": "$.body", "stringValue": text[i : i + 7], "willContinue": True} for i in range(0, len(text), 7)
    ]
    pieces += [
        {"jsonPath": "$.body", "stringValue": "!"},
        {"jsonPath": "$.title", "stringValue": "t"},
        {"jsonPath": "$.tags[0]", "stringValue": "a", "willContinue": True},
        {"jsonPath": "$.tags[0]", "stringValue": "b", "willContinue": True},
        {"jsonPath": "$.count", "numberValue": 2},
    ]
    parts = [{"functionCall": {"name": "write", "willContinue": True}}]
    parts += [{"functionCall": {"partialArgs": [piece], "willContinue": True}} for piece in pieces]
    parts.append({"functionCall": {}})
    chunks = [{"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]} for part in parts]
    chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    raw = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode()
    msg, _, error = decode("gemini", [raw])
    assert error is None
    (call,) = [b for b in msg.content if b.type == "tool_call"]
    assert call.input == json.dumps({"body": text + "!", "title": "t", "tags": ["ab"], "count": 2}, ensure_ascii=False)
