"""Rate-limit headers, as each provider spells them, in one shape: on the call's
``MODEL_CALL_END`` metadata when it succeeds, on the error when it does not. A real server on
127.0.0.1 sends the real header names."""

from __future__ import annotations

import asyncio
import time

import pytest

from modelwire.errors import RateLimitError
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy
from modelwire.testing import ProviderServer, Reply
from modelwire.testing.sse import body as sse_body

ANTHROPIC = {  # https://docs.anthropic.com/en/api/rate-limits#response-headers
    "anthropic-ratelimit-requests-limit": "50",
    "anthropic-ratelimit-requests-remaining": "49",
    "anthropic-ratelimit-requests-reset": "2026-12-04T01:00:00Z",
    "anthropic-ratelimit-input-tokens-limit": "30000",
    "anthropic-ratelimit-input-tokens-remaining": "29000",
    "anthropic-ratelimit-input-tokens-reset": "2026-12-04T01:00:02Z",
    "anthropic-ratelimit-output-tokens-limit": "8000",
    "anthropic-ratelimit-output-tokens-remaining": "7990",
    "anthropic-ratelimit-output-tokens-reset": "2026-12-04T01:00:01Z",
}
OPENAI = {  # https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers
    "x-ratelimit-limit-requests": "60",
    "x-ratelimit-remaining-requests": "0",
    "x-ratelimit-reset-requests": "1m30s",
    "x-ratelimit-limit-tokens": "150000",
    "x-ratelimit-remaining-tokens": "149984",
    "x-ratelimit-reset-tokens": "6ms",
    "retry-after": "90",
}


def test_anthropics_headers_reach_the_calls_end_in_one_shape():
    with ProviderServer() as server:
        server.script(
            Reply(
                body=sse_body("anthropic", ("text", "Hi.")), headers={"content-type": "text/event-stream", **ANTHROPIC}
            )
        )
        model = load_model(
            "anthropic:claude-sonnet-4-5", api_key="sk-test", base_url=server.url, retry=RetryPolicy(max_retries=0)
        )
        events = []

        async def run():
            async for ev in model.stream([UserMsg("u", "hi")], reply_id="r"):
                events.append(ev)

        asyncio.run(run())
    end = events[-1]
    assert end.type == "MODEL_CALL_END" and end.metadata["rate_limits"] == {
        "requests": {"limit": 50, "remaining": 49, "reset": "2026-12-04T01:00:00Z"},
        "input_tokens": {"limit": 30000, "remaining": 29000, "reset": "2026-12-04T01:00:02Z"},
        "output_tokens": {"limit": 8000, "remaining": 7990, "reset": "2026-12-04T01:00:01Z"},
    }


@pytest.mark.parametrize("spec", ["openai:gpt-4.1", "openai-responses:gpt-4.1"])
def test_openais_headers_on_a_429_are_on_the_error(spec):
    with ProviderServer() as server:
        body = (
            b'{"error": {"message": "Rate limit reached for requests", "type": "requests", "code": '
            b'"rate_limit_exceeded"}}'
        )
        server.script(Reply(status=429, body=body, headers={"content-type": "application/json", **OPENAI}))
        model = load_model(spec, api_key="sk-test", base_url=server.url + "/v1", retry=RetryPolicy(max_retries=0))
        before = time.time()
        with pytest.raises(RateLimitError) as raised:
            asyncio.run(model.complete([UserMsg("u", "hi")]))
    limits = raised.value.rate_limits
    assert (
        limits["requests"]["limit"] == 60
        and limits["requests"]["remaining"] == 0
        and limits["tokens"]["remaining"] == 149984
    )
    assert limits["retry_after"] == 90.0
    reset = time.mktime(time.strptime(limits["requests"]["reset"], "%Y-%m-%dT%H:%M:%SZ")) - time.mktime(time.gmtime(0))
    assert before + 88 <= reset <= time.time() + 92  # "1m30s" from the answer, as a time


