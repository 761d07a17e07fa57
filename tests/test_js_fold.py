"""The JavaScript fold (src/modelwire/js/fold.mjs) gives the same message JSON as
``Msg.append_event`` for every event stream here, and refuses the same events with the
same errors, leaving the message as it was.

The streams: every recorded provider stream decoded by the adapters, the demo agent's
whole reply (thinking, tool call, tool result, cost), generated replies with random
splits and interleavings, and hand-written edge cases (data blocks joined across padded
base64 pieces, URL data, hints, confirmation and external execution, refused events).
Python folds each and writes the cases; Node's test runner folds them again.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from helpers import Reply
from modelwire import event as E
from modelwire.errors import ModelwireError
from modelwire.message import AssistantMsg, Msg, PermissionRule, ToolCallBlock, ToolResultBlock, UserMsg
from paths import HAVE_SHARED
from test_properties import BlockSpec, CallSpec, render

ROOT = Path(__file__).resolve().parents[1]
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def case(name: str, msg: Msg, events: list[E.EventBase]) -> dict[str, Any]:
    """Fold ``events`` in Python, noting each refused event, and return the case."""
    start = msg.to_dict()
    errors = {}
    for i, ev in enumerate(events):
        try:
            msg.append_event(ev, strict=True)  # the page's fold refuses what a strict fold refuses
        except ModelwireError as err:
            errors[str(i)] = {"name": type(err).__name__, "message": str(err)}
    return {
        "name": name,
        "msg": start,
        "events": [json.loads(E.event_to_json(ev)) for ev in events],
        "expected": msg.to_dict(),
        "errors": errors,
    }


def recorded_cases() -> list[dict]:
    if not HAVE_SHARED:
        return []
    from decoding import decode
    from test_adapters_recorded import ALL

    out = []
    for protocol, path in ALL:
        _, events, _ = decode(protocol, [path.read_bytes()])
        out.append(
            case(
                f"{protocol} {path.name}",
                AssistantMsg("agent", [], id="reply", created_at="2026-01-01T00:00:00"),
                events,
            )
        )
    return out


def demo_case() -> dict:
    from modelwire.cassettes import use_cassette
    from modelwire.demo import DEMO_QUESTION, demo_agent, demo_cassette

    agent = demo_agent()

    async def go() -> list[E.EventBase]:
        return [ev async for ev in agent.reply_stream(UserMsg("user", DEMO_QUESTION))]

    with use_cassette(demo_cassette(), "none"):
        events = asyncio.run(go())
    start = events[0]
    assert start.type == "REPLY_START"
    msg = AssistantMsg(start.name, [], id=start.reply_id, created_at=start.created_at)
    return case("demo agent reply", msg, events)


def generated_cases(n: int) -> list[dict]:
    rnd = random.Random(20261130)
    alphabet = 'ab \n"\\{}漢🙂é\t'
    out = []
    for k in range(n):
        calls, serial = [], 0
        for _ in range(rnd.randint(1, 3)):
            blocks = []
            for _ in range(rnd.randint(0, 4)):
                serial += 1
                kind = rnd.choice(["text", "thinking", "data", "tool_call"])
                if kind == "data":
                    content: Any = rnd.randbytes(rnd.randint(0, 40))
                else:
                    content = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 30)))
                extras = {"signature": f"sig{serial}"} if kind == "thinking" and rnd.random() < 0.5 else None
                blocks.append(BlockSpec(kind, f"{kind}-{serial}", content, extras))
            results = [(b.id, f"out {b.id}", rnd.choice(["success", "error"])) for b in blocks if b.kind == "tool_call"]
            calls.append(CallSpec(blocks, results))
        events = render(calls, rnd.randrange(2**32), rnd.randrange(2**32))
        out.append(case(f"generated {k}", AssistantMsg("agent", [], id="r", created_at="2026-01-01T00:00:00"), events))
    return out


def edge_cases() -> list[dict]:
    out = []
    png = bytes(range(256)) * 3

    # data pieces each padded on their own, so joining needs a decode across the boundary
    r = Reply().start().call()
    r.add(E.DataBlockStartEvent, block_id="img", media_type="image/png", name="chart.png")
    for piece in (png[:1], png[1:5], png[5:300], png[300:]):
        r.add(E.DataBlockDeltaEvent, block_id="img", media_type="image/png", data=base64.b64encode(piece).decode())
    r.add(E.DataBlockEndEvent, block_id="img", extras={"caption": "c"})
    r.add(E.DataBlockStartEvent, block_id="link", media_type="image/png")
    r.add(E.DataBlockDeltaEvent, block_id="link", media_type="image/jpeg", url="https://example.com/a.jpg")
    r.add(E.DataBlockDeltaEvent, block_id="link", media_type="image/png", data="AAAA")  # refused: URL already
    r.add(E.DataBlockEndEvent, block_id="link")
    r.text("t", "draft", "ed", text="final")
    r.thinking("th", "a", "b", extras={"signature": "s1", "redacted_thinking_data": None})
    r.add(E.ThinkingBlockEndEvent, block_id="th", extras={"thinking": "x"})  # refused: extras clash
    r.add(E.HintBlockEvent, block_id="h", hint="be brief", source="system")
    r.tool_call("c1", "chart", '{"a":', " 1}").tool_call("c2", "rm", "{}")
    r.call_end(
        10,
        5,
        cache_input_tokens=3,
        reasoning_tokens=2,
        cost={"currency": "USD", "total": 0.1, "input": 0.07, "output": 0.03},
    )
    r.call().call_end(
        1, 1, cost={"currency": "USD", "total": 0.2, "input": 0.1, "output": 0.1, "source": "genai-prices"}
    )
    r.call().call_end(1, 1, cost={"currency": "USD", "total": None, "unknown": "model not priced"})
    r.add(E.ToolResultStartEvent, tool_call_id="c1", tool_call_name="chart")
    r.add(E.ToolResultTextDeltaEvent, tool_call_id="c1", delta="")
    r.add(E.ToolResultTextDeltaEvent, tool_call_id="c1", delta="see ")
    for piece in (png[:2], png[2:100], png[100:]):
        r.add(
            E.ToolResultDataDeltaEvent,
            tool_call_id="c1",
            block_id="out-img",
            media_type="image/png",
            data=base64.b64encode(piece).decode(),
        )
    r.add(
        E.ToolResultDataDeltaEvent,
        tool_call_id="c1",
        block_id="out-url",
        media_type="image/png",
        url="https://example.com/b.png",
    )
    r.add(E.ToolResultTextDeltaEvent, tool_call_id="c1", delta="above")
    r.add(E.ToolResultEndEvent, tool_call_id="c1", state="success", metadata={"ms": 3})
    rule = PermissionRule(tool_name="rm", rule_content="*.tmp", behavior="allow", source="user")
    asked = ToolCallBlock(id="c2", name="rm", input="{}", suggested_rules=[rule])
    r.add(E.RequireUserConfirmEvent, tool_calls=[asked])
    r.add(E.UserConfirmResultEvent, confirm_results=[E.ConfirmResult(confirmed=False, tool_call=asked)])
    r.add(E.UserConfirmResultEvent, confirm_results=[E.ConfirmResult(confirmed=True, tool_call=asked)])  # stale
    r.add(E.RequireUserConfirmEvent, tool_calls=[ToolCallBlock(id="nope", name="rm", input="{}")])  # refused
    r.add(E.TextBlockDeltaEvent, block_id="missing", delta="x")  # refused
    r.add(E.TextBlockDeltaEvent, reply_id="other", block_id="t", delta="x")  # refused
    r.add(E.CustomEvent, name="progress", value={"pct": 50})
    r.add(E.UserInterruptEvent)
    r.add(E.ExceedMaxItersEvent, name="agent")
    r.end(finished_reason="error", error={"type": "rate_limit", "message": "slow down"}, structured_output={"ok": True})
    out.append(
        case(
            "every block kind, padded base64, costs, confirmation, refusals",
            AssistantMsg("agent", [], id="reply-1", created_at="2026-01-01T00:00:00"),
            r.events,
        )
    )

    # external execution; a result whose output was a string gets more text
    r = Reply().start().call().tool_call("x", "deploy", "{}").call_end()
    r.add(E.RequireExternalExecutionEvent, tool_calls=[ToolCallBlock(id="x", name="deploy", input="{}")])
    done = ToolResultBlock(id="x", name="deploy", output="deployed", state="success")
    r.add(E.ExternalExecutionResultEvent, execution_results=[done])
    r.add(E.ExternalExecutionResultEvent, execution_results=[done])  # a duplicate answer is ignored
    r.add(E.ToolResultTextDeltaEvent, tool_call_id="x", delta=" twice")
    r.end()
    out.append(
        case("external execution", AssistantMsg("agent", [], id="reply-1", created_at="2026-01-01T00:00:00"), r.events)
    )

    # a message that already holds blocks, and a user message that refuses a tool call
    held = AssistantMsg(
        "agent",
        [ToolCallBlock(id="k", name="f", input="{"), ToolResultBlock(id="k", name="f", output="", state="running")],
        id="reply-1",
    )
    r = Reply().add(E.ToolCallDeltaEvent, tool_call_id="k", delta="}").add(E.ToolCallEndEvent, tool_call_id="k")
    r.add(E.ToolResultTextDeltaEvent, tool_call_id="k", delta="ok").add(
        E.ToolResultEndEvent, tool_call_id="k", state="success"
    )
    out.append(case("blocks already in the message", held, r.events))
    r = Reply().text("u", "hi").add(E.ToolCallStartEvent, tool_call_id="c", tool_call_name="f")
    out.append(case("role rules", UserMsg("user", "question", id="reply-1"), r.events))
    return out


def test_javascript_fold_matches_python_on_every_stream(tmp_path):
    cases = recorded_cases() + [demo_case()] + generated_cases(300) + edge_cases()
    # the corpus exercises refusals and every event kind, so a fold that skips them fails
    kinds = {ev["type"] for c in cases for ev in c["events"]}
    assert len(kinds) >= 24, sorted(kinds)
    assert sum(len(c["errors"]) for c in cases) >= 5
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases))
    proc = subprocess.run(
        [NODE, "--test", "--test-reporter=dot", str(ROOT / "tests" / "js" / "fold.test.mjs")],
        env={"MODELWIRE_FOLD_CASES": str(path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


def test_typescript_types_check_strictly():
    tsc = shutil.which("tsc") or shutil.which("tsc", path=str(ROOT / "tests" / "js" / "node_modules" / ".bin"))
    if tsc is None:
        pytest.skip("tsc is not installed: npm ci --prefix tests/js installs it")
    args = [
        str(tsc),
        "--strict",
        "--noEmit",
        "--module",
        "nodenext",
        "--moduleResolution",
        "nodenext",
        "--target",
        "es2022",
    ]
    proc = subprocess.run(
        [*args, str(ROOT / "tests" / "js" / "types_check.ts")], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
