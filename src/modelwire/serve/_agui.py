"""The AG-UI event protocol (https://docs.ag-ui.com): ``RunAgentInput`` in, AG-UI events out.

One reply is one run. Text blocks become text messages and thinking blocks reasoning
messages, each keyed by its block id; what replays the thinking (a signature, say)
travels as the reasoning message's encrypted value and comes back with it. A tool call
hangs off the text message of its model call (or stands as its own assistant message);
a finished tool result becomes ``TOOL_CALL_RESULT`` with a tool message of its own. Model calls are steps. A reply that
parks ends the run with an ``interrupt`` outcome, one interrupt per waiting call (its id
is the reply's resume token, a dot and the call id; ``toolCallId`` is the call id); the next run answers them in
``resume``: ``{"approved": bool}`` for a
confirmation, the tool's output (a string, or ``{"output": ..., "error": ...}``) for an
external call; a ``cancelled`` entry stops the reply.
"""

from __future__ import annotations

import json
from typing import Any, Literal

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

PROTOCOL_VERSION = "1.0"


def read_agui(data: JSON) -> Turn:
    for key in ("threadId", "runId"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise BadRequest(f"RunAgentInput needs a string {key!r}")
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise BadRequest("RunAgentInput needs a list of 'messages'")
    info = {"threadId": data["threadId"], "runId": data["runId"]}
    resume = data.get("resume")
    if resume:
        return Turn(resume=_resume(resume), info=info)
    history, inputs = split_history(_messages(messages))
    return Turn(history=history, inputs=inputs, info=info)


def _resume(entries: Any) -> Resume:
    if not isinstance(entries, list):
        raise BadRequest("'resume' is a list of {interruptId, status, payload}")
    out = Resume()
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("interruptId"), str):
            raise BadRequest("each resume entry needs an 'interruptId'")
        # An interrupt's id is "<resume token>.<call id>" (a token has no "."): the client
        # echoes it, so the answer carries the reply's token without anything else to keep.
        token, _, call_id = entry["interruptId"].partition(".")
        if out.token is not None and token != out.token:
            raise BadRequest("the resume entries answer interrupts of different replies")
        out.token = token
        status, payload = entry.get("status"), entry.get("payload")
        out.about.add(call_id)
        if status == "cancelled":
            out.interrupt = True
        elif status != "resolved":
            raise BadRequest(f"resume entry {call_id!r}: status is 'resolved' or 'cancelled', not {status!r}")
        elif isinstance(payload, dict) and isinstance(payload.get("approved"), bool):
            out.confirm[call_id] = payload["approved"]
        else:
            out.results[call_id] = _result(call_id, payload)
    return out


def _result(call_id: str, payload: Any) -> ToolResultBlock:
    error = False
    if isinstance(payload, dict) and ("output" in payload or "error" in payload):
        error = payload.get("error") is not None
        payload = payload.get("error") if error else payload.get("output")
    text = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    return ToolResultBlock(id=call_id, name="", output=text, state="error" if error else "success")


def _content(content: Any, where: str) -> list[Any]:
    if content is None:
        return []
    if isinstance(content, str):
        return [TextBlock(text=content)] if content else []
    if not isinstance(content, list):
        raise BadRequest(f"{where}: content is a string or a list of parts")
    blocks: list[Any] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            blocks.append(TextBlock(text=part.get("text", "")))
        elif kind in ("image", "audio", "video", "document") and isinstance(part.get("source"), dict):
            src = part["source"]
            media = src.get("mimeType") or src.get("mime_type") or "application/octet-stream"
            if src.get("type") == "data":
                blocks.append(DataBlock(source=Base64Source(data=src["value"], media_type=media)))
            elif src.get("type") == "url":
                blocks.append(DataBlock(source=URLSource(url=src["value"], media_type=media)))
            else:
                raise BadRequest(f"{where}: a {kind} part's source is 'data' or 'url', not {src.get('type')!r}")
        else:
            raise BadRequest(f"{where}: unknown content part {kind!r}")
    return blocks


