"""The AgentScope 2.x code examples of the seed documents run as written on modelwire's
classes, with only their ``agentscope`` imports pointed at modelwire, and print what the
seeds print and what the same code prints on AgentScope 2.0.11's own events.

The seeds' agent is modelwire's ``Agent`` on a scripted ``FakeModel`` (a real adapter
decoding a real protocol stream). Two of the four seed documents describe AgentScope 1.x
(``ImageBlock``, ``ToolUseBlock``, ``Msg.to_dict``), which AgentScope 2.x itself no longer
runs; their examples are not part of the contract.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import io
import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

from modelwire import event as E
from modelwire.agent import Agent
from modelwire.message import UserMsg
from modelwire.testing import FakeModel

SEEDS = Path(__file__).resolve().parents[1].parent / "shared" / "seeds"
pytestmark = pytest.mark.skipif(not SEEDS.is_dir(), reason="the seed documents are in ../shared/seeds")


def _seed(prefix: str) -> str:
    (path,) = SEEDS.glob(f"{prefix}_*.txt")
    return path.read_text(encoding="utf-8")


def _ours(code: str) -> str:
    return code.replace("agentscope.message", "modelwire.message").replace("agentscope.event", "modelwire.event")


def _run(code: str, namespace: dict[str, Any]) -> str:
    """Run ``code`` as written (top-level ``await`` and ``async for`` as in a notebook) and
    return what it printed."""
    compiled = compile(code, "<seed>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = eval(compiled, namespace)  # noqa: S307 - the seeds' own examples
        if asyncio.iscoroutine(result):
            asyncio.run(result)
    return out.getvalue()


def _agent(*replies: list[tuple]) -> Agent:
    def fix_bug(path: str) -> str:
        """Fix the bug in a file.

        Args:
            path: the file
        """
        return f"fixed {path}"

    return Agent(name="Buddy", system_prompt="你叫 Buddy，回答简短。", model=FakeModel(list(replies)), tools=[fix_bug])


def test_the_message_and_event_examples_of_the_messages_and_events_page():
    blocks = re.findall(r"```python[^\n]*\n(.*?)```", _seed("000"), re.S)
    assert len(blocks) == 4
    namespace: dict[str, Any] = {"asyncio": asyncio}
    assert _run(_ours(blocks[0]), namespace) == ""  # builds messages; the placeholder "..." data is taken
    assert namespace["user_msg"].content[1].source.data == "..."
    namespace["msg"] = namespace["assistant_msg"]
    _run(_ours(blocks[1]), namespace)
    assert namespace["text"] == "结果如下..." and namespace["tool_calls"] == []

    # The fold example. With the seed's placeholder image ("...") the request is refused
    # before sending, naming the message and the block; with the text message it folds.
    from modelwire.errors import FormatError

    namespace.update(vars(E), agent=_agent([("text", "unused")]))
    with pytest.raises(FormatError, match=r"message \[1\]: data block .*data is not base64"):
        _run(_ours(blocks[2]), namespace)
    namespace.update(
        user_msg=UserMsg(name="user", content="这张图片里有什么？"),
        agent=_agent([("think", "先看代码"), ("text", "好的")]),
    )
    _run(_ours(blocks[2]), namespace)
    assert namespace["msg"].get_text_content() == "好的" and namespace["msg"].finished_reason == "completed"

    # The printing example, with a tool call and its result.
    namespace["agent"] = _agent(
        [("text", "我来看看。"), ("tool", "call_1", "fix_bug", '{"path": "a.py"}')], [("text", "修好了。")]
    )
    printed = _run(_ours(blocks[3]), namespace)
    assert printed == "我来看看。\n[正在调用 fix_bug...]\n[工具执行完成：success]\n修好了。\n[完成]\n"
    msg = namespace["msg"]
    assert [b.type for b in msg.content] == ["text", "tool_call", "tool_result", "text"]
    assert msg.content[2].output == [] or msg.content[2].output[0].text == "fixed a.py"


def _chapter_two_code() -> str:
    text = _seed("001")
    start = text.index("def describe(event)")
    end = text.index("describe() 做的事")
    return text[start:end]


def _as_agentscope(events: list[E.EventBase]) -> list[Any]:
    """The same events as AgentScope's own, built as its agent builds them (the ``type`` left
    to its default)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from agentscope import event as as_event
    classes = {
        cls.model_fields["type"].default: cls
        for cls in (getattr(as_event, n) for n in as_event.__all__)
        if isinstance(cls, type) and "type" in getattr(cls, "model_fields", {})
    }
    out = []
    for event in events:
        data = json.loads(E.event_to_json(event))
        out.append(classes[data.pop("type")].model_validate(data))
    return out


def test_the_event_printing_example_of_chapter_two():
    pytest.importorskip("agentscope", reason="the dev extra installs agentscope==2.0.11")
    code = _chapter_two_code()
    seen: list[E.EventBase] = []

    class Recording(Agent):
        async def reply_stream(self, *args: Any, **kwargs: Any):  # type: ignore[override]
            async for event in super().reply_stream(*args, **kwargs):
                seen.append(event)
                yield event

    def build_model() -> FakeModel:
        return FakeModel([[("think", "异步编程"), ("text", "异步编程就是让程序在等待时去做别的事。")]])

    namespace: dict[str, Any] = {"Agent": Recording, "UserMsg": UserMsg, "build_model": build_model}
    printed = _run(code + "\nawait main()\n", namespace)
    lines = printed.splitlines()
    seed_lines = [line for line in _seed("001").splitlines() if re.match(r"\[\d\d\] ", line)]
    # Where the seed's run and this one saw the same event, the line is the seed's own.
    assert [line.rstrip() for line in lines[:5]] == seed_lines[:5]  # down to THINKING_BLOCK_DELTA delta='编程'
    assert lines[-1][5:] == seed_lines[-1][5:] == "REPLY_END              finished_reason='completed'"
    # The same code on AgentScope's own events prints the same.
    theirs = _as_agentscope(seen)

    class Replaying:
        def __init__(self, **_: Any) -> None:
            pass

        async def reply_stream(self, *_: Any, **__: Any):
            for event in theirs:
                yield event

    namespace = {"Agent": Replaying, "UserMsg": UserMsg, "build_model": build_model}
    assert _run(code + "\nawait main()\n", namespace) == printed
