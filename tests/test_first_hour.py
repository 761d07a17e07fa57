"""What a newcomer trips on in the first hour: each mistake answered with its fix."""

from __future__ import annotations

import asyncio

import pytest
from modelwire.testing.server import error_reply

from modelwire import errors
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy


def test_a_misspelt_option_says_which_one_was_meant():
    with pytest.raises(errors.UnsupportedOptionError) as caught:
        load_model("anthropic:claude-sonnet-4-5", api_key="k", temprature=0.5)
    assert "did you mean 'temperature'?" in str(caught.value)
    with pytest.raises(errors.UnsupportedOptionError) as caught:
        load_model("anthropic:claude-sonnet-4-5", api_key="k", zzzz=1)
    assert "did you mean" not in str(caught.value) and "known options" in str(caught.value)


# Anthropic's answer to an unknown model id: {"type": "error", "error": {"type": "not_found_error",
# "message": "model: <id>"}} (the API's 404, as the anthropic SDK's NotFoundError carries it).
def _not_found(model: str):
    return error_reply(404, {"type": "error", "error": {"type": "not_found_error", "message": f"model: {model}"}})


def _ask(server, spec: str) -> errors.ProviderError:
    model = load_model(spec, api_key="sk-test", base_url=server.url, retry=RetryPolicy(max_retries=0))
    server.script(_not_found(spec.split(":", 1)[1]))
    with pytest.raises(errors.ProviderError) as caught:
        asyncio.run(model.complete([UserMsg("user", "hi")]))
    return caught.value


def test_a_misspelt_model_answered_404_names_the_model_the_table_knows(server):
    err = _ask(server, "anthropic:claude-sonet-4-5")
    assert err.status_code == 404
    assert "did you mean anthropic:claude-sonnet-4-5?" in str(err)
    assert "model: claude-sonet-4-5" in str(err)  # the provider's own words kept


def test_a_model_the_table_knows_or_nothing_near_gets_no_guess(server):
    assert "did you mean" not in str(_ask(server, "anthropic:claude-sonnet-4-5"))
    assert "did you mean" not in str(_ask(server, "anthropic:some-private-finetune"))


def test_a_partial_and_a_callable_object_are_tools_with_what_they_leave_open(server):
    """functools.partial raised a raw TypeError from Agent(); what a partial binds is the
    application's (never in the schema the model sees), and an async __call__ is awaited."""
    import functools

    from modelwire.testing import sse as sse_bodies
    from modelwire.testing.server import sse_reply

    from modelwire.agent import Agent

    seen = []

    def weather(city: str, unit: str = "c") -> str:
        """The weather in a city."""
        seen.append((city, unit))
        return f"{city}: 21 {unit}"

    class Clock:
        async def __call__(self, city: str) -> str:
            """The local time in a city."""
            seen.append(("clock", city))
            return "14:05"

    model = load_model("anthropic:claude-test", api_key="k", base_url=server.url, retry=RetryPolicy(max_retries=0))
    server.script(
        sse_reply(
            sse_bodies.body(
                "anthropic", ("tool", "c1", "weather", '{"city": "Oslo"}'), ("tool", "c2", "Clock", '{"city": "Oslo"}')
            )
        ),
        sse_reply(sse_bodies.body("anthropic", ("text", "Done."))),
    )
    agent = Agent("a", model, tools=[functools.partial(weather, unit="f"), Clock()])
    reply = asyncio.run(agent.reply(UserMsg("user", "Oslo?")))
    assert reply.get_text_content() == "Done."
    assert sorted(seen) == [("Oslo", "f"), ("clock", "Oslo")]
    tools = {t["name"]: t for t in server.requests[0]["json"]["tools"]}
    assert tools["weather"]["description"] == "The weather in a city."
    assert set(tools["weather"]["input_schema"]["properties"]) == {"city"}  # unit is bound: not the model's
    assert tools["Clock"]["description"] == "The local time in a city."


def test_a_rate_limit_says_how_long_to_wait_and_why_it_was_not_waited(server):
    """Anthropic's 429 (https://docs.anthropic.com/en/api/errors: rate_limit_error, with a
    retry-after header): the error says the wait; a wait that would pass the call's total
    timeout is not begun, and the error says so."""
    body = {
        "type": "error",
        "error": {
            "type": "rate_limit_error",
            "message": "Number of request tokens has exceeded your per-minute rate limit",
        },
    }
    model = load_model(
        "anthropic:claude-sonnet-4-5",
        api_key="sk-test",
        base_url=server.url,
        retry=RetryPolicy(max_retries=2),
        timeouts={"total": 5.0},
    )
    server.script(error_reply(429, body, {"retry-after": "30"}))
    with pytest.raises(errors.RateLimitError) as caught:
        asyncio.run(model.complete([UserMsg("user", "hi")]))
    said = str(caught.value)
    assert "the provider asks to wait 30 s" in said and "total timeout (5 s)" in said
    assert "per-minute rate limit" in said and len(server.requests) == 1  # the provider's words; no retry begun

    none_left = load_model(
        "anthropic:claude-sonnet-4-5", api_key="sk-test", base_url=server.url, retry=RetryPolicy(max_retries=0)
    )
    server.script(error_reply(429, body, {"retry-after": "30"}))
    with pytest.raises(errors.RateLimitError) as caught:
        asyncio.run(none_left.complete([UserMsg("user", "hi")]))
    assert "(the provider asks to wait 30 s)" in str(caught.value)
