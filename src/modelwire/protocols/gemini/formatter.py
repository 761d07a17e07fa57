"""Messages -> a Gemini ``generateContent`` request (Gemini API and Vertex AI), without
``generationConfig``, which the models layer adds from the options.

Rules:

- system messages go to ``systemInstruction``;
- ``contents`` alternate ``user`` / ``model`` (consecutive content of one role merged) and
  start with a ``user`` turn: a history that starts with the model gets an empty user turn
  first;
- user parts: ``text``, ``inlineData`` (base64), ``fileData`` (``gs://`` and other URIs the
  API reads itself; http(s) sources are fetched and inlined by the models layer);
- model parts: text and thinking (``thought: true``) from Gemini with the
  ``thoughtSignature`` of exactly the part it came on (an empty signed text part too);
  ``functionCall`` with ``args`` and, only when the server issued it, its ``id`` (Vertex
  rejects ids it did not make); server-side tool parts replayed as they came. A function
  call that did not come from Gemini (the conversation started elsewhere) gets the
  documented placeholder signature on the first call of its turn, as Gemini 3 requires a
  signature there; other providers' thinking is dropped, or sent as text with
  ``thinking_as_text=True``;
- tool results are ``functionResponse`` parts (``response: {"result": ...}``, or
  ``{"error": ...}`` for error / denied / interrupted) in a ``user`` turn, in call order,
  echoing the call's server id; media a tool returned follows them as parts of that turn;
- tools as ``functionDeclarations`` with ``parametersJsonSchema``, and Gemini's own tools
  given as themselves (``{"googleSearch": {}}``, ``{"codeExecution": {}}`` ...); ``tool_choice`` as
  ``toolConfig.functionCallingConfig`` (``AUTO`` / ``ANY`` / ``NONE``, or ``ANY`` with
  ``allowedFunctionNames``).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Sequence

from ...errors import FormatError
from ...formatters import (
    sent_undeferred,
    Formatter,
    Segment,
    Turns,
    merge_turn,
    ToolSpec,
    sent_source,
    file_ref,
    extra,
    parse_arguments,
    replays_natively,
    tool_choice_name,
    tool_specs,
    ServerTool,
    refuse_server_tool,
    split_server_tools,
)
from ...message import Msg
from ...formatters._toolids import IdRules
from . import GEMINI_TS
from . import PROTOCOL as _WIRE

__all__ = ["GeminiFormatter", "format_gemini", "PLACEHOLDER_SIGNATURE"]
_NONE: Any = MappingProxyType({})  # the extras of a block that has none

PROTOCOL = _WIRE.name
SCOPE = _WIRE.replay_scope
# ServerTool kinds as Gemini's own tools.
_KINDS = {"web_search": "googleSearch", "code_execution": "codeExecution", "web_fetch": "urlContext"}


def server_tool(tool: ServerTool) -> dict[str, Any]:
    """A :class:`ServerTool` as Gemini's tool (``googleSearch``, ``codeExecution``, ``urlContext``)."""
    if tool.raw is not None:
        return dict(tool.raw)
    if tool.kind not in _KINDS:
        raise refuse_server_tool(
            tool, PROTOCOL, f"it runs {', '.join(_KINDS)}; or give its own tool as ServerTool(raw={{...}})"
        )
    if tool.config:
        raise refuse_server_tool(tool, PROTOCOL, f"its {tool.kind} takes no {', '.join(sorted(tool.config))}")
    return {_KINDS[tool.kind]: {}}


# Gemini's own tools, passed as given in a tool list: [{"googleSearch": {}}, {"codeExecution": {}}]
SERVER_TOOLS = frozenset(
    {
        "googleSearch",
        "googleSearchRetrieval",
        "codeExecution",
        "urlContext",
        "fileSearch",
        "googleMaps",
        "computerUse",
        "enterpriseWebSearch",
    }
)
# Google's documented stand-in for a function call whose model left no signature (a
# conversation moved to Gemini from another provider).
PLACEHOLDER_SIGNATURE = "skip_thought_signature_validator"


