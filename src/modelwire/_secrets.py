"""Credentials a request carries, and text with them masked.

What modelwire sends as a credential (a key header, a ``Bearer`` token, a SigV4
signature's key id and session token, a ``key=`` query parameter) must not reach a place a
person or a browser reads: a cassette on disk, an error's text, its body, the events that
close a failed call. A server or gateway may echo it (``invalid x-api-key sk-...``): these
helpers know what was sent, and mask it wherever it is kept.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Mapping
from urllib.parse import parse_qsl, urlsplit

__all__ = ["SECRET_HEADERS", "SECRET_QUERY", "MASK", "sent_secrets", "masked", "masked_text", "holds"]

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
_SHORTEST_PIECE = 8  # and at least half of the credential (see masked_text)


def sent_secrets(
    url: str,
    headers: Iterable[tuple[str, str]],
    schemes: Callable[[], Mapping[str, re.Pattern[str]]] | None = None,
) -> set[str]:
    """The credentials a request carries (secret headers, ``Bearer`` tokens, secret query
    parameters), and the credential a signature scheme names inside its header: ``schemes``
    gives each scheme's prefix (upper case) and the pattern of that credential, asked only
    for a scheme that is not ``Bearer``, ``Basic`` or ``Token`` (the protocols declare them:
    ``modelwire.protocols.signed_schemes``)."""
    found: set[str] = set()
    for key, value in headers:
        if key.lower() in SECRET_HEADERS and value:
            found.add(value)
            scheme, _, rest = value.partition(" ")
            if rest and scheme.lower() in ("bearer", "basic", "token"):
                found.add(rest.strip())
            elif rest and schemes is not None:  # a scheme of its own, with its parameters
                found.update(
                    credential
                    for prefix, pattern in schemes().items()
                    if scheme.upper().startswith(prefix)
                    for credential in pattern.findall(rest)
                )
    query = urlsplit(url).query
    if query:
        found |= {v for k, v in parse_qsl(query, keep_blank_values=True) if k.lower() in SECRET_QUERY and v}
    return found


def masked(value: Any, secrets: Iterable[str]) -> Any:
    """``value`` with each secret in its text replaced by ``***``, and each long enough piece
    of one (see :func:`masked_text`): strings, and the strings inside lists, tuples and dicts
    (keys too), in copies; anything else as it is."""
    found = sorted(
        (s for s in secrets if s and len(s) >= _SHORTEST), key=len, reverse=True
    )  # a key before its own prefix
    if not found:
        return value
    return _mask(value, found, 0)


def masked_text(text: str, secrets: list[str]) -> str:
    """``text`` with each of ``secrets`` (longest first) replaced by ``***``, and every piece
    of one that is at least half of it and at least ``_SHORTEST_PIECE`` characters long: a
    server that echoes a key without its last four characters, or cut in two, shows none
    of it. A shorter piece leaves more of the key unknown than it shows, and masking it
    would mask words a key happens to share with the text."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
        shortest = max(_SHORTEST_PIECE, (len(secret) + 1) // 2)
        if len(secret) > shortest:
            text = _without_pieces(text, secret, shortest)
    return text


def holds(text: str, secret: str) -> bool:
    """Whether ``text`` holds ``secret``, or a piece of it :func:`masked_text` would mask."""
    return masked_text(text, [secret]) != text


def _without_pieces(text: str, secret: str, shortest: int) -> str:
    spans: list[tuple[int, int]] = []
    for start in range(len(secret) - shortest + 1):
        window = secret[start : start + shortest]
        at = text.find(window)
        while at != -1:
            end, more = at + shortest, start + shortest
            while end < len(text) and more < len(secret) and text[end] == secret[more]:
                end, more = end + 1, more + 1
            spans.append((at, end))
            at = text.find(window, at + 1)
    if not spans:
        return text
    out: list[str] = []
    kept = 0
    for begin, end in sorted(spans):
        if begin > kept or not out:
            out += [text[kept:begin], MASK]
        kept = max(kept, end)
    return "".join(out) + text[kept:]


def _mask(value: Any, secrets: list[str], depth: int) -> Any:
    if isinstance(value, str):
        return masked_text(value, secrets)
    if depth > 64:  # an error body is a few levels deep; deeper is dropped rather than walked
        return MASK if isinstance(value, (dict, list, tuple)) else value
    if isinstance(value, dict):
        return {_mask(k, secrets, depth + 1): _mask(v, secrets, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, secrets, depth + 1) for v in value]
    if isinstance(value, tuple):
        return tuple(_mask(v, secrets, depth + 1) for v in value)
    return value
