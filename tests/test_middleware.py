"""Middleware around a model (modelwire.wrap), through the real transport and adapters
against the local provider server: a middleware that changes the request (the body the
server received says so), one that drops an event kind, one that stops a stream cleanly,
one that retries, one that sees errors; their order; and a wrapped model in an Agent,
a FallbackModel, an AgentScope chat model, a cassette and serve."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from modelwire.testing import stream_reply
from modelwire.testing import sse as sse_bodies
from modelwire.testing.server import error_reply, sse_reply

import modelwire
from modelwire import errors as E
from modelwire.agent import Agent
from modelwire.message import AssistantMsg, Msg, UserMsg
from modelwire.models import DefaultOptions, FallbackModel, Middleware, StreamStop, load_model
from modelwire.models.transport import RetryPolicy
from modelwire.protocols import protocol_names

EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")


def run(coro):
    return asyncio.run(coro)


def anthropic(server, **options):
    return load_model(
        "anthropic:claude-sonnet-4-5",
        api_key="sk-test",
        base_url=server.url,
        retry=RetryPolicy(max_retries=0),
        **options,
    )


def answer(*blocks, usage=(10, 5), **kw):
    return sse_reply(sse_bodies.body("anthropic", *blocks, usage=usage), **kw)


def sent_text(request) -> str:
    return json.dumps(request["json"])


class Redact(Middleware):
    """E-mail addresses out of every message the request carries (text, tool results ...)."""

    async def request(self, call):
        call.messages = [_redacted(m) for m in call.messages]


def _redacted(msg):
    return Msg.from_dict(json.loads(EMAIL.sub("[email]", json.dumps(msg.to_dict()))))


class DropThinking(Middleware):
    async def stream(self, call, call_next):
        async for event in call_next(call):
            if not event.type.startswith("THINKING_BLOCK"):
                yield event


class StopOn(Middleware):
    """A guardrail: the call stops at the first text delta with ``word`` in it."""

    def __init__(self, word: str) -> None:
        self.word = word

    async def stream(self, call, call_next):
        stop = StreamStop(call, by="StopOn")
        async for event in call_next(call):
            if event.type == "TEXT_BLOCK_DELTA" and self.word in event.delta:
                for closing in stop.stop(f"the text said {self.word!r}", stop_reason="content_filter"):
                    yield closing
                return
            yield stop.passed(event)


class RetryOnce(Middleware):
    """Calls again once when the call fails before any output (its start held until then)."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    async def stream(self, call, call_next):
        for attempt in range(2):
            held = []
            try:
                async for event in call_next(call):
                    if held is None:
                        yield event
                    elif event.type in ("MODEL_CALL_START", "MODEL_CALL_END"):
                        held.append(event)
                    else:
                        for early in held:
                            yield early
                        held = None
                        yield event
                for early in held or ():
                    yield early
                return
            except E.ProviderError as err:
                self.errors.append(type(err).__name__)
                if held is None or attempt == 1:
                    for early in held or ():
                        yield early
                    raise


class Noted(Middleware):
    """Notes when its hooks run, in a shared list."""

    def __init__(self, name: str, seen: list) -> None:
        self.name, self.seen = name, seen

    async def request(self, call):
        self.seen.append(f"request {self.name}")
        call.options = {**call.options, "temperature": {"a": 0.1, "b": 0.2}[self.name]}

    async def stream(self, call, call_next):
        async for event in call_next(call):
            if event.type == "TEXT_BLOCK_DELTA":
                self.seen.append(f"event {self.name}")
                event = event.replace(delta=event.delta + self.name)
            yield event


def test_a_request_hook_changes_what_the_server_receives(server):
    server.script(answer(("text", "Noted.")))
    model = modelwire.wrap(anthropic(server), Redact(), DefaultOptions(max_tokens=77, temperature=0.5))
    reply = run(model.complete([UserMsg("me", "Mail ann@example.com about it.")], options={"temperature": 0.9}))
    body = server.requests[0]["json"]
    assert "ann@example.com" not in sent_text(server.requests[0]) and "[email]" in sent_text(server.requests[0])
    assert body["max_tokens"] == 77 and body["temperature"] == 0.9  # the call's own option wins over the default
    assert reply.get_text_content() == "Noted."


