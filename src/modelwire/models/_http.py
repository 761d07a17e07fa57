"""A model that speaks a provider's HTTP API: formatter + transport + adapter.

The call itself is here, sent and read; its parts by concern are mixins of their own modules:
what the model accepts (``_capable``), the request it sends (``_building``), the provider's other
endpoints (``_services``), pricing (``_pricing``), a failed request (``_failures``) and a broken
background stream read again (``_resume``)."""

from __future__ import annotations

import asyncio
import collections
import json
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, AsyncGenerator, Sequence

from .. import errors as E
from .. import telemetry
from .._ids import new_id
from ..event import AgentEvent, ModelCallEndEvent
from .._sync import run_sync
from ..message import AssistantMsg, Msg, MsgInput, as_messages
from ..protocols import ModelCapabilities, ModelOptions, WireProtocol, get_protocol
from ._body import http_error, read_limited
from ._building import Building
from ._call import Attempt, Call, open_provider_calls
from ._capable import Capable
from ._endpoint import account_fingerprint as account_fingerprint  # its home before the split
from ._endpoint import endpoint_and_account
from ._endpoint import endpoint_family as endpoint_family  # likewise
from ._failures import AGAIN, Failures
from ._media import resolve_sources
from ._pricing import Pricing, pricing_option
from ._resume import Resumption
from ._services import Services
from .config import CONVERSATION, IN_CASSETTE, REPLAYING, ModelSpec
from ._request import conversation, depends_on_capabilities
from .transport import HTTPTransport, RetryPolicy, Timeouts, read_chunks

if TYPE_CHECKING:
    from ..formatters import Formatter

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


def _lookup_options(options: dict[str, Any]) -> tuple[Any, float | None]:
    """``capability_lookup`` and ``capability_lookup_seconds`` taken out of a model's options, checked."""
    lookup = options.pop("capability_lookup", "auto")
    if lookup not in ("auto", True, False):
        raise E.ConfigError(f"capability_lookup={lookup!r} must be 'auto', True or False")
    wait = options.pop("capability_lookup_seconds", None)
    if wait is not None and (isinstance(wait, bool) or not isinstance(wait, (int, float)) or wait <= 0):
        raise E.ConfigError(f"capability_lookup_seconds={wait!r} must be a number of seconds above 0")
    return lookup, None if wait is None else float(wait)


