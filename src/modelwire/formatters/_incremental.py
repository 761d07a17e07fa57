"""Requests that cost what is new: a formatter's work on a conversation, kept to go on from.

An agent sends its whole history on every turn, and turn n+1 is turn n's messages plus a
few. A :class:`Draft` is what a formatter built of a conversation so far: the shared walk
where it stopped, the tool ids conformed so far, the provider's turns finished so far
(each encoded once, as the bytes sent), and what the formatter keeps besides. Given the
next turn's messages, a draft checks that the ones it was built from are still there and
unchanged, formats only the new ones, and gives a payload equal to a full format of them
all, encoded to the same bytes (the tests compare both on every protocol).

"Unchanged" is checked, not assumed. A message is the same object, and nothing changed it
since (:class:`~modelwire.message.Msg` counts its changes: assigning a field, changing its
content list, folding an event into it); and no field of any block or source was assigned
since the draft was made (a global count; the fold's writes into the message it streams
count on that message). What is not seen: a change made inside a value a block holds (a
tool result's ``output`` list, a block's extras dict) without assigning it. Assign a new
value instead, or build the request afresh (:meth:`Draft.matches` is then False for
a message given as another object).

Only the last segment of the walk and the last provider turn can still change when messages
are added (the walk joins the next blocks of the same kind to the last segment; formatters
whose roles alternate join the next content of the same role to the last turn), so the
draft takes segments into the formatter once they are finished, and the payload is made
from a copy of what is still open.
"""

from __future__ import annotations

from hashlib import sha256
from operator import attrgetter, eq, is_
from typing import TYPE_CHECKING, Any, Sequence, cast

from msgspec import Raw
from msgspec.json import encode as _encode
from msgspec.msgpack import encode as _pack

from ..message import Msg
from ..message._blocks import EDITS
from ._common import ServerTool, Walk

if TYPE_CHECKING:
    from ..message._fold import FoldState

__all__ = ["Draft", "Turns"]


class Turns:
    """What a formatter keeps while a draft goes on: the provider's turns so far, the system
    parts, and what else it needs across the conversation (``more``, copied with the rest)."""

    __slots__ = ("turns", "system", "more")

    def __init__(self, more: dict[str, Any] | None = None) -> None:
        self.turns: list[dict[str, Any]] = []
        self.system: list[Any] = []
        self.more: dict[str, Any] = more if more is not None else {}

    def fork(self, key: str | None) -> "Turns":
        """A copy to finish a payload on: its lists are its own, and so is its last turn (and
        that turn's ``key`` list, which the next content of the same role extends), so
        nothing done to it changes this one."""
        new = Turns.__new__(Turns)
        new.turns = list(self.turns)
        new.system = list(self.system)
        new.more = {k: (v.copy() if isinstance(v, (dict, list, set)) else v) for k, v in self.more.items()}
        if key is not None and new.turns:
            last = new.turns[-1]
            new.turns[-1] = {**last, key: list(last[key])}
        return new


def _streaming(msg: Any) -> bool:
    """A message an event stream folds into that has not ended (an agent's reply while its
    tools run): it changes after this request, so no draft keeps it."""
    return isinstance(msg, Msg) and msg._fold is not None and msg.finished_reason is None


def _feed(fmt: Any, walk: Walk, acc: Turns, messages: Sequence[Any], start: int, taken: int) -> int:
    """``messages`` (the conversation's from index ``start`` on) through the walk, and the
    segments they finish into ``acc``; the count of segments taken."""
    for index, msg in enumerate(messages, start):
        walk.feed(index, msg)
    out = walk.out
    for seg in out[taken : len(out) - 1]:
        fmt.take(acc, seg)
    return max(taken, len(out) - 1)


# What no formatter reads of a block (checked in tests/test_drafts.py against every protocol):
# its times, and a text block's id (AgentScope makes a new one each time it builds a system
# message from its prompt). Everything else, extras and provenance included, is in the key.
_UNREAD = {"created_at", "finished_at"}
_UNREAD_BY_TYPE = {"text": {"id"}}

