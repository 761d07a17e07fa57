"""``stream=False``: the whole answer at once, on every protocol, decoded into the same events
and the same message as the stream would give.

- Twins: every recorded stream in ../shared/recorded-streams (Anthropic, OpenAI Chat and
  Responses) next to the whole answer the official SDK's accumulator makes of the same bytes
  (the object a non-streamed request returns): both decode to the same message.
- Through a model on a local server: the request goes to the protocol's whole-answer endpoint
  (or says ``"stream": false``), is valid per the SDK's non-streaming request type, and the
  answer (valid per the SDK's response type) folds into the same message as the streamed one;
  errors, retries, the deadline and cassettes work as on a stream.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import warnings

import pytest
import sdk_params

from decoding import decode, decode_whole, ends
from modelwire.errors import RateLimitError, TimeoutError as MwTimeoutError
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy, Timeouts
from modelwire.testing import ProviderServer, error_reply
from modelwire.testing.server import Reply
from modelwire.testing.sse import body as sse_body

from paths import HAVE_SHARED

# -- twins: a recorded stream and the whole answer made of it -------------------------------


def _twins():
    if not HAVE_SHARED:
        return []
    import sdk_oracle as oracle
    from test_adapters_recorded import ANTHROPIC, CHAT, CHAT_ERRORS, RESPONSES

    return (
        [("anthropic", p, oracle.anthropic_final) for p in ANTHROPIC]
        + [("openai-chat", p, oracle.chat_final) for p in CHAT if p.name not in CHAT_ERRORS]
        + [
            ("openai-responses", p, oracle.responses_final)
            for p in RESPONSES
            if not ("starting_after" in p.name and p.name.endswith(".1.sse"))
        ]
    )


# What the SDK's accumulator makes differently from the stream (so not what a whole answer
# would hold): the block kind it changes, or "usage".
SDK_DIFFERS = {
    "incomplete_partial_json_response.txt": ("tool_call",),  # it parses the cut-off input as partial JSON
    # it drops the compaction's content, and usage.iterations (what compacting cost)
    "test_anthropic_compaction_usage_with_cache_streaming.0.sse": ("data", "usage"),
    "test_openai_moderation_stream.0.sse": ("usage",),  # a last chunk with "usage": null overwrites the usage
}


def _blocks(msg, leave_out: tuple[str, ...] = ()):
    """The blocks as JSON, with the ids modelwire minted (``id<n>``) made comparable."""
    out = json.loads(re.sub(r'"id": "id\d+"', '"id": "minted"', json.dumps([b.to_dict() for b in msg.content])))
    return [b for b in out if b["type"] not in leave_out]


@pytest.mark.skipif(not HAVE_SHARED, reason="../shared/recorded-streams is not present")
@pytest.mark.parametrize("protocol,path,final", _twins(), ids=[f"{t[0]}:{t[1].name}" for t in _twins()])
def test_a_whole_answer_decodes_to_the_same_message_as_its_stream(protocol, path, final):
    body = path.read_bytes()
    streamed, events, error = decode(protocol, [body])
    assert error is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = final(body).model_dump(mode="json", exclude_unset=True)
    answered, whole_events = decode_whole(protocol, whole)
    differs = SDK_DIFFERS.get(path.name, ())
    assert _blocks(answered, differs) == _blocks(streamed, differs)
    (end,), (whole_end,) = ends(events), ends(whole_events)
    assert (whole_end.finished_reason, whole_end.stop_reason, whole_end.provider_stop_reason) == (
        end.finished_reason,
        end.stop_reason,
        end.provider_stop_reason,
    )
    if "usage" not in differs:
        assert (whole_end.input_tokens, whole_end.output_tokens, whole_end.cache_input_tokens) == (
            end.input_tokens,
            end.output_tokens,
            end.cache_input_tokens,
        )


# -- through a model, on a local server --------------------------------------------------------

_ARGS = {"city": "Paris"}

# One answer per protocol, as its provider sends it without streaming: a text, then a call.
WHOLE = {
    "anthropic": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "content": [
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": _ARGS},
        ],
        "usage": {"input_tokens": 10, "output_tokens": 5},
    },
    "openai-chat": {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "Looking.",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": json.dumps(_ARGS)},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    },
    "openai-responses": {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "m",
        "status": "completed",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Looking.", "annotations": []}],
            },
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": json.dumps(_ARGS),
                "status": "completed",
            },
        ],
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "total_tokens": 15,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    },
    "gemini": {
        "candidates": [
            {
                "index": 0,
                "finishReason": "STOP",
                "content": {
                    "role": "model",
                    "parts": [{"text": "Looking."}, {"functionCall": {"name": "get_weather", "args": _ARGS}}],
                },
            }
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "m",
    },
    "bedrock-converse": {
        "output": {
            "message": {
                "role": "assistant",
                "content": [
                    {"text": "Looking."},
                    {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": _ARGS}},
                ],
            }
        },
        "stopReason": "tool_use",
        "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
        "metrics": {"latencyMs": 12},
    },
    "ollama": {
        "model": "m",
        "created_at": "2026-12-04T00:00:00Z",
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 10,
        "eval_count": 5,
        "message": {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": _ARGS}}],
        },
    },
}


def _check_answer_type(protocol: str, answer: dict) -> None:
    """The whole answer above is what the SDK's own response type reads."""
    if protocol == "anthropic":
        from anthropic.types import Message

        Message.model_validate(answer)
    elif protocol == "openai-chat":
        from openai.types.chat import ChatCompletion

        ChatCompletion.model_validate(answer)
    elif protocol == "openai-responses":
        from openai.types.responses import Response

        Response.model_validate(answer)
    elif protocol == "gemini":
        from google.genai import types

        types.GenerateContentResponse.model_validate_json(json.dumps(answer))
    elif protocol == "bedrock-converse":
        import botocore.session
        from botocore.validate import ParamValidator

        shape = botocore.session.Session().get_service_model("bedrock-runtime").operation_model("Converse").output_shape
        report = ParamValidator().validate(answer, shape)
        assert not report.has_errors(), report.generate_report()
    else:
        from ollama._types import ChatResponse

        ChatResponse.model_validate(answer)


