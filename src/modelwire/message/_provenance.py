"""Where a block came from, recorded on the block itself.

A block a provider produced records where it came from, namespaced by provider (as the
Vercel AI SDK's providerMetadata does): ``provider_metadata = {"deepseek": {"protocol":
"openai-chat", "endpoint": "deepseek"}}`` on the block (on a tool result: in its
``metadata``). ``endpoint`` is the family of endpoints that accept what this one minted
(signed thinking, encrypted reasoning): a provider's own API by default, the host for any
other base URL, or what a profile declares. Blocks written without an endpoint (earlier
modelwire, or ``provider="<protocol>"`` from modelwire 0.1) are matched by protocol and
provider as before; blocks written by AgentScope carry neither, and are read for what
AgentScope meant by their fields.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .._record import extras_of

__all__ = ["Origin", "origin", "provenance", "GEMINI_TS"]

# AgentScope's Gemini model writes a function call's thought signature into the call's id:
# "gemini_ts:" + the signature (base64).
GEMINI_TS = "gemini_ts:"


class Origin(NamedTuple):
    """Where a block came from: the wire protocol and, when known, the provider (preset)
    and the endpoint family. (A named tuple: formatters ask for it once per block.)"""

    protocol: str
    provider: str | None = None
    endpoint: str | None = None


def provenance(provider: str, protocol: str, endpoint: str | None = None) -> dict[str, Any]:
    """The ``provider_metadata`` value that records a block's origin."""
    if endpoint is None:
        return {provider: {"protocol": protocol}}
    return {provider: {"protocol": protocol, "endpoint": endpoint}}


def origin(block: Any) -> Origin | None:
    """The origin of a block, or None when nothing says (plain thinking, user content)."""
    if block.type == "tool_result":
        fields = block.metadata
    else:
        fields = extras_of(block)
    if not fields:
        if block.type == "tool_call" and block.id.startswith(GEMINI_TS):
            return Origin("gemini")
        return None
    meta = fields.get("provider_metadata")
    if isinstance(meta, dict):
        for provider, inner in meta.items():
            if isinstance(inner, dict) and isinstance(inner.get("protocol"), str):
                endpoint = inner.get("endpoint")
                return Origin(inner["protocol"], provider, endpoint if isinstance(endpoint, str) else None)
    legacy = fields.get("provider")
    if isinstance(legacy, str) and legacy:
        return Origin(legacy)
    if block.type == "tool_call" and block.id.startswith(GEMINI_TS):
        return Origin("gemini")  # AgentScope keeps a Gemini call's thought signature in its id
    if block.type == "thinking":
        # AgentScope's own fields: a signature or redacted data is Anthropic thinking;
        # a reasoning item id or raw item is an OpenAI Responses reasoning item.
        if fields.get("signature") or fields.get("redacted_thinking_data") is not None:
            return Origin("anthropic")
        if fields.get("reasoning_item_id") or isinstance(fields.get("reasoning_item_raw"), dict):
            return Origin("openai-responses")
    return None
