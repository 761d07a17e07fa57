"""What every formatter shares: tool specs, tool choice, and splitting messages into turns.

A conversation is a list of ``Msg``. One assistant message is one whole reply: its
thinking, text, tool calls and the results of those calls, in order. Providers want
that split into turns; :func:`segments` does the split once, in a provider-neutral way,
and checks the rules every provider shares:

- a tool result answers a tool call made earlier in the conversation;
- each call is sent with an id of its own: a call whose id an earlier call had (providers
  mint ids per turn) gets one made from it, and the results that follow answer it;
- a client-side tool call is answered before the model speaks again (server-side calls
  are answered by the provider itself);
- the results that answer one assistant turn are put in the order of its calls.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import re
from typing import Any, Callable, Iterable, Iterator, Literal, Sequence

from msgspec.json import decode as from_json

from ..errors import FormatError, debug_enabled
from ..message import BINDINGS, DataBlock, Msg, Origin, TextBlock, ToolCallBlock, ToolResultBlock, origin, provenance
from ..message._blocks import data_problem
from ._spec import ToolSpec

_log = logging.getLogger("modelwire.formatters")

__all__ = [
    "ServerTool",
    "EffortChange",
    "EFFORT_KEY",
    "split_server_tools",
    "refuse_server_tool",
    "raw_server_tools",
    "guarded",
    "provenance",
    "ToolSpec",
    "Segment",
    "segments",
    "tool_specs",
    "extra",
    "tool_choice_name",
    "parse_arguments",
    "data_parts",
    "sent_source",
    "FormatError",
    "Origin",
    "origin",
    "replays_natively",
    "origin_replays",
    "compaction_stand_in",
    "COMPACTION_PREAMBLE",
    "CompactionCut",
    "merge_turn",
]


class ServerTool:
    """A tool the provider runs itself, declared beside the function tools, in one vocabulary:
    ``ServerTool("web_search", max_uses=3)``, ``ServerTool("code_execution")``,
    ``ServerTool("web_fetch")``. Each protocol maps it onto its own tool (Anthropic's
    ``web_search_20250305``, the Responses ``web_search`` tool, Gemini's ``googleSearch``
    ...) or refuses it, naming it; ``ServerTool(raw={...})`` sends a provider's own
    definition as given. ``ServerTool("mcp", url=..., name=...)`` (or
    ``MCPServer.http(url).via_provider()``) is a remote MCP server the provider calls
    itself. Their calls and results stream as provider blocks, as before."""

    __slots__ = ("kind", "config", "raw")

    def __init__(self, kind: str = "", *, raw: dict[str, Any] | None = None, **config: Any) -> None:
        if not kind and raw is None:
            raise ValueError(
                "a ServerTool needs a kind (web_search, code_execution, web_fetch) or the provider's raw definition"
            )
        self.kind = kind or "raw"
        self.config = config
        self.raw = raw

    def __repr__(self) -> str:
        raw = ", raw" if self.raw is not None else ""
        config = "".join(f", {k}={v!r}" for k, v in self.config.items())
        return f"ServerTool({self.kind!r}{raw}{config})"


def split_server_tools(tools: Iterable[Any] | None) -> tuple[list["ServerTool"], list[Any]]:
    """The server tools of a tool list, and the rest (function tools)."""
    server: list[ServerTool] = []
    rest: list[Any] = []
    for tool in tools or ():
        (server if isinstance(tool, ServerTool) else rest).append(tool)
    return server, rest


def refuse_server_tool(tool: "ServerTool", protocol: str, hint: str = "") -> FormatError:
    """The ``FormatError`` for a server tool ``protocol`` has no form of (an MCP server gets the way round)."""
    if tool.kind == "mcp":  # the agent can always be the MCP client itself
        hint = (hint + "; " if hint else "") + "an MCP server can be run from the agent instead: MCPServer.http(url)"
    return FormatError(
        None,
        f"{protocol} runs no server tool {tool.kind!r}" + (f"; {hint}" if hint else ""),
        protocol,
        code="unsupported-option",
    )


def raw_server_tools(tools: Iterable[Any] | None, protocol: str, hint: str) -> tuple[list[dict[str, Any]], list[Any]]:
    """For a protocol with no server tools of its own: the raw definitions given (sent as
    they are) and the function tools; a ServerTool by kind is refused with ``hint``."""
    server, rest = split_server_tools(tools)
    for tool in server:
        if tool.raw is None:
            raise refuse_server_tool(tool, protocol, hint)
    return [dict(t.raw) for t in server if t.raw is not None], rest


def guarded(format: Any) -> Any:
    """Formatters raise only :class:`FormatError`: anything else a conversation makes one
    raise (a wrong-typed extra, say) becomes one, naming what broke; with
    ``MODELWIRE_DEBUG=1`` it surfaces as itself, since it may be a bug here. Before
    formatting, tool-call ids and tool names go through the formatter's
    ``tool_id_rules`` / ``tool_name_rules`` (None: taken as they are)."""
    import functools

    @functools.wraps(format)
    def run(self: Any, messages: Sequence[Msg], tools: Any = None, tool_choice: Any = None) -> dict[str, Any]:
        with format_errors(getattr(self, "protocol", ""), messages):
            ids, names = getattr(self, "tool_id_rules", None), getattr(self, "tool_name_rules", None)
            if ids is not None or names is not None:
                # Ids and names the target refuses, rewritten (see _toolids).
                from ._toolids import conform

                messages, tools, tool_choice = conform(messages, tools, tool_choice, ids, names)
            return format(self, messages, tools, tool_choice)  # type: ignore[no-any-return]

    return run


# What a conversation makes a formatter raise besides FormatError (a wrong-typed extra, say):
# format_errors turns these into FormatError.
REFUSED = (TypeError, ValueError, KeyError, AttributeError, IndexError)


@contextlib.contextmanager
def format_errors(protocol: str, messages: Sequence[Msg] | None = None) -> Iterator[None]:
    """Inside, what a conversation makes a formatter raise is a :class:`FormatError` (see
    :func:`guarded`); one that names only a block names its message too (in ``messages``)."""
    try:
        yield
    except BadDataError as exc:
        raise (located(exc, messages, protocol) if messages is not None else exc) from None
    except FormatError:
        raise
    except REFUSED as exc:
        if debug_enabled():
            raise
        raise FormatError(None, f"cannot format this conversation ({type(exc).__name__}: {exc})", protocol) from exc


def tool_specs(tools: Iterable[Any] | None) -> list[ToolSpec]:
    """Every tool given (a function, a ``Tool``, a dict in any provider's shape) as a ``ToolSpec``; two of one name are
    refused."""
    specs = [ToolSpec.coerce(t) for t in tools or ()]
    names = [s.name for s in specs]
    if len(set(names)) < len(names):  # one pass; the repeated ones counted only when there are some
        from collections import Counter

        dupes = sorted(n for n, k in Counter(names).items() if k > 1)
        raise FormatError(None, f"tool names must be unique; repeated: {dupes}")
    return specs


def tool_choice_name(choice: Any, specs: Sequence[ToolSpec]) -> tuple[str | None, str | None]:
    """Normalize a tool choice to (mode, tool name): mode is auto | none | required | tool."""
    if choice is None:
        return None, None
    if isinstance(choice, dict):
        name = choice.get("name") or (choice.get("function") or {}).get("name")
        if not name:
            raise FormatError(None, f"tool_choice {choice!r} names no tool")
        choice = name
    elif choice in ("auto", "none", "required", "any"):
        return ("required" if choice == "any" else choice), None
    if choice not in {s.name for s in specs}:
        raise FormatError(None, f"tool_choice names {choice!r}, which is not among the tools given")
    return "tool", choice


def parse_arguments(call: ToolCallBlock) -> dict[str, Any]:
    """The arguments of a call as a dict. Arguments cut off mid-JSON (a call truncated by
    max_tokens) give their longest valid prefix; an empty string gives ``{}``."""
    text = call.input
    if not text or text.isspace():
        return {}
    try:
        value = from_json(text)
    except (ValueError, RecursionError):
        from pydantic_core import from_json as partial  # reads the longest valid prefix

        try:
            value = partial(text.strip(), allow_partial=True)
        except ValueError:
            value = {}
    return value if isinstance(value, dict) else {"value": value}


_NAME_RE = re.compile(r"[^a-zA-Z0-9_-]+")


def sanitize_name(name: str) -> str:
    """A speaker name as OpenAI accepts it (``^[a-zA-Z0-9_-]{1,64}$``)."""
    clean = _NAME_RE.sub("_", name).strip("_")[:64]
    return clean or "user"


# What a turn-to-be is: a system prompt, a user's turn, an assistant's turn, or the results
# that answer the calls of the assistant's turn before them.
SegmentKind = Literal["system", "user", "assistant", "results"]
# Where a provider's own blocks (signatures, encrypted reasoning) may be replayed: to any
# endpoint of the protocol that made them, or only to the provider (preset) that did.
ReplayScope = Literal["protocol", "provider"]


class Segment:
    """One turn-to-be (see :data:`SegmentKind`)."""

    __slots__ = ("kind", "index", "blocks", "name", "origin")

    def __init__(self, kind: SegmentKind, index: int, blocks: list[Any], name: str = "") -> None:
        self.kind: SegmentKind = kind
        self.index = index  # the message it starts in
        self.blocks = blocks
        self.name = name
        self.origin: dict[int, int] | None = None  # id(block) -> index of its message, where it differs

    def index_of(self, block: Any) -> int:
        """The index of the message a block came from (for error messages)."""
        return self.origin.get(id(block), self.index) if self.origin else self.index

    def copy(self) -> "Segment":
        new = Segment(self.kind, self.index, list(self.blocks), self.name)
        new.origin = dict(self.origin) if self.origin else None
        return new

    def __repr__(self) -> str:
        return f"Segment({self.kind!r}, {self.index}, {len(self.blocks)} blocks, name={self.name!r})"


def extra(block: Any, key: str, default: Any = None) -> Any:
    """A provider extra of a block (see the adapters), or ``default``. Cheaper than
    ``getattr``, which goes through pydantic's ``__getattr__`` and an exception when the
    extra is absent."""
    try:
        return block.__dict__.get(key, default)  # extras_of(), inlined: formatters ask per block
    except AttributeError:
        return default


# The message metadata key that changes the effort from a system message on (see EffortChange).
EFFORT_KEY = "reasoning_effort"


class EffortChange:
    """An effort change in mid-conversation, in a system segment: a system message whose
    ``metadata["reasoning_effort"]`` names a level (its content may be empty) sets the
    effort for the turns after it, where the target takes it (the capability
    ``effort_per_message``), without changing the request's own effort, so the cached
    prefix holds. Refused elsewhere: a :class:`FormatError` ``effort-change`` naming the target.

    Its ``text`` is empty: a formatter that joins a system segment's text leaves it out."""

    __slots__ = ("level",)
    type = "effort_change"
    text = ""
    id = ""

    def __init__(self, level: str) -> None:
        self.level = level

    def __repr__(self) -> str:
        return f"EffortChange({self.level!r})"


class Walk:
    """The state of one walk of :func:`segments`: the segments so far, the client calls made
    (and those not answered yet), the server-side calls, and hint pieces held back while
    calls are open.

    A walk goes on where it stopped: :meth:`feed` takes the next message. Every segment
    but the last is finished (nothing joins it any more); results are kept in the order of
    their calls as they join a segment, and :meth:`pending` gives the rest as the end of the
    conversation would leave it, without changing the walk."""

    __slots__ = (
        "protocol",
        "split_users",
        "speaker_names",
        "assistant_name",
        "out",
        "calls",
        "server_calls",
        "open_calls",
        "held",
        "conformer",
        "reused",
        "stand_in",
        "effort_target",
    )

    def __init__(
        self,
        protocol: str,
        *,
        speaker_names: bool = False,
        assistant_name: str | None = None,
        split_users: bool = False,
    ) -> None:
        self.protocol = protocol
        self.split_users = split_users or speaker_names
        self.speaker_names = speaker_names
        self.assistant_name = assistant_name
        self.out: list[Segment] = []
        self.calls: dict[str, int] = {}  # client call id -> its place among the calls
        self.server_calls: set[str] = set()
        self.open_calls: dict[str, int] = {}  # calls not answered yet -> message index
        self.held: list[tuple[int, Any]] = []  # hint pieces waiting for open calls to be answered
        # Tool-call ids and names the target refuses, rewritten as the walk meets them (see
        # _toolids): only the agent's own calls and results are sent, so only theirs.
        self.conformer: Any = None
        # Ids the provider gave to more than one call (ids minted per turn: call_0 on every
        # turn): the id as conformed -> the ids its calls are sent with, in order.
        self.reused: dict[str, list[str]] | None = None
        # What the target sends for a compaction block (itself, its summary as text, or
        # nothing: None); set by the formatter (see Formatter.walk).
        self.stand_in: Callable[[Any], Any] | None = None
        # Who refuses an effort change in mid-conversation (see EffortChange): the target
        # model or protocol; None where it is taken (set by the formatter, see Formatter.walk).
        self.effort_target: str | None = protocol

    def add(self, kind: SegmentKind, index: int, block: Any, name: str = "") -> None:
        out = self.out
        if out:
            last = out[-1]
            if last.kind == kind and (kind != "user" or last.name == name or not self.split_users):
                last.blocks.append(block)
                if index != last.index:  # index_of falls back to the segment's own index
                    _joined(last, index, block)
                return
        out.append(Segment(kind, index, [block], name))

    def hint(self, index: int, block: Any) -> None:
        pieces = [TextBlock(text=block.hint)] if isinstance(block.hint, str) else list(block.hint)
        if self.open_calls:
            # Calls and their results must stay together: the hint follows the results.
            self.held.extend((index, p) for p in pieces)
        else:
            for piece in pieces:
                self.add("user", index, piece, "")

    def flush(self) -> None:
        """The hints held back, now that every call is answered."""
        for hint_index, piece in self.held:
            self.add("user", hint_index, piece, "")
        self.held.clear()

    def user(self, index: int, msg: Msg) -> None:
        """A user message, or another agent's message shown to this one as user content:
        its text and data only (another agent's thinking is not shown to this one; its tool
        use neither: its text carries what it found)."""
        name, speaker_names = msg.name, self.speaker_names
        out = self.out
        last = self._user_segment(name)
        for block in msg.content:
            btype = block.type
            if btype == "hint":
                self.hint(index, block)
                last = self._user_segment(name)  # the hint may have opened one
            elif btype == "text" or btype == "data":
                if speaker_names:
                    block = _speaker(block, name)
                if last is None:
                    last = Segment("user", index, [block], name)  # add(), inlined: a new segment
                    out.append(last)
                else:  # add(), inlined: most of a history is blocks joining the segment before
                    last.blocks.append(block)
                    if index != last.index:
                        _joined(last, index, block)

    def _user_segment(self, name: str) -> Segment | None:
        """The segment a user block of speaker ``name`` joins (None: it opens one)."""
        last = self.out[-1] if self.out else None
        if last is not None and (last.kind != "user" or (last.name != name and self.split_users)):
            return None
        return last

    def own(self, index: int, msg: Msg) -> None:
        """A message of the agent's own turn: each block's kind is its own, with the tool
        rules checked."""
        out = self.out
        last = out[-1] if out else None  # the segment the next block may join
        for block in msg.content:
            btype = block.type
            if btype == "data" and self.stand_in is not None and extra(block, "provider_block_type") == "compaction":
                block = self.stand_in(block)
                if block is None:
                    continue
                btype = block.type
            if btype == "tool_result":
                if block.id not in self.server_calls:  # a server-side call's result stays in the assistant turn
                    last = self.result(index, block, last)
                    continue
            elif btype == "tool_call":
                block = self.call(index, block, last)
            elif btype == "hint":
                self.hint(index, block)
                last = out[-1] if out else None
                continue
            elif self.open_calls and last is not None and last.kind == "results":
                _unanswered(self.open_calls, self.protocol)  # text, thinking, data: what call() checks of these
            if last is not None and last.kind == "assistant":  # add(), inlined: the block joins the turn
                last.blocks.append(block)
                if index != last.index:
                    _joined(last, index, block)
            else:
                last = Segment("assistant", index, [block], "")
                out.append(last)

    def system(self, index: int, msg: Msg) -> None:
        """A system message: its blocks in a system segment, hints as the user's, and the
        effort change it carries (see :class:`EffortChange`) after its text."""
        for block in msg.content:
            if block.type == "hint":
                self.hint(index, block)
            else:
                self.add("system", index, block, msg.name)
        if msg.metadata and EFFORT_KEY in msg.metadata:
            self.add("system", index, self._effort_change(index, msg.metadata[EFFORT_KEY]), msg.name)

    def _effort_change(self, index: int, level: Any) -> "EffortChange":
        if self.effort_target is not None:
            raise FormatError(
                index,
                f"{self.effort_target} takes no effort change in mid-conversation (metadata "
                f"{EFFORT_KEY!r} on a system message); set reasoning_effort for the call instead, or, where "
                "the model takes it, say so with capabilities={'effort_per_message': True}",
                self.protocol,
                code="effort-change",
            )
        if not isinstance(level, str) or not level:
            raise FormatError(index, f"metadata {EFFORT_KEY}={level!r} must name an effort level", self.protocol)
        return EffortChange(level)

    def in_call_order(self, results: list[Any]) -> None:
        """Results kept in the order of their calls as each joins its segment: one that
        answers an earlier call than the result before it moves back to its place, after any
        that answer the same call (the order a stable sort of the whole segment would give)."""
        calls = self.calls
        place = calls[results[-1].id]
        k = len(results) - 1
        if place < calls[results[k - 1].id]:  # the others are in order: the new one goes in its place
            last = results.pop()
            k -= 1
            while k and place < calls[results[k - 1].id]:
                k -= 1
            results.insert(k, last)

    def feed(self, index: int, msg: Msg) -> None:
        """The next message of the conversation (at ``index``)."""
        if not isinstance(msg, Msg):
            raise FormatError(index, f"expected a Msg, got {type(msg).__name__}", self.protocol)
        role = msg.role
        if role == "user" or (
            self.speaker_names
            and role == "assistant"
            and self.assistant_name is not None
            and msg.name != self.assistant_name
        ):
            self.user(index, msg)
        elif role == "system":
            self.system(index, msg)
        else:
            self.own(index, msg)
        if role == "user" and self.open_calls:
            _unanswered(self.open_calls, self.protocol)

    def copy(self) -> "Walk":
        """A walk that goes on from where this one is, without changing it."""
        new = Walk.__new__(Walk)
        new.protocol, new.split_users, new.speaker_names, new.assistant_name = (
            self.protocol,
            self.split_users,
            self.speaker_names,
            self.assistant_name,
        )
        new.out = list(self.out)
        if new.out:
            new.out[-1] = new.out[-1].copy()  # the one segment the next blocks may join
        new.calls, new.server_calls, new.open_calls, new.held = (
            dict(self.calls),
            set(self.server_calls),
            dict(self.open_calls),
            list(self.held),
        )
        new.conformer = self.conformer.copy() if self.conformer is not None else None
        new.reused = {k: list(v) for k, v in self.reused.items()} if self.reused else None
        new.stand_in, new.effort_target = self.stand_in, self.effort_target
        return new

    def pending(self, start: int) -> list[Segment]:
        """The segments from ``start`` on as the conversation's end leaves them (hints held
        back added), copied: the walk can go on as it was."""
        tail = Walk(self.protocol, split_users=self.split_users)
        tail.out = [seg.copy() for seg in self.out[start:]]
        tail.held = list(self.held)
        tail.flush()
        return tail.out

    # The tool rules, for the agent's own turn: a result answers an earlier call and is
    # finished, a call id met again is sent as one of its own, and no text comes between calls
    # and their results.
    # Client calls and results are sent with their ids and names conformed (see _toolids);
    # server-side calls and their results as they are. One method each, checks and all:
    # most of a history is calls and results.

    def result(self, index: int, block: Any, last: Segment | None) -> Segment:
        """A client call's result (``block``) into the results segment (``last``, or a new
        one), in call order, with the hints held back added once every call is answered: the
        segment the next block may join."""
        conformer = self.conformer
        if conformer is not None and conformer.kept.get(block.id) != block.name:  # else its call was sent as it was
            block = conformer.sent(block)
        if self.reused is not None and block.id in self.reused:
            block = self._answers(block)
        block_id, calls = block.id, self.calls
        if block_id not in calls:
            raise FormatError(
                index,
                f"tool result {block_id!r} answers no tool call made before it",
                self.protocol,
                code="orphan-result",
            )
        if block.state == "running":
            raise FormatError(
                index, f"tool result {block_id!r} is still running; only finished results can be sent", self.protocol
            )
        self.open_calls.pop(block_id, None)
        if last is not None and last.kind == "results":
            blocks = last.blocks
            blocks.append(block)
            if index != last.index:
                _joined(last, index, block)
            if calls[block_id] < calls[blocks[-2].id]:
                self.in_call_order(blocks)
        else:
            last = Segment("results", index, [block], "")
            self.out.append(last)
        if self.held and not self.open_calls:
            self.flush()
            last = self.out[-1]
        return last

    def call(self, index: int, block: Any, last: Segment | None) -> Any:
        """A tool call as sent (its segment kind is always the assistant's); ``last`` is the
        segment it may join."""
        if block.__dict__.get("server_side"):  # extra(), inlined: a call always takes extras
            self.server_calls.add(block.id)
            return block
        if self.conformer is not None:
            block = self.conformer.call(block)
        block_id, open_calls, calls = block.id, self.open_calls, self.calls
        if block_id in calls:
            block = self._again(block)
            block_id = block.id
        if open_calls and last is not None and last.kind != "assistant":
            _unanswered(open_calls, self.protocol)
        calls[block_id] = len(calls)
        open_calls[block_id] = index
        return block

    def _again(self, block: Any) -> Any:
        """A call whose id an earlier call of the conversation has (providers mint ids per
        turn or per response): sent with an id of its own, made from the id and how many
        calls had it before (the same history always gives the same request), in the form
        the target takes. The results that follow it answer it (see :meth:`_answers`)."""
        from ._toolids import REUSED_IDS

        block_id, calls = block.id, self.calls
        reused = self.reused if self.reused is not None else {}
        self.reused = reused
        sent = reused.setdefault(block_id, [block_id])
        id_map = self.conformer.id_map if self.conformer is not None else None
        rules = id_map.rules if id_map is not None else REUSED_IDS
        salt = len(sent)
        new_id = rules.rewrite(block_id, salt)
        while new_id in calls:
            salt += 1
            new_id = rules.rewrite(block_id, salt)
        sent.append(new_id)
        return block.replace(id=new_id)

    def _answers(self, block: Any) -> Any:
        """A result whose id several calls had: it answers the first of them still open
        (parallel calls with one id are answered in their order), else the last."""
        sent = self.reused[block.id]  # type: ignore[index]
        open_calls = self.open_calls
        new_id = next((c for c in sent if c in open_calls), sent[-1])
        return block if new_id == block.id else block.replace(id=new_id)


def segments(
    messages: Sequence[Msg],
    protocol: str,
    *,
    speaker_names: bool = False,
    assistant_name: str | None = None,
    split_users: bool = False,
) -> list[Segment]:
    """Split messages into neutral turns and check the shared tool rules (see module doc).

    ``speaker_names`` prefixes user text with the speaker's name and turns assistant
    messages of other agents (``name != assistant_name``) into user content.
    ``split_users`` keeps user messages of different speakers in separate segments.
    """
    walk = Walk(protocol, speaker_names=speaker_names, assistant_name=assistant_name, split_users=split_users)
    for index, msg in enumerate(messages):
        walk.feed(index, msg)
    last = max(len(walk.out) - 1, 0)  # the one segment still open
    return walk.out[:last] + walk.pending(last)


def merge_turn(
    turns: list[dict[str, Any]],
    role: str,
    items: list[Any],
    key: str = "content",
    after_results: Callable[[Any], bool] | None = None,
) -> None:
    """Add ``items`` as a turn of ``role``, merged into the last turn when it has the same
    role (protocols whose roles must alternate); empty ``items`` add nothing.

    ``after_results`` (for protocols whose tool results must open a user turn): ``items``
    are results (with what the results returned after them), and the predicate tells the
    parts that are not results. Merged into a turn that holds other parts, the results go
    ahead of those, each group in its order: every turn stays results-first as it grows,
    so none is sorted at its end."""
    if not items:
        return
    if turns and turns[-1]["role"] == role:
        existing = turns[-1][key]
        existing += items
        if after_results is not None and len(existing) > len(items) and after_results(existing[-len(items) - 1]):
            existing.sort(key=after_results)  # stable: results first, the rest in its order
    else:
        turns.append({"role": role, key: items})


def _joined(seg: Segment, index: int, block: Any) -> None:
    """``block`` of message ``index`` joined ``seg``, which began in another message: noted
    for :meth:`Segment.index_of`."""
    if seg.origin is None:
        seg.origin = {}
    seg.origin[id(block)] = index


def _unanswered(open_calls: dict[str, int], protocol: str) -> None:
    cid, index = next(iter(open_calls.items()))
    raise FormatError(
        index,
        f"tool call {cid!r} has no result before the conversation goes on; every tool call needs a tool result",
        protocol,
        code="unanswered-call",
    )


def _speaker(block: Any, name: str) -> Any:
    if block.type == "text":
        return TextBlock(text=f"{name}: {block.text}", id=block.id)
    return block


# -- data blocks -----------------------------------------------------------------------------


def data_parts(block: DataBlock) -> tuple[str, str, str]:
    """(kind, payload, media_type): kind is base64 (payload = data) or url (payload = url).
    Data that is not base64, or a media type that is none (taken when built, as AgentScope
    takes them), is refused here, where it would be sent: a ``FormatError`` naming the block
    (and, through :func:`guarded`, its message)."""
    src = block.source
    problem = data_problem(src.data if src.type == "base64" else None, src.media_type)
    if problem is not None:
        raise BadDataError(block.id, problem)
    if src.type == "base64":
        return "base64", src.data, src.media_type
    return "url", src.url, src.media_type


def sent_source(
    block: DataBlock, index: int, protocol: str, urls: tuple[str, ...] = ("http://", "https://", "data:")
) -> tuple[str, str, str]:
    """:func:`data_parts` for a formatter whose provider is sent a URL source only when it
    starts with one of ``urls`` (what the provider fetches or reads itself): any other URL is
    refused here, in one message for every protocol, saying what to do."""
    kind, payload, media_type = data_parts(block)
    if kind == "url" and not payload.startswith(urls):
        scheme = payload.split(":", 1)[0]
        takes = f" or a URL starting {' '.join(urls)}" if urls else ""
        raise FormatError(
            index,
            f"{protocol} cannot be sent {scheme}: sources; give the bytes (base64){takes} (the models layer "
            "fetches http and https sources the provider does not)",
            protocol,
            code="unsupported-media",
        )
    return kind, payload, media_type


class BadDataError(FormatError):
    """Inline data a provider would refuse; ``block_id`` names the block."""

    def __init__(self, block_id: str, problem: str, index: int | None = None, protocol: str = "") -> None:
        self.block_id, self.problem = block_id, problem
        super().__init__(
            index,
            f"data block {block_id!r}: {problem}; fix it, or send the data as a URL source",
            protocol,
            code="bad-data",
        )


def located(exc: FormatError, messages: Sequence[Msg], protocol: str) -> FormatError:
    """``exc`` naming the message that holds its block, where it named only the block."""
    if not isinstance(exc, BadDataError) or exc.index is not None:
        return exc
    for index, msg in enumerate(messages):
        if any(getattr(b, "id", None) == exc.block_id for b in msg.content):
            return BadDataError(exc.block_id, exc.problem, index, protocol or exc.protocol)
    return exc


def held_file(block: DataBlock, endpoint: str | None, files_api: str | None) -> str | None:
    """The id of the uploaded file (``model.upload_file``) a data block refers to, where
    ``endpoint`` holds it in ``files_api`` (the protocol's Files API: OpenAI's Chat and
    Responses share one); None for any other block, and for a file held elsewhere."""
    fields = block.__dict__
    file_id = fields.get("file_id") if fields else None
    if not isinstance(file_id, str) or not file_id or files_api is None or fields.get("file_api") != files_api:
        return None
    holder = origin(block)
    return file_id if holder is not None and holder.endpoint is not None and holder.endpoint == endpoint else None


def file_ref(block: DataBlock, endpoint: str | None, files_api: str | None, index: int, protocol: str) -> str | None:
    """The id of the uploaded file a data block refers to (``model.upload_file``), to send by
    reference where ``endpoint`` holds it in its ``files_api`` (the protocol's Files API:
    OpenAI's Chat and Responses share one); None for a block that is no file reference. A
    file held elsewhere (its bytes were not sent instead: the block keeps no local copy) is
    a ``FormatError`` (code ``file-elsewhere``) saying what to do."""
    fields = block.__dict__
    file_id = fields.get("file_id") if fields else None
    if not isinstance(file_id, str) or not file_id:
        return None
    if held_file(block, endpoint, files_api) is not None:
        return file_id
    holder = origin(block)
    held_by = holder.endpoint if holder is not None else None
    holder_name = (holder.provider or holder.protocol) if holder is not None else "another provider"
    where = f" at {endpoint}" if endpoint else ""
    raise FormatError(
        index,
        f"data block {block.id!r} is the file {file_id} held by {holder_name} "
        f"({held_by or 'its endpoint'}), which {protocol}{where} cannot read;"
        " upload it there too (model.upload_file), or upload it from a path, whose bytes are "
        "then sent where the file is not held",
        protocol,
        code="file-elsewhere",
    )


def data_uri(block: DataBlock) -> str:
    """A data block as a URL: its own for a URL source, else a ``data:`` URI of its base64."""
    kind, payload, media_type = data_parts(block)
    return payload if kind == "url" else f"data:{media_type.split(';')[0]};base64,{payload}"


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


# -- provenance: which provider-specific blocks a target takes back -------------------------


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

    def apply(self, messages: Sequence[Msg], stand_in: Callable[[Any], Any]) -> Sequence[Msg]:
        count = len(messages)
        if self.scanned > count or (self.scanned and messages[self.scanned - 1] is not self.last):
            self.scanned, self.cut, self.prefix = 0, None, []
        for index in range(self.scanned, count):
            msg = messages[index]
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


def is_raw_provider_block(block: Any) -> bool:
    """Whether a data block holds a provider's own item kept as it came (not media to send)."""
    return block.type == "data" and extra(block, "provider_block_type") is not None


class _Text:
    """A plain-string tool output as a text piece: what formatters read of a TextBlock
    (``type``, ``text``), without building and validating one per result."""

    __slots__ = ("text",)
    type = "text"

    def __init__(self, text: str) -> None:
        self.text = text


def result_blocks(result: ToolResultBlock) -> list[Any]:
    """A tool result's output as blocks (a plain string becomes one text piece)."""
    output = result.output
    if isinstance(output, str):
        return [_Text(output)] if output else []
    return list(output)