def test_a_stream_hook_drops_an_event_kind_and_the_reply_still_folds(server):
    server.script(answer(("think", "Let me see."), ("text", "Four.")))
    reply = run(modelwire.wrap(anthropic(server), DropThinking()).complete([UserMsg("me", "2+2?")]))
    assert [b.type for b in reply.content] == ["text"] and reply.get_text_content() == "Four."
    assert reply.usage.input_tokens == 10  # the call's end passed on


def test_a_stream_stopped_by_a_guardrail_ends_cleanly_and_says_why(server):
    pieces = ["The ", "plan ", "is ", "secret ", "and ", "long."]
    server.script(answer(*[("text", p) for p in pieces]))
    model = modelwire.wrap(anthropic(server), StopOn("secret"))

    async def events():
        return [ev async for ev in model.stream([UserMsg("me", "The plan?")], reply_id="r1")]

    got = run(events())
    reply = AssistantMsg("assistant", [], id="r1")
    for ev in got:
        reply.append_event(ev, strict=True)
    end = got[-1]
    assert end.type == "MODEL_CALL_END" and end.finished_reason == "interrupted"
    assert end.stop_reason == "content_filter"
    assert end.metadata["stopped"] == {"by": "StopOn", "reason": "the text said 'secret'"}
    assert "secret" not in reply.get_text_content() and reply.get_text_content().startswith("The ")
    assert all(b.finished_at for b in reply.content)  # every block it opened was ended


def test_a_stop_in_the_middle_of_a_tool_call_answers_it_interrupted_and_the_agent_does_not_run_it(server):
    ran = []

    def send(to: str) -> str:
        """Send money."""
        ran.append(to)
        return "sent"

    class StopInCall(Middleware):
        async def stream(self, call, call_next):
            stop = StreamStop(call)
            async for event in call_next(call):
                if event.type == "TOOL_CALL_DELTA":
                    for closing in stop.stop("arguments not allowed"):
                        yield closing
                    return
                yield stop.passed(event)

    server.script(answer(("tool", "toolu_1", "send", '{"to": "mallory"}')))
    agent = Agent("bot", modelwire.wrap(anthropic(server), StopInCall()), tools=[send])
    reply = run(agent.reply("Pay mallory."))
    assert ran == [] and len(server.requests) == 1
    result = reply.get_content_blocks("tool_result")[0]
    assert result.state == "interrupted" and "arguments not allowed" in result.output[0].text


def test_a_retry_middleware_calls_again_after_an_error_before_output(server):
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.script(error_reply(529, overloaded), answer(("text", "Second time.")))
    retry = RetryOnce()
    reply = run(modelwire.wrap(anthropic(server), retry).complete([UserMsg("me", "Hi")]))
    assert reply.get_text_content() == "Second time." and len(server.requests) == 2
    assert retry.errors == ["OverloadedError"]
    assert [b.type for b in reply.content] == ["text"] and reply.usage.input_tokens == 10


def test_an_error_reaches_the_middleware_and_then_the_caller_with_what_was_received(server):
    server.script(answer(("text", "Half an answer that goes on"), drop_after=3))
    retry = RetryOnce()  # output came: not retried, the error goes on
    with pytest.raises(E.ProviderError) as caught:
        run(modelwire.wrap(anthropic(server), retry).complete([UserMsg("me", "Hi")]))
    assert retry.errors == [type(caught.value).__name__] and len(server.requests) == 1
    assert caught.value.partial.content[0].type == "text"


def test_layers_run_in_order_the_first_outermost(server):
    seen: list[str] = []
    server.script(answer(("text", "x")))
    model = modelwire.wrap(anthropic(server), Noted("a", seen), Noted("b", seen))
    reply = run(model.complete([UserMsg("me", "Hi")]))
    assert seen == ["request a", "request b", "event b", "event a"]
    assert reply.get_text_content() == "xba"
    assert server.requests[0]["json"]["temperature"] == 0.2  # b, inside a, had the last word


def test_wrapping_adds_outer_layers_and_no_middleware_is_the_model_itself(server):
    base = anthropic(server)
    inner, outer = Redact(), DropThinking()
    assert modelwire.wrap(base) is base
    twice = modelwire.wrap(modelwire.wrap(base, inner), outer)
    assert twice.model is base and twice.middleware == (outer, inner)
    assert twice.name == base.name and twice.provider == "anthropic" and twice.capabilities is base.capabilities
    with pytest.raises(E.ConfigError):
        modelwire.wrap(base, object())


