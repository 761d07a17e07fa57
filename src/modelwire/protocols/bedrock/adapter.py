"""AWS Bedrock ConverseStream (``POST /model/{modelId}/converse-stream``) -> events.

The body is AWS's binary event stream (see :mod:`modelwire.adapters._eventstream`); each
``event`` frame's ``:event-type`` names the payload. What maps to what:

- ``messageStart``: the call opens.
- ``contentBlockStart``: only tool blocks announce themselves (``start.toolUse`` with
  ``toolUseId`` and ``name``; ``type: server_tool_use`` marks a server-side tool, such as
  Nova's code interpreter); text and reasoning blocks start with their first delta.
- ``contentBlockDelta``: ``text``; ``toolUse.input`` JSON pieces (a tool with no
  arguments sends ``""``, which means ``{}``); ``reasoningContent`` with ``text``,
  ``signature`` (kept as ``signature``) or ``redactedContent`` (kept as
  ``redacted_thinking_data``); ``toolResult`` for a server tool's result; ``citation``.
- ``contentBlockStop``, then ``messageStop{stopReason}``, then ``metadata{usage, metrics}``
  last, which ends the call (``cacheReadInputTokens`` / ``cacheWriteInputTokens`` are the
  cache counts; ``inputTokens`` excludes them, as Anthropic counts).
- the random ``p`` padding field is ignored.
- exception frames inside the 200 stream (``throttlingException``,
  ``modelStreamErrorException``, ``validationException``,
  ``serviceUnavailableException``, ``internalServerException`` ...) are typed errors.
"""

from __future__ import annotations

from typing import Any


from ...adapters import OPTIONAL, BaseAdapter, Delta, error_object, json_text, shape_problem
from ...errors import StreamProtocolError

__all__ = ["BedrockConverseAdapter", "STOP_REASONS"]

STOP_REASONS = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
    "model_context_window_exceeded": "max_tokens",
}


SHAPE: dict[str, tuple[type, ...]] = {
    "contentBlockIndex": (int, OPTIONAL),
    "delta": (dict, OPTIONAL),
    "delta.toolUse": (dict, OPTIONAL),
    "delta.reasoningContent": (dict, OPTIONAL),
    "delta.reasoningContent.text": (str, OPTIONAL),
    "delta.reasoningContent.signature": (str, OPTIONAL),
    "delta.reasoningContent.redactedContent": (str, OPTIONAL),
    "delta.toolResult": (list, OPTIONAL),
    "delta.toolResult[].text": (str, OPTIONAL),
    "start": (dict, OPTIONAL),
    "start.toolResult.name": (str, OPTIONAL),
    "start.toolResult.status": (str, OPTIONAL),
    "stopReason": (str, OPTIONAL),
    "usage": (dict, OPTIONAL),
}


# A text or tool-input piece of an open block (see adapters._fast); reasoning deltas and the
# padding "p" take the full path, or are skipped.
DELTAS = (
    Delta("delta.text", key="contentBlockIndex", kinds=("text",), event="contentBlockDelta", absent=("error",)),
    Delta(
        "delta.toolUse.input",
        key="contentBlockIndex",
        kinds=("tool_call",),
        event="contentBlockDelta",
        empty=("delta.text",),
        absent=("error",),
    ),
)