# Function names start with a letter or an underscore, then letters, digits, _ . : -, up to
# 128 (google-genai's FunctionCall.name); call ids are free.
TOOL_NAMES = IdRules(allowed="A-Za-z0-9_.:-", max_len=128, first="A-Za-z_")


# Public YouTube videos are sent by their URL, as fileData (the Gemini API's "YouTube URLs"
# input method: https://ai.google.dev/gemini-api/docs/video-understanding); fetched, a watch
# page is HTML, not a video.
YOUTUBE_URLS = ("https://www.youtube.com/", "https://youtube.com/", "https://m.youtube.com/", "https://youtu.be/")


class GeminiFormatter(Formatter):
    system_in_place = False  # system messages join the top-level system prompt
    tool_id_rules: IdRules | None = None
    tool_name_rules: IdRules | None = TOOL_NAMES
    protocol = PROTOCOL
    fetched_urls = YOUTUBE_URLS

    @staticmethod
    def needs_inline(media_type: str) -> bool:
        """Whether an http(s) source must be fetched and sent as ``inlineData``: always but
        for YouTube URLs (``fetched_urls``); ``fileData`` takes the URIs Google reads itself
        (``gs://``, uploaded files, YouTube videos)."""
        return True

    def __init__(
        self,
        *,
        provider: str | None = None,
        thinking_as_text: bool = False,
        speaker_names: bool = False,
        assistant_name: str | None = None,
    ) -> None:
        super().__init__(provider=provider, speaker_names=speaker_names, assistant_name=assistant_name)
        self.thinking_as_text = thinking_as_text

    payload_turns = "contents"
    turn_content = "parts"

    def begin(self) -> Turns:
        return Turns({"calls": {}})  # call id -> its block, gathered as the walk meets them (before their results)

    def take(self, acc: Turns, seg: Segment) -> None:
        if seg.kind == "system":
            acc.system += [{"text": b.text} for b in seg.blocks if b.text]
            return
        calls = acc.more["calls"]
        if seg.kind == "assistant":
            role, parts = "model", self._model_parts(seg, calls)
        elif seg.kind == "results":
            role, parts = "user", self._results(seg, calls)
        else:
            role, parts = "user", []
            for b in seg.blocks:
                if b.type == "text":  # _user_part(), inlined for text: most of a user turn
                    if b.text:
                        parts.append({"text": b.text})
                else:
                    parts += self._user_part(b, seg.index_of(b))
        merge_turn(acc.turns, role, parts, key="parts", after_results=_after_results if seg.kind == "results" else None)

    def tool_fields(self, tools: Sequence[Any] | None, tool_choice: Any) -> dict[str, Any]:
        specs, server_tools = _split_tools(tools)
        fields: dict[str, Any] = {}
        _tools(fields, specs, server_tools, tool_choice)
        return fields

    def assemble(self, acc: Turns, fields: dict[str, Any]) -> dict[str, Any]:
        contents = acc.turns
        if contents and contents[0]["role"] == "model":
            contents.insert(0, {"role": "user", "parts": [{"text": ""}]})
        payload: dict[str, Any] = {"contents": contents}
        if acc.system:
            payload["systemInstruction"] = {"parts": acc.system}
        payload.update(fields)
        return payload

    # -- parts ------------------------------------------------------------------------------

    def _user_part(self, block: Any, index: int) -> list[dict[str, Any]]:
        if block.type == "text":
            return [{"text": block.text}] if block.text else []
        if block.type == "data":
            return [media_part(block, index, self.endpoint)]
        raise FormatError(index, f"a {block.type!r} block cannot be sent in a user turn", PROTOCOL)

    def _model_parts(self, seg: Any, calls: dict[str, Any]) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        first_call = True
        provider, endpoint = self.provider, self.endpoint
        for block in seg.blocks:
            btype = block.type
            extras = getattr(
                block, "__dict__", _NONE
            )  # extras_of(), inlined: read once per block, several of its extras decide
            if btype == "text" and not extras:  # the usual text: no origin, so no signature
                if block.text:
                    parts.append({"text": block.text})
                continue
            if btype == "tool_call" and not extras and not block.id.startswith(GEMINI_TS):  # a bare call
                calls[block.id] = block
                parts.append(_bare_call(block, first_call))
                first_call = False
                continue
            native = replays_natively(block, PROTOCOL, provider, scope=SCOPE, endpoint=endpoint)
            signature = extras.get("thought_signature") if native else None
            if btype == "text" or btype == "thinking":
                self._text_part(block, native, signature, parts)
            elif btype == "tool_call":
                first_call = self._call(block, extras, native, signature, first_call, calls, parts)
            elif btype == "tool_result":  # a server tool's result, kept whole by the adapter
                raw = block.metadata.get("provider_block") if native else None
                if isinstance(raw, dict):
                    parts.append(raw)
            elif btype == "data":
                if extras.get("provider_block_type") is not None:
                    continue  # another provider's item, or a Gemini part kept whole below
                part = media_part(block, seg.index_of(block), self.endpoint)
                if signature:
                    part["thoughtSignature"] = signature
                parts.append(part)
            else:
                raise FormatError(seg.index_of(block), f"a {btype!r} block cannot be sent in a model turn", PROTOCOL)
        return parts

    @staticmethod
    def _call(
        block: Any,
        extras: Any,
        native: bool,
        signature: str | None,
        first_call: bool,
        calls: dict[str, Any],
        parts: list[dict[str, Any]],
    ) -> bool:
        """A tool call of the model turn into its part (a server-side one: the part it came
        as, where Gemini ran it); whether the turn's first client call is still to come."""
        if extras.get("server_side", False):
            raw = extras.get("provider_block") if native else None
            if isinstance(raw, dict):
                parts.append(raw)
            return first_call
        calls[block.id] = block
        parts.append(_call_part(block, native, signature, first_call))
        return False

    def _text_part(self, block: Any, native: bool, signature: str | None, parts: list[dict[str, Any]]) -> None:
        """A text or thinking block as its part (thinking another provider made: as text
        when ``thinking_as_text``, else left out)."""
        thinking = block.type == "thinking"
        text = block.thinking if thinking else block.text
        if thinking and not native:
            if self.thinking_as_text and text:
                parts.append({"text": f"<thinking>\n{text}\n</thinking>"})
            return
        if not text and not signature:
            return
        part: dict[str, Any] = {"text": text}
        if thinking:
            part["thought"] = True
        if signature:
            part["thoughtSignature"] = signature
        parts.append(part)

    def _results(self, seg: Any, calls: dict[str, Any]) -> list[dict[str, Any]]:
        responses: list[dict[str, Any]] = []
        media: list[dict[str, Any]] = []
        for result in seg.blocks:
            output, state = result.output, result.state
            if isinstance(output, str):  # the usual result: its text as it is
                text = output
            else:
                text = "".join([p.text for p in output if p.type == "text"])
                if any(p.type == "data" for p in output):  # media it returned: after the responses
                    index = seg.index_of(result)
                    media += [media_part(p, index, self.endpoint) for p in output if p.type == "data"]
            if state == "success":
                response: dict[str, Any] = {"name": result.name, "response": {"result": text}}
            else:  # error, denied, interrupted (a running result never gets here)
                if not text and state != "error":
                    text = f"The tool call was {state}."
                response = {"name": result.name, "response": {"error": text}}
            call = calls.get(result.id)
            if (
                call is not None
                and call.__dict__.get("server_call_id")
                and replays_natively(call, PROTOCOL, self.provider, scope=SCOPE, endpoint=self.endpoint)
            ):
                response["id"] = result.id
            responses.append({"functionResponse": response})
        return responses + media


