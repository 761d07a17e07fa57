"""AWS Bedrock's Converse API, streamed (``POST /model/{modelId}/converse-stream``), for
Claude, Nova, Llama, Mistral, gpt-oss and the rest of Bedrock's catalogue.

The response is AWS's binary event stream, not SSE (:meth:`decoder`). Requests are signed
with SigV4 by the models layer (botocore's signer and credential chain), or carry a
Bedrock API key (``AWS_BEARER_TOKEN_BEDROCK``) as a bearer token. ``model`` is in the URL
(percent-encoded: model ids hold ``:``) and the endpoint streams, so neither goes in the
body. Model-specific switches go in ``additionalModelRequestFields`` (Claude's thinking
budget). Reasoning signatures are replayed only to Bedrock (``replay_scope =
"provider"``): they are not valid on the Anthropic API.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping
from urllib.parse import quote

from ...adapters import encode_frame
from ...errors import ConfigError
from ... import errors as E
from .._caps import Refusal
from .._protocol import (
    CachePlan,
    Capabilities,
    cache_marks_problem,
    ModelCapabilities,
    ModelOptions,
    Preset,
    WireProtocol,
    check_effort,
    refuse,
    sampling,
    fake_words,
)
from .presets import PRESETS

__all__ = ["PROTOCOL", "BedrockConverseProtocol", "regional"]


def regional(base_url: str, preset: Preset, env: Mapping[str, str]) -> str:
    """A Bedrock base URL with its ``{region}`` filled in (``AWS_REGION``, ``AWS_DEFAULT_REGION``)."""
    if "{region}" in base_url:
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        if not region:
            raise ConfigError(
                f"{preset.name} needs a region: set AWS_REGION (or {preset.base_url_env or 'a base URL'})"
            )
        base_url = base_url.replace("{region}", region)
    return base_url.rstrip("/")


def _is_claude(model: str) -> bool:
    return "anthropic.claude" in model or model.startswith("claude")


class BedrockConverseProtocol(WireProtocol):
    name = "bedrock-converse"
    credential_kinds = {"aws": "modelwire.protocols.bedrock._credentials:AWSCredentials"}  # SigV4
    secret_envs = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN")  # what botocore reads
    # botocore's region, profile and credential chain (AWS_REGION, AWS_PROFILE, AWS_ACCESS_KEY_ID ...:
    # https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-envvars.html), the Bedrock API key.
    environ_prefixes = ("AWS_",)
    # A model id's vendor ("anthropic.claude-...") and a cross-region inference profile's
    # geography before it ("us.", "global."): https://docs.aws.amazon.com/bedrock/latest/userguide/models-supported.html,
    # https://docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-support.html
    # SigV4's "Authorization: AWS4-HMAC-SHA256 Credential=AKIA.../20150830/us-east-1/..."
    # names the access key id (https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html).
    signed_schemes = {"AWS4-": r"Credential=([^/,\s]+)/"}
    model_id_prefix = (
        r"(?:(?:us|eu|apac|au|jp|global|us-gov)\.)?"
        r"(?:anthropic|amazon|meta|mistral|openai|deepseek|qwen|google|moonshot|cohere)\."
    )
    presets = PRESETS
    error_types = {  # exception frames and x-amzn-errortype
        "throttlingexception": E.RateLimitError,
        "servicequotaexceededexception": E.RateLimitError,
        "serviceunavailableexception": E.OverloadedError,
        "modelnotreadyexception": E.OverloadedError,
        "internalserverexception": E.UpstreamError,
        "modelstreamerrorexception": E.UpstreamError,
        "modelerrorexception": E.UpstreamError,
        "modeltimeoutexception": E.UpstreamError,
        "validationexception": E.InvalidRequestError,
        "resourcenotfoundexception": E.InvalidRequestError,
        "accessdeniedexception": E.PermissionDeniedError,
        "unrecognizedclientexception": E.AuthenticationError,
        "expiredtokenexception": E.AuthenticationError,
    }
    # A ThrottlingException is a rate limit whatever its words say ("Too many tokens, please wait
    # before trying again.", HTTP 429, aws-samples/amazon-bedrock-client-for-mac#99, 2025-05-12:
    # its type is read before the words, never a context overflow). A daily quota spent is one
    # no wait within a call lifts: "Too many tokens per day, please wait before trying again."
    # (ThrottlingException, minorun365/agent-book#29, 2026-01-08).
    error_phrases = {"too many tokens per day": E.QuotaExceededError}
    refusals = (
        Refusal(
            r"doesn't support the toolConfig\.toolChoice\.(?:any|tool) field",
            "tool_choice",
            lambda m: {"forced_tool": False},
            "Bedrock's ValidationException to a forced toolChoice on Llama and Nova: \"This model doesn't support the"
            ' toolConfig.toolChoice.any field. Remove toolConfig.toolChoice.any and try again" '
            "(strands-agents/harness-sdk#1887,"
            " 2026-03-13; aws-samples/bedrock-access-gateway#92, 2025-01-15)",
        ),
        Refusal(
            r"doesn't support tool use in streaming mode",
            "stream",
            lambda m: {"streamed_tool_use": False},
            "Bedrock's ValidationException to tools in ConverseStream on Llama 4: \"This model doesn't support "
            'tool use in streaming mode." (earendil-works/pi#3739, 2026-04-26; vercel-labs/fx#900, 2026-09-16)',
        ),
        Refusal.unknown_field(
            r"#: extraneous key \[(\w+)\] is not permitted",  # "#:" is the top level; "#/messages/0:" a nested key
            "Bedrock's ValidationException to a field the model's request schema lacks: 'Malformed input request: "
            '#: subject must not be valid against schema {"required":["messages"]}#: extraneous key [stream] is not '
            "permitted' (sigoden/aichat#543, 2024-05-25; pingcap/autoflow#574, 2025-01-07)",
        ),
    )
    description = "AWS Bedrock Converse"
    adapter = "modelwire.protocols.bedrock.adapter:BedrockConverseAdapter"
    formatter = "modelwire.protocols.bedrock.formatter:BedrockConverseFormatter"
    path = "/model/{model}/converse-stream"
    model_in_body = False
    stream_in_body = False
    signature = (b":event-type\x07\x00\x0cmessageStart", b":event-type\x07\x00\x11contentBlockDelta")
    replay_scope = "provider"
    replay_keys = ("signature", "redacted_thinking_data")
    extras_keys = ("signature", "redacted_thinking_data", "citations", "raw")
    content_type = "application/vnd.amazon.eventstream"
    framing = "aws-eventstream"
    capabilities = Capabilities(
        native_structured_output=True, thinking=True, server_tools=True, parallel_tool_calls=True
    )

    def formatter_options(self, preset: Preset, model: str = "") -> dict[str, Any]:
        return {"tool_id_style": "mistral"} if "mistral" in model.lower() else {}

    def url(self, base_url: str, model: str, preset: Preset, env: Mapping[str, str] | None = None) -> str:
        return regional(base_url, preset, os.environ if env is None else env) + self.path.format(
            model=quote(model, safe="")
        )

    def whole_url(self, url: str, preset: Preset) -> str:
        path, sep, query = url.partition("?")
        return path[: -len("-stream")] + sep + query if path.endswith("/converse-stream") else url

    files_refusal = (
        "Bedrock has no Files API: send an s3:// URL (a URL source; Bedrock reads the bucket) or the data inline"
    )
    batch_refusal = (
        "Bedrock's batch inference is a job over S3 (CreateModelInvocationJob, input and output "
        "in buckets), not a request API: send the requests one by one"
    )

    def count_request(
        self, url: str, body: dict[str, Any], model: str, preset: Preset
    ) -> tuple[str, dict[str, Any]] | None:
        """``CountTokens`` (``POST /model/{modelId}/count-tokens``, botocore's shape): the
        Converse request's messages, system, tools and model fields."""
        path = url.split("?")[0]
        kept = {
            k: v for k, v in body.items() if k in ("messages", "system", "toolConfig", "additionalModelRequestFields")
        }
        return path.rsplit("/", 1)[0] + "/count-tokens", {"input": {"converse": kept}}

    def matches_url(self, url: str) -> bool:
        return url.split("?")[0].rstrip("/").endswith(("/converse-stream", "/converse"))

    def answer_events(self, answer: dict[str, Any]) -> list[tuple[str | None, Any]]:
        """A Converse (not streamed) answer as ConverseStream events."""
        message = (answer.get("output") or {}).get("message") or {}
        events: list[tuple[str | None, Any]] = [("messageStart", {"role": message.get("role", "assistant")})]
        for i, block in enumerate(message.get("content") or []):
            start, deltas = _block_deltas(block)
            if start is None and not deltas:
                continue  # a block the stream has no form for
            if start is not None:
                events.append(("contentBlockStart", {"contentBlockIndex": i, "start": start}))
            events.extend(("contentBlockDelta", {"contentBlockIndex": i, "delta": delta}) for delta in deltas)
            events.append(("contentBlockStop", {"contentBlockIndex": i}))
        stop: dict[str, Any] = {"stopReason": answer.get("stopReason")}
        if answer.get("additionalModelResponseFields"):
            stop["additionalModelResponseFields"] = answer["additionalModelResponseFields"]
        events.append(("messageStop", stop))
        metadata = {"usage": answer.get("usage") or {}}
        if "metrics" in answer:
            metadata["metrics"] = answer["metrics"]
        events.append(("metadata", metadata))
        return events

    prompt_order = ("toolConfig", "system", "messages")
    cache_marker_keys = ("cachePoint",)

    def apply_cache(
        self,
        body: dict[str, Any],
        plan: CachePlan,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        """``cachePoint`` blocks after the tools, the system prompt and the last message
        (at most 4 in a request; a 1-hour one never after a 5-minute one)."""
        if plan.key is not None or plan.placement == "provider":
            raise refuse(
                "cache",
                preset,
                "Converse takes cachePoint blocks only: no cache key, no automatic placement",
                model=model,
            )
        point = {"cachePoint": {"type": "default", **({"ttl": plan.ttl} if plan.ttl != "5m" else {})}}
        lists = []
        if plan.tools and body.get("toolConfig", {}).get("tools"):
            lists.append(body["toolConfig"]["tools"])
        if plan.system and body.get("system"):
            lists.append(body["system"])
        if plan.history and body.get("messages"):
            lists.append(body["messages"][-1]["content"])
        for items in lists:
            if not (items and "cachePoint" in items[-1]):
                items.append(json.loads(json.dumps(point)))
        marks = [
            b["cachePoint"]
            for b in [
                *body.get("toolConfig", {}).get("tools", ()),
                *body.get("system", ()),
                *(c for m in body.get("messages", ()) for c in m["content"]),
            ]
            if "cachePoint" in b
        ]
        problem = cache_marks_problem(marks, 4, "cache point", "Converse")
        if problem is not None:
            raise refuse("cache", preset, problem[1], model=model)

    def apply_options(
        self,
        p: dict[str, Any],
        o: ModelOptions,
        /,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        inference: dict[str, Any] = {}
        if o.max_tokens is not None:
            inference["maxTokens"] = o.max_tokens
        sampling(inference, o, top_p="topP", stop="stopSequences")
        if inference:
            p["inferenceConfig"] = inference
        extra = _model_fields(p, o, preset, model, caps, inference.get("maxTokens"))
        if extra:
            p["additionalModelRequestFields"] = extra
        if o.reasoning_summary is not None:
            raise refuse("reasoning_summary", preset, "Bedrock streams reasoning itself; use thinking=True")
        if o.parallel_tool_calls is not None:
            raise refuse("parallel_tool_calls", preset, "Converse has no switch for parallel calls")
        if o.json_schema is not None:
            p["outputConfig"] = _output_config(o.json_schema, o.json_schema_name, preset, model, caps)

    def fake_answer(self, *blocks: tuple[Any, ...], usage: tuple[int, int] = (10, 5)) -> dict[str, Any]:
        """The whole Converse answer of the same blocks as :meth:`fake_stream`."""
        content: list[dict[str, Any]] = []
        for block in blocks:
            if block[0] == "think":
                text = {"text": block[1], "signature": f"sig-{block[1][:8]}"}
                content.append({"reasoningContent": {"reasoningText": text}})
            elif block[0] == "text":
                content.append({"text": block[1]})
            else:
                call = {"toolUseId": block[1], "name": block[2], "input": json.loads(block[3] or "{}")}
                content.append({"toolUse": call})
        stop = "tool_use" if any(b[0] == "tool" for b in blocks) else "end_turn"
        used = {"inputTokens": usage[0], "outputTokens": usage[1], "totalTokens": sum(usage)}
        message = {"role": "assistant", "content": content}
        return {"output": {"message": message}, "stopReason": stop, "usage": used, "metrics": {"latencyMs": 1}}

    def fake_stream(
        self, *blocks: tuple[Any, ...], usage: tuple[int, int] = (10, 5), stop: str | None = None, **_: Any
    ) -> bytes:
        """``("think", text)`` is Claude-style reasoning with a signature."""

        def frame(event: str, payload: dict[str, Any]) -> bytes:
            payload = {**payload, "p": "abcdefgh"[: len(event) % 8]}  # AWS pads with random letters
            return encode_frame(
                {":event-type": event, ":content-type": "application/json", ":message-type": "event"},
                json.dumps(payload).encode(),
            )

        out = [frame("messageStart", {"role": "assistant"})]
        for index, block in enumerate(blocks):
            if block[0] == "think":
                for piece in (block[1][: len(block[1]) // 2], block[1][len(block[1]) // 2 :]):
                    out.append(
                        frame(
                            "contentBlockDelta",
                            {"contentBlockIndex": index, "delta": {"reasoningContent": {"text": piece}}},
                        )
                    )
                out.append(
                    frame(
                        "contentBlockDelta",
                        {
                            "contentBlockIndex": index,
                            "delta": {"reasoningContent": {"signature": f"sig-{block[1][:8]}"}},
                        },
                    )
                )
            elif block[0] == "text":
                for word in fake_words(block[1]):
                    out.append(frame("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": word}}))
            else:
                _, call_id, name, args = block
                out.append(
                    frame(
                        "contentBlockStart",
                        {"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": call_id, "name": name}}},
                    )
                )
                out.append(
                    frame("contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": args}}})
                )
            out.append(frame("contentBlockStop", {"contentBlockIndex": index}))
        stop = stop or ("tool_use" if any(b[0] == "tool" for b in blocks) else "end_turn")
        out.append(frame("messageStop", {"stopReason": stop}))
        out.append(
            frame(
                "metadata",
                {
                    "usage": {"inputTokens": usage[0], "outputTokens": usage[1], "totalTokens": sum(usage)},
                    "metrics": {"latencyMs": 12},
                },
            )
        )
        return b"".join(out)