# (preset, model, the protocol, the whole-answer path it must use)
PRESETS = [
    ("anthropic", "claude-sonnet-4-5", "anthropic", "/v1/messages"),
    ("openai", "gpt-4.1", "openai-chat", "/v1/chat/completions"),
    ("openai-responses", "gpt-4.1", "openai-responses", "/v1/responses"),
    ("google", "gemini-2.5-flash", "gemini", "/v1beta/models/gemini-2.5-flash:generateContent"),
    ("bedrock", "amazon.nova-pro-v1:0", "bedrock-converse", "/model/amazon.nova-pro-v1%3A0/converse"),
    ("ollama", "qwen3:8b", "ollama", "/api/chat"),
    (
        "bedrock-anthropic",
        "anthropic.claude-sonnet-4-5-v1:0",
        "anthropic",
        "/model/anthropic.claude-sonnet-4-5-v1%3A0/invoke",
    ),
]

KEYS = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "google": "GEMINI_API_KEY",
    "bedrock": "AWS_BEARER_TOKEN_BEDROCK",
    "bedrock-anthropic": "AWS_BEARER_TOKEN_BEDROCK",
}


def _model(preset, name, server, monkeypatch, **options):
    if preset in KEYS:
        monkeypatch.setenv(KEYS[preset], "sk-test")
    base = server.url + ("/v1" if preset in ("openai", "openai-responses") else "")
    return load_model(f"{preset}:{name}", base_url=base, **options)


def _answer(protocol: str, streamed_path: str):
    """The server: the whole answer where one is asked for, else the stream of the same blocks."""

    def respond(request):
        data = request["json"] or {}
        streamed = data.get("stream", True) is not False and not request["path"].split("?")[0].endswith(
            (":generateContent", "/converse", "/invoke")
        )
        if not streamed:
            return Reply(body=json.dumps(WHOLE[protocol]).encode(), headers={"content-type": "application/json"})
        from modelwire.protocols import get_protocol

        stream = sse_body(
            protocol,
            ("text", "Looking."),
            ("tool", _call_id(protocol), "get_weather", json.dumps(_ARGS)),
            usage=(10, 5),
        )
        return Reply(body=stream, headers={"content-type": get_protocol(protocol).content_type})

    return respond


