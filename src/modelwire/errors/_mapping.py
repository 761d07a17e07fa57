"""A provider's error body, type, words and status -> the typed error for it.

Used for errors inside a stream (Anthropic ``event: error``, an OpenAI chunk with an
``error`` object, a Responses ``error`` event) and for HTTP error responses."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from ._provider import (
    AuthenticationError,
    ContextTooLongError,
    InvalidRequestError,
    OverloadedError,
    PermissionDeniedError,
    ProviderError,
    RateLimitError,
    TimeoutError,
    UpstreamError,
)

# Provider error types and codes -> error class: each protocol declares its provider's
# (``WireProtocol.error_types``, keys in lower case). A body is read first by the table of
# the protocol it came in, then by every registered protocol's (a gateway in front of one
# provider may answer in another's words).

_BY_STATUS: dict[int, type[ProviderError]] = {
    400: InvalidRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: InvalidRequestError,
    407: AuthenticationError,  # the proxy's, not the provider's
    408: TimeoutError,
    413: InvalidRequestError,
    422: InvalidRequestError,
    429: RateLimitError,
    529: OverloadedError,
}

_CONTEXT_WORDS = ("context length", "context window", "maximum context", "prompt is too long", "too many tokens")


# The error tables of the protocols, in the order a body of ``protocol`` reads them (its own
# first): handed over by the protocol registry when it loads (:func:`use_error_tables`), so
# this module never imports it. Each item has ``error_types`` and ``error_phrases``.
_error_tables: Callable[[str | None], Iterable[Any]] | None = None


def use_error_tables(tables: Callable[[str | None], Iterable[Any]]) -> None:
    """Where :func:`error_class` finds the protocols' error types and phrases: ``tables(protocol)``
    yields each protocol's tables, that protocol's first (the registry calls this)."""
    global _error_tables
    _error_tables = tables


def _by_type(code: str, protocol: str | None) -> type[ProviderError] | None:
    for tables in _error_tables(protocol) if _error_tables is not None else ():
        found = tables.error_types.get(code)
        if found is not None:
            return found  # type: ignore[no-any-return]
    return None


def _by_phrase(lowered: str, protocol: str | None) -> type[ProviderError] | None:
    for tables in _error_tables(protocol) if _error_tables is not None else ():
        for phrase, cls in tables.error_phrases.items():
            if phrase in lowered:
                return cls  # type: ignore[no-any-return]
    return None


def _by_status(status: int | None) -> type[ProviderError] | None:
    if status is None:
        return None
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return UpstreamError
    return InvalidRequestError if status >= 400 else None


def _by_words(lowered: str, protocol: str | None) -> type[ProviderError] | None:
    if not lowered:
        return None
    found = _by_phrase(lowered, protocol)
    if found is None and any(w in lowered for w in _CONTEXT_WORDS):
        found = ContextTooLongError
    return found


def error_class(
    provider_type: str | None, status: int | None, message: str = "", protocol: str | None = None
) -> type[ProviderError]:
    """The error class for a provider error type / code and HTTP status (``protocol``: the
    one the body came in, whose table is read first).

    The provider's own type is read first, then its words, then the status. The words only
    narrow what the type (or, without one, a client-error status) says: a throttle that
    says "Too many tokens" stays a rate limit, a rate limit that can never pass becomes a
    :class:`QuotaExceededError`, an invalid request about the context window a
    :class:`ContextTooLongError`. A type meaning a server failure on a 4xx status is not
    believed (Ollama answers a model without tools 400 ``api_error``): the status says whose
    fault it is."""
    lowered = message.lower()
    by_status = _by_status(status)
    found = _by_type(provider_type.lower(), protocol) if provider_type else None
    if found is UpstreamError and status is not None and 400 <= status < 500:
        found = None
    worded = _by_words(lowered, protocol)
    if found is not None:
        return worded if worded is not None and issubclass(worded, found) else found
    if worded is not None and (
        by_status is None or issubclass(worded, by_status) or not issubclass(by_status, (RateLimitError, TimeoutError))
    ):
        return worded
    return by_status or UpstreamError


def _error_object(body: Any) -> Any:
    """The object that describes the error: ``body["error"]``, or the body itself (with
    ``{"error": "some text"}``, as Ollama's native API and several proxies send, read as its
    message)."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"]
    if isinstance(body, dict) and isinstance(body.get("error"), str) and body["error"]:
        err = {**body, "message": body.get("message") or body["error"]}
        err.pop("error")
        return err
    return body


def _status_in(err: dict[str, Any]) -> int | None:
    """An HTTP status the error object carries (LiteLLM and others send it as a string: "429")."""
    for key in ("status_code", "status", "code"):
        value = err.get(key)
        if isinstance(value, str) and value.isdigit() and 100 <= int(value) <= 599:
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def error_from_body(
    body: Any, protocol: str, status: int | None = None, request_id: str | None = None
) -> ProviderError:
    """Build the typed error for a provider's error body.

    Understands ``{"type": "error", "error": {"type", "message"}}`` (Anthropic),
    ``{"error": {"message", "type", "code"}}`` (OpenAI and compatibles, whose ``code``
    may be a number, as OpenRouter sends), and a Responses ``error`` event
    (``{"type": "error", "code", "message"}``).
    """
    err = _error_object(body)
    if not isinstance(err, dict):
        return UpstreamError(str(body)[:500], status_code=status, request_id=request_id, body=body)
    message = str(err.get("message") or err.get("detail") or "the provider reported an error")
    if status == 407:
        message = (
            "the HTTP proxy wants credentials (HTTP 407; put them in the proxy URL, "
            f"HTTPS_PROXY=http://user:password@host:port): {message}"
        )
    code = err.get("code")
    ptype = err.get("type")
    if isinstance(err.get("status"), str) and err["status"]:
        ptype = err["status"]  # Google: {"code": 429, "status": "RESOURCE_EXHAUSTED"}
    provider_type = (
        str(code)
        if isinstance(code, str) and code
        else (ptype if isinstance(ptype, str) and ptype != "error" else None)
    )
    if provider_type is None and code is not None:
        provider_type = str(code)
    if status is None:
        status = _status_in(err)
    cls = error_class(provider_type if not str(provider_type).isdigit() else None, status, message, protocol)
    return cls(message, provider_type=provider_type, status_code=status, request_id=request_id, body=body)
