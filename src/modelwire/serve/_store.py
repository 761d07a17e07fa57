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
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Protocol

__all__ = [
    "Conflict",
    "Parked",
    "ReplyStore",
    "MemoryStore",
    "RedisStore",
    "StoreUnavailable",
    "RunnerGone",
    "store_for",
]


class Conflict(Exception):
    """An answer to a reply that is not waiting for it; answered with 409.

    One answer for every such case (no reply of that id, a resume token that is not the
    reply's own, a call the reply does not wait for, expired, answered already), so a
    client cannot tell a guessed id from a wrong one."""

    def __init__(self) -> None:
        super().__init__(
            (
                "no reply waits for this answer here (it ended, expired, was answered already, or the "
                "resume token is not its own)"
            )
        )

    def __reduce__(self) -> tuple[type[Conflict], tuple[()]]:
        return (type(self), ())  # it takes no argument: one message for every case


class StoreUnavailable(Exception):
    """The store cannot be reached (Redis is down or restarting), after one retry."""

    def __init__(self, what: str, exc: BaseException) -> None:
        super().__init__(f"the reply store could not be reached to {what} ({type(exc).__name__}: {exc}); try again")


class RunnerGone(Exception):
    """The worker running a followed reply stopped beating (it died): the reply will not go
    on. ``next`` is the id the stream's next frame would have had; ``dialect`` and
    ``reply_id`` what the stream was written in and for."""

    def __init__(self, next_id: int, dialect: str, reply_id: str) -> None:
        super().__init__("the worker running this reply stopped before the reply ended")
        self.next, self.dialect, self.reply_id = next_id, dialect, reply_id


@dataclass
class Parked:
    """One waiting reply: its id, the agent's state as JSON text, when it parked
    (``time.time()``: the age must mean the same on every worker), and the SSE id the
    stream of its continuation starts at (ids stay unique across the parts of a reply)."""

    reply_id: str
    state: str
    parked_at: float
    next_id: int = 1

    @property
    def size(self) -> int:
        return len(self.state)

    def agent_state(self) -> dict[str, Any]:
        state: dict[str, Any] = json.loads(self.state)
        return state


class _Packed:
    """A parked reply as :class:`MemoryStore` keeps it: its state compressed."""

    __slots__ = ("reply_id", "packed", "parked_at", "next_id")

    def __init__(self, reply_id: str, packed: bytes, parked_at: float, next_id: int) -> None:
        self.reply_id, self.packed, self.parked_at, self.next_id = reply_id, packed, parked_at, next_id

    @property
    def size(self) -> int:
        return len(self.packed)

    def unpacked(self) -> Parked:
        return Parked(self.reply_id, zlib.decompress(self.packed).decode(), self.parked_at, self.next_id)


class ReplyStore(Protocol):
    """Where the server keeps replies parked for a user's answer and, when ``shared``, the running streams
    other workers may resume (``MemoryStore`` in one process, ``RedisStore`` across several)."""

    ttl: float
    shared: bool  # whether other workers see what this one stores (then running streams go there too)

    async def put(self, token: str, parked: Parked) -> None: ...

    async def take(self, token: str | None, reply_id: str | None) -> Parked: ...


def key_of(token: str) -> str:
    """What a reply is stored under: the token itself is never kept."""
    return hashlib.sha256(token.encode()).hexdigest()


