"""The OpenAI Responses protocol (``POST /responses``, streamed).

Reasoning items (with their ``encrypted_content``) are replayed only to the provider that
made them (``replay_scope = "provider"``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ...adapters import encode_sse
from ...errors import StreamProtocolError
from .._openai_errors import OpenAIErrors
from .._openai_shared import OpenAIFilesAndBatches, openai_model_list_url, openai_models_listed
from .._protocol import (
    CachePlan,
    Capabilities,
    CompactionPlan,
    ModelCapabilities,
    ModelOptions,
    Preset,
    WireProtocol,
    check_effort,
    refuse,
    sampling,
    fake_words,
)
from .presets import PRESETS
from ..openai_chat import openai_rate_limits, strict_defaults, strict_format

if TYPE_CHECKING:
    from ...formatters._common import ReplayScope

__all__ = ["PROTOCOL", "OpenAIResponsesProtocol"]


# What the input-token count takes of a Responses request (the SDK's InputTokenCountParams).
# What POST /responses/compact takes of a request (the openai SDK's ResponseCompactParams).
_COMPACTED = frozenset(
    {
        "input",
        "instructions",
        "previous_response_id",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "safety_identifier",
        "service_tier",
        "image",
    }
)


def _user_content(item: dict[str, Any], formatter: Any) -> str | list[Any]:
    """The content of a user message a compacted response kept, every part of it: text as
    text blocks, an image or a file as the data block this protocol's formatter writes back as
    the same part, and any other part (a file id, a ``detail`` other than auto ...) as the part
    itself, a dict the models layer keeps whole as a provider block (see compacted_window)."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise StreamProtocolError(f"a compacted user message without its content: {str(item)[:200]!r}")
    from ...message import TextBlock

    blocks: list[Any] = []
    for part in content:
        if not isinstance(part, dict):
            raise StreamProtocolError(f"a compacted user message with a part that is no object: {str(part)[:200]!r}")
        text = part.get("text")
        if part.get("type") == "input_text" and isinstance(text, str) and text and len(part) == 2:
            blocks.append(TextBlock(text=text))
        else:
            blocks.append(_media_block(part, formatter) or part)
    return blocks


def _media_block(part: dict[str, Any], formatter: Any) -> Any:
    """The data block ``formatter`` sends back as exactly ``part`` (an ``input_image`` or an
    ``input_file`` with its data inline or by URL), or None."""
    from ...errors import FormatError
    from ...message import Base64Source, DataBlock, URLSource, UserMsg

    kind = part.get("type")
    url = part.get("image_url") if kind == "input_image" else part.get("file_data") or part.get("file_url")
    if kind not in ("input_image", "input_file") or not isinstance(url, str):
        return None
    name = part.get("filename") if isinstance(part.get("filename"), str) else None
    try:
        if url.startswith("data:"):
            media_type, _, data = url[5:].partition(";base64,")
            block = DataBlock(source=Base64Source(data=data, media_type=media_type), name=name)
        else:
            import mimetypes

            media_type = mimetypes.guess_type(url.split("?")[0])[0] or ""
            block = DataBlock(source=URLSource(url=url, media_type=media_type), name=name)
        sent = formatter.format([UserMsg("user", [block])])["input"][0]["content"]
        return block if sent == [part] else None
    except (FormatError, ValueError):  # a part the formatter writes otherwise: kept whole
        return None


_COUNTED = frozenset(
    {
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning",
        "text",
        "truncation",
        "conversation",
        "previous_response_id",
    }
)


