"""The agent end to end, for each protocol, against the local provider server.

The invariant on every test: folding reply_stream's events gives the message the agent
stored (and reply() returns the same), and check_stream accepts the events.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading

import pytest
from modelwire.testing import sse as sse_bodies
from modelwire.testing import stream_reply
from modelwire.testing.server import error_reply, sse_reply
from pydantic import BaseModel

from modelwire import event as E
from modelwire.agent import Agent, Tool
from modelwire.message import AssistantMsg, Msg, UserMsg
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy
from modelwire.protocols import protocol_names

# Every registered protocol, plugins included: each is loaded by its first preset (the one
# chosen where a test needs a preset's own behaviour is named where it is used).
PROTOCOLS = protocol_names()


def run(coro):
    return asyncio.run(coro)


def make_model(server, protocol, preset=None):
    return server.model(protocol, preset=preset)


def reply_in(protocol, *blocks, **kw):
    """A scripted answer in ``protocol``'s own framing (SSE, NDJSON or AWS frames)."""
    return stream_reply(protocol, sse_bodies.body(protocol, *blocks), **kw)


# Where a test arms it (tool name -> its "started" flag), each of the two tools below waits, once
# started, for the other to start too, and notes whether it did: both did only if the two calls ran
# at the same time. Unarmed, they answer at once.
MEETING: dict[str, threading.Event] = {}
MET: dict[str, bool] = {}


def _meet(name: str, other: str) -> bool:
    """Said started; then whether ``other`` started too, within a bound far past any wait."""
    MEETING[name].set()
    return MEETING[other].wait(30)


