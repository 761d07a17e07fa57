"""What a wire protocol is: one object that knows everything modelwire needs about it.

Pure and synchronous like the adapters and formatters it points to: it builds URLs,
headers and bodies and maps options and error bodies, but sends nothing (the models
layer does the I/O).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

from .._version import __version__
from ..errors import ConfigError, ProviderError, UnsupportedOptionError, error_from_body
from ._caps import EFFORT_LEVELS, ModelCapabilities, Refusal

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
]

USER_AGENT = f"modelwire/{__version__}"
DEFAULT_MAX_TOKENS = 4096


@dataclass(frozen=True)
class Preset:
    """How to reach one provider: data only; its protocol interprets ``dialect``."""

    name: str
    protocol: str
    base_url: str
    key_env: str | None  # the environment variable holding the API key (None: no key needed)
    # The environment variable that overrides the base URL; None: <NAME>_BASE_URL
    # (``base_url_variable``), as ``modelwire chat --help`` promises for every provider.
    base_url_env: str | None = None
    key_required: bool = True
    auth: str = "bearer"  # bearer, none, or the header that carries the key (x-api-key, api-key ...)
    headers: Mapping[str, str] = field(default_factory=dict)
    # The request path when it is not the protocol's own, with {model} filled in, and
    # query parameters taken from the environment: {param: (variable, default)}.
    path: str | None = None
    query: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    # What this server does differently from the protocol's reference (for OpenAI-compatible
    # servers: where reasoning arrives and goes back, its thinking switch ...).
    dialect: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    example: str = ""  # a model name to show in help
    # The family of endpoints that accept what this provider's own endpoint mints (signed
    # thinking, encrypted reasoning); None: the preset's name. Any other base URL is a
    # family of its own (its host), unless a profile says ``endpoint_family``.
    endpoint_family: str | None = None
    # How others name this provider: OpenTelemetry's GenAI conventions (None: the preset's
    # name) and the genai-prices catalogue (None: not in it, so its calls are not priced).
    otel_name: str | None = None
    price_id: str | None = None
    # How this provider's own model names begin, to suggest PROVIDER:MODEL for a bare name.
    model_prefixes: tuple[str, ...] = ()

    @property
    def base_url_variable(self) -> str:
        """The environment variable that overrides this provider's base URL."""
        return self.base_url_env or self.name.upper().replace("-", "_") + "_BASE_URL"


@dataclass(frozen=True)
class Capabilities:
    """What a protocol can do; the agent and the CLI ask this instead of naming protocols."""

    native_structured_output: bool = False  # a JSON-schema output mode (else: a final_answer tool)
    thinking: bool = False
    server_tools: bool = False
    parallel_tool_calls: bool = True