# A record's values as the content key packs them: its class's name, its fields but those
# above, and its extras. Read by a property each record class is given when first packed (its
# getter an attrgetter: C code), so that packing a message calls no Python per block.
_read = attrgetter("__record_reader__")


def _reader_installed(obj: Any) -> Any:
    """``obj``'s values (see ``_read``), its class given its reader first where it has none."""
    try:
        return _read(obj)
    except AttributeError:
        pass
    cls = type(obj)
    stored = getattr(cls, "__record_stored__", None)
    if stored is None:
        raise TypeError(f"no content key for {cls.__name__}")
    skip = _UNREAD | _UNREAD_BY_TYPE.get(getattr(cls, "type", ""), set())
    names = ["__class__.__name__", *(n for n in stored if n not in skip)]
    if cls.__record_extra__:
        names.append("__dict__")
    type.__setattr__(cls, "__record_reader__", property(attrgetter(*names)))
    return _read(obj)


def content_key(msg: Any) -> bytes | None:
    """A digest of what a formatter reads of ``msg`` (its role, name and blocks, every field
    and extra but those in ``_UNREAD``): two messages of one key format alike. None: a
    message that cannot be told this way (it is then never taken for another)."""
    if not isinstance(msg, Msg) or _streaming(msg):
        return None
    # A message no stream folds into holds its blocks as they are (``content`` would first
    # write a fold's buffered pieces into them, in a Python call).
    value = (msg.role, msg.name, msg._content if msg._fold is None else msg.content)
    try:
        encoded = _pack(value, enc_hook=_read)
    except AttributeError:  # a class packed for the first time, or an object that is no record
        try:
            encoded = _pack(value, enc_hook=_reader_installed)
        except (TypeError, ValueError, AttributeError, OverflowError):
            return None
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int msgpack has no form for
        return None
    return sha256(encoded).digest()


# A message's count of changes and the fold streaming into it (one C call per message); a
# fold's count of events applied is kept apart, for the few messages that have one.
_mark = attrgetter("_version", "_fold")


_fold_of = attrgetter("_fold")


def _applied(messages: Sequence[Any], start: int) -> dict[int, int]:
    folds = list(map(_fold_of, messages))
    if folds.count(None) == len(folds):  # the usual: no fold (one C pass)
        return {}
    return {k: fold.applied for k, fold in enumerate(folds, start) if fold is not None}


