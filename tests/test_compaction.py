"""The providers' own compaction of a long conversation: the ``compaction`` option sent in
each provider's shape (checked against the SDKs' request types), the compaction block
decoded from the stream, sent back where it may go and its summary elsewhere, and an agent
that goes on after the provider paused to compact."""

from __future__ import annotations

import asyncio
import base64
import json

import pytest

import sdk_params
from modelwire.adapters import encode_sse
from modelwire.agent import Agent
from modelwire.errors import ConfigError, UnsupportedOptionError
from modelwire.formatters import COMPACTION_PREAMBLE
from modelwire.message import AssistantMsg, Msg, SystemMsg, UserMsg
from modelwire.testing import sse_reply
from modelwire.testing import sse as fake
from paths import PA

SUMMARY = "The user asked for the weather in Paris; it is sunny."


def anthropic_compacting_stream(*, stop: str = "compaction") -> bytes:
    """A Messages stream that opens with a compaction block (its summary in two
    ``compaction_delta`` pieces, then its encrypted state), as the anthropic SDK's beta
    types describe it: BetaCompactionBlock, BetaCompactionContentBlockDelta."""
    ev: list[tuple[str, dict]] = []

    def add(kind: str, **data) -> None:
        ev.append((kind, {"type": kind, **data}))

    message = {"id": "msg_c", "type": "message", "role": "assistant", "model": "claude-test", "content": []}
    add(
        "message_start", message={**message, "stop_reason": None, "usage": {"input_tokens": 60_000, "output_tokens": 1}}
    )
    add("content_block_start", index=0, content_block={"type": "compaction", "content": None})
    for piece in (SUMMARY[:20], SUMMARY[20:]):
        add("content_block_delta", index=0, delta={"type": "compaction_delta", "content": piece})
    add("content_block_delta", index=0, delta={"type": "compaction_delta", "encrypted_content": "enc-state"})
    add("content_block_stop", index=0)
    if stop != "compaction":
        add("content_block_start", index=1, content_block={"type": "text", "text": ""})
        add("content_block_delta", index=1, delta={"type": "text_delta", "text": "Still sunny."})
        add("content_block_stop", index=1)
    add("message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage={"output_tokens": 40})
    add("message_stop")
    return encode_sse(ev)


def responses_compacting_stream(text: str = "Done.") -> bytes:
    """A Responses stream whose output holds a compaction item (the openai SDK's
    ResponseCompactionItem) before the answer."""
    ev: list[tuple[str, dict]] = []
    seq = iter(range(100))

    def add(kind: str, **data) -> None:
        ev.append((kind, {"type": kind, **data, "sequence_number": next(seq)}))

    base = {"id": "resp_c", "object": "response", "model": "gpt-test", "output": [], "status": "in_progress"}
    add("response.created", response=dict(base))
    item = {"id": "cmp_1", "type": "compaction", "encrypted_content": "gAAA-opaque"}
    add("response.output_item.added", output_index=0, item=item)
    add("response.output_item.done", output_index=0, item=item)
    message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": []}
    add("response.output_item.added", output_index=1, item=message)
    part = {"type": "output_text", "text": "", "annotations": []}
    add("response.content_part.added", item_id="msg_1", output_index=1, content_index=0, part=part)
    add("response.output_text.delta", item_id="msg_1", output_index=1, content_index=0, delta=text)
    done = {**message, "content": [{**part, "text": text}]}
    add("response.output_item.done", output_index=1, item=done)
    used = {
        "input_tokens": 10,
        "output_tokens": 5,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    add("response.completed", response=dict(base, status="completed", output=[item, done], usage=used))
    return encode_sse(ev)


def kept_block(block) -> dict:
    """The provider's block as a data block keeps it."""
    return json.loads(base64.b64decode(block.source.data))


# -- the option ---------------------------------------------------------------------------


def test_anthropic_takes_compaction_as_a_context_management_edit_with_its_beta(server):
    server.script(sse_reply(fake.body("anthropic", ("text", "hi"))))
    model = server.model("anthropic", "claude-sonnet-4-6", compaction={"threshold": 60_000, "pause": True})
    asyncio.run(model.complete([UserMsg("user", "hi")]))
    sent = server.requests[0]
    assert sent["json"]["context_management"] == {
        "edits": [
            {
                "type": "compact_20260112",
                "trigger": {"type": "input_tokens", "value": 60_000},
                "pause_after_compaction": True,
            }
        ]
    }
    assert "compact-2026-01-12" in sent["headers"]["anthropic-beta"].split(",")
    body = dict(sent["json"])
    assert body.pop("stream") is True
    sdk_params.anthropic_beta_request(body)


def test_openai_responses_takes_compaction_as_its_context_management_entry(server):
    server.script(sse_reply(fake.body("openai-responses", ("text", "hi"))))
    model = server.model("openai-responses", "gpt-5.5", compaction=200_000)
    asyncio.run(model.complete([UserMsg("user", "hi")]))
    sent = server.requests[0]["json"]
    assert sent["context_management"] == [{"type": "compaction", "compact_threshold": 200_000}]
    sdk_params.streaming_request("openai-responses", sent)


@pytest.mark.parametrize(
    ("spec", "value", "words"),
    [
        ("openai:gpt-4.1", True, "does not compact"),  # openai-chat: no compaction of its own
        ("anthropic:claude-sonnet-4-6", 10_000, "50000"),
        ("openai-responses:gpt-5.5", {"pause": True}, "goes on"),
    ],
)
def test_compaction_is_refused_where_the_provider_does_not_take_it(spec, value, words):
    from modelwire.models import load_model

    model = load_model(spec, api_key="k", base_url="http://127.0.0.1:9", compaction=value, capability_lookup=False)
    with pytest.raises(UnsupportedOptionError) as err:
        model.build_request([UserMsg("user", "hi")], None)
    assert words in str(err.value) and "compaction" in str(err.value)


@pytest.mark.parametrize("value", [0, "soon", {"threshold": -1}, {"when": 5}, {"pause": "yes"}])
def test_a_wrong_compaction_value_is_a_config_error(value):
    from modelwire.models import ModelOptions

    with pytest.raises(ConfigError):
        ModelOptions.from_dict({"compaction": value})


# -- the block ----------------------------------------------------------------------------


def test_anthropic_compaction_decodes_into_a_block_with_its_summary_and_stop_reason(server):
    from anthropic.types.beta import BetaCompactionBlock

    server.script(sse_reply(anthropic_compacting_stream()))
    model = server.model("anthropic", "claude-sonnet-4-6")
    events = []

    async def run():
        async for ev in model.stream([UserMsg("user", "hi")]):
            events.append(ev)

    asyncio.run(run())
    end = next(ev for ev in events if ev.type == "MODEL_CALL_END")
    assert end.stop_reason == "compaction"
    server.script(sse_reply(anthropic_compacting_stream()))
    msg = asyncio.run(model.complete([UserMsg("user", "hi")]))
    (block,) = msg.content
    assert block.type == "data" and block.provider_block_type == "compaction"
    assert block.summary == SUMMARY
    raw = kept_block(block)
    BetaCompactionBlock.model_validate(raw)  # what came is what the SDK reads
    assert raw == {"type": "compaction", "content": SUMMARY, "encrypted_content": "enc-state"}
    assert Msg.from_dict(json.loads(json.dumps(msg.to_dict()))) == msg


def test_the_compaction_block_goes_back_to_anthropic_and_its_summary_elsewhere(server):
    server.script(sse_reply(anthropic_compacting_stream(stop="end_turn")))
    model = server.model("anthropic", "claude-sonnet-4-6")
    reply = asyncio.run(model.complete([UserMsg("user", "weather?")]))
    history = [UserMsg("user", "weather?"), reply, UserMsg("user", "and tomorrow?")]

    body = model.build_request(history, None)[0]
    assert body["messages"][1]["content"][0] == {
        "type": "compaction",
        "content": SUMMARY,
        "encrypted_content": "enc-state",
    }
    body.pop("stream")
    sdk_params.anthropic_beta_request(body)

    for spec, protocol in (("openai:gpt-4.1", "openai-chat"), ("openai-responses:gpt-5.5", "openai-responses")):
        from modelwire.models import load_model

        other = load_model(spec, api_key="k", base_url="http://127.0.0.1:9", capability_lookup=False)
        body = other.build_request(history, None)[0]
        sent = json.dumps(body, ensure_ascii=False).replace("\\n", "\n")
        # The summary stands for what came before it: the first question is not sent again.
        assert COMPACTION_PREAMBLE + SUMMARY in sent and "weather?" not in sent and "Still sunny." in sent
        sdk_params.streaming_request(protocol, body)


def test_a_responses_compaction_item_goes_back_to_responses_only(server, caplog):
    server.script(sse_reply(responses_compacting_stream()))
    model = server.model("openai-responses", "gpt-5.5")
    reply = asyncio.run(model.complete([UserMsg("user", "go on")]))
    block = reply.content[0]
    assert block.provider_block_type == "compaction" and "summary" not in block.__dict__
    history = [UserMsg("user", "go on"), reply, UserMsg("user", "next")]
    body = model.build_request(history, None)[0]
    assert {"id": "cmp_1", "type": "compaction", "encrypted_content": "gAAA-opaque"} in body["input"]
    sdk_params.streaming_request("openai-responses", body)

    from modelwire.models import load_model

    claude = load_model("anthropic:claude-sonnet-4-6", api_key="k", base_url="http://127.0.0.1:9")
    with caplog.at_level("INFO", logger="modelwire.formatters"):
        body = claude.build_request(history, None)[0]
    assert "compaction" not in json.dumps(body)
    assert "carries no summary: left out" in caplog.text
    body.pop("stream")
    sdk_params.anthropic_request(body)


# -- the agent ----------------------------------------------------------------------------


def test_an_agent_goes_on_after_a_compaction_pause_then_switches_providers(server):
    server.script(
        sse_reply(anthropic_compacting_stream()),  # paused right after compacting
        sse_reply(fake.body("anthropic", ("text", "It is sunny."))),
    )
    agent = Agent(
        "bot", model=server.model("anthropic", "claude-sonnet-4-6", compaction={"threshold": 50_000, "pause": True})
    )
    reply = asyncio.run(agent.reply(UserMsg("user", "weather in Paris?")))
    assert reply.get_text_content() == "It is sunny."
    second = server.requests[1]["json"]
    assert second["messages"][-1]["role"] == "assistant"
    assert second["messages"][-1]["content"][0]["type"] == "compaction"
    second.pop("stream")
    sdk_params.anthropic_beta_request(second)

    server.script(sse_reply(responses_compacting_stream("Noted.")))
    agent.model = server.model("openai-responses", "gpt-5.5", compaction=200_000)
    asyncio.run(agent.reply(UserMsg("user", "remember it")))
    third = server.requests[2]["json"]
    sdk_params.streaming_request("openai-responses", third)
    assert COMPACTION_PREAMBLE + SUMMARY in json.dumps(third).replace("\\n", "\n")

    server.script(sse_reply(fake.body("openai-chat", ("text", "ok"))))
    agent.model = server.model("openai-chat", "gpt-4.1")
    asyncio.run(agent.reply(UserMsg("user", "and now?")))
    fourth = server.requests[3]["json"]
    sdk_params.streaming_request("openai-chat", fourth)
    sent = json.dumps(fourth)
    assert "gAAA-opaque" not in sent and "enc-state" not in sent
    assert SUMMARY in sent


# -- check ----------------------------------------------------------------------------------


def test_check_reports_a_foreign_compaction_and_fix_puts_its_summary_in(server):
    from modelwire.models import load_model

    server.script(sse_reply(anthropic_compacting_stream(stop="end_turn")))
    reply = asyncio.run(server.model("anthropic", "claude-sonnet-4-6").complete([UserMsg("user", "weather?")]))
    history = [UserMsg("user", "weather?"), reply, UserMsg("user", "and tomorrow?")]
    target = load_model("openai:gpt-4.1", api_key="k", base_url="http://127.0.0.1:9", capability_lookup=False)
    (finding,) = [f for f in target.preflight(history) if f.rule == "foreign-compaction"]
    assert finding.index == 1 and finding.fix == "its summary sent instead, in place of the messages before it"
    from modelwire.models._preflight import repair

    fixed = repair(target, history)
    assert fixed[1].content[0].type == "text" and fixed[1].content[0].text == COMPACTION_PREAMBLE + SUMMARY
    same = server.model("anthropic", "claude-sonnet-4-6")  # the endpoint that made it
    assert not [f for f in same.preflight(history) if f.rule == "foreign-compaction"]
    elsewhere = load_model("anthropic:claude-sonnet-4-6", api_key="k")  # Anthropic's own API: another family
    assert [f.rule for f in elsewhere.preflight(history) if f.rule == "foreign-compaction"] == ["foreign-compaction"]


def test_check_says_a_mid_conversation_system_message_joins_the_top_one():
    from modelwire.message import SystemMsg
    from modelwire.models import load_model

    history = [SystemMsg("s", "Be brief."), UserMsg("user", "hi"), SystemMsg("s", "Now answer in French.")]
    claude = load_model("anthropic:claude-sonnet-4-6", api_key="k", base_url="http://127.0.0.1:9")
    (finding,) = [f for f in claude.preflight(history) if f.rule == "system-moved"]
    assert finding.index == 2
    chat = load_model("openai:gpt-4.1", api_key="k", base_url="http://127.0.0.1:9", capability_lookup=False)
    assert not [f for f in chat.preflight(history) if f.rule == "system-moved"]


# -- task budgets ---------------------------------------------------------------------------


def test_a_task_budget_goes_in_output_config_with_its_beta_on_the_models_that_take_it(server):
    server.script(sse_reply(fake.body("anthropic", ("text", "ok"))))
    model = server.model("anthropic", "claude-opus-5-5", task_budget={"total": 400_000, "remaining": 120_000})
    asyncio.run(model.complete([UserMsg("user", "hi")]))
    sent = server.requests[0]
    assert sent["json"]["output_config"]["task_budget"] == {"type": "tokens", "total": 400_000, "remaining": 120_000}
    assert "task-budgets-2026-03-13" in sent["headers"]["anthropic-beta"].split(",")
    body = dict(sent["json"])
    body.pop("stream")
    sdk_params.anthropic_beta_request(body)


@pytest.mark.parametrize("spec", ["anthropic:claude-sonnet-5", "openai-responses:gpt-5.5"])
def test_a_task_budget_is_refused_naming_a_model_that_does_not_take_it(spec):
    from modelwire.models import load_model

    model = load_model(spec, api_key="k", base_url="http://127.0.0.1:9", task_budget=100_000, capability_lookup=False)
    with pytest.raises(UnsupportedOptionError) as err:
        model.build_request([UserMsg("user", "hi")], None)
    assert "task_budget" in str(err.value) and spec.split(":")[1] in str(err.value)


# -- a recorded compaction -----------------------------------------------------------------

RECORDED = PA / "test_anthropic_compaction_usage_with_cache_streaming.0.sse"


@pytest.mark.skipif(not RECORDED.exists(), reason="the shared recorded streams are not here")
def test_a_recorded_anthropic_compaction_decodes_with_its_summary_and_its_cost(server):
    from anthropic.types.beta import BetaCompactionBlock

    server.script(sse_reply(RECORDED.read_bytes()))
    reply = asyncio.run(server.model("anthropic", "claude-sonnet-4-6").complete([UserMsg("user", "Now say hello.")]))
    window, text = reply.content
    assert window.provider_block_type == "compaction" and window.summary.startswith("The user provided a very long")
    BetaCompactionBlock.model_validate(kept_block(window))
    assert text.text == "Hello! 👋"
    # The compaction's own iteration (100 in, 83 out, 55,096 read from the cache) is left out
    # of the top-level usage (181 in, 8 out): both are counted.
    assert reply.usage.input_tokens == 181 + 100 + 55_096
    assert reply.usage.output_tokens == 8 + 83
    assert reply.usage.cache_input_tokens == 55_096


# -- media resolution -----------------------------------------------------------------------


def test_gemini_takes_a_media_resolution_and_others_refuse_it(server):
    from modelwire.models import load_model

    server.script(sse_reply(fake.body("gemini", ("text", "ok"))))
    model = server.model("gemini", "gemini-3-pro", media_resolution="low")
    asyncio.run(model.complete([UserMsg("user", "what is in this picture?")]))
    sent = server.requests[0]["json"]
    assert sent["generationConfig"]["mediaResolution"] == "MEDIA_RESOLUTION_LOW"
    sdk_params.streaming_request("gemini", sent)
    claude = load_model("anthropic:claude-sonnet-4-6", api_key="k", media_resolution="high")
    with pytest.raises(UnsupportedOptionError, match="media_resolution"):
        claude.build_request([UserMsg("user", "hi")], None)


def test_sonnet_5_5_takes_a_mid_conversation_system_message_where_it_is(server):
    from modelwire.message import AssistantMsg, SystemMsg

    history = [
        SystemMsg("s", "Be brief."),
        UserMsg("user", "hi"),
        AssistantMsg("bot", "Hello."),
        SystemMsg("s", "From now on, answer in French."),
        UserMsg("user", "How are you?"),
    ]
    sonnet = server.model("anthropic", "claude-sonnet-5-5")
    body = sonnet.build_request(history, None)[0]
    assert body["system"] == [{"type": "text", "text": "Be brief."}]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "system", "user"]
    assert body["messages"][2]["content"] == [{"type": "text", "text": "From now on, answer in French."}]
    assert not [f for f in sonnet.preflight(history) if f.rule == "system-moved"]
    body.pop("stream")
    sdk_params.anthropic_beta_request(body)

    opus = server.model("anthropic", "claude-opus-5-5")
    merged = opus.build_request(history, None)[0]
    assert [m["role"] for m in merged["messages"]] == ["user", "assistant", "user"]
    assert len(merged["system"]) == 2
    assert [f.index for f in opus.preflight(history) if f.rule == "system-moved"] == [3]


# -- compacting on request (POST /responses/compact) ---------------------------------------


def compacted_response(user_texts: list[str]) -> dict:
    """A compacted response as the openai SDK reads it: its CompactedResponse, whose output is
    "all user messages, followed by a single compaction item" (each user message read as the
    SDK's ResponseInputMessageItem: the output union names no user message)."""
    from openai.types.responses import CompactedResponse, ResponseInputMessageItem

    kept = [
        {"id": f"msg_{n}", "type": "message", "role": "user", "status": "completed",
         "content": [{"type": "input_text", "text": text}]}
        for n, text in enumerate(user_texts)
    ]  # fmt: skip
    answer = {
        "id": "resp_cmp",
        "object": "response.compaction",
        "created_at": 1_765_000_000,
        "output": [*kept, {"id": "cmp_9", "type": "compaction", "encrypted_content": "gAAA-window"}],
        "usage": {
            "input_tokens": 900,
            "output_tokens": 120,
            "total_tokens": 1020,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }
    CompactedResponse.model_validate({**answer, "output": answer["output"][-1:]})  # what the SDK reads
    for item in kept:
        ResponseInputMessageItem.model_validate(item)
    return answer


def test_openai_responses_compacts_on_request_into_a_window_bound_to_its_endpoint(server):
    from openai.types.responses.response_compact_params import ResponseCompactParams

    from modelwire.message import BINDINGS, origin
    from modelwire.testing import json_reply

    server.script(json_reply(compacted_response(["weather in Paris?", "and tomorrow?"])))
    model = server.model("openai-responses", "gpt-5.5", reasoning_effort="low")
    history = [
        SystemMsg("system", "Be brief."),
        UserMsg("user", "weather in Paris?"),
        AssistantMsg("bot", "Sunny."),
        UserMsg("user", "and tomorrow?"),
    ]
    window = asyncio.run(model.compact(history))

    sent = server.requests[0]
    assert sent["path"].endswith("/responses/compact")
    body = sent["json"]
    assert body["model"] == "gpt-5.5" and "reasoning" not in body  # what the endpoint takes of the request
    assert [item.get("role") for item in body["input"]] == ["system", "user", "assistant", "user"]
    sdk_params.check(body, ResponseCompactParams)

    assert [m.role for m in window] == ["user", "user", "assistant"]
    assert [m.get_text_content() for m in window[:2]] == ["weather in Paris?", "and tomorrow?"]
    (block,) = window[2].content
    assert block.provider_block_type == "compaction"
    assert kept_block(block) == {"id": "cmp_9", "type": "compaction", "encrypted_content": "gAAA-window"}
    made = origin(block)
    assert made is not None and made.protocol == "openai-responses" and made.endpoint == model.endpoint
    assert BINDINGS["compaction"] == "provider"

    # The window goes back to Responses as the item it was, then what follows it.
    server.script(sse_reply(fake.body("openai-responses", ("text", "Rain."))))
    asyncio.run(model.complete([*window, UserMsg("user", "and the day after?")]))
    items = server.requests[1]["json"]["input"]
    assert {"id": "cmp_9", "type": "compaction", "encrypted_content": "gAAA-window"} in items
    sdk_params.streaming_request("openai-responses", server.requests[1]["json"])

    # Elsewhere it carries no summary: left out, and check says so.
    from modelwire.models import load_model

    claude = load_model("anthropic:claude-sonnet-4-6", api_key="k", base_url="http://127.0.0.1:9")
    assert "foreign-compaction" in [f.rule for f in claude.preflight(window)]


def test_compact_is_refused_naming_the_model_where_the_provider_has_no_endpoint_for_it():
    from modelwire.models import load_model

    model = load_model("anthropic:claude-sonnet-4-6", api_key="k", base_url="http://127.0.0.1:9")
    with pytest.raises(UnsupportedOptionError) as err:
        asyncio.run(model.compact([UserMsg("user", "hi")]))
    assert err.value.model == "claude-sonnet-4-6" and "compact" in str(err.value)


def test_a_compact_answer_that_is_not_a_window_is_a_typed_error(server):
    from modelwire.errors import StreamProtocolError
    from modelwire.testing import json_reply

    server.script(json_reply({"id": "resp_x", "object": "response.compaction"}))
    model = server.model("openai-responses", "gpt-5.5")
    with pytest.raises(StreamProtocolError, match="without its output"):
        asyncio.run(model.compact([UserMsg("user", "hi")]))


def test_a_compacted_window_keeps_every_part_of_a_user_message_and_sends_it_back_unchanged(server):
    """Images and files a compacted window kept go back in the next request as they came,
    whether the formatter writes them from a data block or sends the part kept whole."""
    from openai.types.responses import ResponseInputMessageItem

    from modelwire.testing import json_reply

    png = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n-tiny").decode()
    pdf = "data:application/pdf;base64," + base64.b64encode(b"%PDF-1.4 tiny").decode()
    parts = [
        {"type": "input_text", "text": "what do these say?"},
        {"type": "input_image", "image_url": png, "detail": "auto"},
        {"type": "input_file", "filename": "notes.pdf", "file_data": pdf},
        {"type": "input_image", "image_url": "https://example.com/chart.png", "detail": "high"},
        {"type": "input_file", "file_id": "file-abc123"},
    ]
    image_only = [{"type": "input_image", "image_url": png, "detail": "auto"}]
    kept = [
        {"id": f"msg_{n}", "type": "message", "role": "user", "status": "completed", "content": content}
        for n, content in enumerate([parts, image_only])
    ]
    for item in kept:
        ResponseInputMessageItem.model_validate(item)
    answer = {
        "id": "resp_cmp",
        "object": "response.compaction",
        "created_at": 1_765_000_000,
        "output": [*kept, {"id": "cmp_9", "type": "compaction", "encrypted_content": "gAAA-window"}],
        "usage": {"input_tokens": 900, "output_tokens": 120, "total_tokens": 1020},
    }
    server.script(json_reply(answer))
    model = server.model("openai-responses", "gpt-5.5", extra_body={"store": False, "prompt_cache_key": "k1"})
    window = asyncio.run(model.compact([UserMsg("user", "what do these say?"), AssistantMsg("bot", "Two pages.")]))
    sent = server.requests[0]["json"]
    assert sent["store"] is False and sent["prompt_cache_key"] == "k1"  # extra_body goes where the user sent it
    assert "stream" not in sent and "tools" not in sent  # the request's own fields the endpoint does not take
    assert [m.role for m in window] == ["user", "user", "assistant"]
    assert [b.type for b in window[1].content] == ["data"]  # no empty text where the message had none

    server.script(sse_reply(fake.body("openai-responses", ("text", "Notes."))))
    asyncio.run(model.complete([*window, UserMsg("user", "and now?")]))
    items = server.requests[1]["json"]["input"]
    users = [item["content"] for item in items if item.get("role") == "user"]
    assert users[0] == parts + image_only  # the two kept messages, joined as one user turn
    sdk_params.streaming_request("openai-responses", server.requests[1]["json"])
