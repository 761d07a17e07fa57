"""What a formatter's short path (:meth:`~modelwire.formatters.Formatter.short`) shares:
the shared walk's tool rules, for the usual history, in one pass.

Most histories hold system and user text, user media, and the agent's replies: text,
thinking, client tool calls and their results. A formatter can make its turns of those in
one pass, without the walk's segments, if it keeps the walk's rules and its runs: blocks
of one kind (system, user, the agent's own, results) in a row make one run, across
messages, as they make one segment of the walk; results are sent in the order of their
calls. :class:`UsualRun` keeps the rules, the run still open, and the system and user
messages; a formatter's subclass (the pass its ``usual_run()`` gives) takes the agent's
blocks (``own``), says what system and user text and media make, and makes each finished
run its turns (``to``). At the first block or broken rule it does not take, a method
returns False: the short path gives up, and ``format()`` runs the shared walk, which
formats the unusual and raises what is wrong, naming the message.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any, Sequence

from ..errors import FormatError, debug_enabled
from ..message import Msg
from ._common import REFUSED

__all__ = ["UsualRun"]


class UsualRun:
    """The walk's tool rules and the open run, for a short path (see the module doc).

    A subclass implements :meth:`own` (the agent's message: True when it took every block),
    :meth:`turns` (what the formatter keeps, from what the run made),
    what a system and a user message's blocks make (:meth:`system_text`, :meth:`user_text`,
    :meth:`user_media`), and :meth:`to` (the open run finished, one of another kind opened).
    In :meth:`own`, a client call goes through :meth:`called` and a result through
    :meth:`answered`; any other block of the agent's opens its run with ``if self.kind !=
    "assistant" and not self.joins("assistant")``."""

    __slots__ = ("fmt", "conformer", "kept", "kind", "places", "open_calls", "results")

    def __init__(self, fmt: Any, conformer: Any) -> None:
        self.fmt = fmt  # the formatter
        self.conformer = conformer  # tool ids and names as sent (see _toolids), or None
        self.kept = conformer.kept if conformer is not None else None  # id -> name of the calls sent as they were
        self.kind: str | None = None  # the kind of the run still open
        self.places: dict[str, int] = {}  # client call id -> its place among the calls
        self.open_calls: dict[str, int] = {}  # calls not answered yet -> message index
        # The open results run: (its call's place, the result as sent, its message's index);
        # sorted by_place, the walk's call order.
        self.results: list[tuple[int, Any, int]] = []

    def run(self, messages: Sequence[Any]) -> bool:
        """Every message taken, and the last run finished; False where the walk must say."""
        try:
            for index, msg in enumerate(messages):
                if not isinstance(msg, Msg):
                    return False
                role, content = msg.role, msg.content
                if role == "assistant":
                    if not self.own(index, content):
                        return False
                elif role == "user":
                    if not self.user(index, content) or self.open_calls:  # a question before every call is answered
                        return False
                elif not self.system(index, content):
                    return False
            self.to(None)
        except REFUSED as exc:  # FormatError among them (a ValueError): the walk says it, naming the message
            if debug_enabled() and not isinstance(exc, FormatError):
                self._walk_refuses(messages, exc)
            return False
        return True

    def _walk_refuses(self, messages: Sequence[Any], exc: BaseException) -> None:
        """With ``MODELWIRE_DEBUG=1``: an error other than ``FormatError`` out of this pass
        is a bug in it unless the walk refuses the same messages (bad input may break the pass
        before the walk's check names it); an ``AssertionError`` where the walk formats them."""
        try:
            self.fmt.draft().once(messages)
        except REFUSED:
            return
        raise AssertionError(f"the short path raised {exc!r} on a conversation the walk formats") from exc

    def joins(self, kind: str) -> bool:
        """Text or thinking of the agent's (``kind`` "assistant") opening its run: False
        between calls and their results, which the walk refuses."""
        if self.open_calls and self.kind == "results":
            return False
        self.to(kind)
        return True

    def called(self, index: int, block: Any) -> Any:
        """A client call as sent (its id and name conformed), its run open; None where the
        walk's call() refuses it, or for a server-side call (the walk's)."""
        open_calls, places = self.open_calls, self.places
        if block.__dict__.get("server_side") or (open_calls and self.kind != "assistant"):
            return None
        if self.conformer is not None:
            block = self.conformer.call(block)
        if block.id in places:
            return None
        places[block.id] = len(places)
        open_calls[block.id] = index
        if self.kind != "assistant":
            self.to("assistant")
        return block

    def answered(self, index: int, block: Any) -> bool:
        """A result (its id conformed) into the results run (:attr:`results`); False where
        the walk's result() refuses it."""
        kept = self.kept
        if kept is not None and kept.get(block.id) != block.name:
            block = self.conformer.sent(block)
        place = self.places.get(block.id)
        if place is None or block.state == "running":
            return False
        self.open_calls.pop(block.id, None)
        if self.kind != "results":
            self.to("results")
        self.results.append((place, block, index))
        return True

    def system(self, index: int, content: Sequence[Any]) -> bool:
        """A system message: its text (each piece to :meth:`system_text`); any other block
        is the walk's."""
        for b in content:
            if b.type != "text":
                return False
            if self.kind != "system":
                self.to("system")
            self.system_text(b.text)
        return True

    def user(self, index: int, content: Sequence[Any]) -> bool:
        """A user message: its text (to :meth:`user_text`, where not empty) and media (to
        :meth:`user_media`); any other block is the walk's."""
        for b in content:
            if self.kind != "user":
                self.to("user")
            btype = b.type
            if btype == "text":
                if b.text:
                    self.user_text(b.text)
            elif btype == "data":
                self.user_media(index, b)
            else:
                return False
        return True

    # -- a formatter's own ---------------------------------------------------------------

    def system_text(self, text: str) -> None:
        """A piece of system text into the open system run (or the system prompt)."""
        raise NotImplementedError

    def user_text(self, text: str) -> None:
        """A user message's text (not empty) into the open user run."""
        raise NotImplementedError

    def user_media(self, index: int, block: Any) -> None:
        """A user message's data block into the open user run (its index for errors)."""
        raise NotImplementedError

    def own(self, index: int, content: Sequence[Any]) -> bool:
        raise NotImplementedError

    def turns(self) -> Any:
        """What the formatter's take() would have kept (a ``Turns``), once :meth:`run` took
        every message."""
        raise NotImplementedError

    def to(self, kind: str | None) -> None:
        """The open run (of ``self.kind``, if any) made into turns, and one of ``kind``
        opened (None: the end)."""
        raise NotImplementedError


# Sorts a run's results, kept as (their call's place, ...), in call order.
by_place = itemgetter(0)