def _declaration(spec: ToolSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"name": spec.name}
    if spec.description:
        out["description"] = spec.description
    out["parametersJsonSchema"] = spec.parameters
    return out


def media_part(block: Any, index: int, endpoint: str | None = None) -> dict[str, Any]:
    if file_ref(block, endpoint, "gemini", index, PROTOCOL) is not None:
        return {"fileData": {"mimeType": block.source.media_type.split(";")[0].strip(), "fileUri": block.source.url}}
    # A gs:// URI Vertex reads itself, a YouTube URL; other http(s) sources are fetched and
    # inlined before formatting.
    kind, payload, media_type = sent_source(block, index, PROTOCOL, ("gs://", "data:", *YOUTUBE_URLS))
    mime = media_type.split(";")[0].strip()
    if kind == "url" and payload.startswith("data:"):
        head, _, data = payload.partition(",")
        if not head.endswith(";base64"):
            raise FormatError(index, "a data: URI must be base64-encoded for Gemini", PROTOCOL)
        kind, payload = "base64", data
    if kind == "base64":
        return {"inlineData": {"mimeType": mime, "data": payload}}
    return {"fileData": {"mimeType": mime, "fileUri": payload}}


def format_gemini(
    messages: Sequence[Msg], tools: Sequence[Any] | None = None, tool_choice: Any = None, **options: Any
) -> dict[str, Any]:
    """Shortcut for ``GeminiFormatter(**options).format(messages, tools, tool_choice)``."""
    return GeminiFormatter(**options).format(messages, tools, tool_choice)