async def weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: the city's name
    """
    if MEETING:
        MET["weather"] = await asyncio.to_thread(_meet, "weather", "local_time")
    return f"{city}: sunny, 21C"


def local_time(city: str) -> str:
    """The local time in a city."""
    if MEETING:
        MET["local_time"] = _meet("local_time", "weather")
    return f"{city}: 14:05"


async def stream_all(agent, *args, **kw):
    events = []
    async for ev in agent.reply_stream(*args, **kw):
        events.append(ev)
    return events


def fold(events, base: Msg | None = None):
    msg = copy.deepcopy(base) if base is not None else None
    for ev in events:
        if ev.type == "REPLY_START":
            msg = AssistantMsg(ev.name, [], id=ev.reply_id, created_at=msg.created_at if msg else None)
        msg.append_event(ev)
    return msg


def check_invariant(agent, events):
    E.check_stream(events)
    stored = agent.context[-1]
    folded = fold(events)
    folded.created_at = stored.created_at  # the only field not carried by an event
    # equal in the JSON form (a structured output is the model's instance on the stored reply)
    assert folded.to_dict() == stored.to_dict()
    return stored


TWO_CALLS = (
    ("think", "I need both the weather and the time."),
    ("tool", "call_w", "weather", '{"city": "Paris"}'),
    ("tool", "call_t", "local_time", '{"city": "Paris"}'),
)
ANSWER = (("text", "Paris is sunny and it is 14:05."),)


def _replaying_preset(protocol):
    """The first preset of ``protocol`` whose requests send TWO_CALLS' thinking back (the
    protocol's own formatter says which: some dialects drop thinking), and the evidence of it
    a request then holds: the thinking's text or what the protocol replays of it (its
    ``replay_keys``: a signature, encrypted content ...)."""
    from modelwire._record import extras_of
    from modelwire.protocols import decode_sse, get_protocol
    from helpers import fold as fold_events

    wire = get_protocol(protocol)
    for preset in wire.presets:
        events = decode_sse(protocol, sse_bodies.body(protocol, *TWO_CALLS), "r", provider=preset.name)
        reply = fold_events(events)
        (thinking,) = [b for b in reply.content if b.type == "thinking"]
        evidence = [thinking.thinking] + [
            str(v) for k, v in (extras_of(thinking) or {}).items() if k in wire.replay_keys and v
        ]
        model = load_model(f"{preset.name}:m", api_key="k", base_url="http://127.0.0.1:9", capability_lookup=False)
        body = json.dumps(model.build_request([UserMsg("user", "Weather and time in Paris?"), reply])[0])
        if any(e in body for e in evidence):
            return preset.name, evidence
    raise AssertionError(f"no preset of {protocol} sends its own thinking back")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_parallel_tool_calls_then_an_answer_with_thinking_replayed(server, protocol):
    preset, evidence = _replaying_preset(protocol)

    def check_second(request):
        body = json.dumps(request["json"])
        assert "Paris: sunny, 21C" in body and "Paris: 14:05" in body  # both results went back
        assert any(e in body for e in evidence), request["json"]  # and the thinking, as the protocol replays it

    server.script(reply_in(protocol, *TWO_CALLS, delay=0.002), reply_in(protocol, *ANSWER, check=check_second))
    agent = Agent("Buddy", make_model(server, protocol, preset), "Be brief.", tools=[weather, local_time])
    MEETING.update(weather=threading.Event(), local_time=threading.Event())
    MET.clear()
    try:
        events = run(stream_all(agent, UserMsg("user", "Weather and time in Paris?")))
    finally:
        MEETING.clear()
    reply = check_invariant(agent, events)
    assert (
        reply.finished_reason == "completed" and reply.get_text_content().strip() == "Paris is sunny and it is 14:05."
    )
    results = {r.name: (r.state, r.output[0].text) for r in reply.get_content_blocks("tool_result")}
    assert results == {"weather": ("success", "Paris: sunny, 21C"), "local_time": ("success", "Paris: 14:05")}
    calls = reply.get_content_blocks("tool_call")
    assert [r.id for r in reply.get_content_blocks("tool_result")] == [
        c.id for c in calls
    ]  # ids the provider gave, or made where it gives none
    assert all(c.state == "finished" for c in calls)
    assert MET == {"weather": True, "local_time": True}  # the two calls ran at the same time (async and sync)
    assert len(server.requests) == 2
    first = server.requests[0]["json"]
    if protocol == "anthropic":
        assert first["system"] == [{"type": "text", "text": "Be brief."}]
        assert first["tools"][0] == {
            "name": "weather",
            "description": "Current weather for a city.",
            "input_schema": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "the city's name"}},
                "required": ["city"],
                "additionalProperties": False,
            },
        }
    assert reply.usage.input_tokens == 20 and [e.type for e in events].count("MODEL_CALL_START") == 2


def test_reply_returns_what_reply_stream_folds_to(server):
    for _ in range(2):
        server.script(
            sse_reply(sse_bodies.body("anthropic", *TWO_CALLS)), sse_reply(sse_bodies.body("anthropic", *ANSWER))
        )
    a = Agent("Buddy", make_model(server, "anthropic"), tools=[weather, local_time])
    returned = run(a.reply(UserMsg("user", "Weather and time in Paris?")))
    assert returned == a.context[-1]
    b = Agent("Buddy", make_model(server, "anthropic"), tools=[weather, local_time])
    folded = fold(run(stream_all(b, UserMsg("user", "Weather and time in Paris?"))))

    def shape(m):
        def strip(value):
            if isinstance(value, dict):
                return {k: strip(v) for k, v in value.items() if k not in ("id", "created_at", "finished_at")}
            if isinstance(value, list):
                return [strip(v) for v in value]
            return value

        return strip(m.to_dict()["content"])

    assert shape(returned) == shape(folded)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("approve", [True, False])
def test_confirmation_approved_and_denied(server, protocol, approve):
    ran = []

    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return f"deleted {path}"

    server.script(
        reply_in(protocol, ("tool", "call_d", "delete_file", '{"path": "/tmp/x"}')),
        reply_in(protocol, ("text", "Done." if approve else "Okay, I left it.")),
    )
    agent = Agent("Buddy", make_model(server, protocol), tools=[Tool(delete_file, requires_confirmation=True)])
    first = run(stream_all(agent, UserMsg("user", "Delete /tmp/x")))
    assert first[-1].type == "REQUIRE_USER_CONFIRM" and [c.name for c in first[-1].tool_calls] == ["delete_file"]
    (asked,) = first[-1].tool_calls  # its id is the provider's, or made where it gives none
    assert agent.context[-1].content[0].state == "asking" and ran == []
    answer = agent.confirm({asked.id: approve})
    second = run(stream_all(agent, event=answer))
    assert second[0] is answer or second[0] == answer
    reply = check_invariant(agent, first + second)
    (result,) = reply.get_content_blocks("tool_result")
    if approve:
        assert ran == ["/tmp/x"] and result.state == "success"
    else:
        assert ran == [] and result.state == "denied"
    assert reply.finished_reason == "completed" and len(server.requests) == 2


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_external_tool(server, protocol):
    server.script(
        reply_in(protocol, ("tool", "call_x", "deploy", '{"env": "prod"}')),
        reply_in(protocol, ("text", "Deployed.")),
    )
    deploy = Tool(
        name="deploy",
        description="Deploy the app.",
        parameters={"type": "object", "properties": {"env": {"type": "string"}}},
        external=True,
    )
    agent = Agent("Buddy", make_model(server, protocol), tools=[deploy])
    first = run(stream_all(agent, UserMsg("user", "Deploy to prod")))
    assert first[-1].type == "REQUIRE_EXTERNAL_EXECUTION" and agent.context[-1].content[0].state == "submitted"
    from modelwire.message import ToolResultBlock

    result = E.ExternalExecutionResultEvent(
        reply_id=agent.context[-1].id,
        execution_results=[
            ToolResultBlock(id=agent.context[-1].content[0].id, name="deploy", output="ok: v42", state="success")
        ],
    )
    second = run(stream_all(agent, event=result))
    reply = check_invariant(agent, first + second)
    assert reply.content[0].state == "submitted" and reply.get_content_blocks("tool_result")[0].output == "ok: v42"
    assert agent.pending_calls(reply.id) == []  # answered: nothing waits
    assert "ok: v42" in json.dumps(server.requests[1]["json"])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_interrupt_mid_stream(server, protocol):
    long_text = " ".join(f"word{i}" for i in range(200))
    server.script(reply_in(protocol, ("text", long_text), delay=0.01))
    agent = Agent("Buddy", make_model(server, protocol))

    async def go():
        events = []
        async for ev in agent.reply_stream(UserMsg("user", "Talk")):
            events.append(ev)
            if ev.type == "TEXT_BLOCK_DELTA" and len(events) > 8:
                agent.interrupt()
        return events

    events = run(go())
    reply = check_invariant(agent, events)
    assert reply.finished_reason == "interrupted" and 0 < len(reply.get_text_content()) < len(long_text)
    assert events[-2].type == "MODEL_CALL_END" and events[-2].finished_reason == "interrupted"


def test_interrupting_a_parked_reply_answers_its_calls(server):
    server.script(sse_reply(sse_bodies.body("anthropic", ("tool", "call_d", "rm", '{"path": "/"}'))))
    agent = Agent(
        "Buddy", make_model(server, "anthropic"), tools=[Tool(lambda path: "no", name="rm", requires_confirmation=True)]
    )
    first = run(stream_all(agent, UserMsg("user", "rm")))
    second = run(stream_all(agent, event=E.UserInterruptEvent(reply_id=agent.context[-1].id)))
    reply = check_invariant(agent, first + second)
    assert reply.finished_reason == "interrupted" and reply.get_content_blocks("tool_result")[0].state == "interrupted"


async def _until(condition, within: float = 30.0) -> None:
    """Once ``condition()`` holds; a test failure if it does not within ``within`` seconds."""
    deadline = asyncio.get_running_loop().time() + within
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"{condition.__name__} did not come true"
        await asyncio.sleep(0.005)


def test_cancelling_the_task_keeps_the_stored_reply_consistent(server):
    server.script(sse_reply(sse_bodies.body("openai-chat", ("text", " ".join(["x"] * 200))), delay=0.01))
    agent = Agent("Buddy", make_model(server, "openai-chat"))

    def talking():
        reply = agent.context[-1] if agent.context else None
        return reply is not None and reply.role == "assistant" and reply.get_text_content()

    async def go():
        task = asyncio.create_task(agent.reply(UserMsg("user", "Talk")))
        await _until(talking)  # cancelled mid-answer: the text has begun, and has 2 s of words to go
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(go())
    stored = agent.context[-1]
    assert stored.finished_reason == "interrupted" and stored.content[0].finished_at is not None


# How each protocol's last request of a reply out of iterations asks for no more tool calls.
def _no_more_calls(model):
    """What a request that asks for no tool call holds, as the protocol's own formatter says
    it: the fields a tool choice of "none" changes against "auto", for a conversation with a
    tool round, and their values under "none" (None: left out). A protocol with no "none"
    withholds the tools, or (Converse) names none of the agent's."""
    from modelwire.message import ToolCallBlock, ToolResultBlock

    call = ToolCallBlock(id="call_0", name="weather", input='{"city": "Oslo"}')
    result = ToolResultBlock(id="call_0", name="weather", output="Oslo: sunny, 21C", state="success")
    history = [UserMsg("user", "Weather?"), AssistantMsg("Buddy", [call, result])]
    tools = [Tool(weather)]
    none = model.build_request(history, tools, "none")[0]
    auto = model.build_request(history, tools, "auto")[0]
    changed = {
        k for k in none.keys() | auto.keys() if k != model.formatter.payload_turns and none.get(k) != auto.get(k)
    }
    assert changed, "a tool choice of none changes nothing in the request"
    return {k: none.get(k) for k in changed}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_max_iters(server, protocol):
    for i in range(2):
        server.script(reply_in(protocol, ("tool", f"call_{i}", "weather", '{"city": "Oslo"}')))

    model = make_model(server, protocol)
    no_more_calls = _no_more_calls(model)

    def last_call_has_no_tool_choice_left(request):
        assert {k: request["json"].get(k) for k in no_more_calls} == no_more_calls, request["json"]

    server.script(
        reply_in(protocol, ("text", "I keep checking; it is sunny."), check=last_call_has_no_tool_choice_left)
    )
    agent = Agent("Buddy", model, tools=[weather], max_iters=2)
    events = run(stream_all(agent, UserMsg("user", "Weather?")))
    reply = check_invariant(agent, events)
    assert reply.finished_reason == "exceed_max_iters" and events[-2].type == "EXCEED_MAX_ITERS"
    assert len(server.requests) == 3 and len(reply.get_content_blocks("tool_result")) == 2


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_provider_error_mid_reply(server, protocol):
    server.script(
        reply_in(protocol, ("tool", "call_w", "weather", '{"city": "Rome"}')),
        reply_in(protocol, ("text", " ".join(["partial"] * 30)), drop_after=8),
    )
    agent = Agent("Buddy", make_model(server, protocol), tools=[weather])
    events = run(stream_all(agent, UserMsg("user", "Weather in Rome?"), raise_errors=False))
    reply = check_invariant(agent, events)
    assert reply.finished_reason == "error" and reply.error.type == "connection"
    assert reply.get_content_blocks("tool_result")[0].output[0].text == "Rome: sunny, 21C"
    assert "partial" in (reply.get_text_content() or "")


