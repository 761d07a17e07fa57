"""The Anthropic Messages protocol (``POST /v1/messages``, streamed).

Its adapter is :mod:`.adapter`, its formatter :mod:`.formatter`; this module says how a
request is built, how options map onto it, what it can do, and how the test server fakes
it. Thinking it produced is valid on every server that speaks it (``replay_scope =
"protocol"``), unless the endpoint family it was minted by says otherwise.

Claude is also reached through two clouds with the same messages and events and their own
request (a preset's ``dialect["endpoint"]``):

- ``vertex``: ``POST .../publishers/anthropic/models/{model}:streamRawPredict`` on Vertex AI,
  ``anthropic_version: "vertex-2023-10-16"`` in the body and no ``model``; Google credentials.
- ``bedrock``: ``POST /model/{model}/invoke-with-response-stream`` on Bedrock's runtime,
  ``anthropic_version: "bedrock-2023-05-31"``, neither ``model`` nor ``stream`` in the body;
  the answer is AWS's event stream whose ``chunk`` frames carry each Anthropic event as
  base64 (:class:`InvokeStreamDecoder`); SigV4 or a Bedrock API key.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Mapping

from ...adapters import encode_sse
from ... import errors as E
from .._caps import Refusal, levels_in, levels_up_to
from .._claude import EFFORTS as _EFFORTS, MIN_BUDGET, claude_fields, claude_schema
from .._protocol import (
    FileBody,
    DEFAULT_MAX_TOKENS,
    BatchResult,
    BatchState,
    batch_lines,
    CachePlan,
    Capabilities,
    CompactionPlan,
    HTTPCall,
    ModelCapabilities,
    ModelOptions,
    Preset,
    UploadedFile,
    WireProtocol,
    fake_words,
    multipart,
    rate_limit_shape,
    refuse,
    sampling,
)
from .presets import PRESETS

__all__ = ["PROTOCOL", "AnthropicProtocol", "ENDPOINT_VERSIONS"]

# The anthropic_version each cloud endpoint wants in the body.
ENDPOINT_VERSIONS = {"vertex": "vertex-2023-10-16", "bedrock": "bedrock-2023-05-31"}
# What count_tokens takes of a Messages request (the SDK's MessageCountTokensParams, and the
# beta fields of its beta twin): sampling, limits and streaming are left out.
_COUNTED = frozenset(
    {
        "messages",
        "system",
        "tools",
        "tool_choice",
        "thinking",
        "output_config",
        "mcp_servers",
        "context_management",
        "cache_control",
        "speed",
    }
)
_VERTEX_PATH = "/v1/projects/{project}/locations/{location}/publishers/anthropic/models/{model}:streamRawPredict"
_EVENTSTREAM = "application/vnd.amazon.eventstream"

log = logging.getLogger("modelwire.protocols.anthropic")


class AnthropicProtocol(WireProtocol):
    name = "anthropic"
    presets = PRESETS
    error_types = {
        "overloaded_error": E.OverloadedError,
        "api_error": E.UpstreamError,
        "rate_limit_error": E.RateLimitError,
        "authentication_error": E.AuthenticationError,
        "permission_error": E.PermissionDeniedError,
        "invalid_request_error": E.InvalidRequestError,
        "not_found_error": E.InvalidRequestError,
        "request_too_large": E.InvalidRequestError,
    }

    def rate_limits(self, headers: Mapping[str, str]) -> dict[str, Any] | None:
        """``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}``
        (the reset an RFC 3339 time) and ``retry-after``
        (https://docs.anthropic.com/en/api/rate-limits#response-headers)."""
        names = {
            kind: tuple(
                f"anthropic-ratelimit-{kind.replace('_', '-')}-{part}" for part in ("limit", "remaining", "reset")
            )
            for kind in ("requests", "tokens", "input_tokens", "output_tokens")
        }
        return rate_limit_shape(headers, names, reset_is_duration=False)  # type: ignore[arg-type]

    refusals = (
        Refusal(
            r'"?thinking\.type\.disabled"? is not supported for this model',
            "thinking",
            lambda m: {"thinking_off": False},
            "the API's 400 to claude-opus-5-5 and claude-fable-5-1 with thinking off, as users reported it in 2026-11: "
            '\'"thinking.type.disabled" is not supported for this model. Use '
            '"thinking.type.adaptive" and "output_config.effort"\'',
        ),
        Refusal(
            r'"?thinking\.type\.enabled"? is not supported for this model',
            "thinking_budget",
            lambda m: {"thinking": ["adaptive"]},
            "the 400 to claude-sonnet-5 with thinking.type enabled, which must be adaptive (on "
            "Bedrock, aaronrussell/anthropix#20,"
            " 2026-08-22), in the words of its thinking.type.disabled sibling ('Use "
            "thinking.type.adaptive and output_config.effort')",
        ),
        Refusal(
            r"Only 'enabled' and 'disabled' are supported for thinking; 'adaptive' is not supported",
            "thinking",
            lambda m: {"thinking": ["budget"]},
            "a compatible server's 400 to adaptive thinking (Qwen on DashScope's Anthropic route): "
            "\"Only 'enabled' and 'disabled' are"
            " supported for thinking; 'adaptive' is not supported.\" (anthropics/claude-code#29531, 2026-02-28)",
        ),
        Refusal(
            r"thinking may not be enabled when tool_choice forces tool use",
            "tool_choice",
            lambda m: {"forced_tool_thinking": False},
            (
                "the API's 400 to a forced tool_choice with thinking on (run-llama/llama_index#19641, "
                "2025-08-11; on Bedrock, can1357/oh-my-pi#341, 2026-03-09)"
            ),
        ),
        Refusal(
            r"supported levels: ([a-z, ]+)",
            "reasoning_effort",
            lambda m: {"effort": list(levels_in(m.group(1)))},
            "a recorded claude-opus-4-6 400 to an effort it lacks: 'Supported levels: high, low, max, medium'",
        ),
        Refusal(
            (
                r"effort '?(\w+)'? is not supported when thinking is disabled on this model\. Use effort "
                r"'?(\w+)'? or below"
            ),
            "reasoning_effort",
            lambda m: {"thinking_off_effort": list(levels_up_to(m.group(2)))},
            "the API's 400 to claude-opus-5 with thinking off at effort xhigh: "
            "\"output_config.effort 'xhigh' is not supported when thinking"
            " is disabled on this model. Use effort 'high' or below, or enable thinking.\" "
            "(anthropics/claude-code#81084, 2026-07-25)",
        ),
        Refusal(
            r"`?(?:temperature|top_p|top_k)`? is deprecated for this model",
            "temperature",
            lambda m: {"sampling": False},
            'the API\'s 400 to claude-opus-4-7 with a temperature: "`temperature` is deprecated for this model."'
            " (UKGovernmentBEIS/inspect_ai#3721, 2026-04-20; on Bedrock, DayuanJiang/next-ai-draw-io#861, 2026-06-06)",
        ),
        Refusal(
            r"budget_tokens: Input should be greater than or equal to (\d+)",
            "thinking_budget",
            lambda m: {"budget_min": int(m.group(1))},
            "the API's 400 to a thinking budget under its floor: 'thinking.enabled.budget_tokens: "
            "Input should be greater than or"
            " equal to 1024' (through Bedrock, danny-avila/LibreChat#8346, 2025-07-09; "
            "tingly-dev/tingly-box#569, 2026-03-26)",
        ),
        Refusal.unknown_field(
            r"(?:^|\s)([a-z_]+): Extra inputs are not permitted",  # a top-level field only (no dotted path)
            "a server's 400 to a field it does not know: 'output_config: Extra inputs are not permitted' "
            "(ding113/claude-code-hub#662, 2026-01-27); 'context_management: Extra inputs are not permitted' "
            "(caozhiyuan/copilot-api#305, 2026-07-02)",
        ),
        Refusal(
            r"`?temperature`? and `?top_p`? cannot both be specified for this model",
            "top_p",
            lambda m: {"sampling_one_of": True},
            "the API's 400 to both sampling parameters on Claude 4.1 and later: \"`temperature` and `top_p` cannot "
            'both be specified for this model. Please use only one." (Vali-98/ChatterUI#564, 2026-05-16; on '
            "Bedrock, skydiscover-ai/skydiscover#15, 2026-03-10)",
        ),
        Refusal(
            r"max_tokens: \d+ > (\d+), which is the maximum allowed number of output tokens",
            "max_tokens",
            lambda m: {"max_output_tokens": int(m.group(1))},
            "the API's 400 to a max_tokens above the model's: 'max_tokens: 200000 > 64000, which is the maximum "
            "allowed number of output tokens for claude-sonnet-4-5-20250929' (on Vertex, BerriAI/litellm#15715, "
            "2025-10-19)",
        ),
        Refusal(
            r"tool_use\.id: String should match pattern '([^']+)'",
            "tool_id",
            lambda m: {"tool_id_pattern": m.group(1)},
            "the API's 400 to a tool-call id from elsewhere: \"messages.1.content.1.tool_use.id: "
            "String should match pattern"
            " '^[a-zA-Z0-9_-]+$'\" (CommandCodeAI/command-code#323, 2026-05-06; through a gateway, "
            "tailcallhq/forgecode#1142, 2025-07-20)",
        ),
        Refusal(
            r"tools\.\d+\.(?:custom\.)?name: String should match pattern '([^']+)'",
            "tool_name",
            lambda m: {"tool_name_pattern": m.group(1)},
            "the API's 400 to a tool name: \"tools.7.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'\""
            " (apify/tester-mcp-client#11, 2025-03-07)",
        ),
    )
    # endpoint: Claude on a cloud (where the model goes, how it streams); model_info: the
    # provider publishes its models (the Models API)
    dialect_keys = {"endpoint": {"vertex", "bedrock"}, "model_info": {"anthropic"}}
    description = "Anthropic Messages"
    adapter = "modelwire.protocols.anthropic.adapter:AnthropicAdapter"
    conform = "modelwire.protocols.anthropic._conform:CHECKS"
    formatter = "modelwire.protocols.anthropic.formatter:AnthropicFormatter"
    path = "/v1/messages"
    signature = (
        b"event: message_start",
        b'"type": "message_start"',
        b'"type":"message_start"',
        b'"content_block_delta"',
    )
    replay_scope = "protocol"
    replay_keys = ("signature", "redacted_thinking_data")
    extras_keys = ("signature", "redacted_thinking_data", "citations", "server_name", "caller")
    capabilities = Capabilities(native_structured_output=False, thinking=True, server_tools=True)
    sdk_package = "anthropic"

    def sdk_base_url(self, base_url: str) -> str:
        base_url = base_url.rstrip("/")
        return base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url

    # -- the cloud endpoints -----------------------------------------------------------------

    def url(self, base_url: str, model: str, preset: Preset, env: Any = None) -> str:
        import os
        from urllib.parse import quote

        endpoint = preset.dialect.get("endpoint")
        env = os.environ if env is None else env
        if endpoint == "vertex":
            from ..gemini import vertex_place

            base, project, location = vertex_place(base_url, preset, env)
            return base + _VERTEX_PATH.format(project=project, location=location, model=model)
        if endpoint == "bedrock":
            from ..bedrock import regional

            return regional(base_url, preset, env) + f"/model/{quote(model, safe='')}/invoke-with-response-stream"
        return super().url(base_url, model, preset, env)

    def whole_url(self, url: str, preset: Preset) -> str:
        path, sep, query = url.partition("?")
        for streamed, whole in ((":streamRawPredict", ":rawPredict"), ("/invoke-with-response-stream", "/invoke")):
            if path.endswith(streamed):
                return path[: -len(streamed)] + whole + sep + query
        return url

    # -- files (https://docs.anthropic.com/en/docs/build-with-claude/files; the anthropic SDK's
    # files.upload and FileMetadata): POST /v1/files, multipart ``file``; GET lists; a file is
    # sent as {"type": "file", "file_id"} in an image or document block.

    files_api = "anthropic"

    def file_upload(
        self, base_url: str, preset: Preset, data: "bytes | FileBody", media_type: str, name: str
    ) -> HTTPCall:
        endpoint = preset.dialect.get("endpoint")
        if endpoint in ("vertex", "bedrock"):
            cloud = "Vertex AI" if endpoint == "vertex" else "Bedrock"
            raise E.UnsupportedOptionError(
                "upload_file",
                preset.name,
                f"Claude on {cloud} has no Files API: send the data inline (a path or bytes as a base64 source)",
            )
        body, content_type = multipart({}, "file", name, media_type, data)
        return HTTPCall(
            "POST", self.files_url(base_url, preset), {"content-type": content_type, "accept": "application/json"}, body
        )

    def file_uploaded(
        self, answer: Mapping[str, Any], headers: Mapping[str, str], call: HTTPCall, data: "bytes | FileBody"
    ) -> UploadedFile | HTTPCall:
        file_id = answer.get("id")
        if not isinstance(file_id, str) or not file_id:
            return UploadedFile("", "", "", "")  # no usable id: refused by the models layer, typed
        return UploadedFile(
            file_id,
            call.url.rstrip("/") + "/" + file_id,
            answer.get("mime_type") or "",
            answer.get("filename") or "",
            answer.get("size_bytes"),
        )

    def files_url(self, base_url: str, preset: Preset) -> str:
        if preset.dialect.get("endpoint") in ("vertex", "bedrock"):
            raise E.UnsupportedOptionError("list_files", preset.name, "Claude on the clouds has no Files API")
        return base_url.rstrip("/") + "/v1/files"

    def files_listed(self, answer: Mapping[str, Any], base_url: str, preset: Preset) -> list[UploadedFile]:
        url = self.files_url(base_url, preset)
        items = [i for i in answer.get("data") or () if isinstance(i, dict) and isinstance(i.get("id"), str)]
        return [
            UploadedFile(
                i["id"], url + "/" + i["id"], i.get("mime_type") or "", i.get("filename") or "", i.get("size_bytes")
            )
            for i in items
        ]

    def takes_file_ref(self, media_type: str) -> bool:
        from ._body import IMAGE_TYPES

        base = media_type.split(";")[0].strip().lower()
        return base in IMAGE_TYPES or base in ("application/pdf", "text/plain")

    # -- batches (https://docs.anthropic.com/en/docs/build-with-claude/batch-processing: "50%
    # of standard API prices"; the anthropic SDK's messages.batches, MessageBatch and
    # MessageBatchIndividualResponse). Results are JSONL at the batch's results_url.

    batch_discount = 0.5
    batch_limit = 100_000  # "limited to either 100,000 Message requests or 256 MB" (the batch-processing page above)

    def _batches_url(self, base_url: str, preset: Preset) -> str:
        if preset.dialect.get("endpoint") in ("vertex", "bedrock"):
            raise E.UnsupportedOptionError(
                "batch",
                preset.name,
                (
                    "Claude on the clouds takes batches as jobs over cloud storage (Vertex AI batch "
                    "prediction, Bedrock batch inference), not this API"
                ),
            )
        return base_url.rstrip("/") + "/v1/messages/batches"

    def batch_submit(self, base_url: str, preset: Preset, model: str, bodies: Any) -> HTTPCall:
        requests = [
            {"custom_id": f"request-{n}", "params": {k: v for k, v in b.items() if k != "stream"}}
            for n, b in enumerate(bodies)
        ]
        return HTTPCall(
            "POST",
            self._batches_url(base_url, preset),
            {"accept": "application/json"},
            json.dumps({"requests": requests}).encode(),
        )

    def batch_call(self, base_url: str, preset: Preset, batch_id: str, action: str) -> HTTPCall:
        url = self._batches_url(base_url, preset) + "/" + batch_id
        return (
            HTTPCall("POST", url + "/cancel", {"accept": "application/json"})
            if action == "cancel"
            else HTTPCall("GET", url, {"accept": "application/json"})
        )

    def batch_state(self, answer: Mapping[str, Any], base_url: str, preset: Preset) -> BatchState:
        status = str(answer.get("processing_status") or "")
        ended = status == "ended"
        results = answer.get("results_url")
        reads = (
            (HTTPCall("GET", results, {"accept": "application/binary"}),) if ended and isinstance(results, str) else ()
        )
        counts = {k: v for k, v in (answer.get("request_counts") or {}).items() if isinstance(v, int)}
        return BatchState(
            str(answer.get("id") or ""), status, ended, counts, reads, sum(counts.values()) if counts else None
        )

    def batch_results(self, text: str) -> list[BatchResult]:
        out: list[BatchResult] = []
        for index, item in batch_lines(text):
            if not isinstance(item, dict):
                out.append((index, None, item))  # a line that could not be read: its typed error
                continue
            result = item.get("result")
            if not isinstance(result, dict):
                result = {}
            kind = result.get("type")
            if kind == "succeeded":
                out.append((index, result.get("message"), None))
            elif kind == "errored":
                out.append((index, None, result.get("error")))
            else:  # canceled, expired: no answer, and Anthropic's words for why
                out.append(
                    (
                        index,
                        None,
                        {
                            "type": "error",
                            "error": {
                                "type": f"{kind}_error",
                                "message": f"the batch request was {kind} before it was answered",
                            },
                        },
                    )
                )
        return out

    def count_request(
        self, url: str, body: dict[str, Any], model: str, preset: Preset
    ) -> tuple[str, dict[str, Any]] | None:
        """``POST /v1/messages/count_tokens`` (https://docs.claude.com/en/api/messages-count-tokens):
        the fields it takes of the request. Claude on Vertex: ``.../models/count-tokens:rawPredict``
        with the model in the body
        (https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/count-tokens);
        on Bedrock: ``CountTokens`` around the invoke body (botocore's ``CountTokens`` shape)."""
        import base64
        import json

        path, _, query = url.partition("?")
        endpoint = preset.dialect.get("endpoint")
        kept = {k: v for k, v in body.items() if k in _COUNTED}
        if endpoint == "bedrock":
            invoke = {k: v for k, v in body.items() if k != "stream"}
            return path.rsplit("/", 1)[0] + "/count-tokens", {
                "input": {"invokeModel": {"body": base64.b64encode(json.dumps(invoke).encode()).decode()}}
            }
        if endpoint == "vertex":
            return path.rsplit("/models/", 1)[0] + "/models/count-tokens:rawPredict", {"model": model, **kept}
        return path.rstrip("/") + "/count_tokens" + (f"?{query}" if query else ""), {"model": model, **kept}

    claimed_types = ("thinking",)

    def claims(self, block_type: str, fields: Mapping[str, Any], block_id: str) -> bool:
        # AgentScope's fields for Claude's thinking: its signature, or the redacted data.
        return block_type == "thinking" and bool(
            fields.get("signature") or fields.get("redacted_thinking_data") is not None
        )

    def matches_url(self, url: str) -> bool:
        path = url.split("?")[0].rstrip("/")
        return path.endswith(
            (":streamRawPredict", ":rawPredict", "/invoke-with-response-stream", "/invoke")
        ) or super().matches_url(url)

    def body(
        self,
        model: str,
        payload: dict[str, Any],
        options: ModelOptions,
        preset: Preset,
        caps: ModelCapabilities | None = None,
    ) -> dict[str, Any]:
        from ._body import MESSAGE_EFFORT_BETA, betas_for

        endpoint = preset.dialect.get("endpoint")
        body = super().body(model, payload, options, preset, caps)
        if endpoint in ENDPOINT_VERSIONS and body.get("mcp_servers"):
            raise refuse(
                "tools",
                preset,
                f"Claude on {endpoint.title()} has no MCP connector: run the server from the agent instead (MCPServer)",
                model=model,
            )
        if endpoint in ENDPOINT_VERSIONS:
            body.pop("model", None)  # in the URL
            if endpoint == "vertex" and MESSAGE_EFFORT_BETA in betas_for(body):
                raise refuse(
                    "reasoning_effort",
                    preset,
                    "Claude on Vertex AI is not known to take an effort change in mid-conversation (metadata "
                    "'reasoning_effort' on a system message); set reasoning_effort for the call instead",
                    model=model,
                )
            if endpoint == "bedrock":
                body.pop("stream", None)  # the endpoint streams
                beta = {k.lower(): v for k, v in options.extra_headers.items()}.get("anthropic-beta")
                given = [b.strip() for b in beta.split(",") if b.strip()] if beta else []
                # What the body needs goes there too: "With the Amazon Bedrock InvokeModel API, send the
                # beta value in the request body's anthropic_beta array, not as a header"
                # (https://platform.claude.com/docs/zh-CN/build-with-claude/effort-per-message, in translation).
                given += [b for b in betas_for(body) if b not in given]
                if given:  # Bedrock takes the betas in the body, not as a header
                    body.setdefault("anthropic_beta", given)
            body = {"anthropic_version": ENDPOINT_VERSIONS[endpoint], **body}
        return body

    def headers(self, api_key: str | None, preset: Preset, extra: Any = None) -> dict[str, str]:
        headers = super().headers(api_key, preset, extra)
        if preset.dialect.get("endpoint") == "bedrock":
            headers["accept"] = _EVENTSTREAM
            for name in [k for k in headers if k.lower() == "anthropic-beta"]:
                del headers[name]  # sent in the body (see body())
        return headers

    def request_headers(self, body: dict[str, Any], headers: dict[str, str], preset: Preset) -> dict[str, str]:
        from ._body import betas_for

        needed = betas_for(body)
        if not needed or preset.dialect.get("endpoint") == "bedrock":  # in the body there (see body())
            return headers
        key = next((k for k in headers if k.lower() == "anthropic-beta"), "anthropic-beta")
        given = [b.strip() for b in headers.get(key, "").split(",") if b.strip()]
        headers[key] = ",".join(given + [b for b in needed if b not in given])
        return headers

    def stream_content_type(self, preset: Preset) -> str:
        return _EVENTSTREAM if preset.dialect.get("endpoint") == "bedrock" else self.content_type

    def decoder_for(self, adapter: Any, preset: Preset, *, keep: bool = False) -> Any:
        if preset.dialect.get("endpoint") == "bedrock":
            from ._invoke import InvokeStreamDecoder

            return InvokeStreamDecoder(adapter, keep=keep)
        return self.decoder(adapter, keep=keep)

    def model_defaults(self, preset: Preset, model: str = "") -> ModelCapabilities:
        # Any server speaking the protocol takes the budget form; output_config.format only
        # where the model is known to take it.
        return ModelCapabilities(
            structured_output=False, sources={"structured_output": "the anthropic protocol (not known for this model)"}
        )

    def model_info_url(self, base_url: str, model: str, preset: Preset) -> str | None:
        # Anthropic's Models API; Anthropic-compatible servers publish no capabilities.
        if preset.dialect.get("model_info") != "anthropic":
            return None
        from urllib.parse import quote

        return f"{self.sdk_base_url(base_url)}/v1/models/{quote(model, safe='')}"

    def capabilities_from_info(self, data: Any, model: str) -> ModelCapabilities | None:
        """The Models API's ``ModelInfo`` (``GET /v1/models/{id}``): ``capabilities``,
        ``max_tokens``, ``max_input_tokens``."""
        if not isinstance(data, dict) or data.get("type") != "model" or not isinstance(data.get("capabilities"), dict):
            return None
        caps = data["capabilities"]

        def on(*path: str) -> bool | None:
            return _supported(caps, path)

        values: dict[str, Any] = _thinking_info(caps)
        effort = on("effort")
        if effort is not None:
            values["effort"] = [level for level in _EFFORTS if on("effort", level)] if effort else []
        for name, key in (
            ("structured_output", "structured_outputs"),
            ("strict_tools", "structured_outputs"),
            ("image_input", "image_input"),
            ("pdf_input", "pdf_input"),
        ):
            if on(key) is not None:
                values[name] = on(key)
        if on("server_tools") is not None:
            values["server_tools"] = [tool for tool in ("web_search", "code_execution") if on("server_tools", tool)]
        for name, key in (("max_output_tokens", "max_tokens"), ("context_window", "max_input_tokens")):
            if isinstance(data.get(key), int) and not isinstance(data.get(key), bool) and data[key] > 0:
                values[name] = data[key]
        return ModelCapabilities.from_mapping(values, "provider: GET /v1/models")

    # ModelInfo.capabilities speaks of these levels and server tools only (the anthropic SDK's
    # EffortCapability and ServerToolsCapability).
    listed_names = {"effort": _EFFORTS, "server_tools": ("web_search", "code_execution")}

    def model_list_url(self, base_url: str, preset: Preset, page: str | None = None) -> str | None:
        # GET /v1/models pages with limit (at most 1000) and after_id
        # (https://platform.claude.com/docs/en/api/models/list).
        if preset.dialect.get("model_info") != "anthropic":
            return None
        from urllib.parse import urlencode

        query = {"limit": "1000", **({"after_id": page} if page else {})}
        return f"{self.sdk_base_url(base_url)}/v1/models?{urlencode(query)}"

    def models_listed(self, data: Any, preset: Preset) -> tuple[list[tuple[str, ModelCapabilities]], str | None]:
        """``{data: [ModelInfo], has_more, last_id}``: each ModelInfo read as
        :meth:`capabilities_from_info` reads one."""
        rows = data.get("data") if isinstance(data, dict) else None
        if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("id"), str) for r in rows):
            raise ValueError("not a model list: no data of models with ids")
        listed = [(row["id"], self.capabilities_from_info(row, row["id"]) or ModelCapabilities()) for row in rows]
        more = data.get("has_more") is True and isinstance(data.get("last_id"), str)
        return listed, (data["last_id"] if more else None)

    def apply_options(
        self,
        p: dict[str, Any],
        o: ModelOptions,
        /,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        p["max_tokens"] = o.max_tokens or DEFAULT_MAX_TOKENS
        sampling(p, o, stop="stop_sequences")
        forced = (p.get("tool_choice") or {}).get("type") in ("any", "tool")
        fields = claude_fields(o, preset, model, caps, p["max_tokens"], forced_tool=forced, default_budget=MIN_BUDGET)
        if o.reasoning_summary is not None:
            raise refuse(
                "reasoning_summary",
                preset,
                "Claude streams its thinking itself; use thinking=True, and thinking_display",
            )
        if o.parallel_tool_calls is not None:
            if o.parallel_tool_calls is False:
                choice = p.setdefault("tool_choice", {"type": "auto"})
                choice["disable_parallel_tool_use"] = True
            # True is Anthropic's default: nothing to send.
        if o.json_schema is not None:
            if not caps.structured_output:
                raise refuse(
                    "json_schema",
                    preset,
                    "the model is not known to take output_config.format; ask for structured output through a tool (the"
                    " agent's structured_model does this), or say capabilities={'structured_output': True}",
                    model=model,
                )
            fields.setdefault("output_config", {})["format"] = {
                "type": "json_schema",
                "schema": claude_schema(o.json_schema, preset, model),
            }
        if o.task_budget is not None:  # the model takes it: checked in body()
            budget = o.task_budget if isinstance(o.task_budget, dict) else {"total": o.task_budget}
            fields.setdefault("output_config", {})["task_budget"] = {"type": "tokens", **budget}
        p.update(fields)

    prompt_order = ("tools", "system", "messages")
    cache_marker_keys = ("cache_control",)

    def apply_cache(
        self,
        body: dict[str, Any],
        plan: CachePlan,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        if plan.key is not None:
            raise refuse(
                "cache",
                preset,
                "Anthropic takes no cache key (its cache follows the prompt's prefix); leave key out",
                model=model,
            )
        if plan.placement == "provider":
            if preset.dialect.get("endpoint") in ENDPOINT_VERSIONS:
                raise refuse(
                    "cache",
                    preset,
                    (
                        "the top-level cache_control (automatic placement) is Anthropic's own API's; use "
                        "placement='breakpoints'"
                    ),
                    model=model,
                )
            body["cache_control"] = {"type": "ephemeral", **({"ttl": plan.ttl} if plan.ttl != "5m" else {})}
            return
        from ._body import place_cache

        place_cache(body, plan.ttl, self.name, system=plan.system, tools=plan.tools, history=plan.history)

    def apply_compaction(
        self,
        body: dict[str, Any],
        plan: CompactionPlan,
        preset: Preset,
        model: str = "",
        caps: ModelCapabilities = ModelCapabilities(),
    ) -> None:
        """Server-side compaction: ``context_management.edits`` with a ``compact_20260112``
        edit (the anthropic SDK's BetaCompact20260112EditParam), and its beta header (see
        ``_body.betas_for``)."""
        from ._body import COMPACT_EDIT, COMPACT_MIN_TRIGGER

        endpoint = preset.dialect.get("endpoint")
        if endpoint in ENDPOINT_VERSIONS:
            raise refuse(
                "compaction",
                preset,
                f"Claude on {endpoint.title()} is not known to take the compaction beta; "
                "send it yourself in extra_body if the cloud takes it",
                model=model,
            )
        if plan.threshold is not None and plan.threshold < COMPACT_MIN_TRIGGER:
            raise refuse(
                "compaction",
                preset,
                f"Claude compacts at {COMPACT_MIN_TRIGGER} input tokens at the least "
                "(https://platform.claude.com/docs/en/build-with-claude/compaction)",
                model=model,
            )
        edit: dict[str, Any] = {"type": COMPACT_EDIT}
        if plan.threshold is not None:
            edit["trigger"] = {"type": "input_tokens", "value": plan.threshold}
        if plan.pause:
            edit["pause_after_compaction"] = True
        if plan.instructions:
            edit["instructions"] = plan.instructions
        context = body.setdefault("context_management", {})
        context.setdefault("edits", []).append(edit)

    def apply_clear_tool_uses(self, body: dict[str, Any], value: Any, preset: Preset, model: str = "") -> None:
        """Context editing: a ``clear_tool_uses_20250919`` edit in ``context_management.edits``
        (the anthropic SDK's BetaClearToolUses20250919EditParam), and its beta header (see
        ``_body.betas_for``): the server clears the oldest tool results (and, with
        ``clear_tool_inputs``, their calls' inputs) once the trigger is passed, keeping the
        last ``keep`` tool uses; the history sent is not changed."""
        from ._body import CLEAR_TOOL_USES_EDIT

        endpoint = preset.dialect.get("endpoint")
        if endpoint in ENDPOINT_VERSIONS:
            raise refuse(
                "clear_tool_uses",
                preset,
                f"Claude on {endpoint.title()} is not known to take the context-editing beta here; "
                "send it yourself in extra_body if the cloud takes it",
                model=model,
            )
        given = value if isinstance(value, dict) else {}
        edit: dict[str, Any] = {"type": CLEAR_TOOL_USES_EDIT}
        trigger = given.get("trigger")
        if trigger is not None:
            kind, count = ("input_tokens", trigger) if isinstance(trigger, int) else next(iter(trigger.items()))
            edit["trigger"] = {"type": kind, "value": count}
        if given.get("keep") is not None:
            edit["keep"] = {"type": "tool_uses", "value": given["keep"]}
        if given.get("clear_at_least") is not None:
            edit["clear_at_least"] = {"type": "input_tokens", "value": given["clear_at_least"]}
        for key in ("exclude_tools", "clear_tool_inputs"):
            if given.get(key) is not None:
                edit[key] = given[key]
        context = body.setdefault("context_management", {})
        context.setdefault("edits", []).insert(0, edit)  # before a compaction edit, which sees what is left

    def answer_events(self, answer: dict[str, Any]) -> list[tuple[str | None, Any]]:
        message = {k: v for k, v in answer.items() if k not in ("stop_reason", "stop_sequence", "context_management")}
        delta = {"stop_reason": answer.get("stop_reason"), "stop_sequence": answer.get("stop_sequence")}
        ended: dict[str, Any] = {"type": "message_delta", "delta": delta, "usage": answer.get("usage") or {}}
        if answer.get("context_management") is not None:  # what the server cleared, as a stream says it
            ended["context_management"] = answer["context_management"]
        return [
            ("message_start", {"type": "message_start", "message": message}),  # its content: complete blocks
            ("message_delta", ended),
            ("message_stop", {"type": "message_stop"}),
        ]

    def fake_answer(self, *blocks: tuple[Any, ...], usage: tuple[int, int] = (10, 5)) -> dict[str, Any]:
        """The whole Messages answer of the same blocks as :meth:`fake_stream`."""
        content: list[dict[str, Any]] = []
        for block in blocks:
            if block[0] == "think":
                text, *signed = block[1:]
                signature = signed[0] if signed else f"sig-{text[:8]}"
                content.append({"type": "thinking", "thinking": text, "signature": signature})
            elif block[0] == "text":
                content.append({"type": "text", "text": block[1]})
            else:
                arguments = json.loads(block[3] or "{}")
                content.append({"type": "tool_use", "id": block[1], "name": block[2], "input": arguments})
        stop = "tool_use" if any(b[0] == "tool" for b in blocks) else "end_turn"
        message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": content}
        used = {"input_tokens": usage[0], "output_tokens": usage[1]}
        return {**message, "stop_reason": stop, "stop_sequence": None, "usage": used}

    def fake_stream(
        self,
        *blocks: tuple[Any, ...],
        stop: str | None = None,
        msg_id: str = "msg_1",
        usage: tuple[int, int] = (10, 5),
        **_: Any,
    ) -> bytes:
        ev: list[tuple[str, Any]] = []

        def add(kind: str, **data: Any) -> None:
            ev.append((kind, {"type": kind, **data}))

        started = {"input_tokens": usage[0], "output_tokens": 1}
        message = {"id": msg_id, "type": "message", "role": "assistant", "model": "claude-test", "content": []}
        add("message_start", message={**message, "stop_reason": None, "usage": started})
        for i, block in enumerate(blocks):
            start, deltas = _fake_block(block)
            add("content_block_start", index=i, content_block=start)
            for delta in deltas:
                add("content_block_delta", index=i, delta=delta)
            add("content_block_stop", index=i)
        if stop is None:
            stop = "tool_use" if any(b[0] == "tool" for b in blocks) else "end_turn"
        add("message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage={"output_tokens": usage[1]})
        add("message_stop")
        return encode_sse(ev)


def _fake_block(block: tuple[Any, ...]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A fake stream's block: how it starts, and its deltas (text a word at a time; thinking
    and arguments in halves, thinking then signed)."""
    if block[0] == "think":
        text = block[1]
        signature = block[2] if len(block) > 2 else f"sig-{text[:8]}"
        halves = [
            {"type": "thinking_delta", "thinking": piece} for piece in (text[: len(text) // 2], text[len(text) // 2 :])
        ]
        return {"type": "thinking", "thinking": "", "signature": ""}, [
            *halves,
            {"type": "signature_delta", "signature": signature},
        ]
    if block[0] == "text":
        return {"type": "text", "text": ""}, [{"type": "text_delta", "text": word} for word in fake_words(block[1])]
    args = block[3]
    pieces = ("", args[: len(args) // 2], args[len(args) // 2 :])
    start = {"type": "tool_use", "id": block[1], "name": block[2], "input": {}}
    return start, [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]


def _thinking_info(caps: dict[str, Any]) -> dict[str, Any]:
    """What a ModelInfo says of thinking: the forms it takes, and whether it can be off."""
    thinking = _supported(caps, ("thinking",))
    if thinking is None:
        return {}
    modes = [
        mode
        for mode, key in (("adaptive", "adaptive"), ("budget", "enabled"))
        if _supported(caps, ("thinking", "types", key))
    ]
    values: dict[str, Any] = {"thinking": modes if thinking else []}
    off = _supported(caps, ("thinking", "types", "disabled"))
    between = _supported(caps, ("thinking", "types", "between_tools"))
    if off is False and between:
        # Sonnet 5.5's way: thinking turned down to between tool calls is its off
        # (the anthropic SDK's ModelInfo: thinking.types.between_tools).
        values["thinking_off"], values["thinking_off_as"] = True, "between_tools"
    elif off is not None:
        values["thinking_off"] = off
    return values


def _supported(caps: dict[str, Any], path: tuple[str, ...]) -> bool | None:
    """``supported`` at ``path`` of a ModelInfo's capabilities; None where the answer leaves
    it out, and an error where it says something else than the documented shape (the whole
    answer is then not trusted)."""
    node: Any = caps
    for key in path:
        if not isinstance(node, dict):
            raise ValueError(f"capabilities.{'.'.join(path)}: not an object")
        node = node.get(key)
    if node is None:
        return None
    if not isinstance(node, dict) or not isinstance(node.get("supported"), bool):
        raise ValueError(f"capabilities.{'.'.join(path)}: no true/false 'supported'")
    supported: bool = node["supported"]  # checked a bool just above
    return supported


PROTOCOL = AnthropicProtocol()
