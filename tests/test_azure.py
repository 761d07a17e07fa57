"""Azure OpenAI's v1 API (``/openai/v1/...``) for Chat and Responses: real Azure recordings
(../shared, skipped without it) served by a local server, the request each preset sends,
and Microsoft Entra ID tokens when no key is set."""

from __future__ import annotations

import asyncio
import json
from collections import namedtuple

import pytest

import sdk_params
from modelwire.message import SystemMsg, UserMsg
from modelwire.models import load_model
from modelwire.protocols.openai_chat._credentials import AzureCredentials
from modelwire.testing import ProviderServer, Reply
from paths import ROOT

AZURE = ROOT / "azure" / "fantasy"


def served(path_sse, spec, monkeypatch, **kw):
    raw = path_sse.read_bytes()
    with ProviderServer() as server:
        server.script(Reply(body=raw, headers={"content-type": "text/event-stream"}))
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.url)
        model = load_model(spec, **kw)
        reply = asyncio.run(
            model.complete([SystemMsg("s", "You are a helpful assistant"), UserMsg("u", "Say hi in Portuguese")])
        )
        return reply, server.requests[0]


@pytest.mark.parametrize(
    "spec,name,path",
    [
        (
            "azure-responses:o4-mini",
            "TestAzureResponsesCommon__azure-o4-mini__simple_streaming.0",
            "/openai/v1/responses",
        ),
        ("azure-v1:gpt-5-mini", "TestAzureCommon__azure-gpt-5-mini__tool_streaming.0", "/openai/v1/chat/completions"),
    ],
)
def test_the_v1_api_with_a_key(spec, name, path, monkeypatch):
    sse = AZURE / f"{name}.sse"
    if not sse.is_file():
        pytest.skip("needs ../shared/recorded-streams")
    reply, request = served(sse, spec, monkeypatch, api_key="azure-key", max_tokens=4000)
    assert (
        request["path"] == path
        and request["headers"]["api-key"] == "azure-key"
        and "authorization" not in request["headers"]
    )
    sent = json.loads((AZURE / f"{name}.request.json").read_text())
    assert request["json"]["model"] == sent["model"]
    if spec.startswith("azure-responses"):
        mine = request["json"]["input"][1]
        assert (mine["role"], mine["content"]) == (sent["input"][1]["role"], sent["input"][1]["content"])
        assert request["json"]["max_output_tokens"] == sent["max_output_tokens"]
        sdk_params.streaming_request("openai-responses", request["json"])
        assert reply.get_text_content()
    else:
        sdk_params.streaming_request("openai-chat", request["json"])
        assert reply.get_content_blocks("tool_call") or reply.get_text_content()


Token = namedtuple("Token", "token expires_on")


class EntraStandIn:
    """What azure-identity's credentials offer (get_token); counts the tokens it issued."""

    def __init__(self, lifetime: float) -> None:
        self.lifetime = lifetime
        self.issued = 0
        self.scopes = []

    def get_token(self, scope):
        self.scopes.append(scope)
        self.issued += 1
        return Token(f"entra-{self.issued}", 1000 + self.lifetime * self.issued)


def test_an_entra_id_token_is_sent_and_renewed_before_it_expires():
    now = [1000.0]
    creds = AzureCredentials(EntraStandIn(lifetime=3600), clock=lambda: now[0])
    assert creds.apply("POST", "u", {"api-key": "x"}, b"")["authorization"] == "Bearer entra-1"
    assert creds.apply("POST", "u", {}, b"")["authorization"] == "Bearer entra-1"  # still good
    now[0] += 3600 - 30  # within a minute of expiring
    assert creds.apply("POST", "u", {}, b"")["authorization"] == "Bearer entra-2"
    assert creds._credential.scopes == ["https://cognitiveservices.azure.com/.default"] * 2


def test_without_a_key_the_request_carries_the_entra_token(monkeypatch):
    from modelwire.testing.sse import body

    with ProviderServer() as server:
        server.script(
            Reply(body=body("openai-responses", ("text", "Olá!")), headers={"content-type": "text/event-stream"})
        )
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.url)
        monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
        model = load_model("azure-responses:my-deployment")
        model._credentials = AzureCredentials(EntraStandIn(lifetime=3600))  # azure-identity's part, stood in for
        reply = asyncio.run(model.complete("Say hi"))
        request = server.requests[0]
    assert request["headers"]["authorization"] == "Bearer entra-1" and "api-key" not in request["headers"]
    assert reply.get_text_content().strip() == "Olá!"


def test_without_a_key_or_azure_identity_the_error_says_what_to_do(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_azure(name, *args, **kwargs):
        if name.startswith("azure"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_azure)
    with pytest.raises(Exception, match="AZURE_OPENAI_API_KEY, or install azure-identity"):
        AzureCredentials()


def test_the_classic_deployments_path_stays():
    model = load_model("azure:my-deployment", api_key="k", base_url="https://res.openai.azure.com")
    assert model.url().startswith(
        "https://res.openai.azure.com/openai/deployments/my-deployment/chat/completions?api-version="
    )
    assert (
        load_model("azure-v1:my-deployment", api_key="k", base_url="https://res.openai.azure.com").url()
        == "https://res.openai.azure.com/openai/v1/chat/completions"
    )


def test_an_agent_on_azure_responses_runs_a_tool_and_a_cassette_replays_it(tmp_path, monkeypatch):
    from modelwire.agent import Agent
    from modelwire.cassettes import use_cassette
    from modelwire.testing import sse_reply
    from modelwire.testing.sse import body

    def weather(city: str) -> str:
        """The weather in a city."""
        return f"rain in {city}"

    path = tmp_path / "azure.json"
    with ProviderServer() as server:
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.url)
        server.script(
            sse_reply(body("openai-responses", ("tool", "call_1", "weather", '{"city": "Bergen"}'))),
            sse_reply(body("openai-responses", ("text", "Rain in Bergen."))),
        )
        with use_cassette(path, "all"):
            reply = asyncio.run(
                Agent("a", load_model("azure-responses:my-gpt-5", api_key="azure-key"), tools=[weather]).reply(
                    "Weather in Bergen?"
                )
            )
        second = server.requests[1]
    assert reply.get_text_content().strip() == "Rain in Bergen."
    assert second["path"] == "/openai/v1/responses" and second["json"]["input"][-1]["type"] == "function_call_output"
    with use_cassette(path, "none"):
        again = asyncio.run(
            Agent("a", load_model("azure-responses:my-gpt-5", api_key="azure-key"), tools=[weather]).reply(
                "Weather in Bergen?"
            )
        )
    assert again.get_text_content() == reply.get_text_content()
