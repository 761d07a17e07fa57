"""``modelwire demo``: a scripted reply, streamed as events and folded into a message.

It needs no API key and no network. The model's side of the reply is scripted (the
words a model would stream, split into small pieces); the tool is real: a small,
safe arithmetic evaluator runs on the arguments the "model" streamed.
"""

from __future__ import annotations

import ast
import json
import operator
from typing import IO, Iterator

from .event import (
    EventBase,
    ModelCallEndEvent,
    ModelCallStartEvent,
    ReplyEndEvent,
    ReplyStartEvent,
    TextBlockDeltaEvent,
    TextBlockEndEvent,
    TextBlockStartEvent,
    ThinkingBlockDeltaEvent,
    ThinkingBlockEndEvent,
    ThinkingBlockStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultEndEvent,
    ToolResultStartEvent,
    ToolResultTextDeltaEvent,
    check_stream,
)
from .message import AssistantMsg, Msg, UserMsg

_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
}


def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression (numbers, + - * / ** and parentheses)."""

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.operand))
        raise ValueError(f"unsupported expression: {ast.dump(node)[:60]}")

    value = ev(ast.parse(expression, mode="eval").body)
    return str(int(value)) if float(value).is_integer() else repr(value)


def _pieces(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def scripted_reply(question: UserMsg | Msg, reply_id: str, session_id: str = "demo") -> Iterator[EventBase]:
    """The events of one tool-using reply to the demo question."""
    yield ReplyStartEvent(session_id=session_id, reply_id=reply_id, name="Calc")
    yield ModelCallStartEvent(reply_id=reply_id, model_name="scripted")
    yield ThinkingBlockStartEvent(reply_id=reply_id, block_id="think-1")
    for piece in _pieces("The user wants a product and a sum; I should use the calculator."):
        yield ThinkingBlockDeltaEvent(reply_id=reply_id, block_id="think-1", delta=piece)
    yield ThinkingBlockEndEvent(reply_id=reply_id, block_id="think-1")
    arguments = json.dumps({"expression": "(1234 * 5678) + 42"})
    yield ToolCallStartEvent(reply_id=reply_id, tool_call_id="call-1", tool_call_name="calculate")
    for piece in _pieces(arguments, 9):
        yield ToolCallDeltaEvent(reply_id=reply_id, tool_call_id="call-1", delta=piece)
    yield ToolCallEndEvent(reply_id=reply_id, tool_call_id="call-1")
    yield ModelCallEndEvent(reply_id=reply_id, input_tokens=52, output_tokens=31)
    # The tool really runs, on the arguments as streamed.
    result = calculate(json.loads(arguments)["expression"])
    yield ToolResultStartEvent(reply_id=reply_id, tool_call_id="call-1", tool_call_name="calculate")
    yield ToolResultTextDeltaEvent(reply_id=reply_id, tool_call_id="call-1", delta=result)
    yield ToolResultEndEvent(reply_id=reply_id, tool_call_id="call-1", state="success")
    yield ModelCallStartEvent(reply_id=reply_id, model_name="scripted")
    yield TextBlockStartEvent(reply_id=reply_id, block_id="text-1")
    for piece in _pieces(f"(1234 × 5678) + 42 = {result}."):
        yield TextBlockDeltaEvent(reply_id=reply_id, block_id="text-1", delta=piece)
    yield TextBlockEndEvent(reply_id=reply_id, block_id="text-1")
    yield ModelCallEndEvent(reply_id=reply_id, input_tokens=97, output_tokens=12)
    yield ReplyEndEvent(session_id=session_id, reply_id=reply_id)


def describe(event: EventBase) -> str:
    """The most telling field of an event, as in ``[07] TOOL_CALL_DELTA  delta='...'``."""
    for field in ("delta", "tool_call_name", "state", "finished_reason"):
        value = getattr(event, field, None)
        if value is not None:
            return f"{field}={value!r}"
    return ""


def run_demo(out: IO[str]) -> int:
    question = UserMsg("user", "What is (1234 * 5678) + 42?")
    reply = AssistantMsg("Calc", [])
    out.write("modelwire demo: a scripted reply (no model, no network); the calculator tool really runs.\n")
    out.write(f"user: {question.get_text_content()}\n\n")
    events = list(scripted_reply(question, reply.id))
    for i, event in enumerate(events):
        out.write(f"[{i:02d}] {event.type:<24} {describe(event)}".rstrip() + "\n")
        reply.append_event(event)
    check_stream(events)
    out.write(f"\nrebuilt message: {len(reply.content)} blocks, finished_reason={reply.finished_reason}, ")
    out.write(f"usage in={reply.usage.input_tokens} out={reply.usage.output_tokens}\n")
    out.write(f"assistant: {reply.get_text_content()}\n")
    return 0
