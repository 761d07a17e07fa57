"""The real path over a real local socket: modelwire beside each official SDK's plain
iteration of the same bytes, CPU time of the client process.

A server in another process (asyncio, HTTP/1.1, keep-alive, chunked) answers every request
with one of ``stream.py``'s streams, one provider event per chunk written and drained, as a
provider flushes them, in two ways: in a burst (as fast as the socket takes them: a read
holds many events) and paced (a pause of ``PACE`` seconds after each event, as a model emits
tokens one by one: about one event per read, so what each read costs counts). Each
contender reads it through its own HTTP stack:

- modelwire: ``load_model(...).complete()``: transport, decoder, adapter, fold into a ``Msg``;
- the SDK: ``anthropic`` / ``openai`` async clients iterating ``stream=True`` (on httpx2),
  google-genai's ``generate_content_stream`` (on httpx), aiobotocore's ``converse_stream``
  (on aiohttp, signed, iterating its event stream; botocore's, on urllib3 and blocking in
  ``recv``, where aiobotocore is not installed), ollama-python's ``chat(stream=True)``
  (on httpx).

Beside them, the asyncio floor: a bare ``asyncio.Protocol`` reading the same response, one
future per socket read and nothing parsed, the least any asyncio client pays to be woken for
a read (a synchronous client such as botocore's blocks in ``recv`` instead). And on paced
streams the decoding floor: the same reads, each parsed by h11 and its body pieces split and
parsed as ``stream.py``'s floor does (SSE data lines, NDJSON lines or AWS frames with their
CRCs, the fastest JSON parser here), the least any asyncio client that decodes the stream
pays per read. Where modelwire misses the floor target, its row shows this floor over the
asyncio floor: a target below it is one no decoding client can meet.

Every stream is read at 400 and at 4,000 events (``--events``). Rounds are interleaved;
each run's output is checked (modelwire's message against the stream's content, the SDK's
event count, the floor's byte count and the body's end, the decoding floor's event count)
before its time counts. Targets, each printed MET or MISSED on its row: in a burst,
modelwire at most 0.5x the SDK's plain iteration; paced, modelwire at most 1.3x the asyncio
floor per read (every size), and at most 0.6x the async SDK on 400-event streams. A ratio is
the median of each round's own.

    python benchmarks/socket_stream.py [--rounds N] [--events 400,4000] [--check]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
import zlib
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "src"))

import stream as S  # noqa: E402 - the streams, the specs and the output checks
from modelwire.message import UserMsg  # noqa: E402
from modelwire.models import load_model  # noqa: E402

PACE = 0.0003  # seconds after each event of a paced stream (the client reads each alone)
BURST_TARGET, FLOOR_TARGET, SDK_PACED_TARGET = 0.5, 1.3, 0.6  # see the module doc
SDK_PACED_EVENTS = 400  # the stream size the paced target against the SDKs is counted at

SERVER = r"""
import asyncio, sys, time
sys.path.insert(0, sys.argv[1])
PACE = float(sys.argv[2])
import stream as S

STREAMS = {}
for size in sys.argv[3].split(","):
    S.use_events(int(size))
    for protocol, make in S.MAKERS.items():
        for tools in (False, True):
            STREAMS[(protocol, "tools" if tools else "text", size)] = make(tools)
TYPES = {"bedrock-converse": b"application/vnd.amazon.eventstream", "ollama": b"application/x-ndjson"}

