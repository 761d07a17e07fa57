"""A model that speaks a provider's HTTP API: formatter + transport + adapter."""

from __future__ import annotations

import asyncio
import collections
import json
import logging
from contextlib import aclosing
from dataclasses import replace
from typing import Any, AsyncGenerator, Sequence
from urllib.parse import urlparse

from .. import errors as E
from .. import telemetry
from .._ids import new_id
from ..event import AgentEvent, ModelCallEndEvent
from .._sync import run_sync
from ..errors import UnsupportedOptionError, debug_enabled
from ..formatters import ToolSpec
from ..formatters._common import CompactionCut
from ..formatters._toolids import IdRules, name_map
from ..message import AssistantMsg, Msg, MsgInput, UserMsg, as_messages
from ..protocols import ModelCapabilities, ModelOptions, WireProtocol, get_protocol
from ..protocols._protocol import thinking_requested
from ._body import encode_body, http_error, read_limited
from ._media import has_media, plain_prefix, refused_media, resolve_sources, without_media
from ._call import Attempt, Call, open_provider_calls
from ._failures import AGAIN, Failures
from ._pricing import Pricing, pricing_option
from ._resume import Resumption
from .config import CONVERSATION, IN_CASSETTE, REPLAY_KEY, REPLAYING, ModelSpec, Preset
from ._request import check_strict_tools, conversation, depends_on_capabilities, same_as_full
from .transport import HTTPTransport, RetryPolicy, Timeouts, read_chunks

log = logging.getLogger("modelwire.models")
_SAID_ASSUMED: set[tuple[str, str]] = set()  # (endpoint, model) whose assumed rules were logged


_CHAIN_RECORDS = 16  # stored responses kept per model for ``chain`` (the latest conversations)

__all__ = ["HTTPModel"]


def _pacing(options: dict[str, Any]) -> tuple[int | None, Any]:
    """``max_concurrent`` and ``rate_limiter`` taken out of a model's options, checked."""
    limit = options.pop("max_concurrent", None)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise E.ConfigError(f"max_concurrent={limit!r} must be a whole number of calls, at least 1")
    limiter = options.pop("rate_limiter", None)
    if limiter is not None and not callable(getattr(limiter, "acquire", None)):
        raise E.ConfigError(f"rate_limiter={limiter!r} must be a modelwire.models.RateLimiter")
    return limit, limiter