class HTTPModel(Capable, Building, Services, Pricing, Failures, Resumption):
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
        self.name: str = spec.model
        self.provider: str = spec.preset.name
        self.protocol: str = spec.preset.protocol
        self.wire: WireProtocol = get_protocol(self.protocol)
        options = dict(spec.options)
        timeouts = options.pop("timeouts", None)
        self.timeouts: Timeouts = Timeouts(**timeouts) if isinstance(timeouts, dict) else (timeouts or Timeouts())
        formatter_options = options.pop("formatter", {})
        overrides = options.pop("capabilities", None) or {}
        if not isinstance(overrides, ModelCapabilities):
            overrides = ModelCapabilities.from_mapping(overrides, f"capabilities of {spec.preset.name}:{spec.model}")
        self._capability_overrides = overrides
        self._capabilities: ModelCapabilities | None = None
        self._published: ModelCapabilities | None = None
        self._looked_up = False
        self.capability_lookup, self.capability_lookup_seconds = _lookup_options(options)
        max_concurrent, rate_limiter = _pacing(options)
        self.max_concurrent: int | None = max_concurrent
        self.rate_limiter: Any = rate_limiter  # a RateLimiter, or any object with its acquire()
        self.pricing: bool | None = pricing_option(options)
        if self.pricing:
            self._preload_prices()  # asked for: the catalogue loads in a thread from now on
        self._slots: Any = None  # loop -> asyncio.Semaphore (a semaphore belongs to one loop)
        media = options.pop("on_unsupported_media", "refuse")
        if media not in ("refuse", "note"):
            raise E.ConfigError(f"on_unsupported_media={media!r} must be 'refuse' or 'note'")
        self.on_unsupported_media = media
        endpoint, account = endpoint_and_account(spec, options)
        self.endpoint: str = endpoint
        self.account: str | None = account
        self.options: ModelOptions = ModelOptions.from_dict(options)
        self.formatter: Formatter = self.wire.new_formatter(spec.preset, spec.model, **formatter_options)
        self.formatter.endpoint, self.formatter.model = self.endpoint, spec.model
        self.formatter.account = self.account
        # The formatter's own id and name rules, for when a refusal's pattern is forgotten.
        self._own_tool_rules = (self.formatter.tool_id_rules, self.formatter.tool_name_rules)
        self.transport: HTTPTransport = transport or HTTPTransport(timeouts=self.timeouts)
        self.retry: RetryPolicy = retry or RetryPolicy()
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
        # A streamed body is read here, in this generator's own loop: a paced stream resumes
        # it once per socket read, so a generator between it and the body would cost a frame
        # resumed twice a read.
        call = await self._prepare(messages, tools, tool_choice, options)
        try:
            while True:
                attempt = self._attempt(call, reply_id)
                try:
                    try:
                        chunks = await self._begin(attempt, call)
                        if type(chunks) is list:  # a whole answer's events
                            for event in chunks:
                                yield event
                            return
                        feed = attempt.decoder.feed
                        async with aclosing(chunks):  # closed now if the caller stops
                            async for chunk in chunks:
                                head = attempt.head
                                if head is not None and len(head) < 4096:
                                    # Kept to name a server that answers in another protocol; once
                                    # the answer began in this one, a stream's 4 KiB is let go.
                                    attempt.head = None if attempt.passed_on else head + chunk[:4096]
                                events = feed(chunk)
                                if not events:
                                    continue
                                # The usual piece (the answer under way, not ending) is passed on as it is.
                                for event in (
                                    events
                                    if attempt.passed_on and events[-1].type != "MODEL_CALL_END"
                                    else await self._passed(events, attempt, call)
                                ):
                                    yield event
                        async for event in self._body_ended(attempt, call):
                            yield event
                        return
                    except E.ProviderError as err:
                        err = self._described(err, attempt, call)
                        resumed = await self._after_error(err, attempt, call)
                        if resumed is AGAIN:
                            continue
                        async for event in self._resumed_or_failed(err, resumed, attempt, call):
                            yield event
                        return
                finally:
                    await attempt.close()
        finally:
            if call.trace is not None and not call.trace.ended:
                call.trace.end(error=asyncio.CancelledError("the call was closed before it ended"))

    def _attempt(self, call: Call, reply_id: str) -> Attempt:
        """A request of ``call``: its decoder, with the adapter told what the call carries."""
        attempt = Attempt(
            self.wire.decoder_for(
                self.wire.new_adapter(reply_id, self.spec.preset, model_name=self.name), self.spec.preset
            )
        )
        adapter = attempt.decoder.adapter
        adapter.endpoint = self.endpoint
        adapter.carried_calls = call.carried
        adapter.bound_model = self._bound_model
        adapter.bound_account = self._bound_account
        if call.renamed:
            adapter.tool_names = call.renamed
        return attempt

    def _described(self, err: E.ProviderError, attempt: Attempt, call: Call) -> E.ProviderError:
        """A failed request's error, with where it came from, its credentials masked, and
        as a rule learned from it where it states one."""
        self._explain(err, attempt)
        self._mask(err, call.headers)
        return self._learned(err)

    async def _resumed_or_failed(
        self, err: E.ProviderError, resumed: Any, attempt: Attempt, call: Call
    ) -> AsyncGenerator[AgentEvent, None]:
        """After a failed request that is not sent again: the rest of a background response
        read again (the events held back first), or the call's closing events, then ``err``."""
        if resumed is not None:
            for event in attempt.held:
                yield event
            async for event in resumed:
                yield event
            return
        async for event in self._failed(err, attempt, call.trace):
            yield event

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

    async def _begin(self, attempt: Attempt, call: Call) -> Any:
        """One request of a call sent, and its answer begun: the body's pieces as they come
        (with the first-byte, gap and total timeouts), or a whole answer's events, to pass
        on. Events are held back until one that is not MODEL_CALL_START arrives: until then
        a retry may still replace them."""
        loop = asyncio.get_running_loop()
        attempt.response = response = await self._open(call)
        self._preload_prices()  # in a thread, while the answer streams (the connection's own imports done)
        first_deadline = loop.time() + self.timeouts.first_byte
        if response.status_code >= 400:
            raise await http_error(response, self.wire)
        self._note_limits(response, attempt.decoder.adapter, call)
        if not _is_stream(response, self.wire.stream_content_type(self.spec.preset)):
            # The whole answer (asked for with stream=False, or sent where a stream was asked
            # for), its error, or something else (an HTML page from a proxy): the server
            # answered, so this is never retried and never a connection error. Its events
            # end the call as a stream's do (priced, traced, remembered for a chain).
            events = await self._decode_whole(response, attempt.decoder.adapter, call.deadline)
            out = await self._passed(events, attempt, call) + attempt.held
            attempt.held = []
            return out
        return read_chunks(response, self.timeouts, call.deadline, first_deadline)

    async def _body_ended(self, attempt: Attempt, call: Call) -> AsyncGenerator[AgentEvent, None]:
        """The events after a streamed body's last piece: the rest of a background response
        read again where the body ended before it, else the decoder's last and those still
        held back."""
        decoder, opts = attempt.decoder, call.opts
        if opts.background and decoder.adapter.started and not decoder.adapter.finished:
            # The body ended before the response did: read the rest.
            resumed = self._resumed(
                decoder.adapter,
                opts,
                call.trace,
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
        # fold_call's loop, here: awaiting it would put a frame of its own under every read
        # a paced stream waits on.
        reply = AssistantMsg(name, [], id=reply_id or new_id())
        append = reply.append_event
        try:
            async for event in self.stream(
                messages, tools=tools, tool_choice=tool_choice, options=options, reply_id=reply.id
            ):
                append(event, strict=True)
        except E.ProviderError as err:
            err.partial = reply
            raise
        return reply

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
    append = reply.append_event
    try:
        async for event in model.stream(
            messages, tools=tools, tool_choice=tool_choice, options=options, reply_id=reply.id
        ):
            append(event, strict=True)
    except E.ProviderError as err:
        err.partial = reply
        raise
    return reply


def _is_stream(response: Any, stream_type: str) -> bool:
    """What the content type says: the endpoint's stream (or none given: read it as one)."""
    content_type = response.headers.get("content-type", "").lower()
    return not content_type or stream_type in content_type
