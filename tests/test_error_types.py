"""Every error says what it is: real error bodies providers sent (each cited: the public issue
that quotes it, with its date), replayed by the local provider server through the real
transport, give the right typed error. The provider's own error type is read before its
words; a 429 no wait lifts is not retried; a wait the body names is read; a gateway's
upstream reason is in the message."""

from __future__ import annotations

import asyncio
import json

import pytest

from modelwire import errors as E
from modelwire.adapters import encode_frame
from modelwire.message import UserMsg
from modelwire.models import load_model
from modelwire.models.transport import RetryPolicy
from modelwire.protocols._openai_errors import wait_in
from modelwire.testing import ProviderServer
from modelwire.testing.server import Reply, error_reply
from modelwire.testing.sse import body as fake_body, stream_reply

QUESTION = [UserMsg("user", "Hello?")]
RETRY_ONCE = RetryPolicy(max_retries=1, initial_delay=0.01, max_delay=0.01)

MODELS = {  # protocol -> (model string, path under the server's URL)
    "bedrock-converse": ("bedrock:anthropic.claude-3-5-sonnet-20240620-v1:0", ""),
    "openai-chat": ("openai:gpt-4o", "/v1"),
    "openrouter": ("openrouter:z-ai/glm-5.3-flash", "/v1"),
    "ollama-openai": ("ollama-openai:gemma3:4b", "/v1"),
    "gemini": ("google:gemini-2.5-pro", ""),
    "anthropic": ("anthropic:claude-sonnet-4-5", ""),
}
PROTOCOL_OF = {"openrouter": "openai-chat", "ollama-openai": "openai-chat", "google": "gemini"}


def _run(server: ProviderServer, which: str, *replies: Reply, retry: RetryPolicy = RETRY_ONCE):
    """The reply to one call after ``replies`` (then a good answer, for a retry to find): the
    error raised (or None) and how many requests the server saw."""
    spec, path = MODELS[which]
    protocol = PROTOCOL_OF.get(which, which)
    server.script(*replies, stream_reply(protocol, fake_body(protocol, ("text", "Fine."))))
    model = load_model(spec, api_key="k", base_url=server.url + path, retry=retry, capability_lookup=False)
    try:
        asyncio.run(model.complete(QUESTION))
    except E.ProviderError as err:
        return err, len(server.requests)
    return None, len(server.requests)


# -- the type before the words -----------------------------------------------------------------

# aws-samples/amazon-bedrock-client-for-mac#99 (2025-05-12): HTTP 429, "x-amzn-ErrorType:
# ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", Content-Length 63.
BEDROCK_THROTTLE = {"message": "Too many tokens, please wait before trying again."}
THROTTLE_HEADERS = {"x-amzn-errortype": "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"}


def test_a_bedrock_throttle_about_too_many_tokens_is_a_rate_limit_and_retried(server):
    err, requests = _run(server, "bedrock-converse", error_reply(429, BEDROCK_THROTTLE, THROTTLE_HEADERS))
    assert err is None and requests == 2  # retried, and the retry answered


def test_a_bedrock_throttle_is_a_rate_limit_not_a_context_overflow(server):
    err, requests = _run(
        server, "bedrock-converse", error_reply(429, BEDROCK_THROTTLE), retry=RetryPolicy(max_retries=0)
    )
    assert type(err) is E.RateLimitError and requests == 1
    assert not isinstance(err, E.ContextTooLongError)


def test_a_bedrock_throttling_exception_frame_in_the_stream_is_a_rate_limit(server):
    frame = encode_frame(
        {":message-type": "exception", ":exception-type": "throttlingException", ":content-type": "application/json"},
        json.dumps(BEDROCK_THROTTLE).encode(),
    )
    reply = Reply(body=frame, pieces=[frame], headers={"content-type": "application/vnd.amazon.eventstream"})
    err, _ = _run(server, "bedrock-converse", reply, retry=RetryPolicy(max_retries=0))
    assert type(err) is E.RateLimitError and err.provider_type == "throttlingException"


def test_a_bedrock_daily_token_quota_is_not_retried(server):
    # minorun365/agent-book#29 (2026-01-08): ThrottlingException "Too many tokens per day,
    # please wait before trying again." after botocore's own four retries.
    body = {"message": "Too many tokens per day, please wait before trying again."}
    err, requests = _run(server, "bedrock-converse", error_reply(429, body, THROTTLE_HEADERS))
    assert isinstance(err, E.QuotaExceededError) and isinstance(err, E.RateLimitError)
    assert requests == 1


