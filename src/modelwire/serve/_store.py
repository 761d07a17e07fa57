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
from typing import Any, Protocol

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

    async def put(self, token: str, parked: Parked) -> None: ...

    async def take(self, token: str | None, reply_id: str | None) -> Parked: ...


def key_of(token: str) -> str:
    """What a reply is stored under: the token itself is never kept."""
    return hashlib.sha256(token.encode()).hexdigest()


class MemoryStore:
    """Parked replies in this process: bounded by count (``limit``), by the JSON size of
    what waits (``max_bytes``; the oldest go first) and by age (``ttl`` seconds from when
    the reply parked: an answer that is refused does not make it younger)."""

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
    (Redis's own ``maxmemory`` bounds the whole)."""

    def __init__(self, url: str, *, ttl: float = 1800.0, prefix: str = "modelwire:parked:", max_reply_bytes: int = 16 * 1024 * 1024, client: Any = None) -> None:
        self.url, self.ttl, self.prefix, self.max_reply_bytes = url, ttl, prefix, max_reply_bytes
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
            raise Conflict()
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
