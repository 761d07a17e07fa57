"""Media in a request: what a model cannot take in (refused before sending, or noted in
words), and http(s) or file sources a provider cannot fetch itself (fetched and sent as
base64)."""

from __future__ import annotations

import asyncio
import base64
import copy as _copy
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence
from urllib.parse import unquote, urlparse

from .. import errors as E
from .._record import extras_of
from ..message import Base64Source, DataBlock, Msg
from ..protocols import ModelCapabilities, WireProtocol
from ..sources import SourcePolicy, current_source_policy
from ._body import USER_AGENT
from .transport import HTTPTransport

if TYPE_CHECKING:
    from ._fetch import Refuse

__all__ = ["refused_media", "has_media", "without_media", "resolve_sources", "plain_prefix", "by_reference"]


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


async def resolve_sources(
    messages: Sequence[Msg],
    protocol: WireProtocol,
    transport: HTTPTransport,
    max_bytes: int,
    endpoint: str | None = None,
    start: int = 0,
) -> list[Msg]:
    """Inline (as base64) the data sources the provider cannot take as a URL, and every
    ``file://`` source, with a size limit; an uploaded file (``model.upload_file``) is left
    as a reference where ``endpoint`` holds it and takes its media type by reference, else
    its bytes are read from its local copy. The given messages are not changed; the first
    ``start`` are known to hold no URL source (:func:`plain_prefix`) and are not walked.

    Under a :class:`~modelwire.sources.SourcePolicy` (input from outside the process, such
    as ``serve``'s) each source must pass it first, else a ``SourceRefusedError``."""
    sources: _Sources | None = None
    out: list[Msg] = list(messages[:start])
    for index in range(start, len(messages)):
        msg = messages[index]
        if not _may_hold_url(msg) or not any(map(_has_url, msg.content)):  # nothing to fetch: no await per block
            out.append(msg)
            continue
        if sources is None:
            sources = _Sources(protocol, transport, max_bytes, endpoint, current_source_policy())
        changed = False
        new_blocks = []
        for k, block in enumerate(msg.content):
            new_block = await sources.block(index, k, block)
            changed |= new_block is not block
            new_blocks.append(new_block)
        if changed:
            copy = _copy.deepcopy(msg)
            copy.content = new_blocks
            out.append(copy)
        else:
            out.append(msg)
    return out


def plain_prefix(messages: Sequence[Msg], start: int) -> int:
    """How many of the first ``messages`` hold no URL source, counting on from ``start``
    (the first ``start`` known to hold none): what :func:`resolve_sources` need not walk
    again while they stay the same objects, unchanged."""
    count = len(messages)
    while start < count and not (_may_hold_url(messages[start]) and any(map(_has_url, messages[start].content))):
        start += 1
    return start


_block_type = attrgetter("type")
_HOLDERS = frozenset({"data", "tool_result", "hint"})  # the blocks _has_url looks into


def _may_hold_url(msg: Msg) -> bool:
    """Whether a block of ``msg`` is of a type that can hold a source (one C pass: a message
    of text, thinking and tool calls needs no call per block; one no stream folds into is
    read as it is, without ``content``'s flush of a fold's buffered pieces)."""
    return not _HOLDERS.isdisjoint(map(_block_type, msg._content if msg._fold is None else msg.content))


def _has_url(block: Any) -> bool:
    """Whether a block holds a URL source, the only kind :func:`resolve_sources` may fetch,
    or names a file held at the provider (which a source policy may refuse, whatever its
    source says)."""
    btype = block.type
    if btype == "data":
        return _data_to_walk(block)
    inner = block.output if btype == "tool_result" else block.hint if btype == "hint" else None
    if isinstance(inner, list):
        return any(b.type == "data" and _data_to_walk(b) for b in inner)
    return False


def _data_to_walk(block: Any) -> bool:
    return block.source.type == "url" or bool(extras_of(block).get("file_id"))


