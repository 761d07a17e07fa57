"""What of a recorded history would not go back to another model as it is: the opaque state
its blocks carry (signed thinking, compaction windows, the provider's own items), each bound
to where it was made (``message.BINDINGS`` for the kinds bound whatever the protocol says,
the protocol's replay scope for the rest, and the model or the account a block's provenance
names), read with the same rule the target's formatter applies (``replays_natively``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

__all__ = ["Unreplayed", "unreplayed"]


@dataclass(frozen=True)
class Unreplayed:
    """One block of a recorded conversation the target does not take back as it is."""

    index: int  # the interaction of the cassette
    message: int  # the message in its conversation
    kind: str  # thinking | compaction | another kind of the provider's own item
    bound_to: str  # what it is bound to: "endpoint api.anthropic.com", "model claude-sonnet-5-5" ...
    instead: str  # what the target is sent in its place

    def __str__(self) -> str:
        return f"[{self.index}] message [{self.message}]: {self.kind} (bound to {self.bound_to}): {self.instead}"


def unreplayed(index: int, messages: Sequence[Any], model: Any) -> list[Unreplayed]:
    """The blocks of ``messages`` (interaction ``index``) that ``model`` would not be sent as
    they are, each with what it is bound to and what goes instead."""
    from ..message import origin

    out: list[Unreplayed] = []
    for at, msg in enumerate(messages):
        for block in msg.content:
            kind = _opaque_kind(block)
            found = origin(block) if kind is not None else None
            if kind is None or found is None:
                continue
            scope = _scope(kind, model)
            if _replays(block, model, scope):
                continue
            out.append(Unreplayed(index, at, kind, _bound_to(found, scope), _instead(block, kind, model)))
    return out


def _opaque_kind(block: Any) -> str | None:
    """The kind of opaque state a block holds (None: none: text, calls, results)."""
    if block.type == "thinking":
        return "thinking"
    if block.type == "data":
        kind = block.__dict__.get("provider_block_type")
        return kind if isinstance(kind, str) and kind else None
    return None


def _scope(kind: str, model: Any) -> Any:
    from ..message import BINDINGS

    return BINDINGS.get(kind, model.wire.replay_scope)


def _replays(block: Any, model: Any, scope: Any) -> bool:
    from ..formatters import replays_natively

    return replays_natively(
        block,
        model.wire.name,
        model.provider,
        scope=scope,
        endpoint=model.endpoint,
        model=model.name,
        account=getattr(model, "account", None),
    )


def _bound_to(found: Any, scope: str) -> str:
    """What a block's provenance binds it to, the finest binding first."""
    parts = []
    if found.account is not None:
        parts.append(f"account {found.account}")
    if found.model is not None:
        parts.append(f"model {found.model}")
    if found.endpoint is not None:
        parts.append(f"endpoint {found.endpoint}")
    elif scope == "provider" and found.provider is not None:
        parts.append(f"provider {found.provider}")
    else:
        parts.append(f"protocol {found.protocol}")
    return ", ".join(parts)


def _instead(block: Any, kind: str, model: Any) -> str:
    if kind == "compaction":
        stand_in = model.formatter.compaction_stand_in(block)
        return "its summary, as text" if stand_in is not None else "left out (no summary to send instead)"
    return "left out"