def test_a_refusing_request_hook_raises_before_anything_is_sent(server):
    class Refuse(Middleware):
        async def request(self, call):
            raise E.ConfigError("not today")

    with pytest.raises(E.ConfigError, match="not today"):
        run(modelwire.wrap(anthropic(server), Refuse()).complete([UserMsg("me", "Hi")]))
    assert server.requests == []


@pytest.mark.parametrize("protocol", protocol_names())
def test_every_protocol_sends_the_changed_request_and_drops_the_kind(server, protocol):
    server.script(stream_reply(protocol, sse_bodies.body(protocol, ("text", "Fine."))))
    model = modelwire.wrap(server.model(protocol), Redact(), DropThinking())
    reply = run(model.complete([UserMsg("me", "Write to bob@example.org")]))
    assert "bob@example.org" not in sent_text(server.requests[0]) and "[email]" in sent_text(server.requests[0])
    assert reply.get_text_content() == "Fine."


def test_count_tokens_counts_the_request_the_layers_would_send(server):
    server.script(
        error_reply(200, {"input_tokens": 12})  # the count endpoint's JSON answer
    )
    model = modelwire.wrap(anthropic(server), Redact())
    counted = run(model.count_tokens([UserMsg("me", "Mail ann@example.com")]))
    assert int(counted) == 12 and server.requests[0]["path"].endswith("/count_tokens")
    assert "ann@example.com" not in sent_text(server.requests[0])


def test_an_agent_with_a_wrapped_model_sends_redacted_history_and_runs_tools(server):
    def lookup(who: str) -> str:
        """Find someone's address."""
        return "carol@example.net"

    server.script(
        answer(("tool", "toolu_1", "lookup", '{"who": "carol"}')),
        answer(("text", "Done.")),
    )
    agent = Agent("bot", modelwire.wrap(anthropic(server), Redact()), tools=[lookup])
    reply = run(agent.reply("Find carol."))
    assert reply.get_text_content() == "Done." and len(server.requests) == 2
    assert "carol@example.net" not in sent_text(server.requests[1])  # the tool's result, redacted on the way out
    kept = reply.get_content_blocks("tool_result")[0]
    assert kept.output[0].text == "carol@example.net"  # kept whole in the agent's own history


def test_a_fallback_model_of_wrapped_models_and_a_wrapped_fallback_model(server):
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.script(error_reply(529, overloaded), answer(("text", "From the second.")))
    seen: list[str] = []
    both = FallbackModel([modelwire.wrap(anthropic(server), Noted("a", seen)), anthropic(server)])
    reply = run(modelwire.wrap(both, Redact()).complete([UserMsg("me", "Mail dan@example.com")]))
    assert reply.get_text_content() == "From the second."
    assert all("dan@example.com" not in sent_text(r) for r in server.requests)
    assert server.requests[0]["json"]["temperature"] == 0.1 and "temperature" not in server.requests[1]["json"]


def test_an_agentscope_chat_model_takes_a_wrapped_model(server):
    pytest.importorskip("agentscope")
    from agentscope.message import UserMsg as ASUserMsg
    from modelwire.integrations.agentscope import ModelwireChatModel

    server.script(answer(("text", "Hello from AgentScope.")))
    base = anthropic(server)
    chat = ModelwireChatModel(modelwire.wrap(base, Redact()), max_retries=3)
    assert base.retry.max_retries == 3  # the integration's retry policy reached the model inside

    async def ask():
        result = await chat([ASUserMsg(name="user", content="Write to eve@example.com")])
        return [chunk async for chunk in result][-1]

    final = run(ask())
    assert "eve@example.com" not in sent_text(server.requests[0])
    assert [b.text for b in final.content] == ["Hello from AgentScope."]


def test_a_cassette_records_and_replays_through_a_wrapped_model(server, tmp_path):
    from modelwire.cassettes import use_cassette

    path = tmp_path / "wrapped.json"
    server.script(answer(("text", "Recorded.")))
    model = modelwire.wrap(anthropic(server), Redact())
    with use_cassette(path, record_mode="once"):
        first = run(model.complete([UserMsg("me", "Mail fay@example.com")]))
    assert "fay@example.com" not in path.read_text()
    with use_cassette(path, record_mode="none"):
        again = run(model.complete([UserMsg("me", "Mail fay@example.com")]))
    assert first.get_text_content() == again.get_text_content() == "Recorded." and len(server.requests) == 1


