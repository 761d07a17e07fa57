"""Media in a request: what a model cannot take in (refused before sending, or noted in
words), and http(s) or file sources a provider cannot fetch itself (fetched and sent as
base64)."""

from __future__ import annotations

import asyncio
import base64
import copy as _copy
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import unquote, urlparse

from .. import errors as E
from .._record import extras_of
from ..message import Base64Source, DataBlock, Msg
from ..protocols import ModelCapabilities, WireProtocol
from ._body import USER_AGENT
from .transport import HTTPTransport

__all__ = ["refused_media", "has_media", "without_media", "resolve_sources", "by_reference"]


# -- media a model cannot take in ------------------------------------------------------------


def _media_kind(media_type: str) -> str | None:
    base = media_type.split(";")[0].strip().lower()
    if base.startswith("image/"):
        return "image"
    if base == "application/pdf":
        return "pdf"
    if base.startswith("audio/"):
        return "audio"
    return None


def refused_media(caps: ModelCapabilities) -> frozenset[str]:
    """The kinds of media a model's capabilities say it cannot take in."""
    return frozenset(kind for kind in ("image", "pdf", "audio") if getattr(caps, f"{kind}_input") is False)


def has_media(block: Any) -> bool:
    btype = block.type
    return (
        btype == "data"
        or (btype == "tool_result" and not isinstance(block.output, str))
        or (btype == "hint" and not isinstance(block.hint, str))
    )


def without_media(blocks: list[Any], refused: frozenset[str], index: int, model: Any) -> list[Any] | None:
    """``blocks`` with the media of ``refused`` kinds noted or refused; None when none is there."""
    out: list[Any] | None = None
    for k, block in enumerate(blocks):
        replacement: Any = None
        if block.type == "data" and extras_of(block).get("provider_block_type") is not None:
            continue  # a provider's own item, not media
        if block.type == "data":
            kind = _media_kind(block.source.media_type)
            if kind in refused:
                replacement = _media_note(kind, block, index, model)
        elif block.type == "tool_result" and not isinstance(block.output, str):
            inner = without_media(list(block.output), refused, index, model)
            if inner is not None:
                replacement = block.replace(output=inner)
        elif block.type == "hint" and not isinstance(block.hint, str):
            inner = without_media(list(block.hint), refused, index, model)
            if inner is not None:
                replacement = block.replace(hint=inner)
        if replacement is not None:
            if out is None:
                out = list(blocks)
            out[k] = replacement
    return out


def _media_note(kind: str, block: Any, index: int, model: Any) -> Any:
    from ..message import TextBlock

    what = f"{model.provider}:{model.name} takes no {kind} input"
    if model.on_unsupported_media == "refuse":
        raise E.FormatError(
            index,
            (
                f"{what} ({block.source.media_type}); remove it, choose a model that takes it, or load "
                "the model with on_unsupported_media='note'"
            ),
            model.protocol,
            code="unsupported-media",
        )
    name = f" {block.name!r}" if getattr(block, "name", None) else ""
    return TextBlock(text=f"[{kind}{name} not shown: {what}]")


# -- sources fetched before sending ----------------------------------------------------------


def _needs_fetch(protocol: WireProtocol, media_type: str, url: str) -> bool:
    """``file://`` always; an http(s) URL when the protocol says it must be inlined."""
    if url.startswith("file:"):
        return True
    if not url.startswith(("http://", "https://")):
        return False
    return protocol.needs_inline(media_type, url)


async def resolve_sources(
    messages: Sequence[Msg],
    protocol: WireProtocol,
    transport: HTTPTransport,
    max_bytes: int,
    endpoint: str | None = None,
) -> list[Msg]:
    """Inline (as base64) the data sources the provider cannot take as a URL, and every
    ``file://`` source, with a size limit; an uploaded file (``model.upload_file``) is left
    as a reference where ``endpoint`` holds it and takes its media type by reference, else
    its bytes are read from its local copy. The given messages are not changed."""
    out: list[Msg] = []
    for msg in messages:
        if not any(map(_has_url, msg.content)):  # nothing to fetch: no await per block
            out.append(msg)
            continue
        changed = False
        new_blocks = []
        for block in msg.content:
            new_block = await _resolve_block(block, protocol, transport, max_bytes, endpoint)
            changed |= new_block is not block
            new_blocks.append(new_block)
        if changed:
            copy = _copy.deepcopy(msg)
            copy.content = new_blocks
            out.append(copy)
        else:
            out.append(msg)
    return out


