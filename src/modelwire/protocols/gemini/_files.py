"""The Gemini API's Files and Batch APIs: the parts of the protocol beside its core (a mixin
before ``WireProtocol`` in :class:`~modelwire.protocols.gemini.GeminiProtocol`). Gemini on
Vertex AI has neither: each method says so, typed."""

from __future__ import annotations

import json
from typing import Any, Mapping

from ... import errors as E
from ...errors import UnsupportedOptionError, UpstreamError
from .._parts import Batches, Files
from .._protocol import BatchResult, BatchState, FileBody, HTTPCall, Preset, UploadedFile, request_index

__all__ = ["GeminiFilesAndBatches"]


class GeminiFilesAndBatches(Files, Batches):
    # -- files (https://ai.google.dev/api/files; google-genai's files.upload, a resumable
    # upload: a start request answered with X-Goog-Upload-URL, then the bytes). A file is
    # sent as {"fileData": {"mimeType", "fileUri"}}, any media type.

    files_api = "gemini"

    def file_upload(
        self, base_url: str, preset: Preset, data: "bytes | FileBody", media_type: str, name: str
    ) -> HTTPCall:
        if preset.dialect.get("endpoint") == "vertex":
            raise UnsupportedOptionError(
                "upload_file",
                preset.name,
                "Gemini on Vertex AI has no Files API: send a gs:// URL (a URL source) or the data inline",
            )
        from urllib.parse import quote

        size = len(data)
        body = json.dumps(
            {"file": {"display_name": name, "mime_type": media_type, "size_bytes": size}}
        ).encode()  # as google-genai writes it
        headers = {
            "content-type": "application/json",
            "x-goog-upload-protocol": "resumable",
            "x-goog-upload-command": "start",
            "x-goog-upload-header-content-length": str(size),
            "x-goog-upload-header-content-type": media_type,
            "x-goog-upload-file-name": quote(name, safe=" .-_()"),
        }
        return HTTPCall("POST", base_url.rstrip("/") + "/upload/v1beta/files", headers, body)

    def file_uploaded(
        self, answer: Mapping[str, Any], headers: Mapping[str, str], call: HTTPCall, data: "bytes | FileBody"
    ) -> UploadedFile | HTTPCall:
        if call.headers.get("x-goog-upload-command") == "start":
            url = headers.get("x-goog-upload-url")
            if not url:
                raise UpstreamError(
                    "Gemini did not start the upload: its answer has no X-Goog-Upload-URL", body=dict(answer)
                )
            return HTTPCall(
                "POST", url, {"x-goog-upload-command": "upload, finalize", "x-goog-upload-offset": "0"}, data
            )
        held = answer.get("file")
        return _file(held if isinstance(held, Mapping) else {})

    def files_url(self, base_url: str, preset: Preset) -> str:
        if preset.dialect.get("endpoint") == "vertex":
            raise UnsupportedOptionError("list_files", preset.name, "Gemini on Vertex AI has no Files API")
        return base_url.rstrip("/") + "/v1beta/files"

    def files_listed(self, answer: Mapping[str, Any], base_url: str, preset: Preset) -> list[UploadedFile]:
        return [_file(f) for f in answer.get("files") or () if isinstance(f, dict) and isinstance(f.get("uri"), str)]

    def takes_file_ref(self, media_type: str) -> bool:
        return True

    # -- batches (https://ai.google.dev/gemini-api/docs/batch-mode: "50% of the standard
    # cost"; google-genai's batches.create with inlined requests, and its BatchJob): POST
    # models/{model}:batchGenerateContent, the state and the inlined answers at batches/{id}.

    batch_discount = 0.5
    _BATCH_ENDED = ("BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED", "BATCH_STATE_EXPIRED")

    def _batches(self, base_url: str, preset: Preset) -> str:
        if preset.dialect.get("endpoint") == "vertex":
            raise UnsupportedOptionError(
                "batch",
                preset.name,
                "Vertex AI takes batches as batch prediction jobs over Cloud Storage or BigQuery, not this API",
            )
        return base_url.rstrip("/") + "/v1beta"

    def batch_submit(self, base_url: str, preset: Preset, model: str, bodies: Any) -> HTTPCall:
        requests = [
            {"request": dict(body), "metadata": {"key": f"request-{n}"}} for n, body in enumerate(bodies)
        ]  # the model is the URL's
        url = f"{self._batches(base_url, preset)}/models/{model}:batchGenerateContent"
        return HTTPCall(
            "POST",
            url,
            {"accept": "application/json"},
            json.dumps(
                {"batch": {"displayName": "modelwire", "inputConfig": {"requests": {"requests": requests}}}}
            ).encode(),
        )

    def batch_call(self, base_url: str, preset: Preset, batch_id: str, action: str) -> HTTPCall:
        url = f"{self._batches(base_url, preset)}/batches/{batch_id}"
        return (
            HTTPCall("POST", url + ":cancel", {"accept": "application/json"})
            if action == "cancel"
            else HTTPCall("GET", url, {"accept": "application/json"})
        )

    def batch_state(self, answer: Mapping[str, Any], base_url: str, preset: Preset) -> BatchState:
        meta = answer.get("metadata") or {}
        name = str(answer.get("name") or meta.get("name") or "")
        status = str(meta.get("state") or "")
        ended = status in self._BATCH_ENDED
        batch_id = name.removeprefix("batches/")
        stats = meta.get("batchStats") or {}
        counts = {k: int(v) for k, v in stats.items() if str(v).isdigit()}
        reads = (self.batch_call(base_url, preset, batch_id, "status"),) if ended and batch_id else ()
        return BatchState(batch_id, status, ended, counts, reads, counts.get("requestCount"))

    def batch_results(self, text: str) -> list[BatchResult]:
        answer = json.loads(text)
        output = (answer.get("metadata") or {}).get("output") or (answer.get("response") or {})
        items = (output.get("inlinedResponses") or {}).get("inlinedResponses") or []
        out: list[BatchResult] = []
        for n, item in enumerate(items):
            if not isinstance(item, dict):
                out.append((-1, None, E.StreamProtocolError(f"answer {n} of the batch is not an object", body=item)))
                continue
            metadata = item.get("metadata")
            if not isinstance(metadata, dict):
                metadata = {}
            index = request_index(metadata["key"]) if "key" in metadata else n
            if item.get("error"):
                out.append((index, None, {"error": item["error"]}))
            else:
                out.append((index, item.get("response") or {}, None))
        return out


def _file(data: Mapping[str, Any]) -> UploadedFile:
    """A Gemini ``File`` (``name`` ``files/ID``, ``uri``, ``mimeType``, ``displayName``, ``sizeBytes``)."""
    size, name, uri = data.get("sizeBytes"), data.get("name"), data.get("uri")
    return UploadedFile(
        name.removeprefix("files/") if isinstance(name, str) else "",
        uri if isinstance(uri, str) else "",
        data.get("mimeType") or "",
        data.get("displayName") or "",
        int(str(size)) if str(size).isdigit() else None,
    )
