"""The Vercel AI SDK UI message stream (``useChat``'s protocol, ``x-vercel-ai-ui-message-stream: v1``).

``useChat`` posts ``{id, messages, trigger}`` with the whole conversation as UI messages
(``parts``). One reply is one assistant UI message (its id is the reply id); model calls
are steps; text and thinking blocks are text and reasoning parts keyed by block id; tool
calls are tool parts, their arguments streamed, their results ``tool-output-*``. What
replays a thinking block (a signature, its provenance) rides on the reasoning part's
``providerMetadata.modelwire`` and comes back with the conversation.

Pauses use the SDK's own human-in-the-loop parts: a call needing confirmation sends
``tool-approval-request`` (``approvalId`` is the call id) and the client answers with
``addToolApprovalResponse``; an external call is a client-side tool: its input arrives,
the client adds the output with ``addToolOutput``. Either way ``useChat`` posts the
conversation again with the assistant message last, and the parked reply resumes.
"""

from __future__ import annotations

import json
from typing import Any

from ..event import AgentEvent
from ..message import (
    AssistantMsg,
    Base64Source,
    DataBlock,
    Msg,
    SystemMsg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    URLSource,
    UserMsg,
    extras_of,
    fields_of,
)
from ._turn import JSON, BadRequest, Encoder, Resume, Turn, split_history, sse

FINISH = {"completed": "stop", "error": "error", "interrupted": "interrupted", "exceed_max_iters": "other"}


def read_ui_message(data: JSON) -> Turn:
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise BadRequest("'messages' must be a non-empty list of UI messages")
    last = messages[-1]
    # useChat's chat id: its resume route (GET .../{id}/stream) names the chat, not the reply.
    info = {"chat_id": data["id"]} if isinstance(data.get("id"), str) and data["id"] else {}
    if last.get("role") == "assistant":
        return Turn(resume=_answers(last), info=info)
    history, inputs = split_history([_message(m, f"messages[{i}]") for i, m in enumerate(messages)])
    return Turn(history=history, inputs=inputs, info=info)


def _answers(msg: JSON) -> Resume:
    """The approvals and client-side tool outputs in the assistant message ``useChat``
    sends back; answers to calls that do not wait are the client's copy of the past."""
    if not isinstance(msg.get("id"), str):
        raise BadRequest("the assistant message needs its 'id' (the reply it answers)")
    metadata = msg.get("metadata")
    token = metadata.get("resumeToken") if isinstance(metadata, dict) else None
    out = Resume(reply_id=msg["id"], partial=True, token=token if isinstance(token, str) else None)
    for part in msg.get("parts") or []:
        if not _is_tool(part):
            continue
        call_id, state = part.get("toolCallId"), part.get("state")
        if state == "approval-responded" and isinstance(part.get("approval"), dict):
            out.confirm[call_id] = bool(part["approval"].get("approved"))
        elif state in ("output-available", "output-error"):
            out.results[call_id] = _result(part, call_id)
    return out


def _is_tool(part: Any) -> bool:
    return (
        isinstance(part, dict)
        and isinstance(part.get("type"), str)
        and (part["type"].startswith("tool-") or part["type"] == "dynamic-tool")
    )


def _tool_name(part: JSON) -> str:
    name: str = part.get("toolName", "") if part["type"] == "dynamic-tool" else part["type"][len("tool-") :]
    return name


def _result(part: JSON, call_id: str) -> ToolResultBlock:
    if part.get("state") == "output-error":
        return ToolResultBlock(id=call_id, name=_tool_name(part), output=str(part.get("errorText", "")), state="error")
    output = part.get("output")
    if isinstance(output, list) and all(isinstance(p, dict) and p.get("type") in ("text", "file") for p in output):
        return ToolResultBlock(
            id=call_id, name=_tool_name(part), output=[_file_or_text(p) for p in output], state="success"
        )
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    return ToolResultBlock(id=call_id, name=_tool_name(part), output=text, state="success")


def _file_or_text(part: JSON) -> Any:
    if part["type"] == "text":
        return TextBlock(text=part.get("text", ""))
    url, media = part.get("url", ""), part.get("mediaType") or "application/octet-stream"
    if url.startswith("data:") and ";base64," in url:
        return DataBlock(
            source=Base64Source(data=url.split(";base64,", 1)[1], media_type=media), name=part.get("filename")
        )
    return DataBlock(source=URLSource(url=url, media_type=media), name=part.get("filename"))