def _has_url(block: Any) -> bool:
    """Whether a block holds a URL source, the only kind :func:`resolve_sources` may fetch."""
    btype = block.type
    if btype == "data":
        return block.source.type == "url"  # type: ignore[no-any-return]
    inner = block.output if btype == "tool_result" else block.hint if btype == "hint" else None
    if isinstance(inner, list):
        return any(b.type == "data" and b.source.type == "url" for b in inner)
    return False


async def _resolve_block(
    block: Any, protocol: WireProtocol, transport: HTTPTransport, max_bytes: int, endpoint: str | None = None
) -> Any:
    if block.type == "data":
        return await _resolve_data(block, protocol, transport, max_bytes, endpoint)
    field = "output" if block.type == "tool_result" else "hint" if block.type == "hint" else ""
    inner = getattr(block, field) if field else None
    if isinstance(inner, list):
        resolved = [
            await _resolve_data(b, protocol, transport, max_bytes, endpoint) if b.type == "data" else b for b in inner
        ]
        if any(a is not b for a, b in zip(resolved, inner)):
            return block.replace(**{field: resolved})
    return block


async def _resolve_data(
    block: DataBlock, protocol: WireProtocol, transport: HTTPTransport, max_bytes: int, endpoint: str | None = None
) -> DataBlock:
    src = block.source
    if src.type != "url":
        return block
    extras = extras_of(block)
    if extras.get("file_id"):
        return await _uploaded(block, extras, protocol, endpoint, max_bytes)
    if not _needs_fetch(protocol, src.media_type, src.url):
        return block
    url = src.url
    raw = await _read_file(url, max_bytes) if url.startswith("file:") else await _download(url, transport, max_bytes)
    data = base64.b64encode(raw).decode("ascii")
    return block.replace(source=Base64Source(data=data, media_type=src.media_type))


def by_reference(block: DataBlock, protocol: WireProtocol, endpoint: str | None) -> bool:
    """Whether an uploaded file goes to this target by its id: the target's endpoint holds it
    in the protocol's Files API, and the protocol takes that media type by reference."""
    from ..formatters._common import held_file

    return held_file(block, endpoint, protocol.files_api) is not None and protocol.takes_file_ref(
        block.source.media_type
    )


async def _uploaded(
    block: DataBlock, extras: dict[str, Any], protocol: WireProtocol, endpoint: str | None, max_bytes: int
) -> DataBlock:
    """An uploaded file's block as it is where it goes by reference (:func:`by_reference`);
    else a plain block of its bytes, read from its local copy; else as it is, for the
    formatter to refuse, saying what to do. Its URL is never fetched: it needs the holder's
    key, and is no copy of the bytes."""
    if by_reference(block, protocol, endpoint):
        return block
    local = extras.get("local_copy")
    if not (isinstance(local, str) and local.startswith("file:")):
        return block
    data = base64.b64encode(await _read_file(local, max_bytes)).decode("ascii")
    return DataBlock(
        id=block.id,
        source=Base64Source(data=data, media_type=block.source.media_type),
        name=block.name,
        created_at=block.created_at,
        finished_at=block.finished_at,
    )


async def _read_file(url: str, max_bytes: int) -> bytes:
    path = Path(unquote(urlparse(url).path))
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise E.InvalidRequestError(f"{path} is {size} bytes; the limit for inline data is {max_bytes}")
        return await asyncio.to_thread(path.read_bytes)
    except OSError as exc:
        raise E.InvalidRequestError(f"cannot read {url}: {exc.strerror}") from exc


async def _download(url: str, transport: HTTPTransport, max_bytes: int) -> bytes:
    response = await transport.open("GET", url, {"user-agent": USER_AGENT}, b"", transport.timeouts.first_byte)
    try:
        if response.status_code >= 400:
            raise E.InvalidRequestError(
                f"fetching {url} gave HTTP {response.status_code}", status_code=response.status_code
            )
        parts = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise E.InvalidRequestError(f"{url} is larger than the {max_bytes}-byte limit for inline data")
            parts.append(chunk)
        return b"".join(parts)
    finally:
        await response.aclose()
