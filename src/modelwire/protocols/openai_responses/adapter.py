"""OpenAI Responses streaming (``POST /v1/responses`` with ``stream: true``) -> events.

- ``message`` items: each ``output_text`` content part -> a text block (``item_id`` and
  the part's ``annotations`` kept on it); ``refusal`` parts -> text blocks with
  ``refusal=True``.
- ``reasoning`` items: each summary part -> a thinking block, and each raw
  ``reasoning_text`` content part -> a thinking block (``reasoning_part`` says which, with
  its index). Every block carries ``reasoning_item_id``; the first one also carries the
  item's ``encrypted_content``. A reasoning item with no text still gives one (empty)
  thinking block, because the API wants the item sent back. Blocks of an item end when
  the item is done, when all of this is known.
- ``function_call`` / ``custom_tool_call`` items -> tool calls with ``id = call_id`` and the
  item id in ``item_id``; arguments from ``function_call_arguments.delta``, or from
  ``.done`` when no delta came.
- other ``*_call`` items (``web_search_call``, ``file_search_call``, ``code_interpreter_call``,
  ``image_generation_call``, ``mcp_call`` ...) run on OpenAI's side: a tool call marked
  ``server_side=True`` plus its tool result, whose ``metadata.provider_block`` is the
  finished item as received (the formatter replays it).
- any other item type -> a JSON data block holding the item as received.
- usage from ``response.completed`` / ``response.incomplete``; stop reason ``end_turn``
  (``tool_use`` when the response holds function calls), ``max_tokens`` /
  ``content_filter`` from ``incomplete_details.reason``.
- ``error`` and ``response.failed`` -> typed errors; a stream that ends before
  ``response.completed`` / ``.incomplete`` -> :class:`~modelwire.errors.IncompleteStreamError`.
"""

from __future__ import annotations

from typing import Any


from ...errors import IncompleteStreamError, StreamProtocolError
from ...adapters import OPTIONAL, BaseAdapter, Const, Delta, error_object, json_text, shape_problem
from ...errors import error_from_body

__all__ = ["OpenAIResponsesAdapter"]


# A text delta of an item's open content part, or an arguments delta of an open call; the
# fields it does not name (logprobs, obfuscation) are skipped (see adapters._fast).
DELTAS = (
    Delta(
        "delta",
        key=("item_id", Const("content"), "content_index"),
        kinds=("text",),
        when={"type": "response.output_text.delta"},
        absent=("summary_index",),
        keep={"sequence_number": "sequence"},
    ),
    Delta(
        "delta",
        key=(Const("call"), "item_id"),
        kinds=("tool_call",),
        when={"type": "response.function_call_arguments.delta"},
        keep={"sequence_number": "sequence"},
    ),
)

_CALL_ITEMS = {"function_call", "custom_tool_call"}
_INCOMPLETE = {"max_output_tokens": "max_tokens", "content_filter": "content_filter"}


SHAPE: dict[str, tuple[type, ...]] = {
    "type": (str, OPTIONAL),
    "output_index": (int, OPTIONAL),
    "content_index": (int, OPTIONAL),
    "summary_index": (int, OPTIONAL),
    "item_id": (str, OPTIONAL),
    "delta": (str, OPTIONAL),
    "item": (dict, OPTIONAL),
    "item.type": (str, OPTIONAL),
    "item.id": (str, OPTIONAL),
    "part": (dict, OPTIONAL),
    "part.type": (str, OPTIONAL),
    "part.annotations": (list, OPTIONAL),
    "response": (dict, OPTIONAL),
    "response.output": (list, OPTIONAL),
    "response.output[]": (dict,),
    "response.usage": (dict, OPTIONAL),
    "response.usage.input_tokens_details": (dict, OPTIONAL),
    "response.usage.output_tokens_details": (dict, OPTIONAL),
    "response.incomplete_details": (dict, OPTIONAL),
    "response.status": (str, OPTIONAL),
}


