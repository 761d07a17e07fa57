"""What tracing costs on the real stream path: bytes through the transport (an in-process
``httpx2.MockTransport``), the adapter and the fold, with OpenTelemetry's SDK configured
(spans exported to memory) against tracing off, in interleaved rounds on the same input;
every run's message is checked before its time counts. Target: within 5 %.

    python benchmarks/tracing.py [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from modelwire import telemetry  # noqa: E402
from modelwire.message import UserMsg  # noqa: E402
from modelwire.models import load_model  # noqa: E402
from modelwire.testing.sse import body  # noqa: E402

N = 4000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    try:
        import httpx2
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        print("needs the dev extra: pip install -e '.[dev]'")
        return 2
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    words = " ".join(f"w{i}" for i in range(N))
    raw = body("openai-chat", ("text", words))
    pieces = [p + b"\n\n" for p in raw.split(b"\n\n") if p]
    expected = "".join(f"w{i} " for i in range(N))

    async def stream():
        for piece in pieces:
            yield piece

    def handler(request):
        return httpx2.Response(200, content=stream(), headers={"content-type": "text/event-stream"})

    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    model = load_model("openai:gpt-4o", api_key="k", base_url="http://127.0.0.1:9/v1", client=client)

    async def once(on: bool) -> float:
        telemetry._api = None if on else False  # the switch MODELWIRE_TRACING=0 sets
        gc.collect()
        t0 = time.perf_counter()
        reply = await model.complete([UserMsg("u", "go")])
        took = time.perf_counter() - t0
        assert reply.get_text_content() == expected  # the same work, checked
        return took

    async def run():
        times = {True: [], False: []}
        for _ in range(2):
            await once(True), await once(False)  # warm up
        for _ in range(args.rounds):
            for on in (False, True):
                times[on].append(await once(on))
        return times

    times = asyncio.run(run())
    spans = len(exporter.get_finished_spans())
    off, on = statistics.median(times[False]), statistics.median(times[True])
    print(f"{len(pieces)} chunks per call, {args.rounds} interleaved rounds, {spans} spans exported")
    print(
        (
            f"tracing off: {off / len(pieces) * 1e6:6.2f} us per chunk (median; min "
            f"{min(times[False]) / len(pieces) * 1e6:.2f})"
        )
    )
    print(
        (
            f"tracing on:  {on / len(pieces) * 1e6:6.2f} us per chunk (median; min "
            f"{min(times[True]) / len(pieces) * 1e6:.2f})"
        )
    )
    ratio = on / off
    print(
        (
            f"on / off: {ratio:.3f}  (target <= 1.05): "
            f"{'met' if ratio <= 1.05 else 'MISSED by ' + format(ratio - 1.05, '.3f')}"
        )
    )
    return 0 if ratio <= 1.05 else 1


if __name__ == "__main__":
    sys.exit(main())
