"""The errors a provider reports, or its response makes: :class:`ProviderError` and its tree."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any, Sequence

from ._base import ModelwireError, UnsupportedOptionError

if TYPE_CHECKING:
    from ..event import AgentEvent
    from ..message import Msg


# -- provider errors ---------------------------------------------------------------------------
#
# ``error_type`` is one of the SPEC's error types (authentication, permission, rate_limit,
# invalid_request, upstream, connection, internal, setup, unknown), so an agent can put
# it straight into ``REPLY_END.error``.


class ProviderError(ModelwireError):
    """A provider reported an error, or its response could not be used.

    Attributes:
        error_type: the SPEC's error type for this error.
        provider_type: the provider's own error type or code (``overloaded_error``,
            ``tool_use_failed``, ``context_length_exceeded`` ...), when it gave one.
        message: the provider's message (or ours, when the provider gave none).
        status_code / request_id: from the HTTP response, when known.
        events: modelwire events that close what the stream had opened (block ENDs and
            ``MODEL_CALL_END``). A consumer should pass them on before handling the
            error, so that what was already received stays a valid, foldable stream.
    """

    error_type = "unknown"
    message: str
    provider_type: str | None
    status_code: int | None
    request_id: str | None
    body: Any
    args: tuple[Any, ...]  # masked, as the message and body are, when the request's secrets are known
    rate_limits: dict[str, Any] | None = None
    """What the response's headers said of the caller's rate limits (see
    ``WireProtocol.rate_limits``), when it came with any."""
    partial: Msg | None = None
    """The reply as far as it got, when the error ended an agent's reply or a ``complete()``."""
    retry_after: float | None = None
    """The seconds the provider asked to wait before trying again (its ``Retry-After`` header,
    or the same in its error body), when it said."""

    def __init__(
        self,
        message: str,
        *,
        provider_type: str | None = None,
        status_code: int | None = None,
        request_id: str | None = None,
        body: Any = None,
        events: list[AgentEvent] | None = None,
    ) -> None:
        self.message = message
        self.provider_type = provider_type
        self.status_code = status_code
        self.request_id = request_id
        self.body = body
        self.events: list[AgentEvent] = events or []
        super().__init__(message)

    def __str__(self) -> str:
        # Built when shown: the message and request id may be filled in after raising.
        bits = [self.message]
        if self.provider_type:
            bits.insert(0, f"[{self.provider_type}]")
        if self.status_code is not None:
            bits.insert(0, f"HTTP {self.status_code}")
        if self.request_id:
            bits.append(f"(request id {self.request_id})")
        return " ".join(bits)

    def to_error_info(self) -> dict[str, str]:
        """The ``{type, message}`` pair for ``Msg.error`` / ``REPLY_END.error``."""
        return {"type": self.error_type, "message": self.message}

    def mask(self, secrets: Any) -> None:
        """Replace each of ``secrets`` (the credentials the request carried) by ``***``
        wherever this error keeps text: its message, body and arguments, and the metadata of
        the events that close its call (a server that echoes a key, ``invalid x-api-key
        sk-...``, must not show it to whoever reads the error)."""
        from .._secrets import masked

        secrets = [s for s in secrets if s]
        if not secrets:
            return
        self.message = masked(self.message, secrets)
        self.body = masked(self.body, secrets)
        self.args = masked(self.args, secrets)
        for event in self.events:
            metadata = getattr(event, "metadata", None)
            if metadata:
                clean = masked(metadata, secrets)
                if clean != metadata:
                    metadata.clear()  # the dict the event holds (and the call's own metadata)
                    metadata.update(clean)


class AuthenticationError(ProviderError):
    """The provider refused the key (HTTP 401): a missing, wrong or revoked key."""

    error_type = "authentication"


class PermissionDeniedError(ProviderError):
    """The key is good but may not do this (HTTP 403): a model or feature the account lacks."""

    error_type = "permission"


