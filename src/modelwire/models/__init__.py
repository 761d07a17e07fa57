"""Models: a formatter, an HTTP transport and an adapter put together, chosen by name.

    import modelwire

    model = modelwire.load_model("anthropic:claude-sonnet-4-5")      # or "openai:gpt-4.1", a profile ...
    async for event in model.stream(messages, tools=tools):
        ...
    reply = await model.complete(messages)

Any object with the same two async methods (see :class:`Model`) works wherever a model
is expected, so users can bring their own. This is the only layer that does network I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, AsyncGenerator, Protocol, Sequence, overload, runtime_checkable

from ..protocols import all_presets, find_preset
from .config import ConfigError, ModelSpec, Preset, resolve
from .options import ModelOptions

if TYPE_CHECKING:  # pragma: no cover
    from ..event import AgentEvent
    from ..message import Msg
    from ._batch import Batch
    from ._count import TokenCount
    from ._ratelimit import RateLimiter
    from ._fallback import FallbackModel
    from ._http import HTTPModel
    from ._middleware import CallNext, DefaultOptions, Middleware, ModelCall, StreamStop, WrappedModel, wrap
    from .transport import RetryPolicy, Timeouts

__all__ = [
    "Model",
    "load_model",
    "FallbackModel",
    "TokenCount",
    "Batch",
    "RateLimiter",
    "ModelOptions",
    "wrap",
    "Middleware",
    "ModelCall",
    "WrappedModel",
    "StreamStop",
    "DefaultOptions",
    "CallNext",
    "all_presets",
    "find_preset",
    "Preset",
    "ModelSpec",
    "resolve",
]


@runtime_checkable
class Model(Protocol):
    """What an agent needs from a model."""

    name: str

    def stream(
        self,
        messages: Sequence["Msg"],
        *,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        options: Any = None,
        reply_id: str | None = None,
    ) -> AsyncGenerator["AgentEvent", None]: ...

    async def complete(
        self,
        messages: Sequence["Msg"],
        *,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        options: Any = None,
        reply_id: str | None = None,
    ) -> "Msg": ...


@overload
def load_model(
    name: "list[str] | tuple[str, ...]",
    *,
    client: Any = None,
    api_key: str | None = None,
    base_url: str | None = None,
    timeouts: "Timeouts | dict[str, Any] | None" = None,
    retry: "RetryPolicy | None" = None,
    max_connections: int = 20,
    **options: Any,
) -> "FallbackModel": ...


@overload
def load_model(
    name: str | None = None,
    *,
    client: Any = None,
    api_key: str | None = None,
    base_url: str | None = None,
    timeouts: "Timeouts | dict[str, Any] | None" = None,
    retry: "RetryPolicy | None" = None,
    max_connections: int = 20,
    **options: Any,
) -> "HTTPModel": ...


def load_model(
    name: str | Sequence[str] | None = None,
    *,
    client: Any = None,
    api_key: str | None = None,
    base_url: str | None = None,
    timeouts: "Timeouts | dict[str, Any] | None" = None,
    retry: "RetryPolicy | None" = None,
    max_connections: int = 20,
    **options: Any,
) -> "HTTPModel | FallbackModel":
    """A model by ``PROVIDER:MODEL``, by profile name, or (no name) from ``MODELWIRE_MODEL``
    and then the config file's ``default``.

    ``client`` may be an ``httpx2`` / ``httpx`` ``AsyncClient``, or an official SDK client
    (``anthropic.AsyncAnthropic``, ``openai.AsyncOpenAI``) already configured: its base URL,
    API key, default headers and connection pool are used. Other keyword arguments are
    :class:`ModelOptions` (``max_tokens``, ``temperature``, ``thinking`` ...).
    ``max_connections`` sizes the connection pool modelwire makes (not a client you pass).

    A list of names is one model that fails over, in order (:class:`FallbackModel`, and typed
    so); so is a profile with ``fallback = ["PROVIDER:MODEL", ...]``, which type checkers see
    as the :class:`HTTPModel` interface both share.
    """
    from ._http import HTTPModel
    from .transport import HTTPTransport, Timeouts

    if not isinstance(name, (str, type(None))):
        from ._fallback import FallbackModel

        names = list(name)
        if not names or not all(isinstance(n, str) for n in names):
            raise ConfigError("load_model() takes a model name, or a list of model names to fail over between")
        shared = dict(
            client=client,
            api_key=api_key,
            base_url=base_url,
            timeouts=timeouts,
            retry=retry,
            max_connections=max_connections,
        )
        return FallbackModel([load_model(n, **shared, **options) for n in names])

    sdk = _sdk_parts(client)
    if sdk is not None:
        client = sdk["http"]
        api_key = api_key or sdk["api_key"]
        base_url = base_url or sdk["base_url"]
        if sdk["headers"]:
            options["extra_headers"] = {**sdk["headers"], **options.get("extra_headers", {})}
    spec = resolve(name, api_key=api_key, base_url=base_url, **options)
    fallback = spec.options.pop("fallback", None)
    if fallback:
        return _profile_fallback(name, spec, fallback, client, timeouts, retry, max_connections)
    if isinstance(timeouts, dict):
        timeouts = Timeouts(**timeouts)
    if timeouts is not None:
        spec.options["timeouts"] = timeouts
    transport = HTTPTransport(client, timeouts=timeouts or Timeouts(), max_connections=max_connections)
    return HTTPModel(spec, transport=transport, retry=retry)


def _offline_model(name: str, base_url: str | None = None, **options: Any) -> "HTTPModel":
    """``name`` with its rules and capabilities and no key, for what reads them without a call
    (``modelwire check``, ``models --capabilities``, ``cassette transpose``): no key is needed
    or sent, no capability is looked up, and its URL is the one named, the preset's, or one
    that resolves nowhere."""
    from .config import REPLAY_KEY

    url = base_url or resolve(name, api_key=REPLAY_KEY).base_url or "http://offline.invalid"
    return load_model(name, api_key=REPLAY_KEY, base_url=url, capability_lookup=False, **options)


def _profile_fallback(
    name: Any, spec: Any, fallback: Any, client: Any, timeouts: Any, retry: Any, max_connections: int
) -> FallbackModel:
    """A profile with ``fallback = [...]``: its own model first, then each named one."""
    from ._fallback import FallbackModel

    if isinstance(fallback, str) or not all(isinstance(n, str) for n in fallback):
        raise ConfigError(f"{name}: fallback must be a list of model names")
    primary = load_model(
        f"{spec.preset.name}:{spec.model}",
        client=client,
        api_key=spec.api_key,
        base_url=spec.base_url,
        timeouts=timeouts,
        retry=retry,
        max_connections=max_connections,
        **spec.options,
    )
    others = [load_model(n, timeouts=timeouts, retry=retry, max_connections=max_connections) for n in fallback]
    return FallbackModel([primary, *others])


def __getattr__(name: str) -> Any:
    if name == "FallbackModel":
        from ._fallback import FallbackModel

        return FallbackModel
    if name in ("RateLimiter", "Permit"):
        from . import _ratelimit

        return getattr(_ratelimit, name)
    if name in _MIDDLEWARE:
        from . import _middleware

        return getattr(_middleware, name)
    if name == "TokenCount":
        from ._count import TokenCount

        return TokenCount
    if name == "Batch":
        from ._batch import Batch

        return Batch
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_MIDDLEWARE = frozenset({"wrap", "Middleware", "ModelCall", "WrappedModel", "StreamStop", "DefaultOptions", "CallNext"})


def _sdk_parts(client: Any) -> dict[str, Any] | None:
    """Base URL, key, headers and HTTP client of an official SDK client, if it is one."""
    from ..protocols import get_protocol, protocol_names

    package = type(client).__module__.split(".")[0]
    protocol = (
        next((p for p in map(get_protocol, protocol_names()) if p.sdk_package == package), None)
        if client is not None
        else None
    )
    if protocol is None or client is None:
        return None
    base_url = protocol.sdk_base_url(str(client.base_url))
    headers = {k: v for k, v in (getattr(client, "_custom_headers", None) or {}).items() if isinstance(v, str)}
    return {"http": client._client, "api_key": client.api_key, "base_url": base_url, "headers": headers}
