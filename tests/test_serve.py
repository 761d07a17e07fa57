"""modelwire.serve.EventStreamApp under a real ASGI server (uvicorn on 127.0.0.1), with
the agent's model talking to the local provider server: the events served are the
agent's own, the JavaScript fold rebuilds from the served bytes the message Python
folds, a client that goes away cancels the reply and closes the provider connection,
and bad requests get a 400 with the reason."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import httpx2 as httpx
import pytest

from modelwire.agent import Agent
from modelwire.event import parse_event
from modelwire.message import AssistantMsg
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy
from modelwire.serve import EventStreamApp
from modelwire.testing import ProviderServer, sse_reply
from modelwire.testing.sse import body

uvicorn = pytest.importorskip("uvicorn")
ROOT = Path(__file__).resolve().parents[1]
NODE = shutil.which("node")


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


class Served:
    """uvicorn serving ``app`` on a free port, in a thread."""

    def __init__(self, app) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def app_for(provider: ProviderServer) -> EventStreamApp:
    def make_agent() -> Agent:
        model = load_model("anthropic:claude-sonnet-4-5", api_key="sk-test", base_url=provider.url, retry=RetryPolicy(max_retries=0))
        return Agent("Buddy", model, "Be brief.", tools=[weather])

    return EventStreamApp(make_agent)


def events_of(raw: bytes) -> list:
    return [parse_event(json.loads(line[6:])) for line in raw.decode().split("\n") if line.startswith("data: ")]


def test_a_reply_with_a_tool_is_served_as_events_and_folds_the_same_in_javascript():
    with ProviderServer() as provider:
        provider.replies = [
            sse_reply(body("anthropic", ("think", "They want weather."), ("tool", "toolu_1", "weather", '{"city": "Paris"}'), usage=(20, 9))),
            sse_reply(body("anthropic", ("text", "It is sunny in Paris."), usage=(40, 7))),
        ]
        with Served(app_for(provider)) as url:
            with httpx.Client() as client:
                resp = client.post(url + "/reply", json={"input": "Weather in Paris?"})
                js = client.get(url + "/fold.mjs")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
    events = events_of(resp.content)
    assert events[0].type == "REPLY_START" and events[-1].type == "REPLY_END"
    reply = AssistantMsg(events[0].name, [], id=events[0].reply_id, created_at=events[0].created_at)
    for ev in events:
        reply.append_event(ev)
    assert [b.type for b in reply.content] == ["thinking", "tool_call", "tool_result", "text"]
    assert reply.content[2].output[0].text == "sunny in Paris"
    assert reply.get_text_content().strip() == "It is sunny in Paris."
    assert reply.usage.input_tokens == 60
    # the tool result reached the provider in the second request
    assert "sunny in Paris" in json.dumps(provider.requests[1]["json"])
    assert js.status_code == 200 and b"export function appendEvent" in js.content

    if NODE is None:
        pytest.skip("node is not installed")
    script = """
        import { appendEvent, messageFor, EventStreamParser } from "%s";
        const parser = new EventStreamParser();
        let reply;
        for await (const chunk of process.stdin) {
          for (const event of parser.feed(chunk)) {
            if (event.type === "REPLY_START") reply = messageFor(event);
            else appendEvent(reply, event);
          }
        }
        process.stdout.write(JSON.stringify(reply));
    """ % (ROOT / "src" / "modelwire" / "js" / "fold.mjs").as_uri()
    # the served bytes in small pieces, as a browser would read them
    proc = subprocess.run([NODE, "--input-type=module", "-e", script], input=resp.content, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout) == reply.to_dict()


def test_a_client_that_goes_away_cancels_the_reply_and_closes_the_provider_stream():
    long = body("anthropic", ("text", " ".join(["word"] * 400)))
    with ProviderServer() as provider:
        provider.replies = [sse_reply(long, delay=0.01)]
        with Served(app_for(provider)) as url:
            with httpx.Client() as client:
                with client.stream("POST", url + "/reply", json={"input": "talk"}) as resp:
                    seen = 0
                    for line in resp.iter_lines():
                        seen += line.startswith("data: ")
                        if seen >= 10:
                            break
                left = time.monotonic()
            deadline = time.monotonic() + 5
            while not provider.disconnects and time.monotonic() < deadline:
                time.sleep(0.01)
    assert provider.disconnects, "the provider stream stayed open after the client left"
    assert provider.disconnects[0] - left < 2.0


@pytest.mark.parametrize(
    "payload, reason",
    [
        (b"not json", "not JSON"),
        (b'{"input": ""}', "non-empty string"),
        (b'{"input": "a", "messages": []}', 'send {"input"'),
        (b'{"messages": [{"role": "user", "name": "u", "content": [{"type": "tool_call", "id": "c", "name": "f", "input": "{}"}]}]}', "not valid"),
    ],
)
def test_a_bad_request_gets_400_with_the_reason_and_no_agent_runs(payload, reason):
    made = []

    def make_agent():
        made.append(1)
        raise AssertionError("no agent for a bad request")

    with Served(EventStreamApp(make_agent)) as url:
        with httpx.Client() as client:
            resp = client.post(url + "/reply", content=payload, headers={"content-type": "application/json"})
            other = client.get(url + "/reply"), client.get(url + "/nothing")
    assert resp.status_code == 400 and reason in resp.json()["error"]
    assert [r.status_code for r in other] == [405, 404]
    assert made == []


def test_a_failure_outside_the_reply_ends_the_stream_with_an_error_event():
    from modelwire import event as E

    class Broken:
        async def reply_stream(self, messages):
            yield E.ReplyStartEvent(session_id="s", reply_id="r", name="bot")
            raise RuntimeError("the tool registry is gone")

    with Served(EventStreamApp(Broken)) as url:
        with httpx.Client() as client:
            resp = client.post(url + "/reply", json={"input": "hi"})
    assert resp.status_code == 200
    text = resp.text
    first = text.split("\n\n")[0]
    assert parse_event(json.loads(first.removeprefix("data: "))).type == "REPLY_START"  # what was sent stays
    assert text.endswith('event: error\ndata: {"type": "ERROR", "message": "RuntimeError: the tool registry is gone"}\n\n')
