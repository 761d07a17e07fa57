"""Anthropic Messages streaming (``POST /v1/messages`` with ``stream: true``) -> events.

What maps to what:

- ``text`` blocks -> text blocks; ``citations_delta`` citations -> ``citations`` on the block.
- ``thinking`` -> thinking blocks with ``signature`` (from ``signature_delta``);
  ``redacted_thinking`` -> an empty thinking block with ``redacted_thinking_data``.
  Both record their origin (``provider_metadata``), which the Anthropic formatter
  checks before it replays thinking.
- ``tool_use`` -> tool calls (``input_json_delta`` pieces; a call with no argument
  pieces gets ``{}``, or the ``input`` its start carried). Extra fields of the block
  (such as ``caller``) ride along as extras.
- ``server_tool_use`` / ``mcp_tool_use`` -> tool calls marked ``server_side=True``;
  their ``*_tool_result`` blocks -> tool results whose ``metadata.provider_block`` is the
  block exactly as received (the formatter replays it), with a readable text output.
- any other block (``compaction``, ``container_upload``, types added later) -> a JSON
  data block holding the block as received, deltas merged in (``compaction_delta``'s
  ``content`` and ``encrypted_content`` joined). A compaction block's summary is also its
  ``summary`` extra, which a formatter sends where the block itself may not go.
- usage: ``message_start`` then ``message_delta`` (cumulative: later values replace
  earlier ones); the raw usage is kept in ``MODEL_CALL_END.metadata["usage"]``.
  ``input_tokens`` counts every prompt token: Anthropic's own count leaves out cache reads
  and writes, which are added (its figures stay in ``metadata["usage"]``), and so do the
  ``compaction`` entries of ``usage.iterations``, which the top-level figures leave out.
- stop reasons: ``end_turn``, ``max_tokens``, ``stop_sequence``, ``tool_use``,
  ``pause_turn``, ``compaction`` (paused after compacting), ``refusal`` (with ``stop_details`` in the metadata),
  ``model_context_window_exceeded``.
- ``event: error`` -> a typed error (``overloaded_error`` -> OverloadedError ...).
"""

from __future__ import annotations

from typing import Any


from ...errors import StreamProtocolError
from ...adapters import OPTIONAL, BaseAdapter, Delta, error_object, json_text, shape_problem
from ...errors import error_from_body

__all__ = ["AnthropicAdapter", "STOP_REASONS"]

STOP_REASONS = {
    "end_turn": "end_turn",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "tool_use": "tool_use",
    "pause_turn": "pause_turn",
    # pause_after_compaction (the anthropic SDK's BetaStopReason)
    "compaction": "compaction",
    "refusal": "refusal",
    "model_context_window_exceeded": "max_tokens",
}

_SERVER_CALLS = {"server_tool_use", "mcp_tool_use"}
# What the adapter reads of each event (checked when it failed: see BaseAdapter.shape_problem).
_USAGE = {
    "input_tokens": (int, OPTIONAL),
    "output_tokens": (int, OPTIONAL),
    "cache_read_input_tokens": (int, OPTIONAL),
    "cache_creation_input_tokens": (int, OPTIONAL),
}
_DELTA_FIELDS: dict[str, tuple[str, type]] = {  # a delta type: the field it carries, of what type
    "text_delta": ("text", str),
    "input_json_delta": ("partial_json", str),
    "thinking_delta": ("thinking", str),
    "signature_delta": ("signature", str),
    "citations_delta": ("citation", dict),
}
SHAPES: dict[str, dict[str, tuple[type, ...]]] = {
    "message_start": {
        "message": (dict,),
        "message.id": (str, OPTIONAL),
        "message.model": (str, OPTIONAL),
        "message.content": (list, OPTIONAL),
        "message.content[]": (dict,),
        "message.usage": (dict, OPTIONAL),
        **{f"message.usage.{k}": v for k, v in _USAGE.items()},
    },
    "content_block_start": {
        "index": (int,),
        "content_block": (dict,),
        "content_block.type": (str,),
        "content_block.id": (str, OPTIONAL),
        "content_block.name": (str, OPTIONAL),
        "content_block.text": (str, OPTIONAL),
        "content_block.thinking": (str, OPTIONAL),
        "content_block.signature": (str, OPTIONAL),
        "content_block.citations": (list, OPTIONAL),
        "content_block.data": (str, OPTIONAL),
        "content_block.tool_use_id": (str, OPTIONAL),
    },
    "content_block_delta": {
        "index": (int,),
        "delta": (dict,),
        "delta.type": (str,),
        "delta.text": (str, OPTIONAL),
        "delta.thinking": (str, OPTIONAL),
        "delta.partial_json": (str, OPTIONAL),
        "delta.signature": (str, OPTIONAL),
    },
    "content_block_stop": {"index": (int,)},
    "message_delta": {
        "delta": (dict,),
        "delta.stop_reason": (str, OPTIONAL),
        "usage": (dict, OPTIONAL),
        **{f"usage.{k}": v for k, v in _USAGE.items()},
    },
}
_CALL_FIELDS = {"type", "id", "name", "input"}
# message_delta's fields (the SDK's RawMessageDeltaEvent): another one is noted as unread.
_MESSAGE_DELTA_KEYS = frozenset({"type", "delta", "usage", "context_management"})


