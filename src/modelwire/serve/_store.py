"""Where parked replies wait: data, not live agents.

A reply that parks (a tool call waits for the user's confirmation or for an external
result) is stored as JSON, the agent's state (its conversation, the parked reply last,
with the calls that wait), under the hash of the reply's resume token. The answer takes
it out again, atomically, and the app rebuilds the agent with its factory. So any worker
can resume any reply, and a restart loses none:

- :class:`MemoryStore` (the default) keeps them in this process, bounded by count, by
  their JSON size and by age;
- :class:`RedisStore` keeps them in Redis (``redis`` package, its asyncio client), with
  Redis expiry for the age and a script for the take, so two workers never resume one
  reply twice.

A store has two coroutines: ``put(token, parked)`` and ``take(token, reply_id)``; the
second raises :class:`Conflict` (one answer for every miss) or returns the
:class:`Parked` record and removes it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, AsyncIterator, Protocol

__all__ = ["Conflict", "Parked", "ReplyStore", "MemoryStore", "RedisStore", "store_for"]


class Conflict(Exception):
    """An answer to a reply that is not waiting for it; answered with 409.

    One answer for every such case (no reply of that id, a resume token that is not the
    reply's own, a call the reply does not wait for, expired, answered already), so a
    client cannot tell a guessed id from a wrong one."""

    def __init__(self) -> None:
        super().__init__("no reply waits for this answer here (it ended, expired, was answered already, or the resume token is not its own)")


@dataclass
class Parked:
    """One waiting reply: its id, the agent's state as JSON text, and when it parked
    (``time.time()``: the age must mean the same on every worker)."""

    reply_id: str
    state: str
    parked_at: float

    @property
    def size(self) -> int:
        return len(self.state)

    def agent_state(self) -> dict[str, Any]:
        return json.loads(self.state)


class ReplyStore(Protocol):
    ttl: float
    shared: bool  # whether other workers see what this one stores (then running streams go there too)

    async def put(self, token: str, parked: Parked) -> None: ...

    async def take(self, token: str | None, reply_id: str | None) -> Parked: ...


def key_of(token: str) -> str:
    """What a reply is stored under: the token itself is never kept."""
    return hashlib.sha256(token.encode()).hexdigest()


class MemoryStore:
    """Parked replies in this process: bounded by count (``limit``), by the JSON size of
    what waits (``max_bytes``; the oldest go first) and by age (``ttl`` seconds from when
    the reply parked: an answer that is refused does not make it younger)."""

    shared = False  # a running reply's stream is kept by the worker running it (LiveReply)

    def __init__(self, limit: int = 1000, ttl: float = 1800.0, max_bytes: int = 256 * 1024 * 1024) -> None:
        self.limit, self.ttl, self.max_bytes = limit, ttl, max_bytes
        self._entries: OrderedDict[str, Parked] = OrderedDict()
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    async def put(self, token: str, parked: Parked) -> None:
        key = key_of(token)
        if key in self._entries:
            self.bytes -= self._entries.pop(key).size
        self._entries[key] = parked
        self.bytes += parked.size
        while self._entries and (len(self._entries) > self.limit or self.bytes > self.max_bytes):
            self.bytes -= self._entries.popitem(last=False)[1].size

    async def take(self, token: str | None, reply_id: str | None) -> Parked:
        now = time.time()
        for key in [k for k, p in self._entries.items() if now - p.parked_at > self.ttl]:
            self.bytes -= self._entries.pop(key).size
        if not token:
            raise Conflict()
        key = key_of(token)
        parked = self._entries.get(key)
        if parked is None or (reply_id is not None and not hmac.compare_digest(parked.reply_id, reply_id)):
            raise Conflict()
        del self._entries[key]
        self.bytes -= parked.size
        return parked


# Take a parked reply if it is the one named (or none is named): one step in Redis, so of
# two workers answering the same reply at once exactly one gets it.
_TAKE = """
local rid = redis.call('HGET', KEYS[1], 'reply_id')
if not rid then return nil end
if ARGV[1] ~= '' and rid ~= ARGV[1] then return false end
local fields = redis.call('HMGET', KEYS[1], 'reply_id', 'state', 'parked_at')
redis.call('DEL', KEYS[1])
return fields
"""


class RedisStore:
    """Parked replies in Redis (``redis://HOST:PORT/DB``), shared by every worker and kept
    across restarts. Each is a hash under ``prefix`` + the token's hash, expiring ``ttl``
    seconds after the reply parked; ``max_reply_bytes`` refuses a reply too large to park
    (Redis's own ``maxmemory`` bounds the whole).

    A running reply's stream goes to a Redis stream too (at most ``max_frames`` frames,
    kept ``linger`` seconds after its last one), so a client that lost its connection can
    take it up on any worker; the worker following it for that client says so every
    second (``touch``), which keeps the reply from being abandoned on the worker running it."""

    shared = True

    def __init__(
        self, url: str, *, ttl: float = 1800.0, prefix: str = "modelwire:parked:", max_reply_bytes: int = 16 * 1024 * 1024,
        max_frames: int = 20_000, linger: float = 300.0, client: Any = None,
    ) -> None:
        self.url, self.ttl, self.prefix, self.max_reply_bytes = url, ttl, prefix, max_reply_bytes
        self.max_frames, self.linger = max_frames, linger
        self._client = client
        self._take: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            try:
                import redis.asyncio as redis
            except ImportError:
                from ..errors import ConfigError

                raise ConfigError("RedisStore needs the redis package: pip install 'modelwire[redis]'") from None
            self._client = redis.from_url(self.url)
        return self._client

    async def put(self, token: str, parked: Parked) -> None:
        if parked.size > self.max_reply_bytes:
            raise OverflowError(f"a parked reply of {parked.size} bytes is over this store's max_reply_bytes ({self.max_reply_bytes})")
        left = self.ttl - (time.time() - parked.parked_at)
        if left <= 0:
            return
        key = self.prefix + key_of(token)
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping={"reply_id": parked.reply_id, "state": parked.state, "parked_at": repr(parked.parked_at)})
            pipe.pexpire(key, max(1, int(left * 1000)))
            await pipe.execute()

    async def take(self, token: str | None, reply_id: str | None) -> Parked:
        if not token:
            raise Conflict()
        if self._take is None:
            self._take = self.client.register_script(_TAKE)
        fields = await self._take(keys=[self.prefix + key_of(token)], args=[reply_id or ""])
        if not fields:
            raise Conflict()
        rid, state, parked_at = (f.decode() if isinstance(f, bytes) else f for f in fields)
        return Parked(rid, state, float(parked_at))

    # -- running streams ----------------------------------------------------------------

    def _stream_key(self, token: str) -> str:
        return self.prefix + "stream:" + key_of(token)

    async def publish(self, token: str, frames: list[tuple[int, bytes]], end: bool = False) -> None:
        """Frames of a running reply (``(id, frame)``), and ``end`` once its stream ended."""
        key = self._stream_key(token)
        async with self.client.pipeline(transaction=False) as pipe:
            for n, frame in frames:
                pipe.xadd(key, {"n": n, "f": frame}, maxlen=self.max_frames, approximate=False)
            if end:
                pipe.xadd(key, {"end": 1}, maxlen=self.max_frames + 1, approximate=False)
            pipe.expire(key, int(self.linger))
            await pipe.execute()

    async def touch(self, token: str) -> None:
        await self.client.set(self.prefix + "seen:" + key_of(token), b"1", px=2500)

    async def seen(self, token: str) -> bool:
        """Whether a client follows this reply's stream on some worker."""
        return bool(await self.client.exists(self.prefix + "seen:" + key_of(token)))

    async def follow(self, token: str, after: int) -> AsyncIterator[bytes] | None:
        """The stream after frame ``after`` as another worker wrote it, live, or None when
        no stream of that token is kept. Raises :class:`Gone` if ``after + 1`` was trimmed."""
        key = self._stream_key(token)
        entries = await self.client.xrange(key)
        if not entries:
            return None
        numbers = [int(f[b"n"]) for _, f in entries if b"n" in f]
        if numbers and numbers[0] > after + 1:
            from ._live import Gone

            raise Gone()

        await self.touch(token)  # followed from now on: the worker running it must not give up

        async def frames() -> AsyncIterator[bytes]:
            last, batch = b"0-0", entries
            while True:
                out = []
                for entry_id, fields in batch:
                    last = entry_id
                    if b"end" in fields:
                        if out:
                            yield b"".join(out)
                        return
                    if int(fields[b"n"]) > after:
                        out.append(fields[b"f"])
                if out:
                    yield b"".join(out)
                await self.touch(token)
                found = await self.client.xread({key: last}, block=1000, count=500)
                batch = found[0][1] if found else []
                if not found and not await self.client.exists(key):
                    return  # expired under us: the reply is long gone

        return frames()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


def store_for(url: str | None) -> ReplyStore:
    """The store a URL names: none (this process) or ``redis://`` / ``rediss://``."""
    if not url or url == "memory":
        return MemoryStore()
    if url.startswith(("redis://", "rediss://", "unix://")):
        return RedisStore(url)
    from ..errors import ConfigError

    raise ConfigError(f"--store is redis://HOST:PORT/DB (or memory), not {url!r}")