def test_http_error_on_first_call(server):
    server.script(error_reply(401, {"error": {"message": "bad key", "type": "invalid_api_key"}}))
    agent = Agent("Buddy", make_model(server, "openai-responses"))
    events = run(stream_all(agent, UserMsg("user", "hi"), raise_errors=False))
    reply = check_invariant(agent, events)
    assert [e.type for e in events] == ["REPLY_START", "REPLY_END"]
    assert reply.error.type == "authentication" and reply.error.message == "bad key"


def test_a_failed_reply_raises_its_typed_error_unless_asked_not_to(server):
    from modelwire import errors as Err

    server.script(
        error_reply(401, {"error": {"message": "bad key", "type": "invalid_api_key"}}),
        error_reply(401, {"error": {"message": "bad key", "type": "invalid_api_key"}}),
    )
    agent = Agent("Buddy", make_model(server, "openai-responses"))
    with pytest.raises(Err.AuthenticationError, match="bad key") as caught:
        run(agent.reply("hi"))  # a plain string is the user's words
    partial = caught.value.partial
    assert (
        partial.finished_reason == "error"
        and partial.error.type == "authentication"
        and partial.id == agent.context[-1].id
    )
    events = []

    async def consume():
        async for ev in agent.reply_stream("again"):
            events.append(ev)

    with pytest.raises(Err.AuthenticationError):
        run(consume())
    assert events[-1].type == "REPLY_END" and events[-1].error.message == "bad key"  # the stream ended first


