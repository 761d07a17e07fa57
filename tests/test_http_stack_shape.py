"""The private parts of h11, httpcore2 and httpx2 that modelwire's own read path leans on
(``models/_chunks.py``, ``models/_netio.py``), checked on the versions installed. Where one of
them moves, modelwire falls back to the stack's ordinary (slower) path without a word, so this
test is what says so, loudly: the versions are pinned in ``pyproject.toml`` to those it was
written for, and a new release is taken by checking the read path against it and moving the
pins."""

from __future__ import annotations

import asyncio
import re
from importlib.metadata import version
from pathlib import Path

import httpx2

from modelwire.models._chunks import _connection_of, read_directly, take_whole_chunks

from test_chunked_reads import HEAD, RawServer, chunked
from test_netio import client

ROOT = Path(__file__).resolve().parents[1]
PINNED = ("h11", "httpcore2", "httpx2")


def test_the_stack_is_pinned_to_the_versions_the_read_path_was_written_for():
    dependencies = re.search(r"^dependencies = \[(.*?)^\]", (ROOT / "pyproject.toml").read_text(), re.S | re.M)
    assert dependencies is not None
    for name in PINNED:
        pin = re.search(rf'"{name}>=([\d.]+),<([\d.]+)"', dependencies.group(1))
        assert pin, f"{name} has no upper pin in pyproject.toml's dependencies"
        low, high = (tuple(map(int, v.split("."))) for v in pin.groups())
        installed = tuple(map(int, version(name).split(".")[:3]))
        assert low <= installed < high, f"{name} {version(name)} is outside the pins {pin.group(0)}"


def test_a_chunked_body_is_read_through_the_parts_modelwire_expects():
    """Each private part read by name: the response's layers down to httpcore2's HTTP/1.1
    connection, h11's chunked reader and receive buffer, httpx2's exception mapping."""
    import h11._readers
    from httpcore2._utils import is_socket_readable  # noqa: F401 - _netio's import
    from httpx2._transports.default import map_httpcore_exceptions  # noqa: F401 - _chunks's import

    assert hasattr(h11._readers, "chunk_header_re") and hasattr(h11._readers.ChunkedReader, "__call__")
    body = b'{"a": 1}\n' * 1000

    async def run() -> tuple[bool, bool, bytes]:
        async with RawServer() as server, client(True) as c:
            server.scripts = [[HEAD + chunked([body[:4000], body[4000:]])]]
            async with c.stream("POST", server.url, content=b"{}") as response:
                taken = take_whole_chunks(response.stream)
                found = _connection_of(response.stream)
                h11 = found[0]._h11_state if found else None
                shaped = h11 is not None and all(
                    hasattr(h11, name) for name in ("_reader", "_receive_buffer", "_receive_buffer_closed")
                )
                shaped = shaped and all(hasattr(h11._receive_buffer, name) for name in ("_data", "_extract"))
                iterator = read_directly(response.stream)
                assert iterator is not None, f"the direct read path is off on httpx2 {httpx2.__version__}"
                got = b"".join([piece async for piece in iterator])
        return taken, shaped, got

    taken, shaped, got = asyncio.run(run())
    versions = ", ".join(f"{name} {version(name)}" for name in PINNED)
    assert taken and shaped, f"the private parts models/_chunks.py reads moved ({versions}): update it, then the pins"
    assert got == body
