"""JSON compatibility with AgentScope 2.x, checked against the real package.

What modelwire writes must load in AgentScope as the same thing, and the reverse;
modelwire's additions are new optional fields, which AgentScope ignores (or, on a
thinking block, keeps as extras). Folding the same events gives the same message.
"""

from __future__ import annotations

import json
import warnings

import pytest
from helpers import Reply
from test_events import one_of_each
from test_message import every_block

from modelwire import event as E
from modelwire.message import AssistantMsg, DataBlock, Msg, SystemMsg, ToolCallBlock, ToolResultBlock, Usage, UserMsg

agentscope = pytest.importorskip("agentscope", reason="the dev extra installs agentscope==2.0.11")
from pydantic import TypeAdapter  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from agentscope import event as as_event  # noqa: E402
    from agentscope import message as as_message  # noqa: E402

AS_EVENT = TypeAdapter(as_event.AgentEvent)
# Fields modelwire adds; AgentScope drops them on load (except where it keeps extras).
ADDED = {"reasoning_tokens", "stop_reason", "provider_stop_reason", "extras", "structured_output", "cost"}


def _sub(ours, theirs, path="$"):
    """Every value AgentScope wrote is in ours, equal; ours may have added fields only."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), path
        for key, value in theirs.items():
            assert key in ours, f"{path}.{key} missing in modelwire's JSON"
            _sub(ours[key], value, f"{path}.{key}")
        extra = set(ours) - set(theirs)
        assert extra <= ADDED, f"{path}: unexpected fields {extra}"
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), path
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _sub(a, b, f"{path}[{i}]")
    else:
        assert ours == theirs, f"{path}: {ours!r} != {theirs!r}"


def messages() -> list[Msg]:
    return [
        UserMsg("user", [every_block()[0], every_block()[-1]], metadata={"k": 1}),
        SystemMsg("system", "be brief"),
        AssistantMsg(
            "agent",
            every_block(),
            usage=Usage(input_tokens=1, output_tokens=2, cache_input_tokens=3, cache_creation_input_tokens=4),
            finished_reason="completed",
            structured_output={"x": 1},
        ),
    ]


@pytest.mark.parametrize("msg", messages(), ids=lambda m: m.role)
def test_messages_load_in_agentscope_and_back(msg):
    ours = msg.to_dict()
    theirs = as_message.Msg.model_validate(ours).model_dump(mode="json")
    _sub(ours, theirs)
    back = Msg.from_dict(theirs)
    # What AgentScope dropped is only modelwire's additions, at their defaults here.
    assert back == msg


@pytest.mark.parametrize("ev", one_of_each(), ids=lambda e: e.type)
def test_events_load_in_agentscope_and_back(ev):
    ours = ev.to_dict()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        theirs_obj = AS_EVENT.validate_python(ours)
    assert theirs_obj.type == ev.type
    theirs = theirs_obj.model_dump(mode="json")
    _sub(ours, theirs)
    back = E.parse_event(theirs)
    assert type(back) is type(ev)
    assert {k: v for k, v in back.to_dict().items() if k not in ADDED} == {
        k: v for k, v in ours.items() if k not in ADDED
    }


def test_thinking_extras_survive_agentscope():
    msg = AssistantMsg("a", [every_block()[1]])
    theirs = as_message.Msg.model_validate(msg.to_dict())
    assert theirs.content[0].signature == "sig"
    assert Msg.from_dict(theirs.model_dump(mode="json")) == msg


def _strip_times(data):
    if isinstance(data, dict):
        return {k: _strip_times(v) for k, v in data.items() if k not in ("created_at", "finished_at")}
    if isinstance(data, list):
        return [_strip_times(x) for x in data]
    return data


def test_folding_matches_agentscope():
    r = Reply(reply_id="r").start().call().thinking("t", "hm", "m").text("b", "Hel", "lo")
    r.tool_call("c", "f", '{"a"', ": 1}").tool_call("d", "g", "{}").call_end(3, 4, cache_input_tokens=1)
    r.add(E.DataBlockStartEvent, block_id="img", media_type="image/png")
    r.add(E.DataBlockDeltaEvent, block_id="img", media_type="image/png", data="QUI=")
    r.add(E.DataBlockDeltaEvent, block_id="img", media_type="image/png", data="Qw==")
    r.add(E.DataBlockEndEvent, block_id="img")
    r.tool_result("c", "f", "ok ", "fine")
    r.add(E.RequireExternalExecutionEvent, tool_calls=[ToolCallBlock(id="d", name="g", input="{}")])
    r.add(
        E.ExternalExecutionResultEvent,
        execution_results=[ToolResultBlock(id="d", name="g", output="done elsewhere", state="success")],
    )
    r.add(E.HintBlockEvent, block_id="h", hint="note")
    r.end(finished_reason="interrupted")

    ours = AssistantMsg("agent", [], id="r", created_at="T")
    theirs = as_message.AssistantMsg("agent", [], id="r", created_at="T")
    for ev in r.events:
        ours.append_event(ev)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            theirs.append_event(AS_EVENT.validate_python(ev.to_dict()))
    a = _strip_times(ours.to_dict())
    b = _strip_times(theirs.model_dump(mode="json"))
    # AgentScope gives a tool result's text piece a random id; ours is derived from the call id.
    for d in (a, b):
        for block in d["content"]:
            if block["type"] == "tool_result" and isinstance(block["output"], list):
                for out in block["output"]:
                    out.pop("id")
    _sub(a, b)
    assert json.dumps(a["content"], sort_keys=True) == json.dumps(b["content"], sort_keys=True)


def test_events_take_media_the_way_a_message_does():
    """A message takes "jpg" and unpadded base64 (as other tools write them); so do the
    events, and AgentScope's JSON round trip of them."""
    start = E.parse_event({"type": "DATA_BLOCK_START", "reply_id": "r", "block_id": "b", "media_type": "jpg"})
    delta = E.parse_event(
        {"type": "DATA_BLOCK_DELTA", "reply_id": "r", "block_id": "b", "media_type": "image/jpg", "data": "QUI"}
    )
    assert (start.media_type, delta.media_type, delta.data) == ("image/jpeg", "image/jpeg", "QUI=")
    block = DataBlock.from_dict({"source": {"type": "base64", "data": "QUI", "media_type": "jpg"}})
    assert (block.source.media_type, block.source.data) == (delta.media_type, delta.data)
    AS_EVENT.validate_python(delta.to_dict())


def test_agentscope_written_results_load():
    result = as_message.ToolResultBlock(id="c", name="f", output=[as_message.TextBlock(text="x")], state="error")
    call = as_message.ToolCallBlock(id="c", name="f", input="{}", state="finished")
    theirs = as_message.AssistantMsg("a", [call, result])
    ours = Msg.from_dict(theirs.model_dump(mode="json"))
    assert isinstance(ours.content[1], ToolResultBlock) and ours.content[1].state == "error"
    _sub(ours.to_dict(), theirs.model_dump(mode="json"))
