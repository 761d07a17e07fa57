"""An effort change in mid-conversation: a system message whose ``metadata["reasoning_effort"]``
names a level sets the effort from there on, sent where it is in the provider's own shape
(Claude's system message with ``output_config``, OpenAI Responses' ``configuration_update``
item), the request's own effort and so its cached prefix unchanged; refused with the model
named where the model does not take it."""

from __future__ import annotations

import asyncio
import json

import pytest

import sdk_params
from modelwire.errors import FormatError
from modelwire.message import AssistantMsg, Msg, SystemMsg, UserMsg
from modelwire.testing import sse_reply
from modelwire.testing import sse as fake


def effort_change(level: str) -> Msg:
    """The message that changes the effort from here on: a system message with no content."""
    return SystemMsg("system", [], {"reasoning_effort": level})


def history(level: str = "low") -> list[Msg]:
    return [
        UserMsg("user", "Plan a migration from SQLite to PostgreSQL in three short steps."),
        AssistantMsg("bot", "1. Export. 2. Create the schema. 3. Import and verify."),
        effort_change(level),
        UserMsg("user", "Summarize the plan in one sentence."),
    ]


def test_the_marker_survives_the_json_round_trip_through_agentscope():
    marker = effort_change("low")
    again = Msg.from_dict(json.loads(json.dumps(marker.to_dict())))
    assert again == marker and again.metadata == {"reasoning_effort": "low"} and again.content == []
    agentscope = pytest.importorskip("agentscope.message", reason="the dev extra installs agentscope==2.0.11")
    theirs = agentscope.Msg.model_validate(json.loads(marker.to_json()))
    assert theirs.role == "system" and theirs.metadata == {"reasoning_effort": "low"}
    assert Msg.from_dict(json.loads(theirs.model_dump_json())) == marker


def test_claude_takes_an_effort_change_as_a_system_message_with_its_output_config(server):
    server.script(sse_reply(fake.body("anthropic", ("text", "Migrate in three steps."))))
    model = server.model("anthropic", "claude-sonnet-5-5", reasoning_effort="high")
    asyncio.run(model.complete(history()))
    sent = server.requests[0]
    body = sent["json"]
    assert body["output_config"]["effort"] == "high"  # the request's own effort: the cached prefix holds
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "system", "user"]
    assert body["messages"][2] == {"role": "system", "content": [], "output_config": {"effort": "low"}}
    assert "mid-conversation-output-config-2026-07-01" in sent["headers"]["anthropic-beta"].split(",")
    body = dict(body)
    assert body.pop("stream") is True
    sdk_params.anthropic_beta_request(body)


def test_claude_without_system_messages_keeps_the_text_at_the_top_and_the_change_in_place(server):
    server.script(sse_reply(fake.body("anthropic", ("text", "ok"))))
    model = server.model("anthropic", "claude-opus-5-5")  # effort changes, but no system text in place
    turns = history()
    turns[2] = SystemMsg("system", "Be brief.", {"reasoning_effort": "medium"})
    asyncio.run(model.complete(turns))
    body = server.requests[0]["json"]
    assert body["system"] == [{"type": "text", "text": "Be brief."}]
    assert body["messages"][2] == {"role": "system", "content": [], "output_config": {"effort": "medium"}}
    body.pop("stream")
    sdk_params.anthropic_beta_request(body)


def test_openai_responses_takes_an_effort_change_as_a_configuration_update_item(server):
    server.script(sse_reply(fake.body("openai-responses", ("text", "Migrate."))))
    model = server.model(
        "openai-responses", "gpt-6-astra", reasoning_effort="high", capabilities={"effort_per_message": True}
    )
    asyncio.run(model.complete(history("xhigh")))
    body = server.requests[0]["json"]
    assert body["reasoning"]["effort"] == "high"
    kinds = [item.get("type", item.get("role")) for item in body["input"]]
    assert kinds[2] == "configuration_update" and len(kinds) == 4
    assert body["input"][2] == {"type": "configuration_update", "reasoning": {"effort": "xhigh"}}
    sdk_params.streaming_request("openai-responses", body)


@pytest.mark.parametrize(
    ("spec", "target"),
    [
        ("anthropic:claude-sonnet-4-6", "claude-sonnet-4-6"),  # the table does not say it takes one
        ("openai:gpt-4.1", "gpt-4.1"),  # Chat Completions has no such item
        ("openai-responses:gpt-5.5", "gpt-5.5"),
        ("google:gemini-3-pro-preview", "gemini-3-pro-preview"),
    ],
)
def test_an_effort_change_is_refused_naming_the_model_where_it_is_not_taken(spec, target):
    from modelwire.models import load_model

    model = load_model(spec, api_key="k", base_url="http://127.0.0.1:9", capability_lookup=False)
    with pytest.raises(FormatError) as err:
        model.build_request(history(), None)
    assert err.value.code == "effort-change" and err.value.index == 2
    assert target in str(err.value) and "reasoning_effort" in str(err.value)