def test_plain_strings_and_message_json_are_input_and_the_sync_entry_points_run(server):
    server.script(
        sse_reply(sse_bodies.body("anthropic", ("text", "Hello."))),
        sse_reply(sse_bodies.body("anthropic", ("text", "Hi again."))),
        sse_reply(sse_bodies.body("anthropic", ("text", "Direct."))),
    )
    model = make_model(server, "anthropic")
    agent = Agent("Buddy", model)
    first = agent.reply_sync("Hi")
    second = agent.reply_sync([{"role": "user", "name": "me", "content": [{"type": "text", "text": "And you?"}]}])
    direct = model.complete_sync("Just say it.")
    assert (first.get_text_content().strip(), second.get_text_content().strip(), direct.get_text_content().strip()) == (
        "Hello.",
        "Hi again.",
        "Direct.",
    )
    sent = server.requests[1]["json"]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"] and sent[0]["content"][0]["text"] == "Hi"
    assert server.requests[2]["json"]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Just say it."}]}
    ]

    async def inside_a_loop():
        agent.reply_sync("no")

    from modelwire.errors import AgentError

    with pytest.raises(AgentError, match="use `await agent.reply"):
        run(inside_a_loop())


def test_bad_arguments_and_tool_exceptions_become_error_results(server):
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        return a / b

    server.script(
        sse_reply(
            sse_bodies.body(
                "anthropic",
                ("tool", "c1", "divide", '{"a": 1, "b": 0}'),
                ("tool", "c2", "divide", '{"a": "x"}'),
                ("tool", "c3", "nope", "{}"),
                ("tool", "c4", "divide", '{"a": 1,'),
            )
        ),
        sse_reply(sse_bodies.body("anthropic", ("text", "Sorry."))),
    )
    agent = Agent("Buddy", make_model(server, "anthropic"), tools=[divide])
    events = run(stream_all(agent, UserMsg("user", "Divide")))
    reply = check_invariant(agent, events)
    results = {r.id: (r.state, r.output[0].text) for r in reply.get_content_blocks("tool_result")}
    assert results["c1"][0] == "error" and "ZeroDivisionError" in results["c1"][1]
    assert (
        results["c2"][0] == "error"
        and "b: Field required" in results["c2"][1]
        and "a: Input should be a valid integer" in results["c2"][1]
    )
    assert results["c3"][0] == "error" and "no tool named 'nope'" in results["c3"][1]
    assert results["c4"][0] == "error" and "not valid JSON" in results["c4"][1]
    sent = json.dumps(server.requests[1]["json"])
    assert "ZeroDivisionError" in sent and '"is_error": true' in sent


