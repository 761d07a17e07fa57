"""Failover across every pair of protocols, on histories the providers really produced
(../shared/recorded-streams): the primary fails before any output, the backup of another
protocol answers, and the request it got passes the strict check against its SDK's type."""

from __future__ import annotations

import asyncio

import pytest

import sdk_params
from modelwire.models import FallbackModel, load_model
from modelwire.models.config import resolve
from modelwire.models.transport import RetryPolicy
from modelwire.protocols import get_protocol
from modelwire.testing import ProviderServer, Reply
from modelwire.testing.server import error_reply
from modelwire.testing.sse import body
from paths import HAVE_SHARED

if not HAVE_SHARED:  # pragma: no cover - the shared folder sits beside the repository
    pytest.skip("../shared/recorded-streams is not present", allow_module_level=True)

from test_switch_matrix import SOURCES, conversation  # noqa: E402 - the recorded replies, and how a conversation is made of one

MODELS = {
    "anthropic": "anthropic:claude-sonnet-4-5",
    "openai-chat": "openai:gpt-4.1",
    "openai-responses": "openai-responses:gpt-4.1",
    "gemini": "google:gemini-2.5-flash",
    "bedrock-converse": "bedrock:us.amazon.nova-pro-v1:0",
    "ollama": "ollama:qwen3",
}


def _one_per_protocol() -> dict[str, tuple]:
    """For each protocol, a recorded reply with a client tool call (any reply if none has one)."""
    chosen: dict[str, tuple] = {}
    for protocol, provider, path in SOURCES:
        messages = conversation(protocol, provider, path)
        has_call = any(b.type == "tool_call" and not getattr(b, "server_side", False) for b in messages[1].content)
        if protocol not in chosen or (has_call and not chosen[protocol][1]):
            chosen[protocol] = ((protocol, provider, path), has_call)
    return {p: c[0] for p, c in chosen.items()}


SOURCE_OF = _one_per_protocol()
PAIRS = [(src, dst) for src in sorted(SOURCE_OF) for dst in MODELS if dst != src]


@pytest.mark.parametrize("source,target", PAIRS, ids=[f"{s}->{t}" for s, t in PAIRS])
def test_a_failed_call_moves_to_another_protocol_with_a_history_it_takes(source, target, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    protocol, provider, path = SOURCE_OF[source]
    history = conversation(protocol, provider, path)
    no_retry = RetryPolicy(max_retries=0)
    spec = resolve(MODELS[target], api_key="k")
    wire = get_protocol(target)
    with ProviderServer() as a, ProviderServer() as b:
        a.script(error_reply(503, {"error": {"message": "upstream down", "type": "server_error"}}))
        b.script(
            Reply(
                body=body(target, ("text", "From the backup.")),
                headers={"content-type": wire.stream_content_type(spec.preset)},
            )
        )
        primary = load_model(MODELS[source], api_key="k", base_url=a.url, retry=no_retry, capability_lookup=False)
        backup = load_model(MODELS[target], api_key="k", base_url=b.url, retry=no_retry, capability_lookup=False)
        reply = asyncio.run(FallbackModel([primary, backup]).complete(history))
        assert len(a.requests) == 1 and len(b.requests) == 1
        sent = b.requests[0]["json"]
    assert reply.get_text_content().strip() == "From the backup."
    if target == "gemini":
        sdk_params.gemini_request(sent)
    else:
        sdk_params.streaming_request(target, sent)
