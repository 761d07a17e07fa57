"""Tool-call ids and tool names as each target accepts them.

Providers differ: Anthropic and Bedrock take ids of ``[a-zA-Z0-9_-]`` only, Mistral wants
exactly nine letters and digits, OpenAI caps ids at 40 characters; tool names are
``[a-zA-Z0-9_-]{1,64}`` on most, Gemini also takes ``.`` and ``:``. A history made on one
provider (Kimi's ``functions.get_weather:0`` ids, MCP-style ``fs/read`` names) goes to
another through :func:`conform`, which every formatter runs first: an id or name the
target refuses is rewritten, deterministically (the same conversation always gives the
same request), the same for a call and its result, and without collisions in the
conversation. The messages themselves are not changed (blocks that need a new id are
copied), so a replay to the provider that made them is byte for byte what it was; a
name the model calls by its rewritten form is mapped back by the models layer
(:func:`name_map`), so the agent runs the right function.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Sequence

from .._record import extras_of
from ._spec import ToolSpec

__all__ = ["IdRules", "conform", "wire_name", "name_map", "REUSED_IDS"]

_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class IdRules:
    """What a target takes as an id or a name.

    Attributes:
        allowed: the characters taken, as the inside of a regex character class.
        max_len: the longest value taken.
        exact: a length every value must have (its characters then letters and digits).
        first: a character class the first character must be in (names on Gemini).
    """

    allowed: str = "A-Za-z0-9_-"
    max_len: int = 64
    exact: int | None = None
    first: str | None = None

    def __post_init__(self) -> None:
        pattern = f"[{self.allowed}]{{{self.exact}}}" if self.exact else f"[{self.allowed}]{{1,{self.max_len}}}"
        if self.first and not self.exact:
            pattern = f"(?=[{self.first}])" + pattern
        object.__setattr__(self, "_fits", re.compile(pattern).fullmatch)
        object.__setattr__(self, "_bad", re.compile(f"[^{self.allowed}]+"))

    @classmethod
    def from_pattern(cls, said: str) -> "IdRules | None":
        """The rules a provider states in its refusal, or None when its words are not read:
        a pattern (``^[a-zA-Z0-9_-]+$``, ``^[a-zA-Z0-9_-]{1,64}$``), Mistral's words (``a-z,
        A-Z, 0-9, with a length of 9``) or a length (``maximum length 40``)."""
        found = _CLASS.search(said)
        if found is not None:
            allowed, low, high = found.group(1).replace("\\.", "."), found.group(2), found.group(3)
            if low is not None and high is None:
                return cls(allowed=allowed, exact=int(low))
            return cls(allowed=allowed, max_len=int(high) if high else 64)
        found = _WORDS.search(said)
        if found is not None:
            ranges = re.findall(r"([a-zA-Z0-9])-([a-zA-Z0-9])", found.group(1))
            return cls(allowed="".join(f"{a}-{b}" for a, b in ranges), exact=int(found.group(2))) if ranges else None
        found = _LONGEST.search(said)
        return cls(max_len=int(found.group(1))) if found is not None else None

    def fits(self, value: str) -> bool:
        return self._fits(value) is not None  # type: ignore[attr-defined]

    def rewrite(self, value: str, salt: int = 0) -> str:
        """A value these rules take, made from ``value``: readable where it can be (the
        characters kept, a short digest of the original added so two originals that clean
        up alike stay apart), or a digest of the required length."""
        digest = hashlib.sha256(f"{salt}:{value}".encode()).digest()
        if self.exact:
            number = int.from_bytes(digest, "big")
            chars = []
            for _ in range(self.exact):
                number, rest = divmod(number, 62)
                chars.append(_B62[rest])
            return "".join(chars)
        tag = digest.hex()[:8]
        clean = self._bad.sub("_", value).strip("_")  # type: ignore[attr-defined]
        head = clean[: self.max_len - len(tag) - 1]
        out = f"{head}_{tag}" if head else tag
        if self.first and not re.match(f"[{self.first}]", out):
            out = ("t" + out)[: self.max_len]
        return out


# How providers state their rules (see IdRules.from_pattern).
_CLASS = re.compile(r"\[((?:[A-Za-z0-9]-[A-Za-z0-9]|\\?[_.:-])+)\](?:\{(\d+)(?:,(\d+))?\}|[+*])")
_WORDS = re.compile(r"must be ((?:[a-zA-Z0-9]-[a-zA-Z0-9],? ?)+),? with a length of (\d+)")
_LONGEST = re.compile(r"maximum length (\d+)")

# The form of the id sent for a call whose id an earlier call had, to a target with no rules
# of its own for ids: characters every provider takes.
REUSED_IDS = IdRules()


def wire_name(name: str, rules: IdRules | None) -> str:
    """A tool name as the target takes it (the name itself when it fits)."""
    if rules is None or rules.fits(name):
        return name
    return rules.rewrite(name)


def name_map(tools: Sequence[Any] | None, rules: IdRules | None) -> dict[str, str]:
    """``{name sent: tool's own name}`` for the tools whose names a target refuses, to map
    the model's calls back."""
    if rules is None or not tools:
        return {}
    out = {}
    for tool in tools:
        name = tool.name if hasattr(tool, "name") and isinstance(tool.name, str) else _spec_name(tool)
        if name is not None:
            sent = wire_name(name, rules)
            if sent != name:
                out[sent] = name
    return out


def _spec_name(tool: Any) -> str | None:
    try:
        return ToolSpec.coerce(tool).name
    except Exception:  # a tool the formatter will refuse with its own message
        return None


class _IdMap:
    """Conversation ids as sent: the same original always the same, never two alike."""

    __slots__ = ("rules", "fits", "sent", "taken")

    def __init__(self, rules: IdRules) -> None:
        self.rules = rules
        self.fits = rules._fits  # type: ignore[attr-defined]
        self.sent: dict[str, str] = {}
        self.taken: dict[str, str] = {}

    def new(self, original: str) -> str:
        """The id sent for an original not met before (see ``sent`` for those met)."""
        rules = self.rules
        candidate = original if rules._fits(original) is not None else rules.rewrite(original)  # type: ignore[attr-defined]
        salt = 0
        while self.taken.get(candidate, original) != original:
            salt += 1
            candidate = rules.rewrite(original, salt)
        self.sent[original] = candidate
        self.taken[candidate] = original
        return candidate


class _Conformer:
    """Ids and names as sent, across one conversation: the same original always the same;
    each name's answer worked out once; a provider's own tools (replayed only where they
    ran) left as they were."""

    __slots__ = ("id_map", "names", "name_sent", "server", "kept")

    def __init__(self, ids: IdRules | None, names: IdRules | None) -> None:
        self.id_map = _IdMap(ids) if ids is not None else None
        self.names = names
        self.name_sent: dict[str, str] = {}
        self.server: set[str] = set()
        self.kept: dict[str, str] = {}  # id -> name, of the blocks sent as they were (a call, then its result)

    def copy(self) -> "_Conformer":
        new = _Conformer(None, self.names)
        if self.id_map is not None:
            new.id_map = _IdMap(self.id_map.rules)
            new.id_map.sent, new.id_map.taken = dict(self.id_map.sent), dict(self.id_map.taken)
        new.name_sent, new.server, new.kept = dict(self.name_sent), set(self.server), dict(self.kept)
        return new

    def block(self, block: Any) -> Any:
        """One block of an agent's own message as sent: a client call or result with its id
        and name conformed (the block itself when they fit); a server call noted, so that
        its result is left as it is."""
        if block.type == "tool_call":
            if extras_of(block).get("server_side"):
                self.server.add(block.id)
                return block
        elif block.id in self.server:
            return block
        return self.sent(block)

    def sent(self, block: Any) -> Any:
        """A client tool call or result with its id and name conformed (the block itself
        when they fit)."""
        block_id, name = block.id, block.name
        if self.kept.get(block_id) == name:  # the usual result: its call's id and name, sent as they were
            return block
        id_map = self.id_map
        new_id = block_id if id_map is None else (id_map.sent.get(block_id) or id_map.new(block_id))
        if self.names is not None and name:
            new_name = self.name_sent.get(name) or self._new_name(name)
            if new_name != name:
                return block.replace(id=new_id, name=new_name)
        if new_id != block_id:
            return block.replace(id=new_id)
        self.kept[block_id] = name
        return block

    def _new_name(self, name: str) -> str:
        """A tool name as sent, worked out the first time it is met."""
        assert self.names is not None
        sent = self.name_sent[name] = wire_name(name, self.names)
        return sent

    def call(self, block: Any) -> Any:
        """A client tool call as sent: :meth:`sent` for a call met the first time (its id is
        new: a second use is refused by the walk), with the usual case, an id and a name
        that fit, taken in one pass."""
        block_id, name = block.id, block.name
        id_map = self.id_map
        if id_map is not None:
            taken = id_map.taken  # an id sent as itself is taken by itself; one rewritten did not fit
            if block_id in taken or id_map.fits(block_id) is None:
                return self.sent(block)
            taken[block_id] = block_id  # what new() gives an id that fits (sent() finds it here)
        if self.names is not None and name:
            new_name = self.name_sent.get(name) or self._new_name(name)
            if new_name != name:
                return block.replace(name=new_name)
        self.kept[block_id] = name
        return block

    def content(self, blocks: Sequence[Any]) -> list[Any] | None:
        """A message's blocks with the calls' and results' ids and names conformed (None:
        all of them fit)."""
        content = None
        for k, block in enumerate(blocks):
            btype = block.type
            if btype != "tool_call" and btype != "tool_result":
                continue
            sent = self.block(block)
            if sent is not block:
                if content is None:
                    content = list(blocks)
                content[k] = sent
        return content


def conform(
    messages: Sequence[Any], tools: Sequence[Any] | None, tool_choice: Any, ids: IdRules | None, names: IdRules | None
) -> tuple[Sequence[Any], Sequence[Any] | None, Any]:
    """``messages``, ``tools`` and ``tool_choice`` with every client tool-call id and tool
    name the target refuses rewritten (see the module doc). Nothing is copied when
    everything fits."""
    if ids is None and names is None:
        return messages, tools, tool_choice
    conformed = _Conformer(ids, names).content
    out: list[Any] | None = None
    for n, msg in enumerate(messages):
        content = conformed(msg.content)
        if content is not None:
            if out is None:
                out = list(messages)
            out[n] = msg.replace(content=content)
    if names is not None and tools:
        tools, tool_choice = _renamed(tools, tool_choice, names)
    return (out if out is not None else messages), tools, tool_choice


def _renamed(
    tools: Sequence[Any], tool_choice: Any, names: IdRules, sent_names: dict[str, str] | None = None
) -> tuple[list[Any], Any]:
    """The tools, and a tool choice naming one, with each name the target refuses rewritten
    (``sent_names``, where given, filled in as :func:`name_map` would be)."""
    renamed = []
    for tool in tools:
        try:
            spec = ToolSpec.coerce(tool)
        except Exception:  # a provider's own tool given as itself ({"googleSearch": {}}): as it is
            renamed.append(tool)
            continue
        sent = wire_name(spec.name, names)
        if sent == spec.name:
            renamed.append(spec)
            continue
        renamed.append(ToolSpec(sent, spec.description, spec.parameters, spec.strict))
        if sent_names is not None:
            sent_names[sent] = spec.name
    if isinstance(tool_choice, str) and tool_choice not in ("auto", "none", "required", "any"):
        tool_choice = wire_name(tool_choice, names)
    elif isinstance(tool_choice, dict):
        named = tool_choice.get("name") or (tool_choice.get("function") or {}).get("name")
        if isinstance(named, str):
            tool_choice = wire_name(named, names)
    return renamed, tool_choice
