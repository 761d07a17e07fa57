"""Splitting messages into turns, the one way every formatter does.

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

from typing import Any, Callable, Literal, Sequence

from ..errors import FormatError
from ..message import Msg, TextBlock
from ._blocks import extra


# What a turn-to-be is: a system prompt, a user's turn, an assistant's turn, or the results
# that answer the calls of the assistant's turn before them.
SegmentKind = Literal["system", "user", "assistant", "results"]


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
        if all(seg.kind == "system" for seg in self.out):  # the opening prompt: nothing to change yet
            raise FormatError(
                index,
                f"metadata {EFFORT_KEY!r} on a system message before the first turn is not an effort change: "
                "set reasoning_effort on the request's options for the start of the conversation",
                self.protocol,
                code="effort-change",
            )
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
