"""What a wire protocol is: one object that knows everything modelwire needs about it.

Pure and synchronous like the adapters and formatters it points to: it builds URLs,
headers and bodies and maps options and error bodies, but sends nothing (the models
layer does the I/O).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..errors import ConfigError, ProviderError, UnsupportedOptionError, error_from_body
from ._caps import EFFORT_LEVELS, ModelCapabilities, Refusal
from ._parts import Batches, Caching, Discovery, Files, LongContext, StoredState, TestSupport, TokenCounting
from ._records import (
    CACHE_TTLS,
    DEFAULT_MAX_TOKENS,
    USER_AGENT,
    BatchResult,
    BatchState,
    CachePlan,
    Capabilities,
    CompactionPlan,
    FileBody,
    HTTPCall,
    ModelOptions,
    Preset,
    UploadedFile,
    _load,
    batch_lines,
    cache_marks_problem,
    request_index,
    deep_merge,
    fake_words,
    multipart,
    refuse,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..adapters import Framing
    from ..formatters import Formatter
    from ..formatters._common import ReplayScope

__all__ = [
    "Preset",
    "Capabilities",
    "ModelCapabilities",
    "ModelOptions",
    "WireProtocol",
    "deep_merge",
    "DEFAULT_MAX_TOKENS",
    # the records and helpers protocol packages take from here (their home: _records, _parts)
    "CACHE_TTLS",
    "USER_AGENT",
    "BatchResult",
    "BatchState",
    "CachePlan",
    "CompactionPlan",
    "FileBody",
    "HTTPCall",
    "UploadedFile",
    "batch_lines",
    "cache_marks_problem",
    "fake_words",
    "multipart",
    "refuse",
    "request_index",
]


# Dialect keys the models layer reads for any protocol: where credentials come from when
# there is no key (a kind some protocol's credential_kinds declares, checked when first
# used), and the variables a key may be in.
COMMON_DIALECT: dict[str, Any] = {"credentials": str, "key_envs": (tuple, list)}


class WireProtocol(Files, Batches, TokenCounting, StoredState, Caching, LongContext, Discovery, TestSupport, ABC):
    """One wire protocol. Subclass it, set the class attributes, write the three methods
    every protocol has, and register an instance (built in, or through the
    ``modelwire.protocols`` entry-point group):

    - :meth:`apply_options` (abstract: a class without it cannot be made);
    - :meth:`answer_events`: a whole (not streamed) answer as its stream's events;
    - :meth:`fake_stream`: the body the test server sends for neutral blocks.

    The conformance suite's first check (``required_parts_are_written``) names each one a
    protocol lacks, with its adapter's and formatter's required parts; the checklist and a
    skeleton are in docs/extending/adding-a-protocol.md.

    This class is the core (the request: URL, headers, body, options; the stream: framing,
    adapter, decoder; errors and dialects); the parts a provider may or may not have come
    from ``modelwire.protocols._parts`` with their defaults, each its own class: ``Files``,
    ``Batches``, ``TokenCounting``, ``StoredState``, ``Caching``, ``LongContext``,
    ``Discovery``,
    ``TestSupport``. Only ``apply_options`` has no default; ``answer_events`` and
    ``fake_stream`` have one that raises, saying which protocol lacks it.

    Class attributes:
        name: the protocol's name (``anthropic``, ``openai-chat`` ...).
        adapter / formatter: ``"module:Class"`` paths, imported on first use.
        path: the request path after the base URL (``{model}`` is filled in).
        model_in_body / stream_in_body: whether ``model`` / ``stream: true`` go in the body.
        replay_scope: ``"protocol"`` when what this protocol produced (signatures,
            reasoning) is valid on every server speaking it, ``"provider"`` when only on
            the provider that produced it.
        replay_keys: the block extras its adapter writes that only an endpoint of the
            family that minted them can check (a thinking signature, encrypted reasoning).
        extras_keys: every block extra its adapter writes and its formatter reads back,
            beside the shared kit's (``modelwire.adapters.COMMON_EXTRAS``); its replay keys
            are among them. A key outside both is a typo (the tests and the conformance
            suite check both sides).
        claimed_types: the block types :meth:`claims` may say yes to (asked of no other).
        presets: providers this protocol brings along (a plugin's own presets).
        sdk_package: the official SDK whose clients ``load_model(client=...)`` accepts.
        credential_kinds: the cloud credentials it brings (see below), by kind.
    """

    name = ""
    description = ""
    adapter = ""
    formatter = ""
    path = ""
    model_in_body = True
    stream_in_body = True
    replay_scope: ReplayScope = "provider"
    replay_keys: tuple[str, ...] = ()
    extras_keys: tuple[str, ...] = ()
    claimed_types: tuple[str, ...] = ("thinking", "tool_call")
    content_type = "text/event-stream"  # what a streamed answer arrives as
    signature: tuple[bytes, ...] = ()  # byte strings only this protocol's bodies hold (to name a mismatch)
    capabilities = Capabilities()
    presets: tuple[Preset, ...] = ()
    sdk_package: str | None = None
    # The credentials a preset names with ``dialect["credentials"]`` when it has no plain key
    # (a cloud's own sign-in): kind -> ``"module:Class"``, made with no argument, whose
    # ``apply(method, url, headers, body)`` gives the headers signed. Declared by the protocol
    # whose provider it is; any protocol's preset may name it (see credentials_for).
    credential_kinds: Mapping[str, str] = {}
    # Variables holding a credential of its provider beside its presets' key variables (a
    # cloud's secret key and session token): their values never go into a cassette.
    secret_envs: tuple[str, ...] = ()
    # Prefixes of the variables its provider's own sign-in and SDKs read (a cloud's region,
    # project, credential chain): a test meant to reach only a local server runs without them.
    environ_prefixes: tuple[str, ...] = ()
    # A regular expression of what its provider's model ids put before the model's own name
    # (a cloud's region and vendor), which the capability table's patterns leave out: words
    # ending in a dot, no digit in them (see models.capabilities.normalize).
    model_id_prefix = ""
    # Authorization schemes of its provider's own signing whose header names a credential
    # beside the signature (a key id): scheme prefix -> a regular expression whose group is
    # that credential, masked wherever a server echoes it (see _secrets.sent_secrets).
    signed_schemes: Mapping[str, str] = {}
    # ``module:attr`` of the checks ``modelwire conform`` runs against a server that says it
    # speaks this protocol (a ``modelwire.conform.Checks``); empty: it cannot be probed yet.
    conform = ""

    def __repr__(self) -> str:
        return f"<WireProtocol {self.name}>"

    def conform_checks(self) -> Any:
        """This protocol's probe (see :attr:`conform`), or None."""
        return _load(self.conform) if self.conform else None

    # -- the pure parts --------------------------------------------------------------------

    def adapter_class(self) -> type:
        cls: type = _load(self.adapter)
        return cls

    def formatter_class(self) -> type[Formatter]:
        from ..formatters import Formatter

        cls = _load(self.formatter)
        if not (isinstance(cls, type) and issubclass(cls, Formatter)):
            raise TypeError(
                (
                    f"the {self.name} protocol's formatter {self.formatter!r} is not a "
                    "modelwire.formatters.Formatter subclass"
                )
            )
        return cls

    def formatter_options(self, preset: Preset, model: str = "") -> dict[str, Any]:
        """Formatter options a preset's dialect (or the model) implies, beyond ``provider``."""
        return {}

    def new_formatter(self, preset: Preset, model: str = "", **options: Any) -> Formatter:
        return self.formatter_class()(provider=preset.name, **{**self.formatter_options(preset, model), **options})

    def new_adapter(self, reply_id: str, preset: Preset | None = None, **options: Any) -> Any:
        return self.adapter_class()(reply_id, provider=preset.name if preset else None, **options)

    # The provider's error types and codes (lower case) -> the typed error they mean; read
    # first for a body of this protocol, then with every other protocol's (see errors.py).
    error_types: Mapping[str, type[ProviderError]] = {}
    # Words of an error message (lower case) -> the typed error they mean, for servers whose
    # error types do not say it (a context overflow answered as a plain 400); read with every
    # protocol's, after the types.
    error_phrases: Mapping[str, type[ProviderError]] = {}
    # Rules the provider states in its 400s (see Refusal): what the models layer learns from
    # a refusal, to refuse the next such call before sending it; read with every protocol's.
    refusals: Sequence[Refusal] = ()

    # The keys a preset's ``dialect`` may hold for this protocol, each with what it takes: a
    # type (or a tuple of types), or a set of the values allowed. ``check_dialect`` refuses any other key (a
    # typo does not silently do nothing) and any other value. The models layer's own keys
    # (COMMON_DIALECT) are taken by every protocol.
    dialect_keys: Mapping[str, Any] = {}

    def check_dialect(self, preset: Preset) -> None:
        """Refuse a dialect key this protocol does not read, or a value it does not take,
        naming the preset, the key and the likely fix."""
        allowed = {**COMMON_DIALECT, **self.dialect_keys}
        for key, value in preset.dialect.items():
            spec = allowed.get(key)
            if spec is None:
                import difflib

                close = difflib.get_close_matches(key, sorted(allowed), n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else f"; it reads {', '.join(sorted(allowed))}"
                raise ConfigError(
                    f"preset {preset.name!r}: the {self.name} protocol reads no dialect key {key!r}{hint}"
                )
            if isinstance(spec, (set, frozenset)):
                ok = value in spec
                what = " or ".join(repr(v) for v in sorted(spec))
            else:
                ok = isinstance(value, spec) and (spec is bool or not isinstance(value, bool))
                what = " or ".join(k.__name__ for k in (spec if isinstance(spec, tuple) else (spec,)))
            if not ok:
                raise ConfigError(f"preset {preset.name!r}: dialect {key}={value!r} must be {what}")

    def claims(self, block_type: str, fields: Mapping[str, Any], block_id: str) -> bool:
        """Whether a block that records no origin is this protocol's provider's, as another
        library writes it (AgentScope keeps a thinking block's replay data under names of
        its own, and no provenance): a ``thinking`` or ``tool_call`` block's extra ``fields``
        and id. The formatters then replay it as this protocol's own."""
        return False

    # How the provider frames its stream: "sse" (server-sent events), "ndjson" (one JSON
    # object per line) or "aws-eventstream" (AWS's binary frames). The decoder, the pieces a
    # test server sends and the Accept header follow from it; one keep/fail contract for all.
    framing: Framing = "sse"

    def decoder(self, adapter: Any, *, keep: bool = False) -> Any:
        """Bytes of a response body in, events out, for this protocol's :attr:`framing`."""
        from ..adapters import framing_decoder

        return framing_decoder(self.framing, adapter, keep=keep)

    def decoder_for(self, adapter: Any, preset: Preset, *, keep: bool = False) -> Any:
        """The decoder for an answer from that provider's endpoint (where an endpoint frames
        the protocol's events differently); :meth:`decoder` by default."""
        return self.decoder(adapter, keep=keep)

    def stream_content_type(self, preset: Preset) -> str:
        """What a streamed answer from that provider's endpoint arrives as."""
        return self.content_type

    def needs_inline(self, media_type: str, url: str = "") -> bool:
        """Whether an http(s) source of this media type (at ``url``) must be fetched and sent
        as base64: not where the provider reads the URL itself (the formatter's ``fetched_urls``)."""
        formatter = self.formatter_class()
        if url and url.startswith(formatter.fetched_urls):
            return False
        return bool(formatter.needs_inline(media_type))

    # -- the request -----------------------------------------------------------------------

    def url(self, base_url: str, model: str, preset: Preset, env: Mapping[str, str] | None = None) -> str:
        env = os.environ if env is None else env
        url = base_url.rstrip("/") + (preset.path or self.path).format(model=model)
        if preset.query:
            from urllib.parse import urlencode

            url += "?" + urlencode({param: env.get(var) or default for param, (var, default) in preset.query.items()})
        return url

    def whole_url(self, url: str, preset: Preset) -> str:
        """The URL of a request for the whole answer at once (``stream=False``), given the
        streamed request's: the same where the body says whether to stream, another
        endpoint where the URL says it (Gemini, Bedrock, Claude on the clouds)."""
        return url

    def retry_after_in(self, body: Mapping[str, Any]) -> float | None:
        """Seconds to wait that an error's body says (where a provider says it there rather
        than in a ``retry-after`` header), else None."""
        return None

    def headers(self, api_key: str | None, preset: Preset, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": self.content_type, "user-agent": USER_AGENT}
        headers.update(preset.headers)
        if api_key and preset.auth != "none":
            if preset.auth == "bearer":
                headers["authorization"] = f"Bearer {api_key}"
            else:
                headers[preset.auth] = api_key
        headers.update(extra or {})
        return headers

    def request_headers(self, body: dict[str, Any], headers: dict[str, str], preset: Preset) -> dict[str, str]:
        """The headers of one request, given its body: a protocol whose provider wants a
        header for something the body holds (a beta feature) adds it here."""
        return headers

    def body(
        self,
        model: str,
        payload: dict[str, Any],
        options: ModelOptions,
        preset: Preset,
        caps: ModelCapabilities | None = None,
    ) -> dict[str, Any]:
        """The request body: the formatter's payload, ``model`` and ``stream`` where this
        protocol wants them, the options mapped for this model (``caps``: what it accepts;
        the protocol's defaults when not given), ``extra_body`` merged in last."""
        body: dict[str, Any] = {"model": model} if self.model_in_body else {}
        body.update(payload)
        streamed = options.stream is not False
        if self.stream_in_body:
            body["stream"] = streamed
        if streamed:
            self.stream_fields(body, preset)
        elif options.background:
            raise refuse(
                "stream", preset, "a background response is read as a stream; leave stream=False out", model=model
            )
        if options.json_schema is None and options.json_schema_name != "output":
            raise UnsupportedOptionError("json_schema_name", preset.name, "it names a json_schema; pass the schema too")
        if caps is None:
            caps = self.model_defaults(preset, model)
        check_sampling(options, caps, preset, model)
        check_max_tokens(options, caps, preset, model)
        if options.background and not self.keeps_state:
            raise refuse(
                "background",
                preset,
                "the provider keeps no responses to run in the background; leave it out",
                model=model,
            )
        check_thinking_limits(options, caps, preset, model)
        _check_task_budget(options, caps, preset, model)
        self.apply_options(body, options, preset, model=model, caps=caps)
        plan = CachePlan.of(options.cache)
        if plan is not None:
            self.apply_cache(body, plan, preset, model=model, caps=caps)
        self._apply_context_options(body, options, preset, model, caps)
        deep_merge(body, options.extra_body)
        for name in caps.refused_fields or ():
            if name in body:
                raise refuse(
                    name,
                    preset,
                    (
                        f"the provider said it does not know the request field {name!r} for this model; leave out "
                        "what sends it"
                    ),
                    model=model,
                )
        return body

    def _apply_context_options(
        self, body: dict[str, Any], options: ModelOptions, preset: Preset, model: str, caps: ModelCapabilities
    ) -> None:
        """The options of the provider's own context features: compaction, tool-use
        clearing, media resolution."""
        compaction = CompactionPlan.of(options.compaction)
        if compaction is not None:
            self.apply_compaction(body, compaction, preset, model=model, caps=caps)
        if options.clear_tool_uses is not None and options.clear_tool_uses is not False:
            self.apply_clear_tool_uses(body, options.clear_tool_uses, preset, model=model)
        if options.media_resolution is not None:
            self.apply_media_resolution(body, options.media_resolution, preset, model=model)

    def stream_fields(self, body: dict[str, Any], preset: Preset) -> None:
        """Fields this protocol always sends with a streamed request (before the options,
        so ``extra_body`` can still change them)."""

    def capabilities_for(self, preset: Preset) -> Capabilities:
        """What this protocol can do on that provider (a dialect may take something away)."""
        return self.capabilities

    def model_defaults(self, preset: Preset, model: str = "") -> ModelCapabilities:
        """What any model of this protocol on that provider accepts, before the model's own
        record is laid over it (the least a model is known to take)."""
        caps = self.capabilities_for(preset)
        where = f"the {self.name} protocol"
        return ModelCapabilities(structured_output=caps.native_structured_output, sources={"structured_output": where})

    def schema_problems(self, schema: dict[str, Any]) -> list[str]:
        """Why ``schema`` would go unenforced on this protocol's strict mode (none: it
        would be enforced, or the protocol enforces nothing)."""
        return []

    # Whether tool calls arrive whole (one provider event each), not as argument fragments.
    whole_tool_calls = False

    @abstractmethod
    def apply_options(
        self,
        body: dict[str, Any],
        options: ModelOptions,
        /,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        """Put ``options`` into ``body`` in this protocol's shape for this model (in place),
        or raise :class:`~modelwire.errors.UnsupportedOptionError`. Never drop one silently."""

    def error(self, body: Any, status: int | None = None, request_id: str | None = None) -> ProviderError:
        """The typed error for an error body this protocol's servers send."""
        return error_from_body(body, self.name, status=status, request_id=request_id)

    def rate_limits(self, headers: Mapping[str, str]) -> dict[str, Any] | None:
        """What a response's headers say of the caller's rate limits, in one shape (see
        :func:`rate_limit_shape`), or None when they say nothing (this protocol's servers send
        none). A protocol reads its provider's own header names."""
        return None

    def matches_url(self, url: str) -> bool:
        """Whether a request URL is this protocol's (for cassettes)."""
        import re

        if not self.path:
            return False
        pattern = re.escape(self.path.rstrip("/")).replace(re.escape("{model}"), "[^/]+")
        return re.search(pattern + "$", url.split("?")[0].rstrip("/")) is not None

    def answer_events(self, answer: dict[str, Any]) -> list[tuple[str | None, Any]]:
        """A whole, non-streamed answer (a server that sent JSON where a stream was asked
        for) as this protocol's own stream events, for its adapter: ``(event name, data)``
        pairs, ``"[DONE]"`` as data for the marker. The same reply, whichever way it came."""
        raise NotImplementedError(
            f"the {self.name} protocol cannot read a whole answer: it writes answer_events(answer)"
        )


def check_effort(
    level: str, caps: ModelCapabilities, preset: Preset, model: str, accepted: tuple[str, ...] = EFFORT_LEVELS
) -> str:
    """``level`` if the model takes it (``accepted``: what the protocol can carry, when the
    model's levels are not known), or a refusal that lists the levels it has."""
    levels = caps.effort if caps.effort is not None else accepted
    if not levels:
        raise refuse("reasoning_effort", preset, "the model takes no effort level", model=model)
    if level not in levels:
        raise refuse(
            "reasoning_effort",
            preset,
            f"{level!r} is not a level the model has; it takes {', '.join(levels)}",
            model=model,
        )
    return level


def check_thinking_limits(o: ModelOptions, caps: ModelCapabilities, preset: Preset, model: str) -> None:
    """Refuse a budget outside the range the model takes, and an effort the model does not
    take with thinking off (where those are known)."""
    budget = o.thinking_budget
    if budget is not None and o.thinking is not False:
        if caps.budget_min is not None and budget < caps.budget_min:
            raise refuse(
                "thinking_budget", preset, f"the model takes a budget of at least {caps.budget_min} tokens", model=model
            )
        if caps.budget_max is not None and budget > caps.budget_max:
            raise refuse(
                "thinking_budget", preset, f"the model takes a budget of at most {caps.budget_max} tokens", model=model
            )
    levels = caps.thinking_off_effort
    if (
        o.thinking is False
        and o.reasoning_effort is not None
        and levels is not None
        and o.reasoning_effort not in levels
    ):
        takes = f"takes effort {', '.join(levels)} only" if levels else "takes no effort level"
        raise refuse(
            "reasoning_effort",
            preset,
            f"with thinking off the model {takes}; lower the effort, or turn thinking on",
            model=model,
        )


def check_sampling(o: ModelOptions, caps: ModelCapabilities, preset: Preset, model: str) -> None:
    """Refuse sampling parameters the model does not take: none at all, none while it
    thinks (taken with thinking off), or both of temperature and top_p where it takes one
    (where those are known)."""
    given = [name for name in ("temperature", "top_p") if getattr(o, name) is not None]
    if given and caps.sampling is False:
        if not caps.sampling_thinking_off:
            raise refuse(given[0], preset, "the model takes no sampling parameters; leave it out", model=model)
        if o.thinking is not False:
            raise refuse(
                given[0],
                preset,
                "the model takes sampling parameters only with thinking off; leave it out, or set thinking=False",
                model=model,
            )
    if len(given) == 2 and caps.sampling_one_of:
        raise refuse("top_p", preset, "the model takes temperature or top_p, not both; leave one out", model=model)


def check_max_tokens(o: ModelOptions, caps: ModelCapabilities, preset: Preset, model: str) -> None:
    """Refuse a ``max_tokens`` above what the model writes at most (where that is known)."""
    limit = caps.max_output_tokens
    if o.max_tokens is not None and limit is not None and o.max_tokens > limit:
        raise refuse(
            "max_tokens", preset, f"{o.max_tokens} is above the {limit} tokens the model writes at most", model=model
        )


def thinking_requested(o: ModelOptions, caps: ModelCapabilities) -> bool:
    """Whether the model will think on this call: asked for, or a model that always thinks."""
    if o.thinking is False:
        return False
    return bool(o.thinking or o.thinking_budget or caps.thinking_off is False)


def sampling(body: dict[str, Any], o: ModelOptions, *, top_p: str = "top_p", stop: str | None = None) -> None:
    """temperature, top_p and (when the protocol names a field for them) the stop
    sequences, into ``body`` under the protocol's names."""
    if o.temperature is not None:
        body["temperature"] = o.temperature
    if o.top_p is not None:
        body[top_p] = o.top_p
    if stop is not None and o.stop:
        body[stop] = list(o.stop)


def rate_limit_shape(
    headers: Mapping[str, str], names: Mapping[str, tuple[str, str, str]], reset_is_duration: bool
) -> dict[str, Any] | None:
    """Rate-limit headers in one shape: ``{kind: {"limit", "remaining", "reset"}}`` for each
    kind (``requests``, ``tokens``, ``input_tokens``, ``output_tokens``) whose headers are
    there, ``reset`` an ISO-8601 UTC time; ``retry_after`` in seconds where the server says it.
    ``names``: each kind's (limit, remaining, reset) header names; ``reset_is_duration``: the
    reset is a wait ("6m0s", "1.5s", "20ms") rather than a time."""
    import time

    out: dict[str, Any] = {}
    lowered = {k.lower(): v for k, v in headers.items()}
    for kind, (limit, remaining, reset) in names.items():
        entry: dict[str, Any] = {}
        for key, header in (("limit", limit), ("remaining", remaining)):
            value = lowered.get(header)
            if value is not None and value.strip().isdigit():
                entry[key] = int(value)
        when = lowered.get(reset)
        if when:
            if reset_is_duration:
                seconds = _duration(when)
                if seconds is not None:
                    entry["reset"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds))
            else:
                entry["reset"] = when.strip()
        if entry:
            out[kind] = entry
    retry = lowered.get("retry-after")
    if retry is not None and retry.strip().replace(".", "", 1).isdigit():
        out["retry_after"] = float(retry)
    return out or None


def _duration(text: str) -> float | None:
    """Seconds of a wait written as OpenAI writes it ("6m0s", "1.5s", "20ms", "1h2m3s")."""
    import re

    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", text.strip())
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        return None
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(n) * scale[u] for n, u in parts)


def _check_task_budget(options: ModelOptions, caps: ModelCapabilities, preset: Preset, model: str) -> None:
    """Refuse a task budget the model is not known to take (the capability ``task_budget``)."""
    if options.task_budget is not None and not caps.task_budget:
        raise refuse(
            "task_budget",
            preset,
            "the model is not known to take a task budget; or say capabilities={'task_budget': True}",
            model=model,
        )
