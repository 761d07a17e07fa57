"""Ollama's native chat stream (``POST /api/chat``, NDJSON) -> events.

Every line is ``{"model", "created_at", "message": {"role", "content", "thinking",
"tool_calls"}, "done": false}``; the last has ``done: true``, ``done_reason`` (``stop``,
``length``, ``load`` ...) and the counts.

- ``message.thinking`` -> one thinking block, ``message.content`` -> one text block;
- ``message.tool_calls`` -> whole calls (``{"function": {"name", "arguments": {...}}}``).
  Ollama gives no ids (newer servers may: they are kept); modelwire gives each call one
  of its own, unique in the conversation, so a result can answer it;
- usage: ``prompt_eval_count`` is the input, ``eval_count`` the output; the durations go
  in ``MODEL_CALL_END.metadata`` (nanoseconds, as Ollama reports them);
- ``{"error": "..."}`` (a model that is not pulled, a load failure) -> a typed error with
  Ollama's text;
- the call ends at the ``done: true`` line; a stream that ends before it is an
  :class:`~modelwire.errors.IncompleteStreamError`.
"""

from __future__ import annotations

from typing import Any


from ...adapters import OPTIONAL, BaseAdapter, Delta, error_object, json_text, shape_problem
from ...errors import StreamProtocolError

__all__ = ["OllamaAdapter", "STOP_REASONS"]

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens"}

SHAPE: dict[str, tuple[type, ...]] = {
    "model": (str, OPTIONAL),
    "done": (bool, OPTIONAL),
    "done_reason": (str, OPTIONAL),
    "message": (dict, OPTIONAL),
    "message.content": (str, OPTIONAL),
    "message.thinking": (str, OPTIONAL),
    "message.tool_calls": (list, OPTIONAL),
    "message.tool_calls[]": (dict,),
    "message.tool_calls[].function": (dict,),
    "message.tool_calls[].function.name": (str,),
    "message.tool_calls[].function.arguments": (dict, str, OPTIONAL),
    "message.images": (list, OPTIONAL),
    "prompt_eval_count": (int, OPTIONAL),
    "eval_count": (int, OPTIONAL),
}


# A piece of the text or of the thinking already open (never both: they are never open
# together), on a line that is nothing else (see adapters._fast).
_NOTHING_ELSE = ("message.tool_calls", "done")
DELTAS = (
    Delta(
        "message.content",
        fixed="text",
        kinds=("text",),
        empty=("message.thinking", *_NOTHING_ELSE),
        absent=("error",),
    ),
    Delta(
        "message.thinking",
        fixed="thinking",
        kinds=("thinking",),
        empty=("message.content", *_NOTHING_ELSE),
        absent=("error",),
    ),
)

_DURATIONS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")


class OllamaAdapter(BaseAdapter):
    protocol = "ollama"
    deltas = DELTAS

    def __init__(self, reply_id: str, **kwargs: Any) -> None:
        super().__init__(reply_id, **kwargs)
        self._calls = 0

    def model_from(self, data: dict[str, Any]) -> str | None:
        model = data.get("model")
        return model if isinstance(model, str) else None

    # Its errors are ``{"error": "..."}`` (a model that is not pulled, a load failure:
    # https://docs.ollama.com/api/errors, mid-stream too), the kit's shape.
    is_error_frame = staticmethod(error_object)

    def shape_problem(self, data: dict[str, Any], event: str | None) -> str | None:
        return shape_problem(data, SHAPE)

    def handle(self, data: dict[str, Any], event: str | None) -> None:
        message = data.get("message")
        if message is not None:
            if not isinstance(message, dict):
                raise StreamProtocolError(f"ollama: message is {type(message).__name__}, not an object")
            thinking = message.get("thinking")
            if thinking:
                block = self.blocks.get("thinking")
                if block is None:
                    self._close_text()
                    block = self.open_block("thinking", "thinking")
                    block.extras["provider_metadata"] = self.origin
                self.delta(block, thinking)
            content = message.get("content")
            if content:
                if "thinking" in self.blocks:
                    self.close_block("thinking")
                block = self.blocks.get("text")
                if block is None:
                    block = self.open_block("text", "text")
                self.delta(block, content)
            for call in message.get("tool_calls") or ():
                self._tool_call(call)
        if data.get("done") is True:
            self._done(data)

    def _done(self, data: dict[str, Any]) -> None:
        """The last line: the stop reason, the counts and durations, then the call's end."""
        reason = data.get("done_reason")
        self.provider_stop_reason = reason if isinstance(reason, str) else None
        self.stop_reason = (
            "tool_use" if self._calls and reason in (None, "stop") else STOP_REASONS.get(reason or "stop", "other")
        )
        self.input_tokens = data.get("prompt_eval_count") or 0
        self.output_tokens = data.get("eval_count") or 0
        counts = {k: data[k] for k in ("prompt_eval_count", "eval_count") if k in data}
        if counts:
            self.call_metadata["usage"] = counts  # as every protocol keeps the provider's own figures
        for key in _DURATIONS:
            if isinstance(data.get(key), int):
                self.call_metadata[key] = data[key]
        self.finish()

    def _close_text(self) -> None:
        if "text" in self.blocks:
            self.close_block("text")

    def _tool_call(self, call: Any) -> None:
        if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
            raise StreamProtocolError(f"ollama: a tool call that is not {{'function': {{...}}}}: {str(call)[:120]}")
        function = call["function"]
        name = function.get("name")
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            text = arguments  # a server that sends the arguments as JSON text
        elif isinstance(arguments, dict) or arguments is None:
            text = json_text(arguments or {})
        else:
            raise StreamProtocolError(f"ollama: tool call arguments are {type(arguments).__name__}, not an object")
        self._close_text()
        if "thinking" in self.blocks:
            self.close_block("thinking")
        call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else f"call_{self.new_id()}"
        self._calls += 1
        self.whole_call(name, call_id, text)