def _replay_extras(value: Any) -> dict[str, Any]:
    """The thinking extras this server sent as a reasoning message's encrypted value."""
    if not isinstance(value, str):
        return {}
    try:
        extras = json.loads(value)
    except ValueError:
        return {}
    return {k: v for k, v in extras.items() if k not in fields_of(ThinkingBlock)} if isinstance(extras, dict) else {}


def _assistant(m: JSON, thinking: list[Any], where: str) -> Msg:
    """An assistant message, with the reasoning messages before it and its tool calls."""
    blocks = thinking + _content(m.get("content"), where)
    for call in m.get("toolCalls") or []:
        fn = call.get("function") or {}
        blocks.append(
            ToolCallBlock(id=call["id"], name=fn.get("name", ""), input=fn.get("arguments") or "{}", state="finished")
        )
    return AssistantMsg(m.get("name") or "assistant", blocks, id=m.get("id"), finished_reason="completed")


def _answer(m: JSON, calls: dict[str, Msg], where: str) -> None:
    """A tool message: its result joins the assistant message that made the call."""
    call_id = m.get("toolCallId")
    owner = calls.get(call_id) if isinstance(call_id, str) else None
    if owner is None:
        raise BadRequest(
            f"{where}: a tool message answers call {m.get('toolCallId')!r}, which no assistant message made"
        )
    call = next(b for b in owner.content if b.type == "tool_call" and b.id == m["toolCallId"])
    content = m.get("content")
    output = content if isinstance(content, str) else _content(content, where)
    state: Literal["error", "success"] = "error" if m.get("error") else "success"
    owner.content.append(
        ToolResultBlock(id=call.id, name=call.name, output=output or (m.get("error") or ""), state=state)
    )


def _messages(messages: list[Any]) -> list[Msg]:
    out: list[Msg] = []
    thinking: list[Any] = []  # reasoning messages go to the next assistant message
    calls: dict[str, Msg] = {}  # call id -> the assistant message holding it
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        role = m.get("role") if isinstance(m, dict) else None
        if role == "user":
            out.append(UserMsg(m.get("name") or "user", _content(m.get("content"), where), id=m.get("id")))
        elif role in ("system", "developer"):
            out.append(SystemMsg("system", _content(m.get("content"), where), id=m.get("id")))
        elif role == "reasoning":
            thinking.append(ThinkingBlock(thinking=m.get("content") or "", **_replay_extras(m.get("encryptedValue"))))
        elif role == "assistant":
            msg = _assistant(m, thinking, where)
            thinking = []
            out.append(msg)
            calls.update((block.id, msg) for block in msg.content if block.type == "tool_call")
        elif role == "tool":
            _answer(m, calls, where)
        elif role == "activity":
            continue  # front-end state, not conversation
        else:
            raise BadRequest(f"{where}: unknown role {role!r}")
    if thinking:
        out.append(AssistantMsg("assistant", thinking, finished_reason="completed"))
    return out


_BLOCK_EVENTS = frozenset(
    {
        "TEXT_BLOCK_START",
        "TEXT_BLOCK_DELTA",
        "TEXT_BLOCK_END",
        "THINKING_BLOCK_START",
        "THINKING_BLOCK_DELTA",
        "THINKING_BLOCK_END",
        "DATA_BLOCK_END",
        "TOOL_CALL_START",
        "TOOL_CALL_DELTA",
        "TOOL_CALL_END",
    }
)
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_input_tokens", "cache_creation_input_tokens", "reasoning_tokens")


