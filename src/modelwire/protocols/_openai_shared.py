"""OpenAI's Files and Batch APIs, shared by the Chat Completions and Responses protocols.

``POST {base}/files`` (multipart: ``purpose=user_data`` and ``file``) answers a ``FileObject``
(``id``, ``filename``, ``bytes``); ``GET {base}/files`` lists them (``data``); ``DELETE
{base}/files/{id}`` deletes one. A file is referred to by its id: ``{"type": "file", "file":
{"file_id"}}`` in Chat, ``input_file`` / ``input_image`` with ``file_id`` in Responses
(https://platform.openai.com/docs/api-reference/files, and the openai SDK's
``FileCreateParams``, ``FileObject`` and content part types).

A batch (https://platform.openai.com/docs/guides/batch: "a 50% cost discount") is a JSONL
file of requests (``custom_id``, ``method``, ``url``, ``body``) uploaded with
``purpose=batch``, then ``POST {base}/batches`` (``input_file_id``, ``endpoint``,
``completion_window: 24h``); its answers are the JSONL of its ``output_file_id`` and
``error_file_id`` (the openai SDK's ``Batch``, ``BatchRequestOutput``).
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from ..errors import UpstreamError
from ._protocol import BatchResult, BatchState, FileBody, HTTPCall, Preset, UploadedFile, batch_lines, multipart


def files_url(base_url: str) -> str:
    return base_url.rstrip("/") + "/files"


def upload(base_url: str, data: "bytes | FileBody", media_type: str, name: str) -> HTTPCall:
    body, content_type = multipart({"purpose": "user_data"}, "file", name, media_type, data)
    return HTTPCall("POST", files_url(base_url), {"content-type": content_type, "accept": "application/json"}, body)


def uploaded(answer: Mapping[str, Any], call: HTTPCall, media_type: str) -> UploadedFile:
    file_id = answer.get("id")
    if not isinstance(file_id, str) or not file_id:
        return UploadedFile("", "", media_type, "")  # no usable id: refused by the models layer, typed
    return UploadedFile(
        file_id, call.url.rstrip("/") + "/" + file_id, media_type, answer.get("filename") or "", answer.get("bytes")
    )


def listed(answer: Mapping[str, Any], base_url: str, preset: Preset) -> list[UploadedFile]:
    import mimetypes

    out = []
    for item in answer.get("data") or ():
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            name = item.get("filename") or ""
            media = mimetypes.guess_type(name)[0] or "application/octet-stream"
            out.append(UploadedFile(item["id"], files_url(base_url) + "/" + item["id"], media, name, item.get("bytes")))
    return out


_RUNNING = ("validating", "in_progress", "finalizing", "cancelling")
_JSON = {"accept": "application/json"}


def batch_submit(base_url: str, path: str, bodies: Sequence[Mapping[str, Any]]) -> HTTPCall:
    """The input file's upload: one line per request (``stream`` left out: a batch answers whole)."""
    lines = [
        json.dumps(
            {
                "custom_id": f"request-{n}",
                "method": "POST",
                "url": "/v1" + path,
                "body": {k: v for k, v in b.items() if k not in ("stream", "stream_options")},
            }
        )
        for n, b in enumerate(bodies)
    ]
    body, content_type = multipart(
        {"purpose": "batch"}, "file", "batch.jsonl", "application/jsonl", ("\n".join(lines) + "\n").encode()
    )
    return HTTPCall("POST", files_url(base_url), {"content-type": content_type, **_JSON}, body)


def batch_submitted(answer: Mapping[str, Any], call: HTTPCall, base_url: str, path: str) -> "BatchState | HTTPCall":
    if call.url == files_url(base_url):  # the input file is there: the batch itself
        file_id = answer.get("id")
        if not isinstance(file_id, str) or not file_id:
            raise UpstreamError(f"the batch's input file was answered with no usable file id: {str(answer)[:200]}")
        create = {"input_file_id": file_id, "endpoint": "/v1" + path, "completion_window": "24h"}
        return HTTPCall(
            "POST",
            base_url.rstrip("/") + "/batches",
            {"content-type": "application/json", **_JSON},
            json.dumps(create).encode(),
        )
    return batch_state(answer, base_url)


def batch_call(base_url: str, batch_id: str, action: str) -> HTTPCall:
    url = base_url.rstrip("/") + "/batches/" + batch_id
    return HTTPCall("POST", url + "/cancel", _JSON) if action == "cancel" else HTTPCall("GET", url, _JSON)


