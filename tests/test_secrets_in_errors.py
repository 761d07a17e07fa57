"""A credential that a server or gateway echoes in its error never reaches what people and
browsers read: the error's text, its body, its ``to_error_info()`` (what ``serve`` streams
in ``REPLY_END.error``), the events that close the call, and the CLI's error line.

Each set-up sends its credential the way modelwire does to a real server on 127.0.0.1,
which answers with the credential in its error, as gateways do (``invalid x-api-key
sk-...``)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from modelwire.agent import Agent
from modelwire.errors import ProviderError
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy
from modelwire.testing import ProviderServer, Reply
from modelwire.testing.sse import body as sse_body, stream_reply

KEY = "sk-live-0123456789abcdef"


def _echo(status: int = 401):
    """Answer with every header value and the query echoed in the error's text."""

    def respond(request: dict) -> Reply:
        seen = " ".join(f"{k}={v}" for k, v in request["headers"].items())
        text = f"invalid credentials: {seen} at {request['path']}"
        return Reply(
            status=status,
            body=json.dumps({"error": {"message": text, "type": "authentication_error", "echo": [text]}}).encode(),
            headers={"content-type": "application/json"},
        )

    return respond


SETUPS = {
    "x-api-key": ("anthropic:claude-sonnet-4-5", {"api_key": KEY}, {}),
    "bearer": ("openai:gpt-4.1", {"api_key": KEY}, {}),
    "azure api-key": ("azure:my-deployment", {"api_key": KEY}, {}),
    "gemini key": ("google:gemini-2.5-flash", {"api_key": KEY}, {}),
    "bedrock api key": ("bedrock:us.amazon.nova-micro-v1:0", {}, {"AWS_BEARER_TOKEN_BEDROCK": KEY}),
    "sigv4 session": (
        "bedrock:us.amazon.nova-micro-v1:0",
        {},
        {
            "AWS_ACCESS_KEY_ID": "AKIDSENTINEL0",
            "AWS_SECRET_ACCESS_KEY": KEY,
            "AWS_SESSION_TOKEN": "session-token-sentinel-0",
        },
    ),
}
SECRETS = (KEY, "AKIDSENTINEL0", "session-token-sentinel-0")


def _shown(err: ProviderError) -> str:
    return " ".join(
        [
            str(err),
            repr(err.args),
            json.dumps(err.to_error_info()),
            json.dumps(err.body, default=str),
            *(json.dumps(getattr(e, "metadata", None) or {}, default=str) for e in err.events),
        ]
    )


