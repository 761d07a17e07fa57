"""What an upload from a path costs in memory: the same whatever the file's size.

``model.upload_file(path)`` to OpenAI's Files API (multipart), served by a local server on
127.0.0.1 that reads each body in 64 KiB pieces and throws them away (so only the client's
memory is measured), for files of each size asked. For each: the peak of Python's traced
allocations during the upload (``tracemalloc``) and the growth of the process's peak
resident memory (``ru_maxrss``); the server checks it received every byte, and the upload
answers with the file's id.

    python benchmarks/upload_memory.py --sizes 20,200   # MiB
    python benchmarks/upload_memory.py --check          # 4 and 16 MiB, what CI runs
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import tempfile
import threading
import tracemalloc
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from modelwire import load_model

MIB = 1 << 20


class _Discard(BaseHTTPRequestHandler):
    """Reads the body in pieces, keeps only its length, answers an OpenAI FileObject."""

    protocol_version = "HTTP/1.1"
    received: list[int] = []

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        pass

    def do_POST(self) -> None:
        left = int(self.headers["content-length"])
        total = 0
        while left:
            piece = self.rfile.read(min(64 * 1024, left))
            if not piece:
                break
            total += len(piece)
            left -= len(piece)
        self.received.append(total)
        answer = json.dumps({"id": "file-1", "object": "file", "bytes": total, "filename": "big.bin"}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


def _rss_peak() -> int:
    """The process's peak resident memory so far, in bytes (Linux reports KiB)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def measure(size_mib: int, url: str, folder: str) -> dict[str, float]:
    path = os.path.join(folder, f"big-{size_mib}.bin")
    with open(path, "wb") as file:
        for _ in range(size_mib):
            file.write(os.urandom(MIB))
    model = load_model("openai:gpt-4.1", api_key="k", base_url=url + "/v1", capability_lookup=False)
    rss_before = _rss_peak()
    tracemalloc.start()
    block = asyncio.run(model.upload_file(path, media_type="application/octet-stream"))
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    os.remove(path)
    sent = _Discard.received[-1]
    multipart_overhead = sent - size_mib * MIB
    assert 0 < multipart_overhead < 4096, f"the server received {sent} bytes for a {size_mib} MiB file"
    assert block.to_dict()["file_id"] == "file-1"
    return {
        "size_mib": size_mib,
        "traced_peak_mib": traced_peak / MIB,
        "rss_growth_mib": (_rss_peak() - rss_before) / MIB,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20,200", help="file sizes in MiB, comma-separated")
    parser.add_argument("--check", action="store_true", help="4 and 16 MiB, what CI runs")
    args = parser.parse_args()
    sizes = [4, 16] if args.check else [int(s) for s in args.sizes.split(",")]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Discard)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    results = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            measure(1, url, folder)  # the first upload's imports and connection, not counted
            for size in sizes:
                result = measure(size, url, folder)
                results.append(result)
                print(
                    f"{size:>5} MiB file: traced peak {result['traced_peak_mib']:.2f} MiB, "
                    f"peak RSS grew {result['rss_growth_mib']:.1f} MiB"
                )
    finally:
        server.shutdown()
        server.server_close()
    worst = max(r["traced_peak_mib"] for r in results)
    if worst > 8:
        print(f"FAIL: an upload's traced peak reached {worst:.1f} MiB (target: at most 8 MiB, whatever the size)")
        return 1
    print("checked: every byte received, each upload's traced peak under 8 MiB whatever the file's size")
    return 0


if __name__ == "__main__":
    sys.exit(main())
