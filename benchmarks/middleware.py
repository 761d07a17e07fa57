"""What middleware costs on the real stream path: bytes through the transport (an in-process
``httpx2.MockTransport``), the adapter and the fold, for the model alone, wrapped in one
identity middleware (a ``stream`` hook that passes every event on), in one ``request``-only
middleware, and in three identity middleware; interleaved rounds on the same input, every
run's message checked before its time counts; then what each adds per event apart from
the transport and the fold (a stream of events already made). Target: one identity layer
adds at most 5 % to the real path's time per event.

    python benchmarks/middleware.py [--rounds N] [--check]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import time
from typing import Any, AsyncIterator

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

import modelwire  # noqa: E402
from modelwire.message import UserMsg  # noqa: E402
from modelwire.models import Middleware, load_model  # noqa: E402
from modelwire.testing.sse import body  # noqa: E402

N = 4000
TARGET = 1.05


class Identity(Middleware):
    async def stream(self, call: Any, call_next: Any) -> AsyncIterator[Any]:
        async for event in call_next(call):
            yield event


class Stamp(Middleware):
    async def request(self, call: Any) -> None:
        call.options = {**call.options, "extra_headers": {"x-team": "bench"}}


def contenders(model: Any) -> dict[str, Any]:
    return {
        "model alone": model,
        "1 identity middleware": modelwire.wrap(model, Identity()),
        "1 request-only middleware": modelwire.wrap(model, Stamp()),
        "3 identity middleware": modelwire.wrap(model, Identity(), Identity(), Identity()),
    }


class Replay:
    """A model that streams events already made: what a layer adds per event, alone."""

    name = "replay"

    def __init__(self, events: list[Any]) -> None:
        self.events = events

    async def stream(self, messages: Any, **kwargs: Any) -> AsyncIterator[Any]:
        for event in self.events:
            yield event


def per_event_cost(events: list[Any], rounds: int) -> dict[str, float]:
    """Nanoseconds per event each contender adds to iterating the events (best of ``rounds``)."""
    models = contenders(Replay(events))

    async def once(model: Any) -> float:
        t0 = time.perf_counter()
        count = 0
        async for _ in model.stream([UserMsg("u", "go")], reply_id="r"):
            count += 1
        assert count == len(events)
        return time.perf_counter() - t0

    async def run() -> dict[str, float]:
        best = {name: float("inf") for name in models}
        for _ in range(rounds):
            for name, model in models.items():
                best[name] = min(best[name], await once(model))
        return best

    best = asyncio.run(run())
    return {name: (took - best["model alone"]) / len(events) * 1e9 for name, took in best.items()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--check", action="store_true", help="run each contender once through the checks")
    args = parser.parse_args()
    try:
        import httpx2
    except ImportError:
        print("needs the dev extra: pip install -e '.[dev]'")
        return 2
    words = " ".join(f"w{i}" for i in range(N))
    raw = body("openai-chat", ("text", words))
    pieces = [p + b"\n\n" for p in raw.split(b"\n\n") if p]
    expected = words

    async def stream() -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece

    def handler(request: Any) -> Any:
        return httpx2.Response(200, content=stream(), headers={"content-type": "text/event-stream"})

    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    models = contenders(load_model("openai:gpt-4o", api_key="k", base_url="http://127.0.0.1:9/v1", client=client))

    made: list[Any] = []

    async def once(model: Any) -> tuple[float, int]:
        gc.collect()
        count = 0
        made.clear()
        t0 = time.perf_counter()
        reply = modelwire.AssistantMsg("assistant", [], id="r")
        async for event in model.stream([UserMsg("u", "go")], reply_id="r"):
            reply.append_event(event)
            made.append(event)
            count += 1
        took = time.perf_counter() - t0
        assert reply.get_text_content() == expected  # the same work, checked
        return took, count

    async def run() -> tuple[dict[str, list[float]], int]:
        times: dict[str, list[float]] = {name: [] for name in models}
        events = 0
        for _ in range(1 if args.check else 2):
            for model in models.values():
                events = (await once(model))[1]  # warm up (and, with --check, the check)
        if args.check:
            return times, events
        for _ in range(args.rounds):
            for name, model in models.items():
                times[name].append((await once(model))[0])
        return times, events

    times, events = asyncio.run(run())
    if args.check:
        print(f"checked: {len(models)} contenders fold the same {events} events")
        return 0
    base = statistics.median(times["model alone"])
    print(f"{len(pieces)} chunks, {events} events per call, {args.rounds} interleaved rounds")
    for name, took in times.items():
        median = statistics.median(took)
        extra = (median - base) / events * 1e9
        print(
            f"{name:26s} {median / events * 1e6:6.3f} us per event (median; min {min(took) / events * 1e6:.3f}), "
            f"{median / base:.3f}x, {extra:+.0f} ns per event"
        )
    print("what each adds per event, alone (events already made, best of rounds):")
    added = per_event_cost(list(made), max(args.rounds, 5))
    for name, cost in added.items():
        print(f"  {name:26s} {cost:+6.0f} ns per event")
    # The share of the real path one identity layer adds: its own cost, measured apart from the
    # transport and the fold, over the real path's best time per event (on a shared machine the
    # end-to-end rounds differ by more than the layer costs, in both directions).
    path = min(times["model alone"]) / events * 1e9
    ratio = 1 + added["1 identity middleware"] / path
    verdict = "met" if ratio <= TARGET else "MISSED"
    print(f"1 identity layer: {ratio:.3f}x the real path's {path:.0f} ns per event (target <= {TARGET}): {verdict}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