def test_a_400_that_says_api_error_is_an_invalid_request_not_an_upstream_failure(server):
    # Ollama's OpenAI-compatible route to a model without tools: 400 Bad Request,
    # louisho5/picobot#6 (2026-02-12); the same body, "llama3 does not support tools",
    # ollama/ollama#5793 (2024-07-19).
    body = {
        "error": {
            "message": "registry.ollama.ai/library/gemma3:4b does not support tools",
            "type": "api_error",
            "param": None,
            "code": None,
        }
    }
    err, requests = _run(server, "ollama-openai", error_reply(400, body))
    # An invalid request, and one whose words state a rule modelwire learns: the model takes no tools.
    assert type(err) is E.RefusedOptionError and err.option == "tools" and requests == 1
    assert isinstance(err, E.InvalidRequestError) and not isinstance(err, E.UpstreamError)
    assert "registry.ollama.ai/library/gemma3:4b does not support tools" in err.message
    assert err.provider_type == "api_error" and err.to_error_info()["type"] == "invalid_request"


def test_anthropics_own_api_error_is_still_an_upstream_failure(server):
    # https://docs.anthropic.com/en/api/errors: "500 - api_error: An unexpected error has
    # occurred internal to Anthropic's systems."
    body = {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}
    err, _ = _run(server, "anthropic", error_reply(500, body), retry=RetryPolicy(max_retries=0))
    assert type(err) is E.UpstreamError


# -- Google's bodies in a list, and its daily quota --------------------------------------------

# google-gemini/gemini-cli#14831 (2025-12-09): a Vertex AI 429 whose body is the error object
# inside a JSON list. The RetryInfo detail is the one vercel/ai recorded
# (packages/google/src/__fixtures__/google-429-retry-info.json), added to show it is kept.
VERTEX_LISTED = [
    {
        "error": {
            "code": 429,
            "message": (
                "Resource exhausted. Please try again later. Please refer to "
                "https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details."
            ),
            "errors": [
                {
                    "message": "Resource exhausted. Please try again later.",
                    "domain": "global",
                    "reason": "rateLimitExceeded",
                }
            ],
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34.4s"}],
        }
    }
]


def test_a_google_error_in_a_list_keeps_its_status_and_retry_info(server):
    reply = Reply(status=429, body=json.dumps(VERTEX_LISTED).encode(), headers={"content-type": "application/json"})
    err, _ = _run(server, "gemini", reply, retry=RetryPolicy(max_retries=0))
    assert type(err) is E.RateLimitError
    assert err.provider_type == "RESOURCE_EXHAUSTED" and err.message.startswith("Resource exhausted.")
    assert err.retry_after == 34.4  # type: ignore[attr-defined]


# google-gemini/gemini-cli#8437 (2025-09-14): the free tier's quotas, the daily one among them.
GEMINI_DAILY = {
    "error": {
        "code": 429,
        "message": (
            "You exceeded your current quota, please check your plan and billing details. For more information "
            "on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
        ),
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                        "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                        "quotaDimensions": {"model": "gemini-2.5-flash-preview-image", "location": "global"},
                    }
                ],
            },
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"},
        ],
    }
}


def test_a_gemini_daily_quota_is_not_retried_whatever_wait_it_names(server):
    err, requests = _run(server, "gemini", error_reply(429, GEMINI_DAILY))
    assert isinstance(err, E.QuotaExceededError) and err.provider_type == "RESOURCE_EXHAUSTED"
    assert requests == 1


def test_a_gemini_per_minute_quota_is_retried(server):
    per_minute = json.loads(json.dumps(GEMINI_DAILY))
    violation = per_minute["error"]["details"][0]["violations"][0]
    violation["quotaId"] = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"  # the same body's other quota
    per_minute["error"]["details"][1]["retryDelay"] = "0.01s"
    err, requests = _run(server, "gemini", error_reply(429, per_minute))
    assert err is None and requests == 2


# -- OpenAI's 429s -----------------------------------------------------------------------------