class OpenAIResponsesProtocol(OpenAIErrors, OpenAIFilesAndBatches, WireProtocol):
    name = "openai-responses"
    presets = PRESETS
    description = "OpenAI Responses"
    adapter = "modelwire.protocols.openai_responses.adapter:OpenAIResponsesAdapter"
    formatter = "modelwire.protocols.openai_responses.formatter:OpenAIResponsesFormatter"
    path = "/responses"
    signature = (b'"type": "response.', b'"type":"response.', b"event: response.")
    replay_scope: ReplayScope = "provider"  # mypy infers it from the first base (a mixin)
    replay_keys = ("encrypted_content", "reasoning_item_raw")
    extras_keys = (
        "item_id",
        "reasoning_item_id",
        "reasoning_item_raw",
        "reasoning_part",
        "encrypted_content",
        "summary_index",
        "content_index",
        "annotations",
        "refusal",
        "status",
        "tool_type",
    )
    capabilities = Capabilities(native_structured_output=True, thinking=True, server_tools=True)
    sdk_package = "openai"
    dialect_keys = {"strict_default": bool}  # as on Chat: False where strict mode refuses a non-null default
    conform = "modelwire.protocols.openai_responses._conform:CHECKS"

    def rate_limits(self, headers: Mapping[str, str]) -> dict[str, Any] | None:
        return openai_rate_limits(headers)  # the same headers as Chat Completions

    def model_defaults(self, preset: Preset, model: str = "") -> ModelCapabilities:
        return strict_defaults(super().model_defaults(preset, model), preset)

    def schema_problems(self, schema: dict[str, Any]) -> list[str]:
        from ..openai_chat import PROTOCOL as CHAT

        return CHAT.schema_problems(schema)  # the same strict mode

    claimed_types = ("thinking",)

    def claims(self, block_type: str, fields: Mapping[str, Any], block_id: str) -> bool:
        # AgentScope's fields for a reasoning item: its id, or the raw item.
        return block_type == "thinking" and bool(
            fields.get("reasoning_item_id") or isinstance(fields.get("reasoning_item_raw"), dict)
        )

    def matches_url(self, url: str) -> bool:
        path = url.split("?")[0].rstrip("/")
        return path.endswith("/responses") or "/responses/" in path

    prompt_order = ("tools", "instructions", "input")
    keeps_state = True

    def chain(self, body: dict[str, Any], records: Sequence[Any]) -> dict[str, Any] | None:
        """The latest stored response whose whole request this one starts with, followed by
        its output items (replayed with their ids): ``previous_response_id`` and only the
        items after them. The instructions and tools are sent again (the API does not
        carry them over)."""
        items = body.get("input")
        if not isinstance(items, list):
            return None
        for sent, response_id, output in reversed(records):
            n = len(sent)
            if len(items) <= n or items[:n] != sent:
                continue
            k = n
            while k < len(items) and isinstance(items[k], dict) and items[k].get("id") in output:
                k += 1
            if k == n or k == len(items):
                continue  # its output is not replayed here, or nothing is new
            return {**body, "previous_response_id": response_id, "input": items[k:]}
        return None

    def chain_record(self, body: dict[str, Any], metadata: Mapping[str, Any]) -> Any:
        response_id, output = metadata.get("response_id"), metadata.get("output_items")
        if (
            body.get("store") is False
            or not isinstance(response_id, str)
            or not output
            or not isinstance(body.get("input"), list)
        ):
            return None
        return (body["input"], response_id, frozenset(output))

    def forgot_state(self, err: Exception) -> bool:
        code = getattr(err, "provider_type", None) or ""
        return code == "previous_response_not_found" or (
            "previous response" in str(err).lower() and "not found" in str(err).lower()
        )

    def resume_url(self, base_url: str, preset: Preset, metadata: Mapping[str, Any]) -> str | None:
        response_id, sequence = metadata.get("response_id"), metadata.get("sequence_number")
        if not metadata.get("background") or not isinstance(response_id, str) or not isinstance(sequence, int):
            return None
        from urllib.parse import quote

        url = self.url(base_url, "", preset)
        path, _, query = url.partition("?")
        return f"{path}/{quote(response_id, safe='')}?" + "&".join(
            filter(None, [query, f"stream=true&starting_after={sequence}"])
        )

    def apply_cache(
        self,
        body: dict[str, Any],
        plan: CachePlan,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        from ..openai_chat import openai_cache

        openai_cache(body, plan, preset, model, caps)

    def apply_compaction(
        self,
        body: dict[str, Any],
        plan: CompactionPlan,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        """Server-side compaction: ``context_management: [{"type": "compaction",
        "compact_threshold": N}]`` (the openai SDK's ResponseCreateParams.ContextManagement;
        https://developers.openai.com/api/docs/guides/compaction). The compaction item comes
        back in the output, encrypted; the response goes on after it (no pause)."""
        if plan.pause:
            raise refuse(
                "compaction",
                preset,
                "the Responses API compacts and goes on in the same response; leave pause out",
                model=model,
            )
        if plan.instructions:
            raise refuse(
                "compaction", preset, "the Responses API takes no instructions for its compaction", model=model
            )
        entry: dict[str, Any] = {"type": "compaction"}
        if plan.threshold is not None:
            entry["compact_threshold"] = plan.threshold
        body.setdefault("context_management", []).append(entry)

    def apply_options(
        self,
        p: dict[str, Any],
        o: ModelOptions,
        /,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        if o.max_tokens is not None:
            p["max_output_tokens"] = o.max_tokens
        sampling(p, o)
        if o.stop:
            raise refuse("stop", preset, "the Responses API has no stop sequences")
        if o.thinking_budget is not None:
            raise refuse("thinking_budget", preset, "use reasoning_effort")
        reasoning = _reasoning(o, preset, model, caps)
        if reasoning:
            p["reasoning"] = reasoning
        if o.stateless:
            if o.background or o.chain:
                raise refuse(
                    "background" if o.background else "chain",
                    preset,
                    "a stateless call stores no response to run in the background or continue",
                    model=model,
                )
            _stateless(p)
        if o.background:
            p["background"] = True
        if o.parallel_tool_calls is not None:
            if not p.get("tools"):
                raise refuse("parallel_tool_calls", preset, "it needs tools in the request")
            p["parallel_tool_calls"] = o.parallel_tool_calls
        if o.json_schema is not None:
            schema, strict = strict_format(o.json_schema, model, preset.dialect, caps.strict_refused)
            p["text"] = {
                "format": {"type": "json_schema", "name": o.json_schema_name, "schema": schema, "strict": strict}
            }

    def model_list_url(self, base_url: str, preset: Preset, page: str | None = None) -> str | None:
        return openai_model_list_url(base_url, preset)

    def models_listed(self, data: Any, preset: Preset) -> tuple[list[tuple[str, ModelCapabilities]], str | None]:
        return openai_models_listed(data), None

    def takes_file_ref(self, media_type: str) -> bool:
        base = media_type.split(";")[0].strip().lower()
        return base.startswith("image/") or base == "application/pdf"

    def count_request(
        self, url: str, body: dict[str, Any], model: str, preset: Preset
    ) -> tuple[str, dict[str, Any]] | None:
        """``POST /responses/input_tokens`` (the SDK's ``responses.input_tokens.count``): the
        fields it takes of the request."""
        path, _, query = url.partition("?")
        kept = {k: v for k, v in body.items() if k in _COUNTED}
        return path.rstrip("/") + "/input_tokens" + (f"?{query}" if query else ""), {"model": model, **kept}

    def compact_request(
        self, url: str, body: dict[str, Any], model: str, preset: Preset
    ) -> tuple[str, dict[str, Any]] | None:
        """``POST /responses/compact`` (the SDK's ``responses.compact``): the fields of the
        request it takes (its ResponseCompactParams)."""
        path, _, query = url.partition("?")
        kept = {k: v for k, v in body.items() if k in _COMPACTED}
        return path.rstrip("/") + "/compact" + (f"?{query}" if query else ""), {**kept, "model": model}

    def compacted_window(self, answer: dict[str, Any]) -> list[tuple[str, Any]]:
        """A compacted response's ``output``: "all user messages, followed by a single
        compaction item" (the openai SDK's CompactedResponse.output), each user message with
        every part it kept (see _user_content); each item that is not a user message is
        decoded as an answer of its own, its usage on the last."""
        items = answer.get("output")
        if not isinstance(items, list):
            raise StreamProtocolError(f"a compacted response without its output: {str(answer)[:200]!r}")
        window: list[tuple[str, Any]] = []
        formatter = self.formatter_class()()
        for n, item in enumerate(items):
            if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user":
                window.append(("user", _user_content(item, formatter)))
            else:
                last = n == len(items) - 1
                whole = {"id": answer.get("id"), "object": "response", "status": "completed", "output": [item]}
                window.append(("answer", {**whole, "usage": answer.get("usage")} if last else whole))
        return window

    def answer_events(self, answer: dict[str, Any]) -> list[tuple[str | None, Any]]:
        events: list[tuple[str | None, Any]] = []

        def add(kind: str, **data: Any) -> None:
            events.append((kind, {"type": kind, **data}))

        add("response.created", response={**answer, "output": [], "status": "in_progress"})
        for oi, item in enumerate(answer.get("output") or []):
            kind = item.get("type")
            if kind == "message":
                add("response.output_item.added", output_index=oi, item={**item, "content": []})
                _answer_parts(add, oi, item, "content", _MESSAGE_DELTAS)
            elif kind == "reasoning":
                add("response.output_item.added", output_index=oi, item={**item, "summary": []})
                _answer_parts(add, oi, item, "summary", _SUMMARY_DELTAS)
                _answer_parts(add, oi, item, "content", _REASONING_DELTAS)  # raw reasoning text (gpt-oss, OpenRouter)
            else:
                add("response.output_item.added", output_index=oi, item=item)
            add("response.output_item.done", output_index=oi, item=item)
        status = answer.get("status") or "completed"
        final = {"incomplete": "response.incomplete", "failed": "response.failed"}.get(status, "response.completed")
        add(final, response=answer)
        return events

    def fake_answer(self, *blocks: tuple[Any, ...], usage: tuple[int, int] = (10, 5)) -> dict[str, Any]:
        """The whole response of the same blocks as :meth:`fake_stream` (its items as the
        stream's ``output_item.done`` events give them)."""

        def unsent(kind: str, **data: Any) -> None:
            """The events a fake item makes: not wanted for a whole answer."""

        output = [
            {"think": _fake_reasoning, "text": _fake_message}.get(block[0], _fake_call)(unsent, oi, block)
            for oi, block in enumerate(blocks)
        ]
        used = {
            "input_tokens": usage[0],
            "output_tokens": usage[1],
            "total_tokens": sum(usage),
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        base = {"id": "resp_1", "object": "response", "created_at": 0, "model": "resp-test", "status": "completed"}
        asked = {"tools": [], "tool_choice": "auto", "parallel_tool_calls": True}  # what every response echoes
        return {**base, **asked, "output": output, "usage": used}

    def fake_stream(
        self, *blocks: tuple[Any, ...], resp_id: str = "resp_1", usage: tuple[int, int] = (10, 5), **_: Any
    ) -> bytes:
        """``("think", text)`` becomes a reasoning item ``rs_<n>`` with ``encrypted_content`` ``enc-<n>``."""
        ev: list[tuple[str | None, Any]] = []
        seq = iter(range(10**6))

        def add(kind: str, **data: Any) -> None:
            ev.append((kind, {"type": kind, **data, "sequence_number": next(seq)}))

        base = {"id": resp_id, "object": "response", "model": "resp-test", "output": [], "status": "in_progress"}
        add("response.created", response=dict(base))
        output = []
        for oi, block in enumerate(blocks):
            fake = {"think": _fake_reasoning, "text": _fake_message}.get(block[0], _fake_call)
            item = fake(add, oi, block)
            add("response.output_item.done", output_index=oi, item=item)
            output.append(item)
        used = {
            "input_tokens": usage[0],
            "output_tokens": usage[1],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        add("response.completed", response=dict(base, status="completed", output=output, usage=used))
        return encode_sse(ev)


# How a whole answer's parts stream, by the list they are in: the event each kind's text
# is a delta of (and the field holding it). A summary part has no "done" event of its own.
_MESSAGE_DELTAS = {
    "output_text": ("response.output_text.delta", "text"),
    "refusal": ("response.refusal.delta", "refusal"),
}
_SUMMARY_DELTAS = {None: ("response.reasoning_summary_text.delta", "text")}
_REASONING_DELTAS = {None: ("response.reasoning_text.delta", "text")}


def _answer_parts(
    add: Callable[..., None], oi: int, item: Mapping[str, Any], key: str, deltas: Mapping[Any, tuple[str, str]]
) -> None:
    """The events of one list of an item's parts (its content, or its summary), each part
    added empty, its text as one delta, and (content only) done."""
    summary = key == "summary"
    for index, part in enumerate(item.get(key) or []):
        at = {"item_id": item.get("id"), "output_index": oi, ("summary_index" if summary else "content_index"): index}
        if summary:
            add("response.reasoning_summary_part.added", **at, part={**part, "text": ""})
        else:
            add(
                "response.content_part.added",
                **at,
                part={**part, "text": ""} if "text" in part or None in deltas else part,
            )
        delta = deltas.get(part.get("type"), deltas.get(None))
        if delta is not None and (None in deltas or part.get(delta[1])):
            add(delta[0], **at, delta=part.get(delta[1], ""))
        if not summary:
            add("response.content_part.done", **at, part=part)


def _fake_reasoning(add: Callable[..., None], oi: int, block: tuple[Any, ...]) -> dict[str, Any]:
    """A fake stream's reasoning item, its summary streamed in one delta."""
    rid, text = f"rs_{oi}", block[1]
    at = {"item_id": rid, "output_index": oi, "summary_index": 0}
    add("response.output_item.added", output_index=oi, item={"id": rid, "type": "reasoning", "summary": []})
    add("response.reasoning_summary_part.added", **at, part={"type": "summary_text", "text": ""})
    add("response.reasoning_summary_text.delta", **at, delta=text)
    add("response.reasoning_summary_part.done", **at, part={"type": "summary_text", "text": text})
    summary = [{"type": "summary_text", "text": text}]
    return {"id": rid, "type": "reasoning", "summary": summary, "encrypted_content": f"enc-{oi}"}


def _fake_message(add: Callable[..., None], oi: int, block: tuple[Any, ...]) -> dict[str, Any]:
    """A fake stream's message item, its text streamed a word at a time."""
    mid = f"msg_{oi}"
    started = {"id": mid, "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    add("response.output_item.added", output_index=oi, item=started)
    at = {"item_id": mid, "output_index": oi, "content_index": 0}
    add("response.content_part.added", **at, part={"type": "output_text", "text": "", "annotations": []})
    for word in fake_words(block[1]):
        add("response.output_text.delta", **at, delta=word)
    part = {"type": "output_text", "text": block[1], "annotations": []}
    add("response.content_part.done", **at, part=part)
    return dict(started, status="completed", content=[part])


def _fake_call(add: Callable[..., None], oi: int, block: tuple[Any, ...]) -> dict[str, Any]:
    """A fake stream's function call item, its arguments in one delta."""
    _, cid, name, args = block
    fid = f"fc_{oi}"
    item = {"id": fid, "type": "function_call", "status": "completed", "call_id": cid, "name": name, "arguments": args}
    add("response.output_item.added", output_index=oi, item=dict(item, arguments="", status="in_progress"))
    add("response.function_call_arguments.delta", item_id=fid, output_index=oi, delta=args)
    add("response.function_call_arguments.done", item_id=fid, output_index=oi, arguments=args)
    return item


def _reasoning_off(o: ModelOptions, preset: Preset, model: str, caps: ModelCapabilities) -> dict[str, Any]:
    """``thinking=False``: effort ``none``, on a model known to stop reasoning."""
    if caps.thinking_off is not True or caps.thinking is None or "effort" not in caps.thinking:
        raise refuse(
            "thinking",
            preset,
            "the model always reasons (or is not known to stop); set reasoning_effort to the lowest it takes",
            model=model,
        )
    if o.reasoning_effort is not None or o.thinking_display is not None:
        raise refuse(
            "reasoning_effort" if o.reasoning_effort else "thinking_display",
            preset,
            "thinking=False turns reasoning off",
            model=model,
        )
    return {"effort": "none"}


def _reasoning(o: ModelOptions, preset: Preset, model: str, caps: ModelCapabilities) -> dict[str, Any]:
    """The request's ``reasoning`` object (empty: none asked for): off, or its effort and
    the summary shown of it."""
    if o.thinking is False:
        return _reasoning_off(o, preset, model, caps)
    if caps.thinking == () and (o.thinking or o.reasoning_effort is not None or o.thinking_display is not None):
        raise refuse(
            "thinking" if o.thinking else "reasoning_effort" if o.reasoning_effort else "thinking_display",
            preset,
            "the model does not reason",
            model=model,
        )
    reasoning: dict[str, Any] = {}
    if o.reasoning_effort is not None or o.thinking:
        reasoning["effort"] = check_effort(o.reasoning_effort, caps, preset, model) if o.reasoning_effort else "medium"
    if o.thinking_display == "omitted":
        if o.reasoning_summary is not None:
            raise refuse("reasoning_summary", preset, "thinking_display='omitted' asks for no summary", model=model)
    elif o.reasoning_summary is not None or o.thinking or o.thinking_display == "summarized":
        # thinking=True asks to see it: the summary is what the API shows.
        reasoning["summary"] = o.reasoning_summary or "auto"
    return reasoning


PROTOCOL = OpenAIResponsesProtocol()


log = logging.getLogger("modelwire.protocols.openai")


def _stateless(p: dict[str, Any]) -> None:
    """Nothing stored (``store: false``), so nothing replayed may point at a stored item:
    reasoning comes back encrypted and is replayed with its id and encrypted content (the
    pair the API checks); assistant messages go as plain assistant messages and calls
    without their ids (an id the server did not store is a 400); an item that cannot be
    replayed without its stored copy (reasoning without encrypted content, a server-side
    call) is left out, said in the debug log."""
    p["store"] = False
    include = p.setdefault("include", [])
    if "reasoning.encrypted_content" not in include:
        include.append("reasoning.encrypted_content")
    if not isinstance(p.get("input"), list):
        return
    p["input"] = [kept for kept in map(_unstored, p["input"]) if kept is not None]


def _unstored(item: Any) -> Any:
    """An input item as it goes without the store (None: it cannot, and is left out)."""
    kind = item.get("type") if isinstance(item, dict) else None
    if kind == "reasoning" and not item.get("encrypted_content"):
        log.debug("stateless call: reasoning item %s has no encrypted content to replay; left out", item.get("id"))
        return None
    if kind == "message" and "id" in item and item.get("role") == "assistant":
        parts = item.get("content") or []
        text = "\n\n".join(
            str(part.get("text") or part.get("refusal") or "") for part in parts if isinstance(part, dict)
        )
        return {"type": "message", "role": "assistant", "content": text}
    if kind in ("function_call", "custom_tool_call"):
        return {k: v for k, v in item.items() if k != "id"}
    if isinstance(kind, str) and kind.endswith("_call") and "id" in item:
        log.debug("stateless call: server-side item %s (%s) exists only in the store; left out", item.get("id"), kind)
        return None
    return item