def _tool_blocks(part: JSON, where: str) -> list[Any]:
    """A tool part of an assistant UI message: its call, and its result (an output, an
    error or the user's denial); a call with no answer is refused."""
    call_id = part.get("toolCallId")
    if not isinstance(call_id, str):
        raise BadRequest(f"{where}: a tool part without its toolCallId")
    call = ToolCallBlock(
        id=call_id, name=_tool_name(part), input=json.dumps(part.get("input", {}), ensure_ascii=False), state="finished"
    )
    if part.get("state") in ("output-available", "output-error"):
        return [call, _result(part, call_id)]
    if part.get("state") == "output-denied":
        return [
            call,
            ToolResultBlock(
                id=call_id, name=_tool_name(part), output="The user denied this tool call.", state="denied"
            ),
        ]
    raise BadRequest(
        f"{where}: tool call {call_id!r} has no output (state {part.get('state')!r}); answer it or drop it"
    )


def _message(m: JSON, where: str) -> Msg:
    role, parts = m.get("role"), m.get("parts")
    if not isinstance(parts, list):
        raise BadRequest(f"{where}: a UI message has a list of 'parts'")
    blocks: list[Any] = []
    for part in parts:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            blocks.append(TextBlock(text=part.get("text", "")))
        elif kind == "file":
            blocks.append(_file_or_text(part))
        elif kind == "reasoning" and role == "assistant":
            kept = (part.get("providerMetadata") or {}).get("modelwire")
            extras = (
                {k: v for k, v in kept.items() if k not in fields_of(ThinkingBlock)} if isinstance(kept, dict) else {}
            )
            blocks.append(ThinkingBlock(thinking=part.get("text", ""), **extras))
        elif _is_tool(part) and role == "assistant":
            blocks += _tool_blocks(part, where)
        elif kind in ("step-start", "source-url", "source-document") or (
            isinstance(kind, str) and kind.startswith("data-")
        ):
            continue  # display parts: steps, citations, application data, not conversation
        else:
            raise BadRequest(f"{where}: unknown part {kind!r} in a {role} message")
    if role == "user":
        return UserMsg("user", blocks, id=m.get("id"))
    if role == "system":
        return SystemMsg("system", blocks, id=m.get("id"))
    if role == "assistant":
        return AssistantMsg("assistant", blocks, id=m.get("id"), finished_reason="completed")
    raise BadRequest(f"{where}: unknown role {role!r}")


