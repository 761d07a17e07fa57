"""Parked replies in a real Redis (``redis-server``, started here on 127.0.0.1): two
``modelwire serve`` processes on one Redis, a reply parked on one and resumed on the
other, both restarted in between, and two resumes of one reply racing (one wins)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import copy
import json
import os
import shutil
import socket
import subprocess
import sys
import time

import httpx2 as httpx
import pytest

from modelwire.agent import Tool
from modelwire.event import parse_event
from modelwire.message import AssistantMsg
from modelwire.serve import RedisStore
from modelwire.testing import ProviderServer, sse_reply
from modelwire.testing.sse import body

from test_serve import Served, agent_app, events_of, weather

REDIS = shutil.which("redis-server")
pytestmark = pytest.mark.skipif(
    REDIS is None, reason="needs redis-server (apt-get install redis-server; .ci/run installs it)"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port: int, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    (
                        f"{what} did not start: "
                        f"{proc.stderr.read() if proc.stderr and proc.poll() is not None else 'timeout'}"
                    )
                )
            time.sleep(0.05)


@pytest.fixture
def redis_url(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(port, proc, "redis-server")
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait(10)
    proc.stderr.close()


def provider_answers(request: dict):
    """A tool call first; once the conversation holds the tool's result, the answer."""
    sent = json.dumps(request["json"]["messages"])
    if "tool_result" in sent:
        return sse_reply(body("anthropic", ("text", "It is 42."), usage=(40, 5)))
    return sse_reply(body("anthropic", ("tool", "toolu_1", "calculate", '{"expression": "6 * 7"}'), usage=(20, 9)))


class Worker:
    """``modelwire serve`` on a Redis store, as an operator starts each worker."""

    def __init__(self, provider: ProviderServer, store: str, port: int | None = None) -> None:
        self.port = port or free_port()
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "MODELWIRE_MODEL"}
        env["ANTHROPIC_API_KEY"] = "sk-test"
        cmd = [
            sys.executable,
            "-m",
            "modelwire.cli",
            "serve",
            "--port",
            str(self.port),
            "--model",
            "anthropic:claude-sonnet-4-5",
            "--base-url",
            provider.url,
            "--tool",
            "modelwire.demo:calculate",
            "--confirm-tools",
            "--store",
            store,
        ]
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_for(self.port, self.proc, "modelwire serve")
        self.url = f"http://127.0.0.1:{self.port}/reply"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        self.proc.stderr.close()


@contextlib.contextmanager
def two_workers(provider: ProviderServer, store: str, ports: tuple[int, int] | None = None):
    """Two ``modelwire serve`` processes on one store, stopped on the way out."""
    workers = [Worker(provider, store, port=port) for port in (ports or (None, None))]
    try:
        yield workers
    finally:
        for worker in workers:
            worker.stop()


def fold(*streams) -> AssistantMsg:
    events = [e for stream in streams for e in stream]
    reply = AssistantMsg(events[0].name, [], id=events[0].reply_id)
    for ev in events:
        reply.append_event(ev)
    return reply


def approve(parked_events, token):
    asked = next(e for e in parked_events if e.type == "REQUIRE_USER_CONFIRM")
    event = {
        "type": "USER_CONFIRM_RESULT",
        "reply_id": asked.reply_id,
        "confirm_results": [{"confirmed": True, "tool_call": asked.tool_calls[0].to_dict()}],
    }
    return {"resume": event, "resume_token": token}


def test_parked_on_one_worker_resumed_on_another_after_both_restarted(redis_url):
    with ProviderServer() as provider:
        provider.respond = provider_answers
        with two_workers(provider, redis_url) as (a, b):
            first = events_of(httpx.post(a.url, json={"input": "What is 6 * 7?"}, timeout=30).content)
        token = first[-1].value["resume_token"]
        # Both restarted: nothing of the reply is in either process any more.
        with two_workers(provider, redis_url, (a.port, b.port)) as (a, b):
            second = events_of(httpx.post(b.url, json=approve(first, token), timeout=30).content)
            again = httpx.post(a.url, json=approve(first, token), timeout=30)
    assert [e.type for e in first][-2:] == ["REQUIRE_USER_CONFIRM", "CUSTOM"]
    assert (
        second[0].type == "USER_CONFIRM_RESULT"
        and second[-1].type == "REPLY_END"
        and second[-1].finished_reason == "completed"
    )
    reply = fold(first, second)
    (result,) = [b for b in reply.content if b.type == "tool_result"]
    assert result.state == "success" and "42" in (
        result.output if isinstance(result.output, str) else result.output[0].text
    )
    assert reply.get_text_content().strip() == "It is 42."
    assert again.status_code == 409  # taken once, whichever worker is asked
    assert "42" in json.dumps(provider.requests[-1]["json"]["messages"][-1])  # the calculator ran on the second worker