def _after_results(part: dict[str, Any]) -> bool:
    """Whether a part of a user turn goes after its function responses (which answer the
    calls of the turn before, so they go first)."""
    return "functionResponse" not in part


def _split_tools(tools: Sequence[Any] | None) -> tuple[list[Any], list[Any]]:
    """Declared functions, and the provider's own tools (given as ServerTool, or as Gemini's
    own ``{"googleSearch": {}}``)."""
    declared, tools = split_server_tools(tools)
    server_tools = [t for t in tools or () if isinstance(t, dict) and len(t) == 1 and next(iter(t)) in SERVER_TOOLS]
    server_tools += [server_tool(t) for t in declared]
    specs = tool_specs([t for t in tools or () if not any(t is s for s in server_tools)])
    sent_undeferred(specs, PROTOCOL)
    return specs, server_tools


def _bare_call(block: Any, first_call: bool) -> dict[str, Any]:
    """A call with no origin and no id of AgentScope's that keeps a signature: Gemini did not
    make it, so the first call of its turn takes the placeholder (as in :func:`_call_part`)."""
    part: dict[str, Any] = {"functionCall": {"name": block.name, "args": parse_arguments(block)}}
    if first_call:
        part["thoughtSignature"] = PLACEHOLDER_SIGNATURE
    return part


def _call_part(block: Any, native: bool, signature: str | None, first_call: bool) -> dict[str, Any]:
    """A client tool call as its ``functionCall`` part, with the signature that goes with it
    (the first call of a turn another provider made carries the placeholder Gemini takes)."""
    if signature is None and native and block.id.startswith(GEMINI_TS):
        signature = block.id[len(GEMINI_TS) :]  # AgentScope's way of keeping it
    call: dict[str, Any] = {"name": block.name, "args": parse_arguments(block)}
    if native and extra(block, "server_call_id"):
        call["id"] = block.id
    part: dict[str, Any] = {"functionCall": call}
    if signature:
        part["thoughtSignature"] = signature
    elif first_call and not native:
        part["thoughtSignature"] = PLACEHOLDER_SIGNATURE
    return part


def _tools(payload: dict[str, Any], specs: list[Any], server_tools: list[Any], tool_choice: Any) -> None:
    """The request's tools (declared functions and the provider's own) and tool choice."""
    if specs or server_tools:
        payload["tools"] = ([{"functionDeclarations": [_declaration(s) for s in specs]}] if specs else []) + list(
            server_tools
        )
    mode, name = tool_choice_name(tool_choice, specs)
    if mode is not None:
        config: dict[str, Any] = {"mode": {"auto": "AUTO", "none": "NONE"}.get(mode, "ANY")}
        if mode == "tool":
            config["allowedFunctionNames"] = [name]
        payload["toolConfig"] = {"functionCallingConfig": config}
