"""The first priced call of a process: how long the event loop stops once its answer
streams.

The price catalogue (genai-prices) takes about a tenth of a second to import. Imported on
the loop when the first call ended, it stopped every other stream of a server for that
long; modelwire loads it in a thread while the answer streams. Each fresh process makes one
real call to a local provider server (a real socket) while a task notes the longest gap
between its 1 ms ticks from the first event of the answer to its end (the imports of the
call itself, before that, are the same in both); the baseline process does the same work
with the catalogue imported on the loop at the call's end, as before. Runs alternate.

    python benchmarks/first_call.py [--runs N] [--check]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")

PROBE = r"""
import asyncio, sys, time
import modelwire
from modelwire import cost
from modelwire.testing import ProviderServer, sse_reply
from modelwire.testing.sse import body

ON_THE_LOOP = sys.argv[1] == "baseline"
if ON_THE_LOOP:
    cost.preload = lambda: None  # the old way: nothing loads ahead

async def main():
    with ProviderServer() as server:
        server.script(sse_reply(body("anthropic", ("text", "Hello there.")), delay=0.02))
        model = modelwire.load_model("anthropic:claude-sonnet-4-5", api_key="k", base_url=server.url, pricing=True)
        worst, stop, watching = 0.0, False, False

        async def ticks():
            nonlocal worst
            last = time.perf_counter()
            while not stop:
                await asyncio.sleep(0.001)
                now = time.perf_counter()
                if watching:
                    worst = max(worst, now - last)
                last = now

        watcher = asyncio.create_task(ticks())
        await asyncio.sleep(0.01)
        if ON_THE_LOOP:
            original = cost.price

            def price_on_the_loop(*args, **kwargs):
                import genai_prices  # noqa: F401 - on the loop, at the call's end
                return original(*args, **kwargs)

            cost.price = price_on_the_loop
        from modelwire.message import AssistantMsg

        reply = AssistantMsg("assistant", [])
        async for event in model.stream("hi", reply_id=reply.id):
            watching = True  # from the first event of the answer
            reply.append_event(event)
        stop = True
        await watcher
        assert reply.get_text_content().strip() == "Hello there.", reply.get_text_content()
        assert reply.cost is not None and reply.cost.get("total") is not None, reply.cost  # the call was priced
        print(worst * 1000)

asyncio.run(main())
"""


def run_once(variant: str) -> float:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("MODELWIRE_DEBUG", None)
    done = subprocess.run([sys.executable, "-c", PROBE, variant], capture_output=True, text=True, env=env, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"{variant} run failed:\n{done.stderr[-2000:]}")
    return float(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--check", action="store_true", help="one run of each, outputs checked, no timings")
    args = parser.parse_args()
    runs = 1 if args.check else args.runs
    got: dict[str, list[float]] = {"modelwire": [], "baseline": []}
    for _ in range(runs):  # interleaved
        for variant in ("modelwire", "baseline"):
            got[variant].append(run_once(variant))
    if args.check:
        print("first_call: checked: both variants ran and priced their call")
        return 0
    ours, theirs = statistics.median(got["modelwire"]), statistics.median(got["baseline"])
    print(f"longest event-loop stall while the first priced call's answer streams (median of {runs} fresh processes):")
    print(f"  modelwire (catalogue loaded in a thread)  {ours:6.1f} ms")
    print(f"  baseline (catalogue imported on the loop) {theirs:6.1f} ms")
    print(f"  ratio {ours / theirs:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
