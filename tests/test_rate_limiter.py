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
    """A token budget per sliding period, as a provider keeps one: what a request used
    counts from the moment it arrived; past the budget, 429 with retry-after."""

    def __init__(self, budget: int = BUDGET, period: float = PERIOD, send_limits: bool = True) -> None:
        self.budget, self.period, self.send_limits = budget, period, send_limits
        self.lock = threading.Lock()
        self.spent: list[tuple[float, int]] = []
        self.arrivals: list[float] = []
        self.refused = 0

    def cost(self, body: dict) -> int:
        prompt = math.ceil(len(json.dumps(body["messages"])) / 4)
        return prompt + min(body.get("max_tokens") or MAX_TOKENS, MAX_TOKENS)

    def __call__(self, request):
        body = request["json"]
        now = time.monotonic()
        cost = self.cost(body)
        with self.lock:
            self.spent = [(t, n) for t, n in self.spent if t > now - self.period]
            used = sum(n for _, n in self.spent)
            if used + cost > self.budget:
                self.refused += 1
                wait = self.spent[0][0] + self.period - now
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
            self.spent.append((now, cost))
            self.arrivals.append(now)
            remaining = self.budget - used - cost
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

    def in_first_period(self) -> int:
        first = self.arrivals[0]
        return sum(1 for t in self.arrivals if t < first + self.period * 0.9)


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
    # The first period is used as fully as the limiter's own estimate allows: no place left empty.
    assert server_budget.in_first_period() == BUDGET // estimate
    waited = [end.metadata.get("rate_limit_wait") for end in ends]
    assert sum(1 for w in waited if w) == 50 - BUDGET // estimate  # each wait is shown on its call


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
            retry=RetryPolicy(max_retries=3, initial_delay=0.01),
        )
        replies = asyncio.run(_calls(model, 30))
    assert all(hasattr(r, "content") for r in replies), [r for r in replies if not hasattr(r, "content")][:1]
    # Without the pause, each of the 30 would meet 429s until its retries ran out.
    assert server_budget.refused < 30


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
            timeouts={"total": 2.0},
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
        calls = (model.complete(prompt, options={{"max_tokens": {max_tokens}}}) for _ in range(25))
        replies = await asyncio.gather(*calls, return_exceptions=True)
        await limiter.aclose()
        print(sum(hasattr(r, "content") for r in replies))

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
    assert [o[0].strip() for o in outs] == ["25", "25"], [o[1][-800:] for o in outs]
    assert server_budget.refused == 0 and len(server_budget.arrivals) == 50
    # One budget for both: the first period holds what one budget allows, not twice that.
    assert server_budget.in_first_period() == BUDGET // estimate
