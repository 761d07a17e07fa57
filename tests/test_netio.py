"""modelwire's own sockets (``modelwire.models._netio``) on real local servers, each case
beside httpcore2's default (anyio) sockets as the oracle: the same bytes, the same error
types, the same connection reuse; and what only they do (reading paused under a slow
consumer, TLS through ``loop.start_tls``)."""

from __future__ import annotations

import asyncio
import ssl

import httpx2
import pytest

from modelwire.models import load_model
from modelwire.models._chunks import _connection_of, read_directly, take_whole_chunks
from modelwire.models._netio import HIGH_WATER, AsyncioBackend, use_asyncio_streams

from test_chunked_reads import HEAD, RawServer, chunked


def kind(exc: BaseException) -> str:
    return f"{type(exc).__module__}.{type(exc).__qualname__}"  # httpx2's ReadTimeout, not httpcore2's


def client(ours: bool, **kwargs) -> httpx2.AsyncClient:
    made = httpx2.AsyncClient(**kwargs)
    if ours:
        assert use_asyncio_streams(made)
    return made


def test_the_pools_modelwire_makes_use_them_and_a_clients_own_pool_is_left_alone():
    async def run() -> tuple[str, str]:
        model = load_model("anthropic:claude-x", api_key="k", base_url="http://127.0.0.1:9", capability_lookup=False)
        own = type(model.transport.client._transport._pool._network_backend).__name__
        passed = httpx2.AsyncClient()
        theirs = load_model(
            "anthropic:claude-x", api_key="k", base_url="http://127.0.0.1:9", capability_lookup=False, client=passed
        )
        kept = type(theirs.transport.client._transport._pool._network_backend).__name__
        await model.aclose()
        await passed.aclose()
        return own, kept

    assert asyncio.run(run()) == ("AsyncioBackend", "AutoBackend")


async def _outcome(ours: bool, script: list, **kwargs) -> tuple:
    """One request's body (or error type; read directly on modelwire's sockets) and how many
    connections the server saw for two requests in a row on one client (the second one
    answered normally)."""
    async with RawServer() as server, client(ours, **kwargs) as c:
        server.scripts = [list(script), [HEAD + chunked([b"again"])]]
        try:
            async with c.stream("POST", server.url, content=b"{}") as response:
                take_whole_chunks(response.stream)  # as the transport reads a body
                iterator = read_directly(response.stream) if ours else response.stream
                assert iterator is not None
                first = b"".join([piece async for piece in iterator])
        except Exception as exc:  # noqa: BLE001 - compared below
            first = kind(exc)
        second = (await c.post(server.url, content=b"{}")).content
        return first, second, server.connections


