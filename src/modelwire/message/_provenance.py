"""Where a block came from, recorded on the block itself.

A block a provider produced records where it came from, namespaced by provider (as the
Vercel AI SDK's providerMetadata does): ``provider_metadata = {"<provider>": {"protocol":
"<wire protocol>", "endpoint": "<endpoint family>"}}`` on the block (on a tool result: in
its ``metadata``). ``endpoint`` is the family of endpoints that accept what this one minted
(signed thinking, encrypted reasoning): a provider's own API by default, the host for any
other base URL, or what a profile declares. Blocks written without an endpoint (earlier
modelwire, or ``provider="<protocol>"`` from modelwire 0.1) are matched by protocol and
provider as before; blocks written by AgentScope carry neither, and are read for what
AgentScope meant by their fields: each wire protocol says which such blocks are its own
(``WireProtocol.claims``), through the claimers registered here (:func:`add_claimer`).
"""

from __future__ import annotations

from typing import Any, Callable, Literal, Mapping, NamedTuple


__all__ = ["Origin", "origin", "provenance", "add_claimer", "BINDINGS", "Binding"]

Binding = Literal["protocol", "provider"]

# What each kind of opaque state a provider hands back is bound to, one place for all: a
# block of that kind goes back only to a target of the same protocol and, for
# ``"provider"``, the same provider (where both record their endpoint family, the family
# decides, as for every block: see formatters.replays_natively). Thinking and server-tool
# blocks follow their protocol's ``replay_scope``; these kinds are bound whatever the
# protocol says:
BINDINGS: dict[str, Binding] = {
    # A compaction window is the provider's own summary of the turns before it, signed or
    # encrypted: Anthropic's ``compaction`` block "to be sent back with the block verbatim"
    # (the anthropic SDK's BetaCompactionBlock.signature), OpenAI's ``compaction`` item
    # "opaque and not intended to be human-interpretable"
    # (https://developers.openai.com/api/docs/guides/compaction).
    "compaction": "provider",
}
# Signed thinking is also bound to its model where the model says so (the capability
# ``thinking_bound``: Claude Sonnet 5.5's "thinking blocks are tied to the model and the
# conversation"): its adapter then records the model in the block's provenance, and a
# formatter for another model does not send it back. Bound to the account (Claude Haiku
# 5.5's "thinking blocks work only in the account that made them"), it records the account's
# fingerprint (a short hash of the key it was made with, never the key: see
# ``models.account_fingerprint``), and goes back only where the same key is used.

Claimer = Callable[[str, Mapping[str, Any], str], "str | None"]
_claimers: list[Claimer] = []


def add_claimer(claimer: Claimer) -> None:
    """Register ``claimer(block_type, fields, block_id) -> protocol or None``: asked about a
    thinking block or tool call that records no origin (another library wrote it)."""
    if claimer not in _claimers:
        _claimers.append(claimer)


def _claimed(block: Any, fields: Mapping[str, Any]) -> "Origin | None":
    for claim in _claimers:
        protocol = claim(block.type, fields, block.id)
        if protocol is not None:
            return Origin(protocol)
    return None


class Origin(NamedTuple):
    """Where a block came from: the wire protocol and, when known, the provider (preset)
    and the endpoint family. (A named tuple: formatters ask for it once per block.)"""

    protocol: str
    provider: str | None = None
    endpoint: str | None = None
    model: str | None = None  # set where what the block holds goes back only to this model
    account: str | None = None  # set where it goes back only to this account (its fingerprint)


def provenance(
    provider: str, protocol: str, endpoint: str | None = None, model: str | None = None, account: str | None = None
) -> dict[str, Any]:
    """The ``provider_metadata`` value that records a block's origin (``model``, ``account``:
    only where what it holds is bound to the model, or the account, that made it)."""
    inner = {"protocol": protocol} if endpoint is None else {"protocol": protocol, "endpoint": endpoint}
    if model is not None:
        inner["model"] = model
    if account is not None:
        inner["account"] = account
    return {provider: inner}


# The origins made so far: a history holds a few, each on many blocks, and a named tuple
# costs ten times a lookup to make (formatters ask once per block). Bounded: the strings
# come from the blocks.
_ORIGINS: dict[tuple[str, str | None, str | None, str | None, str | None], Origin] = {}


def _made(
    protocol: str, provider: str | None, endpoint: str | None, model: str | None = None, account: str | None = None
) -> Origin:
    key = (protocol, provider, endpoint, model, account)
    found = _ORIGINS.get(key)
    if found is None:
        found = Origin(protocol, provider, endpoint, model, account)
        if len(_ORIGINS) < 256:
            _ORIGINS[key] = found
    return found


def origin(block: Any) -> Origin | None:
    """The origin of a block, or None when nothing says (plain thinking, user content)."""
    btype = block.type
    if btype == "tool_result":
        fields = block.metadata
    else:
        try:
            fields = block.__dict__  # extras_of(), inlined: formatters ask once per block
        except AttributeError:
            fields = {}
    if not fields:
        return _claimed(block, fields) if btype == "tool_call" else None
    meta = fields.get("provider_metadata")
    if isinstance(meta, dict):
        for provider, inner in meta.items():
            if isinstance(inner, dict) and isinstance(inner.get("protocol"), str):
                endpoint = inner.get("endpoint")
                model = inner.get("model")
                account = inner.get("account")
                return _made(
                    inner["protocol"],
                    provider,
                    endpoint if isinstance(endpoint, str) else None,
                    model if isinstance(model, str) else None,
                    account if isinstance(account, str) else None,
                )
    legacy = fields.get("provider")
    if isinstance(legacy, str) and legacy:
        return _ORIGINS.get((legacy, None, None, None, None)) or _made(legacy, None, None)
    if btype == "thinking" or btype == "tool_call":
        return _claimed(block, fields)
    return None