class BedrockConverseAdapter(BaseAdapter):
    protocol = "bedrock-converse"
    input_counts_cache = False  # its input_tokens leaves out cache reads and writes (added at the end)
    deltas = DELTAS

    def __init__(self, reply_id: str, **kwargs: Any) -> None:
        super().__init__(reply_id, **kwargs)
        self._stopped = False
        self._metadata_seen = False
        self._server_calls: dict[int, str] = {}  # block index -> id of a server tool call

    def answered(self) -> bool:
        return self.finished or self._stopped

    # Its own errors arrive as exception frames (the decoder raises them); a JSON error
    # object in an event's place is a proxy's: the kit's shape.
    is_error_frame = staticmethod(error_object)

    def shape_problem(self, data: dict[str, Any], event: str | None) -> str | None:
        return shape_problem(data, SHAPE)

    def handle(self, data: dict[str, Any], event: str | None) -> None:
        if event is None:
            # vercel's recordings (and some proxies) wrap the payload: {"<eventType>": {...}}
            if len(data) == 1 and isinstance(next(iter(data.values())), dict):
                event, data = next(iter(data.items()))
            else:
                raise StreamProtocolError("an event-stream frame without an :event-type", body=data)
        if event == "contentBlockDelta":
            self._delta(_index(data), data.get("delta"))
        elif event == "contentBlockStart":
            self._start_block(_index(data), data.get("start") or {})
        elif event == "contentBlockStop":
            self._stop_block(_index(data))
        elif event == "messageStart":
            pass
        elif event == "messageStop":
            reason = data.get("stopReason")
            self.provider_stop_reason = reason if isinstance(reason, str) else None
            self.stop_reason = STOP_REASONS.get(reason, "other") if isinstance(reason, str) else None
            if data.get("additionalModelResponseFields"):
                self.call_metadata["additional_model_response_fields"] = data["additionalModelResponseFields"]
            self._stopped = True
            if self._metadata_seen:
                self._end()
        elif event == "metadata":
            # Last, after messageStop; some senders put it first: then messageStop ends the call.
            self._metadata(data)
            self._metadata_seen = True
            if self._stopped:
                self._end()
        else:
            self.call_metadata.setdefault("unhandled_events", []).append({event: data})
            self.note_unread(str(event), data)

    # -- blocks -------------------------------------------------------------------------

    def _start_block(self, index: int, start: dict[str, Any]) -> None:
        if index in self.blocks:
            raise StreamProtocolError(f"content block {index} started twice", body=start)
        tool = start.get("toolUse")
        if isinstance(tool, dict):
            name = tool.get("name")
            call_id = tool.get("toolUseId")
            if not isinstance(name, str) or not name or not isinstance(call_id, str) or not call_id:
                raise StreamProtocolError("a toolUse start without a toolUseId and a name", body=start)
            block = self.open_block(index, "tool_call", name=name, block_id=call_id)
            block.extras["provider_metadata"] = self.origin
            if tool.get("type") == "server_tool_use":
                block.extras["server_side"] = True
                self._server_calls[index] = call_id
            return
        result = start.get("toolResult")
        if isinstance(result, dict):
            call_id = result.get("toolUseId")
            if not isinstance(call_id, str):
                raise StreamProtocolError("a toolResult start without a toolUseId", body=start)
            block = self.open_block(index, "tool_result", name=result.get("name") or "server_tool", block_id=call_id)
            block.extras["raw"] = {"toolUseId": call_id, "content": [], "status": result.get("status") or "success"}
            return
        self.call_metadata.setdefault("unhandled_blocks", []).append(start)
        self.note_unread("contentBlockStart.start", start)

    def _delta(self, index: int, delta: Any) -> None:
        if not isinstance(delta, dict):
            raise StreamProtocolError("contentBlockDelta without a delta object", body={"delta": delta})
        block = self.blocks.get(index)
        if "text" in delta:
            text = delta["text"]
            if not isinstance(text, str):
                raise StreamProtocolError("a text delta that is not a string", body=delta)
            block = block or self._open(index, "text")
            self._expect(block, "text", index)
            self.delta(block, text)
        elif "toolUse" in delta:
            self._tool_input(block, index, delta)
        elif "reasoningContent" in delta:
            self._reasoning(block or self._open(index, "thinking"), index, delta["reasoningContent"] or {})
        elif "toolResult" in delta:
            if block is None or block.kind != "tool_result":
                raise StreamProtocolError(
                    f"a toolResult delta for block {index}, which is no tool result that started", body=delta
                )
            for item in delta["toolResult"] or []:
                block.extras["raw"]["content"].append(item)
                if isinstance(item, dict) and "text" in item:
                    self.delta(block, item["text"])
                elif isinstance(item, dict) and "json" in item:
                    self.delta(block, json_text(item["json"]))
        elif "citation" in delta:
            if block is not None:
                block.extras.setdefault("citations", []).append(delta["citation"])
        else:
            self.call_metadata.setdefault("unhandled_deltas", []).append(delta)
            self.note_unread("contentBlockDelta.delta", delta)

    def _open(self, index: int, kind: str) -> Any:
        block = self.open_block(index, kind)
        block.extras["provider_metadata"] = self.origin
        return block

    def _tool_input(self, block: Any, index: int, delta: dict[str, Any]) -> None:
        """A piece of a tool call's input (some models send the object whole)."""
        if block is None or block.kind != "tool_call":
            raise StreamProtocolError(
                f"toolUse input for block {index}, which is no tool call that started", body=delta
            )
        piece = (delta["toolUse"] or {}).get("input", "")
        if not isinstance(piece, str):
            piece = json_text(piece)
        self.delta(block, piece)

    def _reasoning(self, block: Any, index: int, reasoning: dict[str, Any]) -> None:
        """A reasoning delta: its text, and its signature or redacted content, pieced together."""
        self._expect(block, "thinking", index)
        if "text" in reasoning:
            self.delta(block, reasoning["text"] or "")
        if reasoning.get("signature"):
            block.extras["signature"] = block.extras.get("signature", "") + reasoning["signature"]
        if "redactedContent" in reasoning:
            block.extras["redacted_thinking_data"] = block.extras.get("redacted_thinking_data", "") + (
                reasoning["redactedContent"] or ""
            )

    @staticmethod
    def _expect(block: Any, kind: str, index: int) -> None:
        if block.kind != kind:
            raise StreamProtocolError(f"a {kind} delta for block {index}, which holds {block.kind}")

    def _stop_block(self, index: int) -> None:
        block = self.blocks.get(index)
        if block is None:
            return  # an empty block (no delta ever came) has nothing to close
        if block.kind == "tool_call" and not block.has_delta:
            self.delta(block, "{}")  # input "" (a tool with no arguments) means {}
        if block.kind == "tool_result":
            raw = block.extras.pop("raw")
            self.close_block(
                index,
                state="success" if raw.get("status") != "error" else "error",
                metadata={"provider_metadata": self.origin, "provider_block": raw},
            )
            return
        self.close_block(index)

    # -- the end ------------------------------------------------------------------------

    def _metadata(self, data: dict[str, Any]) -> None:
        usage = data.get("usage") or {}
        if not isinstance(usage, dict):
            raise StreamProtocolError("metadata.usage is not an object", body=data)
        self.call_metadata["usage"] = usage
        self.input_tokens = _int(usage.get("inputTokens"))
        self.output_tokens = _int(usage.get("outputTokens"))
        self.cache_input_tokens = _int(usage.get("cacheReadInputTokens"))
        self.cache_creation_input_tokens = _int(usage.get("cacheWriteInputTokens"))
        for key in ("metrics", "trace", "performanceConfig", "serviceTier"):
            if data.get(key) is not None:
                self.call_metadata[key] = data[key]

    def _end(self) -> None:
        for index in list(self.blocks):
            self.blocks[index].extras["truncated"] = True  # cut off before its contentBlockStop
            self._stop_block(index)
        if not self._stopped:
            self.call_metadata["message_stop_missing"] = True
        self.finish()

    def on_close(self) -> None:
        if self._stopped:
            # messageStop came, metadata did not: what the reply holds is whole.
            self.call_metadata["metadata_missing"] = True
            self._end()
        elif self._metadata_seen:
            self._end()  # metadata without messageStop: noted by _end
        else:
            super().on_close()


def _index(data: dict[str, Any]) -> int:
    index = data.get("contentBlockIndex")
    if not isinstance(index, int):
        raise StreamProtocolError("an event without an integer contentBlockIndex", body=data)
    return index


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0