@dataclass
class ModelOptions:
    """Unified call options; each protocol maps them onto its request or refuses them."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: list[str] | None = None
    thinking: bool | None = None  # turn extended thinking / reasoning on or off
    thinking_budget: int | None = None  # tokens
    reasoning_effort: str | None = None  # minimal | low | medium | high | xhigh | max
    reasoning_summary: str | None = None  # auto | concise | detailed (OpenAI Responses)
    thinking_display: str | None = None  # summarized | omitted: what is shown of the thinking
    parallel_tool_calls: bool | None = None
    json_schema: dict[str, Any] | None = None  # structured output: a JSON schema
    json_schema_name: str = "output"
    cache: Any = None  # prompt caching: True | "5m" | "1h" | {ttl, system, tools, history, key, placement} | False
    stateless: bool | None = None  # keep nothing on the provider's side (its state replayed instead)
    chain: bool | None = None  # continue the provider's stored response, sending only the new items
    background: bool | None = None  # run the response in the background (resumed if the stream drops)
    stream: bool | None = None  # False: the whole answer at once (no streaming), decoded into the same events
    extra_headers: dict[str, str] = field(default_factory=dict)
    extra_body: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "ModelOptions":
        data = dict(data or {})
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise UnsupportedOptionError(sorted(unknown)[0], "modelwire", f"known options: {', '.join(sorted(known))}")
        if isinstance(data.get("stop"), str):
            data["stop"] = [data["stop"]]
        for name, value in data.items():
            if value is not None:
                _check_option(name, value)
        return cls(**data)

    def merged(self, other: "ModelOptions | dict[str, Any] | None") -> "ModelOptions":
        if other is None:
            return self
        if isinstance(other, dict):
            other = ModelOptions.from_dict(other)
        mine = asdict(self)
        theirs = asdict(other)
        out = {}
        for key, value in mine.items():
            new = theirs[key]
            if key in ("extra_headers", "extra_body"):
                out[key] = {**value, **new}
            else:
                out[key] = new if new is not None and new != ModelOptions.__dataclass_fields__[key].default else value
        return ModelOptions(**out)


def _number(low: float, high: float | None = None, whole: bool = False) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        kinds = (int,) if whole else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            return f"must be {'a whole number' if whole else 'a number'}"
        if value != value or value in (float("inf"), float("-inf")):
            return "must be a finite number"  # JSON has no NaN or infinity
        if value < low or (high is not None and value > high):
            return f"must be between {low:g} and {high:g}" if high is not None else f"must be at least {low:g}"
        return None

    return check


def _kind(*kinds: type, each: type | None = None) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) and bool not in kinds:
            return f"must be {' or '.join(k.__name__ for k in kinds)}"
        if not isinstance(value, kinds):
            return f"must be {' or '.join(k.__name__ for k in kinds)}"
        items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        if each is not None and not all(isinstance(v, each) for v in items):
            return f"must hold only {each.__name__} values"
        return None

    return check


CACHE_TTLS = ("5m", "1h")
_CACHE_KEYS = {
    "ttl": "5m or 1h",
    "system": "a bool",
    "tools": "a bool",
    "history": "a bool",
    "key": "a string",
    "placement": "breakpoints or provider",
}


@dataclass(frozen=True)
class CachePlan:
    """What the ``cache`` option asks for, whatever the provider: keep the prompt's prefix
    for at least ``ttl``; mark the ``system`` prompt, the ``tools`` and the end of the
    ``history`` (a breakpoint that moves with the conversation), where a provider takes
    marks; ``key``: a routing key for providers that take one; ``placement="provider"``:
    the provider's own automatic placement instead of modelwire's marks."""

    ttl: str = "5m"
    system: bool = True
    tools: bool = True
    history: bool = True
    key: str | None = None
    placement: str = "breakpoints"

    @classmethod
    def of(cls, value: Any) -> "CachePlan | None":
        """The plan of a ``cache`` option value (None: caching not asked for, or off)."""
        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if isinstance(value, str):
            return cls(ttl=value)
        return cls(**value)


def cache_marks_problem(
    marks: Sequence[Mapping[str, Any]], limit: int, noun: str, provider: str
) -> tuple[str, str] | None:
    """What is wrong with a request's cache marks, in prompt order, under the rules Claude
    and Bedrock share: at most ``limit``, and no 1-hour mark after a 5-minute one. A
    ``(code, message)`` pair (``cache-breakpoints`` or ``cache-ttl-order``), or None."""
    if len(marks) > limit:
        return "cache-breakpoints", f"{len(marks)} {noun}s in the request; {provider} allows {limit}"
    ttls = [mark.get("ttl", "5m") for mark in marks]
    if "5m" in ttls and "1h" in ttls[ttls.index("5m") :]:
        return (
            "cache-ttl-order",
            f"a 1-hour {noun} comes after a 5-minute one; {provider} wants the longer-lived ones first",
        )
    return None


def _cache_check(value: Any) -> str | None:
    if isinstance(value, bool) or value in CACHE_TTLS:
        return None
    if not isinstance(value, dict):
        return "must be True, False, '5m', '1h' or a dict of " + ", ".join(_CACHE_KEYS)
    for key, item in value.items():
        if key not in _CACHE_KEYS:
            return f"takes no {key!r} (it takes {', '.join(_CACHE_KEYS)})"
        ok = {
            "ttl": item in CACHE_TTLS,
            "key": isinstance(item, str) and bool(item),
            "placement": item in ("breakpoints", "provider"),
        }.get(key, isinstance(item, bool))
        if not ok:
            return f"{key} must be {_CACHE_KEYS[key]}"
    return None


def _one_of(*choices: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value in choices else f"must be one of {', '.join(choices)}"

    return check


# What each option may be, checked when options are given (a profile, load_model, a call),
# before anything is sent: "hot" is no temperature.
_OPTION_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "max_tokens": _number(1, whole=True),
    "temperature": _number(0, 2),
    "top_p": _number(0, 1),
    "stop": _kind(list, each=str),
    "thinking": _kind(bool),
    "thinking_budget": _number(0, whole=True),
    "reasoning_effort": _one_of(*EFFORT_LEVELS),
    "reasoning_summary": _kind(str),
    "thinking_display": _one_of("summarized", "omitted"),
    "parallel_tool_calls": _kind(bool),
    "json_schema": _kind(dict),
    "json_schema_name": _kind(str),
    "cache": _cache_check,
    "stateless": _kind(bool),
    "chain": _kind(bool),
    "background": _kind(bool),
    "stream": _kind(bool),
    "extra_headers": _kind(dict, each=str),
    "extra_body": _kind(dict),
}


def _check_option(name: str, value: Any) -> None:
    check = _OPTION_CHECKS.get(name)
    problem = check(value) if check is not None else None
    if problem is not None:
        raise ConfigError(f"option {name}={value!r} {problem}")


def fake_words(text: str) -> list[str]:
    """A scripted text in the pieces a fake stream sends it in: word by word, each piece but
    the last with its following space, so the pieces join to exactly the text."""
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]]


def deep_merge(target: dict[str, Any], extra: Mapping[str, Any]) -> None:
    """Merge ``extra`` into ``target`` in place, dicts key by key (how ``extra_body`` joins a request)."""
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            deep_merge(target[key], value)
        else:
            target[key] = value


def _load(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class HTTPCall:
    """One request a protocol asks the models layer to send for it (an upload, a listing):
    the URL, the method, the headers besides the usual auth, and the body."""

    method: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | None = None


@dataclass(frozen=True)
class UploadedFile:
    """A file a provider holds: its ``id``, the ``url`` a reference to it carries, its
    media type, name and size in bytes."""

    id: str
    url: str
    media_type: str
    name: str
    size: int | None = None


@dataclass(frozen=True)
class BatchState:
    """Where a batch of requests stands: its ``id``, the provider's own ``status`` word,
    whether it ``ended`` (its results can be read), the provider's request ``counts``, and
    the requests that read its results once it ended."""

    id: str
    status: str
    ended: bool
    counts: Mapping[str, int] = field(default_factory=dict)
    results: tuple[HTTPCall, ...] = ()
    size: int | None = None  # how many requests the batch holds, where the provider says


BatchResult = tuple[int, "Mapping[str, Any] | None", "Mapping[str, Any] | None"]  # (request index, answer, error body)


def batch_lines(text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each JSON line of a batch's results, with the index of the request it answers (its
    ``custom_id``, ``request-N``, as ``batch_submit`` names them)."""
    import json

    for line in text.splitlines():
        if line.strip():
            item = json.loads(line)
            yield int(str(item.get("custom_id", "")).rpartition("-")[2]), item


