"""Load and soak, bounded and on 127.0.0.1 only: many concurrent streams without cross-talk,
many sequential calls with flat memory, cancelled streams closed at once on the server side,
and hostile bodies (a huge line, endless keep-alives) ending in typed errors."""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time
import tracemalloc

import pytest

from modelwire import errors as E
from modelwire import event as Ev
from modelwire.message import AssistantMsg, UserMsg
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy
from modelwire.testing import ProviderServer, Reply, sse_reply
from modelwire.testing.sse import body

SPECS = {"anthropic": "anthropic:claude-test", "openai-chat": "openai:gpt-test", "openai-responses": "openai-responses:resp-test", "gemini": "google:gemini-test", "bedrock-converse": "bedrock:us.amazon.nova-micro-v1:0"}


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0


def model_for(server, protocol, **kw):
    base = server.url + ("/v1" if protocol in ("openai-chat", "openai-responses") else "")
    return load_model(SPECS[protocol], api_key="sk-test", base_url=base, retry=RetryPolicy(max_retries=0), **kw)


def echo(protocol):
    """Each request answered with its own question, so cross-talk would show."""

    def respond(request):
        text = repr(request["json"])
        marker = text[text.find("ask-") : text.find("ask-") + 12]
        return Reply(body=body(protocol, ("text", f"answer to {marker}")), headers={"content-type": "application/vnd.amazon.eventstream" if protocol == "bedrock-converse" else "text/event-stream"})

    return respond


@pytest.mark.parametrize("protocol", list(SPECS))
def test_200_concurrent_streams_each_get_their_own_answer(protocol, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    with ProviderServer() as server:
        server.respond = echo(protocol)
        model = model_for(server, protocol, max_connections=200)
        fds_before = open_fds()

        async def one(n):
            reply = AssistantMsg("a", [], id=f"r{n}")
            events = [Ev.ReplyStartEvent(session_id="s", reply_id=reply.id, name="a")]
            async for event in model.stream([UserMsg("u", f"ask-{n:08d}")], reply_id=reply.id):
                events.append(event)
            events.append(Ev.ReplyEndEvent(session_id="s", reply_id=reply.id))
            Ev.check_stream(events)
            for event in events:
                reply.append_event(event)
            return reply.get_text_content().strip()

        async def all_of_them():
            answers = await asyncio.gather(*(one(n) for n in range(200)))
            await model.aclose()
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            return answers, others

        answers, leftover_tasks = asyncio.run(all_of_them())
        assert answers == [f"answer to ask-{n:08d}" for n in range(200)]
        assert leftover_tasks == []
        deadline = time.monotonic() + 2
        while open_fds() > fds_before + 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # the server's side of each socket closes in its own thread
        assert open_fds() <= fds_before + 2  # every connection closed


def _serve_elsewhere(port_queue, protocol):
    server = ProviderServer()
    server.respond = echo(protocol)
    server.keep_requests = False
    server.thread.start()
    port_queue.put(server.url)
    time.sleep(600)


class _Remote:
    def __init__(self, url):
        self.url = url


def test_1000_sequential_calls_keep_memory_flat():
    import multiprocessing

    # The server runs in another process, so that only the client is traced (and fast).
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    process = context.Process(target=_serve_elsewhere, args=(queue, "openai-chat"), daemon=True)
    process.start()
    try:
        server = _Remote(queue.get(timeout=30))
        model = model_for(server, "openai-chat")

        async def calls(n):
            for i in range(n):
                reply = await model.complete([UserMsg("u", f"ask-{i:08d}")])
                assert reply.get_text_content().startswith("answer to ask-")

        async def run():
            await calls(100)  # warm up: pools, caches
            tracemalloc.start()
            first = tracemalloc.take_snapshot()
            await calls(900)
            second = tracemalloc.take_snapshot()
            tracemalloc.stop()
            await model.aclose()
            return sum(stat.size_diff for stat in second.compare_to(first, "filename"))

        growth = asyncio.run(run())
        assert growth / 900 < 1024, f"{growth / 900:.0f} bytes kept per call"
    finally:
        process.kill()
        process.join(5)


def test_100_streams_cancelled_at_random_points_close_their_connections():
    rnd = random.Random(7)
    pieces = body("openai-chat", ("text", " ".join(["word"] * 200)))
    with ProviderServer() as server:
        server.respond = lambda request: sse_reply(pieces, delay=0.002)
        model = model_for(server, "openai-chat")

        async def cancel_one(after: int) -> float:
            seen = 0

            async def consume():
                nonlocal seen
                async for _ in model.stream([UserMsg("u", "go")]):
                    seen += 1

            task = asyncio.create_task(consume())
            while seen < after and not task.done():
                await asyncio.sleep(0.002)
            task.cancel()
            cancelled_at = time.monotonic()
            try:
                await task
            except asyncio.CancelledError:
                pass
            return cancelled_at

        async def run():
            times = [await cancel_one(rnd.randint(1, 60)) for _ in range(100)]
            await model.aclose()
            return times

        cancelled = asyncio.run(run())
        time.sleep(0.3)
        assert len(server.disconnects) >= 95  # a few may have finished sending just before
        lags = sorted(d - c for c, d in zip(sorted(cancelled), sorted(server.disconnects)))
        assert statistics.median(lags) < 0.25


def test_a_huge_line_without_a_newline_ends_in_a_typed_error_with_bounded_memory():
    from modelwire.adapters._sse import MAX_LINE

    size = MAX_LINE + 4 * 1024 * 1024
    piece = b"x" * (1024 * 1024)
    with ProviderServer() as server:
        server.script(Reply(pieces=[b"data: "] + [piece] * (size // len(piece)), headers={"content-type": "text/event-stream"}))
        model = model_for(server, "openai-chat")

        async def run():
            tracemalloc.start()
            try:
                async for _ in model.stream([UserMsg("u", "go")]):
                    pass
            except E.StreamProtocolError as err:
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
                return err, peak
            finally:
                await model.aclose()

        err, peak = asyncio.run(run())
        assert "longer than" in err.message
        assert peak < MAX_LINE * 3  # the line and at most a copy or two, never the whole body again and again
