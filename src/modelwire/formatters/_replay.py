"""Provenance: which provider-specific blocks a target takes back as they are, and what it
sends for a compaction it cannot take back."""

from __future__ import annotations

import base64
import json
import logging
from operator import attrgetter
from typing import Any, Callable, Literal, Sequence

from ..errors import FormatError
from ..message import BINDINGS, DataBlock, Msg, Origin, TextBlock, origin

from ._blocks import extra

_log = logging.getLogger("modelwire.formatters")

# Where a provider's own blocks (signatures, encrypted reasoning) may be replayed: to any
# endpoint of the protocol that made them, or only to the provider (preset) that did.
ReplayScope = Literal["protocol", "provider"]


def replays_natively(
    block: Any,
    protocol: str,
    provider: str | None,
    *,
    scope: ReplayScope,
    endpoint: str | None = None,
    model: str | None = None,
    account: str | None = None,
) -> bool:
    """Whether a target (``protocol`` spoken to ``provider`` at ``endpoint``) takes this
    block back as it is.

    Where both the block and the target know their endpoint family, the family decides:
    a signature MiniMax minted is not Anthropic's. Otherwise ``scope`` is the target
    protocol's rule: ``"protocol"`` when anything its protocol produced is valid on every
    server speaking it (Anthropic signatures), ``"provider"`` when only the same provider
    can use it (DeepSeek's reasoning is not Groq's). An origin or a target whose provider
    is unknown matches on the protocol alone. A block bound to the model that made it
    (its origin names one) goes back only to that ``model``, where the target names its own;
    one bound to an account, only to the same ``account`` (a fingerprint: see
    ``models.account_fingerprint``), where the target knows its own.
    """
    found = origin(block)  # origin_replays(), inlined: formatters ask for many blocks
    if found is None or found.protocol != protocol:
        return False
    if found.model is not None and model is not None and found.model != model:
        return False
    if found.account is not None and account is not None and found.account != account:
        return False
    if endpoint is not None and found.endpoint is not None:
        return found.endpoint == endpoint
    return scope == "protocol" or provider is None or found.provider is None or found.provider == provider


def origin_replays(
    found: Origin | None, protocol: str, provider: str | None, *, scope: ReplayScope, endpoint: str | None = None
) -> bool:
    """:func:`replays_natively` for a block whose origin was read already (``found``)."""
    if found is None or found.protocol != protocol:
        return False
    if endpoint is not None and found.endpoint is not None:
        return found.endpoint == endpoint
    if scope == "protocol" or provider is None or found.provider is None:
        return True
    return found.provider == provider


def compaction_stand_in(block: Any, protocol: str, provider: str | None, endpoint: str | None) -> Any:
    """What a target sends for a compaction block: the block where it may be replayed (see
    ``message.BINDINGS``), else the summary it carries as text (the provider gave one), else
    nothing, with a note."""
    if replays_natively(block, protocol, provider, scope=BINDINGS["compaction"], endpoint=endpoint):
        return block
    summary = extra(block, "summary")
    if isinstance(summary, str) and summary:
        return TextBlock(text=COMPACTION_PREAMBLE + summary)
    found = origin(block)
    _log.info(
        "compaction block %s (from %s) cannot go to %s and carries no summary: left out",
        block.id,
        (found.provider or found.protocol) if found is not None else "another provider",
        protocol,
    )
    return None


_block_type = attrgetter("type")


class CompactionCut:
    """Where a conversation starts for a target that cannot read its last compaction window
    but gets the summary it carries: the system messages before it, the summary as a user
    message, then what follows the window. (A window with no readable summary cuts nothing:
    the messages before it are sent in full.) Scanned as the conversation grows: a next turn
    reads only its new messages, and the cut prefix is the same objects each time, so a
    draft of the request goes on from it."""

    __slots__ = ("scanned", "last", "cut", "prefix")

    def __init__(self) -> None:
        self.scanned = 0  # messages read (the last one is read again: it may still grow)
        self.last: Any = None  # the message before those not yet read, to see the history is the same
        self.cut: tuple[int, int, Any] | None = None  # (message, block, summary block)
        self.prefix: list[Msg] = []

    def recognised(self, messages: Sequence[Msg], count: int) -> None:
        """The first ``count`` of ``messages`` are other objects of the content a draft holds
        as it was sent (a draft recognised them: a history loaded again). A draft holds a
        history whole only where it was not cut, so none of them starts a cut: with no cut
        found so far, the scan goes on from where it was, as for the same objects, whatever
        conversation it read last. (Where a cut was found, nothing is kept.)"""
        if self.cut is None and 0 < self.scanned <= count:
            self.last = messages[self.scanned - 1]

    def apply(self, messages: Sequence[Msg], stand_in: Callable[[Any], Any]) -> Sequence[Msg]:
        count = len(messages)
        if self.scanned > count or (self.scanned and messages[self.scanned - 1] is not self.last):
            self.scanned, self.cut, self.prefix = 0, None, []
        for index in range(self.scanned, count):
            msg = messages[index]
            # The usual message, unfolded (its blocks as they are) and holding no data: one C pass.
            if "data" not in map(_block_type, msg._content if msg._fold is None else msg.content):
                continue
            for at, block in enumerate(msg.content):
                if block.type == "data" and extra(block, "provider_block_type") == "compaction":
                    sent = stand_in(block)
                    if sent is not block and sent is not None and (self.cut is None or self.cut[:2] != (index, at)):
                        self.cut, self.prefix = (index, at, sent), []
        self.scanned = max(count - 1, 0)
        self.last = messages[self.scanned - 1] if self.scanned else None
        if self.cut is None:
            return messages
        index, at, summary = self.cut
        if not self.prefix:
            window = messages[index]
            self.prefix = [m for m in messages[:index] if m.role == "system"]
            self.prefix.append(Msg(name="user", role="user", content=[summary]))
            if window.content[at + 1 :]:
                self.prefix.append(window.replace(content=list(window.content[at + 1 :])))
        return [*self.prefix, *messages[index + 1 :]]


# How a compaction's summary reads where the window it stands for cannot go.
COMPACTION_PREAMBLE = "[The conversation before this point was compacted; its summary follows.]\n"


def raw_provider_block(
    block: DataBlock,
    protocol: str,
    provider: str | None = None,
    *,
    scope: ReplayScope = "provider",
    endpoint: str | None = None,
) -> dict[str, Any] | None:
    """The provider item a data block carries whole (see the adapters), if the target
    (``protocol``, ``provider``, ``endpoint``) can take it back (see :func:`replays_natively`)."""
    if block.source.type != "base64" or not replays_natively(block, protocol, provider, scope=scope, endpoint=endpoint):
        return None
    try:
        raw = json.loads(base64.b64decode(block.source.data))
    except ValueError as exc:
        raise FormatError(
            None, f"data block {block.id!r} claims to hold a {protocol} item but its data is not JSON: {exc}", protocol
        ) from None
    if not isinstance(raw, dict):
        raise FormatError(
            None, f"data block {block.id!r} claims to hold a {protocol} item but holds {type(raw).__name__}", protocol
        )
    return raw
