"""Counting a request's input tokens before sending it, with the provider's own endpoint
(``WireProtocol.count_request``): the same formatter, options, tools, system prompt and media
as the request would have. Counts are kept per request body, so counting a conversation's
next turn costs one small request and counting the same request again costs none."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, Sequence

from .. import errors as E
from ..protocols import HTTPCall
from ._body import encode_body, send_call

__all__ = ["TokenCount", "count_tokens"]

_KEPT = 256  # counts kept per model, by request body


@dataclass(frozen=True)
class TokenCount:
    """The input tokens of one request: counted by the provider, or (``estimated``) guessed
    from the request's size where it offers no count and an estimate was asked for."""

    input_tokens: int
    estimated: bool = False
    source: str = ""  # where the number comes from: the endpoint's URL, or how it was estimated

    def __int__(self) -> int:
        return self.input_tokens


async def count_tokens(
    model: Any, messages: Any, tools: Sequence[Any] | None, tool_choice: Any, options: Any, estimate: bool
) -> TokenCount:
    """The input tokens ``model`` would send for this request (see :meth:`HTTPModel.count_tokens`)."""
    from ..message import as_messages
    from ._media import resolve_sources

    messages = await resolve_sources(
        as_messages(messages), model.wire, model.transport, model.max_source_bytes, model.endpoint
    )
    payload, opts = model.build_request(messages, tools, tool_choice, options)
    found = model.wire.count_request(model.url(), payload, model.name, model.spec.preset)
    if found is None:
        if estimate:
            size = len(encode_body(payload))
            return TokenCount(
                math.ceil(size / 4), estimated=True, source=f"estimate: {size} bytes of request body at 4 bytes a token"
            )
        raise E.TokenCountUnavailableError(
            f"{model.provider} ({model.wire.description}) has no endpoint that counts a request's tokens;"
            " count_tokens(..., estimate=True) gives an estimate from the request's size, marked as one"
        )
    url, body = found
    raw = encode_body(body)
    key = hashlib.sha256(url.encode() + b"\0" + raw).digest()
    counts = model._token_counts
    if key in counts:
        counts.move_to_end(key)
        return TokenCount(counts[key], source=url.split("?")[0])
    _, text = await send_call(
        model, HTTPCall("POST", url, {**(opts.extra_headers or {}), "accept": "application/json"}, raw), 1 << 20
    )
    try:
        n = model.wire.counted(json.loads(text))
    except ValueError as exc:
        raise E.UpstreamError(
            f"the count at {url.split('?')[0]} answered what is not a count: {text[:200]!r} ({exc})", body=text[:2000]
        ) from None
    counts[key] = n
    while len(counts) > _KEPT:
        counts.popitem(last=False)
    return TokenCount(n, source=url.split("?")[0])
