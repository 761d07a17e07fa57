"""``RateLimiter``: calls wait for the budget instead of sending into a 429.

A local server keeps a real token budget per period (each request costs the tokens it reports
as used: its prompt's characters / 4, and the output it writes, as much as ``max_tokens``
allows), answers 429 with ``retry-after`` past it, and sends OpenAI's rate-limit headers on
every answer. 50 concurrent calls under a limiter never get a 429, and the first period is
used to the full (counted by the server, not timed); with two processes and a real
``redis-server`` the budget is shared. The limiter learns limits it was not given from the
headers, and a wait past the call's deadline is refused before anything is sent."""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from modelwire.errors import ConfigError, RateLimitError
from modelwire.message import UserMsg
from modelwire.models import RateLimiter, load_model
from modelwire.models.transport import RetryPolicy
from modelwire.testing import ProviderServer, error_reply
from modelwire.testing.server import Reply
from modelwire.testing.sse import body as sse_body
from test_serve_redis import REDIS, redis_url  # noqa: F401 - the fixture

PERIOD = 1.0
BUDGET = 1000  # tokens per period
MAX_TOKENS = 40
PROMPT = [UserMsg("u", "What is the weather in Paris today? " * 4)]


class BudgetServer:
    """A token bucket, as a provider keeps one: it holds ``budget`` tokens and refills
    continuously, ``budget`` per ``period``; a request takes what it costs when it arrives, and
    past what the bucket holds gets a 429 with retry-after."""

    def __init__(self, budget: int = BUDGET, period: float = PERIOD, send_limits: bool = True) -> None:
        self.budget, self.period, self.send_limits = budget, period, send_limits
        self.lock = threading.Lock()
        self.level, self.at = float(budget), time.monotonic()
        self.arrivals: list[float] = []
        self.refused = 0

    def cost(self, body: dict) -> int:
        prompt = math.ceil(len(json.dumps(body["messages"])) / 4)
        return prompt + min(body.get("max_tokens") or MAX_TOKENS, MAX_TOKENS)

    def __call__(self, request):
        body = request["json"]
        cost = self.cost(body)
        with self.lock:
            now = time.monotonic()
            self.level = min(self.budget, self.level + (now - self.at) * self.budget / self.period)
            self.at = now
            if self.level < cost:
                self.refused += 1
                wait = (cost - self.level) * self.period / self.budget
                return error_reply(
                    429,
                    {
                        "error": {
                            "message": "Rate limit reached for tokens per min",
                            "type": "tokens",
                            "code": "rate_limit_exceeded",
                        }
                    },
                    headers={"retry-after": f"{max(wait, 0.01):.3f}"},
                )
            self.level -= cost
            self.arrivals.append(now)
            remaining = int(self.level)
        headers = {"content-type": "text/event-stream"}
        if self.send_limits:
            headers.update(
                {
                    "x-ratelimit-limit-tokens": str(self.budget),
                    "x-ratelimit-remaining-tokens": str(remaining),
                    "x-ratelimit-reset-tokens": f"{self.period:g}s",
                }
            )
        prompt = cost - MAX_TOKENS
        return Reply(body=sse_body("openai-chat", ("text", "Sunny."), usage=(prompt, MAX_TOKENS)), headers=headers)


def _estimate(model) -> int:
    """What the limiter reserves for one request: the body's bytes / 4 and its max_tokens."""
    body, _ = model.build_request(PROMPT, options={"max_tokens": MAX_TOKENS})
    return len(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()) // 4 + MAX_TOKENS


async def _calls(model, n: int):
    return await asyncio.gather(
        *(model.complete(PROMPT, options={"max_tokens": MAX_TOKENS}) for _ in range(n)), return_exceptions=True
    )