class RateLimitError(ProviderError):
    """The provider asked to slow down (HTTP 429); ``retry_after`` and ``rate_limits`` say how long."""

    error_type = "rate_limit"


class QuotaExceededError(RateLimitError):
    """A limit no wait within the call lifts (HTTP 429 all the same): a request larger than
    the per-minute budget itself, a daily quota or the account's credit spent. Never retried;
    a fallback model may still answer. The provider's words say which."""


class InvalidRequestError(ProviderError):
    """The provider refused the request as malformed (HTTP 400, 404, 422); its words are in the message."""

    error_type = "invalid_request"


class ContextTooLongError(InvalidRequestError):
    """The prompt (plus requested output) does not fit the model's context window."""


class UpstreamError(ProviderError):
    """The provider failed (5xx, overloaded, an error event in the stream)."""

    error_type = "upstream"


class OverloadedError(UpstreamError):
    """The provider is overloaded (Anthropic ``overloaded_error``, HTTP 529); worth retrying."""


class StreamProtocolError(UpstreamError):
    """The provider's stream broke its own protocol (invalid JSON, a delta for a block
    that never started, an event out of place)."""


class IncompleteStreamError(ProviderError):
    """The stream ended before the provider's terminal marker (a dropped connection)."""

    error_type = "connection"


class ConnectionError(ProviderError, builtins.ConnectionError):  # noqa: A001 - the name users expect, namespaced
    """The connection failed or broke; also a built-in ``ConnectionError``."""

    error_type = "connection"


class TimeoutError(ConnectionError, builtins.TimeoutError):  # noqa: A001
    """A timeout fired (``which``: connect, pool, first_byte, chunk, total); also a
    built-in ``TimeoutError``."""

    error_type = "connection"

    def __init__(self, message: str, *, which: str | None = None, seconds: float | None = None, **kw: Any) -> None:
        self.which = which
        self.seconds = seconds
        super().__init__(message, **kw)


class InternalError(ProviderError):
    """A bug in modelwire itself (an adapter met input it should have handled), not the
    provider's fault. With ``MODELWIRE_DEBUG=1`` the original exception is raised instead."""

    error_type = "internal"


class RefusedOptionError(InvalidRequestError, UnsupportedOptionError):
    """The provider refused an option for this model and said why in words modelwire reads
    (``"thinking.type.disabled" is not supported for this model``): the rule is kept for
    this endpoint and model, so the next such call is refused before it is sent
    (``modelwire models --forget MODEL`` forgets it). Both an :class:`InvalidRequestError`
    (the provider's answer) and an :class:`UnsupportedOptionError` (``option``, ``provider``,
    ``model``)."""

    def __init__(
        self,
        option: str,
        provider: str,
        model: str,
        said: str,
        *,
        provider_type: str | None = None,
        status_code: int | None = None,
        request_id: str | None = None,
        body: Any = None,
    ) -> None:
        message = (
            f"{provider}:{model} does not take {option!r}, the provider says: {said} (kept: the next "
            "such call is refused before it is sent)"
        )
        # Both bases' fields, set here: each base's __init__ takes other arguments.
        self.message, self.provider_type, self.status_code, self.request_id, self.body = (
            message,
            provider_type,
            status_code,
            request_id,
            body,
        )
        self.events: list[AgentEvent] = []
        self.option, self.provider, self.model = option, provider, model
        Exception.__init__(self, message)


class SSELineTooLongError(StreamProtocolError):
    """A line (or an event's data) longer than the decoder's limit: a broken or hostile server."""


class EventStreamError(StreamProtocolError):
    """A frame that breaks AWS's event-stream format (bad CRC, impossible lengths, a cut frame).

    ``frames`` holds the whole frames the same ``feed`` read before the broken one: they
    arrived intact, and the caller passes them on before the error."""

    frames: Sequence[Any] = ()  # set per error by the frame parser (its parts, or its Frame objects)
