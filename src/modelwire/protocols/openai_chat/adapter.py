"""OpenAI Chat Completions streaming (and OpenAI-compatible servers) -> events.

- ``delta.content`` -> one text block; ``delta.refusal`` -> a text block with
  ``refusal=True`` (and the normalized stop reason ``refusal``).
- reasoning -> one thinking block, wherever the server puts it: ``reasoning_content``
  (DeepSeek, Qwen, vLLM), ``reasoning`` (OpenRouter, Groq, newer vLLM). The block
  records ``reasoning_field`` so a formatter can send it back in the same field, and
  OpenRouter's structured ``reasoning_details`` (pieces merged by index).
- ``delta.tool_calls`` -> tool calls. Fragments are matched to their call by ``id``
  first, then by ``index``; a fragment with neither continues the last call. A call
  whose ``id`` is missing gets ``call_<index>``. Parallel calls may interleave freely.
- usage: the usage chunk (``choices: []``) or Groq's ``x_groq.usage``; ``input_tokens``
  is ``prompt_tokens`` (which includes cached tokens), ``cache_input_tokens`` is
  ``prompt_tokens_details.cached_tokens`` (or DeepSeek's ``prompt_cache_hit_tokens``).
- a chunk with an ``error`` object (OpenRouter, Groq's ``event: error``) -> typed error.
- ``n > 1``: choice 0 is decoded; the other choices' indexes are listed in
  ``MODEL_CALL_END.metadata["ignored_choices"]``.
- the call ends at ``data: [DONE]``; a stream that ends after a ``finish_reason`` but
  without ``[DONE]`` is accepted (noted in the metadata), one without either is an
  :class:`~modelwire.errors.IncompleteStreamError`.
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from ...adapters import OPTIONAL, BaseAdapter, Block, Delta, error_object, shape_problem
from ...errors import StreamProtocolError
from ...errors import error_from_body
from .._openai_errors import with_upstream_reason

__all__ = ["OpenAIChatAdapter", "STOP_REASONS"]

STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "content_filter",
}

_REASONING_FIELDS = ("reasoning_content", "reasoning")

# The fields of a chunk and of a choice that the adapter reads or knows to carry nothing of the
# reply (OpenAI's ChatCompletionChunk, Groq's x_groq, OpenRouter's provider and moderation,
# Azure's content filters, Mistral's padding ``p``, as recorded): any other one is noted as
# unread (see BaseAdapter.note_unread), on the full path only.
_CHUNK_KEYS = frozenset(
    {"id", "object", "created", "model", "choices", "usage", "system_fingerprint", "service_tier", "obfuscation"}
    | {"x_groq", "error", "provider", "prompt_filter_results", "moderation", "latency_checkpoint", "p", "citations"}
)
_CHOICE_KEYS = frozenset(
    {"index", "delta", "finish_reason", "logprobs", "content_filter_results", "native_finish_reason", "stop_reason"}
)


_TOOL = "choices[].delta.tool_calls[]"
SHAPE: dict[str, tuple[type, ...]] = {
    "id": (str, OPTIONAL),
    "model": (str, OPTIONAL),
    "choices": (list, OPTIONAL),
    "choices[]": (dict,),
    "choices[].index": (int, OPTIONAL),
    "choices[].finish_reason": (str, OPTIONAL),
    "choices[].delta": (dict, OPTIONAL),
    "choices[].delta.content": (str, OPTIONAL),
    "choices[].delta.refusal": (str, OPTIONAL),
    "choices[].delta.tool_calls": (list, OPTIONAL),
    _TOOL: (dict,),
    f"{_TOOL}.index": (int, OPTIONAL),
    f"{_TOOL}.id": (str, OPTIONAL),
    f"{_TOOL}.type": (str, OPTIONAL),
    f"{_TOOL}.function": (dict, OPTIONAL),
    f"{_TOOL}.function.name": (str, OPTIONAL),
    f"{_TOOL}.function.arguments": (str, OPTIONAL),
    "choices[].delta.reasoning_details": (list, OPTIONAL),
    "choices[].delta.reasoning_details[]": (dict,),
    "choices[].delta.reasoning_details[].index": (int, OPTIONAL),
    "choices[].delta.reasoning_details[].type": (str, OPTIONAL),
    "x_groq": (dict, OPTIONAL),
    "x_groq.usage": (dict, OPTIONAL),
    "usage": (dict, OPTIONAL),
    "usage.prompt_tokens": (int, OPTIONAL),
    "usage.completion_tokens": (int, OPTIONAL),
    "usage.prompt_tokens_details": (dict, OPTIONAL),
    "usage.completion_tokens_details": (dict, OPTIONAL),
}


# A chunk that is one choice's piece of text for the open text block, or of one open call's
# arguments (by its index), and nothing else: no role, refusal, reasoning, finish reason,
# logprobs, usage or error; a delta or call fragment with any other field takes the full
# path (see adapters._fast).
_FRAGMENT = "choices[0].delta.tool_calls[0]"
_NOTHING_ELSE = ("choices[0].logprobs", "choices[0].finish_reason", "usage", "x_groq")
DELTAS = (
    Delta(
        "choices[0].delta.content",
        fixed="text",
        kinds=("text",),
        empty=("choices[0].delta.tool_calls", *_NOTHING_ELSE),
        absent=("error",),
        only=("choices[0].delta",),
        read=("choices[0].index",),
        check="_usual",
    ),
    Delta(
        f"{_FRAGMENT}.function.arguments",
        key=f"{_FRAGMENT}.index",
        find="_open_call",
        kinds=("tool_call",),
        empty=("choices[0].delta.content", *_NOTHING_ELSE),
        absent=("error", f"{_FRAGMENT}.id", f"{_FRAGMENT}.type", f"{_FRAGMENT}.function.name"),
        only=("choices[0].delta", _FRAGMENT, f"{_FRAGMENT}.function"),
        read=("choices[0].index",),
        check="_usual",
    ),
)


class _Call:
    __slots__ = ("block", "id", "name", "pending", "index", "extras")

    def __init__(self, call_id: str, index: int | None) -> None:
        self.block: Block | None = None
        self.id = call_id
        self.name = ""
        self.pending: list[str] = []  # argument pieces that came before the name
        self.index = index
        self.extras: dict[str, Any] = {}


class OpenAIChatAdapter(BaseAdapter):
    protocol = "openai-chat"
    deltas = DELTAS

    def __init__(self, reply_id: str, *, choice_index: int = 0, **kwargs: Any) -> None:
        super().__init__(reply_id, **kwargs)
        self.choice_index = choice_index
        self._calls_by_id: dict[Any, _Call] = {}  # by id, and by (index, id)
        self._calls_by_index: dict[int, _Call] = {}
        self._calls: list[_Call] = []
        self._finish_reason: str | None = None
        self._refused = False
        self._details: dict[Any, dict[str, Any]] = {}

    def answered(self) -> bool:
        return self.finished or self._finish_reason is not None

    def model_from(self, data: dict[str, Any]) -> str | None:
        return data.get("model")

    def _usual(self, chunk: Any) -> bool:
        """The short path's chunk is this adapter's choice's, after the first chunk, while no
        reasoning is open (a piece of text closes it: the full path's)."""
        index = chunk.choices[0].index
        return (
            (0 if index is UNSET else index) == self.choice_index
            and "response_id" in self.call_metadata
            and "reasoning" not in self.blocks
        )

    def _open_call(self, index: Any) -> Block | None:
        call = self._calls_by_index.get(index)
        return call.block if call is not None else None

    def handle(self, data: dict[str, Any], event: str | None) -> None:
        meta = self.call_metadata
        if "response_id" not in meta and data.get("id"):
            _first_chunk(meta, data)
        if not _CHUNK_KEYS.issuperset(data):
            self._unread(data, _CHUNK_KEYS, "")
        for choice in data.get("choices") or ():
            if not _CHOICE_KEYS.issuperset(choice):
                self._unread(choice, _CHOICE_KEYS, "choices[].")
            if choice.get("index", 0) != self.choice_index:
                ignored = meta.setdefault("ignored_choices", [])
                if choice.get("index") not in ignored:
                    ignored.append(choice.get("index"))
                continue
            delta = choice.get("delta")
            if delta:
                self._on_delta(delta)
            if choice.get("logprobs"):
                meta.setdefault("logprobs", []).append(choice["logprobs"])
            if choice.get("finish_reason"):
                self._finished(choice["finish_reason"])
        usage = data.get("usage") or (data.get("x_groq") or {}).get("usage")
        if usage:
            self._set_usage(usage)
        if data.get("error") or event == "error":
            # OpenRouter's last chunk of a failed stream keeps the upstream's reason in
            # error.metadata.raw (see protocols._openai_errors): in the message.
            err = error_from_body(with_upstream_reason(data), self.protocol)
            err.body = data
            raise err

    def _finished(self, reason: str) -> None:
        """The choice's finish reason: its calls closed (cut off by the length limit, those
        still streaming have partial arguments, marked truncated), and every block."""
        if reason == "length":
            for call in self._calls:
                if call.block is not None and not call.block.closed:
                    call.block.extras["truncated"] = True
        self._finish_reason = reason
        self.provider_stop_reason = reason
        self.stop_reason = "refusal" if self._refused else STOP_REASONS.get(reason, "other")
        self._close_calls()
        self.close_all()

    @staticmethod
    def is_error_frame(data: dict[str, Any]) -> bool:
        """An error object with no choices. A chunk with both (OpenRouter's last chunk of a
        failed stream, https://openrouter.ai/docs/api/reference/streaming)
        is read by handle, which keeps the choices' content before raising."""
        return error_object(data) and not data.get("choices")

    def shape_problem(self, data: dict[str, Any], event: str | None) -> str | None:
        return shape_problem(data, SHAPE)

    def _set_usage(self, usage: dict[str, Any]) -> None:
        self.call_metadata["usage"] = usage
        self.input_tokens = usage.get("prompt_tokens") or 0
        self.output_tokens = usage.get("completion_tokens") or 0
        prompt_details = usage.get("prompt_tokens_details") or {}
        self.cache_input_tokens = prompt_details.get("cached_tokens") or usage.get("prompt_cache_hit_tokens") or 0
        completion_details = usage.get("completion_tokens_details") or {}
        self.reasoning_tokens = completion_details.get("reasoning_tokens") or 0

    def _on_delta(self, delta: dict[str, Any]) -> None:
        # One pass over the fields the delta has (usually one or two).
        for key, value in delta.items():
            if not value:
                continue
            if key in ("content", "tool_calls", "refusal") and "reasoning" in self.blocks:
                self.close_block("reasoning")  # the answer begins: the reasoning before it is done
            if key == "content":
                block = self.blocks.get("text") or self.open_block("text", "text")
                self.delta(block, value)
            elif key == "tool_calls":
                for tc in value:
                    self._tool_call(tc)
            elif key in _REASONING_FIELDS:
                if isinstance(value, str):
                    self.delta(self._thinking(key), value)
            elif key == "reasoning_details":
                self._merge_details(value)
            elif key == "refusal":
                self._refused = True
                refusal = self.blocks.get("refusal")
                if refusal is None:
                    refusal = self.open_block("refusal", "text")
                    refusal.extras["refusal"] = True
                self.delta(refusal, value)
            elif key == "function_call":
                # The legacy single function call: one call, id "call_0". A server that sends
                # it beside tool_calls (llama.cpp's, in every fragment) repeats the same call.
                if not delta.get("tool_calls"):
                    self._tool_call({"index": 0, "function": value})
            elif key != "role":
                self._unhandled(key, value)

    def _unread(self, data: dict[str, Any], known: frozenset[str], prefix: str) -> None:
        for key in data.keys() - known:
            self.note_unread(prefix + key, data[key])

    def _unhandled(self, key: str, value: Any) -> None:
        """Keep delta fields modelwire does not model (strings joined, objects listed)."""
        self.note_unread("choices[].delta." + key, value)
        seen = self.call_metadata.setdefault("unhandled_delta_fields", {})
        previous = seen.get(key)
        if isinstance(value, str) and isinstance(previous, str):
            seen[key] = previous + value
        elif isinstance(previous, list):
            previous.append(value)
        else:
            seen[key] = value if isinstance(value, str) else [value]

    def _thinking(self, field: str | None) -> Block:
        block = self.blocks.get("reasoning")
        if block is None:
            block = self.open_block("reasoning", "thinking")
            block.extras["provider_metadata"] = self.origin
        if field and "reasoning_field" not in block.extras:
            block.extras["reasoning_field"] = field
        return block

    def _merge_details(self, details: list[dict[str, Any]]) -> None:
        block = self._thinking(None)
        for detail in details:
            key = (detail.get("index", len(self._details)), detail.get("type"))
            have = self._details.get(key)
            if have is None:
                self._details[key] = dict(detail)
                continue
            for k, v in detail.items():
                if (
                    isinstance(v, str)
                    and isinstance(have.get(k), str)
                    and k in ("text", "summary", "data", "signature")
                ):
                    have[k] += v
                elif v is not None:
                    have[k] = v
        block.extras["reasoning_details"] = list(self._details.values())

    def _tool_call(self, tc: dict[str, Any]) -> None:
        index = tc.get("index")
        call = self._call_of(tc.get("id"), index)
        if index is not None:
            self._calls_by_index[index] = call
        fn = tc.get("function") or tc.get("custom") or {}
        if tc.get("type") and tc["type"] != "function":
            call.extras["tool_type"] = tc["type"]
        name = fn.get("name")
        if name and not call.name:
            call.name = name
        piece = fn.get("arguments")
        if piece is None:
            piece = fn.get("input")
        if call.block is None and call.name:
            call.block = self.open_block(("call", call), "tool_call", name=call.name, block_id=call.id)
            call.block.extras.update(call.extras)
            for early in call.pending:
                self.delta(call.block, early)
            call.pending = []
        if piece:
            if call.block is None:
                call.pending.append(piece)
            else:
                self.delta(call.block, piece)

    def _call_of(self, call_id: Any, index: Any) -> _Call:
        """The call a fragment continues (by its index and id, as the SDK's accumulator keys
        them; by its id alone, else its index alone, else the last one), or a new one. Two
        calls with one id and two indexes are two calls (the second streams with an id of
        its own: see ``open_block``). A fragment with neither id nor name is held until its
        name comes (some servers send the name late); a call still unnamed at the end is an
        error."""
        if call_id:
            call = self._calls_by_id.get(call_id)
            if call is not None and (index is None or call.index is None or call.index == index):
                return call
            call = self._calls_by_id.get((index, call_id))
            if call is not None:
                return call
        call = None
        if not call_id and index is not None:
            call = self._calls_by_index.get(index)
        elif not call_id and index is None and self._calls:
            call = self._calls[-1]
        if call is not None:
            return call
        if not call_id:
            n = index if index is not None else len(self._calls)
            call_id = f"call_{n}"
            while call_id in self._calls_by_id:
                call_id += "_"
        call = _Call(call_id, index)
        self._calls_by_id[call_id] = self._calls_by_id[(index, call_id)] = call
        self._calls.append(call)
        return call

    def _close_calls(self, strict: bool = True) -> None:
        for call in self._calls:
            if call.block is None:
                if strict:
                    raise StreamProtocolError(f"tool call {call.id!r} never got a name")
                # Failing anyway: keep what it sent where the metadata can show it.
                self.call_metadata.setdefault("unnamed_tool_calls", []).append(
                    {"id": call.id, "arguments": "".join(call.pending)}
                )
                call.block = Block("tool_call", call.id)
                call.block.closed = True
                continue
            if not call.block.has_delta and ("call", call) in self.blocks:
                self.delta(call.block, "{}")

    def on_done(self) -> None:
        self._close_calls()
        self.finish()

    def on_close(self) -> None:
        if self._finish_reason is not None:
            self.call_metadata["terminal_event_missing"] = True
            self._close_calls()
            self.finish()
        else:
            super().on_close()

    def on_fail(self, err: Any) -> None:
        self._close_calls(strict=False)


def _first_chunk(meta: dict[str, Any], data: dict[str, Any]) -> None:
    """What the first chunk says of the response: its id, fingerprint and tier, and on
    OpenRouter the upstream that served it."""
    meta["response_id"] = data["id"]
    for key in ("system_fingerprint", "service_tier"):
        if data.get(key) is not None:
            meta[key] = data[key]
    if data.get("provider") is not None:
        meta["upstream_provider"] = data["provider"]
