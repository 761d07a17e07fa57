"""Where a block came from, recorded on the block itself.

A block a provider produced records where it came from, namespaced by provider (as the
Vercel AI SDK's providerMetadata does): ``provider_metadata = {"deepseek": {"protocol":
"openai-chat"}}`` on the block (on a tool result: in its ``metadata``). Blocks written by
modelwire 0.1 carry ``provider="<protocol>"``; blocks written by AgentScope carry neither,
and are read for what AgentScope meant by their fields.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["Origin", "origin", "provenance"]


class Origin(NamedTuple):
    """Where a block came from: the wire protocol and, when known, the provider (preset).
    (A named tuple: formatters ask for it once per block.)"""

    protocol: str
    provider: str | None = None


def provenance(provider: str, protocol: str) -> dict[str, Any]:
    """The ``provider_metadata`` value that records a block's origin."""
    return {provider: {"protocol": protocol}}


def origin(block: Any) -> Origin | None:
    """The origin of a block, or None when nothing says (plain thinking, user content)."""
    if block.type == "tool_result":
        fields = block.metadata
    else:
        fields = block.__pydantic_extra__
    if not fields:
        return None
    meta = fields.get("provider_metadata")
    if isinstance(meta, dict):
        for provider, inner in meta.items():
            if isinstance(inner, dict) and isinstance(inner.get("protocol"), str):
                return Origin(inner["protocol"], provider)
    legacy = fields.get("provider")
    if isinstance(legacy, str) and legacy:
        return Origin(legacy)
    if block.type == "thinking":
        # AgentScope's own fields: a signature or redacted data is Anthropic thinking;
        # a reasoning item id or raw item is an OpenAI Responses reasoning item.
        if fields.get("signature") or fields.get("redacted_thinking_data") is not None:
            return Origin("anthropic")
        if fields.get("reasoning_item_id") or isinstance(fields.get("reasoning_item_raw"), dict):
            return Origin("openai-responses")
    return None