@pytest.mark.parametrize("setup", list(SETUPS))
def test_an_echoed_credential_is_masked_in_the_error(setup, monkeypatch):
    spec, kwargs, env = SETUPS[setup]
    for name in (
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if setup == "sigv4 session":
        pytest.importorskip("botocore")
    with ProviderServer() as server:
        server.respond = _echo()
        model = load_model(
            spec, base_url=server.url, retry=RetryPolicy(max_retries=0), capability_lookup=False, **kwargs
        )
        agent = Agent("a", model)

        events: list = []

        async def run():
            async for ev in agent.reply_stream("hi"):
                events.append(ev)

        with pytest.raises(ProviderError):  # raised once the reply's stream has ended
            asyncio.run(run())
        with pytest.raises(ProviderError) as raised:
            asyncio.run(model.complete([UserMsg("u", "hi")]))
        sent = server.requests[0]
    echoed = json.dumps(sent["headers"]) + sent["path"]
    assert any(s in echoed for s in SECRETS)  # the credential was sent, and the server echoed it
    shown = _shown(raised.value)
    assert "***" in shown
    for secret in SECRETS:
        assert secret not in shown
        assert secret not in json.dumps([e.to_dict() for e in events])  # REPLY_END.error, as serve streams it
    assert events[-1].finished_reason == "error" and "***" in events[-1].error.message


def test_a_credential_echoed_inside_a_stream_is_masked_in_the_closing_events():
    """A 200 stream whose error event echoes the key: the MODEL_CALL_END metadata and the
    error carry ``***``."""
    error = {"type": "error", "error": {"type": "authentication_error", "message": f"key {KEY} was revoked"}}
    raw = (
        sse_body("anthropic", ("text", "Hel")).split(b"event: content_block_stop")[0]
        + b"event: error\ndata: "
        + json.dumps(error).encode()
        + b"\n\n"
    )
    with ProviderServer() as server:
        server.script(stream_reply("anthropic", raw))
        model = load_model(
            "anthropic:claude-sonnet-4-5",
            api_key=KEY,
            base_url=server.url,
            retry=RetryPolicy(max_retries=0),
            capability_lookup=False,
        )
        got: list = []

        async def run():
            async for ev in model.stream([UserMsg("u", "hi")], reply_id="r"):
                got.append(ev)

        with pytest.raises(ProviderError) as raised:
            asyncio.run(run())
    end = [e for e in got + raised.value.events if e.type == "MODEL_CALL_END"]
    assert end and all(KEY not in json.dumps(e.to_dict()) for e in end)
    assert KEY not in _shown(raised.value) and "***" in str(raised.value)


def test_the_cli_error_line_shows_no_echoed_key():
    with ProviderServer() as server:
        server.respond = _echo()
        env = {**os.environ, "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, "MODELWIRE_DEBUG": "0"}
        out = subprocess.run(
            [sys.executable, "-m", "modelwire.cli", "chat", "-m", "openai:gpt-4.1", "hi"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
    assert out.returncode == 1, out.stderr
    assert "***" in out.stderr and KEY not in out.stderr + out.stdout


@pytest.mark.parametrize(
    "echo",
    [
        lambda key: f"invalid x-api-key {key[:-4]}...",  # the key without its last 4 characters
        lambda key: f"key starts {key[:12]}, ends {key[12:]}",  # cut in two
        lambda key: f"key ...{key[2:-2]}...",  # both ends cut
    ],
    ids=["without-its-last-4", "cut-in-two", "both-ends-cut"],
)
def test_a_long_enough_piece_of_an_echoed_key_is_masked(echo):
    def respond(request: dict) -> Reply:
        text = echo(request["headers"]["x-api-key"])
        return Reply(
            status=401,
            body=json.dumps({"type": "error", "error": {"type": "authentication_error", "message": text}}).encode(),
            headers={"content-type": "application/json"},
        )

    with ProviderServer() as server:
        server.respond = respond
        model = load_model(
            "anthropic:claude-sonnet-4-5",
            api_key=KEY,
            base_url=server.url,
            retry=RetryPolicy(max_retries=0),
            capability_lookup=False,
        )
        with pytest.raises(ProviderError) as raised:
            asyncio.run(model.complete([UserMsg("u", "hi")]))
    shown = _shown(raised.value)
    assert "***" in shown
    for n in range(len(KEY) - 12 + 1):  # no piece of 12 characters of the key is left anywhere
        assert KEY[n : n + 12] not in shown, KEY[n : n + 12]


def test_a_short_piece_and_words_the_key_shares_are_kept():
    from modelwire._secrets import masked

    assert masked("key ends in cdef; sk-live keys", [KEY]) == "key ends in cdef; sk-live keys"
    assert masked({"m": [f"it was {KEY[:-4]}"]}, [KEY]) == {"m": ["it was ***"]}


def test_a_recording_that_would_keep_a_piece_of_the_key_is_never_written(tmp_path):
    from modelwire.cassettes import use_cassette
    from modelwire.errors import CassetteSecretError

    path = tmp_path / "echo.json"
    with ProviderServer() as server:
        server.respond = lambda request: stream_reply(
            "openai-chat",
            sse_body("openai-chat", ("text", "your key was " + request["headers"]["authorization"][7:-4] + "...")),
        )
        with pytest.raises(CassetteSecretError, match="credential"):
            with use_cassette(path, "once"):
                asyncio.run(
                    load_model("openai:gpt-test", api_key=KEY, base_url=server.url + "/v1").complete(
                        [UserMsg("u", "hi")]
                    )
                )
    assert not path.exists()