def test_a_response_without_such_headers_says_nothing():
    with ProviderServer() as server:
        server.script(Reply(body=sse_body("anthropic", ("text", "Hi.")), headers={"content-type": "text/event-stream"}))
        model = load_model("anthropic:claude-sonnet-4-5", api_key="sk-test", base_url=server.url)

        async def run():
            return [ev async for ev in model.stream([UserMsg("u", "hi")], reply_id="r")]

        events = asyncio.run(run())
    assert events[-1].type == "MODEL_CALL_END" and "rate_limits" not in events[-1].metadata


MISTRAL = {  # the names Mistral sends (mistralai/client-ts#169, 2026-02-12): per minute, no reset
    "x-ratelimit-limit-tokens-minute": "5000000",
    "x-ratelimit-remaining-tokens-minute": "4999911",
    "x-ratelimit-tokens-query-cost": "52",
    "x-ratelimit-limit-req-minute": "720",
    "x-ratelimit-remaining-req-minute": "717",
}

# A Gemini 429: no rate-limit headers, the wait in a google.rpc.RetryInfo detail (the shape of
# vercel/ai's packages/google/src/__fixtures__/google-429-retry-info.json).
GEMINI_429 = {
    "error": {
        "code": 429,
        "status": "RESOURCE_EXHAUSTED",
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                        "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                    }
                ],
            },
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34.4s"},
        ],
    }
}


def test_mistrals_per_minute_headers_in_the_same_shape():
    with ProviderServer() as server:
        server.script(
            Reply(
                body=sse_body("openai-chat", ("text", "Hi.")), headers={"content-type": "text/event-stream", **MISTRAL}
            )
        )
        model = load_model("mistral:mistral-medium-latest", api_key="sk-test", base_url=server.url + "/v1")

        async def run():
            return [ev async for ev in model.stream([UserMsg("u", "hi")], reply_id="r")]

        events = asyncio.run(run())
    assert events[-1].metadata["rate_limits"] == {
        "requests": {"limit": 720, "remaining": 717},
        "tokens": {"limit": 5000000, "remaining": 4999911},
    }


def test_geminis_retry_info_is_the_errors_wait_and_is_honoured():
    import json

    from modelwire.testing import error_reply

    with ProviderServer() as server:
        server.script(error_reply(429, GEMINI_429))
        model = load_model(
            "google:gemini-2.5-flash", api_key="k", base_url=server.url, retry=RetryPolicy(max_retries=0)
        )
        with pytest.raises(RateLimitError, match="exceeded your current quota") as raised:
            asyncio.run(model.complete([UserMsg("u", "hi")]))
        assert raised.value.rate_limits == {"retry_after": 34.4} and raised.value.retry_after == 34.4
        # The retry policy waits what the body says (a short one here), then the call succeeds.
        short = json.loads(json.dumps(GEMINI_429))
        short["error"]["details"][1]["retryDelay"] = "0.2s"
        server.script(
            error_reply(429, short),
            Reply(body=sse_body("gemini", ("text", "Hi.")), headers={"content-type": "text/event-stream"}),
        )
        waits = []

        async def sleep(seconds):
            waits.append(seconds)

        retried = load_model(
            "google:gemini-2.5-flash", api_key="k", base_url=server.url, retry=RetryPolicy(max_retries=1)
        )
        retried._sleep = sleep
        msg = asyncio.run(retried.complete([UserMsg("u", "hi")]))
    assert msg.get_text_content().strip() == "Hi." and waits == [0.2]


def test_openrouters_headers_on_a_429():
    """OpenRouter's X-RateLimit-* on a 429 (https://openrouter.ai/docs/api-reference/limits): requests per
    interval, the reset in epoch milliseconds."""
    from modelwire.testing import error_reply

    with ProviderServer() as server:
        headers = {"X-RateLimit-Limit": "20", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1796356800000"}
        server.script(
            error_reply(
                429, {"error": {"message": "Rate limit exceeded: free-models-per-min", "code": 429}}, headers=headers
            )
        )
        model = load_model(
            "openrouter:meta-llama/llama-4-scout:free",
            api_key="sk-or-test",
            base_url=server.url + "/api/v1",
            retry=RetryPolicy(max_retries=0),
        )
        with pytest.raises(RateLimitError) as raised:
            asyncio.run(model.complete([UserMsg("u", "hi")]))
    assert raised.value.rate_limits == {"requests": {"limit": 20, "remaining": 0, "reset": "2026-12-04T04:00:00Z"}}