def test_serve_streams_a_wrapped_models_reply_to_the_browser(server):
    pytest.importorskip("uvicorn")
    import httpx2 as httpx
    from modelwire.event import parse_event
    from modelwire.serve import EventStreamApp

    from test_serve import Served

    server.script(answer(*[("text", p) for p in ["Sure, ", "the secret ", "is out."]]))
    model = modelwire.wrap(anthropic(server), Redact(), StopOn("secret"))
    app = EventStreamApp(lambda: Agent("Buddy", model, "Be brief."))
    with Served(app) as url, httpx.Client() as client:
        resp = client.post(url + "/reply", json={"input": "Mail gus@example.com the secret."})
    events = [parse_event(json.loads(line[6:])) for line in resp.text.split("\n") if line.startswith("data: ")]
    modelwire.check_stream(events)
    end = next(ev for ev in events if ev.type == "MODEL_CALL_END")
    assert end.stop_reason == "content_filter" and end.metadata["stopped"]["by"] == "StopOn"
    assert events[-1].type == "REPLY_END" and "gus@example.com" not in sent_text(server.requests[0])
    text = "".join(ev.delta for ev in events if ev.type == "TEXT_BLOCK_DELTA")
    assert text.startswith("Sure, ") and "secret" not in text


def test_the_agents_model_options_are_defaults_under_each_calls_own(server):
    server.script(answer(("text", "Short.")))
    agent = Agent("bot", anthropic(server), model_options={"max_tokens": 55, "extra_headers": {"x-team": "blue"}})
    run(agent.reply("Hi"))
    assert server.requests[0]["json"]["max_tokens"] == 55 and server.requests[0]["headers"]["x-team"] == "blue"


def test_usage_limits_count_the_request_the_models_own_layers_would_send(server):
    from modelwire.agent import UsageLimits

    server.script(error_reply(200, {"input_tokens": 900}))
    limits = UsageLimits(input_tokens=500, count_before_request=True)
    agent = Agent("bot", modelwire.wrap(anthropic(server), Redact()), limits=limits)
    with pytest.raises(E.UsageLimitExceeded) as caught:
        run(agent.reply("Mail hal@example.com"))
    assert (caught.value.limit, caught.value.used) == ("input_tokens", 900)
    assert len(server.requests) == 1 and server.requests[0]["path"].endswith("/count_tokens")
    assert "hal@example.com" not in sent_text(server.requests[0])  # counted as it would be sent: redacted


def _example(name: str):
    """A module of examples/, loaded from its file as a reader would run it."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path.read_text()


@pytest.mark.parametrize("name", ["redact_pii", "response_cache"])
def test_the_guide_shows_each_example_as_it_is_in_examples(name):
    from docs_blocks import ROOT

    _, code = _example(name)
    assert f"```python\n{code}```" in (ROOT / "docs" / "guides" / "middleware.md").read_text()


def test_the_redaction_example_keeps_pii_out_of_every_request_and_in_the_agents_history(server):
    redact_pii, _ = _example("redact_pii")

    def contact(who: str) -> str:
        """Someone's contact details."""
        return "ivy@example.com, +1 (415) 555-0100"

    server.script(
        answer(("tool", "toolu_1", "contact", '{"who": "ivy@example.com"}')),
        answer(("text", "Found.")),
    )
    agent = Agent("bot", modelwire.wrap(anthropic(server), redact_pii.Redact()), tools=[contact])
    reply = run(agent.reply("Call +44 20 7946 0958 or mail ivy@example.com"))
    assert reply.get_text_content() == "Found." and len(server.requests) == 2
    for request in server.requests:
        sent = sent_text(request)
        assert "ivy@example.com" not in sent and "7946" not in sent and "555-0100" not in sent
    assert (
        sent_text(server.requests[1]).count("[redacted]") == 5
    )  # the question's two, the call's one, the result's two
    assert json.loads(reply.get_content_blocks("tool_call")[0].input) == {"who": "ivy@example.com"}


def test_the_cache_example_answers_a_repeated_call_without_a_request(server):
    response_cache, _ = _example("response_cache")
    server.script(answer(("text", "Teal."), usage=(30, 2)))
    cache = response_cache.ResponseCache()
    model = modelwire.wrap(anthropic(server), cache)
    first = run(model.complete([UserMsg("me", "Name a colour.")]))
    again = run(model.complete([UserMsg("me", "Name a colour.")], reply_id="r2"))
    assert len(server.requests) == 1 and cache.hits == 1
    assert again.get_text_content() == first.get_text_content() == "Teal." and again.id == "r2"
    assert first.usage.input_tokens == 30 and again.usage.input_tokens == 0
    server.script(answer(("text", "Red.")))
    other = run(model.complete([UserMsg("me", "Name a colour.")], options={"temperature": 1.0}))
    assert other.get_text_content() == "Red." and len(server.requests) == 2  # other options: another question


