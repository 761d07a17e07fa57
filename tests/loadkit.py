"""What the load tests (tests/test_load.py) and the soak script (benchmarks/soak.py) share:
the model for each protocol against a local server, a server that answers each request
with its own question, that server in another process, and streams cancelled at random
points. The tests run them bounded and assert; the script runs them at full size and
prints numbers."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import random
import time
from typing import Iterator

from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy
from modelwire.testing import ProviderServer, stream_reply
from modelwire.testing.sse import body

SPECS = {
    "anthropic": "anthropic:claude-test",
    "openai-chat": "openai:gpt-test",
    "openai-responses": "openai-responses:resp-test",
    "gemini": "google:gemini-test",
    "bedrock-converse": "bedrock:us.amazon.nova-micro-v1:0",
}


def model_for(url: str, protocol: str, **kw):
    base = url + ("/v1" if protocol in ("openai-chat", "openai-responses") else "")
    return load_model(SPECS[protocol], api_key="sk-test", base_url=base, retry=RetryPolicy(max_retries=0), **kw)


def echo(protocol: str, padding: str = ""):
    """Each request answered with its own question (``ask-NNNNNNNN``), so cross-talk would show."""

    def respond(request):
        text = repr(request["json"])
        marker = text[text.find("ask-") : text.find("ask-") + 12]
        return stream_reply(protocol, body(protocol, ("text", f"answer to {marker}{padding}")))

    return respond


def _serve(queue, protocol: str, padding: str) -> None:
    server = ProviderServer()
    server.respond = echo(protocol, padding)
    server.keep_requests = False
    server.thread.start()
    queue.put(server.url)
    time.sleep(600)


@contextlib.contextmanager
def echo_server_elsewhere(protocol: str, padding: str = "") -> Iterator[str]:
    """The URL of an echo server running in another process, so that only the client is
    traced (and the server's threads do not compete for the interpreter)."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    process = context.Process(target=_serve, args=(queue, protocol, padding), daemon=True)
    process.start()
    try:
        yield queue.get(timeout=30)
    finally:
        process.kill()
        process.join(5)


async def cancel_at_random(model, rnd: random.Random, streams: int, max_after: int, poll: float) -> list[float]:
    """Open ``streams`` streams one after another and cancel each after a random number of
    events (1 to ``max_after``); the times of the cancels, to compare with when the server
    saw each connection close."""

    async def cancel_one(after: int) -> float:
        seen = 0

        async def consume():
            nonlocal seen
            async for _ in model.stream([UserMsg("u", "go")]):
                seen += 1

        task = asyncio.create_task(consume())
        while seen < after and not task.done():
            await asyncio.sleep(poll)
        task.cancel()
        cancelled_at = time.monotonic()
        try:
            await task
        except asyncio.CancelledError:
            pass
        return cancelled_at

    times = [await cancel_one(rnd.randint(1, max_after)) for _ in range(streams)]
    await model.aclose()
    return times
