"""AgentScope 1.0.21's own ReActAgent on modelwire's 1.x model against modelwire's local
provider server: a tool round, then a structured output, for each protocol asked for.
Input: ``{"protocols": {protocol: preset}}``; output: what each run sent and replied."""

import asyncio
import json
import sys

from agentscope.agent import ReActAgent
from agentscope.message import Msg, TextBlock
from agentscope.tool import ToolResponse, Toolkit
from pydantic import BaseModel

from modelwire.integrations.agentscope1 import ModelwireChatModel, ModelwireFormatter
from modelwire.testing import ProviderServer, stream_reply
from modelwire.testing.sse import body


def weather(city: str) -> ToolResponse:
    """Weather for a city.

    Args:
        city (str): the city
    """
    return ToolResponse(content=[TextBlock(type="text", text=f"{city}: sunny")])


class Forecast(BaseModel):
    city: str
    sky: str


def reply(protocol, *blocks):
    return stream_reply(protocol, body(protocol, *blocks))


async def run(protocol: str, preset: str, stream: bool) -> dict:
    call = "fc_1" if protocol == "gemini" else "call_1"
    done = "fc_2" if protocol == "gemini" else "call_2"
    with ProviderServer() as server:
        server.script(
            reply(protocol, ("think", "One tool."), ("tool", call, "weather", '{"city": "Paris"}')),
            reply(protocol, ("text", "Sunny in Paris.")),
            reply(protocol, ("tool", done, "generate_response", '{"city": "Paris", "sky": "sunny"}')),
            reply(protocol, ("text", "Paris: sunny.")),
        )
        base = server.url + ("/v1" if protocol in ("openai-chat", "openai-responses") else "")
        toolkit = Toolkit()
        toolkit.register_tool_function(weather)
        agent = ReActAgent(
            name="Friday",
            sys_prompt="Be brief.",
            model=ModelwireChatModel(preset, api_key="sk-test", base_url=base, stream=stream),
            formatter=ModelwireFormatter(),
            toolkit=toolkit,
        )
        agent.set_console_output_enabled(False)
        first = await agent(Msg("user", "Weather in Paris?", "user"))
        second = await agent(Msg("user", "As a forecast, please.", "user"), structured_model=Forecast)
        memory = [m.to_dict() for m in await agent.memory.get_memory()]
        return {
            "first": first.to_dict(),
            "second": second.to_dict(),
            "memory": memory,
            "requests": [r["json"] for r in server.requests],
        }


async def chunks(protocol: str, preset: str) -> dict:
    """A direct streamed call: every chunk as the model yields it."""
    with ProviderServer() as server:
        server.script(
            reply(protocol, ("think", "Hm."), ("text", "Let me look."), ("tool", "c9", "weather", '{"city": "Oslo"}'))
        )
        base = server.url + ("/v1" if protocol in ("openai-chat", "openai-responses") else "")
        model = ModelwireChatModel(preset, api_key="sk-test", base_url=base)
        formatted = await ModelwireFormatter().format([Msg("user", "Oslo?", "user")])
        schemas = [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}]
        out = []
        async for chunk in await model(formatted, tools=schemas, tool_choice="weather"):
            usage = chunk.usage and {
                "input_tokens": chunk.usage.input_tokens,
                "output_tokens": chunk.usage.output_tokens,
            }
            out.append({"content": chunk.content, "usage": usage, "id": chunk.id})
        return {"chunks": out, "request": server.requests[0]["json"]}


async def interrupted(protocol: str, preset: str) -> dict:
    """The 1.x agent interrupted while the model streams (``agent.interrupt()``, as its user's
    Ctrl-C does): the provider's connection is closed, and the reply is 1.x's own."""
    words = " ".join(["word"] * 400)
    with ProviderServer() as server:
        server.script(stream_reply(protocol, body(protocol, ("text", words)), delay=0.01))
        base = server.url + ("/v1" if protocol in ("openai-chat", "openai-responses") else "")
        agent = ReActAgent(
            name="Friday",
            sys_prompt="Be brief.",
            model=ModelwireChatModel(preset, api_key="sk-test", base_url=base),
            formatter=ModelwireFormatter(),
            toolkit=Toolkit(),
        )
        agent.set_console_output_enabled(False)
        printed = asyncio.Event()

        async def seen(self, kwargs):
            printed.set()

        agent.register_instance_hook("pre_print", "seen", seen)
        task = asyncio.create_task(agent(Msg("user", "Talk", "user")))
        await printed.wait()
        await agent.interrupt()
        reply = await task
        deadline = asyncio.get_running_loop().time() + 30
        while not server.disconnects and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)  # until the server sees the client go (it writes a piece every 10 ms)
        memory = [m.to_dict() for m in await agent.memory.get_memory()]
        return {"disconnects": len(server.disconnects), "reply": reply.to_dict(), "memory": memory}


