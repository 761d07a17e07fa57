"""Signed thinking bound to the model that made it (the capability ``thinking_bound``:
Claude Sonnet 5.5's "thinking blocks are tied to the model and the conversation"): recorded
in the block's provenance, sent back only to that model; a switch to another Claude model
sends what that model takes."""

from __future__ import annotations

import asyncio

import sdk_params
from modelwire.message import Msg, UserMsg, origin
from modelwire.testing import sse_reply
from modelwire.testing import sse as fake


def thought(server, model: str):
    server.script(sse_reply(fake.body("anthropic", ("think", "Paris is in France.", "sig-sonnet"), ("text", "Sunny."))))
    return asyncio.run(server.model("anthropic", model).complete([UserMsg("user", "weather in Paris?")]))


def test_sonnet_5_5_thinking_records_its_model_and_goes_back_only_to_it(server):
    reply = thought(server, "claude-sonnet-5-5")
    thinking = reply.get_content_blocks("thinking")[0]
    assert origin(thinking).model == "claude-sonnet-5-5"
    assert Msg.from_dict(reply.to_dict()) == reply  # the binding survives the JSON form
    history = [UserMsg("user", "weather in Paris?"), reply, UserMsg("user", "and tomorrow?")]

    same = server.model("anthropic", "claude-sonnet-5-5").build_request(history, None)[0]
    assert same["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "Paris is in France.",
        "signature": "sig-sonnet",
    }

    opus = server.model("anthropic", "claude-opus-5-5")
    body = opus.build_request(history, None)[0]
    assert body["messages"][1]["content"] == [{"type": "text", "text": "Sunny."}]
    sdk_params.streaming_request("anthropic", body)
    (finding,) = [f for f in opus.preflight(history) if f.rule == "foreign-thinking"]
    assert "claude-sonnet-5-5" in finding.message and finding.index == 1


def test_a_model_that_does_not_bind_its_thinking_leaves_it_to_the_endpoint_family(server):
    reply = thought(server, "claude-opus-5-5")
    assert origin(reply.get_content_blocks("thinking")[0]).model is None
    history = [UserMsg("user", "weather in Paris?"), reply, UserMsg("user", "and tomorrow?")]
    body = server.model("anthropic", "claude-sonnet-5-5").build_request(history, None)[0]
    assert body["messages"][1]["content"][0]["type"] == "thinking"
