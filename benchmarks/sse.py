"""SSE decoding alone: modelwire's decoder against the alternatives, on the same bytes.

- modelwire's ``SSEDecoder`` (bytes in, in arbitrary pieces);
- ``httpx-sse``'s decoder, which takes lines an HTTP client already split (the splitting
  with ``str.splitlines`` after decoding is counted for it: that is the work it leaves to
  its caller);
- the ``openai`` SDK's internal ``SSEDecoder.iter_bytes``.

The stream is the 4,000-chunk Anthropic text stream of benchmarks/stream.py, one SSE event
per piece. Prints microseconds per event, best of N.

Then one long line (8 MiB of data) fed in 1 KiB pieces and in 1 MiB pieces, each run's
event checked: a decoder that buffers linearly pays per piece, not per byte already held.
Target: the small pieces at most 20x the large ones (a decoder that copies or searches what
it holds again for each piece is hundreds of times slower).

    python benchmarks/sse.py [--rounds N] [--check]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.dirname(__file__))

from stream import anthropic_stream  # noqa: E402

from modelwire.adapters import SSEDecoder  # noqa: E402


def ours(pieces: list[bytes]) -> list:
    """The public API: decoded events (name, text data, id, retry), as the others give."""
    decoder = SSEDecoder()
    out = []
    for piece in pieces:
        out += [(e.event, e.data) for e in decoder.feed(piece)]
    return out + [(e.event, e.data) for e in decoder.close()]


def httpx_sse(pieces: list[bytes]) -> list:
    from httpx_sse._decoders import SSEDecoder as Decoder

    decoder = Decoder()
    out = []
    rest = ""
    for piece in pieces:
        text = rest + piece.decode("utf-8")  # it takes lines: splitting them is part of the work
        lines = text.split("\n")
        rest = lines.pop()
        for line in lines:
            event = decoder.decode(line)
            if event is not None:
                out.append((event.event, event.data))
    return out


def openai_sdk(pieces: list[bytes]) -> list:
    from openai._streaming import SSEDecoder as Decoder

    return [(e.event or "message", e.data) for e in Decoder().iter_bytes(iter(pieces))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--check", action="store_true", help="check every decoder's output once, no timings")
    args = parser.parse_args()
    pieces = anthropic_stream(False)
    expected = ours(pieces)
    contenders = {
        "modelwire SSEDecoder.feed()": ours,
        "httpx-sse (lines split for it)": httpx_sse,
        "openai SDK SSEDecoder": openai_sdk,
    }
    for label, fn in list(contenders.items()):
        try:
            got = fn(pieces)
        except ImportError:
            print(f"  {label:<32} (not installed)")
            del contenders[label]
            continue
        assert got == expected, f"{label} decoded something else"  # the same events, the same data
    if args.check:
        print(f"checked: {len(contenders)} decoders give the same {len(expected)} events")
        return 0
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(args.rounds):  # interleaved rounds, outputs checked every time
        for label, fn in contenders.items():
            gc.collect()
            t0 = time.perf_counter()
            got = fn(pieces)
            took = time.perf_counter() - t0
            assert len(got) == len(expected)
            times[label].append(took / len(expected) * 1e6)
    print(f"us per decoded event, {len(expected)} events, median of {args.rounds} interleaved rounds (min):")
    for label, values in times.items():
        print(f"  {label:<32} {statistics.median(values):6.2f} ({min(values):.2f})")
    return 0 if long_line(args.rounds) else 1


LONG, LINEAR_TARGET = 8 * 1024 * 1024, 20.0


def one_long_line(piece_size: int) -> float:
    """CPU seconds to decode one event of ``LONG`` bytes of data fed in ``piece_size`` pieces;
    the event checked."""
    decoder = SSEDecoder(max_line=64 * 1024 * 1024)
    pieces = [b"x" * piece_size] * (LONG // piece_size)
    gc.collect()
    t0 = time.process_time()
    decoder.feed(b"data: ")
    for piece in pieces:
        decoder.feed(piece)
    (event,) = decoder.feed(b"\n\n")
    took = time.process_time() - t0
    assert len(event.data) == LONG
    return took


def long_line(rounds: int) -> bool:
    small, large = [], []
    for _ in range(rounds):  # interleaved
        small.append(one_long_line(1024))
        large.append(one_long_line(1024 * 1024))
    ratio = statistics.median(a / b for a, b in zip(small, large))
    met = ratio <= LINEAR_TARGET
    print(
        f"one 8 MiB line: 1 KiB pieces {statistics.median(small) * 1000:.1f} ms, 1 MiB pieces "
        f"{statistics.median(large) * 1000:.1f} ms = {ratio:.1f}x "
        + ("MET" if met else f"MISSED (target {LINEAR_TARGET}x)")
    )
    return met


if __name__ == "__main__":
    sys.exit(main())
