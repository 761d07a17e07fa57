"""Load and soak, bounded and on 127.0.0.1 only: many concurrent streams without cross-talk,
many sequential calls with flat memory, cancelled streams closed at once on the server side,
and hostile bodies (a huge line, endless keep-alives) ending in typed errors."""

from __future__ import annotations

import asyncio
import os
import random
import time
import tracemalloc

import pytest

from modelwire import errors as E
from modelwire import event as Ev
from loadkit import SPECS, cancel_at_random, echo, echo_server_elsewhere, model_for
from modelwire.message import AssistantMsg, UserMsg
from modelwire.testing import ProviderServer, Reply, sse_reply
from modelwire.testing.sse import body


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0


@pytest.mark.parametrize("protocol", list(SPECS))
def test_200_concurrent_streams_each_get_their_own_answer(protocol, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    with ProviderServer() as server:
        server.respond = echo(protocol)
        model = model_for(server.url, protocol, max_connections=200)
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
        deadline = time.monotonic() + 30
        while open_fds() > fds_before + 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # the server's side of each socket closes in its own thread
        assert open_fds() <= fds_before + 2  # every connection closed


def test_1000_sequential_calls_keep_memory_flat():
    # The server runs in another process, so that only the client is traced (and fast).
    with echo_server_elsewhere("openai-chat") as url:
        model = model_for(url, "openai-chat")

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


def test_100_streams_cancelled_at_random_points_close_their_connections():
    pieces = body("openai-chat", ("text", " ".join(["word"] * 2000)))  # 4 s to its end: each is cancelled first
    with ProviderServer() as server:
        server.respond = lambda request: sse_reply(pieces, delay=0.002)
        model = model_for(server.url, "openai-chat")
        asyncio.run(cancel_at_random(model, random.Random(7), streams=100, max_after=60, poll=0.002))
        deadline = time.monotonic() + 30
        while len(server.disconnects) < 100 and time.monotonic() < deadline:
            time.sleep(0.01)  # the server sees each close at its next write
        # A disconnect is noted only when a write fails: these streams were cut, not read or
        # kept open to their end (what the cancel times would add, a loaded machine can blur).
        assert len(server.disconnects) >= 95


def test_a_huge_line_without_a_newline_ends_in_a_typed_error_with_bounded_memory():
    from modelwire.adapters._sse import MAX_LINE

    size = MAX_LINE + 4 * 1024 * 1024
    piece = b"x" * (1024 * 1024)
    with ProviderServer() as server:
        server.script(
            Reply(pieces=[b"data: "] + [piece] * (size // len(piece)), headers={"content-type": "text/event-stream"})
        )
        model = model_for(server.url, "openai-chat")

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
