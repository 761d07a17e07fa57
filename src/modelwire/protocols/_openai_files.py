"""OpenAI's Files API, shared by the Chat Completions and Responses protocols.

``POST {base}/files`` (multipart: ``purpose=user_data`` and ``file``) answers a ``FileObject``
(``id``, ``filename``, ``bytes``); ``GET {base}/files`` lists them (``data``); ``DELETE
{base}/files/{id}`` deletes one. A file is referred to by its id: ``{"type": "file", "file":
{"file_id"}}`` in Chat, ``input_file`` / ``input_image`` with ``file_id`` in Responses
(https://platform.openai.com/docs/api-reference/files, and the openai SDK's
``FileCreateParams``, ``FileObject`` and content part types).
"""

from __future__ import annotations

from typing import Any, Mapping

from ._protocol import HTTPCall, Preset, UploadedFile, multipart


def files_url(base_url: str) -> str:
    return base_url.rstrip("/") + "/files"


def upload(base_url: str, data: bytes, media_type: str, name: str) -> HTTPCall:
    body, content_type = multipart({"purpose": "user_data"}, "file", name, media_type, data)
    return HTTPCall("POST", files_url(base_url), {"content-type": content_type, "accept": "application/json"}, body)


def uploaded(answer: Mapping[str, Any], call: HTTPCall, media_type: str) -> UploadedFile:
    file_id = answer["id"]
    return UploadedFile(file_id, call.url.rstrip("/") + "/" + file_id, media_type, answer.get("filename") or "", answer.get("bytes"))


def listed(answer: Mapping[str, Any], base_url: str, preset: Preset) -> list[UploadedFile]:
    import mimetypes

    out = []
    for item in answer.get("data") or ():
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            name = item.get("filename") or ""
            media = mimetypes.guess_type(name)[0] or "application/octet-stream"
            out.append(UploadedFile(item["id"], files_url(base_url) + "/" + item["id"], media, name, item.get("bytes")))
    return out