class HTTPModel(Pricing, Failures, Resumption):
    """One provider model. ``stream()`` yields the events of one model call, ``complete()``
    folds them into the assistant message.

    Events before the first content block (only ``MODEL_CALL_START``) are held back until
    content arrives, so that an error at the very start of a stream (an overloaded server)
    can still be retried: nothing is retried once output was passed on.
    """

    def __init__(
        self,
        spec: ModelSpec,
        *,
        transport: HTTPTransport | None = None,
        retry: RetryPolicy | None = None,
        sleep: Any = None,
        max_source_bytes: int = 20 * 1024 * 1024,
    ) -> None:
        self.spec = spec
        self.name = spec.model
        self.provider = spec.preset.name
        self.protocol = spec.preset.protocol
        self.wire: WireProtocol = get_protocol(self.protocol)
        options = dict(spec.options)
        timeouts = options.pop("timeouts", None)
        self.timeouts = Timeouts(**timeouts) if isinstance(timeouts, dict) else (timeouts or Timeouts())
        formatter_options = options.pop("formatter", {})
        overrides = options.pop("capabilities", None) or {}
        if not isinstance(overrides, ModelCapabilities):
            overrides = ModelCapabilities.from_mapping(overrides, f"capabilities of {spec.preset.name}:{spec.model}")
        self._capability_overrides = overrides
        self._capabilities: ModelCapabilities | None = None
        self._published: ModelCapabilities | None = None
        self._looked_up = False
        lookup = options.pop("capability_lookup", "auto")
        if lookup not in ("auto", True, False):
            raise E.ConfigError(f"capability_lookup={lookup!r} must be 'auto', True or False")
        self.capability_lookup = lookup
        self.max_concurrent, self.rate_limiter = _pacing(options)
        self.pricing = pricing_option(options)
        if self.pricing:
            self._preload_prices()  # asked for: the catalogue loads in a thread from now on
        self._slots: Any = None  # loop -> asyncio.Semaphore (a semaphore belongs to one loop)
        media = options.pop("on_unsupported_media", "refuse")
        if media not in ("refuse", "note"):
            raise E.ConfigError(f"on_unsupported_media={media!r} must be 'refuse' or 'note'")
        self.on_unsupported_media = media
        self.endpoint, self.account = _endpoint_and_account(spec, options)
        self.options = ModelOptions.from_dict(options)
        self.formatter = self.wire.new_formatter(spec.preset, spec.model, **formatter_options)
        self.formatter.endpoint, self.formatter.model = self.endpoint, spec.model
        self.formatter.account = self.account
        # The formatter's own id and name rules, for when a refusal's pattern is forgotten.
        self._own_tool_rules = (self.formatter.tool_id_rules, self.formatter.tool_name_rules)
        self.transport = transport or HTTPTransport(timeouts=self.timeouts)
        self.retry = retry or RetryPolicy()
        self._sleep = sleep or asyncio.sleep
        self.max_source_bytes = max_source_bytes
        self._credentials: Any = None
        self._cache_resources: Any = None  # CacheResources, once a call asks for one
        self._chains: Any = collections.deque(maxlen=_CHAIN_RECORDS)  # stored responses a call may continue (chain)
        self._token_counts: collections.OrderedDict[bytes, int] = (
            collections.OrderedDict()
        )  # count_tokens, by request body
        # The formatter's drafts of the last few conversations, by first message (see formatters._incremental).
        self._names: Any = None  # the last tools' name map, by their key (see _name_map)
        self._drafts: collections.OrderedDict[int, tuple[Any, Any, int]] = collections.OrderedDict()

    def __repr__(self) -> str:
        return f"HTTPModel({self.provider}:{self.name})"

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

    async def lookup_capabilities(self, *, cache: Any = None) -> ModelCapabilities:
        """Ask the provider what this model accepts, once (where it publishes it, and where
        ``capability_lookup`` allows: ``"auto"`` asks only the provider's own endpoint, never
        a gateway or a local server, and never while a cassette is in use). The answer joins
        :attr:`capabilities`; a slow, failing or strange answer changes nothing."""
        if self._looked_up:
            return self.capabilities
        self._looked_up = True
        base_url = self.spec.base_url or ""
        allowed = self.capability_lookup is True or (
            self.capability_lookup == "auto" and base_url.rstrip("/") == self.spec.preset.base_url.rstrip("/")
        )
        if allowed and not IN_CASSETTE.get():
            published = await self.provider_capabilities(cache=cache)
            if published is not None:
                self._published, self._capabilities = published, None
        return self.capabilities

    async def provider_capabilities(self, *, cache: Any = None) -> ModelCapabilities | None:
        """What the provider itself publishes about this model at this base URL (its models
        endpoint, read by the protocol), or None: it publishes nothing, or the answer did not
        come or could not be read. ``cache``: where answers are kept (a
        ``CapabilityCache(None)`` asks afresh)."""
        url = self.wire.model_info_url(self.spec.base_url or "", self.name, self.spec.preset)
        if url is None:
            return None
        from ._lookup import published_capabilities

        headers = self.wire.headers(self.spec.api_key, self.spec.preset)
        headers.pop("content-type", None)
        return await published_capabilities(
            self.wire, url, self.name, headers, self.transport, cache=cache, body=self.wire.model_info_body(self.name)
        )

    def preflight(
        self,
        messages: MsgInput,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        options: ModelOptions | dict[str, Any] | None = None,
    ) -> list[Any]:
        """Every reason the next request for these messages would be refused or would lose
        something, found offline (see :mod:`._preflight`): an empty list when none."""
        from ._preflight import preflight

        return preflight(self, as_messages(messages), tools, tool_choice, options)

    def forced_tool_ok(self, options: ModelOptions | dict[str, Any] | None = None) -> bool:
        """Whether a forced tool choice can go with these options on this model (Claude
        thinking on a budget, DeepSeek thinking, and some models refuse any forcing)."""
        probe = [ToolSpec("probe", "", {"type": "object", "properties": {}})]
        try:
            self.build_request([UserMsg("user", "probe")], probe, "required", options)
        except UnsupportedOptionError as exc:
            return exc.option != "tool_choice"
        return True

    # -- request -------------------------------------------------------------------------

    @property
    def _compaction_cut(self) -> CompactionCut:
        """Where the history starts past a compaction window this model cannot read."""
        cut = self.__dict__.get("_cut")
        if cut is None:
            cut = self.__dict__["_cut"] = CompactionCut()
        return cut

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

    def url(self, opts: ModelOptions | None = None) -> str:
        """Where a request goes: the streamed endpoint, or the whole-answer one when ``opts``
        ask for ``stream=False``."""
        url = self.wire.url(self.spec.base_url or "", self.name, self.spec.preset)
        return self.wire.whole_url(url, self.spec.preset) if opts is not None and opts.stream is False else url

    def headers(self, extra: dict[str, str]) -> dict[str, str]:
        return self.wire.headers(self.spec.api_key, self.spec.preset, extra)

    def _signs_body(self) -> bool:
        """Whether the request's signature covers its bytes (cloud credentials, no plain key)."""
        return not self.spec.api_key and self.spec.preset.dialect.get("credentials") is not None

    async def _signed(self, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
        """The headers with cloud credentials applied, where the provider's key is not a
        plain key (``dialect["credentials"]``: Google application default credentials, AWS
        SigV4). Resolving and refreshing them may touch the network: off the event loop."""
        kind = self.spec.preset.dialect.get("credentials")
        if self.spec.api_key or kind is None:
            return headers
        if self._credentials is None:
            from ..protocols import credentials_for

            self._credentials = credentials_for(kind, self.spec.preset.protocol)
        return await asyncio.to_thread(self._credentials.apply, "POST", url, headers, body)

    # How many conversations' drafts a model keeps (the most recently used).
    drafts_kept = 8

    def build_request(
        self,
        messages: Sequence[Msg],
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        options: ModelOptions | dict[str, Any] | None = None,
        *,
        drafts: list[Any] | None = None,
    ) -> tuple[dict[str, Any], ModelOptions]:
        """The request body for these messages (the messages' sources already resolved).
        With ``drafts`` (a list, filled in), what was built for the conversation's last
        request is built on, and kept for its next one."""
        opts = self.options.merged(options)
        caps = self.capabilities
        if tools:
            self._check_tool_use(caps, opts, tools)
        if tools and tool_choice not in (None, "auto", "none"):
            if caps.forced_tool is False:
                raise UnsupportedOptionError(
                    "tool_choice",
                    self.provider,
                    "the model cannot be made to call a tool; use tool_choice='auto'",
                    model=self.name,
                )
            if caps.forced_tool_thinking is False and opts.thinking is None and caps.thinking_default:
                # A model that thinks unless told not to (DeepSeek V4): told not to, where it can be.
                opts = replace(opts, thinking=False) if caps.thinking_off is not False else opts
            if caps.forced_tool_thinking is False and thinking_requested(opts, caps):
                raise UnsupportedOptionError(
                    "tool_choice",
                    self.provider,
                    (
                        "the model cannot be made to call a tool while it thinks; use tool_choice='auto', or "
                        "thinking=False"
                    ),
                    model=self.name,
                )
        if caps.strict_refused and tools:
            check_strict_tools(tools, caps.strict_refused, self.provider, self.name)
        messages = self._compaction_cut.apply(messages, self.formatter.compaction_stand_in)  # see CompactionCut
        refused = refused_media(caps)
        if drafts is None or self.formatter.payload_turns is None or not messages:
            payload = self.formatter.format(self._media_checked(messages, refused), tools, tool_choice)
        else:
            payload = self._drafted(messages, tools, tool_choice, refused, drafts)
        return self.wire.body(self.name, payload, opts, self.spec.preset, caps), opts

    def _check_tool_use(self, caps: ModelCapabilities, opts: ModelOptions, tools: Sequence[Any]) -> None:
        """Refuse tools the model does not take: at all, in a streamed request, more of them
        than a request may hold, or a provider-defined tool type it refuses."""
        count = len(tools)
        if caps.refused_tool_types:
            _check_tool_types(tools, caps, self.provider, self.name)
        if caps.max_tools is not None and count > caps.max_tools:
            raise UnsupportedOptionError(
                "tools",
                self.provider,
                f"a request holds at most {caps.max_tools} tools, and {count} were given; send those this turn needs",
                model=self.name,
            )
        if caps.tool_use is False:
            raise UnsupportedOptionError(
                "tools",
                self.provider,
                "the model takes no tools; leave them out, or choose one that does",
                model=self.name,
            )
        if caps.streamed_tool_use is False and opts.stream is not False:
            raise UnsupportedOptionError(
                "stream",
                self.provider,
                "the model takes tools only in a request that is not streamed; set stream=False",
                model=self.name,
            )

    def _drafted(
        self,
        messages: Sequence[Msg],
        tools: Sequence[Any] | None,
        tool_choice: Any,
        refused: frozenset[str],
        drafted: list[Any],
    ) -> dict[str, Any]:
        """The payload, built on what was built for this conversation's last request when
        its messages are still there and unchanged (only the new ones are media-checked and
        formatted), else afresh; the draft is kept for the next one and put in ``drafted``
        with its turns."""
        from ..formatters import format_errors
        from ..formatters._incremental import tools_key

        fmt, drafts = self.formatter, self._drafts
        slot = id(messages[0])
        given = tools_key(tools, tool_choice)
        key = None if given is None else (given, refused)
        kept = self._kept_draft(messages, key)
        draft = kept[1] if kept is not None else fmt.draft(tools, tool_choice)
        # The messages the draft holds passed this check, unchanged, with the same refusals.
        messages = self._media_checked(messages, refused, start=len(draft.fed))
        with format_errors(fmt.protocol, messages):
            payload = draft.extend(messages).payload()  # a draft that raised is not kept
        if debug_enabled():
            same_as_full(payload, fmt, messages, tools, tool_choice)
        if key is not None:
            plain = kept[2] if kept is not None and kept[1] is draft else 0
            drafts[slot] = (key, draft, plain_prefix(draft.fed, plain))
            while len(drafts) > self.drafts_kept:
                drafts.popitem(last=False)
        drafted[:] = [draft, payload[draft.key], given]  # the tools' key too: computed once per call
        return payload

    def _kept_draft(self, messages: Sequence[Msg], key: Any) -> tuple[Any, Any, int] | None:
        """The draft kept for this conversation, with these tools and refusals, taken out (a
        draft has one user at a time): found by its first message, the same objects
        unchanged; else one whose messages ``messages`` begin with as other objects of the
        same content (see ``Draft.recognise``); else None."""
        drafts = self._drafts
        kept = drafts.pop(id(messages[0]), None)
        if key is None:
            return None
        if kept is not None and kept[0] == key and kept[1].matches(messages):
            return kept
        for slot, other in list(drafts.items()):
            if other[0] == key and other[1].recognise(messages):
                del drafts[slot]
                return other
        return None

    def _name_map(self, tools: Sequence[Any] | None, tool_choice: Any, given: Any = None) -> dict[str, str]:
        """``name_map`` of the tools, kept while the tools and the name rules are the same
        (an agent gives the same tools on every call). ``given``: the tools' key this call's
        draft took (``tools_key(tools, tool_choice)``), so they are not encoded twice."""
        rules = getattr(self.formatter, "tool_name_rules", None)
        if rules is None or not tools:
            return {}
        from ..formatters._incremental import tools_key

        key = (given if given is not None else tools_key(tools, tool_choice), rules)
        kept = self._names
        if key[0] is None or kept is None or kept[0] != key:
            kept = self._names = (key, name_map(tools, rules))
        return dict(kept[1])

    def _plain(self, messages: Sequence[Msg]) -> int:
        """How many of the first messages need no walk for sources: ones this conversation's
        last request sent, the same objects and unchanged (its draft matches), that held no
        URL source."""
        kept = self._drafts.get(id(messages[0])) if messages else None
        return kept[2] if kept is not None and kept[1].matches(messages) else 0

    async def _with_cache_resource(self, payload: dict[str, Any], opts: ModelOptions) -> dict[str, Any]:
        """``payload`` naming a prompt cache created for it first, where the provider's
        caches are resources (see :mod:`._cache`); as it was otherwise."""
        from ..protocols._protocol import CachePlan

        plan = CachePlan.of(opts.cache)
        found = self.wire.cache_resource(payload, plan, self.url()) if plan is not None else None
        if found is None:
            return payload
        from ._cache import CacheResources

        if self._cache_resources is None:
            self._cache_resources = CacheResources()

        async def send(url: str, body: bytes) -> tuple[int, bytes]:
            headers = await self._signed(url, self.headers(opts.extra_headers), body)
            headers["accept"] = "application/json"
            response = await self.transport.open("POST", url, headers, body, self.timeouts.first_byte)
            try:
                return response.status_code, await response.aread()
            finally:
                await response.aclose()

        name = await self._cache_resources.name_for(found[0], found[1], send)
        return payload if name is None else self.wire.with_cache_resource(payload, name)

    def _media_checked(self, messages: Sequence[Msg], refused: frozenset[str], start: int = 0) -> Sequence[Msg]:
        """Media the model cannot take in (``refused``, from its capabilities), from message
        ``start`` on: a ``FormatError`` naming the message, or with
        ``on_unsupported_media="note"`` a short text note in its place."""
        if not refused:
            return messages
        out: list[Msg] | None = None
        for index in range(start, len(messages)):
            msg = messages[index]
            if not any(map(has_media, msg.content)):
                continue
            content = without_media(msg.content, refused, index, self)
            if content is not None:
                if out is None:
                    out = list(messages)
                out[index] = msg.replace(content=content)
        return messages if out is None else out

    # -- the call ------------------------------------------------------------------------

    def stream(
        self,
        messages: MsgInput,
        *,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        options: ModelOptions | dict[str, Any] | None = None,
        reply_id: str | None = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        """The events of one model call (``MODEL_CALL_START`` ... ``MODEL_CALL_END``), as an
        async iterator.

        On failure, the events that close what was open are yielded first, then the typed
        error is raised: what was received still folds into a valid message.
        """
        reply_id = reply_id or new_id()
        if self.max_concurrent is None:
            return self._stream(messages, tools, tool_choice, options, reply_id)
        return self._limited(messages, tools, tool_choice, options, reply_id)

    async def _limited(self, *args: Any) -> AsyncGenerator[AgentEvent, None]:
        # At most max_concurrent calls of this model at once, from every agent using it: a
        # call waits its turn (first come, first served); a cancelled wait takes no slot.
        async with self._slot():
            inner = self._stream(*args)
            try:
                async for event in inner:
                    yield event
            finally:
                await inner.aclose()

    def _slot(self) -> Any:
        import weakref

        loop = asyncio.get_running_loop()
        if self._slots is None:
            self._slots = weakref.WeakKeyDictionary()
        slot = self._slots.get(loop)
        if slot is None:
            assert self.max_concurrent is not None  # only a limited model takes slots
            slot = self._slots[loop] = asyncio.Semaphore(self.max_concurrent)
        return slot

    @property
    def in_flight(self) -> int:
        """Calls of this model running now on this event loop (with ``max_concurrent``)."""
        slot = self._slots.get(asyncio.get_running_loop()) if self._slots is not None else None
        return 0 if slot is None or self.max_concurrent is None else self.max_concurrent - slot._value

    async def _stream(
        self,
        messages: MsgInput,
        tools: Sequence[Any] | None,
        tool_choice: Any,
        options: ModelOptions | dict[str, Any] | None,
        reply_id: str,
    ) -> AsyncGenerator[AgentEvent, None]:
        call = await self._prepare(messages, tools, tool_choice, options)
        try:
            while True:
                attempt = Attempt(
                    self.wire.decoder_for(
                        self.wire.new_adapter(reply_id, self.spec.preset, model_name=self.name), self.spec.preset
                    )
                )
                attempt.decoder.adapter.endpoint = self.endpoint
                attempt.decoder.adapter.carried_calls = call.carried
                attempt.decoder.adapter.bound_model = self._bound_model
                attempt.decoder.adapter.bound_account = self._bound_account
                if call.renamed:
                    attempt.decoder.adapter.tool_names = call.renamed
                try:
                    try:
                        async with aclosing(self._read(attempt, call)) as reading:  # closed now if the caller stops
                            async for event in reading:
                                yield event
                        return
                    except E.ProviderError as err:
                        self._explain(err, attempt)
                        self._mask(err, call.headers)
                        err = self._learned(err)
                        resumed = await self._after_error(err, attempt, call)
                        if resumed is AGAIN:
                            continue
                        if resumed is not None:
                            for event in attempt.held:
                                yield event
                            async for event in resumed:
                                yield event
                            return
                        async for event in self._failed(err, attempt, call.trace):
                            yield event
                finally:
                    await attempt.close()
        finally:
            if call.trace is not None and not call.trace.ended:
                call.trace.end(error=asyncio.CancelledError("the call was closed before it ended"))

    async def _prepare(
        self,
        messages: MsgInput,
        tools: Sequence[Any] | None,
        tool_choice: Any,
        options: ModelOptions | dict[str, Any] | None,
    ) -> Call:
        """What a call sends: the request built for the model (its capabilities looked up
        when they matter, media fetched, a cache resource made), continued from a stored
        response with ``chain``, encoded and signed, with its trace and deadline."""
        messages = as_messages(messages)
        messages = await resolve_sources(
            messages, self.wire, self.transport, self.max_source_bytes, self.endpoint, self._plain(messages)
        )
        assumed = self.assumed_from
        if not self._looked_up and (
            self.wire.lookup_always
            or assumed is not None  # what the provider publishes is preferred over a family's rules
            or depends_on_capabilities(self.options.merged(options), tools, tool_choice)
        ):
            await self.lookup_capabilities()
        if assumed is not None:
            self._say_assumed(assumed)
        if self.capabilities.retired is not None:
            self._say_retired()
        drafted: list[Any] = []
        payload, opts = self.build_request(messages, tools, tool_choice, options, drafts=drafted)
        payload = await self._with_cache_resource(payload, opts)
        call = Call(payload, opts, self._name_map(tools, tool_choice, drafted[2] if drafted else None))
        call.carried = open_provider_calls(messages)
        chained = (
            self.wire.chain(payload, self._chains) if opts.chain and self.wire.keeps_state and self._chains else None
        )
        if chained is not None:
            call.payload = call.chained = chained
        elif drafted:
            call.drafted = (drafted[0], drafted[1])
        call.body, call.headers = await self._encoded(call.payload, opts, call.drafted)
        call.trace = (
            telemetry.model_call(self.provider, self.name, self.url(opts), opts, messages)
            if telemetry.enabled()
            else None
        )
        call.deadline = asyncio.get_running_loop().time() + self.timeouts.total if self.timeouts.total else None
        if IN_CASSETTE.get() and not REPLAYING.get():  # a cassette that may record
            call.conversation = conversation(messages, tools, tool_choice, opts)
        return call

    async def _read(self, attempt: Attempt, call: Call) -> AsyncGenerator[AgentEvent, None]:
        """One request of a call, sent and read to its end. Events are held back until one
        that is not MODEL_CALL_START arrives: until then a retry may still replace them."""
        loop = asyncio.get_running_loop()
        decoder, opts, trace = attempt.decoder, call.opts, call.trace
        attempt.response = response = await self._open(call)
        self._preload_prices()  # in a thread, while the answer streams (the connection's own imports done)
        first_deadline = loop.time() + self.timeouts.first_byte
        if response.status_code >= 400:
            raise await http_error(response, self.wire)
        self._note_limits(response, decoder.adapter, call)
        if not _is_stream(response, self.wire.stream_content_type(self.spec.preset)):
            # The whole answer (asked for with stream=False, or sent where a stream was asked
            # for), its error, or something else (an HTML page from a proxy): the server
            # answered, so this is never retried and never a connection error. Its events
            # end the call as a stream's do (priced, traced, remembered for a chain).
            events = await self._decode_whole(response, decoder.adapter, call.deadline)
            for event in await self._passed(events, attempt, call) + attempt.held:
                yield event
            attempt.held = []
            return
        async for chunk in read_chunks(response, self.timeouts, call.deadline, first_deadline):
            head = attempt.head
            if head is not None and len(head) < 4096:
                # Kept to name a server that answers in another protocol; once the answer
                # began in this one, a stream's lifetime of 4 KiB per reply is let go.
                attempt.head = None if attempt.passed_on else head + chunk[:4096]
            events = decoder.feed(chunk)
            if not events:
                continue
            # The usual piece (the answer under way, not ending) is passed on as it is.
            for event in (
                events
                if attempt.passed_on and events[-1].type != "MODEL_CALL_END"
                else await self._passed(events, attempt, call)
            ):
                yield event
        if opts.background and decoder.adapter.started and not decoder.adapter.finished:
            # The body ended before the response did: read the rest.
            resumed = self._resumed(
                decoder.adapter,
                opts,
                trace,
                call.full,
                E.IncompleteStreamError("the background stream ended before its response"),
            )
            if resumed is not None:
                held, attempt.held = attempt.held, []
                for event in held:
                    yield event
                async for event in resumed:
                    yield event
                return
        out = await self._passed(decoder.close(), attempt, call)
        held, attempt.held = attempt.held, []  # the body is over: a start still held goes too
        for event in held + out:
            yield event

    def _limit_key(self) -> str:
        """What a RateLimiter's budget is kept per: the server and the model."""
        return f"{self.spec.base_url}|{self.name}"

    def _note_limits(self, response: Any, adapter: Any, call: Call) -> None:
        """The response's rate-limit headers, in one shape for every provider, on the call's
        MODEL_CALL_END and taught to the rate limiter; the limiter's wait, shown there too."""
        limits = self.wire.rate_limits(response.headers)
        if limits is not None:
            adapter.call_metadata["rate_limits"] = limits
            if self.rate_limiter is not None:
                self.rate_limiter.learn(self._limit_key(), limits)
        if call.permit is not None and call.permit.waited:
            adapter.call_metadata["rate_limit_wait"] = round(call.permit.waited, 3)

    async def _open(self, call: Call) -> Any:
        """The call's request sent (once a rate limiter has room for it); its response once
        the headers came. A whole answer's headers come when it is written: they are waited
        for within the call's total."""
        opts = call.opts
        if self.rate_limiter is not None:
            # Its size in tokens, about: the body's bytes, and the output it may use.
            estimate = len(call.body) // 4 + (opts.max_tokens or 0)
            call.permit = await self.rate_limiter.acquire(self._limit_key(), estimate, call.deadline)
        kept = CONVERSATION.set(call.conversation) if call.conversation is not None else None
        waiting = (
            self.timeouts.first_byte
            if opts.stream is not False
            else max(self.timeouts.first_byte, self.timeouts.total or 0)
        )
        try:
            return await self.transport.open("POST", self.url(opts), call.headers, call.body, waiting, call.deadline)
        finally:
            if call.permit is not None and self.rate_limiter is not None:
                # Answered, refused or failed: the request may have reached the provider, whose
                # bucket it then left; what its place held leaves the limiter's bucket too.
                self.rate_limiter.answered(call.permit)
            if kept is not None:
                CONVERSATION.reset(kept)

    async def _passed(self, events: list[AgentEvent], attempt: Attempt, call: Call) -> list[AgentEvent]:
        """The events of one piece (or of the body's end) to pass on now: released first
        (the trace's first token), then the call ended if they end it. One piece may hold a
        whole answer, its start and its end (a body read a socket read at a time)."""
        out = events if attempt.passed_on else attempt.release(events, call.trace)
        if events and events[-1].type == "MODEL_CALL_END":  # always the last of its batch, and of out
            await self._end_call(out, call)
        return out

    async def _end_call(self, events: list[AgentEvent], call: Call) -> None:
        """The call's MODEL_CALL_END (the last of ``events``) priced and traced, and the
        response remembered for a chain."""
        await self._prices_loaded()
        events[-1] = self._ended(events[-1], call.trace)
        self._remember(call.full, events[-1], call.opts)
        if call.permit is not None:
            end = events[-1]
            self.rate_limiter.settle(
                call.permit, getattr(end, "input_tokens", 0) + getattr(end, "output_tokens", 0) or None
            )

    async def _encoded(
        self, payload: dict[str, Any], opts: ModelOptions, drafted: tuple[Any, list[Any]] | None = None
    ) -> tuple[bytes, dict[str, str]]:
        """A request's body bytes and its headers: the protocol's for what the body holds,
        the call's extra ones, cloud credentials applied. The finished turns of a draft are
        encoded once, for every request that sends them."""
        body = self._drafted_body(payload, opts, drafted) if drafted is not None else None
        if body is None:
            body = encode_body(payload)
        headers = self.wire.request_headers(payload, self.headers(opts.extra_headers), self.spec.preset)
        if opts.stream is False:
            headers["accept"] = "application/json"
        return body, (await self._signed(self.url(opts), headers, body) if self._signs_body() else headers)

    def _drafted_body(
        self, payload: dict[str, Any], opts: ModelOptions, drafted: tuple[Any, list[Any]]
    ) -> bytes | None:
        """The body with the draft's finished turns as their bytes, where the turns are the
        ones the draft made (None otherwise: the plain encoding then), and not given in
        ``extra_body``. (What the protocol adds to the body, cache marks included, goes on
        copies in the body's own lists, never on a draft's turns.)"""
        draft, turns = drafted
        key = self.formatter.payload_turns
        if key is None or payload.get(key) is not turns or key in (opts.extra_body or {}):
            return None
        body = encode_body({**payload, key: draft.turns_encoded(turns)})
        if debug_enabled() and body != encode_body(payload):
            raise AssertionError("a draft's encoded turns differ from the payload's")  # a bug here
        return body

    def _remember(self, full: dict[str, Any], end: AgentEvent, opts: ModelOptions) -> None:
        """Keep what a later call needs to continue this one on the server (``chain``)."""
        if (
            not isinstance(end, ModelCallEndEvent)
            or not opts.chain
            or not self.wire.keeps_state
            or end.finished_reason != "completed"
        ):
            return
        record = self.wire.chain_record(full, end.metadata)
        if record is not None:
            self._chains.append(record)

    async def _decode_whole(self, response: Any, adapter: Any, deadline: float | None) -> list[AgentEvent]:
        """The events of a whole JSON answer (read within the call's deadline), or its error raised."""
        from ..adapters import decode_answer

        content_type = response.headers.get("content-type", "")
        left = None if deadline is None else max(0.0, deadline - asyncio.get_running_loop().time())
        try:
            raw = await asyncio.wait_for(read_limited(response, self.max_source_bytes), left)
        except asyncio.TimeoutError:
            raise E.TimeoutError(
                f"the total timeout ({self.timeouts.total:g} s) fired: while reading the whole answer",
                which="total",
                seconds=self.timeouts.total or 0.0,
            ) from None
        text = raw.decode("utf-8", "replace")
        try:
            answer: Any = json.loads(text) if "json" in content_type.lower() else None
        except ValueError:
            answer = None
        if answer is None:
            err: E.ProviderError = E.UpstreamError(
                f"the server at {self.url()} answered HTTP {response.status_code} with "
                f"{content_type or 'no content type'},"
                f" not a {self.wire.description} stream: {text[:300]!r}",
                status_code=response.status_code,
                body=text[:2000],
            )
        elif isinstance(answer, dict) and adapter.is_error_frame(answer):
            # The protocol's adapter says which objects are errors (whole or streamed alike).
            err = self.wire.error(answer, status=None)
        else:
            try:
                return decode_answer(adapter, self.wire.answer_events(answer))
            except NotImplementedError:
                err = E.UpstreamError(
                    (
                        f"the server answered with JSON, which the {self.wire.name} protocol cannot read as a "
                        f"reply: {text[:300]!r}"
                    ),
                    body=answer,
                )
            except E.ProviderError as decoded:
                decoded.answered = True  # type: ignore[attr-defined]
                raise
        err.answered = True  # type: ignore[attr-defined]
        raise err

    async def count_tokens(
        self,
        messages: MsgInput,
        *,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        options: ModelOptions | dict[str, Any] | None = None,
        estimate: bool = False,
    ) -> Any:
        """The input tokens this request would send (a :class:`~modelwire.models.TokenCount`),
        counted by the provider's own endpoint for the exact body the request would have
        (Anthropic ``count_tokens``, also on Vertex and Bedrock; OpenAI Responses
        ``input_tokens``; Gemini ``countTokens``; Bedrock ``CountTokens``). Where the provider
        has none, :class:`~modelwire.errors.TokenCountUnavailableError`, or with
        ``estimate=True`` an estimate from the request's size, marked ``estimated``."""
        from ._count import count_tokens

        return await count_tokens(self, messages, tools, tool_choice, options, estimate)

    async def compact(self, messages: MsgInput, *, options: ModelOptions | dict[str, Any] | None = None) -> list[Msg]:
        """The conversation compacted by the provider on request, outside a turn (OpenAI
        Responses ``POST /responses/compact``): the compacted window as messages, the user
        messages the provider kept and an assistant message holding its compaction block,
        which goes back only to this provider (``message.BINDINGS["compaction"]``; elsewhere
        its summary, where it has one, or nothing: ``check`` says ``foreign-compaction``).
        Send the window, then what follows, as the next request's history. Where the provider
        has no such endpoint, an :class:`~modelwire.errors.UnsupportedOptionError` naming the model."""
        from ._compact import compact

        return await compact(self, messages, options)

    async def upload_file(self, source: Any, *, media_type: str | None = None, name: str | None = None) -> Any:
        """Upload a file (a path, or bytes with their ``media_type``) to this provider's Files
        API once, and return a :class:`~modelwire.message.DataBlock` that refers to it: sent
        to this endpoint it goes by id, anywhere else as its bytes (read again from the path
        it was uploaded from), or a ``FormatError`` says what to do. Anthropic, OpenAI (Chat
        takes PDFs by id, Responses images and PDFs) and the Gemini API hold files; the others
        refuse with an ``UnsupportedOptionError`` saying what they take instead."""
        from ._files import upload_file

        return await upload_file(self, source, media_type, name)

    async def batch(self, requests: Sequence[Any]) -> Any:
        """Submit many requests as one batch (a :class:`~modelwire.models.Batch`), answered
        within a day at the provider's batch price: each a conversation, or a dict with
        ``messages`` and any of ``tools``, ``tool_choice``, ``options``, built as the same call
        would be. ``await batch.wait()``, then ``await batch.results()``: one assistant message
        per request, in order, or its typed error. Anthropic's Message Batches, OpenAI's Batch
        API (Chat and Responses) and the Gemini API's batch mode; the others refuse with an
        ``UnsupportedOptionError``."""
        from ._batch import submit_batch

        return await submit_batch(self, requests)

    async def batch_by_id(self, batch_id: str) -> Any:
        """A batch submitted earlier (by this process or another), by its id."""
        from ._batch import Batch
        from ..protocols import BatchState

        batch = Batch(self, BatchState(batch_id, "", False))
        await batch.status()
        return batch

    async def list_files(self) -> list[Any]:
        """The files this provider holds (``protocols.UploadedFile``: id, url, media type, name, size)."""
        from ._files import list_files

        return await list_files(self)

    async def delete_file(self, file: Any) -> None:
        """Delete a file this provider holds: its id, an ``UploadedFile``, or the block ``upload_file`` made."""
        from ._files import delete_file

        await delete_file(self, file)

    async def complete(
        self,
        messages: MsgInput,
        *,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        options: ModelOptions | dict[str, Any] | None = None,
        reply_id: str | None = None,
        name: str = "assistant",
    ) -> Msg:
        """The assistant message of one model call (the folded stream). On failure the typed
        error is raised with ``partial`` set to the message received so far."""
        return await fold_call(self, messages, tools, tool_choice, options, reply_id, name)

    def complete_sync(self, messages: MsgInput, **kwargs: Any) -> Msg:
        """:meth:`complete` for scripts and notebooks without an event loop of their own."""
        return run_sync(self.complete(messages, **kwargs), "model.complete")

    async def aclose(self) -> None:
        await self.transport.aclose()


async def fold_call(
    model: Any, messages: MsgInput, tools: Any, tool_choice: Any, options: Any, reply_id: str | None, name: str
) -> Msg:
    """A model's ``complete()``: the folded events of one ``stream()`` call; on failure the
    typed error with ``partial`` set to the message received so far."""
    reply = AssistantMsg(name, [], id=reply_id or new_id())
    try:
        async for event in model.stream(
            messages, tools=tools, tool_choice=tool_choice, options=options, reply_id=reply.id
        ):
            reply.append_event(event, strict=True)
    except E.ProviderError as err:
        err.partial = reply
        raise
    return reply


def _endpoint_and_account(spec: ModelSpec, options: dict[str, Any]) -> tuple[str, str | None]:
    """The endpoint family (``endpoint_family``, or the preset's and base URL's) and the
    account (``account``, a name the user gives, or the key's fingerprint) of a model,
    their options taken out of ``options``."""
    family = options.pop("endpoint_family", None)
    if family is not None and (not isinstance(family, str) or not family):
        raise E.ConfigError(f"endpoint_family={family!r} must be a name")
    endpoint = family or endpoint_family(spec.preset, spec.base_url)
    account = options.pop("account", None)
    if account is not None and (not isinstance(account, str) or not account):
        raise E.ConfigError(f"account={account!r} must be a name (a profile's, say)")
    return endpoint, f"name:{account}" if account else account_fingerprint(spec.api_key, endpoint)


def _check_tool_types(tools: Sequence[Any], caps: ModelCapabilities, provider: str, model: str) -> None:
    """A raw tool definition (``ServerTool(raw=...)`` or a dict) whose ``type`` the model
    refuses, refused before sending, with what the table's source says to send instead."""
    refused = caps.refused_tool_types or ()
    for tool in tools:
        raw = tool if isinstance(tool, dict) else getattr(tool, "raw", None)
        kind = raw.get("type") if isinstance(raw, dict) else None
        if kind in refused:
            source = caps.sources.get("refused_tool_types", "")
            raise UnsupportedOptionError(
                "tools",
                provider,
                f"the model refuses the tool type {kind!r}" + (f"; its provider says: {source}" if source else ""),
                model=model,
            )


def account_fingerprint(api_key: str | None, endpoint: str) -> str | None:
    """The account a key stands for, as provenance records it: a short hash of the key and
    its endpoint family (``key:`` and 16 hex digits), never the key itself; None without a
    plain key (cloud credentials: the account is not known) and with the placeholder key of
    a cassette's replay and of the offline checks (``check``, ``transpose``): no account is
    known there, and thinking made under the user's own must not look foreign."""
    if not api_key or api_key == REPLAY_KEY:
        return None
    import hashlib

    digest = hashlib.sha256(b"modelwire account\0" + endpoint.encode() + b"\0" + api_key.encode()).hexdigest()
    return "key:" + digest[:16]


def endpoint_family(preset: Preset, base_url: str | None) -> str:
    """Which endpoints accept what this one mints: the provider's own family at its own
    base URL, else the host and port of the base URL (a proxy, a gateway, a compatible
    server: two gateways on one host are two servers), the scheme's default port left out,
    the path ignored."""
    own = (preset.base_url or "").rstrip("/")
    if not base_url or base_url.rstrip("/") == own:
        return preset.endpoint_family or preset.name
    parts = urlparse(base_url)
    host = parts.hostname
    if not host:
        return base_url
    try:
        port = parts.port
    except ValueError:  # a port that is not a number: the text as given tells it apart
        return parts.netloc.rsplit("@", 1)[-1].lower()
    if port is None or port == _DEFAULT_PORTS.get(parts.scheme.lower()):
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _is_stream(response: Any, stream_type: str) -> bool:
    """What the content type says: the endpoint's stream (or none given: read it as one)."""
    content_type = response.headers.get("content-type", "").lower()
    return not content_type or stream_type in content_type