def _call_id(protocol):
    return {
        "anthropic": "toolu_1",
        "openai-chat": "call_1",
        "openai-responses": "call_1",
        "bedrock-converse": "tooluse_1",
    }.get(protocol, "call_1")


def _calls(msg):
    return [(b.name, json.loads(b.input)) for b in msg.content if b.type == "tool_call"]


@pytest.mark.parametrize("preset,name,protocol,path", PRESETS, ids=[p[0] for p in PRESETS])
def test_stream_false_sends_the_whole_answer_request_and_folds_the_same_message(
    preset, name, protocol, path, monkeypatch
):
    _check_answer_type(protocol, WHOLE[protocol])
    tools = [
        {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        }
    ]
    with ProviderServer() as server:
        server.respond = _answer(protocol, path)
        model = _model(preset, name, server, monkeypatch)
        whole = asyncio.run(model.complete([UserMsg("u", "Weather in Paris?")], tools=tools, options={"stream": False}))
        sent = server.requests[-1]
        if (
            preset == "bedrock-anthropic"
        ):  # its stream is AWS event-stream framing: the whole answer is what is checked here
            streamed, first = whole, {"path": "", "json": {}}
        else:
            streamed = asyncio.run(model.complete([UserMsg("u", "Weather in Paris?")], tools=tools))
            first = server.requests[-1]
    assert sent["path"].split("?")[0] == path, sent["path"]
    assert "alt=sse" not in sent["path"] and sent["headers"].get("accept") == "application/json"
    body = sent["json"]
    if (
        "stream" in body
        or protocol in ("openai-chat", "openai-responses", "anthropic", "ollama")
        and preset != "bedrock-anthropic"
    ):
        assert body.pop("stream") is False
    assert "stream_options" not in body
    if preset != "bedrock-anthropic":
        _check_request(protocol, body)
    assert first["path"] != sent["path"] or first["json"].get("stream") is True
    assert (
        whole.get_text_content() == streamed.get_text_content().strip() == "Looking."
    )  # the fake stream sends words with a space after each
    assert _calls(whole) == _calls(streamed) == [("get_weather", _ARGS)]
    assert (
        (whole.usage.input_tokens, whole.usage.output_tokens)
        == (streamed.usage.input_tokens, streamed.usage.output_tokens)
        == (10, 5)
    )
    assert (
        whole.error is None and whole.metadata.get("finished_reason", whole.finished_reason) == streamed.finished_reason
    )


def _check_request(protocol: str, body: dict) -> None:
    """The non-streaming request type of the SDK (Bedrock: botocore's Converse input)."""
    if protocol == "bedrock-converse":
        import botocore.session
        from botocore.validate import ParamValidator

        shape = botocore.session.Session().get_service_model("bedrock-runtime").operation_model("Converse").input_shape
        report = ParamValidator().validate({"modelId": "m", **body}, shape)
        assert not report.has_errors(), report.generate_report()
    elif protocol in ("anthropic", "openai-chat", "openai-responses"):
        body = {**body, "stream": False}
        {
            "anthropic": sdk_params.anthropic_request,
            "openai-chat": sdk_params.chat_request,
            "openai-responses": sdk_params.responses_request,
        }[protocol](body)
    elif protocol == "gemini":
        sdk_params.gemini_request(body)
    else:
        sdk_params.ollama_request({**body, "stream": False})


