"""A rate limiter that models share: requests and tokens per minute, per endpoint, that waits
instead of sending into a 429.

Each limit is a token bucket, as the providers keep theirs: it holds at most the limit and
refills continuously, at the limit per ``period`` (Anthropic: "The API uses the token bucket
algorithm to do rate limiting. This means that your capacity is continuously replenished up
to your maximum limit, rather than being reset at fixed intervals",
https://platform.claude.com/docs/en/api/rate-limits; OpenAI's ``x-ratelimit-reset-*`` headers
give "the time until the rate limit ... resets to its initial state", a bucket's time to fill,
https://developers.openai.com/api/docs/guides/rate-limits). So ``tpm=3200`` admits 3,200
tokens at once, then 53.3 a second: twenty calls of 200 tokens are all sent within 15 s.

A request first takes its place (``acquire``): its estimated tokens (the request's size and
its output limit) and one request, held while it is in flight: what it holds refills only once
its answer began (``answered``), which is after the provider took it from its own bucket, so
the limiter is never ahead of the provider. When the answer ends, the tokens really used are
taken where they were more (``settle``). The provider's rate-limit headers teach it
(``learn``): the limits it did not know, and a pause until the reset when the provider says
nothing is left, or for the ``retry-after`` of a 429. In one process the buckets live in
memory; with ``redis=URL`` they live in Redis and every process with the same ``key`` shares
them (a hash per endpoint and a sorted set of the places in flight, changed only by Lua
scripts, so two processes never both take the last place).

A wait is logged (``modelwire.ratelimit``, INFO) and shown on the call's ``MODEL_CALL_END``
(``metadata["rate_limit_wait"]``, seconds); it never passes the call's deadline: a wait that
would is a :class:`~modelwire.errors.RateLimitError` before anything is sent.
"""

from __future__ import annotations

import asyncio
import calendar
import itertools
import logging
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .. import errors as E

__all__ = ["RateLimiter", "Permit"]

log = logging.getLogger("modelwire.ratelimit")
_ids = itertools.count(1)

# Seconds a place in flight is held in Redis at most, when no answer came to free it: a process
# that died holding places gives them back then. Long enough for any request's answer to begin
# (a whole answer's headers come only once it is written, which can take minutes), whatever the
# period: a hold that lapsed while its request was in flight would let the budget run ahead of
# the provider's.
HELD_AT_MOST = 600.0


@dataclass
class Permit:
    """A place taken in the budget: held until its answer began (``answered``), then settled
    with the tokens really used."""

    endpoint: str
    tokens: int
    member: str = ""  # its place in flight (Redis)
    at: float = 0.0  # when it was taken, then when its answer began
    waited: float = 0.0
    in_flight: bool = True


class _Bucket:
    """One limit of one endpoint: ``level`` as of ``at`` (refilling at the limit per period, up
    to the limit), and what the places in flight hold, which does not refill."""

    __slots__ = ("level", "at", "held")

    def __init__(self, level: float, at: float) -> None:
        self.level, self.at, self.held = level, at, 0.0

    def free(self, limit: int, period: float, now: float) -> float:
        """What may be taken at ``now``: the level refilled to now, less what is held."""
        self.level = min(float(limit), self.level + max(0.0, now - self.at) * limit / period)
        self.at = max(self.at, now)
        return self.level - self.held