@pytest.mark.parametrize(
    "spec",
    [
        "bedrock:us.anthropic.claude-opus-5-5-v1:0",  # the table's row says Claude takes one; Converse has no field
        "google:gemini-4-argon",
        "ollama:llama3",
        "cohere:command-a-03-2025",
    ],
)
def test_an_effort_change_is_refused_where_the_protocol_has_no_place_for_it_whatever_the_model_takes(spec):
    from modelwire.models import load_model

    model = load_model(
        spec,
        api_key="k",
        base_url="http://127.0.0.1:9",
        capability_lookup=False,
        capabilities={"effort_per_message": True},
    )
    with pytest.raises(FormatError) as err:
        model.build_request(history(), None)
    assert err.value.code == "effort-change" and err.value.index == 2
    assert spec.split(":", 1)[1] in str(err.value) and "reasoning_effort" in str(err.value)


def test_check_reports_the_effort_change_a_model_does_not_take():
    from modelwire.models import load_model

    model = load_model("anthropic:claude-sonnet-4-6", api_key="k", base_url="http://127.0.0.1:9")
    findings = model.preflight(history())
    assert [(f.rule, f.index) for f in findings] == [("effort-change", 2)]


@pytest.mark.parametrize(
    ("level", "words"),
    [("minimal", "Claude takes low, medium, high, xhigh, max"), (3, "must name an effort level")],
)
def test_a_level_the_provider_does_not_take_is_refused(level, words):
    from modelwire.models import load_model

    model = load_model("anthropic:claude-sonnet-5-5", api_key="k", base_url="http://127.0.0.1:9")
    with pytest.raises(FormatError, match=words):
        model.build_request(history(level), None)


@pytest.mark.parametrize(
    "spec", ["anthropic:claude-sonnet-5-5", "anthropic:claude-sonnet-4-6", "openai:gpt-4.1", "ollama:llama3"]
)
def test_the_key_on_the_opening_system_prompt_names_the_request_option_on_every_model(spec):
    from modelwire.models import load_model

    model = load_model(spec, api_key="k", base_url="http://127.0.0.1:9", capability_lookup=False)
    opening = [SystemMsg("system", "Be brief.", {"reasoning_effort": "low"}), effort_change("high")]
    for turns in ([effort_change("low"), UserMsg("user", "hi")], [*opening, UserMsg("user", "hi")]):
        with pytest.raises(FormatError) as err:
            model.build_request(turns, None)
        assert err.value.code == "effort-change" and err.value.index == 0
        assert "set reasoning_effort on the request's options for the start of the conversation" in str(err.value)
        assert "mid-conversation" not in str(err.value)


def test_drafts_build_on_an_effort_change_like_a_fresh_request(server):
    """An agent's next call is built on the last one's draft: the change stays where it was."""
    server.script(
        sse_reply(fake.body("anthropic", ("text", "one"))), sse_reply(fake.body("anthropic", ("text", "two")))
    )
    model = server.model("anthropic", "claude-sonnet-5-5")
    turns = history()
    reply = asyncio.run(model.complete(turns))
    turns += [reply, UserMsg("user", "and again")]
    asyncio.run(model.complete(turns))
    second = server.requests[1]["json"]["messages"]
    assert second[2] == {"role": "system", "content": [], "output_config": {"effort": "low"}}
    assert second == model.build_request(turns, None)[0]["messages"]


def test_claude_on_bedrock_gets_the_effort_change_beta_in_the_body_where_bedrock_reads_betas(server, monkeypatch):
    from modelwire.protocols.anthropic._invoke import wrap_event
    from modelwire.testing import Reply

    monkeypatch.setenv("AWS_REGION", "us-east-1")
    sse = fake.body("anthropic", ("text", "Migrate."))
    raw = b"".join(wrap_event(json.loads(line[6:])) for line in sse.decode().splitlines() if line.startswith("data: "))
    server.script(Reply(body=raw, headers={"content-type": "application/vnd.amazon.eventstream"}))
    model = server.model("anthropic", "us.anthropic.claude-opus-5-5-v1:0", preset="bedrock-anthropic")
    reply = asyncio.run(model.complete(history()))
    assert reply.get_text_content() == "Migrate."
    sent = server.requests[0]
    assert sent["json"]["messages"][2] == {"role": "system", "content": [], "output_config": {"effort": "low"}}
    assert sent["json"]["anthropic_beta"] == ["mid-conversation-output-config-2026-07-01"]
    assert not any(name.lower() == "anthropic-beta" for name in sent["headers"])


def test_claude_on_vertex_refuses_an_effort_change_naming_the_model_and_the_endpoint():
    from modelwire.errors import UnsupportedOptionError
    from modelwire.models import load_model

    model = load_model(
        "vertex-anthropic:claude-opus-5-5", api_key="k", base_url="http://127.0.0.1:9", capability_lookup=False
    )
    with pytest.raises(UnsupportedOptionError) as err:
        model.build_request(history(), None)
    assert err.value.model == "claude-opus-5-5" and err.value.provider == "vertex-anthropic"
    assert "Vertex AI" in str(err.value) and "set reasoning_effort for the call" in str(err.value)
