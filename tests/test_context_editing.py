"""Claude's context editing: the ``clear_tool_uses`` option sent as a
``clear_tool_uses_20250919`` edit with its beta (checked against the anthropic SDK's beta
request type), refused where the provider has none, and what the server cleared kept in the
call's metadata (the SDK's BetaContextManagementResponse), streamed or whole."""

from __future__ import annotations

import asyncio

import pytest

import sdk_params
from modelwire.adapters import encode_sse
from modelwire.errors import ConfigError, UnsupportedOptionError
from modelwire.message import UserMsg
from modelwire.testing import json_reply, sse_reply
from modelwire.testing import sse as fake

CLEARED = {
    "applied_edits": [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 4, "cleared_input_tokens": 52_000}]
}


def cleared_stream() -> bytes:
    """A Messages stream whose message_delta says what context editing cleared (the anthropic
    SDK's BetaRawMessageDeltaEvent.context_management)."""
    from anthropic.types.beta import BetaRawMessageDeltaEvent

    message = {"id": "msg_e", "type": "message", "role": "assistant", "model": "claude-test", "content": []}
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 3},
        "context_management": CLEARED,
    }
    BetaRawMessageDeltaEvent.model_validate(delta)
    started = {**message, "usage": {"input_tokens": 9, "output_tokens": 1}}
    text = {"type": "text_delta", "text": "Done."}
    events = [
        ("message_start", {"type": "message_start", "message": started}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": text}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", delta),
        ("message_stop", {"type": "message_stop"}),
    ]
    return encode_sse(events)


def test_claude_takes_clear_tool_uses_as_a_context_management_edit_with_its_beta(server):
    server.script(sse_reply(fake.body("anthropic", ("text", "hi"))))
    option = {
        "trigger": {"tool_uses": 30},
        "keep": 5,
        "clear_at_least": 20_000,
        "exclude_tools": ["memory"],
        "clear_tool_inputs": ["read_file"],
    }
    model = server.model("anthropic", "claude-sonnet-4-6", clear_tool_uses=option, compaction=True)
    asyncio.run(model.complete([UserMsg("user", "hi")]))
    sent = server.requests[0]
    assert sent["json"]["context_management"]["edits"] == [
        {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "tool_uses", "value": 30},
            "keep": {"type": "tool_uses", "value": 5},
            "clear_at_least": {"type": "input_tokens", "value": 20_000},
            "exclude_tools": ["memory"],
            "clear_tool_inputs": ["read_file"],
        },
        {"type": "compact_20260112"},
    ]
    betas = sent["headers"]["anthropic-beta"].split(",")
    assert "context-management-2025-06-27" in betas and "compact-2026-01-12" in betas
    body = dict(sent["json"])
    assert body.pop("stream") is True
    sdk_params.anthropic_beta_request(body)


def test_clear_tool_uses_true_is_the_edit_at_the_servers_defaults(server):
    server.script(sse_reply(fake.body("anthropic", ("text", "hi"))))
    model = server.model("anthropic", "claude-opus-5-5", clear_tool_uses=True)
    asyncio.run(model.complete([UserMsg("user", "hi")]))
    body = server.requests[0]["json"]
    assert body["context_management"] == {"edits": [{"type": "clear_tool_uses_20250919"}]}
    body.pop("stream")
    sdk_params.anthropic_beta_request(body)


def test_an_input_token_trigger_is_a_number(server):
    server.script(sse_reply(fake.body("anthropic", ("text", "hi"))))
    model = server.model("anthropic", "claude-sonnet-4-6", clear_tool_uses={"trigger": 100_000})
    asyncio.run(model.complete([UserMsg("user", "hi")]))
    (edit,) = server.requests[0]["json"]["context_management"]["edits"]
    assert edit["trigger"] == {"type": "input_tokens", "value": 100_000}


def test_what_the_server_cleared_is_kept_in_the_calls_metadata_streamed_or_whole(server):
    from anthropic.types.beta import BetaMessage

    server.script(sse_reply(cleared_stream()))
    model = server.model("anthropic", "claude-sonnet-4-6", clear_tool_uses=True)
    ends = []

    async def run() -> None:
        async for ev in model.stream([UserMsg("user", "go")]):
            if ev.type == "MODEL_CALL_END":
                ends.append(ev)

    asyncio.run(run())
    assert ends[0].metadata["context_management"] == CLEARED

    whole = {
        "id": "msg_w",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": "Done."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 9, "output_tokens": 3},
        "context_management": CLEARED,
    }
    BetaMessage.model_validate(whole)
    server.script(json_reply(whole))
    model = server.model("anthropic", "claude-sonnet-4-6", clear_tool_uses=True, stream=False)
    ends.clear()
    asyncio.run(run())
    assert ends[0].metadata["context_management"] == CLEARED


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("openai:gpt-4.1", "does not clear tool uses"),
        ("openai-responses:gpt-5.5", "does not clear tool uses"),
        ("vertex-anthropic:claude-sonnet-4-6", "not known to take the context-editing beta"),
    ],
)
def test_clear_tool_uses_is_refused_where_the_provider_does_not_take_it(spec, words):
    from modelwire.models import load_model

    model = load_model(spec, api_key="k", base_url="http://127.0.0.1:9", clear_tool_uses=True, capability_lookup=False)
    with pytest.raises(UnsupportedOptionError) as err:
        model.build_request([UserMsg("user", "hi")], None)
    assert words in str(err.value) and "clear_tool_uses" in str(err.value)


@pytest.mark.parametrize(
    "value",
    [
        5,
        "yes",
        {"keep": -1},
        {"trigger": {"turns": 3}},
        {"exclude_tools": "memory"},
        {"clear_tool_inputs": 1},
        {"when": 1},
    ],
)
def test_a_wrong_clear_tool_uses_value_is_a_config_error(value):
    from modelwire.models import ModelOptions

    with pytest.raises(ConfigError):
        ModelOptions.from_dict({"clear_tool_uses": value})