def test_a_failed_call_is_not_cached(server):
    response_cache, _ = _example("response_cache")
    server.script(answer(("text", "Half"), drop_after=2), answer(("text", "Whole.")))
    model = modelwire.wrap(anthropic(server), response_cache.ResponseCache())
    with pytest.raises(E.ProviderError):
        run(model.complete([UserMsg("me", "Hi")]))
    assert run(model.complete([UserMsg("me", "Hi")])).get_text_content() == "Whole." and len(server.requests) == 2


async def _disconnected(server) -> bool:
    """Whether the server noticed the client go away (it notices at its next write), waiting
    up to 30 s for it: a loaded machine may take seconds."""
    deadline = asyncio.get_running_loop().time() + 30
    while not server.disconnects and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)
    return bool(server.disconnects)


def test_a_stop_closes_the_providers_connection_while_it_still_streams(server):
    words = [f"w{i}" for i in range(200)]
    words[3] = "secret"
    server.script(answer(("text", " ".join(words)), delay=0.02))
    model = modelwire.wrap(anthropic(server), StopOn("secret"))

    async def go():
        reply = await model.complete([UserMsg("me", "Talk")])
        return reply, await _disconnected(server)

    reply, gone = run(go())
    assert gone, "the provider's response was left open after the stop"
    assert reply.get_text_content().startswith("w0 ") and "secret" not in reply.get_text_content()
    assert len(reply.get_text_content()) < 20  # what came before the stop, and nothing after


def test_a_consumer_that_stops_reading_closes_every_layer_and_the_connection(server):
    server.script(answer(("text", " ".join(f"w{i}" for i in range(200))), delay=0.02))
    closed = []

    class Holds(Middleware):
        async def stream(self, call, call_next):
            try:
                async for event in call_next(call):
                    yield event
            finally:
                closed.append("Holds")

    model = modelwire.wrap(anthropic(server), Holds(), Redact())

    async def go():
        stream = model.stream([UserMsg("me", "Talk")])
        async for event in stream:
            if event.type == "TEXT_BLOCK_DELTA":
                break
        await stream.aclose()
        return await _disconnected(server)

    assert run(go()) and closed == ["Holds"]


def test_complete_sync_runs_the_layers_without_a_loop_of_ones_own(server):
    server.script(answer(("text", "Sync.")))
    reply = modelwire.wrap(anthropic(server), Redact()).complete_sync([UserMsg("me", "Mail kim@example.com")])
    assert reply.get_text_content() == "Sync." and "kim@example.com" not in sent_text(server.requests[0])


def test_a_batch_sends_each_request_as_the_layers_leave_it(server):
    from test_batches import BatchServer

    BatchServer(server)
    model = modelwire.wrap(anthropic(server), Redact(), DefaultOptions(max_tokens=33))
    conversations = [
        [UserMsg("me", "Mail lee@example.com")],
        {"messages": [UserMsg("me", "Hi")], "options": {"max_tokens": 5}},
    ]
    run(model.batch(conversations))
    (submitted,) = [r["json"] for r in server.requests if r["method"] == "POST"]
    assert "lee@example.com" not in json.dumps(submitted)
    assert [r["params"]["max_tokens"] for r in submitted["requests"]] == [33, 5]


def test_a_request_a_wrapped_model_cannot_vouch_for_is_refused_with_a_reason(server):
    model = modelwire.wrap(anthropic(server), Redact())
    for ask in (lambda: model.preflight([UserMsg("me", "Hi")]), lambda: model.build_request([UserMsg("me", "Hi")])):
        with pytest.raises(E.ConfigError, match="middleware"):
            ask()


def test_a_model_of_ones_own_is_wrapped_too_and_a_middleware_is_tested_offline():
    from modelwire.testing import FakeModel

    fake = FakeModel([[("think", "Hmm."), ("text", "Offline.")]])
    reply = run(modelwire.wrap(fake, Redact(), DropThinking()).complete([UserMsg("me", "Mail max@example.com")]))
    assert reply.get_text_content() == "Offline." and [b.type for b in reply.content] == ["text"]
    assert "max@example.com" not in json.dumps(fake.requests[0]) and "[email]" in json.dumps(fake.requests[0])