async def refused(preset: str) -> str:
    """A provider's request messages (1.x's OpenAIChatFormatter output) given to the model."""
    from agentscope.formatter import OpenAIChatFormatter

    model = ModelwireChatModel(preset, api_key="sk-test", base_url="http://127.0.0.1:9")
    formatted = await OpenAIChatFormatter().format([Msg("user", "Hi", "user")])
    try:
        await model(formatted)
    except Exception as exc:  # noqa: BLE001 - its type and words are the answer
        return f"{type(exc).__name__}: {exc}"
    return "accepted"


async def structured(protocol: str, preset: str) -> dict:
    """``structured_model`` on a direct call, not streamed: answered, then not answered."""
    with ProviderServer() as server:
        server.script(
            reply(protocol, ("tool", "s1", "generate_structured_output", '{"city": "Rome", "sky": "clear"}')),
            reply(protocol, ("text", "No structure today.")),
        )
        base = server.url + ("/v1" if protocol in ("openai-chat", "openai-responses") else "")
        model = ModelwireChatModel(preset, api_key="sk-test", base_url=base, stream=False)
        formatted = await ModelwireFormatter().format([Msg("user", "Rome?", "user")])
        answered = await model(formatted, structured_model=Forecast)
        try:
            await model(formatted, structured_model=Forecast)
            unanswered = "no error"
        except Exception as exc:  # noqa: BLE001 - its type is the answer
            unanswered = type(exc).__name__
        tools = [
            t.get("name") or t.get("function", {}).get("name") for t in server.requests[0]["json"].get("tools", [])
        ]
        return {"metadata": answered.metadata, "unanswered": unanswered, "tools": tools}


async def refused_key(protocol: str, preset: str) -> str:
    """A 401 before any output: raised by the call itself, as 1.x's own models raise it."""
    from modelwire.testing import error_reply

    with ProviderServer() as server:
        server.script(error_reply(401, {"error": {"type": "authentication_error", "message": "invalid x-api-key"}}))
        base = server.url + ("/v1" if protocol in ("openai-chat", "openai-responses") else "")
        model = ModelwireChatModel(preset, api_key="sk-wrong", base_url=base)
        formatted = await ModelwireFormatter().format([Msg("user", "Hi", "user")])
        try:
            await model(formatted)
        except Exception as exc:  # noqa: BLE001 - its type is the answer
            return type(exc).__name__
        return "no error at the call"


async def traced(protocol: str, preset: str) -> list:
    """With AgentScope's tracing on, a streamed call is one span of its own, as its models' are
    (last in the run: it turns tracing on for the process)."""
    from agentscope import _config
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    _config.trace_enabled = True
    with ProviderServer() as server:
        server.script(reply(protocol, ("text", "Traced.")))
        base = server.url + ("/v1" if protocol in ("openai-chat", "openai-responses") else "")
        model = ModelwireChatModel(preset, api_key="sk-test", base_url=base)
        formatted = await ModelwireFormatter().format([Msg("user", "Hi", "user")])
        async for _ in await model(formatted):
            pass
    spans = exporter.get_finished_spans()
    return [{"scope": s.instrumentation_scope.name, "name": s.name, "status": s.status.status_code.name} for s in spans]


async def main() -> None:
    asked = json.load(sys.stdin)
    out = {"refused": await refused("anthropic:claude-test")}
    out["refused key"] = await refused_key("anthropic", "anthropic:claude-test")
    out["structured"] = await structured("anthropic", "anthropic:claude-test")
    for protocol, preset in asked["protocols"].items():
        out[f"{protocol} interrupted"] = await interrupted(protocol, preset)
    for protocol, preset in asked["protocols"].items():
        out[f"{protocol} chunks"] = await chunks(protocol, preset)
    for protocol, preset in asked["protocols"].items():
        for stream in (True, False):
            out[f"{protocol} stream={stream}"] = await run(protocol, preset, stream)
    out["traced"] = await traced("anthropic", "anthropic:claude-test")
    print(json.dumps(out, ensure_ascii=False))


asyncio.run(main())
