"""Files uploaded once and referred to by id (``WireProtocol.file_upload`` and its kin).

``model.upload_file(path_or_bytes)`` returns a :class:`~modelwire.message.DataBlock` whose
source is the file's URL at the provider, with the file's id (``file_id``), the endpoint that
holds it (``provider_metadata``, as every block a provider made records its origin) and, for
a file uploaded from a path, that path (``local_copy``, a ``file://`` URL). Sent to the
endpoint that holds it, the block goes by reference; sent anywhere else, its bytes go, read
from the local copy (see ``_media.resolve_sources``), or a ``FormatError`` says what to do.
AgentScope reads the block as a data block with a URL source, the rest kept as extras.
"""

from __future__ import annotations

import asyncio
import json
import mimetypes
import os
from pathlib import Path
from typing import Any

from .. import errors as E
from ..message import DataBlock, URLSource, provenance
from ..protocols import FileBody, HTTPCall, UploadedFile, WireProtocol
from ._body import send_call

__all__ = ["upload_file", "list_files", "delete_file", "file_id_of", "send_json"]

_ANSWER_LIMIT = 4 << 20  # a listing of many files is still small


async def send_json(model: Any, call: HTTPCall) -> tuple[Any, dict[str, Any]]:
    """Send one of the protocol's requests (see ``send_call``): (headers, its JSON answer)."""
    headers, raw = await send_call(model, call, _ANSWER_LIMIT)
    text = raw.decode("utf-8", "replace")
    try:
        answer = json.loads(text) if text.strip() else {}
    except ValueError:
        raise E.UpstreamError(
            f"{call.url.split('?')[0]} answered what is not JSON: {text[:200]!r}", body=text[:2000]
        ) from None
    return headers, answer if isinstance(answer, dict) else {}


def _read(source: Any, media_type: str | None, name: str | None) -> tuple[bytes | FileBody, str, str, str | None]:
    """(what is uploaded, media type, name, the local copy's file:// URL or None): a file is
    a :class:`FileBody`, read as it is sent (never whole in memory), bytes are themselves."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source).expanduser().resolve()
        if not path.is_file():
            raise E.ConfigError(f"upload_file: {str(source)!r} is not a file")
        name = name or path.name
        media_type = media_type or mimetypes.guess_type(path.name)[0]
        if media_type is None:
            raise E.ConfigError(
                f"upload_file: the media type of {path.name!r} cannot be told from its name; pass media_type="
            )
        return FileBody(str(path), path.stat().st_size), media_type, name, path.as_uri()
    if isinstance(source, (bytes, bytearray, memoryview)):
        if media_type is None:
            raise E.ConfigError("upload_file: bytes need their media_type (application/pdf, image/png ...)")
        return bytes(source), media_type, name or "upload" + (mimetypes.guess_extension(media_type) or ""), None
    raise E.ConfigError(f"upload_file takes a path or bytes, not {type(source).__name__}")


async def upload_file(model: Any, source: Any, media_type: str | None = None, name: str | None = None) -> DataBlock:
    """Upload ``source`` to ``model``'s provider (see :meth:`HTTPModel.upload_file`)."""
    read = await asyncio.to_thread(_read, source, media_type, name)  # (mypy widens a tuple unpacked from it)
    data, media_type, name, local = read
    base_url = model.spec.base_url or ""
    call = model.wire.file_upload(base_url, model.spec.preset, data, media_type, name)
    for _ in range(4):  # an upload takes at most a few requests (Gemini's: two)
        headers, answer = await send_json(model, call)
        result = model.wire.file_uploaded(answer, headers, call, data)
        if isinstance(result, UploadedFile):
            break
        call = result
    else:
        raise E.UpstreamError(f"{model.provider}: the upload of {name!r} did not finish")
    if not isinstance(result.id, str) or not result.id or not isinstance(result.url, str) or not result.url:
        raise E.UpstreamError(
            f"{model.provider}: the upload of {name!r} was answered with no usable file id: {str(answer)[:200]}",
            body=answer,
        )
    extras: dict[str, Any] = {
        "file_id": result.id,
        "file_api": model.wire.files_api,
        "provider_metadata": provenance(model.provider, model.protocol, model.endpoint),
    }
    if local is not None:
        extras["local_copy"] = local
    return DataBlock(source=URLSource(url=result.url, media_type=media_type), name=name, **extras)


async def list_files(model: Any) -> list[UploadedFile]:
    """The files ``model``'s provider holds (the first page it lists)."""
    url = model.wire.files_url(model.spec.base_url or "", model.spec.preset)
    _, answer = await send_json(model, HTTPCall("GET", url, {"accept": "application/json"}))
    wire: WireProtocol = model.wire
    return wire.files_listed(answer, model.spec.base_url or "", model.spec.preset)


def file_id_of(file: Any) -> str:
    """The id of a file given as its id, an :class:`UploadedFile` or the block ``upload_file`` made."""
    if isinstance(file, str) and file:
        return file
    if isinstance(file, UploadedFile):
        return file.id
    found = getattr(file, "__dict__", {}).get("file_id") if isinstance(file, DataBlock) else None
    if isinstance(found, str) and found:
        return found
    raise E.ConfigError(
        f"delete_file takes a file id, an UploadedFile or a block made by upload_file, not {type(file).__name__}"
    )


async def delete_file(model: Any, file: Any) -> None:
    """Delete a file ``model``'s provider holds."""
    url = model.wire.files_url(model.spec.base_url or "", model.spec.preset).rstrip("/") + "/" + file_id_of(file)
    await send_json(model, HTTPCall("DELETE", url, {"accept": "application/json"}))