class Draft:
    """One formatter's build of one conversation, with one set of tools, so far (see the
    module doc). :meth:`extend` takes the messages of the next request, :meth:`payload`
    makes its payload, :meth:`turns_encoded` the turns as bytes for the body."""

    __slots__ = (
        "formatter",
        "key",
        "tools",
        "tool_choice",
        "walk",
        "taken",
        "acc",
        "fed",
        "marks",
        "applied",
        "edits",
        "raws",
        "tail",
        "keys",
        "fields",
        "fields_raw",
        "names",
    )

    def __init__(self, formatter: Any, tools: Sequence[Any] | None = None, tool_choice: Any = None) -> None:
        from ._toolids import _Conformer, _renamed

        self.formatter = formatter
        self.key: str = formatter.payload_turns  # where a payload holds the turns
        ids, names = formatter.tool_id_rules, formatter.tool_name_rules
        self.names: dict[str, str] | None = None  # {name sent: tool's own name}, as ``name_map`` gives it
        if names is not None and tools:
            self.names = {}
            tools, tool_choice = _renamed(tools, tool_choice, names, self.names)
        self.tools, self.tool_choice = tools, tool_choice
        self.walk: Walk = formatter.walk()
        if ids is not None or names is not None:
            self.walk.conformer = _Conformer(ids, names)
        self.taken = 0  # the segments the formatter has taken
        self.acc: Turns = formatter.begin()
        self.fed: list[Msg] = []  # the messages as given
        self.marks: list[tuple[int, Any]] = []
        self.applied: dict[int, int] = {}  # by index: the events applied by a fed message's fold
        self.edits = EDITS[0]
        self.raws: list[Raw] = []  # the finished turns, encoded
        self.tail: Sequence[Any] = ()  # the messages from the first still streaming on: never kept
        self.keys: list[bytes] = []  # the content keys of the first messages fed, taken when first asked for
        self.fields: dict[str, Any] | None = None  # the tools' fields in a payload, made once (see _finished)
        self.fields_raw: dict[int, Any] = {}  # their lists as bytes, by list (see fields_encoded)

    def matches(self, messages: Sequence[Any]) -> bool:
        """Whether ``messages`` begin with the ones this draft was built from, unchanged."""
        fed = self.fed
        n = len(fed)
        if len(messages) < n or EDITS[0] != self.edits:
            return False
        head = messages[:n]
        return (
            all(map(is_, head, fed))
            and list(map(_mark, head)) == self.marks
            # the marks just compared hold each message's fold: one with a count had a fold when fed
            and all(cast("FoldState", fed[k]._fold).applied == count for k, count in self.applied.items())
        )

    def _unchanged(self, k: int, msg: Any) -> bool:
        """Whether ``msg`` is fed message ``k`` as it was fed (not its object: its marks)."""
        if _mark(msg) != self.marks[k]:
            return False
        return msg._fold is None or msg._fold.applied == self.applied.get(k)

    def recognise(self, messages: Sequence[Any]) -> bool:
        """Whether ``messages`` begin with ones of the same content (:func:`content_key`) as
        those this draft was built from: the same messages as other objects (a history loaded
        from JSON, converted from another library, a system message built afresh). The draft
        then holds the given ones, to go on from as :meth:`matches` would."""
        fed = self.fed
        n = len(fed)
        if len(messages) < n or not self._keyed():
            return False
        head = messages[:n]
        # One call per message, the comparisons in C; a draft of another conversation (most
        # of those tried) is told by its first message. The same objects are keyed too: one
        # changed inside a value since (which its marks do not show) is then not taken.
        if not all(map(eq, map(content_key, head), self.keys)):
            return False
        self.fed[:n], self.marks[:n], self.edits = head, list(map(_mark, head)), EDITS[0]
        self.applied = _applied(head, 0)
        return True

    def _keyed(self) -> bool:
        """The content keys of every message fed, each taken while the message is as it was
        formatted (unchanged since, as :meth:`matches` checks); False when one is not."""
        keys, fed = self.keys, self.fed
        if len(keys) < len(fed) and EDITS[0] != self.edits:
            return False
        for k in range(len(keys), len(fed)):
            key = content_key(fed[k]) if self._unchanged(k, fed[k]) else None
            if key is None:
                return False
            keys.append(key)
        return True

    def extend(self, messages: Sequence[Any]) -> "Draft":
        """Take the messages after those already fed (the caller checked :meth:`matches`):
        up to the first one still streaming (a message an event stream folds into that has
        not ended), which :meth:`payload` formats with the rest on a copy, each time. A
        draft that raised is left part-way: drop it."""
        start, count = len(self.fed), len(messages)
        stop = start
        while stop < count and not _streaming(messages[stop]):
            stop += 1
        new = messages[start:stop]
        self.taken = _feed(self.formatter, self.walk, self.acc, new, start, self.taken)
        self.fed += new
        self.marks += map(_mark, new)
        self.applied.update(_applied(new, start))
        self.edits = EDITS[0]
        self.tail = messages[stop:]
        return self

    def once(self, messages: Sequence[Any]) -> dict[str, Any]:
        """The payload for ``messages`` from this fresh draft, keeping nothing for a next
        turn (what :meth:`~modelwire.formatters.Formatter.format` does): the payload
        :meth:`extend` and :meth:`payload` would give, without the marks they keep or the
        copies they finish on. The draft is spent: a next turn needs a new one."""
        fmt, walk, acc = self.formatter, self.walk, self.acc
        for index, msg in enumerate(messages):
            walk.feed(index, msg)
        last = max(len(walk.out) - 1, 0)  # the one segment still open
        for seg in walk.out[:last]:
            fmt.take(acc, seg)
        for seg in walk.pending(last):
            fmt.take(acc, seg)
        return fmt.finish(acc, self.tools, self.tool_choice)  # type: ignore[no-any-return]

    def payload(self) -> dict[str, Any]:
        """The payload for the messages of the last :meth:`extend`; the draft is not changed."""
        fmt = self.formatter
        acc = self.acc.fork(fmt.turn_content)
        walk, taken = self.walk, self.taken
        if self.tail:
            walk = walk.copy()
            taken = _feed(fmt, walk, acc, self.tail, len(self.fed), taken)
        for seg in walk.pending(taken):
            fmt.take(acc, seg)
        return self._finished(acc)

    def _finished(self, acc: Turns) -> dict[str, Any]:
        """The payload from ``acc``, with the tools' fields the formatter made for this draft's
        first payload (the tools are the same: a draft is kept for one key of them, see
        :func:`tools_key`), each payload with its own copy of their dicts and lists; so a
        next turn converts and checks no tool. A formatter that makes no tool fields
        (:meth:`~modelwire.formatters.Formatter.tool_fields`): its ``finish()``."""
        fmt, fields = self.formatter, self.fields
        if fields is None:
            if not _splits_finish(type(fmt)):
                return fmt.finish(acc, self.tools, self.tool_choice)  # type: ignore[no-any-return]
            fields = fmt.tool_fields(self.tools, self.tool_choice)
            if fields is None:
                return fmt.finish(acc, self.tools, self.tool_choice)  # type: ignore[no-any-return]
            self.fields = fields
        return fmt.assemble(acc, _own(fields))  # type: ignore[no-any-return]

    def turns_encoded(self, turns: list[Any]) -> list[Any]:
        """``turns`` (a payload's, from :meth:`payload`) with each finished turn of this draft
        as its bytes (a ``msgspec.Raw``, encoded once), the rest as they are: encoding
        the result gives the bytes ``turns`` would."""
        closed = self.acc.turns
        k = len(closed) - 1
        raws = self.raws
        while len(raws) < k:
            raws.append(Raw(_encode(closed[len(raws)])))
        if k <= 0:
            return turns
        at = 0 if turns and turns[0] is closed[0] else 1  # a turn put first (a placeholder)
        window = turns[at : at + k]
        if len(window) == k and all(map(is_, window, closed)):
            return [*turns[:at], *raws[:k], *turns[at + k :]]
        # Some finished turns were replaced in the payload (a cache mark on a copy): those as they are.
        return [*turns[:at], *(r if t is c else t for t, c, r in zip(window, closed, raws)), *turns[at + len(window) :]]

    def fields_encoded(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` (a request's, built on :meth:`payload`) with each of the tools' lists that
        is still this draft's as its bytes (a ``msgspec.Raw``, encoded once for every request
        with these tools), and each item of a list that is not (a cache mark appended or put
        on a copy of an item) that still is; the rest as it is: encoding the result gives
        the bytes ``body`` would. What ``extra_body`` or a protocol put in place of a list or
        an item is not the draft's, and so is encoded as it is."""
        fields = self.fields
        if not fields:
            return body
        out: dict[str, Any] | None = None
        for name, mine in fields.items():
            given = body.get(name)
            swapped = _swapped(given, mine, self.fields_raw)
            if swapped is not given:
                if out is None:
                    out = dict(body)
                out[name] = swapped
        return body if out is None else out


def _swapped(given: Any, mine: Any, raws: dict[int, Any]) -> Any:
    """``given`` (a body's value, made by :func:`_own` of ``mine``, then perhaps changed) with
    each list that holds ``mine``'s items, the same objects, as bytes: the whole list where it
    holds them alone, else each of those items (``raws``: the bytes made so far, by list)."""
    if type(given) is dict and type(mine) is dict:
        out: dict[str, Any] | None = None
        for key, value in mine.items():
            was = given.get(key)
            now = _swapped(was, value, raws)
            if now is not was:
                if out is None:
                    out = dict(given)
                out[key] = now
        return given if out is None else out
    if type(given) is not list or type(mine) is not list or not mine:
        return given
    kept: list[Any] | None = raws.get(id(mine))
    if kept is None:
        kept = [None, None]  # the whole list's bytes, each item's
        raws[id(mine)] = kept
    n = len(mine)
    if len(given) == n and all(map(is_, given, mine)):
        if kept[0] is None:  # encoded once; the body then copies the bytes
            kept[0] = Raw(_encode(mine))
        return kept[0]
    if kept[1] is None:
        kept[1] = [Raw(_encode(item)) for item in mine]
    return [r if g is m else g for g, m, r in zip(given, mine, kept[1])] + given[n:]


_SPLITS: dict[type, bool] = {}


def _splits_finish(cls: type) -> bool:
    """Whether ``cls`` makes its payloads with :meth:`tool_fields` and :meth:`assemble`: its
    ``finish`` is the one a class above its ``tool_fields`` has. A subclass that writes its
    own ``finish()`` (a shipped formatter with a field of its own added) has it called."""
    known = _SPLITS.get(cls)
    if known is None:
        finish = next(c for c in cls.__mro__ if "finish" in c.__dict__)
        fields = next((c for c in cls.__mro__ if "tool_fields" in c.__dict__), finish)
        known = _SPLITS[cls] = fields is not finish and issubclass(fields, finish)
    return known


def _own(value: Any) -> Any:
    """``value`` with every dict reached through dicts copied, and every list one level (a
    new list of the same items): what a request's body changes in place (``extra_body`` is
    merged into its dicts, a cache mark appended to a list) is then the payload's own, not
    the draft's. The items of a list are shared: what marks one puts the mark on a copy."""
    if type(value) is dict:
        return {k: _own(v) for k, v in value.items()}
    if type(value) is list:
        return list(value)
    return value


def tools_key(tools: Sequence[Any] | None, tool_choice: Any) -> Any:
    """What tells, on the next request, whether the tools and tool choice are the same: their
    JSON bytes (one C pass, no copy), with what has no JSON form (a function, an agent's tool
    object) held by identity; None when they cannot be encoded (then no draft is kept).
    Equal keys, equal tools: a value changed in place gives other bytes."""
    opaque: list[Any] = []

    def held(obj: Any) -> Any:
        # A record (a ToolSpec) by its JSON form, an agent's tool by the spec it gives now: both
        # can be changed in place, and a changed one must not find the old draft.
        to_dict = getattr(obj, "to_dict", None)
        if callable(to_dict):
            return to_dict()
        if type(obj) is ServerTool:  # by what it says now: its config can be changed in place
            return {"server_tool": obj.kind, "config": obj.config, "raw": obj.raw}
        spec = getattr(obj, "tool_spec", None)
        if callable(spec):
            return spec()
        opaque.append(obj)  # kept by the key: its identity stays its own while the key lives
        return len(opaque) - 1

    try:
        encoded = _encode([list(tools) if tools else None, tool_choice], enc_hook=held)
    except Exception:  # noqa: BLE001 - a tool that cannot be encoded: no reuse
        return None
    return _ToolsKey(encoded, opaque)


class _ToolsKey:
    """Tools as :func:`tools_key` saw them: equal when their bytes are, and what had no JSON
    form is the same objects."""

    __slots__ = ("encoded", "opaque")

    def __init__(self, encoded: bytes, opaque: list[Any]) -> None:
        self.encoded, self.opaque = encoded, opaque

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _ToolsKey):
            return NotImplemented
        mine, theirs = self.opaque, other.opaque
        return self.encoded == other.encoded and len(mine) == len(theirs) and all(map(is_, mine, theirs))

    __hash__ = None  # type: ignore[assignment]
