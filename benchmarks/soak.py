"""Load and soak on 127.0.0.1, bounded: what the tests check, at full size, with numbers.

- 200 concurrent streams per protocol, each with its own answer: wall time, streams/s,
  every answer checked, no task or socket left;
- 1,000 sequential calls: memory kept per call (tracemalloc, server in another process);
- 100 streams cancelled at random points: how long until the server sees the close;
- a single 200 MB line with no newline: the typed error, its time, peak memory;
- a never-ending stream of keep-alives: the total timeout ends it.

    python benchmarks/soak.py
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))  # loadkit: what tests/test_load.py runs

from loadkit import SPECS, cancel_at_random, echo, echo_server_elsewhere, model_for  # noqa: E402
from modelwire import errors as E  # noqa: E402
from modelwire.message import UserMsg  # noqa: E402
from modelwire.testing import ProviderServer, Reply, sse_reply  # noqa: E402
from modelwire.testing.sse import body  # noqa: E402

PADDING = " " + "word " * 50  # answers of a realistic length


def concurrent(protocol: str) -> str:
    with ProviderServer() as server:
        server.respond = echo(protocol, PADDING)
        server.keep_requests = False
        model = model_for(server.url, protocol, max_connections=200)

        async def one(n):
            reply = await model.complete([UserMsg("u", f"ask-{n:08d}")])
            assert reply.get_text_content().startswith(f"answer to ask-{n:08d}")

        async def run():
            t0 = time.perf_counter()
            await asyncio.gather(*(one(n) for n in range(200)))
            took = time.perf_counter() - t0
            await model.aclose()
            assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
            return took

        took = asyncio.run(run())
    return (
        f"{protocol:<18} 200 concurrent streams in {took * 1000:6.0f} ms ({200 / took:5.0f} "
        "streams/s), all answers right"
    )


def sequential() -> str:
    with echo_server_elsewhere("openai-chat", PADDING) as url:
        model = model_for(url, "openai-chat")

        async def run():
            for i in range(100):
                await model.complete([UserMsg("u", f"ask-{i:08d}")])
            tracemalloc.start()
            first = tracemalloc.take_snapshot()
            t0 = time.perf_counter()
            for i in range(1000):
                reply = await model.complete([UserMsg("u", f"ask-{i:08d}")])
                assert reply.get_text_content().startswith(f"answer to ask-{i:08d}")
            took = time.perf_counter() - t0
            second = tracemalloc.take_snapshot()
            tracemalloc.stop()
            await model.aclose()
            return took, sum(s.size_diff for s in second.compare_to(first, "filename"))

        took, growth = asyncio.run(run())
    return f"1,000 sequential calls in {took:.1f} s (traced); memory kept: {growth / 1000:+.0f} bytes per call"


def cancellations() -> str:
    rnd = random.Random(1)
    pieces = body("openai-chat", ("text", " ".join(["word"] * 300)))
    with ProviderServer() as server:
        server.respond = lambda request: sse_reply(pieces, delay=0.002)
        model = model_for(server.url, "openai-chat")
        cancelled = asyncio.run(cancel_at_random(model, rnd, streams=100, max_after=250, poll=0.001))
        time.sleep(0.5)
        lags = [d - c for c, d in zip(sorted(cancelled), sorted(server.disconnects))]
    return (
        f"100 cancelled streams: {len(server.disconnects)} closes seen by the server, median "
        f"{statistics.median(lags) * 1000:.0f} ms, max {max(lags) * 1000:.0f} ms after the cancel"
    )


def huge_line() -> str:
    piece = b"x" * (1024 * 1024)
    with ProviderServer() as server:
        server.script(Reply(pieces=[b"data: "] + [piece] * 200, headers={"content-type": "text/event-stream"}))
        model = model_for(server.url, "openai-chat")

        async def run():
            tracemalloc.start()
            t0 = time.perf_counter()
            try:
                async for _ in model.stream([UserMsg("u", "go")]):
                    pass
            except E.StreamProtocolError as err:
                took = time.perf_counter() - t0
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
                await model.aclose()
                return err, took, peak
            raise AssertionError("no error")

        err, took, peak = asyncio.run(run())
    return f"a 200 MB line: {type(err).__name__} after {took:.2f} s ({err.message}); peak memory {peak / 2**20:.0f} MiB"


def keepalives() -> str:
    with ProviderServer() as server:
        server.script(
            Reply(pieces=[b": keep-alive\n\n"] * 100000, delay=0.01, headers={"content-type": "text/event-stream"})
        )
        model = model_for(server.url, "openai-chat", timeouts={"total": 2.0, "chunk": 30})

        async def run():
            t0 = time.perf_counter()
            try:
                async for _ in model.stream([UserMsg("u", "go")]):
                    pass
            except E.TimeoutError as err:
                await model.aclose()
                return err, time.perf_counter() - t0
            raise AssertionError("no error")

        err, took = asyncio.run(run())
    return f"endless keep-alives: {type(err).__name__}({err.which}) after {took:.2f} s with total=2 s"


def main() -> int:
    os.environ.setdefault("AWS_REGION", "us-east-1")
    for protocol in SPECS:
        print(concurrent(protocol))
    print(sequential())
    print(cancellations())
    print(huge_line())
    print(keepalives())
    return 0


if __name__ == "__main__":
    sys.exit(main())
