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
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def agent_app(provider: ProviderServer, *tools, made: list | None = None) -> EventStreamApp:
    """An app whose agents (one per reply, on one Anthropic model talking to ``provider``,
    with ``tools``) are appended to ``made`` when given."""
    model = load_model(
        "anthropic:claude-sonnet-4-5", api_key="sk-test", base_url=provider.url, retry=RetryPolicy(max_retries=0)
    )

    def make_agent() -> Agent:
        agent = Agent("Buddy", model, "Be brief.", tools=list(tools))
        if made is not None:
            made.append(agent)
        return agent

    return EventStreamApp(make_agent)


def app_for(provider: ProviderServer) -> EventStreamApp:
    return agent_app(provider, weather)


def events_of(raw: bytes) -> list:
    return [parse_event(json.loads(line[6:])) for line in raw.decode().split("\n") if line.startswith("data: ")]


def test_a_reply_with_a_tool_is_served_as_events_and_folds_the_same_in_javascript():
    with ProviderServer() as provider:
        provider.replies = [
            sse_reply(
                body(
                    "anthropic",
                    ("think", "They want weather."),
                    ("tool", "toolu_1", "weather", '{"city": "Paris"}'),
                    usage=(20, 9),
                )
            ),
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
    proc = subprocess.run(
        [NODE, "--input-type=module", "-e", script], input=resp.content, capture_output=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout) == reply.to_dict()


def test_a_client_that_goes_away_leaves_the_reply_its_grace_period_then_it_is_cancelled():
    long = body("anthropic", ("text", " ".join(["word"] * 2000)))  # 20 s of words at the delay below
    with ProviderServer() as provider:
        provider.replies = [sse_reply(long, delay=0.01)]
        app = app_for(provider)
        app.grace = 0.5
        with Served(app) as url:
            with httpx.Client() as client:
                with client.stream("POST", url + "/reply", json={"input": "talk"}) as resp:
                    seen = 0
                    for line in resp.iter_lines():
                        seen += line.startswith("data: ")
                        if seen >= 10:
                            break
                left = time.monotonic()
            deadline = time.monotonic() + 60
            while not provider.disconnects and time.monotonic() < deadline:
                time.sleep(0.01)
    # A disconnect is noted only when a write fails: the stream was cut before its end (20 s),
    # and not at once but after the grace period.
    assert provider.disconnects, "the provider stream stayed open after the client left"
    assert provider.disconnects[0] - left > 0.4


@pytest.mark.parametrize(
    "payload, reason",
    [
        (b"not json", "not JSON"),
        (b'{"input": ""}', "non-empty string"),
        (b'{"input": "a", "messages": []}', 'send {"input"'),
        (
            (
                b'{"messages": [{"role": "user", "name": "u", "content": [{"type": "tool_call", "id": '
                b'"c", "name": "f", "input": "{}"}]}]}'
            ),
            "not valid",
        ),
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
            other = client.put(url + "/reply"), client.get(url + "/nothing")
    assert resp.status_code == 400 and reason in resp.json()["error"]
    assert [r.status_code for r in other] == [405, 404]
    assert made == []


def test_an_agent_that_cannot_be_made_is_a_500_that_says_why():
    from modelwire.errors import ConfigError

    def make_agent():
        raise ConfigError("anthropic needs an API key: set ANTHROPIC_API_KEY")

    with Served(EventStreamApp(make_agent)) as url:
        resp = httpx.post(url + "/reply", json={"input": "hi"})
    assert resp.status_code == 500
    assert resp.json() == {
        "error": "the agent could not be made: ConfigError: anthropic needs an API key: set ANTHROPIC_API_KEY"
    }


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
    text = "\n".join(line for line in resp.text.split("\n") if not line.startswith("id: "))  # each frame has its SSE id
    first = text.split("\n\n")[0]
    assert parse_event(json.loads(first.removeprefix("data: "))).type == "REPLY_START"  # what was sent stays
    last = text.split("\n\n")[-2]
    assert last.startswith("event: error\ndata: ")
    assert json.loads(last.split("data: ", 1)[1]) == {
        "type": "ERROR",
        "reply_id": "r",
        "message": "RuntimeError: the tool registry is gone",
    }  # it names its reply


# -- pauses, history and the other encodings (their official clients: test_serve_clients.py) --


def frames_of(raw: bytes) -> list:
    """The JSON of each ``data:`` line (``[DONE]`` as the string)."""
    out = []
    for line in raw.decode().split("\n"):
        if line.startswith("data: "):
            text = line[6:]
            out.append(text if text == "[DONE]" else json.loads(text))
    return out


def tracked_app(provider: ProviderServer, made: list, confirm: bool = True) -> EventStreamApp:
    """weather asks for confirmation unless ``confirm=False``; the agents land in ``made``."""
    from modelwire.agent import Tool

    return agent_app(provider, Tool(weather, requires_confirmation=confirm), made=made)


def test_a_parked_reply_resumes_with_the_answer_posted_as_an_event_and_wrong_answers_leave_it_waiting():
    made: list = []
    with ProviderServer() as provider:
        provider.replies = [
            sse_reply(body("anthropic", ("tool", "toolu_1", "weather", '{"city": "Paris"}'), usage=(20, 9))),
            sse_reply(body("anthropic", ("text", "Sunny."), usage=(40, 7))),
        ]
        with Served(tracked_app(provider, made)) as url:
            with httpx.Client() as client:
                first = events_of(client.post(url + "/reply", json={"input": "Weather?"}).content)
                rid = first[0].reply_id
                asked, resume = first[-2], first[-1]
                token = resume.value["resume_token"]
                answer = json.loads(made[0].confirm({"toolu_1": True}).to_json())
                unknown = client.post(
                    url + "/reply",
                    json={"resume": {"type": "USER_INTERRUPT", "reply_id": "nope"}, "resume_token": token},
                )
                no_token = client.post(url + "/reply", json={"resume": answer})
                wrong_token = client.post(url + "/reply", json={"resume": answer, "resume_token": token[:-2] + "xx"})
                wrong_call = client.post(
                    url + "/reply",
                    json={
                        "resume": {
                            **answer,
                            "confirm_results": [
                                {
                                    "confirmed": True,
                                    "tool_call": {
                                        "type": "tool_call",
                                        "id": "toolu_9",
                                        "name": "weather",
                                        "input": "{}",
                                    },
                                }
                            ],
                        },
                        "resume_token": token,
                    },
                )
                second = events_of(client.post(url + "/reply", json={"resume": answer, "resume_token": token}).content)
                again = client.post(url + "/reply", json={"resume": answer, "resume_token": token})
    assert asked.type == "REQUIRE_USER_CONFIRM" and [c.id for c in asked.tool_calls] == ["toolu_1"]
    assert resume.type == "CUSTOM" and resume.name == "modelwire.resume" and resume.value["reply_id"] == rid
    assert not any(e.type == "REPLY_END" for e in first)  # parked, not ended
    # an unknown reply, no token, a wrong token and a call the reply does not wait for: one answer
    refused = [unknown, no_token, wrong_token, wrong_call]
    assert [r.status_code for r in refused] == [409] * 4 and len({r.text for r in refused}) == 1
    assert second[0].type == "USER_CONFIRM_RESULT" and second[-1].type == "REPLY_END"  # the reply still waited
    assert again.status_code == 409 and again.text == unknown.text  # answered already
    # The parked reply was data: a fresh agent from the factory took it up, the same reply.
    assert made[-1].context[-1].id == rid
    # the events of both streams fold into the message the agent kept
    reply = AssistantMsg(first[0].name, [], id=rid, created_at=made[-1].context[-1].created_at)
    for ev in first + second:
        reply.append_event(ev)
    assert reply.to_dict() == made[-1].context[-1].to_dict()
    assert reply.content[1].state == "success" and reply.finished_reason == "completed"


def test_a_conversation_posted_as_messages_is_the_agents_history():
    made: list = []
    with ProviderServer() as provider:
        provider.replies = [
            sse_reply(body("anthropic", ("tool", "toolu_1", "weather", '{"city": "Paris"}'))),
            sse_reply(body("anthropic", ("text", "Sunny."))),
            sse_reply(body("anthropic", ("text", "Still sunny."))),
        ]
        with Served(tracked_app(provider, made, confirm=False)) as url:
            with httpx.Client() as client:
                client.post(url + "/reply", json={"input": "Weather?"})
                history = [m.to_dict() for m in made[0].context]
                client.post(
                    url + "/reply",
                    json={
                        "messages": history
                        + [{"role": "user", "name": "user", "content": [{"type": "text", "text": "And now?"}]}]
                    },
                )
                ends_with_assistant = client.post(url + "/reply", json={"messages": history})
    sent = provider.requests[2]["json"]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]
    assert "sunny in Paris" in json.dumps(sent[2]) and sent[-1]["content"][-1]["text"] == "And now?"
    assert (
        ends_with_assistant.status_code == 400
        and "last message must be the user's" in ends_with_assistant.json()["error"]
    )


AG_UI_INPUT = {
    "threadId": "t1",
    "runId": "r1",
    "messages": [{"id": "u1", "role": "user", "content": "Weather?"}],
    "state": None,
    "tools": [],
    "context": [],
    "forwardedProps": {},
}


def test_ag_ui_events_are_valid_ag_ui_through_an_interrupt_an_image_result_and_an_error():
    ag_ui = pytest.importorskip("ag_ui.core")
    from pydantic import TypeAdapter

    from modelwire.agent import Tool
    from modelwire.message import DataBlock
    from modelwire.testing import error_reply

    valid = TypeAdapter(ag_ui.Event)
    pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

    def photo(city: str):
        """A photo of a city."""
        return [f"a photo of {city}", DataBlock(source={"type": "base64", "data": pixel, "media_type": "image/png"})]

    with ProviderServer() as provider:
        provider.replies = [
            sse_reply(
                body(
                    "anthropic",
                    ("think", "A photo."),
                    ("text", "Asking."),
                    ("tool", "toolu_1", "photo", '{"city": "Oslo"}'),
                    usage=(20, 9),
                )
            ),
            sse_reply(body("anthropic", ("text", "Here it is."), usage=(40, 7))),
            error_reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ]
        with Served(agent_app(provider, Tool(photo, requires_confirmation=True))) as url:
            with httpx.Client() as client:
                run1 = frames_of(client.post(url + "/reply", json=AG_UI_INPUT).content)
                interrupt_id = run1[-1]["outcome"]["interrupts"][0]["id"]
                resume = {
                    **AG_UI_INPUT,
                    "runId": "r2",
                    "resume": [{"interruptId": interrupt_id, "status": "resolved", "payload": {"approved": True}}],
                }
                run2 = frames_of(client.post(url + "/reply", json=resume).content)
                run3 = frames_of(client.post(url + "/reply", json={**AG_UI_INPUT, "runId": "r3"}).content)
    for frame in run1 + run2 + run3:
        valid.validate_python(frame)
    assert [f["type"] for f in run1][:3] == ["RUN_STARTED", "CUSTOM", "STEP_STARTED"]
    assert run1[1]["name"] == "modelwire.resume" and run1[1]["value"]["resume_token"] == interrupt_id.partition(".")[0]
    token, _, call_id = interrupt_id.partition(".")
    assert len(token) >= 40 and call_id == "toolu_1"  # the reply's resume token, then the call
    assert run1[-1]["outcome"] == {
        "type": "interrupt",
        "interrupts": [
            {
                "id": interrupt_id,
                "reason": "tool_approval",
                "toolCallId": "toolu_1",
                "message": 'Allow photo({"city": "Oslo"})?',
            }
        ],
    }
    (call,) = [f for f in run1 if f["type"] == "TOOL_CALL_START"]
    (text,) = [f for f in run1 if f["type"] == "TEXT_MESSAGE_START"]
    assert call["parentMessageId"] == text["messageId"]  # the call hangs off its model call's text
    (result,) = [f for f in run2 if f["type"] == "TOOL_CALL_RESULT"]
    assert result["content"] == [
        {"type": "text", "text": "a photo of Oslo"},
        {"type": "image", "source": {"type": "data", "value": pixel, "mimeType": "image/png"}},
    ]
    assert run2[0]["type"] == "RUN_STARTED" and run2[0]["runId"] == "r2"
    assert run2[-1]["type"] == "RUN_FINISHED" and run2[-1]["usage"][0]["inputTokens"] == 40
    assert run3[-1]["type"] == "RUN_ERROR" and "Overloaded" in run3[-1]["message"] and run3[-1]["code"]


def test_the_ui_message_stream_ends_an_error_with_an_error_part_finish_and_done():
    from modelwire.testing import error_reply

    with ProviderServer() as provider:
        provider.replies = [
            error_reply(
                400, {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long"}}
            )
        ]
        with Served(app_for(provider)) as url:
            with httpx.Client() as client:
                resp = client.post(
                    url + "/reply",
                    json={
                        "id": "chat1",
                        "trigger": "submit-message",
                        "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
                    },
                )
                wrong_part = client.post(
                    url + "/reply",
                    json={"messages": [{"id": "m1", "role": "user", "parts": [{"type": "tool-x", "toolCallId": "c"}]}]},
                )
                unknown = client.post(url + "/reply?encoding=smoke-signals", json=AG_UI_INPUT)
    assert resp.headers["x-vercel-ai-ui-message-stream"] == "v1"
    frames = frames_of(resp.content)
    assert [f if isinstance(f, str) else f["type"] for f in frames][-3:] == ["error", "finish", "[DONE]"]
    assert "prompt is too long" in frames[-3]["errorText"] and frames[-2]["finishReason"] == "error"
    assert wrong_part.status_code == 400 and "unknown part 'tool-x' in a user message" in wrong_part.json()["error"]
    assert unknown.status_code == 400 and "smoke-signals" in unknown.json()["error"]


def test_mounted_under_a_prefix_the_page_and_its_files_are_found_relative_to_it():
    import asyncio

    from modelwire.serve import EventStreamApp

    app = EventStreamApp(lambda: None)

    async def get(path: str) -> tuple[int, bytes]:
        sent: list[dict] = []

        async def receive() -> dict:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict) -> None:
            sent.append(message)

        await app(
            {"type": "http", "method": "GET", "path": path, "root_path": "/chat", "query_string": b"", "headers": []},
            receive,
            send,
        )
        return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])

    page, config, fold, missing = (
        asyncio.run(get(p)) for p in ("/chat/", "/chat/config.json", "/chat/fold.mjs", "/chat/nothing")
    )
    assert page[0] == 200 and b'from "./fold.mjs"' in page[1] and b'fetch("config.json")' in page[1]
    assert config[0] == 200 and json.loads(config[1]) == {"path": "reply", "image_origins": [], "auth": False}
    assert fold[0] == 200 and b"export function appendEvent" in fold[1]
    assert missing[0] == 404


