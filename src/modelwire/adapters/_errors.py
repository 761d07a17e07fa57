"""Provider error bodies -> typed modelwire errors.

Used for errors inside a stream (Anthropic ``event: error``, an OpenAI chunk with an
``error`` object, a Responses ``error`` event) and, by the models layer, for HTTP error
responses.
"""

from __future__ import annotations

from typing import Any

from .. import errors as E

# Provider error types / codes -> error class. Keys are lower-case.
_BY_TYPE: dict[str, type[E.ProviderError]] = {
    "overloaded_error": E.OverloadedError,
    "api_error": E.UpstreamError,
    "server_error": E.UpstreamError,
    "internal_server_error": E.UpstreamError,
    "rate_limit_error": E.RateLimitError,
    "rate_limit_exceeded": E.RateLimitError,
    "insufficient_quota": E.RateLimitError,
    "authentication_error": E.AuthenticationError,
    "invalid_api_key": E.AuthenticationError,
    "permission_error": E.PermissionDeniedError,
    "invalid_request_error": E.InvalidRequestError,
    "not_found_error": E.InvalidRequestError,
    "request_too_large": E.InvalidRequestError,
    "invalid_prompt": E.InvalidRequestError,
    "tool_use_failed": E.InvalidRequestError,
    "context_length_exceeded": E.ContextTooLongError,
    "string_above_max_length": E.InvalidRequestError,
}

_BY_STATUS: dict[int, type[E.ProviderError]] = {
    400: E.InvalidRequestError,
    401: E.AuthenticationError,
    403: E.PermissionDeniedError,
    404: E.InvalidRequestError,
    408: E.TimeoutError,
    413: E.InvalidRequestError,
    422: E.InvalidRequestError,
    429: E.RateLimitError,
    529: E.OverloadedError,
}

_CONTEXT_WORDS = ("context length", "context window", "maximum context", "prompt is too long", "too many tokens")


def error_class(provider_type: str | None, status: int | None, message: str = "") -> type[E.ProviderError]:
    """The error class for a provider error type / code and HTTP status."""
    lowered = message.lower()
    if any(w in lowered for w in _CONTEXT_WORDS):
        return E.ContextTooLongError
    if provider_type and provider_type.lower() in _BY_TYPE:
        return _BY_TYPE[provider_type.lower()]
    if status is not None:
        if status in _BY_STATUS:
            return _BY_STATUS[status]
        if status >= 500:
            return E.UpstreamError
        if status >= 400:
            return E.InvalidRequestError
    return E.UpstreamError


def error_from_body(body: Any, protocol: str, status: int | None = None, request_id: str | None = None) -> E.ProviderError:
    """Build the typed error for a provider's error body.

    Understands ``{"type": "error", "error": {"type", "message"}}`` (Anthropic),
    ``{"error": {"message", "type", "code"}}`` (OpenAI and compatibles, whose ``code``
    may be a number, as OpenRouter sends), and a Responses ``error`` event
    (``{"type": "error", "code", "message"}``).
    """
    err: Any = body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
    if not isinstance(err, dict):
        return E.UpstreamError(str(body)[:500], status_code=status, request_id=request_id, body=body)
    message = str(err.get("message") or err.get("detail") or "the provider reported an error")
    code = err.get("code")
    ptype = err.get("type")
    provider_type = str(code) if isinstance(code, str) and code else (ptype if isinstance(ptype, str) and ptype != "error" else None)
    if provider_type is None and code is not None:
        provider_type = str(code)
    if status is None:
        for key in ("status_code", "status", "code"):
            if isinstance(err.get(key), int):
                status = err[key]
                break
    cls = error_class(provider_type if not str(provider_type).isdigit() else None, status, message)
    return cls(message, provider_type=provider_type, status_code=status, request_id=request_id, body=body)