_REQUIRED: dict[str, tuple[tuple[str, type], ...]] = {
    "response.output_item.added": (("item", dict),),
    "response.output_item.done": (("item", dict),),
    "response.content_part.added": (("part", dict),),
    "response.completed": (("response", dict),),
    "response.incomplete": (("response", dict),),
}


class _Item:
    __slots__ = ("id", "type", "raw", "keys", "call_key", "output_index")

    def __init__(self, raw: dict[str, Any], output_index: Any = -1) -> None:
        self.id = raw.get("id") or ""
        self.type = raw.get("type") or ""
        # Checked once here, where an item enters: its fields key the adapter's maps later.
        if not isinstance(self.id, str) or not isinstance(self.type, str):
            raise StreamProtocolError("an output item whose id or type is not a string", body=raw)
        if not isinstance(output_index, int) or isinstance(output_index, bool):
            raise StreamProtocolError(f"an output_index of type {type(output_index).__name__}", body=raw)
        self.output_index = output_index
        self.raw = raw
        self.keys: list[Any] = []  # block keys, in order
        self.call_key: Any = None


class OpenAIResponsesAdapter(BaseAdapter):
    protocol = "openai-responses"
    deltas = DELTAS

    def __init__(self, reply_id: str, **kwargs: Any) -> None:
        super().__init__(reply_id, **kwargs)
        self._items: dict[str, _Item] = {}
        self._by_output: dict[int, _Item] = {}
        self._has_calls = False
        self._reasoning: list[_Item] = []  # reasoning items done, blocks still open
        self.sequence: int | None = None  # the last event's sequence_number

    def model_from(self, data: dict[str, Any]) -> str | None:
        response = data.get("response")
        model = response.get("model") if isinstance(response, dict) else None
        return model if isinstance(model, str) else None

    # -- dispatch ---------------------------------------------------------------------

    # A proxy's error object, or a whole answer whose ``error`` is set (a Response always
    # carries the field, null unless it failed); its own ``error`` event is a handler's.
    is_error_frame = staticmethod(error_object)

    def shape_problem(self, data: dict[str, Any], event: str | None) -> str | None:
        problem = shape_problem(data, SHAPE)
        if problem is None:
            etype = str(data.get("type") or event or "")
            required = (
                _REQUIRED.get(etype) or (("delta", str),) if etype.endswith(".delta") else _REQUIRED.get(etype, ())
            )
            for field, kind in required:
                if not isinstance(data.get(field), kind):
                    return f"{etype} without its {field}"
            if etype.startswith("response.output_item") and not isinstance(data["item"].get("type"), str):
                return f"{etype} with an item that has no type"
        return problem

    def handle(self, data: dict[str, Any], event: str | None) -> None:
        etype = data.get("type", event)
        if not isinstance(etype, str) or not etype:
            # null, a number, "": no event can be told from it, and skipping it would lose
            # what it carries (a text delta).
            raise StreamProtocolError(
                f"an event whose type is {etype!r}" if etype is not None or "type" in data else "an event with no type",
                body=data,
            )
        sequence = data.get("sequence_number")
        if sequence is not None:
            self.sequence = sequence  # the cursor a broken background stream resumes from
        if "type" not in data:
            data["type"] = etype  # named by the SSE event line only: the handlers read it here
        handler = _HANDLERS.get(etype)
        if handler is not None:
            handler(self, data)
        elif etype.endswith(
            (".in_progress", ".searching", ".interpreting", ".generating", ".partial_image", ".completed")
        ):
            pass  # progress of a server-side call; its finished item carries the result
        else:
            counts = self.call_metadata.setdefault("unhandled_events", {})
            counts[etype] = counts.get(etype, 0) + 1
            self.note_unread(etype, data)

    def _item(self, data: dict[str, Any]) -> _Item:
        item = self._items.get(data.get("item_id") or "")
        if item is None:
            item = self._by_output.get(data.get("output_index", -1))
        if item is None:
            raise StreamProtocolError(f"{data.get('type')} for an output item that was never added", body=data)
        return item

    def _response(self, data: dict[str, Any]) -> None:
        response = data.get("response") or {}
        meta = self.call_metadata
        if response.get("id"):
            meta["response_id"] = response["id"]
        for key in ("status", "service_tier"):
            if response.get(key) is not None:
                meta[key] = response[key]
        if response.get("background"):
            meta["background"] = True

    # -- items ------------------------------------------------------------------------

    def _item_added(self, data: dict[str, Any]) -> None:
        raw = data["item"]
        item = _Item(raw, data.get("output_index", -1))
        if item.id not in self._items and item.id:
            self.call_metadata.setdefault("output_items", []).append(item.id)  # for a later previous_response_id
        self._items[item.id] = item
        if "output_index" in data:
            self._by_output[item.output_index] = item
        if item.type in _CALL_ITEMS:
            self._has_calls = True
            call_id = raw.get("call_id") or item.id
            key = ("call", item.id)
            block = self.open_block(key, "tool_call", name=raw.get("name", ""), block_id=call_id)
            block.extras["item_id"] = item.id
            if item.type != "function_call":
                block.extras["tool_type"] = item.type
            item.call_key = key
            initial = raw.get("arguments") if item.type == "function_call" else raw.get("input")
            if initial:
                self.delta(block, initial)

    def _part_block(self, item: _Item, kind: str, index: int, refusal: bool = False) -> Any:
        key = (item.id, kind, index)
        block = self.blocks.get(key)
        if block is None:
            if item.type == "reasoning":
                block = self.open_block(key, "thinking")
                block.extras.update(
                    provider_metadata=self.origin,
                    reasoning_part="summary" if kind == "summary" else "content",
                    **({"summary_index": index} if kind == "summary" else {"content_index": index}),
                )
            else:
                block = self.open_block(key, "text")
                if item.id:
                    block.extras["item_id"] = item.id
                if refusal:
                    block.extras["refusal"] = True
            item.keys.append(key)
        return block

    def _part_added(self, data: dict[str, Any]) -> None:
        item = self._item(data)
        part = data.get("part") or {}
        ptype = part.get("type")
        block = self._part_block(item, "content", data.get("content_index", 0), refusal=ptype == "refusal")
        self.delta(block, part.get("text") or part.get("refusal") or "")

    def _text_delta(self, data: dict[str, Any]) -> None:
        # The most frequent event: the item and its open block are found in one lookup each.
        item = self._items.get(data.get("item_id") or "")
        if item is None:
            item = self._item(data)
        if "summary_index" in data:
            kind, index = "summary", data["summary_index"]
        else:
            kind, index = "content", data.get("content_index", 0)
        block = self.blocks.get((item.id, kind, index))
        if block is None:
            block = self._part_block(item, kind, index, refusal=data["type"].startswith("response.refusal"))
        self.delta(block, data["delta"])

    def _text_done(self, data: dict[str, Any]) -> None:
        item = self._item(data)
        kind = "summary" if "summary_index" in data else "content"
        index = data.get("summary_index", data.get("content_index", 0))
        block = self._part_block(item, kind, index, refusal=data["type"].startswith("response.refusal"))
        if not block.has_delta:
            self.delta(block, data.get("text") or data.get("refusal") or "")

    def _summary_part_added(self, data: dict[str, Any]) -> None:
        item = self._item(data)
        block = self._part_block(item, "summary", data.get("summary_index", 0))
        self.delta(block, (data.get("part") or {}).get("text") or "")

    def _annotation(self, data: dict[str, Any]) -> None:
        item = self._item(data)
        block = self._part_block(item, "content", data.get("content_index", 0))
        block.extras.setdefault("annotations", []).append(data["annotation"])

    def _part_done(self, data: dict[str, Any]) -> None:
        part = data.get("part") or {}
        if part.get("annotations"):
            item = self._item(data)
            block = self._part_block(item, "content", data.get("content_index", 0))
            block.extras["annotations"] = list(part["annotations"])

    def _args_delta(self, data: dict[str, Any]) -> None:
        item = self._item(data)
        if item.call_key is None or item.call_key not in self.blocks:
            raise StreamProtocolError(f"{data.get('type')} for an item that is not an open call", body=data)
        self.delta(self.blocks[item.call_key], data["delta"])

    def _args_done(self, data: dict[str, Any]) -> None:
        item = self._item(data)
        block = self.blocks.get(item.call_key)
        if block is not None and not block.has_delta:
            self.delta(block, data.get("arguments") or data.get("input") or "")

    def _item_done(self, data: dict[str, Any]) -> None:
        raw = data["item"]
        item = self._items.get(raw.get("id") or "") or self._by_output.get(data.get("output_index", -1))
        if item is None:
            item = _Item(raw)
        item.raw = raw
        if item.type in _CALL_ITEMS:
            block = self.blocks.get(item.call_key)
            if block is not None:
                if not block.has_delta:
                    self.delta(block, raw.get("arguments") or raw.get("input") or "{}")
                if raw.get("status"):
                    block.extras["status"] = raw["status"]
                    if raw["status"] == "incomplete":
                        block.extras["truncated"] = True
                self.close_block(item.call_key)
        elif item.type == "reasoning":
            self._reasoning_done(item, raw)
        elif item.type == "message":
            for key in item.keys:
                self.close_block(key)
        elif item.type.endswith("_call"):
            self._server_call(raw)
        else:
            for key in item.keys:
                self.close_block(key)
            self.provider_block(raw, name=f"openai-responses.{item.type}")

    def _reasoning_done(self, item: _Item, raw: dict[str, Any]) -> None:
        if not item.keys:
            # No summary and no raw text: keep the item anyway, it must be sent back.
            self._part_block(item, "summary", 0)
        # The blocks end with the response: its final output may carry a newer
        # encrypted_content, or (some compatible servers) the item's final id.
        self._reasoning.append(item)

    def _close_reasoning(self, output: list[Any]) -> None:
        for item in self._reasoning:
            raw = item.raw
            final = output[item.output_index] if 0 <= item.output_index < len(output) else None
            if isinstance(final, dict) and final.get("type") == "reasoning":
                raw = final
            for i, key in enumerate(item.keys):
                block = self.blocks.get(key)
                if block is None:
                    continue
                block.extras["reasoning_item_id"] = raw.get("id") or item.id
                if i == 0:
                    # The whole item, under AgentScope's name: its encrypted_content is
                    # what the API needs back; once per item is enough.
                    block.extras["reasoning_item_raw"] = raw
                self.close_block(key)
        self._reasoning = []

    def _server_call(self, raw: dict[str, Any]) -> None:
        call_id = raw.get("id") or self.new_id()
        name = raw["type"][: -len("_call")]
        key = ("server", call_id)
        action = raw.get("action") or raw.get("arguments") or raw.get("code") or {}
        extras = {"server_side": True, "provider_metadata": self.origin, "provider_block_type": raw["type"]}
        call_id = self.whole_call(name, call_id, action if isinstance(action, str) else json_text(action), extras)
        result = self.open_block(key, "tool_result", name=name, block_id=call_id)
        self.delta(result, _describe(raw))
        state = "success" if raw.get("status") in (None, "completed") else "error"
        self.close_block(key, state=state, metadata={"provider_metadata": self.origin, "provider_block": raw})

    # -- the end ----------------------------------------------------------------------

    def _usage(self, response: dict[str, Any]) -> None:
        usage = response.get("usage") or {}
        if usage:
            self.call_metadata["usage"] = usage
            self.input_tokens = usage.get("input_tokens") or 0
            self.output_tokens = usage.get("output_tokens") or 0
            self.cache_input_tokens = (usage.get("input_tokens_details") or {}).get("cached_tokens") or 0
            self.reasoning_tokens = (usage.get("output_tokens_details") or {}).get("reasoning_tokens") or 0

    def _completed(self, data: dict[str, Any]) -> None:
        response = data.get("response") or {}
        self._response(data)
        self._usage(response)
        self._close_reasoning(response.get("output") or [])
        status = response.get("status") or data["type"].rsplit(".", 1)[-1]
        if status == "incomplete":
            reason = (response.get("incomplete_details") or {}).get("reason") or "incomplete"
            self.provider_stop_reason = reason
            self.stop_reason = _INCOMPLETE.get(reason, "other")
        else:
            self.provider_stop_reason = status
            self.stop_reason = "tool_use" if self._has_calls else "end_turn"
        self.finish()

    def on_fail(self, err: Any) -> None:
        self._close_reasoning([])

    def _failed(self, data: dict[str, Any]) -> None:
        response = data.get("response") or {}
        self._response(data)
        self._usage(response)
        raise error_from_body(response.get("error") or {"message": "the response failed"}, self.protocol)

    def _error(self, data: dict[str, Any]) -> None:
        raise error_from_body(data, self.protocol)

    def on_done(self) -> None:
        # [DONE] (sent by some compatible servers) is not the end of a Responses stream.
        raise IncompleteStreamError("data: [DONE] before response.completed")


