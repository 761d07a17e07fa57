"""What a model accepts: its capabilities resolved from what is known of it, looked up from
the provider, and what was assumed or retired said once (the mixin :class:`Capable` of
:class:`~modelwire.models.HTTPModel`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..formatters._toolids import IdRules
from ..protocols import ModelCapabilities, WireProtocol
from .config import IN_CASSETTE, ModelSpec

if TYPE_CHECKING:
    import collections

    from ..formatters import Formatter
    from .transport import HTTPTransport

__all__ = ["Capable"]

log = logging.getLogger("modelwire.models")
_SAID_ASSUMED: set[tuple[str, str]] = set()  # (endpoint, model) whose assumed rules were logged


class Capable:
    """How :class:`~modelwire.models.HTTPModel` knows what its model accepts."""

    if TYPE_CHECKING:  # what it reads of the model
        spec: ModelSpec
        wire: WireProtocol
        name: str
        provider: str
        endpoint: str
        account: str | None
        formatter: Formatter
        transport: HTTPTransport
        capability_lookup: Any
        capability_lookup_seconds: float | None
        _capability_overrides: ModelCapabilities
        _capabilities: ModelCapabilities | None
        _published: ModelCapabilities | None
        _looked_up: bool
        _own_tool_rules: tuple[IdRules | None, IdRules | None]
        _drafts: collections.OrderedDict[int, tuple[Any, Any, int]]

    @property
    def capabilities(self) -> ModelCapabilities:
        """What this model accepts (the agent asks this, never the protocol's name): the
        protocol's defaults, the shipped table, what the provider published and what its
        refusals taught (see ``_learned``), then the user's ``capabilities={...}``."""
        if self._capabilities is None:
            from .capabilities import resolve_capabilities

            from ._learned import learned_rules

            defaults = self.wire.model_defaults(self.spec.preset, self.name)
            learned = learned_rules().get(self.endpoint, self.name)
            self._capabilities = resolve_capabilities(
                defaults,
                self.name,
                published=self._published,
                learned=learned,
                overrides=self._capability_overrides,
                provider=self.provider if self.at_own_endpoint else None,
            )
            self._fit_tool_rules(self._capabilities)
        return self._capabilities

    @property
    def at_own_endpoint(self) -> bool:
        """Whether this model is reached at its provider's own endpoint (the preset's base
        URL, or one a profile counts in its family with ``endpoint_family``), where what the
        capability table says of that endpoint holds (its ``[[endpoint]]`` entries: a tool
        limit, a retirement day). A proxy, a gateway or a local server named by ``base_url``
        is not: it gets the model's row alone. A preset without a URL of its own (Azure: each
        resource has its own) is at its own endpoint at whatever URL it is given."""
        preset = self.spec.preset
        return not preset.base_url or self.endpoint == (preset.endpoint_family or preset.name)

    @property
    def assumed_from(self) -> str | None:
        """The capability table's family whose rules this model is given though no row names
        it (a newer version of the family: ``claude-sonnet-5-7`` under ``claude-sonnet-5*``),
        or None. What the provider publishes about the model is laid over those rules."""
        from .capabilities import assumed_from

        return assumed_from(self.name)

    def assumption(self) -> str | None:
        """What modelwire assumed of this model, in words (None: nothing)."""
        family = self.assumed_from
        if family is None:
            return None
        published = " and what the provider publishes about it laid over them" if self._published else ""
        return (
            f"{self.provider}:{self.name}: no row of the capability table names this model; its rules are "
            f"assumed from {family}{published} (see them: modelwire models --capabilities "
            f"{self.provider}:{self.name}; compare with the provider: add --live)"
        )

    def _say_assumed(self, family: str) -> None:
        """The assumption, logged once per endpoint and model in a process."""
        key = (self.endpoint, self.name)
        if key not in _SAID_ASSUMED:
            _SAID_ASSUMED.add(key)
            log.warning("%s", self.assumption())

    def _say_retired(self) -> None:
        """That the provider retired this model, or retires it on a day to come (and which it
        names instead), logged once per endpoint and model in a process: a retired id may be
        answered by another model (a deprecation and, once its day has come, the retirement:
        each once)."""
        from ._preflight import retirement

        said = retirement(self.provider, self.name, self.capabilities)
        key = (self.endpoint, said)
        if key not in _SAID_ASSUMED:
            _SAID_ASSUMED.add(key)
            log.warning("%s", said)

    def _fit_tool_rules(self, caps: ModelCapabilities) -> None:
        """Tool-call ids and tool names sent in the form the provider said it takes (the
        pattern its refusal stated), else in the formatter's own. Rewriting an id or a name
        keeps the meaning: a call and its result keep their pair, and a name the model calls
        is mapped back."""
        ids, names = self._own_tool_rules
        if caps.tool_id_pattern and ids is not None:
            ids = IdRules.from_pattern(caps.tool_id_pattern) or ids
        if caps.tool_name_pattern and names is not None:
            names = IdRules.from_pattern(caps.tool_name_pattern) or names
        fmt = self.formatter
        if (ids, names) != (fmt.tool_id_rules, fmt.tool_name_rules):
            fmt.tool_id_rules, fmt.tool_name_rules = ids, names
            self._drafts.clear()  # what was built with the other rules
        if caps.system_messages and not fmt.system_in_place:
            fmt.system_in_place = True  # the model takes system messages where they are
            self._drafts.clear()
        if bool(caps.effort_per_message) != fmt.effort_in_place:
            fmt.effort_in_place = bool(caps.effort_per_message)  # and effort changes where they are
            self._drafts.clear()

    async def lookup_capabilities(self, *, cache: Any = None, budget: float | None = None) -> ModelCapabilities:
        """Ask the provider what this model accepts, once (where it publishes it, and where
        ``capability_lookup`` allows: ``"auto"`` asks only the provider's own endpoint, never
        a gateway or a local server, and never while a cassette is in use). The answer joins
        :attr:`capabilities`; a slow, failing or strange answer changes nothing. ``budget``:
        the seconds the answer may take (the model's ``capability_lookup_seconds``, half a
        second by default, as a call waits on it; a command that asks for the answer itself
        waits longer)."""
        if self._looked_up:
            return self.capabilities
        self._looked_up = True
        base_url = self.spec.base_url or ""
        allowed = self.capability_lookup is True or (
            self.capability_lookup == "auto" and base_url.rstrip("/") == self.spec.preset.base_url.rstrip("/")
        )
        if allowed and not IN_CASSETTE.get():
            wait = self.capability_lookup_seconds if budget is None else budget
            published = await self.provider_capabilities(cache=cache, budget=wait)
            if published is not None:
                self._published, self._capabilities = published, None
        return self.capabilities

    async def provider_capabilities(
        self, *, cache: Any = None, budget: float | None = None
    ) -> ModelCapabilities | None:
        """What the provider itself publishes about this model at this base URL (its models
        endpoint, read by the protocol), or None: it publishes nothing, or the answer did not
        come in ``budget`` seconds (see :meth:`lookup_capabilities`) or could not be read.
        ``cache``: where answers are kept (a ``CapabilityCache(None)`` asks afresh)."""
        url = self.wire.model_info_url(self.spec.base_url or "", self.name, self.spec.preset)
        if url is None:
            return None
        from ._lookup import LOOKUP_SECONDS, published_capabilities

        headers = self.wire.headers(self.spec.api_key, self.spec.preset)
        headers.pop("content-type", None)
        return await published_capabilities(
            self.wire,
            url,
            self.name,
            headers,
            self.transport,
            cache=cache,
            budget=LOOKUP_SECONDS if budget is None else budget,
            body=self.wire.model_info_body(self.name),
        )

    @property
    def _bound_model(self) -> str | None:
        """This model's name where it binds its signed thinking to itself (its capability
        ``thinking_bound``): recorded on that thinking, which then goes back only to it."""
        return self.name if "model" in (self.capabilities.thinking_bound or ()) else None

    @property
    def _bound_account(self) -> str | None:
        """This model's account where it binds its signed thinking to the account (its
        capability ``thinking_bound``): recorded on that thinking, which then goes back only
        to a model of the same account."""
        return self.account if "account" in (self.capabilities.thinking_bound or ()) else None