def test_an_openai_request_larger_than_its_per_minute_budget_is_not_retried(server):
    # DrShushen/climb#13 (2024-11-24).
    body = {
        "error": {
            "message": (
                "Request too large for gpt-4o in organization org-VDAWofJASuLH0vVz8o9tiQZr on tokens per min "
                "(TPM): Limit 30000, Requested 30601. The input or output tokens must be reduced in order to run "
                "successfully. Visit https://platform.openai.com/account/rate-limits to learn more."
            ),
            "type": "tokens",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    err, requests = _run(server, "openai-chat", error_reply(429, body))
    assert isinstance(err, E.QuotaExceededError) and err.provider_type == "rate_limit_exceeded"
    assert requests == 1


def test_openai_insufficient_quota_is_not_retried(server):
    # https://platform.openai.com/docs/guides/error-codes: "429 - You exceeded your current
    # quota, please check your plan and billing details".
    body = {
        "error": {
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
    }
    err, requests = _run(server, "openai-chat", error_reply(429, body))
    assert isinstance(err, E.QuotaExceededError) and requests == 1


def test_the_wait_an_openai_429_names_in_its_words_is_read(server):
    # openai/codex#88 (2025-04-16).
    body = {
        "error": {
            "message": (
                "Rate limit reached for o4-mini in organization org-xxxx on tokens per min (TPM): Limit 200000, "
                "Used 162960, Requested 42288. Please try again in 1.574s. Visit "
                "https://platform.openai.com/account/rate-limits to learn more."
            ),
            "type": "tokens",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    err, _ = _run(server, "openai-chat", error_reply(429, body), retry=RetryPolicy(max_retries=0))
    assert type(err) is E.RateLimitError and err.retry_after == 1.574  # type: ignore[attr-defined]
    assert RetryPolicy().delay(0, err.retry_after) == 1.574  # type: ignore[attr-defined]


def test_a_retry_after_header_goes_before_the_words(server):
    body = {"error": {"message": "Rate limit reached. Please try again in 20s.", "code": "rate_limit_exceeded"}}
    err, _ = _run(server, "openai-chat", error_reply(429, body, {"retry-after": "2"}), retry=RetryPolicy(max_retries=0))
    assert err.retry_after == 2.0  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "words, seconds",
    [
        ("Please try again in 1.574s.", 1.574),
        ("Please try again in 6ms. Contact us", 0.006),  # daveshap/Medical_Intake#9 (2023-09-30)
        ("Please try again in 18.642s. Visit", 18.642),  # semanser/codel#72 (2024-12-25)
        ("Please try again in 1m30s.", 90.0),
        ("Please try again later.", None),
        ("Rate limit reached.", None),
    ],
)
def test_the_waits_openai_words_name(words, seconds):
    assert wait_in(words) == seconds


# -- a gateway's upstream reason -----------------------------------------------------------------


def test_openrouters_provider_error_says_the_upstream_reason(server):
    # open-webui/computer#293 (2026-09-20), "from a live failure".
    body = {
        "error": {
            "message": "Provider returned error",
            "code": 429,
            "metadata": {
                "raw": (
                    "z-ai/glm-5.3-flash is temporarily rate-limited upstream. Please retry shortly, or add your own "
                    "key to accumulate your rate limits: https://openrouter.ai/settings/integrations"
                ),
                "provider_name": "BaseTen",
                "limit_source": "upstream_provider_shared_pool",
            },
        }
    }
    err, requests = _run(server, "openrouter", error_reply(429, body), retry=RetryPolicy(max_retries=0))
    assert type(err) is E.RateLimitError and requests == 1
    assert err.message.startswith("Provider returned error (BaseTen): z-ai/glm-5.3-flash is temporarily rate-limited")
    assert err.body == body  # the body as it came


def test_openrouters_provider_error_reads_an_upstream_body(server):
    # diegosouzapw/OmniRoute#3044 (2026-06-01): the upstream's body as JSON in metadata.raw.
    raw = {
        "error": {
            "type": "invalid_request_error",
            "code": "invalid_request_error",
            "message": "Model 'moonshotai/kimi-k2.6' supports at most 1 image per prompt.",
            "request_id": "req_x",
        }
    }
    body = {
        "error": {
            "message": "Provider returned error",
            "code": 400,
            "metadata": {"raw": json.dumps(raw), "provider_name": "Crucible", "is_byok": False},
        }
    }
    err, _ = _run(server, "openrouter", error_reply(400, body), retry=RetryPolicy(max_retries=0))
    assert type(err) is E.InvalidRequestError and err.provider_type == "invalid_request_error"
    assert err.message == (
        "Provider returned error (Crucible): Model 'moonshotai/kimi-k2.6' supports at most 1 image per prompt."
    )


def test_a_context_overflow_behind_a_gateway_is_said_so(server):
    # The upstream's words are read too: OpenAI's own context overflow text inside OpenRouter's error.
    raw = {
        "error": {
            "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in "
            "130012 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    }
    body = {"error": {"message": "Provider returned error", "code": 400, "metadata": {"raw": json.dumps(raw)}}}
    err, _ = _run(server, "openrouter", error_reply(400, body), retry=RetryPolicy(max_retries=0))
    assert isinstance(err, E.ContextTooLongError) and "maximum context length" in err.message


def test_openrouters_error_chunk_in_a_stream_says_the_upstream_reason(server):
    # OpenRouter ends a stream whose upstream failed with a chunk holding an error beside its
    # choices (finish_reason "error"); its metadata.raw as in open-webui/computer#293.
    chunk = {
        "id": "gen-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "z-ai/glm-5.3-flash",
        "error": {
            "message": "Provider returned error",
            "code": 429,
            "metadata": {"raw": "z-ai/glm-5.3-flash is temporarily rate-limited upstream.", "provider_name": "BaseTen"},
        },
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
    }
    raw = b"data: " + json.dumps(chunk).encode() + b"\n\ndata: [DONE]\n\n"
    err, _ = _run(server, "openrouter", stream_reply("openai-chat", raw), retry=RetryPolicy(max_retries=0))
    assert isinstance(err, E.RateLimitError)
    assert err.message == "Provider returned error (BaseTen): z-ai/glm-5.3-flash is temporarily rate-limited upstream."