def test_streaming_tools_and_data_results(server):
    from modelwire.message import Base64Source, DataBlock

    async def report(topic: str):
        """Write a report, piece by piece."""
        yield f"Report on {topic}: "
        await asyncio.sleep(0.01)
        yield "all good."
        yield DataBlock(id="chart", source=Base64Source(data="iVBORw0KGgo=", media_type="image/png"))

    server.script(
        sse_reply(sse_bodies.body("openai-responses", ("tool", "c1", "report", '{"topic": "sales"}'))),
        sse_reply(sse_bodies.body("openai-responses", ("text", "Here."))),
    )
    agent = Agent("Buddy", make_model(server, "openai-responses"), tools=[report])
    events = run(stream_all(agent, UserMsg("user", "Report")))
    reply = check_invariant(agent, events)
    assert [e.type for e in events if e.type.startswith("TOOL_RESULT")] == [
        "TOOL_RESULT_START",
        "TOOL_RESULT_TEXT_DELTA",
        "TOOL_RESULT_TEXT_DELTA",
        "TOOL_RESULT_DATA_DELTA",
        "TOOL_RESULT_END",
    ]
    (result,) = reply.get_content_blocks("tool_result")
    assert result.output[0].text == "Report on sales: all good." and result.output[1].source.media_type == "image/png"
    output = server.requests[1]["json"]["input"][-1]["output"]
    assert output[1] == {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"}


class Weather(BaseModel):
    city: str
    temperature_c: int


@pytest.mark.parametrize(
    "model_string",
    ["anthropic:claude-test", "openai:gpt-test", "deepseek:deepseek-chat", "openai-responses:resp-test"],
)
def test_structured_output(server, model_string):
    """Native JSON-schema output where the provider has it (OpenAI Chat and Responses);
    a final_answer tool where it has not (Anthropic, and DeepSeek, which takes JSON mode only)."""
    model = load_model(
        model_string,
        api_key="sk-test",
        base_url=server.url + ("" if model_string.startswith("anthropic") else "/v1"),
        retry=RetryPolicy(max_retries=0),
    )
    protocol = model.protocol
    native = model.capabilities.native_structured_output
    assert native == (model_string.split(":")[0] in ("openai", "openai-responses"))
    if native:
        server.script(reply_in(protocol, ("text", '{"city": "Paris", "temperature_c": 21}')))
    else:
        server.script(
            reply_in(protocol, ("tool", "c1", "final_answer", '{"city": "Paris", "temperature_c": 21}')),
        )
    agent = Agent("Buddy", model)
    events = run(stream_all(agent, UserMsg("user", "Weather in Paris as JSON"), structured_model=Weather))
    reply = check_invariant(agent, events)
    # the validated instance on the message, its JSON form on the event and in the message's JSON
    assert isinstance(reply.structured_output, Weather) and reply.structured_output.city == "Paris"
    assert reply.structured_output == Weather(city="Paris", temperature_c=21)
    end = [e for e in events if e.type == "REPLY_END"][-1]
    assert end.structured_output == {"city": "Paris", "temperature_c": 21}
    assert reply.to_dict()["structured_output"] == {"city": "Paris", "temperature_c": 21}
    assert Msg.from_dict(json.loads(reply.to_json())).structured_output == {"city": "Paris", "temperature_c": 21}
    sent = server.requests[0]["json"]
    if not native:
        assert sent["tools"][-1].get("name", sent["tools"][-1].get("function", {}).get("name")) == "final_answer"
        assert "response_format" not in sent
    elif protocol == "openai-chat":
        assert sent["response_format"]["json_schema"]["name"] == "Weather"
    else:
        assert sent["text"]["format"]["name"] == "Weather"


def test_structured_output_is_native_on_claude_models_that_take_it(server):
    model = load_model(
        "anthropic:claude-opus-4-7", api_key="sk-test", base_url=server.url, retry=RetryPolicy(max_retries=0)
    )
    server.script(sse_reply(sse_bodies.body("anthropic", ("text", '{"city": "Paris", "temperature_c": 21}'))))
    agent = Agent("Buddy", model)
    reply = run(agent.reply(UserMsg("user", "Weather in Paris as JSON"), structured_model=Weather))
    assert reply.structured_output == Weather(city="Paris", temperature_c=21)
    sent = server.requests[0]["json"]
    assert sent["output_config"]["format"]["type"] == "json_schema" and "tools" not in sent


@pytest.mark.parametrize("spec", ["anthropic:claude-opus-4-7", "anthropic:claude-sonnet-4-20250514"])
def test_a_refusal_is_the_answer_not_an_invalid_structure(server, spec):
    model = load_model(spec, api_key="sk-test", base_url=server.url, retry=RetryPolicy(max_retries=0))
    server.script(sse_reply(sse_bodies.body("anthropic", ("text", "I can't help with that."), stop="refusal")))
    agent = Agent("Buddy", model)
    events = run(stream_all(agent, UserMsg("user", "Weather in Paris as JSON"), structured_model=Weather))
    reply = check_invariant(agent, events)
    end = events[-1]
    assert end.type == "REPLY_END" and end.finished_reason == "completed" and end.error is None
    assert reply.structured_output is None and reply.get_text_content() == "I can't help with that."
    assert len(server.requests) == 1  # not asked again for the structure


def test_structured_output_never_forces_a_tool_while_claude_thinks_on_a_budget(server):
    """Sonnet 4 has no native structured output and refuses a forced tool with budget
    thinking: after a prose answer the agent asks for the tool instead of forcing it."""
    model = load_model(
        "anthropic:claude-sonnet-4-20250514",
        api_key="sk-test",
        base_url=server.url,
        retry=RetryPolicy(max_retries=0),
        thinking=True,
    )
    assert model.forced_tool_ok({"thinking": False}) and not model.forced_tool_ok()
    server.script(
        sse_reply(sse_bodies.body("anthropic", ("think", "Hmm."), ("text", "It is 21 degrees in Paris."))),
        sse_reply(
            sse_bodies.body(
                "anthropic",
                ("think", "Now the tool."),
                ("tool", "c1", "final_answer", '{"city": "Paris", "temperature_c": 21}'),
            )
        ),
    )
    agent = Agent("Buddy", model)
    events = run(stream_all(agent, UserMsg("user", "Weather in Paris?"), structured_model=Weather))
    reply = check_invariant(agent, events)
    assert reply.structured_output == Weather(city="Paris", temperature_c=21)
    second = server.requests[1]["json"]
    assert second.get("tool_choice", {}).get("type") in (None, "auto") and second["thinking"]["type"] == "enabled"
    assert "final_answer" in second["messages"][-1]["content"][-1]["text"]  # asked, as a user turn
    assert all(m.role != "user" or "final_answer" not in m.get_text_content() for m in agent.context)  # not kept


def test_a_structured_answer_that_does_not_validate_raises_from_reply(server):
    """The README promises errors are never silent: with ``structured_model=``, an answer that
    fails validation ends the reply with the error on the message and raises it from
    ``reply()`` (with the message as ``partial``); ``raise_errors=False`` only returns it."""
    from modelwire.errors import StructuredOutputError

    model = load_model(
        "openai:gpt-test", api_key="sk-test", base_url=server.url + "/v1", retry=RetryPolicy(max_retries=0)
    )
    server.script(
        reply_in("openai-chat", ("text", '{"city": "Paris", "temperature_c": "warm"}')),
        reply_in("openai-chat", ("text", '{"city": "Oslo"}')),
    )
    agent = Agent("Buddy", model)
    with pytest.raises(StructuredOutputError, match="structured output is not valid") as raised:
        run(agent.reply(UserMsg("user", "Weather in Paris as JSON"), structured_model=Weather))
    reply = raised.value.partial
    assert (
        reply.finished_reason == "error" and reply.error.type == "invalid_request" and reply.structured_output is None
    )
    quiet = run(agent.reply(UserMsg("user", "And Oslo?"), structured_model=Weather, raise_errors=False))
    assert quiet.finished_reason == "error" and "not valid" in quiet.error.message


def test_an_error_out_of_a_sync_call_is_not_chained_to_a_missing_event_loop(server):
    """``reply_sync()`` / ``complete_sync()`` raise the error itself, not "during handling of
    RuntimeError: no running event loop"."""
    import traceback

    from modelwire.errors import RateLimitError

    server.script(
        error_reply(429, {"error": {"type": "rate_limit_error", "message": "slow down"}}),
        error_reply(429, {"error": {"type": "rate_limit_error", "message": "slow down"}}),
    )
    model = load_model(
        "anthropic:claude-test", api_key="sk-test", base_url=server.url, retry=RetryPolicy(max_retries=0)
    )
    with pytest.raises(RateLimitError) as raised:
        model.complete_sync([UserMsg("user", "hi")])
    assert "no running event loop" not in "".join(traceback.format_exception(raised.value))
    with pytest.raises(RateLimitError) as raised:
        Agent("Buddy", model).reply_sync("hi")
    assert "no running event loop" not in "".join(traceback.format_exception(raised.value))


def test_save_load_and_continue(server, tmp_path):
    server.script(sse_reply(sse_bodies.body("anthropic", *TWO_CALLS)), sse_reply(sse_bodies.body("anthropic", *ANSWER)))
    agent = Agent("Buddy", make_model(server, "anthropic"), tools=[weather, local_time])
    run(agent.reply(UserMsg("user", "Weather and time in Paris?")))
    path = tmp_path / "agent.json"
    agent.save(path)

    def check(request):
        messages = request["json"]["messages"]
        assert messages[1]["content"][0]["signature"] == "sig-I need b"  # thinking replayed after the reload
        assert messages[-1]["content"][-1]["text"] == "And tomorrow?"

    server.script(sse_reply(sse_bodies.body("anthropic", ("text", "Also sunny.")), check=check))
    again = Agent("Buddy", make_model(server, "anthropic"), tools=[weather, local_time])
    again.load(path)
    assert again.context == agent.context
    reply = run(again.reply(UserMsg("user", "And tomorrow?")))
    assert reply.get_text_content().strip() == "Also sunny." and len(again.context) == 4


def test_interrupt_while_waiting_for_a_slow_model_takes_effect_at_once(server):
    # The model stalls for 30 s before its first token; interrupt() must not wait for it.
    server.script(sse_reply(sse_bodies.body("anthropic", ("text", "late answer")), stall_after=1, stall=30))
    agent = Agent("Buddy", make_model(server, "anthropic"))

    async def go():
        interrupter = asyncio.create_task(interrupt_once_asked())
        events = [ev async for ev in agent.reply_stream(UserMsg("user", "Hi"))]
        await interrupter
        return events

    async def interrupt_once_asked():
        await _until(lambda: server.requests)
        agent.interrupt()

    events = run(go())
    assert not server.disconnects  # the server is still in its 30 s stall: it notes the close at its next write
    reply = check_invariant(agent, events)
    assert reply.finished_reason == "interrupted"


def test_interrupt_while_tools_run(server):
    async def slow(x: int) -> str:
        """Takes a while."""
        await asyncio.sleep(60)
        ended.append(x)
        return "never"

    ended: list[int] = []

    server.script(sse_reply(sse_bodies.body("openai-chat", ("tool", "c1", "slow", '{"x": 1}'))))
    agent = Agent("Buddy", make_model(server, "openai-chat"), tools=[slow])

    async def go():
        events = []
        async for ev in agent.reply_stream(UserMsg("user", "Go")):
            events.append(ev)
            if ev.type == "TOOL_RESULT_START":
                asyncio.get_running_loop().call_soon(agent.interrupt)
        return events

    events = run(go())
    assert ended == []  # the tool was cancelled in its 60 s sleep, not waited for
    reply = check_invariant(agent, events)
    (result,) = reply.get_content_blocks("tool_result")
    assert result.state == "interrupted" and reply.finished_reason == "interrupted"


def test_reply_resumes_a_parked_reply_and_returns_what_was_stored(server, caplog):
    server.script(
        sse_reply(sse_bodies.body("anthropic", ("tool", "call_d", "rm", '{"path": "/tmp/x"}'))),
        sse_reply(sse_bodies.body("anthropic", ("text", "Removed."))),
    )
    agent = Agent(
        "Buddy",
        make_model(server, "anthropic"),
        tools=[Tool(lambda path: f"removed {path}", name="rm", requires_confirmation=True)],
    )
    with caplog.at_level("WARNING", logger="modelwire.agent"):
        parked = run(agent.reply(UserMsg("user", "rm /tmp/x")))
    assert parked == agent.context[-1] and parked.content[0].state == "asking" and parked.finished_reason is None
    # Returned while it waits: said, with what answers it.
    (said,) = [r.getMessage() for r in caplog.records if r.name == "modelwire.agent"]
    assert (
        f"reply {parked.id} is waiting, not finished" in said
        and "(rm) wait for the user's confirmation" in said
        and "agent.confirm" in said
    )
    caplog.clear()
    done = run(agent.reply(event=agent.confirm({"call_d": True})))
    assert not [r for r in caplog.records if r.name == "modelwire.agent"]
    assert done == agent.context[-1] and done.finished_reason == "completed"
    assert done.get_content_blocks("tool_result")[0].output[0].text == "removed /tmp/x"


def test_an_agent_takes_a_model_string_and_refuses_what_is_no_model(server, monkeypatch):
    """``Agent("b", "openai:gpt-4.1")``, as pydantic-ai users write it, loads the model; what is
    neither a model nor a model string is refused when the agent is made, not at its first reply."""
    from modelwire.errors import ConfigError

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    server.script(reply_in("openai-chat", ("text", "Hello.")))
    agent = Agent("b", "openai:gpt-4.1")
    assert agent.model.name == "gpt-4.1"
    assert run(agent.reply("hi")).get_text_content().strip() == "Hello."
    with pytest.raises(ConfigError, match="model string"):
        Agent("b", 42)
