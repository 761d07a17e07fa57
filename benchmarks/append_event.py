"""Cost of Msg.append_event as streamed content grows.

Folds 1 MB of text in 20,000 deltas; 1, 2 and 4 MB of tool-call arguments in 50-byte
deltas; 500, 1,000 and 2,000 base64 data chunks of 960 bytes each. Prints the time of
each, the growth ratio per doubling (linear cost gives 2.0x), and the same runs of the
reference implementation of this vocabulary (AgentScope 2.x, when installed) measured
in this same process as the baseline.

Targets: every doubling costs at most 2.3x; 4 MB of tool-call arguments fold in under
100 ms.

    python benchmarks/append_event.py [--no-baseline] [--repeat N]
"""

from __future__ import annotations

import argparse
import base64
import gc
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from modelwire import event as E  # noqa: E402
from modelwire.message import AssistantMsg  # noqa: E402

MB = 1024 * 1024


def text_events(ev, rid: str, total: int, n: int) -> list:
    size = total // n
    piece = "x" * (size - 1) + "\n"
    out = [ev.TextBlockStartEvent(reply_id=rid, block_id="t")]
    out += [ev.TextBlockDeltaEvent(reply_id=rid, block_id="t", delta=piece) for _ in range(n)]
    out.append(ev.TextBlockEndEvent(reply_id=rid, block_id="t"))
    return out


def tool_events(ev, rid: str, total: int, step: int = 50) -> list:
    piece = '{"k": "' + "a" * (step - 10) + '"},'
    assert len(piece) == step
    out = [ev.ToolCallStartEvent(reply_id=rid, tool_call_id="c", tool_call_name="write")]
    out += [ev.ToolCallDeltaEvent(reply_id=rid, tool_call_id="c", delta=piece) for _ in range(total // step)]
    out.append(ev.ToolCallEndEvent(reply_id=rid, tool_call_id="c"))
    return out


def data_events(ev, rid: str, chunks: int, chunk_bytes: int = 960) -> list:
    data = base64.b64encode(os.urandom(chunk_bytes)).decode()
    out = [ev.DataBlockStartEvent(reply_id=rid, block_id="d", media_type="audio/wav")]
    out += [
        ev.DataBlockDeltaEvent(reply_id=rid, block_id="d", media_type="audio/wav", data=data) for _ in range(chunks)
    ]
    out.append(ev.DataBlockEndEvent(reply_id=rid, block_id="d"))
    return out


def time_fold(make_msg, events, repeat: int) -> float:
    """Median of ``repeat`` runs; every run's message is checked (its content is exactly the
    deltas folded) before its time counts."""
    expected = _expected(events)
    times = []
    for _ in range(repeat):
        msg = make_msg()
        gc.collect()
        gc.disable()
        t0 = time.perf_counter()
        for e in events:
            msg.append_event(e)
        msg.content  # noqa: B018 - reading the message joins any pieces still buffered
        took = time.perf_counter() - t0
        gc.enable()
        assert _content(msg) == expected, "the fold lost or changed something"
        times.append(took)
    return sorted(times)[len(times) // 2]


def _expected(events) -> int:
    return sum(len(getattr(e, "delta", None) or getattr(e, "data", None) or "") for e in events)


def _content(msg) -> int:
    block = msg.content[0]
    value = getattr(block, "text", None) or getattr(block, "input", None)
    if value is None:
        return len(block.source.data)  # base64 re-joined: the same length when padding lines up
    return len(value)


CASES = [
    ("text 1 MB / 20,000 deltas", [("1 MB", lambda ev, r: text_events(ev, r, MB, 20_000))]),
    (
        "tool-call args, 50-byte deltas",
        [(f"{m} MB", (lambda m: lambda ev, r: tool_events(ev, r, m * MB))(m)) for m in (1, 2, 4)],
    ),
    (
        "base64 data, 960-byte chunks",
        [(f"{n} chunks", (lambda n: lambda ev, r: data_events(ev, r, n))(n)) for n in (500, 1000, 2000)],
    ),
]


def run(label: str, ev, make_msg, repeat: int) -> dict:
    results = {}
    print(f"\n{label}")
    for title, sizes in CASES:
        prev = None
        for size, build in sizes:
            events = build(ev, "r")
            t = time_fold(make_msg, events, repeat)
            ratio = f"  x{t / prev:4.2f} per doubling" if prev else ""
            print(f"  {title:<32} {size:>12}: {t * 1000:9.1f} ms{ratio}")
            results[(title, size)] = t
            prev = t
    return results


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-baseline", action="store_true", help="skip the AgentScope baseline")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per case, for modelwire and the baseline alike (median)"
    )
    parser.add_argument("--check", action="store_true", help="fold each case once and check it, no timings")
    args = parser.parse_args()

    if args.check:
        for title, sizes in CASES:
            for size, build in sizes[:1]:
                time_fold(lambda: AssistantMsg("a", [], id="r"), build(E, "r"), 1)
        print("checked: every case folds to exactly its deltas")
        return 0
    ours = run("modelwire", E, lambda: AssistantMsg("a", [], id="r"), args.repeat)
    memory_ok = memory()
    ok = True
    for title, sizes in CASES:
        times = [ours[(title, s)] for s, _ in sizes]
        for a, b in zip(times, times[1:]):
            ok &= b / a <= 2.3
    four = ours[("tool-call args, 50-byte deltas", "4 MB")]
    ok &= four < 0.100
    print(f"\n4 MB tool-call arguments: {four * 1000:.1f} ms (target < 100 ms); every doubling <= 2.3x: {ok}")

    if not args.no_baseline:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                import logging

                logging.disable(logging.WARNING)
                from agentscope import event as as_event
                from agentscope import message as as_message
        except ImportError:
            print("\n(baseline skipped: agentscope is not installed; pip install -e '.[dev]')")
        else:
            theirs = run(
                "AgentScope 2.x (baseline, same runs)",
                as_event,
                lambda: as_message.AssistantMsg("a", [], id="r"),
                args.repeat,
            )
            print("\nspeed-up of modelwire over the baseline:")
            for key, t in theirs.items():
                print(f"  {key[0]:<32} {key[1]:>12}: {t / ours[key]:8.1f}x")
    return 0 if ok and memory_ok else 1


def memory() -> bool:
    """A reply's memory against the size of its final JSON: a 4 MB tool-argument stream."""
    import tracemalloc

    events = tool_events(E, "r", 4 * MB)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    msg = AssistantMsg("a", [], id="r")
    for e in events:
        msg.append_event(e)
    msg.content  # noqa: B018
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    size = len(msg.to_json())
    ratio = (kept - before) / size
    print(
        (
            f"\nmemory: a 4 MB tool-call stream folded keeps {(kept - before) / MB:.1f} MiB (peak "
            f"{(peak - before) / MB:.1f} MiB) for {size / MB:.1f} MiB of JSON: {ratio:.2f}x (target "
            "<= 2x)"
        )
    )
    return ratio <= 2.0


if __name__ == "__main__":
    sys.exit(main())
