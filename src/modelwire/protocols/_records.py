"""The plain records a wire protocol is described with and answers in: presets,
capabilities, options, cache plans, HTTP calls, uploaded files, batch states, and the small
helpers the protocols share to read and refuse them."""

from __future__ import annotations

import importlib
import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable, Iterator, Mapping, Sequence

from .._version import __version__
from ..errors import ConfigError, ProviderError, StreamProtocolError, UnsupportedOptionError
from ._caps import EFFORT_LEVELS

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
    # the provider's own compaction of a long conversation: True | a threshold in input tokens |
    # {threshold, pause, instructions} | False (see CompactionPlan)
    compaction: Any = None
    # a token budget across the whole agentic task, which the model paces itself by (Claude's
    # output_config.task_budget): the total, or {total, remaining}
    task_budget: Any = None
    media_resolution: str | None = None  # low | medium | high: the tokens each image or video frame costs
    # the provider clears old tool uses from what the model sees (Claude's context editing):
    # True | {trigger, keep, clear_at_least, exclude_tools, clear_tool_inputs} | False
    clear_tool_uses: Any = None
    extra_headers: dict[str, str] = field(default_factory=dict)
    extra_body: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "ModelOptions":
        data = dict(data or {})
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            import difflib

            bad = sorted(unknown)[0]
            close = difflib.get_close_matches(bad, sorted(known), n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise UnsupportedOptionError(bad, "modelwire", f"{hint}known options: {', '.join(sorted(known))}")
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
        out: dict[str, Any] = {}
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


_COMPACTION_KEYS = {"threshold": "a whole number of tokens", "pause": "a bool", "instructions": "a string"}


@dataclass(frozen=True)
class CompactionPlan:
    """What the ``compaction`` option asks for, whatever the provider: let the provider
    summarise the conversation into a compaction block once its input passes ``threshold``
    tokens (None: the provider's default); ``pause``: stop the call right after it
    compacted (the stop reason ``compaction``; the agent then goes on); ``instructions``:
    what the summary must keep, where the provider takes them."""

    threshold: int | None = None
    pause: bool = False
    instructions: str | None = None

    @classmethod
    def of(cls, value: Any) -> "CompactionPlan | None":
        """The plan of a ``compaction`` option value (None: not asked for, or off)."""
        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if isinstance(value, int):
            return cls(threshold=value)
        return cls(**value)


def _compaction_check(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return None if value > 0 else "must be a positive number of tokens"
    if not isinstance(value, dict):
        return "must be True, False, a threshold in tokens or a dict of " + ", ".join(_COMPACTION_KEYS)
    for key, item in value.items():
        if key not in _COMPACTION_KEYS:
            return f"takes no {key!r} (it takes {', '.join(_COMPACTION_KEYS)})"
        ok = {
            "threshold": isinstance(item, int) and not isinstance(item, bool) and item > 0,
            "pause": isinstance(item, bool),
            "instructions": isinstance(item, str) and bool(item),
        }[key]
        if not ok:
            return f"{key} must be {_COMPACTION_KEYS[key]}"
    return None


def _task_budget_check(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return None if value > 0 else "must be a positive number of tokens"
    if not isinstance(value, dict) or set(value) - {"total", "remaining"} or "total" not in value:
        return "must be a number of tokens, or {total, remaining}"
    if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in value.values()) or value["total"] < 1:
        return "takes whole numbers of tokens (total above 0)"
    return None


_CLEAR_KEYS = {
    "trigger": "input tokens, or {'input_tokens' or 'tool_uses': N}",
    "keep": "a number of tool uses",
    "clear_at_least": "a number of input tokens",
    "exclude_tools": "a list of tool names",
    "clear_tool_inputs": "a bool or a list of tool names",
}


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _clear_tool_uses_check(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if not isinstance(value, dict):
        return "must be True, False or a dict of " + ", ".join(_CLEAR_KEYS)
    for key, item in value.items():
        if key not in _CLEAR_KEYS:
            return f"takes no {key!r} (it takes {', '.join(_CLEAR_KEYS)})"
        ok = {
            "trigger": _count(item)
            or (isinstance(item, dict) and len(item) == 1 and set(item) <= {"input_tokens", "tool_uses"}
                and _count(next(iter(item.values())))),
            "keep": _count(item),
            "clear_at_least": _count(item),
            "exclude_tools": _names(item),
            "clear_tool_inputs": isinstance(item, bool) or _names(item),
        }[key]  # fmt: skip
        if not ok:
            return f"{key} must be {_CLEAR_KEYS[key]}"
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
    "compaction": _compaction_check,
    "task_budget": _task_budget_check,
    "media_resolution": _one_of("low", "medium", "high"),
    "clear_tool_uses": _clear_tool_uses_check,
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


class FileBody:
    """A request body whose bulk is a file on disk (an upload from a path): ``before``, the
    file's first ``size`` bytes, ``after``. The models layer reads the file as it sends it, a
    piece at a time, so an upload costs the same memory whatever the file's size; its length
    is known before (``len``, the request's Content-Length). A protocol handed one as an
    upload's data puts it in a body as it would bytes: :func:`multipart` wraps it, or it is
    the body itself."""

    __slots__ = ("path", "size", "before", "after")

    def __init__(self, path: str, size: int, before: bytes = b"", after: bytes = b"") -> None:
        self.path = path
        self.size = size
        self.before = before
        self.after = after

    def __len__(self) -> int:
        return len(self.before) + self.size + len(self.after)

    def around(self, before: bytes, after: bytes) -> "FileBody":
        """This body with ``before`` put first and ``after`` last."""
        return FileBody(self.path, self.size, before + self.before, self.after + after)

    def __repr__(self) -> str:
        return f"FileBody({self.path!r}, {len(self)} bytes)"


@dataclass(frozen=True)
class HTTPCall:
    """One request a protocol asks the models layer to send for it (an upload, a listing):
    the URL, the method, the headers besides the usual auth, and the body (bytes, or a
    :class:`FileBody` read from disk as it is sent)."""

    method: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: "bytes | FileBody | None" = None


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


# (request index, answer, error body or the typed error of a result that could not be read);
# an index that names no request of the batch (-1: none could be read) is reported, not placed.
BatchResult = tuple[int, "Mapping[str, Any] | None", "Mapping[str, Any] | ProviderError | None"]

_CUSTOM_ID = re.compile(r'"custom_id"\s*:\s*"request-(\d{1,9})"')


def request_index(custom_id: Any) -> int:
    """The index of the request a ``custom_id`` names (``request-N``, as ``batch_submit`` names
    them), or -1 when it names none."""
    number = custom_id.rpartition("-")[2] if isinstance(custom_id, str) else ""
    return int(number) if number.isascii() and number.isdigit() and len(number) < 10 else -1


def batch_lines(text: str) -> Iterator[tuple[int, dict[str, Any] | ProviderError]]:
    """Each JSON line of a batch's results, with the index of the request it answers (see
    :func:`request_index`). A line that is not a JSON object is a
    :class:`~modelwire.errors.StreamProtocolError` in its place: the request its text names
    (-1 when it names none) gets that error, and every other line is read as it is."""
    import json

    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            item = exc
        if isinstance(item, dict):
            yield request_index(item.get("custom_id")), item
            continue
        named = _CUSTOM_ID.search(line) if not isinstance(item, list) else None
        what = "is not JSON" if isinstance(item, ValueError) else f"is a JSON {type(item).__name__}, not an object"
        yield (
            int(named.group(1)) if named else -1,
            StreamProtocolError(f"line {number} of the batch's results {what}: {line[:200]!r}", body=line[:2000]),
        )


def multipart(
    fields: Mapping[str, str], file_field: str, filename: str, media_type: str, data: "bytes | FileBody"
) -> "tuple[bytes | FileBody, str]":
    """A ``multipart/form-data`` body of ``fields`` and one file, and its content type (with
    the boundary), written as RFC 7578 says and as the official SDKs send it (a
    :class:`FileBody` when the file is one: read from disk as it is sent)."""
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
    before, after = b"".join(parts) + head.encode(), f"\r\n--{boundary}--\r\n".encode()
    content_type = f"multipart/form-data; boundary={boundary}"
    if isinstance(data, FileBody):
        return data.around(before, after), content_type
    return before + data + after, content_type


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
