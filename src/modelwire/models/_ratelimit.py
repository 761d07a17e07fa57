"""A rate limiter that models share: requests and tokens per period, per endpoint, that waits
instead of sending into a 429.

Each request first takes a place within the budget (``acquire``): its estimated tokens (the
request's size and its output limit) against ``tpm``, and one request against ``rpm``, over
the last ``period`` seconds, counted from when its answer began (``answered``). When the
answer ends, the place holds the tokens really used where they were more (``settle``). The provider's rate-limit headers
teach it (``learn``): the limits it did not
know, and a pause until the reset when the provider says nothing is left, or for the
``retry-after`` of a 429. In one process the budget lives in memory; with ``redis=URL`` it
lives in Redis and every process with the same ``key`` shares it (a sorted set per endpoint,
changed only by Lua scripts, so two processes never both take the last place).

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
from collections import deque
from dataclasses import dataclass
from typing import Any, Mapping

from .. import errors as E

__all__ = ["RateLimiter", "Permit"]

log = logging.getLogger("modelwire.ratelimit")
_ids = itertools.count(1)


@dataclass
class Permit:
    """A place taken in the budget: settle it with the tokens really used."""

    endpoint: str
    tokens: int
    member: str = ""  # its entry (Redis)
    at: float = 0.0
    waited: float = 0.0


class RateLimiter:
    """``RateLimiter(rpm=None, tpm=None, *, period=60.0, redis=None, key="modelwire:ratelimit")``.

    ``rpm`` / ``tpm``: requests and tokens per ``period`` seconds for each endpoint (a base
    URL and model); None: learned from the provider's headers, else not limited. Pass it to
    models with ``load_model(..., rate_limiter=limiter)``; one limiter serves many models.
    """

    def __init__(
        self,
        rpm: int | None = None,
        tpm: int | None = None,
        *,
        period: float = 60.0,
        redis: str | None = None,
        key: str = "modelwire:ratelimit",
    ) -> None:
        for name, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise E.ConfigError(f"RateLimiter({name}={value!r}): a limit is a whole number, at least 1")
        if not period > 0:
            raise E.ConfigError(f"RateLimiter(period={period!r}): seconds, more than 0")
        self.rpm, self.tpm, self.period = rpm, tpm, float(period)
        self._learned: dict[str, dict[str, int]] = {}  # endpoint -> limits the headers gave
        self._local: dict[str, deque[list[Any]]] = {}  # endpoint -> [at, tokens] of each place
        self._paused: dict[str, float] = {}  # endpoint -> wall time until which nothing is sent
        self._redis_url, self.key = redis, key
        self._client: Any = None
        self._tasks: set[Any] = set()  # Redis writes under way (settle, pause)

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
            wait, permit = await self._try(endpoint, tokens)
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

    async def _try(self, endpoint: str, tokens: int) -> tuple[float, Permit | None]:
        rpm, tpm = self.limits(endpoint)
        now = time.time()
        paused = self._paused.get(endpoint, 0.0)
        if paused > now:
            return paused - now, None
        if self._redis_url:
            return await self._try_redis(endpoint, tokens, rpm, tpm, now)
        log_ = self._local[endpoint] = deque(e for e in self._local.get(endpoint, ()) if e[0] > now - self.period)
        wait = _wait(sorted((at, n) for at, n in log_), tokens, rpm, tpm, now, self.period)
        if wait > 0:
            return wait, None
        entry = [now, tokens]
        log_.append(entry)
        return 0.0, Permit(endpoint, tokens, member=str(id(entry)), at=now)

    def answered(self, permit: Permit) -> None:
        """The request's answer began: its place counts from now, which is after the server
        counted it (a place timed from before sending would leave the budget early, while the
        server still counts the request)."""
        now = time.time()
        if self._redis_url:
            self._spawn(self._redis().zadd(f"{self.key}:{permit.endpoint}", {permit.member: now}, xx=True))
        else:
            for entry in self._local.get(permit.endpoint, ()):
                if str(id(entry)) == permit.member:
                    entry[0] = now
                    break
        permit.at = now

    def settle(self, permit: Permit, used: int | None) -> None:
        """The tokens the request really used, where more than its estimate (a place never
        holds less than it reserved: what a provider counts against its limit is not always
        what it reports as used)."""
        if used is None or used <= permit.tokens:
            return
        if self._redis_url:
            self._pending_settle(permit, used)
            return
        for entry in self._local.get(permit.endpoint, ()):
            if str(id(entry)) == permit.member:
                entry[1] = used
                break

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
        retry = limits.get("retry_after")
        if isinstance(retry, (int, float)):
            until = max(until, time.time() + float(retry))
        if until > time.time():
            self._paused[endpoint] = max(self._paused.get(endpoint, 0.0), until)
            if self._redis_url:
                self._pending_pause(endpoint, until)

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

    async def _try_redis(
        self, endpoint: str, tokens: int, rpm: int | None, tpm: int | None, now: float
    ) -> tuple[float, Permit | None]:
        client = self._redis()
        key = f"{self.key}:{endpoint}"
        pause = await client.get(key + ":pause")
        if pause is not None and float(pause) > now:
            return float(pause) - now, None
        member = f"{os.getpid()}-{next(_ids)}-{tokens}"
        wait = float(await client.eval(_TAKE, 1, key, now, self.period, rpm or 0, tpm or 0, tokens, member))
        if wait > 0:
            return wait, None
        return 0.0, Permit(endpoint, tokens, member=member, at=now)

    def _pending_settle(self, permit: Permit, used: int) -> None:
        self._spawn(
            self._redis().eval(
                _SETTLE,
                1,
                f"{self.key}:{permit.endpoint}",
                permit.member,
                permit.member.rsplit("-", 1)[0] + f"-{used}",
                permit.at,
            )
        )

    def _pending_pause(self, endpoint: str, until: float) -> None:
        self._spawn(
            self._redis().set(f"{self.key}:{endpoint}:pause", str(until), px=max(1, int((until - time.time()) * 1000)))
        )

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        tasks = list(self._tasks)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()


def _wait(
    entries: list[tuple[float, int]], tokens: int, rpm: int | None, tpm: int | None, now: float, period: float
) -> float:
    """Seconds until one more request of ``tokens`` fits the places of the last period."""
    wait = 0.0
    if rpm and len(entries) + 1 > rpm:
        wait = max(wait, entries[len(entries) - rpm][0] + period - now)
    if tpm and entries:
        used = sum(n for _, n in entries)
        need = used + min(tokens, tpm) - tpm  # a request larger than the budget goes alone
        for at, n in entries:
            if need <= 0:
                break
            need -= n
            wait = max(wait, at + period - now)
    return max(wait, 0.0)


def _epoch(iso: str) -> float:
    """An ISO-8601 UTC time (``2026-12-04T05:00:00Z``) as seconds since the epoch."""
    try:
        return float(calendar.timegm(time.strptime(iso.strip()[:19], "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return 0.0


# The budget in Redis: one sorted set per endpoint, each place a member "pid-n-tokens" scored by
# its time. Taken (or refused with the wait) in one script, so no two processes take the last place.
_TAKE = """
local key, now, period = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
local rpm, tpm, tokens, member = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - period)
local places = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
local n = #places / 2
local wait = 0
if rpm > 0 and n + 1 > rpm then
  wait = math.max(wait, tonumber(places[2 * (n - rpm + 1)]) + period - now)
end
if tpm > 0 and n > 0 then
  local used = 0
  for i = 1, #places, 2 do used = used + tonumber(string.match(places[i], '(%d+)$')) end
  local need = used + math.min(tokens, tpm) - tpm
  for i = 1, #places, 2 do
    if need <= 0 then break end
    need = need - tonumber(string.match(places[i], '(%d+)$'))
    wait = math.max(wait, tonumber(places[i + 1]) + period - now)
  end
end
if wait > 0 then return tostring(wait) end
redis.call('ZADD', key, now, member)
redis.call('PEXPIRE', key, math.ceil(period * 2000))
return '0'
"""

_SETTLE = """
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then redis.call('ZADD', KEYS[1], tonumber(ARGV[3]), ARGV[2]) end
return 1
"""
