"""SSE decoding alone: modelwire's decoder against the alternatives, on the same bytes.

- modelwire's ``SSEDecoder`` (bytes in, in arbitrary pieces);
- ``httpx-sse``'s decoder, which takes lines an HTTP client already split (the splitting
  with ``str.splitlines`` after decoding is counted for it: that is the work it leaves to
  its caller);
- the ``openai`` SDK's internal ``SSEDecoder.iter_bytes``.

The stream is the 4,000-chunk Anthropic text stream of benchmarks/stream.py, one SSE event
per piece. Prints microseconds per event, best of N.

    python benchmarks/sse.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.dirname(__file__))

from stream import anthropic_stream  # noqa: E402

from modelwire.adapters._sse import SSEDecoder  # noqa: E402


def ours(pieces: list[bytes]) -> int:
    decoder = SSEDecoder()
    n = 0
    for piece in pieces:
        n += len(decoder.feed_raw(piece))
    return n + len(decoder.close_raw())


def httpx_sse(pieces: list[bytes]) -> int:
    from httpx_sse._decoders import SSEDecoder as Decoder

    decoder = Decoder()
    n = 0
    rest = ""
    for piece in pieces:
        text = rest + piece.decode("utf-8")
        lines = text.split("\n")
        rest = lines.pop()
        for line in lines:
            if decoder.decode(line) is not None:
                n += 1
    return n


def openai_sdk(pieces: list[bytes]) -> int:
    from openai._streaming import SSEDecoder as Decoder

    return sum(1 for _ in Decoder().iter_bytes(iter(pieces)))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    pieces = anthropic_stream(False)
    expected = ours(pieces)
    for label, fn in (("modelwire SSEDecoder", ours), ("httpx-sse (lines split for it)", httpx_sse), ("openai SDK SSEDecoder", openai_sdk)):
        try:
            count = fn(pieces)
        except ImportError:
            print(f"  {label:<32} (not installed)")
            continue
        assert count == expected, (label, count, expected)
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            fn(pieces)
            best = min(best, time.perf_counter() - t0)
        print(f"  {label:<32} {best / count * 1e6:6.2f} us per event")
    return 0


if __name__ == "__main__":
    sys.exit(main())
