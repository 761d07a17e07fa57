"""A user's code over modelwire's public API, as a project that runs ``pyright`` in strict mode
writes it: tests/test_typing.py type-checks it (it is not run: it would call real providers).
Every value that comes from modelwire must have a type the checker knows; a call here that
needs a ``cast`` or an ignore to pass is a gap in modelwire's annotations."""

from collections.abc import AsyncIterator
from pathlib import Path

import modelwire
from modelwire.agent import Agent, Tool, tool
from modelwire.cassettes import Cassette, use_cassette
from modelwire.errors import IncompleteStreamError, ModelwireError, ProviderError, RateLimitError
from modelwire.event import AgentEvent, PartialJSON, PartialToolCalls, check_stream
from modelwire.message import AssistantMsg, Msg, SystemMsg, TextBlock, ToolCallBlock, ToolResultBlock, UserMsg
from modelwire.models import CallNext, Middleware, ModelCall, ModelOptions, load_model, wrap
from modelwire.serve import EventStreamApp, MemoryStore
from modelwire.testing import FakeModel


def weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


@tool
def clock() -> str:
    """The time now."""
    return "12:00"


@tool(requires_confirmation=True)
def delete(path: str) -> str:
    """Deletes a file."""
    return f"deleted {path}"


class Logged(Middleware):
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def stream(self, call: ModelCall, call_next: CallNext) -> AsyncIterator[AgentEvent]:
        self.seen.append(call.model.name)
        async for event in call_next(call):
            yield event


async def with_a_model() -> str:
    model = load_model("anthropic:claude-sonnet-4-5", max_tokens=1024, temperature=0.2)
    text: list[str] = []
    async for event in model.stream([UserMsg("me", "Hi!")], options=ModelOptions(max_tokens=64)):
        if event.type == "TEXT_BLOCK_DELTA":
            text.append(event.delta)
        elif event.type == "THINKING_BLOCK_DELTA":
            text.append(event.delta)
        elif event.type == "TOOL_CALL_START":
            text.append(event.tool_call_name)
        elif event.type == "MODEL_CALL_END":
            text.append(f"{event.input_tokens} in, {event.output_tokens} out")
    reply: Msg = await model.complete("Hi!", tools=[Tool(weather)])
    again = model.complete_sync([SystemMsg("system", "Be brief."), UserMsg("me", "Hi!")])
    fallback = load_model(["anthropic:claude-sonnet-4-5", "openai:gpt-4.1"])
    third = await fallback.complete("Hi!")
    answers = [m.get_text_content() or "" for m in (reply, again, third)]
    return "".join(text + answers)


async def with_an_agent() -> list[str]:
    agent = Agent("Buddy", FakeModel([[("text", "Hi.")]]), system_prompt="Be brief.", tools=[weather, clock, delete])
    said: list[str] = []
    reply = await agent.reply("Hello")
    said.append(reply.get_text_content() or "")
    async for event in agent.reply_stream(UserMsg("me", "Again")):
        if event.type == "TEXT_BLOCK_DELTA":
            said.append(event.delta)
        elif event.type == "REQUIRE_USER_CONFIRM":
            said.extend(call.name for call in event.tool_calls)
        elif event.type == "REPLY_END":
            said.append(str(event.finished_reason))
    said.append(agent.reply_sync("Bye").get_text_content() or "(no text)")
    for msg in agent.context:
        for block in msg.content:
            if isinstance(block, TextBlock):
                said.append(block.text)
            elif isinstance(block, ToolCallBlock):
                said.append(f"{block.name}({block.input})")
            elif isinstance(block, ToolResultBlock):
                said.append(block.name)
    return said


def messages() -> list[Msg]:
    reply = AssistantMsg("bot", "Hello")
    copy = Msg.from_dict(reply.to_dict())
    assert copy.role == "assistant" and copy.usage is None
    return [UserMsg("me", [TextBlock(text="Hi")]), reply, copy]


def partial_arguments(events: list[AgentEvent]) -> list[str]:
    check_stream(events)
    parser = PartialJSON()
    calls = PartialToolCalls()
    names: list[str] = []
    parser.feed('{"city": "Par')
    if parser.has_value:
        names.append(str(parser.value))
    for event in events:
        partial = calls.see(event)
        if partial is not None and partial.done:
            names.append(partial.tool_call_name)
    return names


def errors() -> str:
    model = wrap(FakeModel([[("text", "Hi.")]]), Logged())
    try:
        return model.complete_sync("Hi").get_text_content() or ""
    except RateLimitError as err:
        return f"{err.status_code} {err.retry_after}"
    except IncompleteStreamError as err:
        return (err.partial.get_text_content() or "") if err.partial is not None else ""
    except ProviderError as err:
        return f"{err.provider_type}: {err.message} {err.status_code} {err.request_id}"
    except ModelwireError as err:
        return str(err)


def replayed(path: Path) -> str:
    with use_cassette(path, record_mode="none") as session:
        text = load_model("anthropic:claude-sonnet-4-5").complete_sync("Hi").get_text_content()
        assert session.cassette is not None
    return f"{text} {len(Cassette.load(path).interactions)}"


def app() -> EventStreamApp:
    return EventStreamApp(lambda: Agent("bot", modelwire.load_model("openai:gpt-4.1")), store=MemoryStore())
