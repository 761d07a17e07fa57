"""Production loops against local servers: failover between providers (with the history made
valid for the next one), the circuit breaker, a cap on concurrent calls, and usage limits."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

import sdk_params
from modelwire import event as E
from modelwire.agent import Agent, UsageLimits
from modelwire.errors import UsageLimitExceeded
from modelwire.errors import ConnectionError, IncompleteStreamError, InvalidRequestError
from modelwire.message import AssistantMsg, TextBlock, ToolCallBlock, ToolResultBlock, UserMsg
from modelwire.models import FallbackModel, load_model
from modelwire.models.transport import RetryPolicy
from modelwire.testing import ProviderServer, sse_reply
from modelwire.testing.server import error_reply
from modelwire.testing.sse import body

NO_RETRY = RetryPolicy(max_retries=0)
OVERLOADED = error_reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})


def anthropic(server, **kw):
    return load_model("anthropic:claude-sonnet-4-5", api_key="k", base_url=server.url, retry=NO_RETRY, **kw)


def openai(server, **kw):
    return load_model("openai:gpt-4.1", api_key="k", base_url=server.url + "/v1", retry=NO_RETRY, **kw)


def events_of(model, messages):
    async def go():
        return [e async for e in model.stream(messages, reply_id="r")]

    return asyncio.run(go())


def well_formed(events) -> bool:
    """One model call's events, as a reply would hold them, pass the grammar check."""
    framed = [
        E.ReplyStartEvent(session_id="s", reply_id="r", name="a"),
        *events,
        E.ReplyEndEvent(session_id="s", reply_id="r"),
    ]
    return E.check_stream(framed) == len(framed)


# -- failover -------------------------------------------------------------------------------------


def test_an_overloaded_model_fails_over_and_the_end_says_who_answered():
    with ProviderServer() as a, ProviderServer() as b:
        a.script(OVERLOADED)
        b.script(sse_reply(body("openai-chat", ("text", "From the backup."))))
        events = events_of(FallbackModel([anthropic(a), openai(b)]), [UserMsg("u", "Hi")])
    assert well_formed(events)  # one call: the failed one is not passed on
    assert [e.type for e in events].count("MODEL_CALL_START") == 1
    end = events[-1]
    assert end.metadata["fallback"]["answered_by"] == "openai:gpt-4.1"
    (failed,) = end.metadata["fallback"]["failed"]
    assert (
        failed["model"] == "anthropic:claude-sonnet-4-5"
        and "OverloadedError" in failed["error"]
        and "Overloaded" in failed["error"]
    )
    assert "".join(e.delta for e in events if e.type == "TEXT_BLOCK_DELTA").strip() == "From the backup."


def test_the_circuit_breaker_keeps_a_failed_model_out_for_a_while():
    now = [0.0]
    with ProviderServer() as a, ProviderServer() as b:
        a.script(OVERLOADED, sse_reply(body("anthropic", ("text", "Primary is back."))))
        b.respond = lambda request: sse_reply(body("openai-chat", ("text", "Backup.")))
        model = FallbackModel([anthropic(a), openai(b)], cooldown=30, clock=lambda: now[0])
        first = asyncio.run(model.complete("one"))
        second = asyncio.run(model.complete("two"))  # the primary is kept out: not asked
        assert len(a.requests) == 1 and len(b.requests) == 2
        now[0] += 31
        third = asyncio.run(model.complete("three"))  # cooled down: asked first again
        assert len(a.requests) == 2
    assert [m.get_text_content().strip() for m in (first, second, third)] == ["Backup.", "Backup.", "Primary is back."]


