"""Google Gemini streaming (``:streamGenerateContent?alt=sse``, Gemini API and Vertex AI) -> events.

Every SSE event is a whole ``GenerateContentResponse``; only candidate 0 is decoded (the
others are noted in the metadata). What maps to what:

- ``text`` parts are deltas of one text block; ``thought: true`` parts of one thinking
  block. A ``thoughtSignature`` belongs to exactly the part it came on: a signed part
  starts a block of its own (kept with ``thought_signature``), later unsigned deltas
  extend it, and an empty signed text part is kept as an empty text block, never dropped.
- ``functionCall`` parts arrive whole (a call with no ``args`` key means ``{}``), with or
  without a server ``id`` (kept: ``server_call_id``; otherwise an id is made here). On
  Vertex with ``streamFunctionCallArguments`` a call streams: ``{name, willContinue}``,
  then ``partialArgs`` (``jsonPath`` and a ``stringValue`` / ``numberValue`` /
  ``boolValue`` / ``nullValue``, strings continued while ``willContinue``), then ``{}``,
  which may be missing: the next call or the end of the candidate closes it too. The
  arguments are sent as one delta when the call closes.
- server-side tools: ``executableCode`` / ``codeExecutionResult`` and ``toolCall`` /
  ``toolResponse`` (search, file search, URL context) become server-side tool calls and
  their results, the raw parts kept for replay; ``inlineData`` / ``fileData`` become data
  blocks; any other part is kept whole as a JSON data block.
- ``groundingMetadata`` (placeholders ``{}`` until the end) and ``urlContextMetadata``:
  the last non-empty one, in ``MODEL_CALL_END.metadata``.
- ``usageMetadata`` is a running total whose fields can vanish or shrink: fields seen last
  win. ``promptTokenCount`` -> input (it includes cached tokens, as OpenAI counts),
  ``candidatesTokenCount + thoughtsTokenCount`` -> output, ``thoughtsTokenCount`` ->
  reasoning, ``cachedContentTokenCount`` -> cache read.
- ``finishReason`` comes on the last chunk: ``STOP`` is ``tool_use`` when the turn called a
  function, else ``end_turn``; ``MAX_TOKENS``; the safety family is ``content_filter``;
  ``MALFORMED_FUNCTION_CALL`` / ``UNEXPECTED_TOOL_CALL`` are ``error``. A prompt blocked
  before any candidate (``promptFeedback.blockReason``) ends as ``content_filter``.
- the stream has no terminal marker: it ends after the chunk with ``finishReason``. A
  stream that ends without one is an :class:`~modelwire.errors.IncompleteStreamError`.
- an ``{"error": {code, message, status}}`` object in the stream is a typed error.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET

from ... import event as E
from ...adapters import OPTIONAL, BaseAdapter, Block, Delta, error_object, json_text, shape_problem
from ...errors import StreamProtocolError, error_from_body
from ...event import DataBlockDeltaEvent
from ...message import normalize_base64
from ._partial_args import set_path, StreamedCall

__all__ = ["GeminiAdapter", "FINISH_REASONS"]

FINISH_REASONS = {
    "STOP": "end_turn",
    "MAX_TOKENS": "max_tokens",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "MODEL_ARMOR": "content_filter",
    "LANGUAGE": "other",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
    "MISSING_THOUGHT_SIGNATURE": "error",
    "NO_IMAGE": "other",
    "IMAGE_OTHER": "other",
    "OTHER": "other",
}

_SERVER_CALLS = {"executableCode": "code_execution", "toolCall": None}
_SERVER_RESULTS = {"codeExecutionResult", "toolResponse"}
# Fields of a part that label it rather than carry it (an unknown part's others are noted as
# unread), and the fields of a chunk (GenerateContentResponse) the adapter knows.
_PART_LABELS = frozenset({"thoughtSignature", "thought", "partMetadata", "videoMetadata"})
_CHUNK_KEYS = frozenset(
    {"candidates", "usageMetadata", "modelVersion", "responseId", "promptFeedback", "createTime", "error"}
    | {"modelStatus", "automaticFunctionCallingHistory", "sdkHttpResponse", "parsed"}
)


SHAPE: dict[str, tuple[type, ...]] = {
    "candidates": (list, OPTIONAL),
    "candidates[]": (dict,),
    "candidates[].content": (dict, OPTIONAL),
    "candidates[].content.parts": (list, OPTIONAL),
    "candidates[].content.parts[]": (dict,),
    "candidates[].finishReason": (str, OPTIONAL),
    "usageMetadata": (dict, OPTIONAL),
    "promptFeedback": (dict, OPTIONAL),
    "modelVersion": (str, OPTIONAL),
    "responseId": (str, OPTIONAL),
}


# A chunk that is one candidate (index 0 or none) with one part: text continuing the open
# text block; (Vertex) one more piece of the string a streamed call is continuing (one
# entry of partialArgs, both going on); or (the Gemini API's way) one whole function call,
# its name and arguments together, while no call streams. Beside it only the response id
# and the usage so far (see adapters._fast). A part, call, entry or candidate with any other
# field (a thought, a finish reason) takes the full path, as does a signed text part or
# string piece, and a streamed call's first and last chunk.
_PART = "candidates[0].content.parts[0]"
_CALL = f"{_PART}.functionCall"
_ARG = f"{_CALL}.partialArgs[0]"
_SIGNATURE = f"{_PART}.thoughtSignature"
DELTAS = (
    Delta(
        f"{_PART}.text",
        find="_open_text",
        kinds=("text",),
        empty=("candidates[0].index", _CALL, _SIGNATURE),
        absent=("error", "promptFeedback"),
        only=("candidates[0]", _PART),
        read=("responseId",),
        raw=("usageMetadata",),
        check="_chunk_meta",
    ),
    Delta(
        f"{_ARG}.stringValue",
        key=f"{_ARG}.jsonPath",
        find="_open_string",
        kinds=None,
        when={f"{_CALL}.willContinue": True, f"{_ARG}.willContinue": True},
        empty=("candidates[0].index", f"{_PART}.text", _SIGNATURE),
        absent=("error", "promptFeedback", f"{_CALL}.name"),
        only=("candidates[0]", _PART, _CALL, _ARG),
        read=("responseId",),
        raw=("usageMetadata",),
        check="_chunk_meta",
        add="_add_piece",
    ),
    Delta(
        f"{_CALL}.name",
        find="_no_streamed_call",
        kinds=None,
        empty=("candidates[0].index", f"{_PART}.text", f"{_CALL}.willContinue", f"{_CALL}.partialArgs"),
        absent=("error", "promptFeedback"),
        only=("candidates[0]", _PART, _CALL),
        read=("responseId", f"{_CALL}.id", f"{_CALL}.args", _SIGNATURE),
        raw=("usageMetadata",),
        check="_whole_call_meta",
        add="_add_whole_call",
    ),
)
_NO_USAGE = msgspec.Raw()  # a chunk without usage
_decode_usage = msgspec.json.Decoder(dict[str, Any]).decode


class GeminiAdapter(BaseAdapter):
    protocol = "gemini"
    deltas = DELTAS

    def __init__(self, reply_id: str, **kwargs: Any) -> None:
        super().__init__(reply_id, **kwargs)
        self._usage: dict[str, Any] = {}
        self._usage_raw = _NO_USAGE  # the usage the short path last kept, as sent
        self._current: Any = None  # key of the open text / thinking block
        self._streamed: StreamedCall | None = None
        self._parts = 0  # a counter for block keys
        self._client_calls = 0
        self._server_calls: dict[str, str] = {}  # server calls waiting for their result: id -> tool name
        self._finish_reason: str | None = None
        self._whole: tuple[Any, Any, Any] = ({}, None, None)  # a whole call the short path checked

    def answered(self) -> bool:
        return self.finished or self._finish_reason is not None

    def _open_text(self, key: None) -> Block | None:
        """The text block the short path's text continues (none while a call streams)."""
        return self.blocks.get(self._current) if self._streamed is None else None

    def _open_string(self, json_path: Any) -> StreamedCall | None:
        """The call streaming the string at ``json_path`` (Vertex's partialArgs), if any."""
        streamed = self._streamed
        return streamed if streamed is not None and streamed.open_string == json_path else None

    def _add_piece(self, streamed: StreamedCall, text: str) -> list[E.AgentEvent]:
        """One more piece of the string ``streamed`` continues, kept as _continue_call keeps
        it: no event until the call ends (so no stamp: every entry point takes its own)."""
        streamed.pieces.append(text)
        return []

    def _no_streamed_call(self, key: None) -> Any:
        """Where a whole call's short path may go on: no call streaming (its end is the full path's)."""
        return self if self._streamed is None else None

    def _whole_call_meta(self, chunk: Any) -> bool:
        """A whole call the short path can make as ``_function_call`` would, with nothing to
        refuse (arguments an object or none: no call is open, so no id clashes with an open
        one, and one of a closed call is renamed as it is there), kept for
        :meth:`_add_whole_call`; then the chunk's own metadata."""
        call = chunk.candidates[0].content.parts[0].functionCall
        args, server_id = call.args, call.id
        if args is UNSET or args is None:
            args = {}
        elif type(args) is not dict:
            return False
        if server_id is UNSET:
            server_id = None
        if not self._chunk_meta(chunk):
            return False
        signature = chunk.candidates[0].content.parts[0].thoughtSignature
        self._whole = (args, server_id, None if signature is UNSET else signature)
        return True

    def _add_whole_call(self, _: Any, name: str) -> list[E.AgentEvent]:
        """A whole function call's events, as the full path makes them (see _function_call)."""
        out = self.begin_feed()
        args, server_id, signature = self._whole
        self._end_text()
        self._whole_call(name, server_id, signature, json_text(args))
        return out

    def _chunk_meta(self, chunk: Any) -> bool:
        """What every chunk may carry beside its parts: the response id (kept once) and the
        usage so far, decoded only when it is not the last chunk's again (Gemini repeats
        it on every chunk); False, with nothing changed, when the usage is not an object."""
        raw = chunk.usageMetadata
        if raw and raw != self._usage_raw:  # (empty: the chunk has none)
            try:
                usage = _decode_usage(raw)
            except (ValueError, RecursionError):
                return False
            self._set_usage(usage)
            self._usage_raw = raw
        meta = self.call_metadata
        if "response_id" not in meta and chunk.responseId:
            meta["response_id"] = chunk.responseId
        return True

    def model_from(self, data: dict[str, Any]) -> str | None:
        model = data.get("modelVersion")
        return model if isinstance(model, str) else None

    # Google's error object ``{"error": {"code", "message", "status"}}``, alone in a chunk
    # (https://ai.google.dev/gemini-api/docs/troubleshooting): the kit's shape. handle refuses
    # an ``error`` beside candidates the same way.
    is_error_frame = staticmethod(error_object)

    def shape_problem(self, data: dict[str, Any], event: str | None) -> str | None:
        return shape_problem(data, SHAPE)

    # -- one chunk ---------------------------------------------------------------------

    def handle(self, data: dict[str, Any], event: str | None) -> None:
        if "error" in data:
            raise error_from_body(data, self.protocol)
        meta = self.call_metadata
        if not _CHUNK_KEYS.issuperset(data):
            for key in data.keys() - _CHUNK_KEYS:
                self.note_unread(key, data[key])
        if data.get("responseId") and "response_id" not in meta:
            meta["response_id"] = data["responseId"]
        if isinstance(data.get("usageMetadata"), dict):
            self._set_usage(data["usageMetadata"])
        feedback = data.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            meta["prompt_feedback"] = feedback
            self._finish_reason = str(feedback["blockReason"])
        candidates = data.get("candidates") or []
        if not isinstance(candidates, list):
            raise StreamProtocolError("candidates is not a list", body=data)
        for candidate in candidates:
            if not isinstance(candidate, dict):
                raise StreamProtocolError("a candidate is not an object", body=data)
            if candidate.get("index", 0) != 0:
                meta.setdefault("ignored_candidates", []).append(candidate.get("index"))
                continue
            self._candidate(candidate)

    def _candidate(self, candidate: dict[str, Any]) -> None:
        content = candidate.get("content") or {}
        parts = content.get("parts") or []
        if not isinstance(parts, list):
            raise StreamProtocolError("content.parts is not a list", body=candidate)
        for part in parts:
            if not isinstance(part, dict):
                raise StreamProtocolError("a part is not an object", body=candidate)
            self._part(part)
        for key in ("groundingMetadata", "urlContextMetadata", "citationMetadata"):
            if candidate.get(key):  # placeholders {} come first; the real one at the end
                self.call_metadata[_snake(key)] = candidate[key]
        if candidate.get("finishMessage"):
            self.call_metadata["finish_message"] = candidate["finishMessage"]
        if candidate.get("finishReason"):
            self._finish_reason = str(candidate["finishReason"])

    def _part(self, part: dict[str, Any]) -> None:
        signature = part.get("thoughtSignature")
        if "functionCall" in part:
            self._function_call(part["functionCall"], signature)
            return
        if self._streamed is not None:
            self._end_streamed_call()
        if "text" in part:
            kind = "thinking" if part.get("thought") else "text"
            self._text(kind, part["text"], signature)
            return
        self._end_text()
        for name in ("executableCode", "toolCall"):
            if name in part:
                self._server_call(part, name, signature)
                return
        for name in _SERVER_RESULTS:
            if name in part:
                self._server_result(part, name)
                return
        if "inlineData" in part or "fileData" in part:
            self._data(part)
            return
        for key in part.keys() - _PART_LABELS:
            self.note_unread(f"parts[].{key}", part[key])
        self.provider_block(part, name="gemini.part")

    # -- text and thinking --------------------------------------------------------------

    def _text(self, kind: str, text: Any, signature: str | None) -> None:
        if not isinstance(text, str):
            raise StreamProtocolError(f"a text part holds {type(text).__name__}", body={"text": text})
        block = self.blocks.get(self._current) if self._current is not None else None
        if block is None or block.kind != kind or signature:
            # A signature belongs to the part it came on: that part opens a block of its own.
            self._end_text()
            self._parts += 1
            self._current = ("part", self._parts)
            block = self.open_block(self._current, kind)
            block.extras["provider_metadata"] = self.origin
            if signature:
                block.extras["thought_signature"] = signature
        self.delta(block, text)

    def _end_text(self) -> None:
        if self._current is not None:
            self.close_block(self._current)
            self._current = None

    # -- function calls -----------------------------------------------------------------

    def _function_call(self, call: Any, signature: str | None) -> None:
        if not isinstance(call, dict):
            raise StreamProtocolError("functionCall is not an object", body={"functionCall": call})
        self._end_text()
        streamed = self._streamed
        if streamed is not None and "name" not in call:
            self._continue_call(streamed, call, signature)
            return
        self._end_streamed_call()
        name = call.get("name")
        if not isinstance(name, str) or not name:
            if not call:
                return  # a lone terminator for a call already closed
            raise StreamProtocolError("a functionCall without a name", body={"functionCall": call})
        if call.get("willContinue") or call.get("partialArgs"):
            block = self._open_call(name, call.get("id"), signature)
            self._streamed = StreamedCall(block.key)
            self._continue_call(self._streamed, {k: v for k, v in call.items() if k != "name"}, None)
            return
        args = call.get("args")
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise StreamProtocolError("functionCall.args is not an object", body={"functionCall": call})
        self._whole_call(name, call.get("id"), signature, json_text(args))

    def _open_call(self, name: str, server_id: Any, signature: str | None) -> "_Opened":
        """A call whose arguments stream in the chunks after (Vertex's partialArgs)."""
        call_id, extras = self._call_id(server_id, signature)
        key = ("call", call_id)
        block = self.open_block(key, "tool_call", name=name, block_id=call_id)
        block.extras.update(extras)
        return _Opened(key, block)

    def _whole_call(self, name: str, server_id: Any, signature: str | None, arguments: str) -> None:
        """A call whose name and arguments came in one part (the Gemini API's way)."""
        call_id, extras = self._call_id(server_id, signature)
        self.whole_call(name, call_id, arguments, extras)

    def _call_id(self, server_id: Any, signature: str | None) -> tuple[str, dict[str, Any]]:
        """A function call's id (the server's, if it gave one, else a new one) and the extras
        of its END; a server id a call still streaming has is refused."""
        self._client_calls += 1
        given = isinstance(server_id, str) and server_id
        call_id = server_id if given else self.new_id()
        if ("call", call_id) in self.blocks:
            raise StreamProtocolError(f"function call id {call_id!r} used twice in one reply")
        extras: dict[str, Any] = {"provider_metadata": self.origin}
        if given:
            extras["server_call_id"] = True
        if signature:
            extras["thought_signature"] = signature
        return call_id, extras

    def _continue_call(self, streamed: StreamedCall, call: dict[str, Any], signature: str | None) -> None:
        block = self.blocks[streamed.key]
        if signature and "thought_signature" not in block.extras:
            block.extras["thought_signature"] = signature
        partial = call.get("partialArgs") or []
        if not isinstance(partial, list):
            raise StreamProtocolError("partialArgs is not a list", body={"functionCall": call})
        for arg in partial:
            set_path(streamed, arg)
        if not call.get("willContinue"):
            self._end_streamed_call()  # `{}` (or a last piece without willContinue) ends it

    def _end_streamed_call(self) -> None:
        streamed, self._streamed = self._streamed, None
        if streamed is None:
            return
        streamed.flush()
        block = self.blocks.get(streamed.key)
        if block is not None:
            self.delta(block, json_text(streamed.args))
            self.close_block(streamed.key)

    # -- server tools, data, anything else -------------------------------------------------

    def _server_call(self, part: dict[str, Any], name: str, signature: str | None) -> None:
        body = part[name] if isinstance(part[name], dict) else {}
        tool = _SERVER_CALLS[name] or str(body.get("toolType") or "server_tool").lower()
        given = body.get("id")
        call_id = given if isinstance(given, str) else self.new_id()
        key = ("server", call_id, self._parts)
        self._parts += 1
        block = self.open_block(key, "tool_call", name=tool, block_id=call_id)
        block.extras.update(server_side=True, provider_metadata=self.origin, provider_block=part)
        if signature:
            block.extras["thought_signature"] = signature
        arguments = body.get("args") if name == "toolCall" else {k: v for k, v in body.items() if k != "id"}
        self.delta(block, json_text(arguments or {}))
        self.close_block(key)
        self._server_calls[call_id] = tool

    def _server_result(self, part: dict[str, Any], name: str) -> None:
        body = part[name] if isinstance(part[name], dict) else {}
        wanted = body.get("id")
        if isinstance(wanted, str) and wanted in self._server_calls:
            call_id = wanted
        elif self._server_calls and name == "codeExecutionResult":
            call_id = next(iter(self._server_calls))  # code results carry no id: the oldest call
        else:
            self.provider_block(part, name=f"gemini.{name}")  # a result for no call we saw
            return
        tool = self._server_calls.pop(call_id)
        key = ("result", call_id, self._parts)
        self._parts += 1
        block = self.open_block(key, "tool_result", name=tool, block_id=call_id)
        self.delta(block, _describe(body))
        failed = body.get("outcome") not in (None, "OUTCOME_OK")
        self.close_block(
            key,
            state="error" if failed else "success",
            metadata={"provider_metadata": self.origin, "provider_block": part},
        )

    def _data(self, part: dict[str, Any]) -> None:
        inline = part.get("inlineData")
        key = ("data", self._parts)
        self._parts += 1
        if not isinstance(inline, dict):
            self.provider_block(part, name="gemini.fileData")
            return
        media_type = inline.get("mimeType") or "application/octet-stream"
        block = self.open_block(key, "data", media_type=media_type)
        block.extras["provider_metadata"] = self.origin
        if part.get("thoughtSignature"):
            block.extras["thought_signature"] = part["thoughtSignature"]
        data = inline.get("data") or ""
        if data:  # already base64: passed on as it is (the block's END re-encodes only text)
            self.decoded = True
            self.emit(DataBlockDeltaEvent, block_id=block.id, media_type=media_type, data=normalize_base64(data))
        self.close_block(key)

    # -- usage and the end ----------------------------------------------------------------

    def _set_usage(self, usage: dict[str, Any]) -> None:
        # Every chunk repeats the usage so far: keep it, count it once in count_usage.
        self._usage_raw = _NO_USAGE  # what the short path compares with is no longer the last
        self._usage.update(usage)
        self.call_metadata["usage"] = self._usage

    def count_usage(self) -> None:
        u = self._usage
        thoughts = _int(u.get("thoughtsTokenCount"))
        self.input_tokens = _int(u.get("promptTokenCount"))
        self.output_tokens = _int(u.get("candidatesTokenCount")) + thoughts
        self.reasoning_tokens = thoughts
        self.cache_input_tokens = _int(u.get("cachedContentTokenCount"))

    def on_close(self) -> None:
        if self._finish_reason is None:
            super().on_close()
            return
        self._end_streamed_call()
        self._end_text()
        reason = self._finish_reason
        self.provider_stop_reason = reason
        stop = FINISH_REASONS.get(reason, "other")
        if reason == "STOP" and self._client_calls:
            stop = "tool_use"
        if "prompt_feedback" in self.call_metadata and reason == self.call_metadata["prompt_feedback"].get(
            "blockReason"
        ):
            stop = "content_filter"
        self.stop_reason = stop
        self.finish()


class _Opened:
    __slots__ = ("key", "block")

    def __init__(self, key: Any, block: Block) -> None:
        self.key = key
        self.block = block


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def _describe(body: dict[str, Any]) -> str:
    """A readable text output for a server tool's result."""
    if "output" in body:
        return str(body.get("output") or "")
    response = body.get("response")
    if response is None:
        return ""
    return response if isinstance(response, str) else json_text(response)
