"""Serving at gateway scale: N concurrent streams on one worker, ``modelwire serve`` beside a
byte relay.

A paced upstream (another process: a small asyncio HTTP/1.1 server speaking Anthropic's
stream) sends each request ``--events`` text deltas ``--interval`` seconds apart, as a
model emits tokens, each delta carrying the time it was written. Two contenders, each a
fresh process under uvicorn with one worker, serve N clients at once:

- ``modelwire serve --model anthropic:...`` (an agent per reply: the request is formatted,
  the provider stream decoded, folded and re-encoded as modelwire events);
- the baseline, a relay: a bare ASGI app that forwards the same upstream's bytes with one
  httpx2 client, parsing nothing (the least any gateway does).

N clients (raw asyncio sockets, in this process) post at once and read to the end; each
stream's content is checked (every stamp, in order, and the stream's end). Measured per
run: the worker's CPU (``/proc``: user + system) per delivered event, its memory per open
stream (resident memory once every stream is open, less the warmed-up process's),
the latency each event adds from the upstream's write to the client's read (p50, p99),
how long a stream waited for its first event (p99), and the streams that completed. Runs
alternate between the contenders.

Targets (modelwire against the relay, at every N): every stream completes; CPU per event
at most 1.3x; memory per open stream at most 1.5x; p99 added latency at most 2x.

    python benchmarks/serve_scale.py [--streams 100,300,1000] [--events 30] [--interval 0.1]
    python benchmarks/serve_scale.py --check     # 20 streams each, the checks, not the figures
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src")
STAMP = re.compile(rb"t(\d{10}\.\d{6})_")
TARGETS = {"cpu": 1.3, "memory": 1.5, "p99": 2.0}


# -- the paced upstream ------------------------------------------------------------------


def _sse(data: dict) -> bytes:
    payload = json.dumps(data, separators=(",", ":")).encode()
    return b"event: " + data["type"].encode() + b"\ndata: " + payload + b"\n\n"


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def _upstream_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, events: int, pace: float):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = re.search(rb"(?i)content-length:\s*(\d+)", head)
            if length:
                await reader.readexactly(int(length.group(1)))
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                + _chunk(
                    _sse(
                        {
                            "type": "message_start",
                            "message": {
                                "id": "msg_1",
                                "type": "message",
                                "role": "assistant",
                                "model": "claude-sonnet-4-5",
                                "content": [],
                                "usage": {"input_tokens": 10, "output_tokens": 1},
                            },
                        }
                    )
                    + _sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
                )
            )
            for _ in range(events):
                await asyncio.sleep(pace)
                delta = {"type": "text_delta", "text": f"t{time.time():.6f}_ "}
                writer.write(_chunk(_sse({"type": "content_block_delta", "index": 0, "delta": delta})))
            writer.write(
                _chunk(
                    _sse({"type": "content_block_stop", "index": 0})
                    + _sse(
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": "end_turn"},
                            "usage": {"output_tokens": events},
                        }
                    )
                    + _sse({"type": "message_stop"})
                )
                + b"0\r\n\r\n"
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


def upstream_main(port: int, events: int, pace: float) -> None:
    async def main() -> None:
        server = await asyncio.start_server(
            lambda r, w: _upstream_connection(r, w, events, pace), "127.0.0.1", port, backlog=4096
        )
        async with server:
            await server.serve_forever()

    asyncio.run(main())


# -- the relay (the baseline) -------------------------------------------------------------

RELAY = r"""
import sys, httpx2, uvicorn

UPSTREAM = sys.argv[1]
client = None

async def app(scope, receive, send):
    global client
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                client = httpx2.AsyncClient(timeout=None, limits=httpx2.Limits(max_connections=None))
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    async with client.stream("POST", UPSTREAM + "/v1/messages", content=body) as upstream:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        async for chunk in upstream.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b""})

uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning", backlog=4096)
"""


# -- the clients ---------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _dechunked(buffer: bytearray, out: bytearray) -> bool:
    """Move the whole chunks of ``buffer`` into ``out``; True at the last (empty) chunk."""
    while True:
        end = buffer.find(b"\r\n")
        if end < 0:
            return False
        size = int(bytes(buffer[:end]).split(b";")[0], 16)
        if size == 0:
            return True
        if len(buffer) < end + 2 + size + 2:
            return False
        out += buffer[end + 2 : end + 2 + size]
        del buffer[: end + 2 + size + 2]


async def one_stream(port: int, path: str, body: bytes, events: int, opened: list, latencies: list) -> bool:
    """One client: post, read the whole chunked answer, note each stamp's delay and how long
    the first one took (in ``opened``); True when every stamp came, in order, and the stream
    ended."""
    began = time.time()
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
    writer.write(
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode()
        + body
    )
    raw = bytearray()
    head, buffer, decoded = None, bytearray(), bytearray()
    stamps: list[float] = []
    seen_from = 0
    first = True
    try:
        while True:
            data = await reader.read(65536)
            now = time.time()
            if not data:
                break
            if head is None:
                raw += data
                cut = raw.find(b"\r\n\r\n")
                if cut < 0:
                    continue
                head, data = bytes(raw[:cut]), bytes(raw[cut + 4 :])
                if not head.startswith(b"HTTP/1.1 200"):
                    return False
            if b"transfer-encoding: chunked" in head.lower():
                buffer += data
                ended = _dechunked(buffer, decoded)
            else:
                decoded += data
                ended = False
            for found in STAMP.finditer(decoded, seen_from):
                sent = float(found.group(1))
                stamps.append(sent)
                latencies.append(now - sent)
                seen_from = found.end()
                if first:
                    opened.append(now - began)
                    first = False
            if ended:
                break
    finally:
        writer.close()
    text = bytes(decoded)
    whole = text.rstrip().endswith((b'message_stop"}', b"[DONE]")) or b"REPLY_END" in text
    return len(stamps) == events and stamps == sorted(stamps) and whole


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def _start(kind: str, upstream: str, port: int) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env["ANTHROPIC_API_KEY"] = "sk-test"
    if kind == "relay":
        cmd = [sys.executable, "-c", RELAY, upstream, str(port)]
    else:
        model = "anthropic:claude-sonnet-4-5"
        cmd = [sys.executable, "-m", "modelwire.cli", "serve", "--port", str(port), "--model", model]
        cmd += ["--base-url", upstream]
    # Its messages to a file: a pipe nobody reads fills up and stops the worker at its next line.
    log = tempfile.NamedTemporaryFile("w+b", prefix=f"serve-scale-{kind}-", suffix=".log", delete=False)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=log)
    proc.args = [*cmd, log.name]  # where its messages went, to read after a run
    if not _listening(port, proc, 30):
        raise RuntimeError(f"{kind} did not start: {_tail(log.name)}")
    return proc


def _listening(port: int, proc: subprocess.Popen, seconds: float) -> bool:
    """Whether ``proc`` listens on ``port`` within ``seconds`` (False: it did not, or it died)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                return False
            time.sleep(0.05)


def _tail(path: str, size: int = 2000) -> str:
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")[-size:]


PATHS = {"relay": "/", "modelwire": "/reply"}
BODIES = {
    "relay": json.dumps(
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 64,
            "stream": True,
            "messages": [{"role": "user", "content": "hi"}],
        }
    ).encode(),
    "modelwire": json.dumps({"input": "hi"}).encode(),
}