def test_two_resumes_of_one_reply_race_and_exactly_one_wins(redis_url):
    with ProviderServer() as provider:
        provider.respond = provider_answers
        with two_workers(provider, redis_url) as (a, b):
            first = events_of(httpx.post(a.url, json={"input": "What is 6 * 7?"}, timeout=30).content)
            answer = approve(first, first[-1].value["resume_token"])
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                results = list(pool.map(lambda url: httpx.post(url, json=answer, timeout=30), [a.url, b.url]))
    codes = sorted(r.status_code for r in results)
    assert codes == [200, 409]
    won = next(r for r in results if r.status_code == 200)
    assert events_of(won.content)[-1].type == "REPLY_END"
    assert sum("tool_result" in json.dumps(r["json"]["messages"]) for r in provider.requests) == 1  # the tool ran once


def test_the_rebuilt_reply_is_the_one_the_first_worker_kept(redis_url):
    """Two apps in this process (two uvicorn servers, each its own loop and Redis client):
    the message the resuming worker's agent keeps equals the fold of both streams."""
    made_a: list = []
    made_b: list = []
    with ProviderServer() as provider:
        provider.respond = lambda request: (
            sse_reply(body("anthropic", ("text", "Sunny.")))
            if "tool_result" in json.dumps(request["json"]["messages"])
            else sse_reply(body("anthropic", ("tool", "toolu_1", "weather", '{"city": "Paris"}')))
        )
        app_a = agent_app(provider, Tool(weather, requires_confirmation=True), made=made_a)
        app_b = agent_app(provider, Tool(weather, requires_confirmation=True), made=made_b)
        app_a.store, app_b.store = RedisStore(redis_url), RedisStore(redis_url)
        with Served(app_a) as url_a, Served(app_b) as url_b:
            first = events_of(httpx.post(url_a + "/reply", json={"input": "Weather?"}, timeout=30).content)
            parked = copy.deepcopy(made_a[0].context[-1])
            second = events_of(
                httpx.post(url_b + "/reply", json=approve(first, first[-1].value["resume_token"]), timeout=30).content
            )
    kept = made_b[-1].context[-1]
    assert kept.id == parked.id and kept.content[0].to_dict() == {**parked.content[0].to_dict(), "state": "finished"}
    rebuilt = AssistantMsg(first[0].name, [], id=first[0].reply_id, created_at=kept.created_at)
    for ev in first + second:
        rebuilt.append_event(ev)
    assert rebuilt.to_dict() == kept.to_dict()


def test_a_parked_reply_expires_in_redis_by_its_ttl(redis_url):
    from modelwire.serve import Conflict, Parked

    async def go():
        store = RedisStore(redis_url, ttl=1.0)
        await store.put("tok", Parked("r1", "{}", time.time()))
        keys = await store.client.keys("modelwire:parked:*")
        ttl_ms = await store.client.pttl(keys[0])
        await asyncio.sleep(1.2)
        try:
            await store.take("tok", "r1")
            outcome = "taken"
        except Conflict:
            outcome = "expired"
        await store.aclose()
        return keys, ttl_ms, outcome

    keys, ttl_ms, outcome = asyncio.run(go())
    assert len(keys) == 1 and b"tok" not in keys[0] and 0 < ttl_ms <= 1000 and outcome == "expired"


def _read(resp, until=None):
    """(last id, events) of an SSE response, stopping after ``until`` events if given."""
    last, events = 0, []
    for line in resp.iter_lines():
        if line.startswith("id: "):
            last = int(line[4:])
        elif line.startswith("data: "):
            events.append(parse_event(json.loads(line[6:])))
            if until is not None and len(events) >= until:
                break
    return last, events


def test_a_lost_stream_is_taken_up_on_another_worker_and_the_reply_is_not_abandoned(redis_url):
    words = [f"w{i}" for i in range(250)]
    made_a: list = []
    made_b: list = []
    with ProviderServer() as provider:
        provider.replies = [sse_reply(body("anthropic", ("text", " ".join(words)), usage=(5, 250)), delay=0.02)]
        app_a, app_b = agent_app(provider, made=made_a), agent_app(provider, made=made_b)
        app_a.store, app_b.store = RedisStore(redis_url), RedisStore(redis_url)
        # The first worker gives up on a reply nobody follows after 1.5 s (the stream takes 5 s
        # at least): time for a loaded machine to take it up on the second.
        app_a.grace = 1.5
        with Served(app_a) as url_a, Served(app_b) as url_b, httpx.Client(timeout=30) as client:
            with client.stream("POST", url_a + "/reply", json={"input": "count"}) as resp:
                last, first = _read(resp, until=15)  # then the connection is lost
            token = next(e for e in first if e.type == "CUSTOM").value["resume_token"]
            time.sleep(0.1)
            with client.stream(
                "GET", url_b + "/reply", headers={"last-event-id": str(last), "x-modelwire-resume-token": token}
            ) as resp:
                assert resp.status_code == 200
                _, rest = _read(resp)
            stranger = client.get(url_b + "/reply", headers={"last-event-id": "1", "x-modelwire-resume-token": "nope"})
    assert rest[-1].type == "REPLY_END" and rest[-1].finished_reason == "completed"  # followed to the end on B
    kept = made_a[0].context[-1]
    events = [e for e in first + rest if e.type != "CUSTOM"]
    folded = AssistantMsg(events[0].name, [], id=events[0].reply_id, created_at=kept.created_at)
    for ev in events:
        folded.append_event(ev)
    assert folded.to_dict() == kept.to_dict() and folded.get_text_content().split() == words
    assert not made_b and len(provider.requests) == 1 and stranger.status_code == 204