class RateLimiter:
    """``RateLimiter(rpm=None, tpm=None, *, period=60.0, redis=None, key="modelwire:ratelimit", clock=time.time)``.

    ``rpm`` / ``tpm``: requests and tokens per ``period`` seconds for each endpoint (a base
    URL and model), each a bucket that holds that many and refills continuously; None:
    learned from the provider's headers, else not limited. ``clock``: the seconds since the
    epoch (shared by every process of a Redis budget). Pass it to models with
    ``load_model(..., rate_limiter=limiter)``; one limiter serves many models.
    """

    def __init__(
        self,
        rpm: int | None = None,
        tpm: int | None = None,
        *,
        period: float = 60.0,
        redis: str | None = None,
        key: str = "modelwire:ratelimit",
        clock: Callable[[], float] = time.time,
    ) -> None:
        for name, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise E.ConfigError(f"RateLimiter({name}={value!r}): a limit is a whole number, at least 1")
        if not period > 0:
            raise E.ConfigError(f"RateLimiter(period={period!r}): seconds, more than 0")
        self.rpm: int | None = rpm
        self.tpm: int | None = tpm
        self.period: float = float(period)
        self.clock = clock
        self._learned: dict[str, dict[str, int]] = {}  # endpoint -> limits the headers gave
        self._local: dict[str, dict[str, _Bucket]] = {}  # endpoint -> "requests"/"tokens" -> bucket
        self._paused: dict[str, float] = {}  # endpoint -> wall time until which nothing is sent
        self._redis_url = redis
        self.key: str = key
        self._client: Any = None
        self._tasks: set[Any] = set()  # Redis writes under way (answered, settle, pause)

    def __repr__(self) -> str:
        where = f", redis={self._redis_url!r}" if self._redis_url else ""
        return f"RateLimiter(rpm={self.rpm}, tpm={self.tpm}, period={self.period:g}{where})"

    # -- taking a place ----------------------------------------------------------------------

    def limits(self, endpoint: str) -> tuple[int | None, int | None]:
        """The requests and tokens allowed per period for ``endpoint``: given, else learned."""
        learned = self._learned.get(endpoint, {})
        return self.rpm or learned.get("requests"), self.tpm or learned.get("tokens")

    async def acquire(self, endpoint: str, tokens: int, deadline: float | None = None) -> Permit:
        """A place for one request of about ``tokens`` tokens, once the budget has room;
        ``deadline``: a ``loop.time()`` the wait may not pass."""
        loop = asyncio.get_running_loop()
        waited = 0.0
        while True:
            wait, permit = await self.take(endpoint, tokens)
            if permit is not None:
                permit.waited = waited
                return permit
            if deadline is not None and loop.time() + wait > deadline:
                raise E.RateLimitError(
                    f"the rate limiter would wait {wait:.1f} s for {endpoint}, past the call's deadline"
                )
            log.info("rate limit: waiting %.2f s for %s (%d tokens)", wait, endpoint, tokens)
            await asyncio.sleep(wait)
            waited += wait

    async def take(self, endpoint: str, tokens: int) -> tuple[float, Permit | None]:
        """A place now, ``(0.0, permit)``, or the seconds until there may be one, ``(wait, None)``:
        one step of ``acquire``, which sleeps between them. A request larger than a bucket
        waits for the bucket to be full, and then goes alone."""
        rpm, tpm = self.limits(endpoint)
        now = self.clock()
        paused = self._paused.get(endpoint, 0.0)
        if paused > now:
            return paused - now, None
        if self._redis_url:
            return await self._take_redis(endpoint, tokens, rpm, tpm, now)
        if not rpm and not tpm:
            return 0.0, Permit(endpoint, tokens, at=now)  # nothing known to keep within
        buckets = self._local.setdefault(endpoint, {})
        costs = [(kind, limit, cost) for kind, limit, cost in (("requests", rpm, 1), ("tokens", tpm, tokens)) if limit]
        wait = 0.0
        for kind, limit, cost in costs:
            bucket = buckets.get(kind) or buckets.setdefault(kind, _Bucket(limit, now))
            free = bucket.free(limit, self.period, now)
            wait = max(wait, (min(cost, limit) - free) * self.period / limit)
        if wait > 0:
            return wait, None
        for kind, _, cost in costs:
            buckets[kind].held += cost
        return 0.0, Permit(endpoint, tokens, at=now)

    def answered(self, permit: Permit) -> None:
        """The request's answer began (or the request failed): what its place held leaves the
        bucket now, and refills from now on; the provider took it when the request arrived,
        which was before. Once per permit; a second call does nothing."""
        if not permit.in_flight:
            return
        permit.in_flight = False
        now = self.clock()
        if self._redis_url:
            self._spawn(self._charge_redis(permit.endpoint, 1, permit.tokens, permit.member, now))
        else:
            self._charge_local(permit.endpoint, {"requests": 1, "tokens": permit.tokens}, now, held=True)
        permit.at = now

    def settle(self, permit: Permit, used: int | None) -> None:
        """The tokens the request really used, taken where more than its estimate (a place never
        holds less than it reserved: what a provider counts against its limit is not always
        what it reports as used)."""
        if used is None or used <= permit.tokens:
            return
        now = self.clock()
        if self._redis_url:
            self._spawn(self._charge_redis(permit.endpoint, 0, used - permit.tokens, "", now))
        else:
            self._charge_local(permit.endpoint, {"tokens": used - permit.tokens}, now, held=False)

    def _charge_local(self, endpoint: str, costs: Mapping[str, int], now: float, *, held: bool) -> None:
        rpm, tpm = self.limits(endpoint)
        buckets = self._local.get(endpoint, {})
        for kind, limit in (("requests", rpm), ("tokens", tpm)):
            bucket = buckets.get(kind)
            if bucket is None or kind not in costs:
                continue
            if limit:
                bucket.free(limit, self.period, now)
            # At most one period's debt: an estimate far over the truth (base64 media counted
            # as text) waits one period at worst, never many.
            bucket.level = max(bucket.level - costs[kind], -limit) if limit else bucket.level - costs[kind]
            if held:
                bucket.held = max(0.0, bucket.held - costs[kind])

    # -- learning from the provider ----------------------------------------------------------

    def learn(self, endpoint: str, limits: Mapping[str, Any] | None) -> None:
        """What a response's rate-limit headers say (``WireProtocol.rate_limits``'s shape): the
        limits not given, and a pause until the reset where nothing is left, or for a
        ``retry_after``."""
        if not limits:
            return
        learned = self._learned.setdefault(endpoint, {})
        until = 0.0
        for kind in ("requests", "tokens"):
            entry = limits.get(kind)
            if not isinstance(entry, Mapping):
                continue
            if isinstance(entry.get("limit"), int):
                learned[kind] = entry["limit"]
            if entry.get("remaining") == 0 and isinstance(entry.get("reset"), str):
                until = max(until, _epoch(entry["reset"]))
        now = self.clock()
        retry = limits.get("retry_after")
        if isinstance(retry, (int, float)):
            until = max(until, now + float(retry))
        if until > now:
            self._paused[endpoint] = max(self._paused.get(endpoint, 0.0), until)
            if self._redis_url:
                self._pending_pause(endpoint, until, now)

    # -- Redis ---------------------------------------------------------------------------------

    def _redis(self) -> Any:
        if self._client is None:
            try:
                import redis.asyncio as redis
            except ImportError:
                raise E.ConfigError(
                    "RateLimiter(redis=...) needs the redis package: pip install 'modelwire[redis]'"
                ) from None
            self._client = redis.from_url(self._redis_url or "")
        return self._client

    async def _take_redis(
        self, endpoint: str, tokens: int, rpm: int | None, tpm: int | None, now: float
    ) -> tuple[float, Permit | None]:
        client = self._redis()
        key = f"{self.key}:{endpoint}"
        pause = await client.get(key + ":pause")
        if pause is not None and float(pause) > now:
            return float(pause) - now, None  # another process was told to wait
        if not rpm and not tpm:
            return 0.0, Permit(endpoint, tokens, at=now)  # nothing known to keep within
        member = f"{os.getpid()}-{next(_ids)}-{tokens}"
        args = (repr(now), repr(self.period), rpm or 0, tpm or 0, tokens, member, repr(HELD_AT_MOST))
        wait = float(await client.eval(_TAKE, 2, key, key + ":held", *args))
        if wait > 0:
            return wait, None
        return 0.0, Permit(endpoint, tokens, member=member, at=now)

    async def _charge_redis(self, endpoint: str, requests: int, tokens: int, member: str, now: float) -> None:
        rpm, tpm = self.limits(endpoint)
        if not rpm and not tpm and not member:
            return
        key = f"{self.key}:{endpoint}"
        args = (repr(now), repr(self.period), rpm or 0, tpm or 0, requests, tokens, member)
        await self._redis().eval(_CHARGE, 2, key, key + ":held", *args)

    def _pending_pause(self, endpoint: str, until: float, now: float) -> None:
        self._spawn(self._redis().set(f"{self.key}:{endpoint}:pause", str(until), px=max(1, int((until - now) * 1000))))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def written(self) -> None:
        """Once the Redis writes under way (an answer's or a settle's charge, a pause) are done."""
        tasks = list(self._tasks)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def aclose(self) -> None:
        await self.written()
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()


