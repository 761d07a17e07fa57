"""Anthropic's Files and Message Batches APIs: the parts of the protocol beside its core
(a mixin before ``WireProtocol`` in :class:`~modelwire.protocols.anthropic.AnthropicProtocol`).
Claude on the clouds has neither: each method says so, typed."""

from __future__ import annotations

import json
from typing import Any, Mapping

from ... import errors as E
from .._parts import Batches, Files
from .._protocol import BatchResult, BatchState, FileBody, HTTPCall, Preset, UploadedFile, batch_lines, multipart

__all__ = ["AnthropicFilesAndBatches"]


class AnthropicFilesAndBatches(Files, Batches):
    # -- files (https://docs.anthropic.com/en/docs/build-with-claude/files; the anthropic SDK's
    # files.upload and FileMetadata): POST /v1/files, multipart ``file``; GET lists; a file is
    # sent as {"type": "file", "file_id"} in an image or document block.

    files_api = "anthropic"

    def file_upload(
        self, base_url: str, preset: Preset, data: "bytes | FileBody", media_type: str, name: str
    ) -> HTTPCall:
        endpoint = preset.dialect.get("endpoint")
        if endpoint in ("vertex", "bedrock"):
            cloud = "Vertex AI" if endpoint == "vertex" else "Bedrock"
            raise E.UnsupportedOptionError(
                "upload_file",
                preset.name,
                f"Claude on {cloud} has no Files API: send the data inline (a path or bytes as a base64 source)",
            )
        body, content_type = multipart({}, "file", name, media_type, data)
        return HTTPCall(
            "POST", self.files_url(base_url, preset), {"content-type": content_type, "accept": "application/json"}, body
        )

    def file_uploaded(
        self, answer: Mapping[str, Any], headers: Mapping[str, str], call: HTTPCall, data: "bytes | FileBody"
    ) -> UploadedFile | HTTPCall:
        file_id = answer.get("id")
        if not isinstance(file_id, str) or not file_id:
            return UploadedFile("", "", "", "")  # no usable id: refused by the models layer, typed
        return UploadedFile(
            file_id,
            call.url.rstrip("/") + "/" + file_id,
            answer.get("mime_type") or "",
            answer.get("filename") or "",
            answer.get("size_bytes"),
        )

    def files_url(self, base_url: str, preset: Preset) -> str:
        if preset.dialect.get("endpoint") in ("vertex", "bedrock"):
            raise E.UnsupportedOptionError("list_files", preset.name, "Claude on the clouds has no Files API")
        return base_url.rstrip("/") + "/v1/files"

    def files_listed(self, answer: Mapping[str, Any], base_url: str, preset: Preset) -> list[UploadedFile]:
        url = self.files_url(base_url, preset)
        items = [i for i in answer.get("data") or () if isinstance(i, dict) and isinstance(i.get("id"), str)]
        return [
            UploadedFile(
                i["id"], url + "/" + i["id"], i.get("mime_type") or "", i.get("filename") or "", i.get("size_bytes")
            )
            for i in items
        ]

    def takes_file_ref(self, media_type: str) -> bool:
        from ._body import IMAGE_TYPES

        base = media_type.split(";")[0].strip().lower()
        return base in IMAGE_TYPES or base in ("application/pdf", "text/plain")

    # -- batches (https://docs.anthropic.com/en/docs/build-with-claude/batch-processing: "50%
    # of standard API prices"; the anthropic SDK's messages.batches, MessageBatch and
    # MessageBatchIndividualResponse). Results are JSONL at the batch's results_url.

    batch_discount = 0.5
    batch_limit = 100_000  # "limited to either 100,000 Message requests or 256 MB" (the batch-processing page above)

    def _batches_url(self, base_url: str, preset: Preset) -> str:
        if preset.dialect.get("endpoint") in ("vertex", "bedrock"):
            raise E.UnsupportedOptionError(
                "batch",
                preset.name,
                (
                    "Claude on the clouds takes batches as jobs over cloud storage (Vertex AI batch "
                    "prediction, Bedrock batch inference), not this API"
                ),
            )
        return base_url.rstrip("/") + "/v1/messages/batches"

    def batch_submit(self, base_url: str, preset: Preset, model: str, bodies: Any) -> HTTPCall:
        requests = [
            {"custom_id": f"request-{n}", "params": {k: v for k, v in b.items() if k != "stream"}}
            for n, b in enumerate(bodies)
        ]
        return HTTPCall(
            "POST",
            self._batches_url(base_url, preset),
            {"accept": "application/json"},
            json.dumps({"requests": requests}).encode(),
        )

    def batch_call(self, base_url: str, preset: Preset, batch_id: str, action: str) -> HTTPCall:
        url = self._batches_url(base_url, preset) + "/" + batch_id
        return (
            HTTPCall("POST", url + "/cancel", {"accept": "application/json"})
            if action == "cancel"
            else HTTPCall("GET", url, {"accept": "application/json"})
        )

    def batch_state(self, answer: Mapping[str, Any], base_url: str, preset: Preset) -> BatchState:
        status = str(answer.get("processing_status") or "")
        ended = status == "ended"
        results = answer.get("results_url")
        reads = (
            (HTTPCall("GET", results, {"accept": "application/binary"}),) if ended and isinstance(results, str) else ()
        )
        counts = {k: v for k, v in (answer.get("request_counts") or {}).items() if isinstance(v, int)}
        return BatchState(
            str(answer.get("id") or ""), status, ended, counts, reads, sum(counts.values()) if counts else None
        )

    def batch_results(self, text: str) -> list[BatchResult]:
        out: list[BatchResult] = []
        for index, item in batch_lines(text):
            if not isinstance(item, dict):
                out.append((index, None, item))  # a line that could not be read: its typed error
                continue
            result = item.get("result")
            if not isinstance(result, dict):
                result = {}
            kind = result.get("type")
            if kind == "succeeded":
                out.append((index, result.get("message"), None))
            elif kind == "errored":
                out.append((index, None, result.get("error")))
            else:  # canceled, expired: no answer, and Anthropic's words for why
                out.append(
                    (
                        index,
                        None,
                        {
                            "type": "error",
                            "error": {
                                "type": f"{kind}_error",
                                "message": f"the batch request was {kind} before it was answered",
                            },
                        },
                    )
                )
        return out