# -- a worker that dies, a Redis that restarts or is down ---------------------------------------


class RedisServer:
    """A ``redis-server`` on 127.0.0.1 that can be stopped and started again on its port,
    with its append-only file, so what it held survives the restart."""

    def __init__(self, folder) -> None:
        self.port, self.folder = free_port(), folder
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        cmd = [
            REDIS,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--dir",
            str(self.folder),
        ]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_for(self.port, self.proc, "redis-server")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc.stderr.close()
            self.proc = None


def _frames(raw: bytes) -> list[tuple[int | None, dict]]:
    """(id, JSON) of each SSE frame of an events-dialect stream."""
    out = []
    for block in raw.decode().split("\n\n"):
        ident, data = None, None
        for line in block.split("\n"):
            if line.startswith("id: "):
                ident = int(line[4:])
            elif line.startswith("data: "):
                data = json.loads(line[6:])
        if data is not None:
            out.append((ident, data))
    return out


def test_a_client_following_a_reply_whose_worker_died_gets_an_error_within_seconds(redis_url):
    """The client takes a reply up on worker B; worker A, which runs it, is killed: B ends
    the stream with an error frame in the client's dialect, numbered on and naming the
    reply, a few seconds later (before: 200 and then nothing for the linger time)."""
    words = " ".join(f"w{i}" for i in range(400))
    with ProviderServer() as provider:
        provider.respond = lambda request: sse_reply(body("anthropic", ("text", words), usage=(5, 400)), delay=0.05)
        with two_workers(provider, redis_url) as (a, b), httpx.Client(timeout=httpx.Timeout(20.0)) as client:
            with client.stream("POST", a.url, json={"input": "count"}) as resp:
                last, first = _read(resp, until=12)
            token = next(e for e in first if e.type == "CUSTOM").value["resume_token"]
            with client.stream(
                "GET", b.url, headers={"last-event-id": str(last), "x-modelwire-resume-token": token}
            ) as resp:
                assert resp.status_code == 200
                pieces = resp.iter_raw()
                got = next(pieces)  # B follows the reply as A writes it
                a.proc.kill()  # A dies mid-reply
                a.proc.wait(10)
                got += b"".join(pieces)  # a read timeout here (20 s) is the old behaviour
    frames = _frames(got)
    ident, end = frames[-1]
    assert end["type"] == "ERROR" and "stopped" in end["message"] and end["reply_id"] == first[0].reply_id
    ids = [i for i, _ in frames]
    assert ids == list(range(last + 1, last + 1 + len(ids)))  # numbered on, no gap, no repeat
    assert all(d.get("reply_id") == first[0].reply_id for _, d in frames)  # every frame names its reply


def test_after_a_redis_restart_the_first_answer_is_taken_not_a_500(tmp_path):
    redis = RedisServer(tmp_path)
    redis.start()
    try:
        with ProviderServer() as provider:
            provider.respond = provider_answers
            with two_workers(provider, redis.url) as (a, _):
                first = events_of(httpx.post(a.url, json={"input": "What is 6 * 7?"}, timeout=30).content)
                redis.stop()
                redis.start()  # the workers' pooled connections to it are dead now
                answered = httpx.post(a.url, json=approve(first, first[-1].value["resume_token"]), timeout=30)
    finally:
        redis.stop()
    assert answered.status_code == 200, answered.text
    second = events_of(answered.content)
    assert second[-1].type == "REPLY_END" and second[-1].finished_reason == "completed"


def test_with_redis_down_a_reply_that_must_park_asks_nothing_and_ends_with_an_error(tmp_path):
    """No one could take the answer: the confirmation is never asked, the reply's calls are
    answered as interrupted, the stream ends with the error; a resume gets 503, not a 500
    that blames the agent."""
    redis = RedisServer(tmp_path)
    redis.start()
    url = redis.url
    redis.stop()  # down from the start
    with ProviderServer() as provider:
        provider.respond = provider_answers
        worker = Worker(provider, url)
        try:
            raw = httpx.post(worker.url, json={"input": "What is 6 * 7?"}, timeout=30).content
            resumed = httpx.post(
                worker.url,
                json={"resume": {"type": "USER_INTERRUPT", "reply_id": "r"}, "resume_token": "t" * 40},
                timeout=30,
            )
        finally:
            worker.stop()
    frames = [d for _, d in _frames(raw)]
    types = [d["type"] for d in frames]
    assert "REQUIRE_USER_CONFIRM" not in types
    assert types[-1] == "ERROR" and "could not wait for an answer" in frames[-1]["message"]
    end = next(d for d in frames if d["type"] == "REPLY_END")
    assert end["finished_reason"] == "interrupted"
    assert resumed.status_code == 503 and "could not be made" not in resumed.text