PROTOCOL = BedrockConverseProtocol()


def _model_fields(
    p: dict[str, Any], o: ModelOptions, preset: Preset, model: str, caps: ModelCapabilities, max_tokens: Any
) -> dict[str, Any]:
    """The ``additionalModelRequestFields`` the options ask for: Claude's thinking as on its
    own API; a reasoning effort for OpenAI-style models; other thinking switches refused."""
    extra: dict[str, Any] = {}
    if _is_claude(model):
        from .._claude import claude_fields

        forced = bool({"any", "tool"} & set(p.get("toolConfig", {}).get("toolChoice") or {}))
        extra.update(claude_fields(o, preset, model, caps, max_tokens, forced_tool=forced, default_budget=4096))
    else:
        for option in ("thinking", "thinking_budget", "thinking_display"):
            if getattr(o, option) is not None:
                raise refuse(
                    option,
                    preset,
                    (
                        "on Bedrock, thinking is mapped for Claude models; pass the model's own switch in "
                        "extra_body['additionalModelRequestFields']"
                    ),
                    model=model,
                )
        if o.reasoning_effort is not None:
            extra["reasoning_effort"] = check_effort(
                o.reasoning_effort, caps, preset, model
            )  # gpt-oss and other OpenAI-style models
    return extra


def _output_config(
    schema: dict[str, Any], name: str, preset: Preset, model: str, caps: ModelCapabilities
) -> dict[str, Any]:
    """Structured output as Converse takes it (Claude's schema subset checked as on its own API)."""
    if caps.structured_output is False:
        raise refuse(
            "json_schema",
            preset,
            "the model has no structured output on Bedrock; ask for it through a tool (the agent's "
            "structured_model does this)",
            model=model,
        )
    if _is_claude(model):
        from .._claude import claude_schema

        schema = claude_schema(schema, preset, model)  # Claude's subset, as on its own API
    structure = {"jsonSchema": {"name": name, "schema": json.dumps(schema)}}
    return {"textFormat": {"type": "json_schema", "structure": structure}}


def _block_deltas(block: Mapping[str, Any]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """A Converse answer's block as the stream would send it: its start (a tool call's only)
    and its deltas; neither for a block the stream has no form for."""
    if "toolUse" in block:
        tool = block["toolUse"]
        start = {"toolUse": {"toolUseId": tool.get("toolUseId"), "name": tool.get("name")}}
        return start, [{"toolUse": {"input": json.dumps(tool.get("input") or {})}}]
    if "text" in block:
        return None, [{"text": block["text"]}]
    if "reasoningContent" not in block:
        return None, []
    reasoning = block["reasoningContent"]
    if "redactedContent" in reasoning:
        return None, [{"reasoningContent": {"redactedContent": reasoning["redactedContent"]}}]
    text = reasoning.get("reasoningText") or {}
    deltas = [{"reasoningContent": {"text": text.get("text", "")}}]
    if text.get("signature"):
        deltas.append({"reasoningContent": {"signature": text["signature"]}})
    return None, deltas
