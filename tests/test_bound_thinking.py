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


# -- bound to the account -------------------------------------------------------------------


def test_haiku_5_5_thinking_records_its_accounts_fingerprint_never_the_key(server):
    import json

    server.script(sse_reply(fake.body("anthropic", ("think", "Paris is in France.", "sig-haiku"), ("text", "Sunny."))))
    mine = server.model("anthropic", "claude-haiku-5-5", api_key="sk-ant-mine-0123456789")
    reply = asyncio.run(mine.complete([UserMsg("user", "weather in Paris?")]))
    made = origin(reply.get_content_blocks("thinking")[0])
    assert made.account == mine.account and made.account.startswith("key:")
    saved = json.dumps(reply.to_dict())
    assert "sk-ant-mine" not in saved and "0123456789" not in saved  # a fingerprint, not the key
    assert origin(Msg.from_dict(json.loads(saved)).get_content_blocks("thinking")[0]) == made
    history = [UserMsg("user", "weather in Paris?"), reply, UserMsg("user", "and tomorrow?")]

    same = server.model("anthropic", "claude-haiku-5-5", api_key="sk-ant-mine-0123456789")
    assert same.build_request(history, None)[0]["messages"][1]["content"][0]["type"] == "thinking"

    theirs = server.model("anthropic", "claude-haiku-5-5", api_key="sk-ant-another-account")
    body = theirs.build_request(history, None)[0]
    assert body["messages"][1]["content"] == [{"type": "text", "text": "Sunny."}]
    sdk_params.streaming_request("anthropic", body)
    (finding,) = [f for f in theirs.preflight(history) if f.rule == "foreign-thinking"]
    assert "another account" in finding.message and finding.index == 1
    assert "sk-ant" not in str(finding)


def test_an_account_named_by_the_user_binds_instead_of_the_keys_hash(server):
    server.script(sse_reply(fake.body("anthropic", ("think", "Hm.", "sig-h"), ("text", "ok"))))
    work = server.model("anthropic", "claude-haiku-5-5", api_key="sk-1", account="work")
    reply = asyncio.run(work.complete([UserMsg("user", "hi")]))
    assert origin(reply.get_content_blocks("thinking")[0]).account == "name:work"
    history = [UserMsg("user", "hi"), reply, UserMsg("user", "again")]
    rotated = server.model("anthropic", "claude-haiku-5-5", api_key="sk-2", account="work")  # a new key, same account
    assert rotated.build_request(history, None)[0]["messages"][1]["content"][0]["type"] == "thinking"
    home = server.model("anthropic", "claude-haiku-5-5", api_key="sk-1", account="home")
    assert home.build_request(history, None)[0]["messages"][1]["content"][0]["type"] == "text"


def test_thinking_not_bound_to_an_account_records_none(server):
    reply = thought(server, "claude-sonnet-5-5")  # bound to its model and the conversation, not the account
    assert origin(reply.get_content_blocks("thinking")[0]).account is None


def test_the_offline_check_does_not_call_the_users_own_account_foreign(server, tmp_path, capsys):
    """``modelwire check`` (and transpose, and a cassette's replay) load the model with a
    placeholder key: no account is known there, so thinking made under the user's own key is
    not reported as another account's."""
    import json

    from modelwire.cli import main

    server.script(sse_reply(fake.body("anthropic", ("think", "Paris is in France.", "sig-haiku"), ("text", "Sunny."))))
    mine = server.model(  # the server stands in for Anthropic's own endpoint
        "anthropic", "claude-haiku-5-5", api_key="sk-ant-mine-0123456789", endpoint_family="anthropic"
    )
    reply = asyncio.run(mine.complete([UserMsg("user", "weather in Paris?")]))
    assert origin(reply.get_content_blocks("thinking")[0]).account is not None
    history = [UserMsg("user", "weather in Paris?"), reply, UserMsg("user", "and tomorrow?")]
    path = tmp_path / "history.json"
    path.write_text(json.dumps([m.to_dict() for m in history]))
    code = main(["check", str(path), "-m", "anthropic:claude-haiku-5-5", "--json"])
    out = capsys.readouterr().out
    assert "foreign-thinking" not in out and "another account" not in out, out
    assert code == 0, out
