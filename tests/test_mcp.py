"""The MCP client: real MCP servers (the mcp SDK's own MCPServer class, tests/servers/
mcp_tools.py) started by the tests over stdio and streamable HTTP on 127.0.0.1; the agent
lists and calls their tools, and follows what happens to them."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from modelwire.message import AssistantMsg

pytest.importorskip("mcp")

from modelwire.agent import Agent, MCPServer  # noqa: E402
from modelwire.errors import ToolServerError
from modelwire.errors import ConfigError  # noqa: E402
from modelwire.testing import FakeModel  # noqa: E402

SERVER = str(Path(__file__).parent / "servers" / "mcp_tools.py")
NOTHING = open(os.devnull, "w")  # noqa: SIM115 - the server's stderr (its own tracebacks) is not the tests'


def stdio(**options):
    return MCPServer.stdio(sys.executable, [SERVER], client_options=options.pop("client_options", None), **options)


def results(reply):
    return {r.name: r for r in reply.get_content_blocks("tool_result")}


def text_of(result) -> str:
    return (
        "".join(b.text for b in result.output if b.type == "text") if isinstance(result.output, list) else result.output
    )


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_stdio_tools_are_listed_called_and_their_results_kept():
    model = FakeModel(
        [
            [
                ("tool", "c1", "add", '{"a": 2, "b": 3}'),
                ("tool", "c2", "logo", "{}"),
                ("tool", "c3", "fail", '{"message": "no such city"}'),
                ("tool", "c4", "notes", "{}"),
            ],
            [("text", "done")],
        ],
        protocol="anthropic",
    )

    async def main():
        async with Agent("a", model, tools=[stdio()]) as agent:
            return await agent.reply("go")

    reply = run(main())
    sent = {t["name"]: t for t in model.requests[0]["tools"]}
    assert {"add", "logo", "notes", "fail", "slow", "die", "pid", "unlock", "whoami"} <= set(sent)
    assert sent["add"]["description"] == "Add two integers."
    assert sent["add"]["input_schema"]["properties"]["a"]["type"] == "integer" and sent["add"]["input_schema"][
        "required"
    ] == ["a", "b"]
    got = results(reply)
    assert got["add"].state == "success" and text_of(got["add"]) == "5"
    (image,) = [b for b in got["logo"].output if b.type == "data"]
    assert image.source.media_type == "image/png" and image.source.data.startswith("iVBORw0KGgo")
    assert (
        got["fail"].state == "error"
        and "no such city" in text_of(got["fail"])
        and "ToolError" not in text_of(got["fail"])
    )
    assert text_of(got["notes"]) == "two notes\n[note://1]\nbuy milk\n[resource second: note://2]"
    # The image went back to the provider as an image in the tool result.
    back = [
        c
        for m in model.requests[1]["messages"]
        for c in m["content"]
        if isinstance(c, dict) and c.get("type") == "tool_result" and c["tool_use_id"] == "c2"
    ]
    assert back[0]["content"][0]["type"] == "image" and back[0]["content"][0]["source"]["media_type"] == "image/png"


def test_a_tool_list_changed_by_a_call_is_seen_at_the_next_model_call():
    model = FakeModel(
        [[("tool", "c1", "unlock", "{}")], [("tool", "c2", "secret", "{}")], [("text", "42")]], protocol="openai-chat"
    )

    async def main():
        async with Agent("a", model, tools=[stdio()]) as agent:
            return await agent.reply("go")

    reply = run(main())
    names = [[t["function"]["name"] for t in r["tools"]] for r in model.requests]
    assert "secret" not in names[0] and "secret" in names[1]
    assert text_of(results(reply)["secret"]) == "42"


def test_a_server_that_dies_during_a_call_gives_an_error_result_and_is_started_again():
    model = FakeModel(
        [[("tool", "c1", "pid", "{}")], [("tool", "c2", "die", "{}")], [("tool", "c3", "pid", "{}")], [("text", "ok")]],
        protocol="anthropic",
    )

    async def main():
        async with Agent("a", model, tools=[stdio()]) as agent:
            return await agent.reply("go")

    reply = run(main())
    calls = reply.get_content_blocks("tool_result")
    first, died, again = calls
    assert died.state == "error" and "closed the connection during the call" in text_of(died)
    assert again.state == "success" and text_of(again) != text_of(first)  # a new server process
    assert reply.finished_reason is None or reply.finished_reason == "completed"


def test_a_call_that_outlives_the_timeout_is_an_error_result_and_the_server_stays_usable():
    model = FakeModel(
        [[("tool", "c1", "slow", '{"seconds": 600}')], [("tool", "c2", "add", '{"a": 1, "b": 1}')], [("text", "ok")]],
        protocol="anthropic",
    )

    async def main():
        async with Agent("a", model, tools=[stdio(timeout=2.0)]) as agent:
            started = time.monotonic()
            reply = await agent.reply("go")
            return reply, time.monotonic() - started

    reply, took = run(main())
    slow, add = reply.get_content_blocks("tool_result")
    assert slow.state == "error" and "within 2 s" in text_of(slow)
    assert add.state == "success" and text_of(add) == "2"
    assert took < 120  # not the 600 s the tool would sleep (a server process starts and two turns run first)


def test_a_server_that_cannot_start_ends_the_reply_with_a_typed_error():
    model = FakeModel([[("text", "never asked")]], protocol="anthropic")
    agent = Agent("a", model, tools=[MCPServer.stdio("/nonexistent/mcp-server", name="ghost")])
    with pytest.raises(ToolServerError, match="ghost") as info:
        agent.reply_sync("go")
    assert info.value.server == "ghost"
    assert agent.context[-1].finished_reason == "error" and agent.context[-1].error.type == "setup"
    assert model.requests == []  # never asked the model without the tools it was given


def test_the_server_process_ends_with_the_agent():
    model = FakeModel([[("tool", "c1", "pid", "{}")], [("text", "ok")]], protocol="anthropic")

    async def main():
        agent = Agent("a", model, tools=[stdio()])
        async with agent:
            reply = await agent.reply("go")
        return int(text_of(results(reply)["pid"]))

    pid = run(main())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    pytest.fail(f"the MCP server process {pid} is still running after the agent closed")


def test_reply_sync_starts_the_server_on_each_loop():
    model = FakeModel(
        [
            [("tool", "c1", "add", '{"a": 1, "b": 2}')],
            [("text", "3")],
            [("tool", "c2", "add", '{"a": 2, "b": 2}')],
            [("text", "4")],
        ],
        protocol="anthropic",
    )
    agent = Agent("a", model, tools=[stdio()])
    assert text_of(results(agent.reply_sync("one"))["add"]) == "3"
    assert text_of(results(agent.reply_sync("two"))["add"]) == "4"  # a new loop: connected again


def test_prefix_allowed_tools_and_a_name_given_twice():
    def add(a: int, b: int) -> int:
        """Local add."""
        return a - b

    model = FakeModel([[("tool", "c1", "calc_add", '{"a": 5, "b": 1}')], [("text", "6")]], protocol="anthropic")

    async def main(tools):
        async with Agent("a", model, tools=tools) as agent:
            return await agent.reply("go")

    reply = run(main([add, stdio(prefix="calc", allowed_tools=["add", "pid"])]))
    assert [t["name"] for t in model.requests[0]["tools"]] == ["add", "calc_add", "calc_pid"]
    assert text_of(results(reply)["calc_add"]) == "6"  # routed to the server's add, not the local one
    with pytest.raises(ConfigError, match="'add' comes from both the agent's own tools and 'python"):
        run(main([add, stdio()]))


def test_an_interrupt_during_a_call_ends_the_reply_and_the_server_answers_the_next():
    model = FakeModel(
        [[("tool", "c1", "slow", '{"seconds": 30}')], [("tool", "c2", "add", '{"a": 1, "b": 1}')], [("text", "ok")]],
        protocol="anthropic",
    )

    async def main():
        async with Agent("a", model, tools=[stdio()]) as agent:
            # Interrupted once the slow call runs on the server (not after a fixed time: the
            # server may take longer than that to start).
            first = AssistantMsg("a", [])
            async for ev in agent.reply_stream("go"):
                if ev.type == "REPLY_START":
                    first = AssistantMsg(ev.name, [], id=ev.reply_id)
                first.append_event(ev)
                if ev.type == "TOOL_RESULT_START" and ev.tool_call_name == "slow":
                    asyncio.get_running_loop().call_later(0.3, agent.interrupt)
            second = await agent.reply("again")
            return first, second

    first, second = run(main())
    assert first.finished_reason == "interrupted"
    assert results(first)["slow"].state == "interrupted"
    assert text_of(results(second)["add"]) == "2"


# -- streamable HTTP -------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server():
    port = free_port()
    proc = subprocess.Popen([sys.executable, SERVER, "http", str(port)], stdout=subprocess.DEVNULL, stderr=NOTHING)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the MCP server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def test_http_server_tools_with_headers(http_server):
    model = FakeModel(
        [[("tool", "c1", "whoami", "{}"), ("tool", "c2", "add", '{"a": 20, "b": 22}')], [("text", "ok")]],
        protocol="openai-responses",
    )

    async def main():
        async with Agent(
            "a", model, tools=[MCPServer.http(http_server, headers={"Authorization": "Bearer t0ken"})]
        ) as agent:
            return await agent.reply("go")

    got = results(run(main()))
    assert text_of(got["whoami"]) == "Bearer t0ken"
    assert text_of(got["add"]) == "42"


def test_a_change_made_by_another_client_arrives_as_a_listen_event(http_server):
    """Another client changes the server's tools: this one hears of it (a
    ``subscriptions/listen`` event on a 2026-07-28 connection), not by polling."""
    model = FakeModel([[("text", "hi")], [("tool", "c1", "secret", "{}")], [("text", "42")]], protocol="anthropic")

    async def main():
        watched, other = MCPServer.http(http_server), MCPServer.http(http_server)
        async with Agent("a", model, tools=[watched]) as agent:
            await agent.reply("first")
            assert watched._tools is not None  # listed, and kept
            await other.call("unlock", {})
            await until_relisted(watched)
            reply = await agent.reply("second")
        await other.aclose()
        return reply

    reply = run(main())
    assert "secret" not in [t["name"] for t in model.requests[0]["tools"]]
    assert "secret" in [t["name"] for t in model.requests[1]["tools"]]
    assert text_of(results(reply)["secret"]) == "42"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_change_the_server_makes_later_is_followed(http_server, mode):
    """The server changes its tools after a call has answered: the list-changed
    notification (legacy handshake) or the listen event (2026-07-28) says so."""

    async def main():
        server = MCPServer.http(http_server, client_options={"mode": mode})
        try:
            assert await server.call("unlock_later", {"seconds": 0.3}) == ["soon"]
            before = [t.name for t in await server.list_tools()]
            await until_relisted(server)
            return before, [t.name for t in await server.list_tools()], server._client.protocol_version
        finally:
            await server.aclose()

    before, after, version = run(main())
    assert (version < "2026-07-28") == (mode == "legacy")
    assert "later" not in before and "later" in after


async def until_relisted(server: MCPServer) -> None:
    for _ in range(1500):
        if server._tools is None:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("no change notification arrived")


def test_via_provider_declares_the_same_server_for_the_provider():
    server = MCPServer.http("https://mcp.example.com/mcp", name="docs", headers={"X-Key": "k"}, allowed_tools=["ask"])
    tool = server.via_provider(require_approval="never")
    assert tool.kind == "mcp" and tool.config == {
        "url": "https://mcp.example.com/mcp",
        "name": "docs",
        "headers": {"X-Key": "k"},
        "allowed_tools": ["ask"],
        "require_approval": "never",
    }
    with pytest.raises(ConfigError, match="not an HTTP server"):
        stdio().via_provider()
    with pytest.raises(ValueError, match="http:// or https://"):
        MCPServer.http("ws://example.com/mcp")
    assert json.dumps(tool.config)  # plain data


def test_an_sdk_server_object_connects_in_process():
    from mcp.server.mcpserver import MCPServer as SDKServer

    notes = SDKServer("notes")

    @notes.tool()
    def add_note(text: str) -> str:
        """Keep a note."""
        return f"kept: {text}"

    model = FakeModel([[("tool", "c1", "add_note", '{"text": "milk"}')], [("text", "ok")]], protocol="gemini")

    async def main():
        async with Agent("a", model, tools=[MCPServer(notes, name="notes")]) as agent:
            return await agent.reply("Note: buy milk")

    assert text_of(results(run(main()))["add_note"]) == "kept: milk"
    assert model.requests[0]["tools"][0]["functionDeclarations"][0]["name"] == "add_note"