def test_fifty_calls_under_a_small_token_budget_never_get_a_429(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server_budget = BudgetServer()
    with ProviderServer() as server:
        server.respond = server_budget
        limiter = RateLimiter(tpm=BUDGET, period=PERIOD)
        model = load_model(
            "openai:gpt-4.1", base_url=server.url + "/v1", rate_limiter=limiter, retry=RetryPolicy(max_retries=0)
        )
        ends = asyncio.run(_ends(model, 50))
        estimate = _estimate(model)
    assert [type(r).__name__ for r in ends if isinstance(r, BaseException)] == []
    assert server_budget.refused == 0 and len(server_budget.arrivals) == 50
    # The full bucket is used at once, as far as the limiter's own estimate allows (and what
    # refilled meanwhile); every other call waited, and its wait is shown on its call.
    waited = [end.metadata.get("rate_limit_wait") for end in ends]
    assert sum(1 for w in waited if not w) >= BUDGET // estimate


async def _ends(model, n: int):
    """The MODEL_CALL_END of each of ``n`` concurrent calls (or its error)."""

    async def one():
        async for event in model.stream(PROMPT, options={"max_tokens": MAX_TOKENS}):
            if event.type == "MODEL_CALL_END":
                end = event
        return end

    return await asyncio.gather(*(one() for _ in range(n)), return_exceptions=True)


def test_without_a_limiter_the_same_calls_meet_429s(monkeypatch):
    """The control: the budget is real, and the calls above would pass it."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server_budget = BudgetServer()
    with ProviderServer() as server:
        server.respond = server_budget
        model = load_model("openai:gpt-4.1", base_url=server.url + "/v1", retry=RetryPolicy(max_retries=0))
        replies = asyncio.run(_calls(model, 50))
    assert server_budget.refused > 0 and sum(isinstance(r, RateLimitError) for r in replies) == server_budget.refused


def test_the_limits_are_learned_from_the_headers(monkeypatch):
    """Given no limits, the limiter takes them from the first answer's headers, and waits
    where the provider said nothing is left until the reset."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server_budget = BudgetServer()
    with ProviderServer() as server:
        server.respond = server_budget
        limiter = RateLimiter(period=PERIOD)
        model = load_model(
            "openai:gpt-4.1", base_url=server.url + "/v1", rate_limiter=limiter, retry=RetryPolicy(max_retries=0)
        )
        asyncio.run(model.complete(PROMPT, options={"max_tokens": MAX_TOKENS}))
        assert limiter.limits(f"{server.url}/v1|gpt-4.1") == (None, BUDGET)
        replies = asyncio.run(_calls(model, 30))
    assert all(hasattr(r, "content") for r in replies) and server_budget.refused == 0


def test_a_429_pauses_every_caller_of_the_endpoint(monkeypatch):
    """A 429's retry-after (here: a budget the limiter was not told of, and no headers on
    success) stops the others from sending until it has passed; the retry then succeeds."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server_budget = BudgetServer(send_limits=False)
    with ProviderServer() as server:
        server.respond = server_budget
        limiter = RateLimiter(period=PERIOD)
        model = load_model(
            "openai:gpt-4.1",
            base_url=server.url + "/v1",
            rate_limiter=limiter,
            retry=RetryPolicy(max_retries=5, initial_delay=0.01),
        )
        replies = asyncio.run(_calls(model, 12))
    # The bucket holds 9 of them; the others are refused once, then sent one by one as it
    # refills (each 429's retry-after is the time one more fits). Without the pause, each would
    # retry at its own backoff (0.01 s, 0.02 s ...), before the bucket refilled.
    assert all(hasattr(r, "content") for r in replies), [r for r in replies if not hasattr(r, "content")][:1]
    assert server_budget.refused < 12


def test_a_wait_past_the_deadline_is_refused_before_sending(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server_budget = BudgetServer()
    with ProviderServer() as server:
        server.respond = server_budget
        limiter = RateLimiter(rpm=1, period=30.0)
        model = load_model(
            "openai:gpt-4.1",
            base_url=server.url + "/v1",
            rate_limiter=limiter,
            timeouts={"total": 10.0},  # the first call must come through; the second would wait ~30 s
            retry=RetryPolicy(max_retries=0),
        )
        asyncio.run(model.complete(PROMPT))
        with pytest.raises(RateLimitError, match="past the call's deadline"):
            asyncio.run(model.complete(PROMPT))
    assert len(server_budget.arrivals) == 1


def test_bad_limits_are_refused():
    for bad in ({"rpm": 0}, {"tpm": -5}, {"rpm": 2.5}, {"period": 0}):
        with pytest.raises(ConfigError):
            RateLimiter(**bad)
    with pytest.raises(ConfigError, match="rate_limiter"):
        load_model("openai:gpt-4.1", api_key="k", rate_limiter="fast")


_WORKER = textwrap.dedent(
    """
    import asyncio, sys
    from modelwire.message import UserMsg
    from modelwire.models import RateLimiter, load_model
    from modelwire.models.transport import RetryPolicy

    async def main():
        limiter = RateLimiter(tpm={budget}, period={period}, redis=sys.argv[2])
        model = load_model("openai:gpt-4.1", base_url=sys.argv[1], api_key="sk-test", rate_limiter=limiter,
                           retry=RetryPolicy(max_retries=0))
        prompt = [UserMsg("u", "What is the weather in Paris today? " * 4)]

        async def one():
            async for event in model.stream(prompt, options={{"max_tokens": {max_tokens}}}):
                if event.type == "MODEL_CALL_END":
                    return not event.metadata.get("rate_limit_wait")

        replies = await asyncio.gather(*(one() for _ in range(25)), return_exceptions=True)
        await limiter.aclose()
        print(sum(isinstance(r, bool) for r in replies), sum(r is True for r in replies))

    asyncio.run(main())
    """
)


@pytest.mark.skipif(REDIS is None, reason="needs redis-server (apt-get install redis-server; .ci/run installs it)")
def test_two_processes_share_one_budget_through_redis(redis_url, monkeypatch):  # noqa: F811 - the fixture
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server_budget = BudgetServer()
    code = _WORKER.format(budget=BUDGET, period=PERIOD, max_tokens=MAX_TOKENS)
    with ProviderServer() as server:
        server.respond = server_budget
        env = {**os.environ, "MODELWIRE_DEBUG": "0"}
        workers = [
            subprocess.Popen(
                [sys.executable, "-c", code, server.url + "/v1", redis_url],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for _ in range(2)
        ]
        outs = [w.communicate(timeout=120) for w in workers]
        estimate = _estimate(load_model("openai:gpt-4.1", base_url=server.url + "/v1"))
    counts = [o[0].split() for o in outs]
    assert [c[0] for c in counts] == ["25", "25"], [o[1][-800:] for o in outs]
    # One bucket for both: two buckets of their own would send twice what the provider's holds
    # at once, and meet 429s. The shared one is used to the full before anyone waits.
    assert server_budget.refused == 0 and len(server_budget.arrivals) == 50
    assert sum(int(c[1]) for c in counts) >= BUDGET // estimate


class Clock:
    """The limiter's clock, set by the test."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


async def _admitted(limiter: RateLimiter, clock: Clock, calls: int, tokens: int) -> list[float]:
    """When each of ``calls`` callers, all asking at 0, gets its place, on ``clock``: what
    ``acquire`` does (take a place, else come back after the wait it was given), without the
    sleeping. Each answer begins as its place is taken."""
    start, pending, admitted = clock.now, [(clock.now, i) for i in range(calls)], []
    while pending:
        pending.sort()
        clock.now, caller = pending.pop(0)
        wait, permit = await limiter.take("api|model", tokens)
        if permit is None:
            pending.append((clock.now + wait, caller))
            continue
        limiter.answered(permit)
        await limiter.written()
        admitted.append(clock.now - start)
    await limiter.aclose()
    return admitted


def _assert_the_bucket_refills_continuously(admitted: list[float]) -> None:
    # 3,200 tokens at once, then 53.3 a second: 200 more every 3.75 s. A count of fixed minutes
    # sends 16 at once and the other 4 a minute later.
    assert admitted[:16] == [0.0] * 16
    assert admitted[16:] == pytest.approx([3.75, 7.5, 11.25, 15.0])


def test_twenty_calls_under_tpm_3200_are_all_sent_within_15_seconds():
    clock = Clock()
    limiter = RateLimiter(tpm=3200, clock=clock)
    _assert_the_bucket_refills_continuously(asyncio.run(_admitted(limiter, clock, 20, 200)))


@pytest.mark.skipif(REDIS is None, reason="needs redis-server (apt-get install redis-server; .ci/run installs it)")
def test_the_redis_bucket_refills_continuously_too(redis_url):  # noqa: F811 - the fixture
    clock = Clock()
    limiter = RateLimiter(tpm=3200, clock=clock, redis=redis_url, key="test:bucket")
    _assert_the_bucket_refills_continuously(asyncio.run(_admitted(limiter, clock, 20, 200)))


async def _held(limiter: RateLimiter, clock: Clock) -> list[float]:
    """A place in flight holds its tokens: they refill only once its answer began; a request
    that used more than it reserved takes the rest when it ends."""
    first = (await limiter.take("api|model", 1000))[1]
    clock.now += 30
    waits = [(await limiter.take("api|model", 1))[0]]  # in flight for 30 s: nothing refilled
    limiter.answered(first)
    await limiter.written()
    clock.now += 30
    waits.append((await limiter.take("api|model", 501))[0])  # 500 refilled since the answer
    second = (await limiter.take("api|model", 400))[1]
    limiter.answered(second)
    limiter.settle(second, 490)
    await limiter.written()
    waits.append((await limiter.take("api|model", 11))[0])  # 100 left, less the 90 more it used
    await limiter.aclose()
    return waits


@pytest.mark.parametrize("shared", [False, True], ids=["in-process", "redis"])
def test_a_place_in_flight_holds_its_tokens_until_its_answer(shared, request):
    if shared and REDIS is None:
        pytest.skip("needs redis-server (apt-get install redis-server; .ci/run installs it)")
    clock = Clock()
    where = {"redis": request.getfixturevalue("redis_url"), "key": "test:held"} if shared else {}
    limiter = RateLimiter(tpm=1000, clock=clock, **where)
    assert asyncio.run(_held(limiter, clock)) == pytest.approx([0.06, 0.06, 0.06])  # one token's refill: 60 s / 1000


def test_one_estimate_far_over_the_truth_costs_one_period_at_most():
    """An estimate counts a request's base64 media as text: one such request must not hold
    the endpoint for half an hour (found by an independent review)."""

    async def run() -> float:
        clock = Clock()
        limiter = RateLimiter(tpm=30000, clock=clock)
        wait, permit = await limiter.take("api|model", 1_000_000)
        assert permit is not None, wait
        limiter.answered(permit)
        limiter.settle(permit, 1500)
        await limiter.written()
        clock.now += 60.0
        wait, permit = await limiter.take("api|model", 100)
        await limiter.aclose()
        return 0.0 if permit is not None else wait

    assert asyncio.run(run()) <= 60.0  # it was 1,880 s


@pytest.mark.skipif(REDIS is None, reason="needs redis-server (apt-get install redis-server; .ci/run installs it)")
def test_processes_that_know_different_limits_keep_each_others_buckets(redis_url):  # noqa: F811 - the fixture
    """One process knows the endpoint's requests per minute, another its tokens per minute (one
    was given it, the other learned it from headers): each one's visit refills only the bucket
    it knows, and must not take from the other its refill time nor its life in Redis."""
    import redis as redis_sync

    async def scenario() -> tuple[float, int]:
        clock = Clock()
        tokens = RateLimiter(tpm=600, clock=clock, redis=redis_url, key="test:mixed")
        requests = RateLimiter(rpm=100, clock=clock, redis=redis_url, key="test:mixed")
        first = (await tokens.take("api|model", 600))[1]
        tokens.answered(first)  # the whole token bucket spent at 0 s
        await tokens.written()
        clock.now += 30
        place = (await requests.take("api|model", 1))[1]
        requests.answered(place)
        await requests.written()
        ttl = redis_sync.Redis.from_url(redis_url).pttl("test:mixed:api|model")
        wait = (await tokens.take("api|model", 300))[0]  # 30 s at 10 tokens a second: 300 back
        await tokens.aclose()
        await requests.aclose()
        return wait, ttl

    wait, ttl = asyncio.run(scenario())
    assert wait == 0.0
    assert ttl > 60_000 + 30_000  # the token bucket, empty at 0 s, is full at 60 s: kept past then
