"""The chunked body read a socket read at a time (``modelwire.models._chunks``), on a real
local socket: a raw asyncio server writes the response bytes exactly as scripted (split
anywhere, with pauses), and the body read through the whole-chunk reader, and read directly
on modelwire's own sockets (``read_directly`` over ``_netio``), is compared with the same body
read through h11's own reader on httpcore2's default sockets, byte for byte, error for error."""

from __future__ import annotations

import asyncio
import random

import httpx2
import pytest

from modelwire import errors as E
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.models._chunks import read_directly, take_whole_chunks
from modelwire.models._netio import use_asyncio_streams
from modelwire.models.transport import RetryPolicy, Timeouts, read_chunks

from decoding import decode

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def chunked(pieces: list[bytes], *, trailer: bytes = b"") -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n" + trailer + b"\r\n"


class RawServer:
    """Answers each request on a connection with the next scripted response: a list of byte
    strings, each written and drained, a float being a pause in seconds. Counts the
    connections it accepted and closed, and the byte strings it wrote (what a test waits on)."""

    def __init__(self) -> None:
        self.scripts: list[list[bytes | float]] = []
        self.connections = 0
        self.closed = 0
        self.written = 0

    async def __aenter__(self) -> "RawServer":
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.url = "http://127.0.0.1:%d" % self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while self.scripts:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":", 1)[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                await reader.readexactly(length)
                for step in self.scripts.pop(0):
                    if isinstance(step, float):
                        await asyncio.sleep(step)
                    else:
                        writer.write(step)
                        await writer.drain()
                        self.written += 1
                if b"connection: close" in head.lower():
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            self.closed += 1


async def read_body(
    client: httpx2.AsyncClient, url: str, whole: bool, direct: bool = False
) -> tuple[list[bytes], BaseException | None, bool]:
    """The pieces of one response's body (read as the transport reads it), the error that
    ended it if any, and whether the whole-chunk reader was installed."""
    pieces: list[bytes] = []
    async with client.stream("POST", url, content=b"{}") as response:
        installed = take_whole_chunks(response.stream) if whole else False
        iterator = read_directly(response.stream) if direct else response.stream
        assert iterator is not None
        try:
            async for piece in iterator:
                pieces.append(piece)
        except Exception as exc:  # noqa: BLE001 - compared below
            return pieces, exc, installed
    return pieces, None, installed


def asyncio_client() -> httpx2.AsyncClient:
    client = httpx2.AsyncClient()
    assert use_asyncio_streams(client)
    return client


async def both(script: list[bytes | float]) -> tuple[tuple, tuple, tuple]:
    """The same scripted response read with h11's reader, then with the whole-chunk one,
    then directly on modelwire's own sockets."""
    async with RawServer() as server, httpx2.AsyncClient() as client, asyncio_client() as ours:
        server.scripts = [list(script)]
        plain = await read_body(client, server.url, whole=False)
        server.scripts = [list(script)]
        whole = await read_body(client, server.url, whole=True)
        server.scripts = [list(script)]
        direct = await read_body(ours, server.url, whole=True, direct=True)
    return plain, whole, direct


def split_anywhere(data: bytes, rng: random.Random) -> list[bytes | float]:
    steps: list[bytes | float] = []
    at = 0
    while at < len(data):
        step = rng.choice([1, 2, 3, 7, 50, 400, 5000])
        steps += [data[at : at + step], 0.0005 if rng.random() < 0.3 else 0.0]
        at += step
    return [s for s in steps if s != 0.0]


@pytest.mark.parametrize("seed", range(25))
def test_the_same_bytes_however_the_socket_splits_them(seed):
    rng = random.Random(seed)
    pieces = [
        bytes(rng.randrange(256) for _ in range(rng.choice([1, 5, 80, 300, 3000]))) for _ in range(rng.randrange(1, 60))
    ]
    body = chunked(pieces, trailer=b"x-trailer: 1\r\n" if seed % 3 == 0 else b"")
    plain, whole, direct = asyncio.run(both([HEAD, *split_anywhere(body, rng)]))
    assert plain[1] is None and whole[1] is None and direct[1] is None
    assert whole[2] is True and direct[2] is True
    assert b"".join(direct[0]) == b"".join(whole[0]) == b"".join(plain[0]) == b"".join(pieces)


def test_whole_chunks_in_one_read_come_as_one_piece():
    pieces = [b'data: {"n": %d}\n\n' % i for i in range(200)]
    plain, whole, direct = asyncio.run(both([HEAD + chunked(pieces)]))  # one write: one or a few reads
    assert len(plain[0]) == 200  # h11: a piece per chunk
    assert len(whole[0]) < 10 and len(direct[0]) < 10
    assert b"".join(whole[0]) == b"".join(direct[0]) == b"".join(pieces)


def test_after_a_chunk_split_across_reads_whole_chunks_come_together_again():
    # h11 reads the chunk cut in two (its end and footer come in the second write); the
    # 100 whole chunks behind it still come as a few pieces, not a hundred.
    cut = b"%x\r\n%s" % (300, b"c" * 100)
    rest = b"c" * 200 + b"\r\n" + chunked([b"data: %d\n\n" % i for i in range(100)])
    plain, whole, direct = asyncio.run(both([HEAD + cut, 0.05, rest]))
    assert b"".join(whole[0]) == b"".join(direct[0]) == b"".join(plain[0])
    assert len(plain[0]) >= 100
    assert len(whole[0]) < 10 and len(direct[0]) < 10


def test_chunk_extensions_uppercase_sizes_and_trailing_spaces():
    raw = HEAD + b"5;name=value\r\nhello\r\nA  \r\n0123456789\r\n1F\r\n" + b"z" * 31 + b"\r\n0\r\n\r\n"
    plain, whole, direct = asyncio.run(both([raw]))
    assert plain[1] is None and whole[1] is None and direct[1] is None
    assert b"".join(whole[0]) == b"".join(direct[0]) == b"".join(plain[0]) == b"hello0123456789" + b"z" * 31


@pytest.mark.parametrize(
    "broken",
    [
        b"5\r\nhelloXX",  # a bad chunk footer
        b"zz\r\nhello\r\n",  # a bad chunk header
        b"50\r\nhello",  # the connection closed inside a chunk
        b"",  # the connection closed at a chunk boundary, before the last chunk
    ],
    ids=["bad footer", "bad header", "closed inside a chunk", "closed between chunks"],
)
def test_a_broken_body_fails_as_h11_fails_it_after_the_same_bytes(broken):
    good = chunked([b"first", b"second"])[: -len(b"0\r\n\r\n")]
    script: list[bytes | float] = [HEAD + good, 0.01, broken]
    plain, whole, direct = asyncio.run(both(script))
    assert plain[1] is not None and whole[1] is not None and direct[1] is not None
    assert type(whole[1]) is type(plain[1]) and str(whole[1]) == str(plain[1])
    assert type(direct[1]) is type(plain[1]) and str(direct[1]) == str(plain[1])
    assert b"".join(whole[0]) == b"".join(direct[0]) == b"".join(plain[0])
    assert b"".join(whole[0]).startswith(b"firstsecond")


def test_the_connection_is_reused_after_a_body_read_whole():
    async def run() -> tuple[int, list[bytes]]:
        async with RawServer() as server, httpx2.AsyncClient() as client:
            server.scripts = [[HEAD + chunked([b"a" * 10] * 50)], [HEAD + chunked([b"b" * 10] * 50)]]
            first = await read_body(client, server.url, whole=True)
            second = await read_body(client, server.url, whole=True)
            return server.connections, [b"".join(first[0]), b"".join(second[0])]

    connections, bodies = asyncio.run(run())
    assert bodies == [b"a" * 500, b"b" * 500]
    assert connections == 1


def test_not_installed_on_a_body_with_a_length():
    async def run() -> tuple:
        async with RawServer() as server, httpx2.AsyncClient() as client:
            server.scripts = [[b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"]]
            return await read_body(client, server.url, whole=True)

    pieces, error, installed = asyncio.run(run())
    assert (b"".join(pieces), error, installed) == (b"hello", None, False)
    assert take_whole_chunks(object()) is False


def test_the_transport_reads_a_chunked_body_a_read_at_a_time():
    # read_chunks (the models' read path) installs the reader: 300 chunks written at once
    # come in a few pieces, the same bytes.
    pieces = [b"data: %d\n\n" % i for i in range(300)]

    async def run() -> list[bytes]:
        async with RawServer() as server, httpx2.AsyncClient() as client:
            server.scripts = [[HEAD + chunked(pieces)]]
            async with client.stream("POST", server.url, content=b"{}") as response:
                loop = asyncio.get_running_loop()
                return [p async for p in read_chunks(response, Timeouts(), None, loop.time() + 30)]

    got = asyncio.run(run())
    assert b"".join(got) == b"".join(pieces)
    assert len(got) < 20


def test_a_model_reply_over_chunks_split_anywhere():
    # The real path end to end: an Anthropic stream whose chunked encoding the socket
    # splits at random, with pauses; the reply is the whole text.
    from modelwire.testing.sse import body as sse_body

    events = sse_body("anthropic", ("text", "".join(f"w{i} " for i in range(120))))
    text = decode("anthropic", [events])[0].get_text_content("")  # the body decoded in one piece
    assert text and text.startswith("w0 w1 ") and "w119" in text
    body = chunked([e + b"\n\n" for e in events.split(b"\n\n") if e])
    rng = random.Random(7)

    async def run() -> str | None:
        async with RawServer() as server:
            server.scripts = [[HEAD, *split_anywhere(body, rng)]]
            model = load_model("anthropic:claude-x", api_key="k", base_url=server.url, capability_lookup=False)
            reply = await model.complete([UserMsg("u", "hi")])
            await model.aclose()
            return reply.get_text_content("")

    assert asyncio.run(run()) == text


def test_a_broken_chunk_in_a_model_reply_is_a_typed_error():
    async def run() -> None:
        async with RawServer() as server:
            server.scripts = [[HEAD + b"5\r\nevent" + b"XX"]]
            model = load_model("anthropic:claude-x", api_key="k", base_url=server.url, capability_lookup=False)
            try:
                await model.complete([UserMsg("u", "hi")])
            finally:
                await model.aclose()

    with pytest.raises(E.ProviderError):
        asyncio.run(run())


def _ollama_reply(*lines: dict) -> bytes:
    import json

    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


HALF = [
    {"model": "m", "created_at": "t", "message": {"role": "assistant", "content": "Half"}, "done": False},
    {"model": "m", "created_at": "t", "message": {"role": "assistant", "content": " an answer"}, "done": False},
]
FAILURE = {"error": "an unexpected error occurred while loading the model"}
WHOLE = [
    *HALF,
    {
        "model": "m",
        "created_at": "t",
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "stop",
    },
]
NDJSON_HEAD = HEAD.replace(b"text/event-stream", b"application/x-ndjson")


@pytest.mark.parametrize("one_piece", [True, False], ids=["in the piece of the answer", "in a piece of its own"])
def test_an_error_after_the_answer_began_is_never_retried_whatever_piece_it_came_in(one_piece):
    # The answer's start and the error in one chunk (a socket read holds several) or in
    # chunks of their own: either way the call fails with what came, and is not sent again.
    answer, error = _ollama_reply(*HALF), _ollama_reply(FAILURE)
    if one_piece:
        first: list[bytes | float] = [NDJSON_HEAD + chunked([answer + error])]
    else:  # the answer's chunks, a pause, the error's chunk
        first = [NDJSON_HEAD + chunked([answer])[: -len(b"0\r\n\r\n")], 0.05, chunked([error])]

    async def run() -> tuple[BaseException, int]:
        async with RawServer() as server:
            server.scripts = [first, [NDJSON_HEAD + chunked([_ollama_reply(*WHOLE)])]]
            model = load_model(
                "ollama:m",
                base_url=server.url,
                capability_lookup=False,
                retry=RetryPolicy(max_retries=2, initial_delay=0.01),
            )
            with pytest.raises(E.ProviderError, match="while loading the model") as info:
                await model.complete([UserMsg("u", "hi")])
            await model.aclose()
            left = len(server.scripts)
            return info.value, left

    err, left = asyncio.run(run())
    assert "Half" in err.partial.get_text_content()
    assert left == 1  # the second reply was never asked for


def test_an_error_before_the_answer_began_is_retried_in_the_same_piece_as_its_start():
    # The call's start and a retryable error in one piece, nothing of the answer: sent again.
    start = {"model": "m", "created_at": "t", "message": {"role": "assistant", "content": ""}, "done": False}

    async def run() -> str | None:
        async with RawServer() as server:
            server.scripts = [
                [NDJSON_HEAD + chunked([_ollama_reply(start, FAILURE)])],
                [NDJSON_HEAD + chunked([_ollama_reply(*WHOLE)])],
            ]
            model = load_model(
                "ollama:m",
                base_url=server.url,
                capability_lookup=False,
                retry=RetryPolicy(max_retries=2, initial_delay=0.01),
            )
            reply = await model.complete([UserMsg("u", "hi")])
            await model.aclose()
            return reply.get_text_content("")

    assert asyncio.run(run()) == "Half an answer"