class AGUIEncoder(Encoder):
    def __init__(self, turn: Turn, session_id: str) -> None:
        super().__init__(turn, session_id)
        self.thread_id = turn.info.get("threadId", session_id)
        self.run_id = turn.info.get("runId")
        self.text_id: str | None = None  # the text message of the current model call
        self.usage: dict[str, int] = {}
        self.started = False

    def _start(self) -> list[bytes]:
        if self.started:
            return []
        self.started = True
        self.run_id = self.run_id or self.reply.id
        return [
            sse(
                {
                    "type": "RUN_STARTED",
                    "threadId": self.thread_id,
                    "runId": self.run_id,
                    "protocolVersion": PROTOCOL_VERSION,
                }
            )
        ]

    def event(self, ev: AgentEvent) -> list[bytes]:
        out = self._start()
        if ev.type == "MODEL_CALL_START":
            self.text_id = None
            out.append(sse({"type": "STEP_STARTED", "stepName": "model_call"}))
        elif ev.type == "MODEL_CALL_END":
            # A run reports the calls it made itself (a resumed run not the parked run's).
            for key in _USAGE_KEYS:
                self.usage[key] = self.usage.get(key, 0) + getattr(ev, key)
            out.append(sse({"type": "STEP_FINISHED", "stepName": "model_call"}))
        elif ev.type in _BLOCK_EVENTS:
            out += self._block(ev)
        elif ev.type == "TOOL_RESULT_END":
            out.append(self._result(ev.tool_call_id))
        elif ev.type == "EXTERNAL_EXECUTION_RESULT":
            # The resume's answers join the conversation as tool messages, as results do.
            out += [self._result(r.id) for r in ev.execution_results]
        elif ev.type == "REPLY_END":
            out.append(self._end(ev))
        elif ev.type == "CUSTOM":
            out.append(sse({"type": "CUSTOM", "name": ev.name, "value": ev.value}))
        return out

    def _block(self, ev: Any) -> list[bytes]:
        """The AG-UI events of a block's start, delta or end: text and reasoning messages,
        tool calls, and data as a custom event."""
        out: list[bytes] = []
        if ev.type == "TEXT_BLOCK_START":
            self.text_id = ev.block_id
            out.append(sse({"type": "TEXT_MESSAGE_START", "messageId": ev.block_id, "role": "assistant"}))
        elif ev.type == "TEXT_BLOCK_DELTA" and ev.delta:
            out.append(sse({"type": "TEXT_MESSAGE_CONTENT", "messageId": ev.block_id, "delta": ev.delta}))
        elif ev.type == "TEXT_BLOCK_END":
            out.append(sse({"type": "TEXT_MESSAGE_END", "messageId": ev.block_id}))
        elif ev.type == "THINKING_BLOCK_START":
            out.append(sse({"type": "REASONING_START", "messageId": ev.block_id}))
            out.append(sse({"type": "REASONING_MESSAGE_START", "messageId": ev.block_id, "role": "reasoning"}))
        elif ev.type == "THINKING_BLOCK_DELTA" and ev.delta:
            out.append(sse({"type": "REASONING_MESSAGE_CONTENT", "messageId": ev.block_id, "delta": ev.delta}))
        elif ev.type == "THINKING_BLOCK_END":
            out += self._reasoning_end(ev.block_id)
        elif ev.type == "DATA_BLOCK_END":
            block = next(b for b in self.reply.content if b.id == ev.block_id)
            out.append(sse({"type": "CUSTOM", "name": "modelwire.data", "value": block.to_dict()}))
        elif ev.type == "TOOL_CALL_START":
            if self.text_id is None:
                # No text in this model call: the calls still share one assistant message (the
                # client's fold makes one per call that names no parent), named by the first.
                self.text_id = ev.tool_call_id
            start = {
                "type": "TOOL_CALL_START",
                "toolCallId": ev.tool_call_id,
                "toolCallName": ev.tool_call_name,
                "parentMessageId": self.text_id,
            }
            out.append(sse(start))
        elif ev.type == "TOOL_CALL_DELTA" and ev.delta:
            out.append(sse({"type": "TOOL_CALL_ARGS", "toolCallId": ev.tool_call_id, "delta": ev.delta}))
        elif ev.type == "TOOL_CALL_END":
            out.append(sse({"type": "TOOL_CALL_END", "toolCallId": ev.tool_call_id}))
        return out

    def _reasoning_end(self, block_id: str) -> list[bytes]:
        """The end of a reasoning message, with what replays the thinking (a signature, an
        encrypted item, its provenance), opaque to the client, which sends it back on the
        reasoning message."""
        out = [sse({"type": "REASONING_MESSAGE_END", "messageId": block_id})]
        block = next(b for b in self.reply.content if b.id == block_id)
        if extras_of(block):
            value = json.dumps(extras_of(block), ensure_ascii=False, separators=(",", ":"))
            out.append(
                sse(
                    {
                        "type": "REASONING_ENCRYPTED_VALUE",
                        "subtype": "message",
                        "entityId": block_id,
                        "encryptedValue": value,
                    }
                )
            )
        out.append(sse({"type": "REASONING_END", "messageId": block_id}))
        return out

    def _result(self, call_id: str) -> bytes:
        result = next(b for b in self.reply.content if b.type == "tool_result" and b.id == call_id)
        return sse(
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": f"{call_id}.result",
                "toolCallId": call_id,
                "role": "tool",
                "content": _parts(result.output),
            }
        )

    def _usage(self) -> list[JSON]:
        u = self.usage
        if not u:
            return []
        return [
            {
                "inputTokens": u["input_tokens"],
                "outputTokens": u["output_tokens"],
                "totalTokens": u["input_tokens"] + u["output_tokens"],
                "cachedInputTokens": u["cache_input_tokens"],
                "cacheWriteInputTokens": u["cache_creation_input_tokens"],
                "reasoningTokens": u["reasoning_tokens"],
            }
        ]

    def _end(self, ev: Any) -> bytes:
        if ev.finished_reason == "error":
            message, code = (ev.error.message, ev.error.type) if ev.error else ("the reply failed", "unknown")
            return sse({"type": "RUN_ERROR", "message": message, "code": code})
        end: JSON = {
            "type": "RUN_FINISHED",
            "threadId": self.thread_id,
            "runId": self.run_id,
            "metadata": {"finishedReason": ev.finished_reason},
        }
        if ev.finished_reason == "interrupted":
            end["outcome"] = {"type": "cancelled"}
        if ev.structured_output is not None:
            end["result"] = ev.structured_output
        if usage := self._usage():
            end["usage"] = usage
        return sse(end)

    def token(self, token: str) -> list[bytes]:
        return self._start() + [
            sse(
                {
                    "type": "CUSTOM",
                    "name": "modelwire.resume",
                    "value": {"reply_id": self.msg.id if self.msg else None, "resume_token": token},
                }
            )
        ]

    def parked(self, calls: list[ToolCallBlock], token: str) -> list[bytes]:
        interrupts = []
        for call in calls:
            asking = call.state == "asking"
            interrupts.append(
                {
                    "id": f"{token}.{call.id}",
                    "reason": "tool_approval" if asking else "external_execution",
                    "toolCallId": call.id,
                    "message": f"Allow {call.name}({call.input})?"
                    if asking
                    else f"Run {call.name}({call.input}) and send its result.",
                }
            )
        end: JSON = {
            "type": "RUN_FINISHED",
            "threadId": self.thread_id,
            "runId": self.run_id,
            "outcome": {"type": "interrupt", "interrupts": interrupts},
        }
        if usage := self._usage():
            end["usage"] = usage
        return self._start() + [sse(end)]

    def error(self, message: str) -> list[bytes]:
        return [sse({"type": "RUN_ERROR", "message": message, "code": "internal_error"})]


def _parts(output: Any) -> Any:
    if isinstance(output, str):
        return output
    if all(b.type == "text" for b in output):
        return "".join(b.text for b in output)
    parts: list[JSON] = []
    for block in output:
        if block.type == "text":
            parts.append({"type": "text", "text": block.text})
        else:
            src = block.source
            kind = next((k for k in ("image", "audio", "video") if src.media_type.startswith(k + "/")), "document")
            if src.type == "base64":
                parts.append({"type": kind, "source": {"type": "data", "value": src.data, "mimeType": src.media_type}})
            else:
                parts.append({"type": kind, "source": {"type": "url", "value": src.url, "mimeType": src.media_type}})
    return parts