async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            path = lines[0].split(b" ")[1].decode()
            length = 0
            for line in lines[1:]:
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            if length:
                await reader.readexactly(length)
            _, protocol, kind, way, size = path.split("/")[:5]
            pieces = STREAMS[(protocol, kind, size)]
            paced = way == "paced"
            kind_header = TYPES.get(protocol, b"text/event-stream")
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: "
                + kind_header
                + b"\r\ntransfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n"
            )
            for piece in pieces:
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                await writer.drain()
                if paced:
                    time.sleep(PACE)  # this server has one client: a pause it takes alone
            writer.write(b"0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()

async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()

asyncio.run(main())
"""


def start_server(sizes: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER, HERE, str(PACE), sizes], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}"


def ours(protocol: str, base: str) -> Any:
    url = base + ("/v1" if protocol in ("openai-chat", "openai-responses") else "")
    known = {"capabilities": {"context_window": 8192}} if protocol == "ollama" else {}  # a local server says no limits
    model = load_model(S.SPECS[protocol], api_key="k", base_url=url, capability_lookup=False, **known)

    async def run() -> Any:
        return await model.complete([UserMsg("u", "x")])

    return run


CLIENTS: list[Any] = []  # the aiobotocore clients opened, closed at the end


def aiobotocore_client() -> Any:
    """aiobotocore's client factory where it is installed, else None."""
    try:
        from aiobotocore.session import get_session
    except ImportError:
        return None
    return get_session()


def sdk(protocol: str, base: str) -> Any:
    if protocol == "bedrock-converse":
        return bedrock_sdk(base)
    if protocol == "ollama":
        import ollama

        return S.sdk_iterate(protocol, ollama.AsyncClient(host=base))
    if protocol == "gemini":
        from google import genai
        from google.genai import types

        return S.sdk_iterate(protocol, genai.Client(api_key="k", http_options=types.HttpOptions(base_url=base)))
    if protocol == "anthropic":
        import anthropic

        return S.sdk_iterate(protocol, anthropic.AsyncAnthropic(api_key="k", base_url=base, max_retries=0))
    import openai

    return S.sdk_iterate(protocol, openai.AsyncOpenAI(api_key="k", base_url=base + "/v1", max_retries=0))


def bedrock_sdk(base: str) -> Any:
    """aiobotocore's ``converse_stream`` (one client, opened on the first run and kept, as an
    application keeps it), or botocore's where aiobotocore is not installed."""
    keys = {"region_name": "us-east-1", "aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"}
    request = {"modelId": "m", "messages": [{"role": "user", "content": [{"text": "x"}]}]}
    session = aiobotocore_client()
    if session is None:
        import botocore.session

        client = botocore.session.get_session().create_client("bedrock-runtime", endpoint_url=base, **keys)

        async def run_sync() -> int:
            answer = client.converse_stream(**request)
            return sum(1 for _ in answer["stream"])

        return run_sync
    opened: list[Any] = []

    async def run() -> int:
        if not opened:
            opened.append(await session.create_client("bedrock-runtime", endpoint_url=base, **keys).__aenter__())
            CLIENTS.append(opened[0])
        answer = await opened[0].converse_stream(**request)
        n = 0
        async for _ in answer["stream"]:
            n += 1
        return n

    return run


def floor(where: str) -> Any:
    """The asyncio floor: the response read with one future per socket read, nothing parsed;
    its output is the bytes received, checked to end with the body's last chunk."""
    host, _, rest = where.removeprefix("http://").partition("/")
    address, port = host.split(":")
    request = f"POST /{rest} HTTP/1.1\r\nhost: {host}\r\ncontent-length: 0\r\n\r\n".encode()

    class Reader(asyncio.Protocol):
        def __init__(self) -> None:
            self.pieces: list[bytes] = []
            self.waiter: Any = None

        def data_received(self, data: bytes) -> None:
            self.pieces.append(data)
            if self.waiter is not None and not self.waiter.done():
                self.waiter.set_result(None)

    async def run() -> bytes:
        loop = asyncio.get_running_loop()
        transport, reader = await loop.create_connection(Reader, address, int(port))
        transport.write(request)
        got: list[bytes] = []
        while not got or not got[-1].endswith(b"\r\n0\r\n\r\n"):
            if not reader.pieces:
                reader.waiter = loop.create_future()
                await reader.waiter
            got.append(b"".join(reader.pieces))
            reader.pieces.clear()
            if len(got[-1]) < 7 and len(got) > 1:
                got[-2:] = [got[-2] + got[-1]]  # the end split across reads
        transport.close()
        return b"".join(got)

    return run


class Splitter:
    """``stream.py``'s split-and-parse floor for pieces cut anywhere (``floor_carried``: SSE
    data lines, NDJSON lines, or AWS frames by their length prefix with both CRCs checked,
    each parsed with the fastest JSON parser here), its carry kept from one read to the next."""

    def __init__(self, protocol: str, parse: Any) -> None:
        self.protocol, self.parse = protocol, parse
        self.carry = b""
        self.buffer = bytearray()
        self.events = 0

    def feed(self, piece: bytes) -> None:
        parse = self.parse
        if self.protocol == "bedrock-converse":
            buffer = self.buffer
            buffer += piece
            while len(buffer) >= 12 and len(buffer) >= int.from_bytes(buffer[:4], "big"):
                total = int.from_bytes(buffer[:4], "big")
                frame = bytes(buffer[:total])
                del buffer[:total]
                assert zlib.crc32(frame[:8]) == int.from_bytes(frame[8:12], "big")
                assert zlib.crc32(frame[:-4]) == int.from_bytes(frame[-4:], "big")
                parse(frame[12 + int.from_bytes(frame[4:8], "big") : -4])
                self.events += 1
            return
        lines = (self.carry + piece).split(b"\n")
        self.carry = lines.pop()
        ndjson = self.protocol == "ollama"
        for line in lines:
            if ndjson:
                if line:
                    parse(line)
                    self.events += 1
            elif line.startswith(b"data: ") and line != b"data: [DONE]":
                parse(line[6:])
                self.events += 1


PARSER: list[Any] = []  # the fastest JSON parser here, measured once


def fastest_parser() -> Any:
    if not PARSER:
        PARSER.append(S.fastest_parser()[1])
    return PARSER[0]


def decode_floor(where: str, protocol: str) -> Any:
    """The decoding floor: the asyncio floor's reads, each read's bytes parsed by h11 (the
    HTTP/1.1 response, its chunked body) and every body piece split and parsed as
    :class:`Splitter` does; the least any asyncio client that decodes the stream does per
    read. Its output is the events parsed, checked against the stream's."""
    import h11

    host, _, rest = where.removeprefix("http://").partition("/")
    address, port = host.split(":")
    request = h11.Request(method="POST", target="/" + rest, headers=[("host", host), ("content-length", "0")])
    parse = fastest_parser()

    class Reader(asyncio.Protocol):
        def __init__(self) -> None:
            self.pieces: list[bytes] = []
            self.waiter: Any = None

        def data_received(self, data: bytes) -> None:
            self.pieces.append(data)
            if self.waiter is not None and not self.waiter.done():
                self.waiter.set_result(None)

    async def run() -> int:
        loop = asyncio.get_running_loop()
        transport, reader = await loop.create_connection(Reader, address, int(port))
        conn = h11.Connection(h11.CLIENT)
        transport.write(conn.send(request) + conn.send(h11.EndOfMessage()))
        split = Splitter(protocol, parse)
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                if not reader.pieces:
                    reader.waiter = loop.create_future()
                    await reader.waiter
                conn.receive_data(b"".join(reader.pieces))
                reader.pieces.clear()
            elif type(event) is h11.Data:
                split.feed(event.data)
            elif type(event) is h11.EndOfMessage:
                break
            else:
                assert type(event) is h11.Response and event.status_code == 200, event
        transport.close()
        return split.events

    return run


def cpu(loop: asyncio.AbstractEventLoop, fn: Any) -> tuple[float, Any]:
    started = time.process_time()
    out = loop.run_until_complete(fn())
    return time.process_time() - started, out


class Row:
    """One stream read one way: its medians per chunk and its ratios (each the median of
    each round's own), with the targets that count on it."""

    def __init__(self, label: str, events: int, chunks: int, way: str, times: dict[str, list[float]]) -> None:
        self.label, self.events, self.chunks, self.way = label, events, chunks, way
        self.med = {k: statistics.median(v) for k, v in times.items()}
        self.to_sdk = statistics.median(a / b for a, b in zip(times["modelwire"], times["SDK"]))
        self.to_floor = statistics.median(a / b for a, b in zip(times["modelwire"], times["floor"]))
        decoded = times.get("decode floor")
        self.decode_to_floor = (
            statistics.median(a / b for a, b in zip(decoded, times["floor"])) if decoded else float("nan")
        )

    def verdicts(self) -> list[tuple[str, float, float]]:
        """(what, ratio, target) of every target counted on this row."""
        if self.way == "burst":
            return [("x SDK", self.to_sdk, BURST_TARGET)]
        out = [("x asyncio floor", self.to_floor, FLOOR_TARGET)]
        if self.events == SDK_PACED_EVENTS:
            out.append(("x async SDK", self.to_sdk, SDK_PACED_TARGET))
        return out


def measure(loop: Any, base: str, protocol: str, make: Any, tools: bool, way: str, events: int, args: Any) -> Any:
    """One stream read one way by every contender: a :class:`Row`, or None with ``--check``
    (the outputs checked once)."""
    S.use_events(events)
    kind = "tools" if tools else "text"
    n = len(make(tools))
    where = f"{base}/{protocol}/{kind}/{way}/{events}"
    contenders = {"modelwire": ours(protocol, where), "SDK": sdk(protocol, where), "floor": floor(where)}
    if way == "paced":  # where the floor target counts
        contenders["decode floor"] = decode_floor(where, protocol)
    size = sum(len(piece) for piece in make(tools))

    def check(name: str, out: Any) -> None:
        if name == "modelwire":
            S.check_message(protocol, tools, out)
        elif name == "floor":
            assert len(out) > size and out.endswith(b"\r\n0\r\n\r\n"), f"the floor read {len(out)} of {size}"
        elif name == "decode floor":
            assert n - 2 <= out <= n, f"{protocol} {kind}: the decoding floor parsed {out} events of {n}"
        else:
            assert out >= n - 2, f"{protocol} {kind}: the SDK saw {out} events of {n}"

    for name, fn in contenders.items():  # warm up, and every output checked once
        check(name, cpu(loop, fn)[1])
    if args.check:
        return None
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(args.rounds):
        for name, fn in contenders.items():
            took, out = cpu(loop, fn)
            check(name, out)
            times[name].append(took / n * 1e6)
    return Row(f"{protocol} {'tool calls' if tools else 'text'}", events, n, way, times)


def verdict(row: Row, what: str, ratio: float, target: float) -> str:
    """MET, or MISSED with, for the floor target, what decoding alone costs over the same floor
    (a target below it is one no client that decodes the stream can meet)."""
    if ratio <= target:
        return f"{what} MET"
    if what != "x asyncio floor":
        return f"{what} MISSED (target {target}x)"
    below = "below what decoding alone costs" if row.decode_to_floor > target else "above it"
    return f"{what} MISSED (target {target}x; floor: {row.decode_to_floor:.2f}x, the target {below})"


def report(rows: list[Row], args: Any) -> int:
    bedrock = "aiobotocore" if aiobotocore_client() is not None else "botocore (synchronous: aiobotocore not installed)"
    print(f"client CPU us per chunk over a real local socket, median of {args.rounds} interleaved rounds")
    print(f"paced: {PACE * 1e3:.1f} ms after each event (about one event per read); bedrock's SDK: {bedrock}")
    print(
        f"{'stream':<30}{'chunks':>7}{'way':>7}{'modelwire':>11}{'SDK':>10}{'floor':>9}{'decode':>9}"
        f"{'x SDK':>8}{'x floor':>9}{'decode x floor':>16}"
    )
    missed = []
    for row in rows:
        med = row.med
        decoded = "decode floor" in med
        decode = f"{med['decode floor']:>9.2f}" if decoded else f"{'-':>9}"
        decode_ratio = f"{row.decode_to_floor:>15.2f}x" if decoded else f"{'-':>16}"
        print(
            f"{row.label:<30}{row.chunks:>7}{row.way:>7}{med['modelwire']:>11.2f}{med['SDK']:>10.2f}"
            f"{med['floor']:>9.2f}{decode}{row.to_sdk:>7.2f}x{row.to_floor:>8.2f}x{decode_ratio}   "
            + "; ".join(verdict(row, *one) for one in row.verdicts())
        )
        missed += [
            f"{row.label} {row.chunks} {row.way}: {ratio:.2f}{what} (target {target}x"
            + (f"; floor: {row.decode_to_floor:.2f}x)" if what == "x asyncio floor" else ")")
            for what, ratio, target in row.verdicts()
            if ratio > target
        ]
    print("asyncio floor: one future per socket read and nothing parsed, the least an asyncio client pays")
    print(
        "decode floor: the asyncio floor's reads, h11's parse of them and stream.py's split-and-parse of the "
        "events (fastest JSON parser here), the least an asyncio client that decodes the stream pays; "
        "'floor: N x' is it over the asyncio floor"
    )
    print("every target met" if not missed else "MISSED: " + "; ".join(missed))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--events", default="400,4000", help="the stream sizes, in events")
    parser.add_argument(
        "--check", action="store_true", help="run each contender once over the socket, check outputs, no timings"
    )
    args = parser.parse_args()
    os.environ["MODELWIRE_TRACING"] = "0"
    sizes = [int(size) for size in args.events.split(",")]
    proc, base = start_server(args.events)
    loop = asyncio.new_event_loop()
    rows = []
    try:
        for protocol, make in S.MAKERS.items():
            for tools in (False, True):
                for events in sizes:
                    for way in ("burst", "paced"):
                        row = measure(loop, base, protocol, make, tools, way, events, args)
                        if row is not None:
                            rows.append(row)
    finally:
        for client in CLIENTS:
            loop.run_until_complete(client.__aexit__(None, None, None))
        loop.close()
        proc.terminate()
        proc.wait(10)
    if args.check:
        print(
            f"checked: modelwire, each SDK and both floors read all {len(S.MAKERS) * 2} streams "
            f"over a real socket, both ways, at {args.events} events"
        )
        return 0
    return report(rows, args)


if __name__ == "__main__":
    sys.exit(main())