# -- parts of one reply, bodies that trickle, what a parked reply costs ----------------------------


def _framed(raw: bytes) -> list[tuple[int | None, dict]]:
    out = []
    for block in raw.decode().split("\n\n"):
        ident = next((int(line[4:]) for line in block.split("\n") if line.startswith("id: ")), None)
        data = next((json.loads(line[6:]) for line in block.split("\n") if line.startswith("data: ")), None)
        if data is not None:
            out.append((ident, data))
    return out


def test_the_sse_ids_of_a_reply_go_on_across_its_parts_and_every_frame_names_it():
    """A reply parks for a confirmation and goes on after the answer: the continuation's
    ids follow the first part's (a client holding ``Last-Event-ID: 11`` can tell them apart),
    and every frame of both parts names the reply."""
    made: list = []
    with ProviderServer() as provider:
        provider.replies = [
            sse_reply(body("anthropic", ("tool", "toolu_1", "weather", '{"city": "Paris"}'), usage=(20, 9))),
            sse_reply(body("anthropic", ("text", "Sunny."), usage=(40, 7))),
        ]
        with Served(tracked_app(provider, made)) as url, httpx.Client() as client:
            first = _framed(client.post(url + "/reply", json={"input": "Weather?"}).content)
            token = first[-1][1]["value"]["resume_token"]
            answer = json.loads(made[0].confirm({"toolu_1": True}).to_json())
            second = _framed(client.post(url + "/reply", json={"resume": answer, "resume_token": token}).content)
    ids = [i for i, _ in first + second]
    assert ids == list(range(1, len(ids) + 1))
    rid = first[0][1]["reply_id"]
    for _, data in first + second:
        assert data.get("reply_id", (data.get("value") or {}).get("reply_id")) == rid, data