def _epoch(iso: str) -> float:
    """An ISO-8601 UTC time (``2026-12-04T05:00:00Z``) as seconds since the epoch."""
    try:
        return float(calendar.timegm(time.strptime(iso.strip()[:19], "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return 0.0


# The buckets in Redis: a hash per endpoint (each limit's level, and the time it is as of: each
# its own, since processes may know different limits, one learned from headers the other not) and a
# sorted set of the places in flight ("pid-n-tokens", scored by when the hold lapses). Both scripts
# refill to ``now`` first.
_REFILL = """
local key, held, now, period = KEYS[1], KEYS[2], tonumber(ARGV[1]), tonumber(ARGV[2])
local rpm, tpm = tonumber(ARGV[3]), tonumber(ARGV[4])
local state = redis.call('HMGET', key, 'requests', 'tokens', 'requests_at', 'tokens_at')
local function refilled(stored, stamp, limit)
  if limit <= 0 then return 0, now end
  local level, at = tonumber(stored) or limit, tonumber(stamp) or now
  return math.min(limit, level + math.max(0, now - at) * limit / period), math.max(at, now)
end
local requests, requests_at = refilled(state[1], state[3], rpm)
local tokens, tokens_at = refilled(state[2], state[4], tpm)
local function store()
  local full = 0
  if rpm > 0 then
    redis.call('HSET', key, 'requests', tostring(requests), 'requests_at', tostring(requests_at))
    full = math.max(full, (rpm - requests) * period / rpm)
  end
  if tpm > 0 then
    redis.call('HSET', key, 'tokens', tostring(tokens), 'tokens_at', tostring(tokens_at))
    full = math.max(full, (tpm - tokens) * period / tpm)
  end
  -- never sooner than it was: a process that knows one limit keeps the other's level alive
  redis.call('PEXPIRE', key, math.max(redis.call('PTTL', key), math.ceil((full + period) * 1000)))
end
"""

_TAKE = (
    _REFILL
    + """
local want, member = tonumber(ARGV[5]), ARGV[6]
redis.call('ZREMRANGEBYSCORE', held, '-inf', now)
local places = redis.call('ZRANGE', held, 0, -1)
local held_tokens = 0
for _, place in ipairs(places) do held_tokens = held_tokens + tonumber(string.match(place, '(%d+)$')) end
local wait = 0
if rpm > 0 then wait = math.max(wait, (1 - (requests - #places)) * period / rpm) end
if tpm > 0 then wait = math.max(wait, (math.min(want, tpm) - (tokens - held_tokens)) * period / tpm) end
if wait > 0 then return tostring(wait) end
redis.call('ZADD', held, now + tonumber(ARGV[7]), member)
redis.call('PEXPIRE', held, math.ceil(tonumber(ARGV[7]) * 1000) + 1000)
store()
return '0'
"""
)

_CHARGE = (
    _REFILL
    + """
if rpm > 0 then requests = math.max(requests - tonumber(ARGV[5]), -rpm) end
if tpm > 0 then tokens = math.max(tokens - tonumber(ARGV[6]), -tpm) end
if ARGV[7] ~= '' then redis.call('ZREM', held, ARGV[7]) end
store()
return 1
"""
)