@pytest.mark.parametrize(
    "script, kwargs",
    [
        ([HEAD + chunked([b"a" * 10] * 20)], {}),
        ([b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"], {}),
        ([HEAD + chunked([b"x"])[:-5], 1.0], {"timeout": httpx2.Timeout(5, read=0.2)}),
        ([HEAD + b"5\r\nhel"], {}),
        ([b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello"], {}),
        ([], {}),
    ],
    ids=["chunked", "with a length", "read timeout", "closed inside a chunk", "closed after", "no answer"],
)
def test_the_same_outcome_as_the_default_sockets(script, kwargs):
    theirs = asyncio.run(_outcome(False, script, **kwargs))
    ours = asyncio.run(_outcome(True, script, **kwargs))
    assert ours == theirs
    assert ours[1] == b"again"


def test_a_connection_refused_is_the_same_error():
    async def run(ours: bool) -> str:
        async with client(ours) as c:
            try:
                await c.get("http://127.0.0.1:9/")
            except Exception as exc:  # noqa: BLE001 - compared below
                return kind(exc)
        return "answered"

    assert asyncio.run(run(True)) == asyncio.run(run(False)) == "httpx2.ConnectError"


def test_a_connection_the_server_closed_while_idle_is_not_reused():
    async def run(ours: bool) -> tuple:
        async with RawServer() as server, client(ours) as c:
            server.scripts = [[HEAD + chunked([b"one"])]]
            first = (await c.post(server.url, content=b"{}")).content
            while not server.closed:  # the server ends the connection once its scripts are done
                await asyncio.sleep(0.005)
            server.scripts = [[HEAD + chunked([b"two"])]]
            second = (await c.post(server.url, content=b"{}")).content
            return first, second, server.connections

    assert asyncio.run(run(True)) == asyncio.run(run(False)) == (b"one", b"two", 2)


async def _error_of(ours: bool, answer, request, ssl=None, **kwargs) -> str:
    """What one request to a server that answers with ``answer`` raised (its kind), or "done"."""
    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=ssl)
    url = ("https" if ssl else "http") + "://127.0.0.1:%d" % server.sockets[0].getsockname()[1]
    try:
        async with client(ours, **kwargs) as c:
            await request(c, url)
    except Exception as exc:  # noqa: BLE001 - compared by the callers
        return kind(exc)
    finally:
        server.close()
    return "done"


def test_a_write_to_a_server_that_reads_nothing_times_out():
    async def never_read(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(60)
        writer.close()

    async def post(c: httpx2.AsyncClient, url: str) -> None:
        await c.post(url, content=b"x" * (64 << 20))

    def run(ours: bool) -> str:
        return asyncio.run(_error_of(ours, never_read, post, timeout=httpx2.Timeout(30, write=0.3)))

    assert run(True) == run(False) == "httpx2.WriteTimeout"


def test_a_read_cancelled_mid_body_leaves_the_pool_usable():
    async def run(ours: bool) -> tuple:
        async with RawServer() as server, client(ours) as c:
            server.scripts = [[HEAD + chunked([b"first"])[:-5], 5.0], [HEAD + chunked([b"next"])]]

            async def read() -> None:
                async with c.stream("POST", server.url, content=b"{}") as response:
                    async for _ in response.aiter_raw():
                        pass

            task = asyncio.create_task(read())
            while not server.written:  # the body begun, then 5 s of nothing: the read waits mid-body
                await asyncio.sleep(0.005)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            after = (await c.post(server.url, content=b"{}")).content
            return after, server.connections

    assert asyncio.run(run(True)) == asyncio.run(run(False)) == (b"next", 2)


def test_reading_pauses_while_a_consumer_is_slow_and_loses_nothing():
    body = bytes(range(256)) * (32 << 10)  # 8 MiB in one write, read by nobody for a while

    async def run() -> tuple[int, bool, bytes]:
        async with RawServer() as server, client(True) as c:
            server.scripts = [[HEAD + chunked([body])]]
            async with c.stream("POST", server.url, content=b"{}") as response:
                take_whole_chunks(response.stream)
                found = _connection_of(response.stream)
                assert found is not None
                protocol = found[0]._network_stream._protocol
                deadline = asyncio.get_running_loop().time() + 30
                while not protocol.paused and asyncio.get_running_loop().time() < deadline:
                    await asyncio.sleep(0.005)  # the socket's bytes come in until the mark stops the reading
                held, paused = protocol.size, protocol.paused
                iterator = read_directly(response.stream)
                assert iterator is not None
                got = b"".join([piece async for piece in iterator])
            return held, paused, got

    held, paused, got = asyncio.run(run())
    assert paused and HIGH_WATER < held < HIGH_WATER + (1 << 20)  # a read's worth past the mark, not 8 MiB
    assert got == body


@pytest.fixture(scope="module")
def tls():
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(server_ctx)
    client_ctx = ssl.create_default_context()
    ca.configure_trust(client_ctx)
    return server_ctx, client_ctx


def test_tls_gives_the_same_body_and_the_ssl_object(tls):
    server_ctx, client_ctx = tls
    pieces = [b"data: %d\n\n" % i for i in range(300)]

    async def run(ours: bool) -> tuple:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            for _ in range(2):
                await reader.readuntil(b"\r\n\r\n")
                await reader.readexactly(2)
                writer.write(HEAD + chunked(pieces))
                await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=server_ctx)
        url = "https://127.0.0.1:%d" % server.sockets[0].getsockname()[1]
        try:
            async with client(ours, verify=client_ctx) as c:
                bodies = []
                for _ in range(2):  # the second request on the same connection
                    async with c.stream("POST", url, content=b"{}") as response:
                        tls_object = response.extensions["network_stream"].get_extra_info("ssl_object")
                        take_whole_chunks(response.stream)
                        iterator = read_directly(response.stream) if ours else response.stream
                        assert iterator is not None
                        bodies.append(b"".join([p async for p in iterator]))
                return bodies, tls_object is not None
        finally:
            server.close()

    assert asyncio.run(run(True)) == asyncio.run(run(False)) == ([b"".join(pieces)] * 2, True)


def test_a_certificate_nobody_trusts_is_a_connect_error(tls):
    server_ctx, _ = tls

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    async def get(c: httpx2.AsyncClient, url: str) -> None:
        await c.get(url)  # the system's trust store: not the test CA

    def run(ours: bool) -> str:
        return asyncio.run(_error_of(ours, answer, get, ssl=server_ctx))

    assert run(True) == run(False) == "httpx2.ConnectError"


def test_a_unix_socket_connects_and_reads():
    backend = AsyncioBackend()

    async def run(path: str) -> bytes:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(await reader.readexactly(5))
            await writer.drain()
            writer.close()

        server = await asyncio.start_unix_server(answer, path)
        try:
            stream = await backend.connect_unix_socket(path, timeout=5)
            await stream.write(b"hello")
            got = b""
            while len(got) < 5:
                got += await stream.read(100)
            assert await stream.read(100) == b""  # the server closed it
            await stream.aclose()
            return got
        finally:
            server.close()

    import os
    import tempfile

    with tempfile.TemporaryDirectory() as where:
        assert asyncio.run(run(os.path.join(where, "s"))) == b"hello"


def test_socket_options_are_set_on_the_connection():
    import socket

    async def run() -> int:
        server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            stream = await AsyncioBackend().connect_tcp(
                "127.0.0.1", port, timeout=5, socket_options=[(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
            )
            value = stream.get_extra_info("socket").getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE)
            await stream.aclose()
            return value
        finally:
            server.close()

    assert asyncio.run(run()) == 1


def test_through_a_connect_proxy_tls_is_started_on_the_tunnel(tls):
    # An HTTPS_PROXY (trust_env) makes httpx2 mount a proxy pool: it connects to the proxy,
    # asks for a tunnel (CONNECT), then starts TLS on that socket. The proxy here is a real
    # byte pipe; the answer is the same on both socket layers.
    server_ctx, client_ctx = tls
    pieces = [b"data: %d\n\n" % i for i in range(50)]

    async def run(ours: bool) -> tuple:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            await reader.readexactly(2)
            writer.write(HEAD + chunked(pieces))
            await writer.drain()
            writer.close()

        tunnels: list[bytes] = []

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            finally:
                dst.close()

        async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = await reader.readuntil(b"\r\n\r\n")
            tunnels.append(head.split(b"\r\n")[0])
            host, port = head.split(b" ")[1].decode().rsplit(":", 1)
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

        server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=server_ctx)
        relay = await asyncio.start_server(proxy, "127.0.0.1", 0)
        url = "https://127.0.0.1:%d" % server.sockets[0].getsockname()[1]
        proxy_url = "http://127.0.0.1:%d" % relay.sockets[0].getsockname()[1]
        try:
            async with client(ours, verify=client_ctx, proxy=proxy_url) as c:
                async with c.stream("POST", url, content=b"{}") as response:
                    take_whole_chunks(response.stream)
                    iterator = read_directly(response.stream) if ours else response.stream
                    body = b"".join([p async for p in iterator]) if iterator is not None else None
            return body, [t.split(b" ")[0] for t in tunnels]
        finally:
            server.close()
            relay.close()

    assert asyncio.run(run(True)) == asyncio.run(run(False)) == (b"".join(pieces), [b"CONNECT"])


@pytest.mark.parametrize("direct", [True, False], ids=["read directly", "read by httpcore2"])
def test_a_read_that_waits_past_its_deadline_times_out_after_many_quick_reads(direct):
    # The read timeout is one timer per connection, re-armed lazily: forty quick reads, which
    # together take longer than the timeout, each move the deadline on without a timer of
    # their own, and the read that then waits past it fails as on the default sockets. (A
    # gap of 0.03 s against a timeout of 1 s: a loaded machine may stretch a gap, not that far.)
    pieces = [b"%02d" % i for i in range(40)]
    script: list = [HEAD]
    for piece in pieces:
        script += [b"%x\r\n%s\r\n" % (len(piece), piece), 0.03]
    script.append(5.0)

    async def run(ours: bool) -> tuple:
        async with RawServer() as server, client(ours, timeout=httpx2.Timeout(5, read=1.0)) as c:
            server.scripts = [list(script)]
            loop = asyncio.get_running_loop()
            started = loop.time()
            got: list[bytes] = []
            async with c.stream("POST", server.url, content=b"{}") as response:
                take_whole_chunks(response.stream)
                iterator = read_directly(response.stream) if ours and direct else response.stream
                assert iterator is not None
                try:
                    async for piece in iterator:
                        got.append(piece)
                except Exception as exc:  # noqa: BLE001 - compared below
                    return b"".join(got), kind(exc), loop.time() - started
            return b"".join(got), None, loop.time() - started

    theirs, ours = asyncio.run(run(False)), asyncio.run(run(True))
    assert ours[:2] == theirs[:2] == (b"".join(pieces), kind(httpx2.ReadTimeout("")))
    # The last piece comes 39 gaps after the first, then the whole timeout: none expired early.
    assert ours[2] >= 39 * 0.03 + 1.0 - 1e-3


def test_the_read_timer_is_gone_when_the_connection_closes():
    async def run() -> None:
        async with RawServer() as server, client(True, timeout=httpx2.Timeout(5, read=30)) as c:
            server.scripts = [[HEAD + chunked([b"first"])[:-5], 5.0]]
            async with c.stream("POST", server.url, content=b"{}") as response:
                found = _connection_of(response.stream)
                assert found is not None
                protocol = found[0]._network_stream._protocol
                take_whole_chunks(response.stream)
                iterator = read_directly(response.stream)
                assert iterator is not None
                assert await iterator.__anext__() == b"first"
                waiting = asyncio.ensure_future(iterator.__anext__())
                while protocol.waiter is None or protocol.waiter.done():  # the next read waits
                    await asyncio.sleep(0)
                timer = protocol.timer
                assert timer is not None and not timer.cancelled()
                waiting.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await waiting
            # The body was left mid-way: the connection is closed, and its timer with it.
            assert protocol.timer is None and timer.cancelled()

    asyncio.run(run())
