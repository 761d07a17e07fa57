"""Credentials a request carries, and text with them masked.

What modelwire sends as a credential (a key header, a ``Bearer`` token, a SigV4
signature's key id and session token, a ``key=`` query parameter) must not reach a place a
person or a browser reads: a cassette on disk, an error's text, its body, the events that
close a failed call. A server or gateway may echo it (``invalid x-api-key sk-...``): these
helpers know what was sent, and mask it wherever it is kept.
"""

from __future__ import annotations

import re
from typing import Any, Iterable
from urllib.parse import parse_qsl, urlsplit

__all__ = ["SECRET_HEADERS", "SECRET_QUERY", "MASK", "sent_secrets", "masked"]

SECRET_HEADERS = frozenset(
    {
        "authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "x-amz-security-token",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
        "proxy-authorization",
    }
)
SECRET_QUERY = frozenset({"key", "api_key", "api-key", "token", "access_token"})
MASK = "***"
# Shorter values are not masked: "k" in a test, a one-letter key, would mask every k.
_SHORTEST = 6
_SIGV4_KEY_ID = re.compile(r"Credential=([^/,\s]+)/")


def sent_secrets(url: str, headers: Iterable[tuple[str, str]]) -> set[str]:
    """The credentials a request carries (secret headers, ``Bearer`` tokens, the key id of a
    SigV4 signature, secret query parameters)."""
    found: set[str] = set()
    for key, value in headers:
        if key.lower() in SECRET_HEADERS and value:
            found.add(value)
            scheme, _, rest = value.partition(" ")
            if rest and scheme.lower() in ("bearer", "basic", "token"):
                found.add(rest.strip())
            elif scheme.upper().startswith("AWS4-"):
                found.update(_SIGV4_KEY_ID.findall(rest))
    query = urlsplit(url).query
    if query:
        found |= {v for k, v in parse_qsl(query, keep_blank_values=True) if k.lower() in SECRET_QUERY and v}
    return found


def masked(value: Any, secrets: Iterable[str]) -> Any:
    """``value`` with each secret in its text replaced by ``***``: strings, and the strings
    inside lists, tuples and dicts (keys too), in copies; anything else as it is."""
    found = sorted(
        (s for s in secrets if s and len(s) >= _SHORTEST), key=len, reverse=True
    )  # a key before its own prefix
    if not found:
        return value
    return _mask(value, found, 0)


def _mask(value: Any, secrets: list[str], depth: int) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, MASK)
        return value
    if depth > 64:  # an error body is a few levels deep; deeper is dropped rather than walked
        return MASK if isinstance(value, (dict, list, tuple)) else value
    if isinstance(value, dict):
        return {_mask(k, secrets, depth + 1): _mask(v, secrets, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, secrets, depth + 1) for v in value]
    if isinstance(value, tuple):
        return tuple(_mask(v, secrets, depth + 1) for v in value)
    return value
