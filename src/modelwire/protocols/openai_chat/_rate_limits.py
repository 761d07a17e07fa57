"""The rate-limit headers of OpenAI's API and of the servers speaking it (Azure OpenAI, Groq,
Mistral, OpenRouter), read into modelwire's shape. Chat Completions and the Responses API
share them."""

from __future__ import annotations

from typing import Any, Mapping

from .._protocol import rate_limit_shape

__all__ = ["openai_rate_limits"]


def openai_rate_limits(headers: Mapping[str, str]) -> dict[str, Any] | None:
    """``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` (the reset a wait, "6m0s") and
    ``retry-after``, as OpenAI, Azure OpenAI and Groq send them
    (https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers)."""
    names = {
        kind: (f"x-ratelimit-limit-{kind}", f"x-ratelimit-remaining-{kind}", f"x-ratelimit-reset-{kind}")
        for kind in ("requests", "tokens")
    }
    found = rate_limit_shape(headers, names, reset_is_duration=True)
    if found is None or not ({"requests", "tokens"} & set(found)):
        # Mistral's per-minute names, without a reset (mistralai/client-ts#169, 2026-02-12).
        mistral = {
            "requests": ("x-ratelimit-limit-req-minute", "x-ratelimit-remaining-req-minute", ""),
            "tokens": ("x-ratelimit-limit-tokens-minute", "x-ratelimit-remaining-tokens-minute", ""),
        }
        found = rate_limit_shape(headers, mistral, reset_is_duration=True) or found
    if found is None or "requests" not in found:
        # OpenRouter's X-RateLimit-{Limit,Remaining,Reset} on a 429 (https://openrouter.ai/docs/api-reference/limits),
        # requests per interval, the reset an epoch time in milliseconds.
        generic = rate_limit_shape(
            headers, {"requests": ("x-ratelimit-limit", "x-ratelimit-remaining", "")}, reset_is_duration=True
        )
        reset = _epoch_reset({k.lower(): v for k, v in headers.items()}.get("x-ratelimit-reset"))
        if generic and "requests" in generic:
            found = {**(found or {}), "requests": {**generic["requests"], **({"reset": reset} if reset else {})}}
    return found


def _epoch_reset(value: str | None) -> str | None:
    """An epoch time (seconds, or milliseconds) as an ISO-8601 UTC time."""
    import time

    if not value or not value.strip().isdigit():
        return None
    seconds = int(value) / (1000 if int(value) > 10**11 else 1)
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