class _Sources:
    """The URL sources of one request, read or fetched as ``policy`` allows (None: the
    caller's own input, read as it asks)."""

    def __init__(
        self,
        protocol: WireProtocol,
        transport: HTTPTransport,
        max_bytes: int,
        endpoint: str | None,
        policy: SourcePolicy | None,
    ) -> None:
        self.protocol, self.transport, self.endpoint, self.policy = protocol, transport, endpoint, policy
        self.max_bytes = max_bytes if policy is None else min(max_bytes, policy.max_bytes)
        self.passed: set[str] = set()  # references checked in this request (a conversation repeats them)

    async def block(self, index: int, k: int, block: Any) -> Any:
        if block.type == "data":
            return await self.data(index, str(k), block)
        field = "output" if block.type == "tool_result" else "hint" if block.type == "hint" else ""
        inner = getattr(block, field) if field else None
        if isinstance(inner, list):
            resolved = [await self.data(index, f"{k}.{j}", b) if b.type == "data" else b for j, b in enumerate(inner)]
            if any(a is not b for a, b in zip(resolved, inner)):
                return block.replace(**{field: resolved})
        return block

    async def data(self, index: int, where: str, block: DataBlock) -> DataBlock:
        src = block.source
        extras = extras_of(block)
        if extras.get("file_id") and self.policy is not None and not self.policy.provider_files:
            # Checked whatever the source is: formatters send a block by its file id wherever
            # the endpoint holds the file, a base64 source beside it included.
            url = src.url if src.type == "url" else f"file id {extras['file_id']}"
            refuse = _refusal(index, where, url)
            raise refuse("provider-files", "a file held at the provider is not sent for input from outside")
        if src.type != "url":
            return block
        url = src.url
        refuse = _refusal(index, where, url)
        if extras.get("file_id"):
            return await self._uploaded(block, extras, refuse)
        scheme = url.split(":", 1)[0].lower()
        if scheme == "file":
            raw = await self._read(url, refuse)
        elif scheme in ("http", "https") and self.protocol.needs_inline(src.media_type, url):
            raw = await self._fetch(url, refuse)
        else:
            await self._reference(url, scheme, refuse)
            return block
        data = base64.b64encode(raw).decode("ascii")
        return block.replace(source=Base64Source(data=data, media_type=src.media_type))

    async def _read(self, url: str, refuse: Refuse) -> bytes:
        if self.policy is not None and not self.policy.files:
            raise refuse("files", "the server reads no local file for input from outside")
        return await _read_file(url, self.max_bytes)

    async def _fetch(self, url: str, refuse: Refuse) -> bytes:
        if self.policy is None or self.policy.urls == "any":
            return await _download(url, self.transport, self.max_bytes)
        from ._fetch import fetch_checked

        return await fetch_checked(url, self.policy, self.max_bytes, refuse)

    async def _reference(self, url: str, scheme: str, refuse: Refuse) -> None:
        """A URL the provider fetches itself (or a ``data:`` URL): under ``references="check"``
        it passes the rules a fetch would (the provider's fetch is on the server's behalf,
        and may run inside its network: a self-hosted server)."""
        policy = self.policy
        if scheme == "data" or policy is None or policy.references == "pass" or url in self.passed:
            return
        from ._fetch import checked_target

        await checked_target(url, policy, refuse)
        self.passed.add(url)

    async def _uploaded(self, block: DataBlock, extras: dict[str, Any], refuse: Refuse) -> DataBlock:
        """An uploaded file's block as it is where it goes by reference (:func:`by_reference`);
        else a plain block of its bytes, read from its local copy; else as it is, for the
        formatter to refuse, saying what to do. Its URL is never fetched: it needs the holder's
        key, and is no copy of the bytes."""
        if by_reference(block, self.protocol, self.endpoint):
            return block
        local = extras.get("local_copy")
        if not (isinstance(local, str) and local.startswith("file:")):
            return block
        data = base64.b64encode(await self._read(local, refuse)).decode("ascii")
        return DataBlock(
            id=block.id,
            source=Base64Source(data=data, media_type=block.source.media_type),
            name=block.name,
            created_at=block.created_at,
            finished_at=block.finished_at,
        )


def _refusal(index: int, where: str, url: str) -> Refuse:
    return lambda rule, reason: E.SourceRefusedError(index, where, url, rule, reason)


def by_reference(block: DataBlock, protocol: WireProtocol, endpoint: str | None) -> bool:
    """Whether an uploaded file goes to this target by its id: the target's endpoint holds it
    in the protocol's Files API, and the protocol takes that media type by reference."""
    from ..formatters._common import held_file

    return held_file(block, endpoint, protocol.files_api) is not None and protocol.takes_file_ref(
        block.source.media_type
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
