"""The agent loop on long turns: Anthropic's ``pause_turn`` continued (a recorded web-search
turn, paused and continued), and tools that hang ended by their timeout."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from modelwire import event as E
from modelwire.agent import Agent, Tool
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy
from modelwire.testing import ProviderServer, sse_reply
from modelwire.testing.sse import body
from paths import PA

PAUSED = PA / "test_pause_turn_web_search_streaming_vcr"


def test_a_paused_turn_is_sent_back_and_goes_on_as_one_reply():
    first, second = (PAUSED.with_name(PAUSED.name + f".{n}.sse") for n in (0, 1))
    if not first.is_file():
        pytest.skip("needs ../shared/recorded-streams")
    sent = json.loads(PAUSED.with_name(PAUSED.name + ".1.request.json").read_text())
    web_search = {"type": "web_search_20250305", "name": "web_search"}
    with ProviderServer() as server:
        server.script(sse_reply(first.read_bytes()), sse_reply(second.read_bytes()))
        model = load_model(
            "anthropic:claude-sonnet-4-5",
            api_key="k",
            base_url=server.url,
            retry=RetryPolicy(max_retries=0),
            max_tokens=15000,
            thinking_budget=4096,
            extra_body={"tools": [web_search]},
        )
        agent = Agent("a", model)
        events = []

        async def go():
            async for e in agent.reply_stream(
                json.loads(PAUSED.with_name(PAUSED.name + ".0.request.json").read_text())["messages"][0]["content"][0][
                    "text"
                ]
            ):
                events.append(e)

        asyncio.run(go())
        continued = server.requests[1]["json"]
    stops = [e.stop_reason for e in events if e.type == "MODEL_CALL_END"]
    assert stops[0] == "pause_turn" and stops[-1] != "pause_turn" and len(stops) == 2
    assert E.check_stream(events) == len(events) and [e.type for e in events].count("REPLY_END") == 1
    # The continuation sends the paused turn back as its last message, as the recorded client did.
    assert continued["messages"][-1]["role"] == "assistant" == sent["messages"][-1]["role"]
    types = lambda m: [c["type"] for c in m["content"]]  # noqa: E731
    assert types(continued["messages"][-1]) == types(sent["messages"][-1])
    assert agent.context[-1].get_text_content()  # one reply holds both parts


def test_a_hanging_tool_ends_as_an_error_result_with_its_time():
    async def slow_lookup(city: str) -> str:
        """Look something up, slowly."""
        await asyncio.sleep(30)
        return "never"

    def stuck_in_a_thread(city: str) -> str:
        """A blocking function that hangs."""
        time.sleep(3)
        return "too late"

    calls = ("tool", "c1", "slow_lookup", '{"city": "Oslo"}'), ("tool", "c2", "stuck_in_a_thread", '{"city": "Oslo"}')
    with ProviderServer() as server:
        server.script(sse_reply(body("anthropic", *calls)), sse_reply(body("anthropic", ("text", "Both failed."))))
        agent = Agent(
            "a",
            load_model("anthropic:claude-test", api_key="k", base_url=server.url),
            tools=[Tool(slow_lookup, timeout=0.2), stuck_in_a_thread],
            tool_timeout=0.3,
        )

        async def go():
            return await asyncio.wait_for(agent.reply("Look up Oslo"), 60)  # bounded: a hang fails the test

        reply = asyncio.run(go())
        second = server.requests[1]["json"]
    results = {r.id: r for r in reply.get_content_blocks("tool_result")}
    assert results["c1"].state == results["c2"].state == "error"
    assert "within 0.2 s" in results["c1"].output[0].text and "within 0.3 s" in results["c2"].output[0].text
    assert "within 0.2 s" in json.dumps(second)  # the model reads why
    with pytest.raises(ValueError, match="timeout"):
        Tool(slow_lookup, timeout=0)


def test_a_consumer_that_stops_early_closes_the_call_and_the_reply_stays_sendable():
    """Breaking out of reply_stream() and closing it closes every layer below, down to the
    HTTP response (the server sees the client go), and the stored reply ends interrupted:
    the agent's next reply sends a valid history."""
    with ProviderServer() as server:
        server.script(
            sse_reply(
                body("anthropic", ("tool", "toolu_1", "lookup", '{"q": "x"}'), ("text", "word " * 400)), delay=0.01
            ),
            sse_reply(body("anthropic", ("text", "Second answer."))),
        )
        agent = Agent(
            "a",
            load_model(
                "anthropic:claude-sonnet-4-5", api_key="k", base_url=server.url, retry=RetryPolicy(max_retries=0)
            ),
            tools=[Tool(lambda q: "found", name="lookup")],
        )

        async def go():
            stream = agent.reply_stream("Look it up")
            async for ev in stream:
                if ev.type == "TEXT_BLOCK_DELTA":
                    break
            await stream.aclose()
            first = agent.context[-1]
            for _ in range(1500):  # the server notices the closed connection shortly after
                if server.disconnects:
                    break
                await asyncio.sleep(0.02)
            return first, await agent.reply("Again")

        first, second = asyncio.run(go())
        sent = server.requests[1]["json"]
    assert server.disconnects, "the HTTP response was left open"
    assert first.finished_reason == "interrupted"
    (result,) = first.get_content_blocks("tool_result")
    assert result.state == "interrupted"  # the open call is answered, so the history is sendable
    assert second.get_text_content().strip() == "Second answer."
    uses = [
        c
        for m in sent["messages"]
        for c in m["content"]
        if isinstance(c, dict) and c.get("type") in ("tool_use", "tool_result")
    ]
    assert [u["type"] for u in uses] == ["tool_use", "tool_result"]