def test_stream_false_from_a_profile_and_per_model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with ProviderServer() as server:
        server.respond = _answer("openai-chat", "/v1/chat/completions")
        (tmp_path / "modelwire.toml").write_text(
            f'[profiles.whole]\nmodel = "openai:gpt-4.1"\nbase_url = "{server.url}/v1"\nstream = false\n'
        )
        for model in (load_model("whole"), load_model("openai:gpt-4.1", base_url=server.url + "/v1", stream=False)):
            msg = asyncio.run(model.complete([UserMsg("u", "hi")]))
            assert server.requests[-1]["json"]["stream"] is False and msg.get_text_content() == "Looking."
        # A call can still ask for the stream.
        asyncio.run(load_model("whole").complete([UserMsg("u", "hi")], options={"stream": True}))
        assert server.requests[-1]["json"]["stream"] is True


def test_a_whole_answer_is_retried_after_a_429_and_its_error_is_typed(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with ProviderServer() as server:
        answers = iter(
            [
                error_reply(
                    429,
                    {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
                    headers={"retry-after": "0"},
                )
            ]
        )
        server.respond = lambda request: next(answers, None) or _answer("anthropic", "/v1/messages")(request)
        model = load_model(
            "anthropic:claude-sonnet-4-5", base_url=server.url, retry=RetryPolicy(max_retries=1, initial_delay=0.0)
        )
        msg = asyncio.run(model.complete([UserMsg("u", "hi")], options={"stream": False}))
        assert len(server.requests) == 2 and all(r["json"]["stream"] is False for r in server.requests)
        assert _calls(msg) == [("get_weather", _ARGS)]
        server.respond = lambda request: error_reply(
            429,
            {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
            headers={"retry-after": "0"},
        )
        with pytest.raises(RateLimitError, match="slow down"):
            asyncio.run(
                load_model(
                    "anthropic:claude-sonnet-4-5", base_url=server.url, retry=RetryPolicy(max_retries=0)
                ).complete([UserMsg("u", "hi")], options={"stream": False})
            )


def test_a_whole_answer_waits_within_the_total_not_the_first_byte_timeout(monkeypatch):
    """A whole answer's headers come only when it is written: the first-byte timeout (meant
    for the start of a stream) does not cut it; the call's total does. The margins only
    grow on a loaded machine: the patient call's answer comes well after its first-byte
    timeout and well within its total, the hasty calls' answers never come."""
    import threading
    import time

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    never = threading.Event()  # set when the test is over: the hasty calls get no answer before

    def slow(request):
        if request["headers"].get("x-hasty"):
            never.wait(60)
        else:
            time.sleep(1.0)  # five times the first-byte timeout
        return _answer("openai-chat", "")(request)

    with ProviderServer() as server:
        server.respond = slow
        try:
            _whole_and_streamed_timeouts(server)
        finally:
            never.set()


def _whole_and_streamed_timeouts(server) -> None:
    patient = load_model(
        "openai:gpt-4.1",
        base_url=server.url + "/v1",
        timeouts=Timeouts(first_byte=0.2, total=60),
        retry=RetryPolicy(max_retries=0),
    )
    msg = asyncio.run(patient.complete([UserMsg("u", "hi")], options={"stream": False}))
    assert msg.get_text_content() == "Looking."
    hasty = load_model(
        "openai:gpt-4.1",
        base_url=server.url + "/v1",
        timeouts=Timeouts(first_byte=0.2, total=0.5),
        retry=RetryPolicy(max_retries=0),
        extra_headers={"x-hasty": "1"},
    )
    with pytest.raises(MwTimeoutError, match="total"):
        asyncio.run(hasty.complete([UserMsg("u", "hi")], options={"stream": False}))
    streaming = load_model(
        "openai:gpt-4.1",
        base_url=server.url + "/v1",
        timeouts=Timeouts(first_byte=0.2, total=60),
        retry=RetryPolicy(max_retries=0),
        extra_headers={"x-hasty": "1"},
    )
    with pytest.raises(MwTimeoutError, match="first_byte"):
        asyncio.run(streaming.complete([UserMsg("u", "hi")]))  # a stream's first byte is bounded as before


def test_a_cassette_records_and_replays_a_whole_answer(tmp_path, monkeypatch):
    from modelwire.cassettes import use_cassette

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    path = tmp_path / "whole.json"
    with ProviderServer() as server:
        server.respond = _answer("openai-chat", "")
        model = load_model("openai:gpt-4.1", base_url=server.url + "/v1")
        with use_cassette(path, "once"):
            recorded = asyncio.run(model.complete([UserMsg("u", "hi")], options={"stream": False}))
        seen = len(server.requests)
    kept = json.loads(path.read_text())
    assert "chat.completion" in json.dumps(kept) and "Looking." in json.dumps(kept)
    with use_cassette(path, "none"):
        replayed = asyncio.run(model.complete([UserMsg("u", "hi")], options={"stream": False}))
    assert seen == 1 and replayed.get_text_content() == recorded.get_text_content() == "Looking."
    assert _calls(replayed) == _calls(recorded)


def test_an_agent_runs_a_tool_round_trip_on_whole_answers(monkeypatch):
    from modelwire.agent import Agent

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def respond(request):
        assert request["json"]["stream"] is False
        if request["json"]["messages"][-1]["role"] == "tool":
            answer = {
                **WHOLE["openai-chat"],
                "choices": [
                    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "It is sunny."}}
                ],
            }
            return Reply(body=json.dumps(answer).encode(), headers={"content-type": "application/json"})
        return Reply(body=json.dumps(WHOLE["openai-chat"]).encode(), headers={"content-type": "application/json"})

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"{city}: sunny"

    with ProviderServer() as server:
        server.respond = respond
        agent = Agent(
            "bot", load_model("openai:gpt-4.1", base_url=server.url + "/v1", stream=False), tools=[get_weather]
        )
        reply = asyncio.run(agent.reply(UserMsg("u", "Weather in Paris?")))
    assert reply.error is None and reply.get_text_content().endswith("It is sunny.")
    assert [b.type for b in reply.content if b.type in ("tool_call", "tool_result")] == ["tool_call", "tool_result"]
    assert len(server.requests) == 2


def test_stream_false_refuses_a_background_response():
    from modelwire.errors import UnsupportedOptionError

    model = load_model("openai-responses:gpt-4.1", api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(UnsupportedOptionError, match="background"):
        model.build_request([UserMsg("u", "hi")], options={"stream": False, "background": True})


def test_gemini_and_bedrock_whole_urls_keep_their_query():
    from modelwire.protocols import get_protocol
    from modelwire.protocols.gemini import PROTOCOL as GEMINI

    preset = GEMINI.presets[0]
    assert (
        GEMINI.whole_url("https://h/v1beta/models/m:streamGenerateContent?alt=sse", preset)
        == "https://h/v1beta/models/m:generateContent"
    )
    assert (
        GEMINI.whole_url("https://h/v1beta/models/m:streamGenerateContent?alt=sse&key=k", preset)
        == "https://h/v1beta/models/m:generateContent?key=k"
    )
    bedrock = get_protocol("bedrock-converse")
    assert bedrock.whole_url("https://b/model/x/converse-stream", bedrock.presets[0]) == "https://b/model/x/converse"
    assert base64  # the module's imports are used by the tests above


@pytest.mark.parametrize("protocol", ["anthropic", "openai-chat", "openai-responses", "ollama"])
def test_a_protocols_fake_answer_is_what_its_sdk_reads(protocol):
    """The whole answers the test server gives (``fake_answer``, which the conformance suite
    folds against the streams) validate as the official SDKs' own answer types. (Gemini's
    fake signatures are not base64, which google-genai's type requires; Bedrock's SDK checks
    requests only.)"""
    from anthropic.types import Message
    from ollama import ChatResponse
    from openai.types.chat import ChatCompletion
    from openai.types.responses import Response

    from modelwire.protocols import get_protocol

    blocks = (("think", "Hm."), ("text", "Hello!"), ("tool", "call_1", "f", '{"a": 1}'))
    sdk_type = {"anthropic": Message, "openai-chat": ChatCompletion, "openai-responses": Response}.get(
        protocol, ChatResponse
    )
    answer = sdk_type.model_validate(get_protocol(protocol).fake_answer(*blocks))
    assert "Hello!" in answer.model_dump_json()
