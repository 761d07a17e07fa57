"""What the test server answers for the Gemini protocol: fake streams and whole answers (a
mixin before ``WireProtocol`` in :class:`~modelwire.protocols.gemini.GeminiProtocol`)."""

from __future__ import annotations

from typing import Any

from ...adapters import encode_sse
from .._parts import TestSupport

__all__ = ["GeminiTestSupport"]


class GeminiTestSupport(TestSupport):
    def fake_answer(self, *blocks: tuple[Any, ...], usage: tuple[int, int] = (10, 5)) -> dict[str, Any]:
        """The whole generateContent answer of the same blocks as :meth:`fake_stream`: one
        candidate holding every part, a thought's signature on the part after it."""
        import json

        parts: list[dict[str, Any]] = []
        signature: str | None = None
        for block in blocks:
            if block[0] == "think":
                parts.append({"text": block[1], "thought": True})
                signature = f"sig-{block[1][:8]}"
                continue
            if block[0] == "text":
                part: dict[str, Any] = {"text": block[1]}
            else:
                call: dict[str, Any] = {"name": block[2], "args": json.loads(block[3] or "{}")}
                if block[1].startswith("fc_"):
                    call["id"] = block[1]
                part = {"functionCall": call}
            if signature:
                part["thoughtSignature"], signature = signature, None
            parts.append(part)
        candidate = {"content": {"role": "model", "parts": parts}, "index": 0, "finishReason": "STOP"}
        used = {"promptTokenCount": usage[0], "candidatesTokenCount": usage[1], "totalTokenCount": sum(usage)}
        return {"candidates": [candidate], "usageMetadata": used, "modelVersion": "gemini-test", "responseId": "gem-1"}

    def fake_stream(
        self, *blocks: tuple[Any, ...], usage: tuple[int, int] = (10, 5), finish: str = "STOP", **_: Any
    ) -> bytes:
        """``("think", text)`` is a thought part and a signature on the next part, as
        Gemini 3 sends; calls carry server ids ``fc_<n>`` when the block's id starts so."""
        chunks: list[dict[str, Any]] = []
        signature: str | None = None
        for n, block in enumerate(blocks):
            if block[0] == "think":
                chunks.append({"parts": [{"text": block[1], "thought": True}]})
                signature = f"sig-{block[1][:8]}"
            elif block[0] == "text":
                words = block[1].split(" ")
                for i, word in enumerate(words):
                    part: dict[str, Any] = {"text": word + (" " if i < len(words) - 1 else "")}
                    if signature and i == 0:
                        part["thoughtSignature"], signature = signature, None
                    chunks.append({"parts": [part]})
            else:
                _, call_id, name, args = block
                import json

                call: dict[str, Any] = {"name": name, "args": json.loads(args or "{}")}
                if call_id.startswith("fc_"):
                    call["id"] = call_id
                part = {"functionCall": call}
                if signature:
                    part["thoughtSignature"], signature = signature, None
                chunks.append({"parts": [part]})
        events = []
        for i, chunk in enumerate(chunks):
            body: dict[str, Any] = {
                "candidates": [{"content": {"role": "model", "parts": chunk["parts"]}, "index": 0}],
                "modelVersion": "gemini-test",
                "responseId": "gem-1",
            }
            last = i == len(chunks) - 1
            body["usageMetadata"] = {
                "promptTokenCount": usage[0],
                "candidatesTokenCount": usage[1] if last else 1,
                "totalTokenCount": usage[0] + usage[1],
            }
            if last:
                body["candidates"][0]["finishReason"] = finish
            events.append((None, body))
        if not chunks:
            events.append(
                (
                    None,
                    {
                        "candidates": [
                            {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": finish, "index": 0}
                        ],
                        "usageMetadata": {"promptTokenCount": usage[0]},
                    },
                )
            )
        return encode_sse(events)