class UIMessageEncoder(Encoder):
    headers = [(b"x-vercel-ai-ui-message-stream", b"v1")]

    def __init__(self, turn: Turn, session_id: str) -> None:
        super().__init__(turn, session_id)
        self.started = False

    def _start(self) -> list[bytes]:
        if self.started:
            return []
        self.started = True
        return [sse({"type": "start", "messageId": self.reply.id})]

    def event(self, ev: AgentEvent) -> list[bytes]:
        out = self._start()
        if ev.type == "MODEL_CALL_START":
            out.append(sse({"type": "start-step"}))
        elif ev.type == "MODEL_CALL_END":
            out.append(sse({"type": "finish-step"}))
        elif ev.type == "TEXT_BLOCK_START" or ev.type == "THINKING_BLOCK_START":
            out.append(sse({"type": _kind(ev.type) + "-start", "id": ev.block_id}))
        elif ev.type == "TEXT_BLOCK_DELTA" or ev.type == "THINKING_BLOCK_DELTA":
            out.append(sse({"type": _kind(ev.type) + "-delta", "id": ev.block_id, "delta": ev.delta}))
        elif ev.type == "TEXT_BLOCK_END":
            out.append(sse({"type": "text-end", "id": ev.block_id}))
        elif ev.type == "TOOL_CALL_START":
            out.append(sse({"type": "tool-input-start", "toolCallId": ev.tool_call_id, "toolName": ev.tool_call_name}))
        elif ev.type == "TOOL_CALL_DELTA":
            out.append(sse({"type": "tool-input-delta", "toolCallId": ev.tool_call_id, "inputTextDelta": ev.delta}))
        elif ev.type in _FOLDED_ENDS:
            out.append(sse(self._folded_end(ev)))
        elif ev.type == "REQUIRE_USER_CONFIRM":
            out += [
                sse({"type": "tool-approval-request", "approvalId": c.id, "toolCallId": c.id}) for c in ev.tool_calls
            ]
        elif ev.type == "REPLY_END":
            if ev.finished_reason == "error":
                out.append(sse({"type": "error", "errorText": ev.error.message if ev.error else "the reply failed"}))
            out.append(
                sse(
                    {
                        "type": "finish",
                        "finishReason": FINISH.get(ev.finished_reason, "other"),
                        "messageMetadata": self._metadata(ev.finished_reason),
                    }
                )
            )
        elif ev.type == "CUSTOM":
            out.append(sse({"type": f"data-{ev.name}", "data": ev.value}))
        return out

    def _folded_end(self, ev: Any) -> JSON:
        """The part for the end of a block, read from the folded reply: the reasoning with
        what replays it, a file, a tool call's whole input, a tool's output."""
        if ev.type == "THINKING_BLOCK_END":
            end: JSON = {"type": "reasoning-end", "id": ev.block_id}
            block = next(b for b in self.reply.content if b.id == ev.block_id)
            if extras_of(block):
                # What replays the thinking (a signature, its provenance): useChat keeps it on
                # the reasoning part and posts it back with the conversation.
                end["providerMetadata"] = {"modelwire": dict(extras_of(block))}
            return end
        if ev.type == "DATA_BLOCK_END":
            data = next(b for b in self.reply.content if isinstance(b, DataBlock) and b.id == ev.block_id)
            return {"type": "file", "url": _url(data), "mediaType": data.source.media_type}
        if ev.type == "TOOL_CALL_END":
            call = next(b for b in self.reply.content if b.type == "tool_call" and b.id == ev.tool_call_id)
            try:
                return {
                    "type": "tool-input-available",
                    "toolCallId": call.id,
                    "toolName": call.name,
                    "input": json.loads(call.input or "{}"),
                }
            except ValueError as exc:
                return {
                    "type": "tool-input-error",
                    "toolCallId": call.id,
                    "toolName": call.name,
                    "input": call.input,
                    "errorText": f"the arguments are not JSON: {exc}",
                }
        result = next(b for b in self.reply.content if b.type == "tool_result" and b.id == ev.tool_call_id)
        return _output(result)

    def _metadata(self, finished_reason: str) -> JSON:
        # The UI message is the whole reply (a resumed stream continues it): its usage and cost.
        reply = self.reply
        meta: JSON = {"finishedReason": finished_reason, "usage": reply.usage.to_dict() if reply.usage else {}}
        if reply.cost is not None:
            meta["cost"] = reply.cost
        return meta

    def token(self, token: str) -> list[bytes]:
        return self._start() + [sse({"type": "message-metadata", "messageMetadata": {"resumeToken": token}})]

    def parked(self, calls: list[ToolCallBlock], token: str) -> list[bytes]:
        # The message waits on the client: approvals asked, client-side tools to run. The
        # resume token rides in the message's metadata, which useChat posts back with it.
        return self._start() + [
            sse(
                {
                    "type": "finish",
                    "finishReason": "tool-calls",
                    "messageMetadata": {**self._metadata("waiting"), "resumeToken": token},
                }
            )
        ]

    def error(self, message: str) -> list[bytes]:
        return (self._start() if self.msg is not None else []) + [sse({"type": "error", "errorText": message})]

    def done(self) -> list[bytes]:
        return [sse("[DONE]")]


_FOLDED_ENDS = frozenset(
    {"THINKING_BLOCK_END", "DATA_BLOCK_END", "TOOL_CALL_END", "TOOL_RESULT_END"}
)  # parts made from the folded block


def _kind(event_type: str) -> str:
    return "text" if event_type.startswith("TEXT") else "reasoning"


def _url(block: DataBlock) -> str:
    src = block.source
    return f"data:{src.media_type};base64,{src.data}" if src.type == "base64" else src.url


def _output(result: ToolResultBlock) -> JSON:
    if result.state == "denied":
        return {"type": "tool-output-denied", "toolCallId": result.id}
    text = (
        result.output if isinstance(result.output, str) else "".join(b.text for b in result.output if b.type == "text")
    )
    if result.state in ("error", "interrupted"):
        return {"type": "tool-output-error", "toolCallId": result.id, "errorText": text or result.state}
    if isinstance(result.output, str) or all(b.type == "text" for b in result.output):
        output: Any = text
    else:
        output = [
            {"type": "text", "text": b.text}
            if b.type == "text"
            else {"type": "file", "mediaType": b.source.media_type, "url": _url(b)}
            for b in result.output
        ]
    return {"type": "tool-output-available", "toolCallId": result.id, "output": output}
