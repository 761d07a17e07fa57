"""The HTTP stack's own log lines never show a credential: httpcore2 logs every response's
headers at DEBUG and httpx2 every request's URL at INFO, so a server that echoes a key in a
header (whole, or without its last characters) would put it in the application's log. Real
logging, at DEBUG, against a real server on 127.0.0.1 that echoes the key."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from modelwire.errors import ProviderError
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy
from modelwire.testing import ProviderServer, Reply
from modelwire.testing.sse import body, stream_reply

KEY = "sk-ant-logged-0123456789abcdefXYZ"
GEMINI_KEY = "AIzaSy-logged-0123456789abcdef"


def echoing(status: int):
    """An answer whose headers echo the request's key, whole and without its last 4 characters."""

    def respond(request: dict) -> Reply:
        key = request["headers"].get("x-api-key") or request["headers"].get("x-goog-api-key") or ""
        reply = (
            stream_reply("anthropic", body("anthropic", ("text", "Four.")))
            if status == 200
            else Reply(
                status=status,
                body=json.dumps({"type": "error", "error": {"type": "authentication_error"}}).encode(),
                headers={"content-type": "application/json"},
            )
        )
        reply.headers = {**reply.headers, "x-echo-key": key, "x-echo-cut": key[:-4]}
        return reply

    return respond


@pytest.fixture
def debug_log(caplog):
    caplog.set_level(logging.DEBUG)  # every logger, httpcore2's and httpx2's included
    return caplog


@pytest.mark.parametrize("status", [200, 401])
def test_a_key_echoed_in_a_response_header_never_reaches_the_log(debug_log, status):
    with ProviderServer() as server:
        server.respond = echoing(status)
        model = load_model(
            "anthropic:claude-sonnet-4-5",
            api_key=KEY,
            base_url=server.url,
            retry=RetryPolicy(max_retries=0),
            capability_lookup=False,
        )
        try:
            asyncio.run(model.complete([UserMsg("u", "2+2?")]))
        except ProviderError:
            assert status == 401
        echoed = server.requests[0]["headers"]["x-api-key"]
    assert echoed == KEY  # the key was sent, and echoed back in two headers
    logged = debug_log.text
    assert "receive_response_headers.complete" in logged and "x-echo-cut" in logged  # the headers were logged ...
    assert KEY not in logged and KEY[:-4] not in logged and KEY[4:] not in logged  # ... with no key in them
    assert logged.count("***") >= 2


def test_a_key_in_the_url_is_masked_in_httpx2s_request_line(debug_log):
    with ProviderServer() as server:
        server.respond = lambda request: Reply(status=400, body=b'{"error": {"message": "no", "status": "X"}}')
        model = load_model(
            "google:gemini-2.5-flash",
            api_key=GEMINI_KEY,
            base_url=server.url + "?key=" + GEMINI_KEY,
            retry=RetryPolicy(max_retries=0),
            capability_lookup=False,
        )
        with pytest.raises(ProviderError):
            asyncio.run(model.complete([UserMsg("u", "hi")]))
        assert GEMINI_KEY in server.requests[0]["path"] or any(
            GEMINI_KEY in v for v in server.requests[0]["headers"].values()
        )
    request_lines = [r.getMessage() for r in debug_log.records if r.name == "httpx2"]
    assert request_lines and all(GEMINI_KEY not in line and "key=***" in line for line in request_lines), request_lines
    assert GEMINI_KEY not in debug_log.text


def test_every_logger_the_http_stack_made_carries_the_filter():
    """httpcore2 and httpx2 pinned: a logger they add that modelwire does not know fails here."""
    from modelwire.models._logmask import CredentialFilter

    with ProviderServer() as server:
        server.script(stream_reply("anthropic", body("anthropic", ("text", "Four."))))
        asyncio.run(load_model("anthropic:claude-test", api_key=KEY, base_url=server.url).complete("hi"))
    made = [
        name
        for name, logger in logging.Logger.manager.loggerDict.items()
        if name.split(".")[0] in ("httpcore2", "httpx2", "httpcore", "httpx") and isinstance(logger, logging.Logger)
    ]
    assert any(n.startswith("httpcore2.") for n in made) and "httpx2" in made
    bare = [
        n
        for n in made
        if not any(isinstance(f, CredentialFilter) for f in logging.getLogger(n).filters)
        and logging.getLogger(n).handlers == []
        and n.count(".") <= 1
        and n not in ("httpcore", "httpcore2")  # parents only: they log nothing of their own
    ]
    assert bare == []