def test_a_request_body_that_trickles_is_cut_off_with_408():
    """A client that sends its body a byte at a time holds a connection and a file
    descriptor for nothing: past ``body_timeout`` it gets 408 and the connection closes."""
    with ProviderServer() as provider:
        app = app_for(provider)
        app.body_timeout = 0.5
        with Served(app) as url:
            port = int(url.rsplit(":", 1)[1])
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(
                    (
                        b"POST /reply HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: "
                        b"application/json\r\ncontent-length: 100\r\n\r\n{"
                    )
                )
                answer = b""
                for _ in range(300):  # a byte every 0.1 s, for up to 30 s: the app answers first
                    time.sleep(0.1)
                    try:
                        sock.sendall(b" ")
                    except OSError:
                        break
                    sock.setblocking(False)
                    try:
                        answer += sock.recv(4096)
                    except BlockingIOError:
                        pass
                    sock.setblocking(True)
                    if answer:
                        break
                # the head and the body may come in separate reads: read to the close
                while True:
                    try:
                        chunk = sock.recv(4096)
                    except ConnectionResetError:
                        break
                    if not chunk:
                        break
                    answer += chunk
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"did not arrive within 0.5 s" in answer
    assert provider.requests == []


def test_a_parked_reply_is_kept_compressed_and_a_finished_one_lingers_without_its_agent():
    """What waits is the reply's JSON, compressed; what lingers for late reconnects is its
    frames, not the agent and its whole conversation."""
    import random

    from modelwire.agent import Tool

    made: list = []
    rnd = random.Random(7)
    vocabulary = [
        "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9))) for _ in range(3000)
    ]
    text = " ".join(rnd.choice(vocabulary) for _ in range(60_000))  # words, as a long document
    with ProviderServer() as provider:
        provider.respond = lambda request: sse_reply(
            body("anthropic", ("tool", "toolu_1", "weather", '{"city": "Paris"}'))
        )
        app = agent_app(provider, Tool(weather, requires_confirmation=True), made=made)
        with Served(app) as url, httpx.Client() as client:
            posted = json.dumps(
                {"messages": [{"role": "user", "name": "user", "content": [{"type": "text", "text": text}]}]}
            )
            raw = client.post(url + "/reply", content=posted, headers={"content-type": "application/json"}).content
            assert b"REQUIRE_USER_CONFIRM" in raw
            deadline = time.monotonic() + 30  # the reply's task ends after its last frame was sent
            while not (app.live and all(live.done and live.agent is None for live in app.live.values())) and (
                time.monotonic() < deadline
            ):
                time.sleep(0.01)
            lingering = list(app.live.values())
    state = json.dumps(made[0].state_dict(), ensure_ascii=False, separators=(",", ":"))
    assert app.store.bytes < 0.6 * len(state.encode())  # compressed: words take well under half
    assert lingering and all(live.agent is None and live.done for live in lingering)


def test_a_stream_that_breaks_ends_its_response_and_a_client_that_leaves_ends_it_quietly():
    """What ``_relay`` sends: every chunk, then the end of the body, also when the stream
    broke before its end; nothing more, and no error, once the client has gone."""
    import asyncio

    from modelwire.serve._app import _relay

    async def broken():
        yield b"a"
        raise RuntimeError("the stream broke")

    async def endless():
        yield b"a"
        await asyncio.sleep(3600)
        yield b"never"

    async def run(chunks, leave: bool) -> list:
        sent: list = []
        left = asyncio.Event()

        async def receive():
            if leave and len(sent) >= 2:
                return {"type": "http.disconnect"}
            await left.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            sent.append((message["type"], message.get("body"), message.get("more_body")))

        await asyncio.wait_for(_relay(chunks, receive, send, []), 60)  # bounded: a hang fails the test
        return sent

    assert asyncio.run(run(broken(), leave=False))[1:] == [
        ("http.response.body", b"a", True),
        ("http.response.body", b"", False),
    ]
    assert asyncio.run(run(endless(), leave=True))[1:] == [("http.response.body", b"a", True)]