class MemoryStore:
    """Parked replies in this process, their JSON kept compressed: bounded by count
    (``limit``), by the compressed size of what waits (``max_bytes``; the oldest go first)
    and by age (``ttl`` seconds from when the reply parked: an answer that is refused does
    not make it younger). ``clock``: the time an age is counted to (``time.time``, as a
    reply's ``parked_at`` is stamped; a test moves it on instead of sleeping)."""

    shared = False  # a running reply's stream is kept by the worker running it (LiveReply)

    def __init__(
        self,
        limit: int = 1000,
        ttl: float = 1800.0,
        max_bytes: int = 256 * 1024 * 1024,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.limit: int = limit
        self.ttl: float = ttl
        self.max_bytes: int = max_bytes
        self.clock: Callable[[], float] = clock
        self._entries: OrderedDict[str, Parked] = OrderedDict()
        self.bytes: int = 0

    def __len__(self) -> int:
        return len(self._entries)

    async def put(self, token: str, parked: Parked) -> None:
        key = key_of(token)
        if key in self._entries:
            self.bytes -= self._entries.pop(key).size
        # Kept compressed: a conversation's JSON is mostly text, which takes a third to a
        # quarter of its size this way, and a waiting reply is read once, when answered.
        packed = _Packed(parked.reply_id, zlib.compress(parked.state.encode(), 1), parked.parked_at, parked.next_id)
        self._entries[key] = packed  # type: ignore[assignment]
        self.bytes += packed.size
        while self._entries and (len(self._entries) > self.limit or self.bytes > self.max_bytes):
            self.bytes -= self._entries.popitem(last=False)[1].size

    async def take(self, token: str | None, reply_id: str | None) -> Parked:
        now = self.clock()
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
        return parked.unpacked()  # type: ignore[attr-defined, no-any-return]


# Take a parked reply if it is the one named (or none is named): one step in Redis, so of
# two workers answering the same reply at once exactly one gets it.
_TAKE = """
local rid = redis.call('HGET', KEYS[1], 'reply_id')
if not rid then return nil end
if ARGV[1] ~= '' and rid ~= ARGV[1] then return false end
local fields = redis.call('HMGET', KEYS[1], 'reply_id', 'state', 'parked_at', 'next_id')
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
    # The worker running a reply says it is alive every ``beat`` seconds; a follower elsewhere
    # that hears nothing for ``beat_timeout`` seconds ends its stream with an error.
    beat: float = 1.0
    beat_timeout: float = 3.0

    def __init__(
        self,
        url: str,
        *,
        ttl: float = 1800.0,
        prefix: str = "modelwire:parked:",
        max_reply_bytes: int = 16 * 1024 * 1024,
        max_frames: int = 20_000,
        linger: float = 300.0,
        client: Any = None,
    ) -> None:
        self.url: str = url
        self.ttl: float = ttl
        self.prefix: str = prefix
        self.max_reply_bytes: int = max_reply_bytes
        self.max_frames: int = max_frames
        self.linger: float = linger
        self._client = client
        self._take: Any = None

    async def _once_more(self, what: str, step: Any) -> Any:
        """``step()``, tried again once when the connection dropped (a Redis restart leaves
        the pooled connections dead: the first command on each fails); a second failure is
        :class:`StoreUnavailable`."""
        import redis.exceptions as rx

        try:
            return await step()
        except (rx.ConnectionError, rx.TimeoutError, OSError):
            pass
        try:
            return await step()
        except (rx.ConnectionError, rx.TimeoutError, OSError) as exc:
            raise StoreUnavailable(what, exc) from None

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
            raise OverflowError(
                f"a parked reply of {parked.size} bytes is over this store's max_reply_bytes ({self.max_reply_bytes})"
            )
        left = self.ttl - (time.time() - parked.parked_at)
        if left <= 0:
            return
        key = self.prefix + key_of(token)

        async def step() -> None:
            async with self.client.pipeline(transaction=True) as pipe:
                pipe.hset(
                    key,
                    mapping={
                        "reply_id": parked.reply_id,
                        "state": parked.state,
                        "parked_at": repr(parked.parked_at),
                        "next_id": parked.next_id,
                    },
                )
                pipe.pexpire(key, max(1, int(left * 1000)))
                await pipe.execute()

        await self._once_more("park the reply", step)

    async def take(self, token: str | None, reply_id: str | None) -> Parked:
        if not token:
            raise Conflict()
        if self._take is None:
            self._take = self.client.register_script(_TAKE)
        fields = await self._once_more(
            "find the parked reply", lambda: self._take(keys=[self.prefix + key_of(token)], args=[reply_id or ""])
        )
        if not fields:
            raise Conflict()
        rid, state, parked_at, next_id = (f.decode() if isinstance(f, bytes) else f for f in fields)
        return Parked(rid, state, float(parked_at), int(next_id or 1))

    # -- running streams ----------------------------------------------------------------

    def _stream_key(self, token: str) -> str:
        return self.prefix + "stream:" + key_of(token)

    async def publish(
        self, token: str, frames: list[tuple[int, bytes]], end: bool = False, *, about: tuple[str, str] | None = None
    ) -> None:
        """Frames of a running reply (``(id, frame)``), and ``end`` once its stream ended;
        ``about``: the stream's dialect and reply id, for a follower that must end it with an
        error if this worker dies. Each call is also a beat (see :meth:`alive`)."""
        key, hashed = self._stream_key(token), key_of(token)

        async def step() -> None:
            async with self.client.pipeline(transaction=False) as pipe:
                for n, frame in frames:
                    pipe.xadd(key, {"n": n, "f": frame}, maxlen=self.max_frames, approximate=False)
                if end:
                    pipe.xadd(key, {"end": 1}, maxlen=self.max_frames + 1, approximate=False)
                    pipe.delete(self.prefix + "alive:" + hashed)
                else:
                    pipe.set(self.prefix + "alive:" + hashed, b"1", px=int(self.beat_timeout * 1000))
                if about is not None:
                    pipe.hset(self.prefix + "about:" + hashed, mapping={"dialect": about[0], "reply_id": about[1]})
                pipe.expire(self.prefix + "about:" + hashed, int(self.linger))
                pipe.expire(key, int(self.linger))
                await pipe.execute()

        await self._once_more("write the reply's stream", step)

    async def alive(self, token: str) -> None:
        """The worker running this reply is alive (every ``beat`` seconds while it runs)."""
        await self.client.set(self.prefix + "alive:" + key_of(token), b"1", px=int(self.beat_timeout * 1000))

    async def _runner_gone(self, token: str, last: int) -> RunnerGone | None:
        """A :class:`RunnerGone` when no worker beats for this reply any more."""
        hashed = key_of(token)
        if await self.client.exists(self.prefix + "alive:" + hashed):
            return None
        about = await self.client.hgetall(self.prefix + "about:" + hashed)
        text = {k.decode(): v.decode() for k, v in about.items()} if about else {}
        return RunnerGone(last + 1, text.get("dialect", "events"), text.get("reply_id", ""))

    async def touch(self, token: str) -> None:
        await self.client.set(self.prefix + "seen:" + key_of(token), b"1", px=2500)

    async def seen(self, token: str) -> bool:
        """Whether a client follows this reply's stream on some worker."""
        return bool(await self.client.exists(self.prefix + "seen:" + key_of(token)))

    async def follow(self, token: str, after: int) -> AsyncIterator[bytes] | None:
        """The stream after frame ``after`` as another worker wrote it, live, or None when
        no stream of that token is kept. Raises :class:`Gone` if ``after + 1`` was trimmed."""
        key = self._stream_key(token)
        entries = await self._once_more("read the reply's stream", lambda: self.client.xrange(key))
        if not entries:
            return None
        numbers = [int(f[b"n"]) for _, f in entries if b"n" in f]
        if numbers and numbers[0] > after + 1:
            from ._live import Gone

            raise Gone()

        await self.touch(token)  # followed from now on: the worker running it must not give up

        async def frames() -> AsyncIterator[bytes]:
            last, batch, n = b"0-0", entries, after
            while True:
                out: list[bytes] = []
                for k, (entry_id, fields) in enumerate(batch):
                    last = entry_id
                    if b"end" in fields:
                        if any(b"n" in f for _, f in batch[k + 1 :]):
                            continue  # a part that parked, and its continuation after it
                        if out:
                            yield b"".join(out)
                        return
                    n = max(n, int(fields[b"n"]))
                    if int(fields[b"n"]) > after:
                        out.append(fields[b"f"])
                if out:
                    yield b"".join(out)
                await self.touch(token)
                found = await self.client.xread({key: last}, block=1000, count=500)
                batch = found[0][1] if found else []
                if found:
                    continue
                if not await self.client.exists(key):
                    return  # expired under us: the reply is long gone
                gone = await self._runner_gone(token, n)  # no beat for beat_timeout seconds
                if gone is not None:
                    raise gone

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