def multipart(
    fields: Mapping[str, str], file_field: str, filename: str, media_type: str, data: bytes
) -> tuple[bytes, str]:
    """A ``multipart/form-data`` body of ``fields`` and one file, and its content type (with
    the boundary), written as RFC 7578 says and as the official SDKs send it."""
    import secrets

    boundary = "modelwire-" + secrets.token_hex(16)
    safe = filename.replace("\\", "\\\\").replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields.items()
    ]
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; '
        f'filename="{safe}"\r\nContent-Type: {media_type}\r\n\r\n'
    )
    body = b"".join(parts) + head.encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


class WireProtocol:
    """One wire protocol. Subclass it, set the class attributes, implement
    :meth:`apply_options` (and :meth:`fake_stream` for the test server), and register an
    instance (built in, or through the ``modelwire.protocols`` entry-point group).

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
        return _load(self.adapter)

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

    def needs_inline(self, media_type: str) -> bool:
        """Whether an http(s) source of this media type must be fetched and sent as base64."""
        return bool(self.formatter_class().needs_inline(media_type))

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

    # -- files: uploaded once, referred to by id -------------------------------------------

    files_refusal = "it has no Files API known to modelwire: send the data inline, or by URL"
    files_api: str | None = None  # whose Files API holds its uploads (protocols sharing one name it alike)

    def file_upload(self, base_url: str, preset: Preset, data: bytes, media_type: str, name: str) -> HTTPCall:
        """The request that uploads ``data`` to the provider's Files API, or an
        :class:`~modelwire.errors.UnsupportedOptionError` saying what it takes instead."""
        raise UnsupportedOptionError("upload_file", preset.name, self.files_refusal)

    def file_uploaded(
        self, answer: Mapping[str, Any], headers: Mapping[str, str], call: HTTPCall, data: bytes
    ) -> "UploadedFile | HTTPCall":
        """The file the provider now holds, from the answer to ``call``; or the next request
        of an upload made in several (Gemini's resumable upload)."""
        raise UnsupportedOptionError("upload_file", self.name, self.files_refusal)

    def files_url(self, base_url: str, preset: Preset) -> str:
        """Where the provider lists the files it holds (``GET``); a file's own URL is this
        and its id."""
        raise UnsupportedOptionError("list_files", preset.name, self.files_refusal)

    def files_listed(self, answer: Mapping[str, Any], base_url: str, preset: Preset) -> list[UploadedFile]:
        """The files in a listing's answer."""
        return []

    def takes_file_ref(self, media_type: str) -> bool:
        """Whether a file the endpoint holds can be sent by reference as this media type (else
        its bytes go, from the block's local copy)."""
        return False

    # -- batches: many requests answered within a day, at a discount --------------------------

    batch_refusal = "it has no batch API known to modelwire"
    batch_discount = 1.0  # what a batched request costs, as a share of the same request sent alone
    batch_limit = 0  # the most requests one batch takes (0: no limit known)

    def batch_submit(self, base_url: str, preset: Preset, model: str, bodies: Sequence[Mapping[str, Any]]) -> HTTPCall:
        """The request that submits ``bodies`` (whole-answer request bodies, in order) as one
        batch, or an ``UnsupportedOptionError`` saying why there is none."""
        raise UnsupportedOptionError("batch", preset.name, self.batch_refusal)

    def batch_submitted(
        self, answer: Mapping[str, Any], call: HTTPCall, base_url: str, preset: Preset
    ) -> "BatchState | HTTPCall":
        """The batch's state from the answer to ``call``, or the next request of a submission
        made in several (OpenAI's: the input file, then the batch)."""
        return self.batch_state(answer, base_url, preset)

    def batch_call(self, base_url: str, preset: Preset, batch_id: str, action: str) -> HTTPCall:
        """The request that reads a batch's state (``action`` ``status``) or cancels it (``cancel``)."""
        raise UnsupportedOptionError("batch", preset.name, self.batch_refusal)

    def batch_state(self, answer: Mapping[str, Any], base_url: str, preset: Preset) -> BatchState:
        """A batch's state from the provider's answer."""
        raise UnsupportedOptionError("batch", preset.name, self.batch_refusal)

    def batch_results(self, text: str) -> list[tuple[int, Mapping[str, Any] | None, Mapping[str, Any] | None]]:
        """A batch's results (the text its results requests read): ``(request index, the whole
        answer or None, the error body or None)`` for each request it holds."""
        return []

    def count_request(
        self, url: str, body: dict[str, Any], model: str, preset: Preset
    ) -> tuple[str, dict[str, Any]] | None:
        """The URL and body of the provider's own endpoint that counts the input tokens of
        the request ``body`` (which would go to ``url``), or None where it has none."""
        return None

    def counted(self, answer: Mapping[str, Any]) -> int:
        """The input tokens in the counting endpoint's answer (each provider names them its way)."""
        for key in ("input_tokens", "inputTokens", "totalTokens"):
            if isinstance(answer.get(key), int):
                return answer[key]
        raise ValueError(f"no token count in {str(dict(answer))[:200]}")

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
        if caps.sampling is False:
            for name in ("temperature", "top_p"):
                if getattr(options, name) is not None:
                    raise refuse(name, preset, "the model takes no sampling parameters; leave it out", model=model)
        if options.background and not self.keeps_state:
            raise refuse(
                "background",
                preset,
                "the provider keeps no responses to run in the background; leave it out",
                model=model,
            )
        check_thinking_limits(options, caps, preset, model)
        self.apply_options(body, options, preset, model=model, caps=caps)
        plan = CachePlan.of(options.cache)
        if plan is not None:
            self.apply_cache(body, plan, preset, model=model, caps=caps)
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

    # Whether the provider keeps responses on its side (so that ``stateless``, ``chain`` and
    # ``background`` mean something). Where it keeps none, ``stateless`` and ``chain`` are
    # what happens anyway, and ``background`` is refused.
    keeps_state: bool = False

    def chain(self, body: dict[str, Any], records: Sequence[Any]) -> dict[str, Any] | None:
        """``body`` continuing one of the stored responses in ``records`` (what
        :meth:`chain_record` kept of earlier calls), with only the new items; None when
        none of them is this conversation's."""
        return None

    def chain_record(self, body: dict[str, Any], metadata: Mapping[str, Any]) -> Any:
        """What to keep of a finished call (its full request, the end's metadata) to
        continue it later; None: nothing."""
        return None

    def forgot_state(self, err: Exception) -> bool:
        """Whether ``err`` says the server no longer has the response a request continued."""
        return False

    def resume_url(self, base_url: str, preset: Preset, metadata: Mapping[str, Any]) -> str | None:
        """Where to read the rest of a background response whose stream broke (a GET), from
        what its adapter recorded so far; None when it cannot be resumed."""
        return None

    def apply_cache(
        self,
        body: dict[str, Any],
        plan: CachePlan,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        """Put the prompt-caching ``plan`` into ``body`` as this provider takes it (in
        place), or refuse it: a provider with no caching to ask for refuses ``cache``."""
        raise refuse("cache", preset, "the provider has no prompt caching to ask for; leave cache out", model=model)

    def cache_resource(self, body: dict[str, Any], plan: CachePlan, url: str) -> tuple[str, dict[str, Any]] | None:
        """For a provider whose cache is a resource created first (and then named in the
        request): where to create it for this request (``url`` is the request's) and the
        body that creates it; None when there is nothing to create."""
        return None

    def with_cache_resource(self, body: dict[str, Any], name: str) -> dict[str, Any]:
        """``body`` using the created cache ``name`` (what it holds left out)."""
        raise NotImplementedError

    # The request's fields in the order the provider reads its prompt (the cached prefix is
    # a leading run of them); the last is the conversation, one part per item.
    prompt_order: tuple[str, ...] = ()
    # Keys that only mark cache breakpoints (left out when prefixes are compared).
    cache_marker_keys: tuple[str, ...] = ()

    def prompt_parts(self, body: dict[str, Any]) -> list[tuple[str, Any]]:
        """The request as the provider's cached prefix sees it: ``(label, value)`` in
        prompt order, cache marks left out. Two calls share a cached prefix up to their
        first differing part."""
        parts: list[tuple[str, Any]] = []
        for index, name in enumerate(self.prompt_order):
            value = _unmarked(body.get(name), self.cache_marker_keys)
            if index == len(self.prompt_order) - 1 and isinstance(value, list):
                parts += [(f"{name}[{i}]", item) for i, item in enumerate(value)]
            elif value is not None:
                parts.append((name, value))
        return parts

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

    # Whether every request depends on what the model is (then its capabilities are looked
    # up on the first call whatever the options).
    lookup_always = False
    # Whether tool calls arrive whole (one provider event each), not as argument fragments.
    whole_tool_calls = False

    def model_info_url(self, base_url: str, model: str, preset: Preset) -> str | None:
        """Where the provider publishes what ``model`` accepts (a GET with the usual auth,
        or a POST of :meth:`model_info_body`), or None when it does not."""
        return None

    def model_info_body(self, model: str) -> bytes | None:
        """The JSON body to POST to :meth:`model_info_url` (None: a GET)."""
        return None

    def capabilities_from_info(self, data: Any, model: str) -> ModelCapabilities | None:
        """The published answer of :meth:`model_info_url` as a record (only what it says;
        None when the answer does not describe the model)."""
        return None

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
        raise NotImplementedError

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
        raise NotImplementedError(f"the {self.name} protocol cannot read a whole answer")

    # -- SDK clients -----------------------------------------------------------------------

    def sdk_base_url(self, base_url: str) -> str:
        """The base URL modelwire wants, from an SDK client's."""
        return base_url.rstrip("/")

    # -- testing ---------------------------------------------------------------------------

    def fake_stream(self, *blocks: tuple, **options: Any) -> bytes:
        """A response body for the local test server, from neutral blocks:
        ``("think", text)``, ``("text", text)``, ``("tool", call_id, name, arguments_json)``."""
        raise NotImplementedError(f"the {self.name} protocol has no fake stream")

    def fake_answer(self, *blocks: tuple, usage: tuple[int, int] = (10, 5)) -> dict[str, Any]:
        """The whole (not streamed) answer a server gives for the same blocks as
        :meth:`fake_stream`: what :meth:`answer_events` reads (the conformance suite checks
        that both fold to one reply). Optional: a protocol without it is checked on its
        streams alone."""
        raise NotImplementedError(f"the {self.name} protocol has no fake whole answer")

    def split_stream(self, body: bytes) -> list[bytes]:
        """A response body in the pieces a server sends it in: one event (or line, or
        frame) each, by :attr:`framing`."""
        from ..adapters import split_framed

        return split_framed(self.framing, body)


# Dialect keys the models layer reads for any protocol: where credentials come from when
# there is no key, and the variables a key may be in.
COMMON_DIALECT: dict[str, Any] = {"credentials": {"google", "aws", "azure"}, "key_envs": (tuple, list)}


def _unmarked(value: Any, markers: tuple[str, ...]) -> Any:
    """``value`` without cache marks: keys in ``markers`` dropped, list items that are only
    a mark dropped."""
    if not markers:
        return value
    if isinstance(value, dict):
        return {k: _unmarked(v, markers) for k, v in value.items() if k not in markers}
    if isinstance(value, list):
        return [_unmarked(v, markers) for v in value if not (isinstance(v, dict) and v and set(v) <= set(markers))]
    return value


def refuse(option: str, preset: Preset, hint: str = "", model: str = "") -> UnsupportedOptionError:
    return UnsupportedOptionError(option, preset.name, hint, model=model or None)


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