def test_no_failover_once_output_has_begun_nor_for_a_bad_request():
    with ProviderServer() as a, ProviderServer() as b:
        a.script(sse_reply(body("anthropic", ("text", "one two three four five six")), drop_after=4))
        b.respond = lambda request: sse_reply(body("openai-chat", ("text", "Backup.")))
        with pytest.raises((ConnectionError, IncompleteStreamError)) as info:
            asyncio.run(FallbackModel([anthropic(a), openai(b)]).complete("hi"))
        assert info.value.partial.get_text_content() and not b.requests  # what came is kept; no silent switch
        a.script(
            error_reply(400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad request"}})
        )
        with pytest.raises(InvalidRequestError):
            asyncio.run(FallbackModel([anthropic(a), openai(b)]).complete("hi"))
        assert not b.requests


def test_continue_after_output_goes_on_at_the_next_model_and_says_so():
    with ProviderServer() as a, ProviderServer() as b:
        a.script(sse_reply(body("anthropic", ("text", "one two three four five six")), drop_after=4))
        b.respond = lambda request: sse_reply(body("openai-chat", ("text", "Backup answer.")))
        model = FallbackModel([anthropic(a), openai(b)], continue_after_output=True)
        events = events_of(model, [UserMsg("u", "Hi")])
        assert len(b.requests) == 1 and b.requests[0]["json"]["messages"][-1]["content"] == "Hi"  # the same call, again
    assert well_formed(events)
    ends = [e for e in events if e.type == "MODEL_CALL_END"]
    assert [e.type for e in events].count("MODEL_CALL_START") == 2 and len(ends) == 2
    broken, answered = ends
    assert broken.metadata["fallback"]["continued_on"] == "openai:gpt-4.1"
    assert broken.metadata["fallback"]["failed_after_output"]["model"] == "anthropic:claude-sonnet-4-5"
    assert answered.metadata["fallback"]["answered_by"] == "openai:gpt-4.1"
    assert answered.metadata["fallback"]["failed"][0]["after_output"] == "true"
    texts = "".join(e.delta for e in events if e.type == "TEXT_BLOCK_DELTA")
    assert texts.startswith("one") and texts.strip().endswith("Backup answer.")  # the partial output stays, marked


def test_when_all_fail_the_last_error_says_the_others_failed_too_and_the_reply_ends_cleanly():
    with ProviderServer() as a, ProviderServer() as b:
        a.script(OVERLOADED)
        b.script(error_reply(503, {"error": {"message": "upstream down", "type": "server_error"}}))
        agent = Agent("x", FallbackModel([anthropic(a), openai(b)]))
        events = []

        async def go():
            async for e in agent.reply_stream("hi", raise_errors=False):
                events.append(e)

        asyncio.run(go())
    end = events[-1]
    assert end.type == "REPLY_END" and end.finished_reason == "error"
    assert "upstream down" in end.error.message and "anthropic:claude-sonnet-4-5 failed too" in end.error.message
    assert E.check_stream(events) == len(events)


def test_the_next_model_gets_the_history_made_valid_for_it():
    history = [
        UserMsg("u", "Weather in Paris?"),
        AssistantMsg(
            "a",
            [
                ToolCallBlock(id="functions.get_weather:0", name="get_weather", input='{"city": "Paris"}'),
                ToolResultBlock(id="functions.get_weather:0", name="get_weather", output="sunny", state="success"),
                TextBlock(text="Sunny."),
            ],
        ),
        UserMsg("u", "And tomorrow?"),
    ]
    tools = [
        {
            "name": "get_weather",
            "description": "w",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ]
    with ProviderServer() as a, ProviderServer() as b:
        a.script(error_reply(503, {"error": {"message": "down", "type": "server_error"}}))
        b.script(sse_reply(body("anthropic", ("text", "Rain."))))
        primary = load_model("groq:moonshotai/kimi-k2-instruct", api_key="k", base_url=a.url + "/v1", retry=NO_RETRY)
        model = FallbackModel([primary, anthropic(b)])
        asyncio.run(model.complete(history, tools=tools))
        sent = b.requests[0]["json"]
    sdk_params.streaming_request("anthropic", sent)
    assert "functions.get_weather:0" not in json.dumps(sent)  # an id Anthropic refuses, rewritten for it


def test_load_model_with_a_list_and_a_profile_with_a_fallback(tmp_path, monkeypatch):
    with ProviderServer() as a, ProviderServer() as b:
        a.script(OVERLOADED)
        b.script(sse_reply(body("openai-chat", ("text", "Listed backup."))))
        model = load_model(
            ["anthropic:claude-sonnet-4-5", "openai:gpt-4.1"], api_key="k", retry=NO_RETRY, base_url=None
        )
        assert isinstance(model, FallbackModel) and [m.name for m in model.models] == ["claude-sonnet-4-5", "gpt-4.1"]
        config = tmp_path / "modelwire.toml"
        config.write_text(
            (
                f'[profiles.safe]\nmodel = "anthropic:claude-sonnet-4-5"\nbase_url = "{a.url}"\nfallback '
                '= ["openai:gpt-4.1"]\n'
            )
        )
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        monkeypatch.setenv("OPENAI_BASE_URL", b.url + "/v1")
        profiled = load_model("safe", retry=NO_RETRY)
        assert isinstance(profiled, FallbackModel)
        reply = asyncio.run(profiled.complete("hi"))
    assert reply.get_text_content().strip() == "Listed backup."


# -- at most N calls at once ------------------------------------------------------------------


def test_max_concurrent_holds_calls_to_n_and_a_cancelled_call_frees_its_slot():
    changed = threading.Condition()
    active = [0]
    most = [0]
    cancelled = threading.Event()  # set once the client has cancelled its calls

    def respond(request):
        text = request["json"]["messages"][0]["content"][0]["text"]
        with changed:
            active[0] += 1
            most[0] = max(most[0], active[0])
            changed.notify_all()
            # The first call stays in flight until a second one is (as max_concurrent=2 lets it
            # be), so that two run together however slowly the calls come.
            changed.wait_for(lambda: most[0] >= 2, timeout=60)
        if text.startswith("cancelled"):
            cancelled.wait(60)  # still in flight when the client cancels it, however long that takes
        with changed:
            active[0] -= 1
        return sse_reply(body("anthropic", ("text", text)))

    with ProviderServer() as server:
        server.respond = respond
        model = anthropic(server, max_concurrent=2)

        async def go():
            answers = await asyncio.gather(*(model.complete(f"call {n}") for n in range(6)))
            assert most[0] == 2  # never more than two at the server, and two did run together
            # A call cancelled while it waits for a slot takes none, and one cancelled in
            # flight gives its slot back: the next calls still run.
            waiting = [asyncio.ensure_future(model.complete(f"cancelled {n}")) for n in range(3)]
            while len(server.requests) < 8:  # two of them at the server, the third waiting for a slot
                await asyncio.sleep(0.005)
            for task in waiting:
                task.cancel()
            await asyncio.gather(*waiting, return_exceptions=True)
            cancelled.set()
            assert model.in_flight == 0
            after = await asyncio.gather(*(model.complete(f"after {n}") for n in range(2)))
            return answers, after

        answers, after = asyncio.run(go())
    assert [a.get_text_content().strip() for a in answers] == [f"call {n}" for n in range(6)]  # none starved
    assert [a.get_text_content().strip() for a in after] == ["after 0", "after 1"]
    with pytest.raises(Exception, match="max_concurrent"):
        load_model("anthropic:claude-sonnet-4-5", api_key="k", max_concurrent=0)


# -- usage limits -------------------------------------------------------------------------------


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@pytest.mark.parametrize(
    "limits,name",
    [
        (UsageLimits(requests=1), "requests"),
        (UsageLimits(output_tokens=20), "output_tokens"),
        (UsageLimits(total_tokens=50), "total_tokens"),
        (UsageLimits(cost=0.01), "cost"),
    ],
)
def test_a_limit_stops_the_reply_before_the_call_that_would_pass_it(limits, name):
    with ProviderServer() as server:
        server.script(
            sse_reply(body("anthropic", ("tool", "toolu_1", "weather", '{"city": "Oslo"}'), usage=(30, 20))),
            sse_reply(body("anthropic", ("text", "Sunny."))),
        )
        agent = Agent(
            "a",
            load_model("anthropic:claude-test", api_key="k", base_url=server.url, retry=NO_RETRY),
            tools=[weather],
            limits=limits,
        )
        events = []

        async def go():
            async for e in agent.reply_stream("Weather in Oslo?", raise_errors=False):
                events.append(e)

        asyncio.run(go())
        assert len(server.requests) == 1  # the second call was not made
    end = events[-1]
    assert (
        end.type == "REPLY_END"
        and end.finished_reason == "error"
        and end.error.type == "rate_limit"
        and name in end.error.message
    )
    reply = agent.context[-1]
    assert reply.get_content_blocks("tool_result")[0].output[0].text == "sunny in Oslo"  # kept
    assert E.check_stream(events) == len(events)
    with pytest.raises(UsageLimitExceeded) as info:
        server_free = Agent(
            "a",
            load_model("anthropic:claude-test", api_key="k", base_url="http://127.0.0.1:9"),
            limits=UsageLimits(requests=0),
        )
        asyncio.run(server_free.reply("hi"))
    assert info.value.limit == "requests"


def test_limits_are_checked_when_made():
    with pytest.raises(Exception, match="requests"):
        UsageLimits(requests=-1)