# The three deltas that stream, each piece under its own name (see adapters._fast).
_DELTA = "content_block_delta"
DELTAS = (
    Delta("delta.text", key="index", kinds=("text",), when={"type": _DELTA, "delta.type": "text_delta"}),
    Delta("delta.thinking", key="index", kinds=("thinking",), when={"type": _DELTA, "delta.type": "thinking_delta"}),
    Delta(
        "delta.partial_json", key="index", kinds=("tool_call",), when={"type": _DELTA, "delta.type": "input_json_delta"}
    ),
)


class AnthropicAdapter(BaseAdapter):
    protocol = "anthropic"
    input_counts_cache = False  # its input_tokens leaves out cache reads and writes (added at the end)
    deltas = DELTAS

    def __init__(self, reply_id: str, **kwargs: Any) -> None:
        super().__init__(reply_id, **kwargs)
        self._raw: dict[int, dict[str, Any]] = {}  # index -> raw block (results, unknown blocks)
        self._start_input: dict[int, Any] = {}
        self._call_names: dict[str, str] = {}
        self._usage: dict[str, Any] = {}
        self._message_started = False

    def answered(self) -> bool:
        return self.finished or self.provider_stop_reason is not None

    def model_from(self, data: dict[str, Any]) -> str | None:
        message = data.get("message")
        model = message.get("model") if isinstance(message, dict) else None
        return model if isinstance(model, str) else None

    def check_first(self, data: dict[str, Any], event: str | None) -> None:
        # Strict: the id, the model and the input tokens come in message_start. A stream
        # that begins otherwise is not an Anthropic stream (ping and error may come first).
        if data.get("type") not in ("message_start", "ping", "error") and "error" not in data:
            raise StreamProtocolError(
                f"an anthropic stream must begin with message_start, not {str(data.get('type'))[:40]!r}", body=data
            )

    # Its errors: an ``event: error`` frame, ``{"type": "error", "error": {...}}`` (what the
    # anthropic SDK's _streaming.py raises on), or a proxy's error object: the kit's two.
    is_error_frame = staticmethod(error_object)

    def shape_problem(self, data: dict[str, Any], event: str | None) -> str | None:
        spec = SHAPES.get(data.get("type"))  # type: ignore[arg-type]
        problem = shape_problem(data, spec) if spec else None
        if problem is None and data.get("type") == "content_block_delta":
            wanted = _DELTA_FIELDS.get(data["delta"].get("type"))
            if wanted is not None:
                field, kind = wanted
                if not isinstance(data["delta"].get(field), kind):
                    problem = f"a {data['delta']['type']} without its {field} {kind.__name__}"
        return problem

    def handle(self, data: dict[str, Any], event: str | None) -> None:
        etype = data.get("type")
        if not self._message_started and etype not in ("message_start", "ping", "error"):
            raise StreamProtocolError(f"{str(etype)[:40]!r} before message_start", body=data)
        if etype == "content_block_delta":
            self._on_delta(data)
        elif etype == "content_block_start":
            self._on_start(data["index"], data["content_block"])
        elif etype == "content_block_stop":
            self._on_stop(data["index"])
        elif etype == "ping":
            pass
        elif etype == "message_start":
            self._on_message_start(data)
        elif etype == "message_delta":
            self._on_message_delta(data)
        elif etype == "message_stop":
            for key, block in list(self.blocks.items()):
                # Cut off (for example by max_tokens) before its content_block_stop.
                block.extras["truncated"] = True
                self._on_stop(key)
            self.finish()
        elif etype == "error":
            raise error_from_body(data, self.protocol)
        else:
            self.call_metadata.setdefault("unhandled_events", []).append(data)
            self.note_unread(str(etype), data)

    def on_close(self) -> None:
        if self.provider_stop_reason is not None:
            # message_delta gave the stop reason and the usage; only message_stop is
            # missing (the official SDK accepts such a stream too). Note it and finish.
            self.call_metadata["terminal_event_missing"] = True
            self.handle({"type": "message_stop"}, None)
        else:
            super().on_close()

    def _set_usage(self, usage: dict[str, Any]) -> None:
        self._usage.update(usage)
        self.call_metadata["usage"] = self._usage
        u = self._usage
        self.input_tokens = u.get("input_tokens") or 0
        self.output_tokens = u.get("output_tokens") or 0
        self.cache_input_tokens = u.get("cache_read_input_tokens") or 0
        self.cache_creation_input_tokens = u.get("cache_creation_input_tokens") or 0
        if u.get("iterations"):
            self._add_compaction_usage(u["iterations"])

    def _add_compaction_usage(self, iterations: Any) -> None:
        """Add what compacting cost: "A `compaction` entry's tokens are not included in the
        top-level `usage` fields" (the anthropic SDK's BetaUsage.iterations)."""
        for entry in iterations if isinstance(iterations, list) else ():
            if isinstance(entry, dict) and entry.get("type") == "compaction":
                for name, key in (
                    ("input_tokens", "input_tokens"),
                    ("output_tokens", "output_tokens"),
                    ("cache_input_tokens", "cache_read_input_tokens"),
                    ("cache_creation_input_tokens", "cache_creation_input_tokens"),
                ):
                    value = entry.get(key)
                    if isinstance(value, int) and not isinstance(value, bool):
                        setattr(self, name, getattr(self, name) + value)

    def _on_start(self, index: int, cb: dict[str, Any]) -> None:
        btype = cb.get("type")
        if index in self.blocks:
            raise StreamProtocolError(f"content block {index} started twice", body=cb)
        if btype == "text":
            block = self.open_block(index, "text")
            if cb.get("citations"):
                block.extras["citations"] = list(cb["citations"])
            self.delta(block, cb.get("text") or "")
        elif btype == "thinking":
            block = self.open_block(index, "thinking")
            block.extras["provider_metadata"] = self.thinking_origin
            if cb.get("signature"):
                if not isinstance(cb["signature"], str):  # kept, and added to by signature_delta
                    raise StreamProtocolError("a thinking block whose signature is not a string", body=cb)
                block.extras["signature"] = cb["signature"]
            self.delta(block, cb.get("thinking") or "")
        elif btype == "redacted_thinking":
            block = self.open_block(index, "thinking")
            block.extras.update(provider_metadata=self.thinking_origin, redacted_thinking_data=cb.get("data", ""))
        elif btype == "tool_use" or btype in _SERVER_CALLS:
            block = self.open_block(index, "tool_call", name=cb.get("name", ""), block_id=cb.get("id"))
            block.extras.update({k: v for k, v in cb.items() if k not in _CALL_FIELDS})
            if btype != "tool_use":
                block.extras.update(server_side=True, provider_metadata=self.origin, provider_block_type=btype)
            self._call_names[block.id] = block.name
            self._start_input[index] = cb.get("input")
        elif isinstance(btype, str) and btype.endswith("_tool_result") and cb.get("tool_use_id"):
            call_id = cb["tool_use_id"]
            self.open_block(index, "tool_result", name=self._call_names.get(call_id, btype), block_id=call_id)
            self._raw[index] = dict(cb)
        else:
            self._raw[index] = dict(cb)

    def _on_message_start(self, data: dict[str, Any]) -> None:
        if self._message_started:
            raise StreamProtocolError("a second message_start in one anthropic stream", body=data)
        self._message_started = True
        message = data["message"]
        self.call_metadata["response_id"] = message.get("id")
        self._set_usage(message.get("usage") or {})
        for i, block in enumerate(message.get("content") or ()):
            # A message that starts with content (rare): each block is complete.
            self._on_start(-1 - i, block)
            self._on_stop(-1 - i)

    def _on_message_delta(self, data: dict[str, Any]) -> None:
        """The stop reason and what comes with it, and the usage so far."""
        if not _MESSAGE_DELTA_KEYS.issuperset(data):  # where a renamed usage would go
            for key in data.keys() - _MESSAGE_DELTA_KEYS:
                self.note_unread(f"message_delta.{key}", data[key])
        delta = data.get("delta") or {}
        if delta.get("stop_reason"):
            self.provider_stop_reason = delta["stop_reason"]
            self.stop_reason = STOP_REASONS.get(delta["stop_reason"], "other")
        for key in ("stop_sequence", "stop_details", "container"):
            if delta.get(key) is not None:
                self.call_metadata[key] = delta[key]
        if data.get("context_management") is not None:
            # What context editing cleared ({"applied_edits": [...]}, the anthropic SDK's
            # BetaContextManagementResponse), kept as it came.
            self.call_metadata["context_management"] = data["context_management"]
        self._set_usage(data.get("usage") or {})

    def _on_delta(self, data: dict[str, Any]) -> None:
        index = data["index"]
        delta = data["delta"]
        dtype = delta.get("type")
        block = self.blocks.get(index)
        if block is None:
            if index in self._raw:
                _merge(self._raw[index], delta)
                self.note_unread(f"content_block.{self._raw[index].get('type')}", delta)
                return
            raise StreamProtocolError(f"{dtype} for content block {index}, which was never started", body=data)
        if dtype == "text_delta":
            self.delta(block, delta["text"])
        elif dtype == "input_json_delta":
            self.delta(block, delta["partial_json"])
        elif dtype == "thinking_delta":
            self.delta(block, delta["thinking"])
        elif dtype == "signature_delta":
            block.extras["signature"] = block.extras.get("signature", "") + delta["signature"]
        elif dtype == "citations_delta":
            block.extras.setdefault("citations", []).append(delta["citation"])
        elif index in self._raw:
            _merge(self._raw[index], delta)
        else:
            block.extras.setdefault("provider_deltas", []).append(delta)
            self.note_unread(f"content_block_delta.{dtype}", delta)

    def _on_stop(self, index: int) -> None:
        block = self.blocks.get(index)
        raw = self._raw.pop(index, None)
        if block is None:
            if raw is None:
                raise StreamProtocolError(f"content_block_stop for content block {index}, which was never started")
            # A compaction block's content is its summary in plain text (the anthropic SDK's
            # BetaCompactionBlock.content; null when the compaction failed).
            summary = raw.get("content") if raw.get("type") == "compaction" else None
            self.provider_block(
                raw, name=f"anthropic.{raw.get('type')}", summary=summary if isinstance(summary, str) else None
            )
            return
        if block.kind == "tool_call" and not block.has_delta:
            start_input = self._start_input.get(index)
            self.delta(block, json_text(start_input) if start_input else "{}")
        if block.kind == "tool_result":
            assert raw is not None
            self.delta(block, _result_text(raw.get("content")))
            state = "error" if _is_error(raw) else "success"
            self.close_block(index, state=state, metadata={"provider_metadata": self.origin, "provider_block": raw})
            return
        self.close_block(index)


def _merge(raw: dict[str, Any], delta: dict[str, Any]) -> None:
    for key, value in delta.items():
        if key == "type":
            continue
        if isinstance(value, str) and isinstance(raw.get(key), str):
            raw[key] += value
        else:
            raw[key] = value


def _is_error(raw: dict[str, Any]) -> bool:
    content = raw.get("content")
    if raw.get("is_error"):
        return True
    return isinstance(content, dict) and str(content.get("type", "")).endswith("_error")


def _result_text(content: Any) -> str:
    """A readable rendering of a server tool's result (the raw block is kept beside it)."""
    if isinstance(content, str):
        return content
    if (
        isinstance(content, list)
        and content
        and all(isinstance(c, dict) and isinstance(c.get("url"), str) for c in content)
    ):
        return "\n".join(f"{c.get('title') or c['url']} <{c['url']}>" for c in content)
    if isinstance(content, list) and all(
        isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text", ""), str) for c in content
    ):
        return "".join(c.get("text", "") for c in content)
    return json_text(content)