def batch_state(answer: Mapping[str, Any], base_url: str) -> BatchState:
    status = str(answer.get("status") or "")
    ended = bool(status) and status not in _RUNNING
    files = [answer.get(key) for key in ("output_file_id", "error_file_id")] if ended else []
    reads = tuple(
        HTTPCall("GET", files_url(base_url) + f"/{f}/content", {"accept": "application/jsonl"})
        for f in files
        if isinstance(f, str) and f
    )
    counts = {k: v for k, v in (answer.get("request_counts") or {}).items() if isinstance(v, int)}
    return BatchState(str(answer.get("id") or ""), status, ended, counts, reads, counts.get("total"))


def batch_results(text: str) -> list[BatchResult]:
    out: list[BatchResult] = []
    for index, item in batch_lines(text):
        if not isinstance(item, dict):
            out.append((index, None, item))  # a line that could not be read: its typed error
            continue
        response = item.get("response")
        if not isinstance(response, dict):
            response = {}
        answer, status = response.get("body"), response.get("status_code", 200)
        failed = not isinstance(status, int) or status >= 400
        if item.get("error") or failed or not isinstance(answer, dict):
            error = (answer if isinstance(answer, dict) and "error" in answer else None) or {
                "error": item.get("error") or {"message": "the batch request failed"}
            }
            out.append((index, None, error))
        else:
            out.append((index, answer, None))
    return out


class OpenAIFilesAndBatches:
    """The Files and Batch API methods of a protocol served by OpenAI's API (a mixin before
    ``WireProtocol``; the protocol's ``path`` names the endpoint its batch lines go to)."""

    path: str
    files_api: str | None = "openai"
    batch_discount = 0.5
    batch_limit = (
        50_000  # "up to 50,000 requests" in a batch's input file (https://platform.openai.com/docs/guides/batch)
    )

    def file_upload(
        self, base_url: str, preset: Preset, data: "bytes | FileBody", media_type: str, name: str
    ) -> HTTPCall:
        return upload(base_url, data, media_type, name)

    def file_uploaded(
        self, answer: Mapping[str, Any], headers: Mapping[str, str], call: HTTPCall, data: "bytes | FileBody"
    ) -> UploadedFile | HTTPCall:
        return uploaded(answer, call, "")

    def files_url(self, base_url: str, preset: Preset) -> str:
        return files_url(base_url)

    def files_listed(self, answer: Mapping[str, Any], base_url: str, preset: Preset) -> list[UploadedFile]:
        return listed(answer, base_url, preset)

    def batch_submit(self, base_url: str, preset: Preset, model: str, bodies: Sequence[Mapping[str, Any]]) -> HTTPCall:
        return batch_submit(base_url, self.path, bodies)

    def batch_submitted(
        self, answer: Mapping[str, Any], call: HTTPCall, base_url: str, preset: Preset
    ) -> BatchState | HTTPCall:
        return batch_submitted(answer, call, base_url, self.path)

    def batch_call(self, base_url: str, preset: Preset, batch_id: str, action: str) -> HTTPCall:
        return batch_call(base_url, batch_id, action)

    def batch_state(self, answer: Mapping[str, Any], base_url: str, preset: Preset) -> BatchState:
        return batch_state(answer, base_url)

    def batch_results(self, text: str) -> list[BatchResult]:
        return batch_results(text)


def openai_model_list_url(base_url: str, preset: Preset) -> str | None:
    """``GET {base}/models``, the list OpenAI and the servers speaking its API keep
    (https://platform.openai.com/docs/api-reference/models/list); None where a model is a
    deployment in the request's path (Azure's ``/openai/deployments/{model}/...``)."""
    if "{model}" in (preset.path or ""):
        return None
    return f"{base_url.rstrip('/')}/models"


def openai_models_listed(data: Any, read: Any = None) -> list[tuple[str, Any]]:
    """``{object: "list", data: [{id, object: "model", ...}]}`` (one page: the list is not
    paged): each id with ``read(row)``, or an empty record where the row says nothing a
    request depends on (OpenAI's own rows: ``id``, ``created``, ``owned_by``)."""
    from ._caps import ModelCapabilities

    rows = data.get("data") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("id"), str) for r in rows):
        raise ValueError("not a model list: no data of models with ids")
    return [(row["id"], read(row) if read is not None else ModelCapabilities()) for row in rows]