def _describe(raw: dict[str, Any]) -> str:
    action = raw.get("action") or {}
    if isinstance(action, dict) and action.get("query"):
        sources = action.get("sources")
        if not isinstance(sources, list):
            sources = []  # the raw item is kept whole; a text of the search is a courtesy
        lines = [f"searched: {action['query']}"]
        lines += [f"{s.get('url') or s.get('name')}" for s in sources if isinstance(s, dict)]
        return "\n".join(lines)
    for key in ("output", "result", "outputs"):
        if raw.get(key):
            value = raw[key]
            return value if isinstance(value, str) else json_text(value)
    return raw.get("status") or ""


_HANDLERS = {
    "response.created": OpenAIResponsesAdapter._response,
    "response.in_progress": OpenAIResponsesAdapter._response,
    "response.queued": OpenAIResponsesAdapter._response,
    "response.output_item.added": OpenAIResponsesAdapter._item_added,
    "response.output_item.done": OpenAIResponsesAdapter._item_done,
    "response.content_part.added": OpenAIResponsesAdapter._part_added,
    "response.content_part.done": OpenAIResponsesAdapter._part_done,
    "response.output_text.delta": OpenAIResponsesAdapter._text_delta,
    "response.output_text.done": OpenAIResponsesAdapter._text_done,
    "response.output_text.annotation.added": OpenAIResponsesAdapter._annotation,
    "response.refusal.delta": OpenAIResponsesAdapter._text_delta,
    "response.refusal.done": OpenAIResponsesAdapter._text_done,
    "response.reasoning_summary_part.added": OpenAIResponsesAdapter._summary_part_added,
    "response.reasoning_summary_part.done": lambda self, data: None,
    "response.reasoning_summary_text.delta": OpenAIResponsesAdapter._text_delta,
    "response.reasoning_summary_text.done": OpenAIResponsesAdapter._text_done,
    "response.reasoning_text.delta": OpenAIResponsesAdapter._text_delta,
    "response.reasoning_text.done": OpenAIResponsesAdapter._text_done,
    "response.function_call_arguments.delta": OpenAIResponsesAdapter._args_delta,
    "response.function_call_arguments.done": OpenAIResponsesAdapter._args_done,
    "response.custom_tool_call_input.delta": OpenAIResponsesAdapter._args_delta,
    "response.custom_tool_call_input.done": OpenAIResponsesAdapter._args_done,
    "response.completed": OpenAIResponsesAdapter._completed,
    "response.incomplete": OpenAIResponsesAdapter._completed,
    "response.failed": OpenAIResponsesAdapter._failed,
    "error": OpenAIResponsesAdapter._error,
}
