"""The base class of every protocol's formatter: what the models layer, the agent and the
conformance suite ask of one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Sequence


if TYPE_CHECKING:  # pragma: no cover
    from ..message import Msg
    from ._common import Segment, Walk
    from ._incremental import Draft, Turns
    from ._toolids import IdRules

__all__ = ["Formatter", "MessagesFormatter"]


class Formatter:
    """Messages in, a provider's request payload out (a plain dict, without ``model`` or
    sampling options: the models layer adds those).

    A subclass sets ``protocol`` and either implements :meth:`format` (wrapped in
    :func:`~modelwire.formatters.guarded`, so it raises only ``FormatError``), or builds on
    the shared walk and drafts (see :mod:`modelwire.formatters._incremental`): it sets
    ``payload_turns`` (the payload key of the provider's turns) and ``turn_content`` (the
    key of a turn's list that the next content of the same role extends, where roles
    alternate; None where they need not), and implements :meth:`take` (one finished
    segment into what it keeps) and :meth:`finish` (the payload, from a copy, changing no
    finished turn). Then :meth:`format` is a fresh draft's payload, and the models layer
    keeps the draft to build the next turn's request from. It may also set:

    - ``tool_id_rules`` / ``tool_name_rules``: the tool-call ids and tool names the target
      takes (:class:`~modelwire.formatters._toolids.IdRules`); others are rewritten before
      formatting, the same way for a call and its result (None: any);
    - :meth:`needs_inline`: which http(s) media the target cannot fetch itself (the models
      layer fetches those first and sends them as base64), and ``fetched_urls``: the URL
      prefixes it reads itself whatever the media type (a video site's pages), never fetched.

    ``provider`` (the preset's name) and ``endpoint`` (its endpoint family, set by the models
    layer) decide which provider-specific blocks replay natively
    (:func:`~modelwire.formatters.replays_natively`); ``speaker_names`` and
    ``assistant_name`` are the shared walk's, for conversations of several speakers; other
    keyword options are the subclass's own.
    """

    protocol: str = ""
    tool_id_rules: IdRules | None = None
    tool_name_rules: IdRules | None = None
    endpoint: str | None = None  # the target's endpoint family (see formatters.replays_natively)
    model: str | None = None  # the target model, where known (thinking bound to a model goes back only to it)
    account: str | None = None  # the target account's fingerprint, where known (likewise, for thinking bound to one)
    # Whether a system message in mid-conversation stays where it is (False: the target has
    # one system prompt at the top, and every system message joins it; ``check`` says so).
    system_in_place: bool = True
    # Whether the model takes an effort change in mid-conversation (see EffortChange; set by
    # the models layer from the capability ``effort_per_message``, which follows a model onto
    # any protocol) ...
    effort_in_place: bool = False
    # ... and whether this formatter writes one (a protocol with such an item or message
    # says so). Only both together take it where it is; else it is refused, never dropped.
    takes_effort_change: ClassVar[bool] = False
    payload_turns: ClassVar[str | None] = None
    turn_content: ClassVar[str | None] = None

    def __init__(
        self,
        *,
        provider: str | None = None,
        speaker_names: bool = False,
        assistant_name: str | None = None,
        **options: Any,
    ) -> None:
        # A subclass takes its own options; one that takes none refuses any, never drops it.
        if options:
            raise TypeError(f"{type(self).__name__} takes no option {next(iter(options))!r}")
        self.provider = provider  # the target; None: any server of this protocol
        # Several speakers: user text is prefixed with its speaker's name, and assistant
        # messages of agents other than ``assistant_name`` become user content.
        self.speaker_names = speaker_names
        self.assistant_name = assistant_name

    # http(s) URL prefixes the target reads itself whatever needs_inline says of the media type.
    fetched_urls: ClassVar[tuple[str, ...]] = ()

    @staticmethod
    def needs_inline(media_type: str) -> bool:
        """Whether an http(s) source of this media type must be sent as base64."""
        return False

    def format(
        self, messages: Sequence[Msg], tools: Sequence[Any] | None = None, tool_choice: Any = None
    ) -> dict[str, Any]:
        if self.payload_turns is None:
            raise NotImplementedError(f"{type(self).__name__} does not say how to format a conversation")
        from ._common import format_errors

        with format_errors(self.protocol, messages):
            return self.draft(tools, tool_choice).once(messages)

    # -- drafts (formatters built on the shared walk) --------------------------------------

    def draft(self, tools: Sequence[Any] | None = None, tool_choice: Any = None) -> Draft:
        """A fresh draft of a conversation with these tools. Its errors are the formatter's
        own: run it under ``format_errors``. A formatter that implements ``format()`` itself
        (no ``payload_turns``) keeps no drafts: a ``TypeError``."""
        if self.payload_turns is None:
            raise TypeError(f"{type(self).__name__} implements format() itself and keeps no drafts")
        from ._incremental import Draft

        return Draft(self, tools, tool_choice)

    def walk(self) -> Walk:
        """The shared walk, with this formatter's options."""
        from ._common import Walk

        walk = Walk(self.protocol, speaker_names=self.speaker_names, assistant_name=self.assistant_name)
        walk.stand_in = self.compaction_stand_in
        taken = self.effort_in_place and self.takes_effort_change
        walk.effort_target = None if taken else (self.model or self.protocol)
        return walk

    def compaction_stand_in(self, block: Any) -> Any:
        """What this target sends for a compaction block: the block where it may go back,
        else its summary as text, else nothing (see ``formatters.compaction_stand_in``)."""
        from ._common import compaction_stand_in

        return compaction_stand_in(block, self.protocol, self.provider, self.endpoint)

    def begin(self) -> Turns:
        """What this formatter keeps of a conversation, before its first message."""
        from ._incremental import Turns

        return Turns()

    def take(self, acc: Turns, seg: Segment) -> None:
        """One finished segment, into what is kept."""
        raise NotImplementedError

    def finish(self, acc: Turns, tools: Sequence[Any] | None, tool_choice: Any) -> dict[str, Any]:
        """The payload from ``acc`` (a copy, see :meth:`Turns.fork`: change no turn but its
        last, nor any list's items). By default, :meth:`assemble` of ``acc`` and the
        :meth:`tool_fields` of the tools: a formatter writes those two, or this one."""
        fields = self.tool_fields(tools, tool_choice)
        if fields is None:
            raise NotImplementedError
        return self.assemble(acc, fields)

    def tool_fields(self, tools: Sequence[Any] | None, tool_choice: Any) -> dict[str, Any] | None:
        """The payload's fields for these tools and this tool choice, in the payload's order,
        made from them and this formatter's settings alone: a draft makes them once and
        reuses them for every request it builds with the same tools (an agent sends the same
        tools on every turn). None: this formatter puts its tools in at :meth:`finish`."""
        return None

    def assemble(self, acc: Turns, fields: dict[str, Any]) -> dict[str, Any]:
        """The payload from ``acc`` (as :meth:`finish` has it) and the tools' ``fields`` (from
        :meth:`tool_fields`: the dicts and lists in them are this payload's own, but not
        the items of a list, which other payloads share: put a change on a copy)."""
        raise NotImplementedError


class MessagesFormatter(Formatter):
    """A formatter whose turns are one list of role messages, nothing merged (Ollama,
    Cohere): :meth:`take` sends a system segment as one system message of its joined
    text, a user or assistant segment as the message :meth:`_user` / :meth:`_assistant`
    make of it (None: nothing to send), and each tool result as the message
    :meth:`_result` makes of it."""

    payload_turns = "messages"

    def take(self, acc: Turns, seg: Segment) -> None:
        out = acc.turns
        if seg.kind == "system":
            text = "\n\n".join(b.text for b in seg.blocks if b.text)
            if text:
                out.append({"role": "system", "content": text})
        elif seg.kind == "user":
            msg = self._user(seg)
            if msg is not None:
                out.append(msg)
        elif seg.kind == "assistant":
            msg = self._assistant(seg)
            if msg is not None:
                out.append(msg)
        else:
            out += [self._result(r, seg.index_of(r)) for r in seg.blocks]

    def _user(self, seg: Segment) -> dict[str, Any] | None:
        raise NotImplementedError

    def _assistant(self, seg: Segment) -> dict[str, Any] | None:
        raise NotImplementedError

    def _result(self, result: Any, index: int) -> dict[str, Any]:
        raise NotImplementedError
