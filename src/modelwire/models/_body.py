"""What crosses the wire besides the stream: a payload as the bytes sent, and an error
response read into the protocol's typed error."""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator, Iterator

from msgspec.json import encode as _encode_json

from .. import errors as E
from ..protocols import FileBody, HTTPCall, WireProtocol
from ..protocols._protocol import USER_AGENT
from .config import IN_CASSETTE
from .transport import retry_after_seconds

__all__ = ["USER_AGENT", "encode_body", "read_limited", "request_id_of", "http_error", "send_call"]


def encode_body(payload: dict[str, Any]) -> bytes:
    """A request payload as the bytes sent: compact UTF-8 JSON. A value JSON cannot hold
    (a set, NaN, an object) is refused here, before anything is sent."""
    try:
        return _encode_json(payload)
    except (TypeError, ValueError, OverflowError) as exc:
        raise E.FormatError(None, f"the request cannot be written as JSON: {exc}") from None


async def read_limited(response: Any, limit: int) -> bytes:
    parts, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            break
        parts.append(chunk)
    return b"".join(parts)


async def send_call(model: Any, call: HTTPCall, limit: int) -> tuple[Any, bytes]:
    """Send one of a protocol's requests besides the call itself (a count, an upload, a
    batch's state) with the model's headers, auth and signing: (the response's headers, its
    body read up to ``limit`` bytes), or the provider's typed error, its secrets masked. A
    :class:`FileBody` is read from disk as it is sent, a piece at a time (whole only where a
    cassette keeps the request or a signature covers its bytes)."""
    body: Any = call.body or b""
    headers = model.headers(dict(call.headers))
    if call.body is None:
        headers.pop("content-type", None)
    if isinstance(body, FileBody):
        headers["content-length"] = str(len(body))
        if IN_CASSETTE.get() or model._signs_body():
            body = await asyncio.to_thread(b"".join, file_pieces(body))
    headers = await model._signed(call.url, headers, body if isinstance(body, bytes) else b"")
    content = _streamed(body) if isinstance(body, FileBody) else body
    response = await model.transport.open(call.method, call.url, headers, content, model.timeouts.first_byte, None)
    try:
        if response.status_code >= 400:
            raise model._mask(await http_error(response, model.wire), headers, call.url)
        return response.headers, await read_limited(response, limit)
    finally:
        await response.aclose()


FILE_PIECE = 1 << 20  # what an upload reads of its file at a time


def file_pieces(body: FileBody) -> Iterator[bytes]:
    """A :class:`FileBody`'s bytes in pieces of at most :data:`FILE_PIECE`, the file read as
    they are taken; a file shorter than when it was measured is a ``ConfigError``."""
    if body.before:
        yield body.before
    with open(body.path, "rb") as file:
        left = body.size
        while left:
            piece = file.read(min(FILE_PIECE, left))
            if not piece:
                raise E.ConfigError(f"{body.path} changed while it was uploaded: it has fewer than {body.size} bytes")
            left -= len(piece)
            yield piece
    if body.after:
        yield body.after


async def _streamed(body: FileBody) -> AsyncIterator[bytes]:
    """The body's pieces, each file read off the event loop."""
    pieces = file_pieces(body)
    end = object()
    while (piece := await asyncio.to_thread(next, pieces, end)) is not end:
        yield piece  # type: ignore[misc]


def request_id_of(response: Any) -> str | None:
    headers = response.headers
    found: str | None = headers.get("request-id") or headers.get("x-request-id") or headers.get("apim-request-id")
    return found


async def http_error(response: Any, wire: WireProtocol) -> E.ProviderError:
    try:
        raw = await response.aread()
    except Exception:  # noqa: BLE001 - the status alone still makes a useful error
        raw = b""
    text = raw.decode("utf-8", "replace")
    stripped = text.lstrip()
    if stripped.startswith(("data:", "event:")):
        # An SSE error frame as the body of an error status: its data is the error.
        data_lines = [line[5:].strip() for line in stripped.splitlines() if line.startswith("data:")]
        text = data_lines[0] if data_lines else text
    try:
        body: Any = json.loads(text) if text else {}
    except ValueError:
        body = {"error": {"message": text[:500] or f"HTTP {response.status_code}"}}
    if isinstance(body, list) and len(body) == 1 and isinstance(body[0], dict):
        body = body[0]  # the error object in a one-element list, as some servers send it
    if not isinstance(body, dict) or not body:
        body = {"error": {"message": text[:500] or f"HTTP {response.status_code}"}}
    err = wire.error(body, status=response.status_code, request_id=request_id_of(response))
    wait = retry_after_seconds(response.headers)
    if wait is None:
        # Where the provider says it in the body (Gemini's google.rpc.RetryInfo): the same wait.
        wait = wire.retry_after_in(body)
        if wait is not None and err.rate_limits is None:
            err.rate_limits = {"retry_after": wait}
    err.retry_after = wait
    return err
