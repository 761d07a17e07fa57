"""The base class of every protocol's formatter: what the models layer, the agent and the
conformance suite ask of one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from ..message import Msg
    from ._toolids import IdRules

__all__ = ["Formatter"]


class Formatter:
    """Messages in, a provider's request payload out (a plain dict, without ``model`` or
    sampling options: the models layer adds those).

    A subclass sets ``protocol`` and implements :meth:`format` (wrapped in
    :func:`~modelwire.formatters.guarded`, so it raises only ``FormatError``); it may set:

    - ``tool_id_rules`` / ``tool_name_rules``: the tool-call ids and tool names the target
      takes (:class:`~modelwire.formatters._toolids.IdRules`); others are rewritten before
      formatting, the same way for a call and its result (None: any);
    - :meth:`needs_inline`: which http(s) media the target cannot fetch itself (the models
      layer fetches those first and sends them as base64).

    ``provider`` (the preset's name) and ``endpoint`` (its endpoint family, set by the models
    layer) decide which provider-specific blocks replay natively
    (:func:`~modelwire.formatters.replays_natively`); other keyword options are the
    subclass's own.
    """

    protocol: str = ""
    tool_id_rules: IdRules | None = None
    tool_name_rules: IdRules | None = None
    endpoint: str | None = None  # the target's endpoint family (see formatters.replays_natively)

    def __init__(self, *, provider: str | None = None, **options: Any) -> None:
        # A subclass takes its own options; one that takes none refuses any, never drops it.
        if options:
            raise TypeError(f"{type(self).__name__} takes no option {next(iter(options))!r}")
        self.provider = provider  # the target; None: any server of this protocol

    @staticmethod
    def needs_inline(media_type: str) -> bool:
        """Whether an http(s) source of this media type must be sent as base64."""
        return False

    def format(self, messages: Sequence[Msg], tools: Sequence[Any] | None = None, tool_choice: Any = None) -> dict[str, Any]:
        raise NotImplementedError(f"{type(self).__name__} does not say how to format a conversation")