def run(kind: str, upstream: str, streams: int, events: int, pace: float) -> dict:
    """One contender at N streams, in a fresh worker process."""
    port = _free_port()
    proc = _start(kind, upstream, port)
    try:
        warm: list = []
        ok = asyncio.run(one_stream(port, PATHS[kind], BODIES[kind], events, [], warm))
        if not ok:
            raise AssertionError(f"{kind}: the warm-up stream was not whole")
        time.sleep(0.2)
        base_rss, cpu_before = _rss(proc.pid), _cpu(proc.pid)
        opened: list[float] = []
        latencies: list[float] = []
        peak = [0]

        async def clients() -> list:
            async def watch() -> None:  # memory once every stream is open (its first event came)
                while len(opened) < streams:
                    await asyncio.sleep(0.05)
                peak[0] = _rss(proc.pid)

            watcher = asyncio.create_task(watch())
            tasks = [
                asyncio.create_task(one_stream(port, PATHS[kind], BODIES[kind], events, opened, latencies))
                for _ in range(streams)
            ]
            _, pending = await asyncio.wait(tasks, timeout=60 + events * pace * 10)
            for task in [*pending, watcher]:
                task.cancel()
            await asyncio.gather(*tasks, watcher, return_exceptions=True)
            return [t.result() if not t.cancelled() and t.exception() is None else t for t in tasks]

        started = time.monotonic()
        results = asyncio.run(clients())
        failures = [r for r in results if r is not True]
        if failures:
            print(f"{kind} at {streams} streams: {len(failures)} did not end whole, e.g. {failures[0]!r}")
            print(f"  its worker's messages ({proc.args[-1]}):", _tail(proc.args[-1], 1500).strip() or "(none)")
        wall = time.monotonic() - started
        cpu = _cpu(proc.pid) - cpu_before
        completed = sum(1 for r in results if r is True)
        delivered = len(latencies)
        latencies.sort()
        return {
            "completed": completed,
            "delivered": delivered,
            "cpu_per_event_us": cpu / max(delivered, 1) * 1e6,
            "memory_per_stream_kib": (peak[0] - base_rss) / streams / 1024 if peak[0] else float("nan"),
            "p50_ms": latencies[len(latencies) // 2] * 1e3 if latencies else float("nan"),
            "p99_ms": latencies[int(len(latencies) * 0.99)] * 1e3 if latencies else float("nan"),
            "first_p99_s": sorted(opened)[int(len(opened) * 0.99)] if opened else float("nan"),
            "wall_s": wall,
        }
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", default="100,300,1000")
    parser.add_argument("--events", type=int, default=30)
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--check", action="store_true", help="20 streams each: the checks, not the figures")
    parser.add_argument("--upstream", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.upstream:
        upstream_main(int(args.upstream[0]), int(args.upstream[1]), float(args.upstream[2]))
        return 0
    counts = [20] if args.check else [int(n) for n in args.streams.split(",")]
    events, pace = (5, 0.02) if args.check else (args.events, args.interval)
    up_port = _free_port()
    upstream = subprocess.Popen([sys.executable, __file__, "--upstream", str(up_port), str(events), str(pace)])
    try:
        if not _listening(up_port, upstream, 10):
            raise RuntimeError("the upstream did not start")
        url = f"http://127.0.0.1:{up_port}"
        rows, ok = [], True
        for n in counts:
            runs: dict[str, list[dict]] = {"relay": [], "modelwire": []}
            for _ in range(args.rounds):
                for kind in runs:  # alternating
                    runs[kind].append(run(kind, url, n, events, pace))
            best = {k: min(v, key=lambda r: r["cpu_per_event_us"]) for k, v in runs.items()}
            rows.append((n, best))
            for kind, result in best.items():
                if result["completed"] != n:
                    ok = False
                    print(f"{kind} at {n} streams: {result['completed']} of {n} completed")
        if args.check:
            if not ok:
                return 1
            print(f"checked: both contenders delivered every stamp of {counts[0]} streams, in order, and ended each")
            return 0
        _report(rows, events, pace)
    finally:
        upstream.terminate()
        upstream.wait(10)
    return 0


def _report(rows: list, events: int, pace: float) -> None:
    print(f"one worker, {events} events per stream {pace * 1e3:.0f} ms apart; modelwire serve against the relay")
    print(
        f"{'streams':>8} {'contender':<10}{'completed':>10}{'CPU us/event':>13}{'KiB/stream':>11}"
        f"{'p50 ms':>8}{'p99 ms':>8}{'first s':>8}{'wall s':>8}"
    )
    misses = []
    for n, best in rows:
        for kind, r in best.items():
            print(
                f"{n:>8} {kind:<10}{r['completed']:>10}{r['cpu_per_event_us']:>13.1f}"
                f"{r['memory_per_stream_kib']:>11.1f}{r['p50_ms']:>8.1f}{r['p99_ms']:>8.1f}{r['first_p99_s']:>8.2f}{r['wall_s']:>8.1f}"
            )
        ours, relay = best["modelwire"], best["relay"]
        ratios = {
            "cpu": ours["cpu_per_event_us"] / relay["cpu_per_event_us"],
            "memory": ours["memory_per_stream_kib"] / relay["memory_per_stream_kib"],
            "p99": ours["p99_ms"] / relay["p99_ms"],
        }
        print(
            f"{'':>8} {'ratio':<10}{'':>10}{ratios['cpu']:>12.2f}x{ratios['memory']:>10.2f}x"
            f"{'':>8}{ratios['p99']:>7.2f}x"
        )
        misses += [f"{n} streams: {k} {v:.2f}x (target {TARGETS[k]}x)" for k, v in ratios.items() if v > TARGETS[k]]
        if ours["completed"] != n:
            misses.append(f"{n} streams: {ours['completed']} of {n} completed")
    for miss in misses:
        print("MISSED:", miss)
    print(f"targets met: {not misses}")


if __name__ == "__main__":
    sys.exit(main())
