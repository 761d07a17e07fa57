"""A protocol from outside the package, registered through the ``modelwire.protocols``
entry-point group, runs through load_model, complete, the agent and ``modelwire chat``
without any change to modelwire."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap

import pytest

from modelwire import protocols
from modelwire.agent import Agent
from modelwire.event import check_stream
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.testing import Reply

PLUGIN = '''
"""A tiny line protocol: one JSON object per SSE event."""
import json

from modelwire.adapters import BaseAdapter, encode_sse
from modelwire.formatters import Formatter, parse_arguments, result_blocks, segments, tool_specs
from modelwire.protocols import Capabilities, Preset, WireProtocol


class TinyAdapter(BaseAdapter):
    protocol = "tiny"

    def handle(self, data, event):
        kind = data["type"]
        if kind == "text":
            block = self.blocks.get("text") or self.open_block("text", "text")
            self.delta(block, data["text"])
        elif kind == "call":
            self.close_block("text")
            block = self.open_block(data["id"], "tool_call", name=data["name"], block_id=data["id"])
            self.delta(block, data["arguments"])
            self.close_block(data["id"])
        elif kind == "end":
            self.input_tokens, self.output_tokens = data["input_tokens"], data["output_tokens"]
            self.provider_stop_reason = self.stop_reason = data["stop"]
            self.finish()


class TinyFormatter(Formatter):
    protocol = "tiny"

    def __init__(self, provider=None):
        self.provider = provider

    @staticmethod
    def needs_inline(media_type):
        return True

    def format(self, messages, tools=None, tool_choice=None):
        turns = []
        for seg in segments(messages, "tiny"):
            if seg.kind == "results":
                results = [{"id": r.id, "text": "".join(b.text for b in result_blocks(r) if b.type == "text")}
                           for r in seg.blocks]
                turns.append({"role": "tool", "results": results})
            else:
                turns.append({
                    "role": seg.kind,
                    "text": "".join(b.text for b in seg.blocks if b.type == "text"),
                    "calls": [{"id": b.id, "name": b.name, "args": parse_arguments(b)}
                              for b in seg.blocks if b.type == "tool_call"],
                })
        return {"turns": turns, "tools": [s.name for s in tool_specs(tools)]}


class TinyProtocol(WireProtocol):
    name = "tiny"
    description = "a line protocol from a plugin"
    adapter = "tiny_protocol:TinyAdapter"
    formatter = "tiny_protocol:TinyFormatter"
    path = "/tiny/{model}/stream"
    model_in_body = False
    capabilities = Capabilities(parallel_tool_calls=True)
    presets = (Preset("tiny", "tiny", "http://127.0.0.1:1", None, "TINY_BASE_URL", key_required=False, auth="none",
                      example="small"),)

    def apply_options(self, body, options, preset, model="", caps=None):
        if options.max_tokens is not None:
            body["limit"] = options.max_tokens
        for name in ("temperature", "top_p", "stop", "thinking", "thinking_budget", "reasoning_effort",
                     "reasoning_summary", "json_schema"):
            if getattr(options, name) is not None:
                raise self.unsupported(name, preset)

    def unsupported(self, name, preset):
        from modelwire.errors import UnsupportedOptionError
        return UnsupportedOptionError(name, preset.name, "the tiny protocol takes only max_tokens")

    def fake_stream(self, *blocks, usage=(3, 2), **_):
        events = []
        for block in blocks:
            if block[0] == "text":
                events += [(None, {"type": "text", "text": word + " "}) for word in block[1].split(" ")]
            elif block[0] == "tool":
                events.append((None, {"type": "call", "id": block[1], "name": block[2], "arguments": block[3]}))
        stop = "tool_use" if any(b[0] == "tool" for b in blocks) else "end_turn"
        events.append((None, {"type": "end", "stop": stop, "input_tokens": usage[0], "output_tokens": usage[1]}))
        return encode_sse(events)


PROTOCOL = TinyProtocol()
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """Install the plugin the way pip would: a module and a dist-info with its entry point."""
    (tmp_path / "tiny_protocol.py").write_text(textwrap.dedent(PLUGIN))
    info = tmp_path / "tiny_protocol-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-protocol\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[modelwire.protocols]\ntiny = tiny_protocol:PROTOCOL\n\n[modelwire.presets]\ntiny = tiny_protocol:PROTOCOL\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(protocols, "_entry_points", None)
    monkeypatch.setattr(protocols, "_loaded", {})
    monkeypatch.setattr(protocols, "_presets", {})
    yield tmp_path
    sys.modules.pop("tiny_protocol", None)


def body(*blocks, **kw) -> bytes:
    return protocols.get_protocol("tiny").fake_stream(*blocks, **kw)


def test_the_plugin_protocol_is_found_by_name(plugin):
    assert "tiny" in protocols.protocol_names()
    assert protocols.get_protocol("tiny").name == "tiny"
    assert protocols.protocol_for_url("http://x/tiny/small/stream").name == "tiny"


def test_load_model_and_complete_on_the_plugin(plugin, server, monkeypatch):
    monkeypatch.setenv("TINY_BASE_URL", server.url)
    server.script(Reply(body=body(("text", "hello there")), headers={"content-type": "text/event-stream"}))
    model = load_model("tiny:small", max_tokens=50)
    reply = asyncio.run(model.complete([UserMsg("u", "hi")]))
    assert reply.get_text_content() == "hello there "
    assert reply.usage.input_tokens == 3
    request = server.requests[0]
    assert request["path"] == "/tiny/small/stream"
    assert request["json"] == {
        "turns": [{"role": "user", "text": "hi", "calls": []}],
        "tools": [],
        "stream": True,
        "limit": 50,
    }


def test_the_agent_runs_tools_on_the_plugin(plugin, server, monkeypatch):
    monkeypatch.setenv("TINY_BASE_URL", server.url)

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    server.script(
        Reply(
            body=body(("tool", "c1", "add", '{"a": 2, "b": 3}'), ("tool", "c2", "add", '{"a": 1, "b": 1}')),
            headers={"content-type": "text/event-stream"},
        ),
        Reply(body=body(("text", "5 and 2")), headers={"content-type": "text/event-stream"}),
    )
    agent = Agent("Buddy", load_model("tiny:small"), tools=[add])

    async def collect():
        return [e async for e in agent.reply_stream(UserMsg("u", "add"))]

    events = asyncio.run(collect())
    check_stream(events)
    assert agent.context[-1].get_text_content() == "5 and 2 "
    second = server.requests[1]["json"]["turns"]
    assert second[-1] == {"role": "tool", "results": [{"id": "c1", "text": "5"}, {"id": "c2", "text": "2"}]}


def test_modelwire_chat_on_the_plugin(plugin, server):
    server.script(Reply(body=body(("text", "from the plugin")), headers={"content-type": "text/event-stream"}))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(plugin), os.environ.get("PYTHONPATH", "")]),
        "TINY_BASE_URL": server.url,
    }
    done = subprocess.run(
        [sys.executable, "-m", "modelwire.cli", "chat", "--model", "tiny:small", "Hi"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "from the plugin" in done.stdout
    listing = subprocess.run(
        [sys.executable, "-m", "modelwire.cli", "models"], env=env, capture_output=True, text=True, timeout=60
    )
    assert "tiny" in listing.stdout
    decoded = subprocess.run(
        [sys.executable, "-m", "modelwire.cli", "decode", "--protocol", "tiny", "-"],
        env=env,
        input=body(("text", "x")).decode(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert decoded.returncode == 0 and json.loads(decoded.stdout)["content"][0]["text"] == "x "
